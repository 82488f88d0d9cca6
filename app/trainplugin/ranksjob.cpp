#include "ranksjob.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <vector>

#include "ckpt/train/launch.h"
#include "ckpt/train/progress_stream.h"

namespace ckpt {
namespace {

// A run's config for its ranks (train --config FILE), removed with the job.
class ConfigFile {
 public:
  explicit ConfigFile(const RunConfig& config) {
    std::string name =
        (std::filesystem::temp_directory_path() / "ckptscope-run-XXXXXX.json").string();
    const int fd = mkstemps(name.data(), 5);
    if (fd < 0)
      throw std::runtime_error("cannot write the run's config for its processes in " + name);
    const std::string text = config.toJson().dump(2) + "\n";
    const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    ::close(fd);
    m_path = name;
    if (!written)
      throw std::runtime_error("cannot write the run's config for its processes to " + name);
  }
  ~ConfigFile() {
    std::error_code ec;
    if (!m_path.empty()) std::filesystem::remove(m_path, ec);
  }
  ConfigFile(const ConfigFile&) = delete;
  ConfigFile& operator=(const ConfigFile&) = delete;
  [[nodiscard]] const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

class RanksJob final : public TrainJob {
 public:
  RanksJob(std::vector<std::string> args, const Processes& processes, double timeoutSeconds,
           std::unique_ptr<ConfigFile> config = {})
      : m_config(std::move(config)) {
    if (processes.count < 2)
      throw std::runtime_error("processes: a job of several processes needs at least 2");
    if (processes.program.empty() || ::access(processes.program.c_str(), X_OK) != 0)
      throw std::runtime_error(
          "processes: cannot run ckptscope-train (" +
          (processes.program.empty() ? std::string("not found") : processes.program) +
          "), which starts the ranks");
    m_options.program = processes.program;
    m_options.args = std::move(args);
    m_options.args.emplace_back("--progress-json");
    m_options.nproc = processes.count;
    m_options.timeoutSeconds = timeoutSeconds;
    if (processes.cpuThreads > 0)
      m_options.env.emplace_back("OMP_NUM_THREADS", std::to_string(processes.cpuThreads));
  }

  RunResult run(const ProgressCallback& progress, const JobEvents& events) override {
    bool stop = false, signalled = false;
    std::optional<RunResult> result;
    std::vector<std::string> errors(
        size_t(m_options.nproc));  // each rank's "ckptscope-cli: ..." line
    LaunchIo io;
    io.line = [&](int rank, bool isErr, const std::string& line) {
      if (const std::optional<ProgressEvent> e = parseProgressLine(line)) {
        switch (e->kind) {
          case ProgressEvent::Kind::Prepared:
            if (events.prepared) events.prepared(e->info);
            break;
          case ProgressEvent::Kind::Step:
            if (rank == 0 && progress && !progress(e->step)) stop = true;
            break;
          case ProgressEvent::Kind::Result:
            if (rank == 0) result = e->result;
            break;
        }
        return;
      }
      static const std::string kError = "ckptscope-cli: ";
      if (isErr && line.rfind(kError, 0) == 0) errors[size_t(rank)] = line.substr(kError.size());
      if (events.log) events.log("[rank" + std::to_string(rank) + "]: " + line);
    };
    io.pendingSignal = [&] {
      if (!stop && events.stopRequested && events.stopRequested()) stop = true;
      if (!stop || signalled) return 0;
      signalled = true;
      return SIGINT;  // every rank: they vote, finish the step and save
    };
    const LaunchResult launched = runLocalRanks(m_options, io);
    if (!launched.ok) {
      std::string message;
      for (size_t r = 0; r < errors.size(); ++r)
        if (!errors[r].empty()) message += "rank " + std::to_string(r) + ": " + errors[r] + "\n";
      if (stop && !result) message += "stopped before the ranks could save: ";
      throw std::runtime_error(message + launched.failure);
    }
    if (!result) throw std::runtime_error("rank 0 exited without saying how the run ended");
    return *result;
  }

 private:
  std::unique_ptr<ConfigFile> m_config;
  LaunchOptions m_options;
};

}  // namespace

std::unique_ptr<TrainJob> newRunRanks(const RunConfig& config, const Processes& processes) {
  // An impossible split is said before any process starts; the processes
  // get the split made here (world_size given), so they train the batch
  // this check passed, whatever world_adapts says.
  RunConfig adapted = config;
  adapted.training.adaptToWorld(processes.count);
  auto file = std::make_unique<ConfigFile>(adapted);
  std::vector<std::string> args{"train", "--config", file->path()};
  return std::make_unique<RanksJob>(std::move(args), processes, config.training.distTimeoutSeconds,
                                    std::move(file));
}

std::unique_ptr<TrainJob> resumeRanks(const ResumeOptions& o, const Processes& processes) {
  std::vector<std::string> args{"resume", o.checkpoint, "--device", o.device};
  if (o.maxSteps) args.insert(args.end(), {"--max-steps", std::to_string(*o.maxSteps)});
  if (!o.dataPath.empty()) args.insert(args.end(), {"--data", o.dataPath});
  if (o.inPlace) args.emplace_back("--in-place");
  return std::make_unique<RanksJob>(std::move(args), processes, 600);
}

std::unique_ptr<TrainJob> finetuneRanks(const std::string& checkpoint, const FinetuneOptions& o,
                                        const Processes& processes) {
  char lr[64];
  std::snprintf(lr, sizeof lr, "%.17g", o.learningRate);
  std::vector<std::string> args{"finetune", checkpoint, "--data", o.dataPath, "--lr",
                                lr,         "--stage",  o.stage,  "--device", o.device};
  if (!o.outputDir.empty()) args.insert(args.end(), {"--out", o.outputDir});
  if (o.maxSteps > 0) args.insert(args.end(), {"--max-steps", std::to_string(o.maxSteps)});
  if (!o.tokenizer.empty()) args.insert(args.end(), {"--tokenizer", o.tokenizer});
  if (o.overwrite) args.emplace_back("--overwrite");
  return std::make_unique<RanksJob>(std::move(args), processes, 600);
}

}  // namespace ckpt
