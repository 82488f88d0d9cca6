#pragma once
// Data-parallel training on PyTorch's own distributed engine (c10d): where a
// process stands in a torchrun / SLURM world, the rendezvous through a
// TCPStore, a Gloo (CPU) or NCCL (CUDA builds) process group, and the
// collectives the trainer needs. Internal to ckpt_train; the c10d headers
// stay in distributed.cpp.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ckpt {

// This process's place in the world, from its environment: torchrun's RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (and
// TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent hosts the store, every
// rank is a client under the prefix /worker/attempt_<TORCHELASTIC_RESTART_COUNT>),
// else SLURM's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and the first host
// of SLURM_NODELIST (MASTER_PORT or 29500), else one process alone.
struct WorldEnv {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  bool agentStore = false;
  std::string restartCount = "0";
  std::string source = "single";  // "torchrun" (the RANK variables), "slurm", "single"
};

// Throws ConfigError naming the variable and its value.
WorldEnv worldFromEnvironment();
// The first host of a SLURM node list: "gpu[03-05,07],cpu1" -> "gpu03".
std::string firstSlurmHost(const std::string& nodelist);

// One rank's membership in the world. A world of one has no process group:
// every collective is the identity.
class World {
 public:
  // The rendezvous (rank 0 hosts the TCPStore unless the agent does) and the
  // process group: NCCL when `device` is CUDA and this build has it, Gloo
  // otherwise. `timeout` bounds the rendezvous and every collective.
  static std::unique_ptr<World> join(const WorldEnv& env, const c10::Device& device,
                                     std::chrono::milliseconds timeout);
  ~World();

  [[nodiscard]] int rank() const;
  [[nodiscard]] int size() const;
  [[nodiscard]] const std::string& backend() const;  // "gloo", "nccl", "none"
  // The step in flight, for error messages.
  void setStep(int64_t step);

  // Rank 0's tensors to every rank, in place.
  void broadcast(const std::vector<at::Tensor>& tensors, const char* what);
  // Element-wise sums over the ranks (float64).
  std::vector<double> sum(const std::vector<double>& values, const char* what);
  // Every rank's copy of `t` (same shape and dtype on every rank), by rank.
  std::vector<at::Tensor> allGather(const at::Tensor& t, const char* what);
  // Runs fn on every rank; when it throws on any, every rank throws: the
  // failing rank its own exception, the others one naming it and its message.
  void agree(const std::function<void()>& fn, const char* what);

 private:
  friend class GradientReducer;
  struct Impl;
  explicit World(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m;
};

// Every gradient averaged over the ranks, as DDP's reducer does it: flattened
// buckets (parameters in reverse order, one dtype and device per bucket, the
// first bucket at most 1 MiB, the others at most bucketBytes), each summed by
// one all-reduce, then divided by the world size and copied back.
//
// With `overlap`, a bucket's all-reduce starts during the backward of the
// micro-batch that completes the accumulation, as soon as its parameters'
// gradients are final: a post hook on each parameter's gradient accumulator
// (AccumulateGrad) counts its calls, and a parameter is final when its count
// reaches the count seen in the first such backward (a weight used twice, a
// tied embedding, gets one call per backward; a reentrant backward more).
// Buckets start in bucket order on every rank; finish() starts the rest
// (parameters without a gradient count as zeros), waits for all and writes
// the averages back. The first step of a process is the counting one: its
// all-reduce runs after backward. Without `overlap`, or when a parameter has
// no gradient accumulator, every bucket starts after backward (note() says
// why). The arithmetic is the same either way.
class GradientReducer {
 public:
  struct Param {
    std::string name;
    at::Tensor tensor;
  };
  GradientReducer(World& world, std::vector<Param> params, int64_t bucketBytes, bool overlap);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before each backward of a step; `last`: the one that completes the
  // accumulation (the hooks start buckets during it, and only during it).
  void beforeBackward(bool last);
  // After the last backward: every gradient is the average over the ranks.
  // Throws what a failed launch or wait threw (the lost rank named).
  void finish();

  struct StepStats {
    int buckets = 0;            // all-reduces started in the step (one per bucket)
    int startedInBackward = 0;  // of them, before backward returned
    // The training thread's time on the all-reduce: flattening and
    // launching in the hooks, then finish() (launches, waits, copies back).
    double exposedSeconds = 0;
    double waitSeconds = 0;  // of it, in finish()'s waits
  };
  // The last finish()'s.
  [[nodiscard]] const StepStats& lastStep() const;
  // What the log should say about the buckets and the overlap.
  [[nodiscard]] const std::string& note() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

// A cheap 64-bit hash of tensors' bytes (FNV-1a over 8-byte words), equal on
// every rank exactly when the bytes are.
uint64_t tensorsHash(const std::vector<at::Tensor>& tensors);

}  // namespace ckpt
