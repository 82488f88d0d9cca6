// ckptscope-train: the LibTorch half of ckptscope-cli (train, resume,
// finetune, score, generate). ckptscope-cli hands these subcommands over to
// this program so that info / ls / verify never load LibTorch.
#include <signal.h>
#include <unistd.h>

#include <torch/cuda.h>
#include <torch/version.h>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/format/error.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/train/launch.h"
#include "ckpt/train/progress_stream.h"
#include "ckpt/train/trainer.h"
#include "ckpt/version.h"

namespace {

using namespace ckpt;

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

int failWith(const std::string& message) {
  std::fprintf(stderr, "ckptscope-cli: %s\n", message.c_str());
  return kExitFailure;
}

const char* kUsage =
    "usage:\n"
    "  ckptscope-cli train --config RUN.json [--data PATH] [--out DIR] [--device auto|cpu|cuda]\n"
    "                      [--max-steps N] [--overwrite] [--nproc N] [key=value ...]\n"
    "  ckptscope-cli resume CKPT|DIR [--in-place] [--max-steps N] [--data PATH] [--device D] "
    "[--nproc N]\n"
    "  ckptscope-cli finetune CKPT --data PATH [--out DIR] [--lr X] [--max-steps N] [--stage "
    "NAME]\n"
    "                      [--tokenizer T] [--device D] [--overwrite]\n"
    "  ckptscope-cli score CKPT --data PATH --seq-len T [--json] [--tokenizer T] [--device D]\n"
    "  ckptscope-cli generate CKPT --prompt TEXT [--max-new-tokens N] [--temperature T] [--top-k "
    "K]\n"
    "                      [--seed S] [--tokenizer T] [--device D]\n"
    "\n"
    "  --nproc N starts N data-parallel ranks on this machine (Gloo on the CPU, NCCL on GPUs);\n"
    "  under torchrun or srun, run ckptscope-train itself: torchrun --no-python --nproc-per-node "
    "8\n"
    "  ckptscope-train train --config RUN.json. Ctrl+C finishes the step and saves a checkpoint.\n"
    "  --progress-json prints what each rank prepared, every step and the outcome as\n"
    "  'ckptscope-progress {...}' lines (what the desktop app's Train panel reads).\n"
    "  A checkpoint on another machine (ssh://[user@]host[:port]/path or host:/path): resume\n"
    "  and finetune start on that host, detached from the connection, or as a SLURM job\n"
    "  (--sbatch [--print-script | --script FILE]); ckptscope-cli resume ssh://HOST/CKPT --help\n"
    "  lists their options (docs/REMOTE.md).\n";

// The usage, then every RUN.json field from the config's tables.
int printHelp() {
  std::fputs(kUsage, stdout);
  std::fputs("\n", stdout);
  std::fputs(runConfigHelp().c_str(), stdout);
  return kExitOk;
}

int usageError(const std::string& problem) {
  std::fprintf(stderr, "ckptscope-cli: %s\n%s", problem.c_str(), kUsage);
  return kExitUsage;
}

// --flag VALUE options, --switches, positionals and key=value overrides.
struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<std::string> switches;
  std::string get(const std::string& name, const std::string& fallback = {}) const {
    for (const auto& [k, v] : options)
      if (k == name) return v;
    return fallback;
  }
  bool has(const std::string& name) const {
    for (const auto& [k, v] : options)
      if (k == name) return true;
    for (const auto& s : switches)
      if (s == name) return true;
    return false;
  }
};

bool parse(int argc, char** argv, const std::vector<std::string>& withValue,
           const std::vector<std::string>& switches, Args& out, std::string& problem) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      if (std::find(switches.begin(), switches.end(), a) != switches.end()) {
        out.switches.push_back(a);
      } else if (std::find(withValue.begin(), withValue.end(), a) != withValue.end()) {
        if (i + 1 >= argc) {
          problem = a + " needs a value";
          return false;
        }
        out.options.emplace_back(a, argv[++i]);
      } else {
        problem = "unknown option " + a;
        return false;
      }
    } else {
      out.positional.push_back(a);
    }
  }
  return true;
}

int64_t toInt(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw ConfigError(flag + ": expected an integer, got '" + v + "'");
}

double toDouble(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const double x = std::stod(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw ConfigError(flag + ": expected a number, got '" + v + "'");
}

std::string duration(double seconds) {
  const long s = long(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Ctrl+C (SIGINT) or SIGTERM: the step in flight finishes and a checkpoint
// to resume from is written; a second one ends the process at once.
volatile sig_atomic_t g_stopRequested = 0;

void onStopSignal(int signo) {
  g_stopRequested = 1;
  signal(signo, SIG_DFL);
}

void installStopHandler() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// A progress bar on a terminal; the reference library's log lines otherwise
// (so that the curves view reads our console logs like theirs).
// With --progress-json (the Train panel's ranks): one progress line per step
// (progress_stream.h) instead.
ProgressCallback progressPrinter(const Trainer& trainer, bool json) {
  if (json)
    return [writer = trainer.rank() == 0](const StepReport& r) {
      if (writer) {
        std::printf("%s\n", progressLine(r).c_str());
        std::fflush(stdout);
      }
      return g_stopRequested == 0;
    };
  const bool tty = isatty(STDERR_FILENO) != 0;
  const int64_t logEvery = std::max<int64_t>(1, trainer.config().training.logEvery);
  const int64_t first = trainer.startStep();
  const bool writer = trainer.rank() == 0;  // the other ranks print their errors only
  return [tty, logEvery, first, writer](const StepReport& r) {
    if (!writer) {
    } else if (tty) {
      const int width = 24;
      const double frac = r.maxSteps > 0 ? double(r.step) / double(r.maxSteps) : 0;
      std::string bar(size_t(width), '.');
      for (int i = 0; i < int(frac * width); ++i) bar[size_t(i)] = '#';
      const double perStep = r.step > first ? r.elapsedSeconds / double(r.step - first) : 0;
      std::fprintf(stderr, "\r step %lld/%lld [%s] loss %.4f lr %.2e %.0f tok/s ETA %s   ",
                   (long long)r.step, (long long)r.maxSteps, bar.c_str(), r.loss, r.learningRate,
                   r.tokensPerSecond, duration(perStep * double(r.maxSteps - r.step)).c_str());
      if (r.valLoss || !r.savedCheckpoint.empty() || r.step == r.maxSteps) std::fputc('\n', stderr);
      if (r.valLoss)
        std::fprintf(stderr, " step %lld: val_loss %.4f\n", (long long)r.step, *r.valLoss);
      if (!r.savedCheckpoint.empty())
        std::fprintf(stderr, " saved %s\n", r.savedCheckpoint.c_str());
    } else if (r.step % logEvery == 0 || r.step == r.maxSteps) {
      std::printf("step=%lld loss=%.4f lr=%.3e\n", (long long)r.step, r.loss, r.learningRate);
      if (r.valLoss) std::printf("step=%lld val_loss=%.4f\n", (long long)r.step, *r.valLoss);
      if (!r.savedCheckpoint.empty()) std::printf("saved %s\n", r.savedCheckpoint.c_str());
      std::fflush(stdout);
    }
    return g_stopRequested == 0;
  };
}

int runTrainer(Trainer& trainer, bool json) {
  const TrainingConfig& t = trainer.config().training;
  if (json) {
    std::printf("%s\n", progressLine(trainer.jobInfo()).c_str());
    std::fflush(stdout);
  }
  if (trainer.worldSize() > 1)
    std::fprintf(
        stderr,
        "rank %d of %d on %s (%s), micro-batch %lld x %lld accumulation of the batch of %lld\n",
        trainer.rank(), trainer.worldSize(), trainer.deviceName().c_str(),
        trainer.backend().c_str(), (long long)t.microBatchSize,
        (long long)t.gradientAccumulationSteps, (long long)t.batchSize);
  if (trainer.rank() == 0 && !json) {
    std::fprintf(stderr, "run %s on %s from step %lld to %lld, writing to %s\n", t.runName.c_str(),
                 trainer.deviceName().c_str(), (long long)trainer.startStep(),
                 (long long)t.maxSteps, t.outputDir.c_str());
  }
  if (!trainer.notes().empty() && !json)
    std::fprintf(stderr, "note: %s\n", trainer.notes().c_str());
  const RunResult r = trainer.run(progressPrinter(trainer, json));
  if (trainer.rank() == 0 && json) std::printf("%s\n", progressLine(r).c_str());
  if (trainer.rank() == 0 && !json)
    std::printf("%s at step %lld: %s\n", r.outcome == RunOutcome::Finished ? "finished" : "stopped",
                (long long)r.step, r.lastCheckpoint.c_str());
  return kExitOk;
}

// --nproc N (N > 1): this program again, N times, as the ranks of one run.
int launchRanks(int argc, char** argv, int nproc, double timeoutSeconds) {
  LaunchOptions o;
  o.program = std::filesystem::read_symlink("/proc/self/exe").string();
  o.nproc = nproc;
  o.timeoutSeconds = timeoutSeconds;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--nproc") == 0) {
      ++i;
      continue;
    }
    o.args.emplace_back(argv[i]);
  }
  return launchLocalRanks(o);
}

int nprocOf(const Args& a) {
  if (!a.has("--nproc")) return 1;
  const int64_t n = toInt("--nproc", a.get("--nproc"));
  if (n < 1 || n > 1024)
    throw ConfigError("--nproc: expected 1 to 1024 processes, got " + a.get("--nproc"));
  return int(n);
}

int cmdTrain(int argc, char** argv) {
  Args a;
  std::string problem;
  if (!parse(argc, argv,
             {"--config", "--data", "--out", "--device", "--max-steps", "--tokenizer", "--nproc"},
             {"--overwrite", "--progress-json"}, a, problem))
    return usageError(problem);
  if (!a.has("--config")) return usageError("train needs --config RUN.json");
  RunConfig config = RunConfig::fromFile(a.get("--config"));
  for (const std::string& p : a.positional) {
    if (p.find('=') == std::string::npos)
      return usageError("unexpected argument '" + p + "' (overrides are key=value)");
    applyOverride(config, p);
  }
  if (a.has("--data")) config.data.path = a.get("--data");
  if (a.has("--tokenizer")) config.data.tokenizer = a.get("--tokenizer");
  if (a.has("--out")) config.training.outputDir = a.get("--out");
  if (a.has("--device")) config.training.device = a.get("--device");
  if (a.has("--max-steps")) config.training.maxSteps = toInt("--max-steps", a.get("--max-steps"));
  if (config.training.outputDir.empty()) config.training.outputDir = config.training.runName;
  // The batch numbers meet the run's world size here (--nproc) or as the
  // trainer joins its world (one process, torchrun, srun): numbers that
  // contradict each other for it name the file they came from.
  auto fromConfigFile = [&](auto f) {
    try {
      return f();
    } catch (const ConfigError& e) {
      if (e.kind() != ConfigError::Kind::BatchSplit) throw;
      throw ConfigError(a.get("--config") + ": " + e.what(), e.fields(), e.kind());
    }
  };
  if (const int nproc = nprocOf(a); nproc > 1) {
    // Said before any rank starts; the ranks split the batch again (and log
    // what changed) from the same arguments.
    RunConfig split = config;
    fromConfigFile([&] { return split.training.adaptToWorld(nproc); });
    return launchRanks(argc, argv, nproc, config.training.distTimeoutSeconds);
  }
  installStopHandler();
  Trainer trainer = fromConfigFile([&] { return Trainer::newRun(config, a.has("--overwrite")); });
  return runTrainer(trainer, a.has("--progress-json"));
}

int cmdResume(int argc, char** argv) {
  Args a;
  std::string problem;
  if (!parse(argc, argv, {"--max-steps", "--data", "--device", "--nproc"},
             {"--in-place", "--progress-json"}, a, problem))
    return usageError(problem);
  if (const int nproc = nprocOf(a); nproc > 1) return launchRanks(argc, argv, nproc, 600);
  if (a.positional.size() != 1) return usageError("resume takes exactly one CKPT or DIR");
  std::optional<int64_t> maxSteps;
  if (a.has("--max-steps")) maxSteps = toInt("--max-steps", a.get("--max-steps"));
  std::string checkpoint = a.positional[0];
  std::error_code ec;
  if (std::filesystem::is_directory(checkpoint, ec)) {
    // A run directory: its newest checkpoint that verifies, falling back one
    // by one past the damaged ones (the reference guide's pattern).
    const IntactCheckpoint pick = newestIntactCheckpoint(checkpoint);
    for (const SkippedCheckpoint& s : pick.skipped)
      std::fprintf(stderr, "skipped %s: %s\n", s.file.c_str(), s.reason.c_str());
    if (pick.checkpoint.empty())
      return failWith(checkpoint + ": no intact checkpoint to resume (" +
                      std::to_string(pick.skipped.size()) +
                      " damaged); start again with train --overwrite");
    checkpoint = pick.checkpoint;
    std::fprintf(stderr, "resuming %s\n", checkpoint.c_str());
  }
  installStopHandler();
  Trainer trainer = Trainer::resume(checkpoint, maxSteps, a.get("--data"),
                                    a.get("--device", "auto"), a.has("--in-place"));
  return runTrainer(trainer, a.has("--progress-json"));
}

int cmdFinetune(int argc, char** argv) {
  Args a;
  std::string problem;
  if (!parse(argc, argv,
             {"--data", "--out", "--lr", "--max-steps", "--stage", "--tokenizer", "--device",
              "--nproc"},
             {"--overwrite", "--progress-json"}, a, problem))
    return usageError(problem);
  if (const int nproc = nprocOf(a); nproc > 1) return launchRanks(argc, argv, nproc, 600);
  if (a.positional.size() != 1) return usageError("finetune takes exactly one CKPT");
  if (!a.has("--data")) return usageError("finetune needs --data PATH");
  FinetuneOptions o;
  o.dataPath = a.get("--data");
  o.outputDir = a.get("--out");
  if (a.has("--lr")) o.learningRate = toDouble("--lr", a.get("--lr"));
  if (a.has("--max-steps")) o.maxSteps = toInt("--max-steps", a.get("--max-steps"));
  o.stage = a.get("--stage", "sft");
  o.tokenizer = a.get("--tokenizer");
  o.device = a.get("--device", "auto");
  o.overwrite = a.has("--overwrite");
  installStopHandler();
  Trainer trainer = Trainer::finetune(a.positional[0], o);
  return runTrainer(trainer, a.has("--progress-json"));
}

int cmdScore(int argc, char** argv) {
  Args a;
  std::string problem;
  if (!parse(argc, argv, {"--data", "--seq-len", "--tokenizer", "--device"}, {"--json"}, a,
             problem))
    return usageError(problem);
  if (a.positional.size() != 1) return usageError("score takes exactly one CKPT");
  if (!a.has("--data") || !a.has("--seq-len"))
    return usageError("score needs --data PATH and --seq-len T");
  const ScoreResult r =
      scoreCheckpoint(a.positional[0], a.get("--data"), toInt("--seq-len", a.get("--seq-len")),
                      a.get("--tokenizer"), a.get("--device", "auto"));
  if (a.has("--json")) {
    std::printf(
        "%s\n",
        nlohmann::ordered_json{{"loss", r.loss}, {"windows", r.windows}, {"tokens", r.tokens}}
            .dump()
            .c_str());
  } else {
    std::printf("loss %.6f over %lld windows (%lld tokens)\n", r.loss, (long long)r.windows,
                (long long)r.tokens);
  }
  return kExitOk;
}

int cmdGenerate(int argc, char** argv) {
  Args a;
  std::string problem;
  if (!parse(argc, argv,
             {"--prompt", "--max-new-tokens", "--temperature", "--top-k", "--seed", "--tokenizer",
              "--device"},
             {}, a, problem))
    return usageError(problem);
  if (a.positional.size() != 1) return usageError("generate takes exactly one CKPT");
  if (!a.has("--prompt")) return usageError("generate needs --prompt TEXT");
  GenerateOptions o;
  o.prompt = a.get("--prompt");
  if (a.has("--max-new-tokens"))
    o.maxNewTokens = toInt("--max-new-tokens", a.get("--max-new-tokens"));
  if (a.has("--temperature")) o.temperature = toDouble("--temperature", a.get("--temperature"));
  if (a.has("--top-k")) o.topK = toInt("--top-k", a.get("--top-k"));
  if (a.has("--seed")) o.seed = uint64_t(toInt("--seed", a.get("--seed")));
  o.tokenizer = a.get("--tokenizer");
  o.device = a.get("--device", "auto");
  std::fputs(o.prompt.c_str(), stdout);
  generateText(a.positional[0], o, [](const GeneratedToken& token) {
    if (token.text.empty()) return true;
    std::fwrite(token.text.data(), 1, token.text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputc('\n', stdout);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usageError("no command given");
  const std::string cmd = argv[1];
  // --help after any command: the usage and every RUN.json field, exit 0.
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return printHelp();
  try {
    if (cmd == "train") return cmdTrain(argc, argv);
    if (cmd == "resume") return cmdResume(argc, argv);
    if (cmd == "finetune") return cmdFinetune(argc, argv);
    if (cmd == "score") return cmdScore(argc, argv);
    if (cmd == "generate") return cmdGenerate(argc, argv);
    if (cmd == "-h" || cmd == "--help") return printHelp();
    if (cmd == "--version") {
      // The LibTorch this program runs with, and whether it sees a GPU.
      std::printf("ckptscope-train %s\n", CKPT_VERSION);
      const std::string devices =
          torch::cuda::is_available()
              ? "CUDA, " + std::to_string(torch::cuda::device_count()) + " device(s)"
              : "CPU only: no CUDA device";
      std::printf("LibTorch %s (%s)\n", TORCH_VERSION, devices.c_str());
      return kExitOk;
    }
  } catch (const ConfigError& e) {
    // Batch numbers that contradict each other for this run's world: the
    // fix is in what was typed, as for a wrong command line.
    failWith(e.what());
    return e.kind() == ConfigError::Kind::BatchSplit ? kExitUsage : kExitFailure;
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
  return usageError("unknown command '" + cmd + "'");
}
