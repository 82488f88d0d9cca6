#include "ckpt/train/trainer.h"

#include "trainer_impl.h"

#include "ckpt/format/json_export.h"

namespace ckpt {

Trainer::Trainer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;

namespace {

std::string joinNames(const std::vector<std::string>& paths, size_t limit = 4) {
  std::string s;
  for (size_t i = 0; i < paths.size() && i < limit; ++i)
    s += (i ? ", " : "") + fs::path(paths[i]).filename().string();
  if (paths.size() > limit) s += " and " + std::to_string(paths.size() - limit) + " more";
  return s;
}

}  // namespace

// A directory that holds files of the run refuses a new one unless asked to
// move them away (run_plan.h: existingRunFiles, the one rule for every caller).
void Trainer::Impl::claimDirectory(bool overwrite) {
  const std::vector<std::string> clash = existingRunFiles(outputDir, config.training.runName);
  if (clash.empty()) return;
  if (!overwrite) throw std::runtime_error(clashMessage(outputDir, config.training.runName, clash));
  for (const std::string& f : clash) pendingTrash.push_back((fs::path(outputDir) / f).string());
  note("--overwrite: the earlier run's " + joinNames(clash) + " move to " +
       (fs::path(outputDir) / ".trash").string() + "/ before the first step");
}

Trainer Trainer::newRun(const RunConfig& config, bool overwrite) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  const TrainingConfig& t = config.training;
  impl->outputDir = t.outputDir.empty() ? t.runName : t.outputDir;
  impl->config.model.validate();  // a bad config says so before the directory does
  impl->config.training.validate();
  impl->joinWorld();
  impl->world->agree(
      [&] {
        impl->claimDirectory(overwrite);
        impl->setUp(std::nullopt);
        torch::manual_seed(config.training.seed);
        impl->model = std::make_unique<Decoder>(config.model);
        impl->model->to(impl->device);
        impl->makeOptimizer();
      },
      "preparing the run");
  impl->shareWeights();
  return Trainer(std::move(impl));
}

Trainer Trainer::resume(const std::string& checkpoint, std::optional<int64_t> maxSteps,
                        const std::string& dataPath, const std::string& device, bool inPlace) {
  // Where it continues: the run's own directory, or a branch (run_plan.h).
  const ResumePlan plan = planResume(checkpoint);
  auto impl = std::make_unique<Impl>();
  CheckpointContent content;
  RunConfig& rc = impl->config;
  const ModelConfig& model = rc.model;
  const json& meta = content.metadata;
  if (!impl->adoptCheckpoint(checkpoint, content)) {
    // A checkpoint of the Python library: what its metadata says, defaults
    // for the rest.
    rc.training.runName = plan.runName;
    if (meta.contains("learning_rate") && meta["learning_rate"].is_number())
      rc.training.learningRate = meta["learning_rate"].get<double>();
    if (meta.contains("stage") && meta["stage"].is_string())
      rc.training.stage = meta["stage"].get<std::string>();
    rc.training.seqLen = std::min<int64_t>(model.maxSeqLen, 256);
  }
  if (!dataPath.empty()) rc.data.path = dataPath;
  if (maxSteps) rc.training.maxSteps = *maxSteps;
  rc.training.device = device;
  const int64_t step = meta.value("step", int64_t(0));
  if (step >= rc.training.maxSteps)
    throw ConfigError("the checkpoint is at step " + std::to_string(step) + ", max_steps is " +
                          std::to_string(rc.training.maxSteps) +
                          ": nothing to do (pass --max-steps)",
                      {"max_steps"});
  impl->parent = meta.contains("parent") && meta["parent"].is_string()
                     ? meta["parent"].get<std::string>()
                     : "";
  if (meta.contains("parent_step") && meta["parent_step"].is_number_integer())
    impl->parentStep = meta["parent_step"].get<int64_t>();
  const std::string name = fs::path(checkpoint).filename().string();
  if (plan.isNewest || inPlace) {
    impl->outputDir = fs::path(checkpoint).parent_path().string();
    if (impl->outputDir.empty()) impl->outputDir = ".";
    // One history: metrics.jsonl is cut back to this step when the run starts.
    impl->trimMetricsTo = step;
    if (!plan.isNewest) {
      impl->pendingTrash = plan.laterFiles;
      impl->note("--in-place: " + name + " (step " + std::to_string(step) +
                 ") is not the newest checkpoint of run '" + plan.runName + "'; the later " +
                 joinNames(plan.laterFiles) + " move to " +
                 (fs::path(plan.runDir) / ".trash").string() +
                 "/ and metrics.jsonl is cut back to step " + std::to_string(step) +
                 " (the rest kept in metrics.superseded.jsonl)");
    }
  } else {
    // A branch: a new run beside the parent, which stays as it is.
    impl->outputDir = plan.branchDir;
    rc.training.runName = plan.branchRunName;
    impl->parent = plan.checkpoint;
    impl->parentStep = step;
    impl->lineage =
        Lineage{plan.branchRunName, plan.runName, plan.runDir, plan.checkpoint, step, isoNow()};
    impl->note(name + " (step " + std::to_string(step) + ") is not the newest checkpoint of run '" +
               plan.runName + "' (" + joinNames(plan.laterFiles, 2) +
               " come later): continuing as the new run '" + plan.branchRunName + "' in " +
               plan.branchDir + ", leaving " + plan.runDir +
               " as it is (--in-place continues there instead, moving the later files to .trash/)");
  }
  rc.training.outputDir = impl->outputDir;
  impl->joinWorld();
  impl->world->agree(
      [&] {
        impl->setUp(content.rngState);
        impl->model = std::make_unique<Decoder>(model);
        impl->model->loadStateDict(content.modelState);
        impl->model->to(impl->device);
        impl->makeOptimizer();
        if (content.optimizer)
          impl->restoreOptimizer(*content.optimizer);
        else
          impl->note("the checkpoint has no optimizer state: resuming with a fresh optimizer");
      },
      "preparing the resume");
  impl->rankRngStates = content.rankRngStates;
  impl->step = step;
  impl->tokensSeen = meta.value("tokens_seen", int64_t(0));
  const json& ts = content.trainerState;
  if (ts.is_object() && ts.contains("sampler_position")) {
    impl->sampler->restore(ts["sampler_position"].get<uint64_t>());
    impl->elapsedBefore = ts.value("elapsed_seconds", 0.0);
    if (ts.contains("best_val_loss") && ts["best_val_loss"].is_number())
      impl->bestValLoss = ts["best_val_loss"].get<double>();
  } else {
    impl->note(
        "the checkpoint has no data position (not written by CkptScope): training data is drawn "
        "afresh");
  }
  if (meta.contains("val_loss") && meta["val_loss"].is_number())
    impl->lastValLoss = meta["val_loss"].get<double>();
  impl->shareWeights();
  return Trainer(std::move(impl));
}

Trainer Trainer::finetune(const std::string& checkpoint, const FinetuneOptions& options) {
  auto impl = std::make_unique<Impl>();
  CheckpointContent content;
  RunConfig& rc = impl->config;
  const ModelConfig& model = rc.model;
  const json& meta = content.metadata;
  impl->adoptCheckpoint(checkpoint, content);
  std::string parentRun = meta.contains("run_name") && meta["run_name"].is_string()
                              ? meta["run_name"].get<std::string>()
                              : rc.training.runName;
  // "shakespeare-pretrain" fine-tuned to sft -> "shakespeare-sft" (experiment.h).
  rc.training.runName = stageRunName(parentRun, options.stage);
  rc.training.stage = options.stage;
  rc.training.learningRate = options.learningRate;
  rc.training.schedule = LrSchedule::Cosine;
  rc.training.warmupSteps = 0;
  if (options.maxSteps > 0) rc.training.maxSteps = options.maxSteps;
  rc.training.device = options.device;
  rc.data.path = options.dataPath;
  if (!options.tokenizer.empty()) rc.data.tokenizer = options.tokenizer;
  if (rc.training.seqLen <= 0) rc.training.seqLen = std::min<int64_t>(model.maxSeqLen, 256);
  impl->outputDir =
      options.outputDir.empty()
          ? (fs::path(checkpoint).parent_path().parent_path() / rc.training.runName).string()
          : options.outputDir;
  rc.training.outputDir = impl->outputDir;
  impl->parent = fs::absolute(checkpoint).lexically_normal().string();
  if (meta.contains("step") && meta["step"].is_number_integer())
    impl->parentStep = meta["step"].get<int64_t>();
  impl->joinWorld();
  impl->world->agree(
      [&] {
        impl->claimDirectory(options.overwrite);
        impl->setUp(std::nullopt);
        torch::manual_seed(rc.training.seed);
        impl->model = std::make_unique<Decoder>(model);
        impl->model->loadStateDict(content.modelState);
        impl->model->to(impl->device);
        impl->makeOptimizer();
      },
      "preparing the fine-tune");
  impl->shareWeights();
  return Trainer(std::move(impl));
}

RunResult Trainer::run(const ProgressCallback& progress) {
  return m_impl->run(progress);
}
const RunConfig& Trainer::config() const {
  return m_impl->config;
}
std::string Trainer::deviceName() const {
  return m_impl->device.str();
}
int Trainer::rank() const {
  return m_impl->world->rank();
}
int Trainer::worldSize() const {
  return m_impl->world->size();
}
std::string Trainer::backend() const {
  return m_impl->world->backend();
}
int64_t Trainer::startStep() const {
  return m_impl->step;
}
const std::string& Trainer::notes() const {
  return m_impl->notes;
}

TrainJobInfo Trainer::jobInfo() const {
  const RunConfig& c = config();
  TrainJobInfo i;
  i.runName = c.training.runName;
  i.stage = c.training.stage;
  i.outputDir = c.training.outputDir;
  i.device = deviceName();
  i.startStep = startStep();
  i.maxSteps = c.training.maxSteps;
  const int64_t seqLen = c.training.seqLen > 0 ? c.training.seqLen : c.model.maxSeqLen;
  i.tokensPerStep = c.training.batchSize * seqLen;
  i.notes = notes();
  i.configJson = dumpJson(c.toJson(), 2);  // a data path may be any bytes
  i.rank = rank();
  i.worldSize = worldSize();
  i.backend = backend();
  return i;
}

}  // namespace ckpt
