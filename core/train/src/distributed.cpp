#include "distributed.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef CKPT_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "ckpt/config/model_config.h"  // ConfigError

namespace ckpt {
namespace {

using Clock = std::chrono::steady_clock;

const char* envOr(const char* name, const char* fallback = nullptr) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int envInt(const char* name, int minimum) {
  const char* v = envOr(name);
  if (!v) throw ConfigError(std::string("the environment variable ") + name + " is not set");
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < minimum || x > 1'000'000)
    throw ConfigError(std::string("the environment variable ") + name + "=" + v +
                      ": expected an integer >= " + std::to_string(minimum));
  return int(x);
}

bool isLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// c10::Error carries a backtrace; the user wants its first line.
std::string firstLine(const std::exception& e) {
  const auto* c10e = dynamic_cast<const c10::Error*>(&e);
  std::string s = c10e ? c10e->what_without_backtrace() : e.what();
  if (const size_t nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

std::vector<uint8_t> bytesOf(const std::string& s) {
  return {s.begin(), s.end()};
}

}  // namespace

std::string firstSlurmHost(const std::string& nodelist) {
  // The first entry: up to a comma outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[')
      ++depth;
    else if (nodelist[end] == ']')
      --depth;
    else if (nodelist[end] == ',' && depth == 0)
      break;
  }
  const std::string entry = nodelist.substr(0, end);
  const size_t open = entry.find('[');
  if (open == std::string::npos) return entry;
  const size_t close = entry.find(']', open);
  if (close == std::string::npos)
    throw ConfigError("SLURM_NODELIST=" + nodelist + ": unbalanced '['");
  std::string range = entry.substr(open + 1, close - open - 1);
  range = range.substr(0, range.find_first_of(",-"));  // the first number, its zero padding kept
  return entry.substr(0, open) + range + entry.substr(close + 1);
}

WorldEnv worldFromEnvironment() {
  WorldEnv w;
  if (envOr("RANK") || envOr("WORLD_SIZE")) {
    w.source = "torchrun";
    w.worldSize = envInt("WORLD_SIZE", 1);
    w.rank = envInt("RANK", 0);
    w.localRank = envOr("LOCAL_RANK") ? envInt("LOCAL_RANK", 0) : w.rank;
    if (w.worldSize > 1 || envOr("MASTER_ADDR")) {
      if (!envOr("MASTER_ADDR"))
        throw ConfigError("the environment variable MASTER_ADDR is not set (WORLD_SIZE=" +
                          std::to_string(w.worldSize) + ")");
      w.masterAddr = envOr("MASTER_ADDR");
      w.masterPort = envInt("MASTER_PORT", 1);
    }
  } else if (envOr("SLURM_PROCID") && envOr("SLURM_NTASKS")) {
    w.source = "slurm";
    w.worldSize = envInt("SLURM_NTASKS", 1);
    w.rank = envInt("SLURM_PROCID", 0);
    w.localRank = envOr("SLURM_LOCALID") ? envInt("SLURM_LOCALID", 0) : 0;
    if (const char* addr = envOr("MASTER_ADDR"))
      w.masterAddr = addr;
    else if (const char* nodes =
                 envOr("SLURM_STEP_NODELIST", envOr("SLURM_JOB_NODELIST", envOr("SLURM_NODELIST"))))
      w.masterAddr = firstSlurmHost(nodes);
    w.masterPort = envOr("MASTER_PORT") ? envInt("MASTER_PORT", 1) : 29500;
  }
  if (w.rank >= w.worldSize)
    throw ConfigError(
        "rank " + std::to_string(w.rank) + " is not below the world size " +
        std::to_string(w.worldSize) +
        (w.source == "slurm" ? " (SLURM_PROCID, SLURM_NTASKS)" : " (RANK, WORLD_SIZE)"));
  if (w.masterPort > 65535)
    throw ConfigError("MASTER_PORT=" + std::to_string(w.masterPort) + ": not a TCP port");
  w.agentStore = std::strcmp(envOr("TORCHELASTIC_USE_AGENT_STORE", ""), "True") == 0;
  w.restartCount = envOr("TORCHELASTIC_RESTART_COUNT", "0");
  return w;
}

struct World::Impl {
  WorldEnv env;
  std::chrono::milliseconds timeout{0};
  std::string backend = "none";
  c10::Device commDevice = c10::Device(c10::kCPU);
  c10::intrusive_ptr<c10d::Store> store;  // the run's keys (ckptscope/...)
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  int64_t step = -1;  // the step in flight (0-based); -1 before the first
  // Liveness: every rank counts up ckptscope/alive/<rank> through its own
  // store connection; a rank whose count stands still is gone (or hung).
  std::thread heartbeat;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (heartbeat.joinable()) heartbeat.join();
  }

  std::string storeName() const {
    return env.masterAddr + ":" + std::to_string(env.masterPort) +
           (env.agentStore ? " (torchrun's agent store)" : " (hosted by rank 0)");
  }

  // `member`: this connection is the rank's one, counted in the rendezvous
  // (the server waits for all of them); the heartbeat's is not.
  c10::intrusive_ptr<c10d::Store> connectStore(bool server, bool member = true) const {
    c10d::TCPStoreOptions o;
    o.port = uint16_t(env.masterPort);
    o.isServer = server;
    // As Python's TCPStore(host, port, world_size, ...): a member connection
    // counts itself in (only when it knows the world size) and the server
    // waits for all.
    if (member) o.numWorkers = size_t(env.worldSize);
    o.waitWorkers = member;
    o.timeout = timeout;
    o.multiTenant = !env.agentStore;
    c10::intrusive_ptr<c10d::Store> tcp = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, o);
    // torchrun's convention for stores its agent hosts.
    if (env.agentStore)
      tcp = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + env.restartCount, tcp);
    return c10::make_intrusive<c10d::PrefixStore>("ckptscope", tcp);
  }

  void startHeartbeat() {
    auto beat = connectStore(false, false);
    heartbeat = std::thread([this, beat] {
      const std::string key = "alive/" + std::to_string(env.rank);
      std::unique_lock<std::mutex> lock(mutex);
      while (!stopping) {
        try {
          beat->add(key, 1);
        } catch (const std::exception&) {
          return;  // the store is gone; the collectives will say so
        }
        wake.wait_for(lock, std::chrono::milliseconds(250));
      }
    });
  }

  // What went wrong when a collective failed: a rank that reported an
  // error, ranks whose heartbeat stopped, or the store itself gone.
  std::string diagnose(const std::string& what, const std::string& error) {
    std::string who;
    try {
      store->setTimeout(std::chrono::seconds(5));
      for (int r = 0; r < env.worldSize; ++r) {
        const std::string key = "error/" + std::to_string(r);
        if (r != env.rank && store->check({key})) {
          const auto v = store->get(key);
          who += (who.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) +
                 " failed: " + std::string(v.begin(), v.end());
        }
      }
      if (who.empty()) {
        auto counts = [&] {
          std::vector<int64_t> c(size_t(env.worldSize), -1);
          for (int r = 0; r < env.worldSize; ++r)
            c[size_t(r)] = store->add("alive/" + std::to_string(r), 0);
          return c;
        };
        const auto before = counts();
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        const auto after = counts();
        std::string lost;
        for (int r = 0; r < env.worldSize; ++r)
          if (r != env.rank && after[size_t(r)] == before[size_t(r)])
            lost += (lost.empty() ? "" : ", ") + std::to_string(r);
        if (!lost.empty())
          who = std::string(lost.find(',') == std::string::npos ? "lost rank " : "lost ranks ") +
                lost + " (no heartbeat for 1.5 s: exited, killed or hung)";
      }
    } catch (const std::exception&) {
      who = "lost the rendezvous store at " + storeName() + (env.agentStore ? "" : ": lost rank 0");
    }
    return "rank " + std::to_string(env.rank) + ": " + what + " (" + backend + ")" +
           (step >= 0 ? " at step " + std::to_string(step + 1) : std::string()) + " failed" +
           (who.empty() ? "" : ": " + who) + " [" + backend + ": " + error + "]";
  }

  template <typename F>
  auto guarded(const char* what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const std::exception& e) {
      throw std::runtime_error(diagnose(what, firstLine(e)));
    }
  }

  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
    guarded(what, [&] {
      work->wait(timeout);
      return 0;
    });
  }
};

World::World(std::unique_ptr<Impl> impl) : m(std::move(impl)) {}
World::~World() = default;

std::unique_ptr<World> World::join(const WorldEnv& env, const c10::Device& device,
                                   std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>();
  impl->env = env;
  impl->timeout = timeout;
  if (env.worldSize == 1) return std::unique_ptr<World>(new World(std::move(impl)));
  Impl& m = *impl;
  try {
    m.store = m.connectStore(!env.agentStore && env.rank == 0);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(env.rank) + ": the rendezvous at " +
                             m.storeName() + " for " + std::to_string(env.worldSize) +
                             " ranks failed within " + std::to_string(timeout.count() / 1000) +
                             " s: " + firstLine(e));
  }
  m.startHeartbeat();
  auto pgStore = c10::make_intrusive<c10d::PrefixStore>("default_pg", m.store);
  try {
    if (device.is_cuda()) {
#ifdef CKPT_WITH_NCCL
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = timeout;
      m.pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(pgStore, env.rank, env.worldSize, o);
      m.backend = "nccl";
      m.commDevice = device;
#endif
    }
    if (!m.pg) {
      auto o = c10d::ProcessGroupGloo::Options::create(timeout);
      if (const char* ifname = envOr("GLOO_SOCKET_IFNAME"))
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (isLoopback(env.masterAddr))
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      m.pg = c10::make_intrusive<c10d::ProcessGroupGloo>(pgStore, env.rank, env.worldSize, o);
      m.backend = "gloo";
    }
  } catch (const std::exception& e) {
    m.backend = device.is_cuda() ? "nccl" : "gloo";
    throw std::runtime_error(m.diagnose(
        "creating the process group of " + std::to_string(env.worldSize) + " ranks", firstLine(e)));
  }
  return std::unique_ptr<World>(new World(std::move(impl)));
}

int World::rank() const {
  return m->env.rank;
}
int World::size() const {
  return m->env.worldSize;
}
const std::string& World::backend() const {
  return m->backend;
}
void World::setStep(int64_t step) {
  m->step = step;
}

void World::broadcast(const std::vector<at::Tensor>& tensors, const char* what) {
  if (size() == 1) return;
  std::vector<std::pair<at::Tensor, c10::intrusive_ptr<c10d::Work>>> pending;
  for (const at::Tensor& t : tensors) {
    std::vector<at::Tensor> one{
        t.device() == m->commDevice && t.is_contiguous() ? t : t.to(m->commDevice).contiguous()};
    auto work = m->guarded(what, [&] {
      return m->pg->broadcast(one, c10d::BroadcastOptions{0, 0});
    });
    pending.emplace_back(one[0], work);
  }
  torch::NoGradGuard noGrad;
  for (size_t i = 0; i < tensors.size(); ++i) {
    m->wait(pending[i].second, what);
    if (!pending[i].first.is_same(tensors[i])) tensors[i].copy_(pending[i].first);
  }
}

std::vector<double> World::sum(const std::vector<double>& values, const char* what) {
  if (size() == 1) return values;
  std::vector<at::Tensor> one{torch::tensor(values, torch::kFloat64).to(m->commDevice)};
  m->wait(m->guarded(what, [&] { return m->pg->allreduce(one); }), what);
  const at::Tensor out = one[0].cpu();
  return {out.data_ptr<double>(), out.data_ptr<double>() + out.numel()};
}

std::vector<at::Tensor> World::allGather(const at::Tensor& t, const char* what) {
  if (size() == 1) return {t};
  std::vector<at::Tensor> in{t.to(m->commDevice).contiguous()};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < size(); ++r) out[0].push_back(torch::empty_like(in[0]));
  m->wait(m->guarded(what, [&] { return m->pg->allgather(out, in); }), what);
  std::vector<at::Tensor> result;
  for (at::Tensor& x : out[0]) result.push_back(x.cpu());
  return result;
}

void World::agree(const std::function<void()>& fn, const char* what) {
  if (size() == 1) return fn();
  std::exception_ptr failure;
  try {
    fn();
  } catch (const std::exception& e) {
    failure = std::current_exception();
    // Said before the vote, so that every key is there once it is counted.
    try {
      m->store->set("error/" + std::to_string(rank()), bytesOf(firstLine(e)));
    } catch (const std::exception&) {
    }
  }
  const double failed = sum({failure ? 1.0 : 0.0}, what)[0];
  if (failure) std::rethrow_exception(failure);
  if (failed == 0) return;
  std::string who;
  for (int r = 0; r < size(); ++r) {
    const std::string key = "error/" + std::to_string(r);
    if (r == rank() || !m->store->check({key})) continue;
    const auto v = m->store->get(key);
    who += (who.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " +
           std::string(v.begin(), v.end());
  }
  throw std::runtime_error("rank " + std::to_string(rank()) + " stopped: " + what +
                           " failed on another rank (" + who + ")");
}

// ---- GradientReducer -------------------------------------------------------

namespace {
// DDP's first bucket (torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES): small,
// so that the first all-reduce starts early in backward.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;
const char* const kGradientAllReduce = "the gradient all-reduce";
}  // namespace

struct GradientReducer::Impl {
  World& world;
  std::vector<Param> params;
  struct Bucket {
    std::vector<size_t> members;  // indices into params, in reverse parameter order
    int64_t bytes = 0;
    size_t pending = 0;  // members whose gradient is not final yet in this backward
    at::Tensor flat;
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<Bucket> buckets;
  std::vector<size_t> bucketOf;  // parameter -> bucket
  bool overlap = false;
  std::string note;
  // The hooks, on the parameters' gradient accumulators (held, so that every
  // graph uses these very nodes).
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::vector<uintptr_t> hookKeys;
  // Hook calls per parameter in the armed backward, and the calls that make
  // a gradient final (counted in the first armed backward).
  std::vector<int> calls;
  std::vector<int> expected;
  bool counted = false;
  // The step in flight. The hooks may run on autograd's device threads.
  std::mutex mutex;
  bool armed = false;
  size_t nextBucket = 0;  // buckets start in order: [0, nextBucket) have
  int started = 0;        // all-reduces started in this step
  int startedInBackward = 0;
  double hookSeconds = 0;
  std::exception_ptr failure;  // from a hook, rethrown by finish()
  StepStats last;

  Impl(World& w, std::vector<Param> ps) : world(w), params(std::move(ps)) {}

  World::Impl& comm() { return *world.m; }

  // DDP's layout: reverse parameter order (the last layers' gradients are
  // final first), one dtype and device per bucket.
  void layOut(int64_t bucketBytes) {
    bucketOf.assign(params.size(), 0);
    for (size_t k = params.size(); k-- > 0;) {
      const at::Tensor& p = params[k].tensor;
      const int64_t bytes = p.numel() * int64_t(p.element_size());
      bool fits = false;
      if (!buckets.empty()) {
        const at::Tensor& q = params[buckets.back().members.front()].tensor;
        const int64_t cap =
            buckets.size() == 1 ? std::min(bucketBytes, kFirstBucketBytes) : bucketBytes;
        fits = q.scalar_type() == p.scalar_type() && q.device() == p.device() &&
               buckets.back().bytes + bytes <= cap;
      }
      if (!fits) buckets.emplace_back();
      buckets.back().members.push_back(k);
      buckets.back().bytes += bytes;
      bucketOf[k] = buckets.size() - 1;
    }
  }

  // Hooks on every parameter's gradient accumulator, or none (and why not).
  void hook() {
    for (size_t i = 0; i < params.size(); ++i) {
      std::shared_ptr<torch::autograd::Node> acc;
      try {
        acc = torch::autograd::impl::grad_accumulator(params[i].tensor);
      } catch (const std::exception&) {  // not a leaf
        acc = nullptr;
      }
      if (!acc) {
        unhook();
        note = "after backward: the parameter " + params[i].name +
               " has no gradient accumulator to hook (not a leaf that requires a gradient)";
        return;
      }
      accumulators.push_back(acc);
      hookKeys.push_back(
          acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
              [this, i](const torch::autograd::variable_list& outputs,
                        const torch::autograd::variable_list&) {
                onGradient(i);
                return outputs;
              })));
    }
    overlap = true;
  }

  void unhook() {
    for (size_t i = 0; i < hookKeys.size(); ++i) accumulators[i]->del_post_hook(hookKeys[i]);
    hookKeys.clear();
    accumulators.clear();
    overlap = false;
  }

  // Flattens the bucket's gradients and starts its all-reduce.
  void start(Bucket& b) {
    torch::NoGradGuard noGrad;
    std::vector<at::Tensor> views;
    for (size_t k : b.members) {
      at::Tensor& p = params[k].tensor;
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);  // every rank, one layout
      views.push_back(p.grad().reshape({-1}));
    }
    b.flat = torch::cat(views).to(comm().commDevice);
    std::vector<at::Tensor> one{b.flat};
    b.work = comm().guarded(kGradientAllReduce, [&] { return comm().pg->allreduce(one); });
    ++started;
  }

  // Starts the buckets whose gradients are all final, in bucket order.
  void startReady(bool inBackward) {
    while (nextBucket < buckets.size() && buckets[nextBucket].pending == 0) {
      start(buckets[nextBucket++]);
      if (inBackward) ++startedInBackward;
    }
  }

  void onGradient(size_t i) {
    const auto t0 = Clock::now();
    std::lock_guard<std::mutex> lock(mutex);
    if (!armed || failure) return;
    try {
      ++calls[i];
      if (counted) {
        if (calls[i] > expected[i])
          throw std::runtime_error(
              "rank " + std::to_string(world.rank()) + ": " + params[i].name + " received " +
              std::to_string(calls[i]) + " gradients in one backward, more than the " +
              std::to_string(expected[i]) +
              " of the first step, after its all-reduce bucket had counted it final; the "
              "gradient all-reduce cannot overlap backward for this model "
              "(allreduce_overlap=false)");
        if (calls[i] == expected[i]) {
          --buckets[bucketOf[i]].pending;
          startReady(true);
        }
      }
    } catch (const std::exception&) {
      failure = std::current_exception();
    }
    hookSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }

  void beforeBackward(bool lastOne) {
    std::lock_guard<std::mutex> lock(mutex);
    armed = lastOne && overlap;
    if (!armed) return;
    calls.assign(params.size(), 0);
    nextBucket = 0;
    startedInBackward = 0;
    hookSeconds = 0;
    failure = nullptr;
    for (Bucket& b : buckets) {
      b.pending = 0;
      if (counted)
        for (size_t k : b.members) b.pending += expected[k] > 0 ? 1 : 0;
      else
        b.pending = b.members.size();  // the counting backward starts nothing
    }
    startReady(false);  // buckets of parameters that get no gradient
  }

  void finish() {
    const auto t0 = Clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    const bool wasArmed = armed;
    armed = false;
    if (failure) std::rethrow_exception(failure);
    if (wasArmed && !counted) {
      expected = calls;
      counted = true;
    }
    if (!wasArmed) {
      nextBucket = 0;
      startedInBackward = 0;
      hookSeconds = 0;
    }
    while (nextBucket < buckets.size()) start(buckets[nextBucket++]);
    double waited = 0;
    torch::NoGradGuard noGrad;
    for (Bucket& b : buckets) {
      const auto w0 = Clock::now();
      comm().wait(b.work, kGradientAllReduce);
      waited += std::chrono::duration<double>(Clock::now() - w0).count();
      b.flat.div_(double(world.size()));
      int64_t offset = 0;
      for (size_t k : b.members) {
        at::Tensor& g = params[k].tensor.mutable_grad();
        g.copy_(b.flat.narrow(0, offset, g.numel()).view_as(g));
        offset += g.numel();
      }
      b.flat = at::Tensor();
      b.work.reset();
    }
    last.buckets = started;
    last.startedInBackward = startedInBackward;
    started = 0;
    last.waitSeconds = waited;
    last.exposedSeconds = hookSeconds + std::chrono::duration<double>(Clock::now() - t0).count();
  }
};

GradientReducer::GradientReducer(World& world, std::vector<Param> params, int64_t bucketBytes,
                                 bool overlap)
    : m(std::make_unique<Impl>(world, std::move(params))) {
  m->layOut(bucketBytes);
  if (world.size() > 1 && overlap) m->hook();
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.3g", double(bucketBytes) / (1024.0 * 1024.0));
  const std::string layout = std::to_string(m->buckets.size()) + " bucket" +
                             (m->buckets.size() == 1 ? "" : "s") + " (the first at most " +
                             std::to_string(std::min(bucketBytes, kFirstBucketBytes) / 1024) +
                             " KiB, the others " + mb + " MB)";
  if (m->overlap)
    m->note = "gradient all-reduce: " + layout +
              ", each started during backward once its gradients are final (from this process's "
              "second step on: the first counts the gradient hooks' calls; "
              "allreduce_overlap=false starts them after backward)";
  else
    m->note =
        "gradient all-reduce: " + layout + ", started " +
        (m->note.empty() ? std::string("after backward: allreduce_overlap is false") : m->note);
}

GradientReducer::~GradientReducer() {
  m->unhook();
}

void GradientReducer::beforeBackward(bool last) {
  m->beforeBackward(last);
}

void GradientReducer::finish() {
  if (m->world.size() == 1) return;
  m->finish();
}

const GradientReducer::StepStats& GradientReducer::lastStep() const {
  return m->last;
}

const std::string& GradientReducer::note() const {
  return m->note;
}

uint64_t tensorsHash(const std::vector<at::Tensor>& tensors) {
  uint64_t h = 1469598103934665603ULL;
  for (const at::Tensor& t0 : tensors) {
    const at::Tensor t = t0.detach().cpu().contiguous();
    const auto* p = static_cast<const unsigned char*>(t.data_ptr());
    const size_t n = size_t(t.numel()) * t.element_size();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 1099511628211ULL;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  }
  return h;
}

}  // namespace ckpt
