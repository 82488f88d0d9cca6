// ckptscope-train-backend: TrainBackend (ckpt/trainapi/train_backend.h) on top of the
// trainer (ckpt_train, LibTorch). The desktop app loads this module with
// QLibrary the first time the Train panel is used; it exports one C symbol.
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "ckpt/train/trainer.h"
#include "ckpt/trainapi/train_backend.h"
#include "ranksjob.h"

namespace ckpt {
namespace {

// A job in this process: the trainer itself.
class TorchJob final : public TrainJob {
 public:
  explicit TorchJob(Trainer trainer) : m_trainer(std::move(trainer)) {}

  RunResult run(const ProgressCallback& progress, const JobEvents& events) override {
    if (events.prepared) events.prepared(m_trainer.jobInfo());
    return m_trainer.run(progress);
  }

 private:
  Trainer m_trainer;
};

class TorchBackend final : public TrainBackend {
 public:
  TorchBackend() : m_defaultThreads(at::get_num_threads()) {}

  TrainDevices devices() const override {
    TrainDevices d;
    d.cudaAvailable = torch::cuda::is_available();
    d.cudaDeviceCount = d.cudaAvailable ? int(torch::cuda::device_count()) : 0;
    d.torchVersion = TORCH_VERSION;
    d.cpuThreads = at::get_num_threads();
    return d;
  }

  void setCpuThreads(int n) override {
    const int want = n > 0 ? n : m_defaultThreads;
    if (want != at::get_num_threads()) at::set_num_threads(want);
  }

  std::unique_ptr<TrainJob> newRun(const RunConfig& config, const Processes& processes) override {
    if (processes.count > 1) return newRunRanks(config, processes);
    return std::make_unique<TorchJob>(Trainer::newRun(config));
  }

  std::unique_ptr<TrainJob> resume(const ResumeOptions& o, const Processes& processes) override {
    if (processes.count > 1) return resumeRanks(o, processes);
    return std::make_unique<TorchJob>(
        Trainer::resume(o.checkpoint, o.maxSteps, o.dataPath, o.device, o.inPlace));
  }

  std::unique_ptr<TrainJob> finetune(const std::string& checkpoint, const FinetuneOptions& options,
                                     const Processes& processes) override {
    if (processes.count > 1) return finetuneRanks(checkpoint, options, processes);
    return std::make_unique<TorchJob>(Trainer::finetune(checkpoint, options));
  }

  std::string generate(const std::string& checkpoint, const GenerateOptions& options,
                       const GenerateCallback& onToken) override {
    return generateText(checkpoint, options, onToken);
  }

 private:
  const int m_defaultThreads;  // LibTorch's own choice, for "default" after a run that set some
};

}  // namespace
}  // namespace ckpt

extern "C" __attribute__((visibility("default"))) ckpt::TrainBackend*
ckptscope_create_train_backend(int abiVersion) {
  if (abiVersion != ckpt::kTrainBackendAbiVersion) return nullptr;
  static ckpt::TorchBackend backend;  // lives as long as the process: LibTorch is never unloaded
  return &backend;
}
