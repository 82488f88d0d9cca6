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
  // Every gradient averaged over the ranks: flattened buckets of at most
  // bucketBytes (DDP's reducer layout: parameters in reverse order, one
  // dtype and device per bucket), all launched before the first is awaited.
  void averageGradients(const std::vector<at::Tensor>& params, int64_t bucketBytes);
  // Element-wise sums over the ranks (float64).
  std::vector<double> sum(const std::vector<double>& values, const char* what);
  // Every rank's copy of `t` (same shape and dtype on every rank), by rank.
  std::vector<at::Tensor> allGather(const at::Tensor& t, const char* what);
  // Runs fn on every rank; when it throws on any, every rank throws: the
  // failing rank its own exception, the others one naming it and its message.
  void agree(const std::function<void()>& fn, const char* what);
  // Seconds spent in averageGradients so far.
  [[nodiscard]] double allReduceSeconds() const;

 private:
  struct Impl;
  explicit World(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m;
};

// A cheap 64-bit hash of tensors' bytes (FNV-1a over 8-byte words), equal on
// every rank exactly when the bytes are.
uint64_t tensorsHash(const std::vector<at::Tensor>& tensors);

}  // namespace ckpt
