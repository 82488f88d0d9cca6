#pragma once
// The training job itself (Trainer::Impl): the model, optimizer and data of
// one run, its steps, evaluation, checkpoints and metrics.jsonl. Private to
// trainer.cpp, which starts, resumes and fine-tunes jobs on it; kept apart
// only to keep each file readable (its helpers sit in an unnamed namespace:
// this header is included by trainer.cpp alone).

#include "ckpt/train/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>

#include "checkpoint_io.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/scanner.h"
#include "ckpt/model/decoder.h"
#include "ckpt/model/device.h"
#include "ckpt/tokenize/dataset.h"
#include "ckpt/tokenize/tokenizer.h"
#include "distributed.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

std::string isoNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Pretraining: linear warmup (step+1)/warmup, then constant. SFT/DPO: the
// same warmup, then cosine annealing to zero over max_steps.
double learningRateAt(const TrainingConfig& t, int64_t step) {
  if (t.warmupSteps > 0 && step < t.warmupSteps)
    return t.learningRate * double(step + 1) / double(t.warmupSteps);
  if (t.schedule == LrSchedule::Constant) return t.learningRate;
  const double span = double(std::max<int64_t>(1, t.maxSteps - t.warmupSteps));
  const double progress = std::min(1.0, double(step - t.warmupSteps) / span);
  return t.learningRate * 0.5 * (1.0 + std::cos(M_PI * progress));
}

at::Tensor rngState() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void setRngState(const at::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

std::string stateKey(const at::Tensor& p) {
  return c10::guts::to_string(p.unsafeGetTensorImpl());
}

}  // namespace

struct Trainer::Impl {
  RunConfig config;
  std::string outputDir;
  std::string parent;                 // lineage: the checkpoint this run started from
  std::optional<int64_t> parentStep;  // its step, when known
  // Done when run() starts, not while preparing (a request that fails to
  // prepare leaves the directory as it was): files to move to .trash/, the
  // step metrics.jsonl is cut back to (a resume in place), a branch's
  // lineage.json.
  std::vector<std::string> pendingTrash;
  std::optional<int64_t> trimMetricsTo;
  std::optional<Lineage> lineage;
  std::string notes;
  c10::Device device = c10::Device(c10::kCPU);
  AutocastPlan autocast;
  std::unique_ptr<Decoder> model;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<TokenDataset> dataset;
  std::unique_ptr<WindowSampler> sampler;
  int64_t step = 0;
  int64_t tokensSeen = 0;
  double elapsedBefore = 0;
  std::optional<double> bestValLoss;
  std::optional<double> lastValLoss;
  std::string lastSaved;
  // Data-parallel: this rank's world (a world of one runs alone); every
  // rank's RNG state from the checkpoint resumed.
  std::unique_ptr<World> world;
  std::vector<at::Tensor> rankRngStates;
  std::unique_ptr<GradientReducer> reducer;  // world size > 1; after `world`, destroyed first

  int64_t seqLen() const {
    return config.training.seqLen > 0 ? config.training.seqLen : config.model.maxSeqLen;
  }

  void note(const std::string& s) { notes += (notes.empty() ? "" : "\n") + s; }
  void claimDirectory(bool overwrite);

  void setUp(const std::optional<at::Tensor>& rng) {
    TrainingConfig& t = config.training;
    t.validate();
    config.model.validate();
    if (seqLen() > config.model.maxSeqLen)
      throw ConfigError("seq_len (" + std::to_string(seqLen()) + ") exceeds max_seq_len (" +
                            std::to_string(config.model.maxSeqLen) + ")",
                        {"seq_len", "max_seq_len"});
    autocast = autocastPlan(parsePrecision(t.mixedPrecision), device);
    if (!autocast.note.empty()) note(autocast.note);
    if (config.data.path.empty())
      throw ConfigError("data: no data path given (--data PATH)", {"path"});
    // Absolute, so that a resume from another directory finds it again.
    config.data.path = fs::absolute(config.data.path).lexically_normal().string();
    tokenizer = loadTokenizer(config.data.tokenizer);
    if (tokenizer->vocabSize() > config.model.vocabSize)
      throw ConfigError("tokenizer " + tokenizer->name() + " has " +
                            std::to_string(tokenizer->vocabSize()) +
                            " tokens, more than the model's vocab_size (" +
                            std::to_string(config.model.vocabSize) + ")",
                        {"tokenizer", "vocab_size"});
    DatasetOptions options;
    options.valFraction = config.data.valFraction;
    options.binUint32 = config.data.uint32Tokens;
    options.separator = tokenizer->specialTokenId("<|endoftext|>");
    dataset = std::make_unique<TokenDataset>(std::vector<std::string>{config.data.path}, *tokenizer,
                                             options);
    dataset->requireWindow(Split::Train, seqLen());
    if (t.evalEvery > 0) {
      if (config.data.valFraction <= 0)
        throw ConfigError(
            "eval_every is set but val_fraction is 0: no validation split to evaluate on",
            {"eval_every", "val_fraction"});
      dataset->requireWindow(Split::Val, seqLen());
    }
    sampler = std::make_unique<WindowSampler>(*dataset, Split::Train, seqLen(), t.seed);
    if (outputDir.empty()) outputDir = t.outputDir.empty() ? t.runName : t.outputDir;
    if (world->rank() == 0) fs::create_directories(outputDir);
    if (rng) setRngState(*rng);
  }

  // This process's place in the world (the launch environment): the batch
  // split over the ranks, the device (cuda:LOCAL_RANK with several ranks),
  // the rendezvous and the process group.
  void joinWorld() {
    const WorldEnv env = worldFromEnvironment();
    TrainingConfig& t = config.training;
    const std::string changed = t.adaptToWorld(env.worldSize);  // as world_adapts says: logged
    if (!changed.empty() && env.rank == 0) note(changed);
    t.validate();
    device = pickDevice(t.device);
    if (device.is_cuda() && env.worldSize > 1)
      device = pickDevice("cuda:" + std::to_string(env.localRank));
    world =
        World::join(env, device, std::chrono::milliseconds(int64_t(t.distTimeoutSeconds * 1000.0)));
  }

  // Every rank starts from rank 0's weights; ranks past 0 draw their own
  // random numbers (dropout): the checkpoint's state for their rank, else a
  // seed of their own.
  void shareWeights() {
    if (world->size() == 1) return;
    std::vector<at::Tensor> tensors;
    std::vector<GradientReducer::Param> params;
    for (const auto& [name, p] : model->namedParameters()) {
      tensors.push_back(p.detach());
      params.push_back({name, p});
    }
    world->broadcast(tensors, "the broadcast of rank 0's weights");
    const TrainingConfig& t = config.training;
    reducer = std::make_unique<GradientReducer>(
        *world, std::move(params), int64_t(t.allreduceBucketMb * 1024 * 1024), t.allreduceOverlap);
    if (world->rank() == 0) note(reducer->note());
    const int r = world->rank();
    if (size_t(r) < rankRngStates.size()) {
      setRngState(rankRngStates[size_t(r)]);
    } else if (r > 0) {
      torch::manual_seed(config.training.seed + uint64_t(r) * 0x9E3779B97F4A7C15ULL +
                         uint64_t(step));
      if (step > 0)
        note("rank " + std::to_string(r) +
             ": the checkpoint has no random state for this rank; seeded afresh");
    }
  }

  std::vector<at::Tensor> parameters() const {
    std::vector<at::Tensor> params;
    for (const auto& [name, p] : model->namedParameters()) params.push_back(p);
    return params;
  }

  // At every save: all ranks hold the same weights, or every rank stops.
  void checkWeightsAgree() {
    if (world->size() == 1) return;
    const uint64_t h = tensorsHash(parameters());
    const auto all =
        world->allGather(torch::tensor({int64_t(h)}, torch::kLong), "the weight-hash check");
    auto hex = [](const at::Tensor& x) {
      char buf[24];
      std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)x.item<int64_t>());
      return std::string(buf);
    };
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r].item<int64_t>() != all[0].item<int64_t>())
        throw std::runtime_error("step " + std::to_string(step) + ": the weights of rank " +
                                 std::to_string(r) + " (hash " + hex(all[r]) +
                                 ") differ from rank 0's (" + hex(all[0]) +
                                 "): the ranks have diverged; no checkpoint was written");
  }

  // Starts from a checkpoint: its model config, and the run and data
  // settings our trainer recorded (absent from the Python library's files).
  // Returns whether the training settings were there.
  bool adoptCheckpoint(const std::string& checkpoint, CheckpointContent& content) {
    content = loadCheckpointContent(checkpoint, &config.model);
    const json& meta = content.metadata;
    if (meta.contains("data_config") && meta["data_config"].is_object())
      config.data.update(meta["data_config"]);
    if (!(meta.contains("training_config") && meta["training_config"].is_object())) return false;
    config.training.update(meta["training_config"]);
    return true;
  }

  void makeOptimizer() {
    const TrainingConfig& t = config.training;
    std::vector<at::Tensor> params;
    for (const auto& [name, p] : model->namedParameters()) params.push_back(p);
    optimizer =
        std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(t.learningRate)
                                                          .betas({t.beta1, t.beta2})
                                                          .eps(t.eps)
                                                          .weight_decay(t.weightDecay));
  }

  void restoreOptimizer(const OptimizerSnapshot& snap) {
    const auto params = model->namedParameters();
    if (snap.paramCount != int64_t(params.size()))
      throw std::runtime_error("the checkpoint's optimizer holds " +
                               std::to_string(snap.paramCount) + " parameters, the model " +
                               std::to_string(params.size()));
    for (const AdamState& s : snap.states) {
      if (s.index < 0 || size_t(s.index) >= params.size())
        throw std::runtime_error("optimizer state index " + std::to_string(s.index) +
                                 " is out of range");
      const at::Tensor& p = params[size_t(s.index)].second;
      if (s.expAvg.sizes() != p.sizes())
        throw std::runtime_error("optimizer state for " + params[size_t(s.index)].first +
                                 " has shape " + c10::str(s.expAvg.sizes()) + ", the parameter " +
                                 c10::str(p.sizes()));
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(s.step);
      state->exp_avg(s.expAvg.to(p.device(), p.scalar_type()).clone());
      state->exp_avg_sq(s.expAvgSq.to(p.device(), p.scalar_type()).clone());
      optimizer->state()[stateKey(p)] = std::move(state);
    }
  }

  OptimizerSnapshot snapshotOptimizer() const {
    const TrainingConfig& t = config.training;
    OptimizerSnapshot snap;
    snap.lr = learningRateAt(t, std::max<int64_t>(0, step - 1));
    snap.beta1 = t.beta1;
    snap.beta2 = t.beta2;
    snap.eps = t.eps;
    snap.weightDecay = t.weightDecay;
    const auto params = model->namedParameters();
    snap.paramCount = int64_t(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = optimizer->state().find(stateKey(params[i].second));
      if (it == optimizer->state().end()) continue;
      const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
      snap.states.push_back({int64_t(i), s.step(), s.exp_avg(), s.exp_avg_sq()});
    }
    return snap;
  }

  double evaluate() {
    torch::NoGradGuard noGrad;
    model->train(false);
    const int64_t T = seqLen();
    const auto windows = consecutiveWindows(dataset->splitSize(Split::Val), T);
    const int64_t micro = config.training.microBatchSize;
    const size_t limit = std::min<size_t>(
        windows.size(), size_t(std::max<int64_t>(1, config.training.evalBatches) * micro));
    double total = 0;
    size_t count = 0;
    std::vector<int32_t> buf;
    const size_t ranks = size_t(world->size()), rank = size_t(world->rank());
    for (size_t i = 0, b = 0; i < limit; i += size_t(micro), ++b) {
      if (b % ranks != rank) continue;  // the ranks share the validation batches
      const size_t n = std::min<size_t>(size_t(micro), limit - i);
      buf.assign(n * size_t(T), 0);
      for (size_t k = 0; k < n; ++k)
        dataset->read(Split::Val, windows[i + k].first, T, buf.data() + k * size_t(T));
      const at::Tensor ids =
          torch::from_blob(buf.data(), {int64_t(n), T}, torch::kInt32).to(torch::kLong).to(device);
      AutocastGuard guard(autocast);
      const at::Tensor l = Decoder::loss(model->forward(ids), ids);
      total += l.item<double>() * double(n);
      count += n;
    }
    model->train(true);
    const std::vector<double> sums =
        world->sum({total, double(count)}, "the evaluation all-reduce");
    total = sums[0];
    count = size_t(sums[1]);
    if (count == 0)
      throw std::runtime_error("validation split is shorter than one window of " +
                               std::to_string(T) + " tokens");
    return total / double(count);
  }

  json metadata(double loss, bool final) const {
    json m;
    m["step"] = step;
    m["loss"] = loss;
    m["train_loss"] = loss;
    m["val_loss"] = lastValLoss ? json(*lastValLoss) : json(nullptr);
    m["learning_rate"] = learningRateAt(config.training, std::max<int64_t>(0, step - 1));
    m["config"] = config.model.toJson();
    m["run_name"] = config.training.runName;
    m["stage"] = config.training.stage;
    m["final"] = final;
    m["timestamp"] = isoNow();
    m["tokens_seen"] = tokensSeen;
    m["parent"] = parent.empty() ? json(nullptr) : json(parent);
    m["parent_step"] = parentStep ? json(*parentStep) : json(nullptr);
    m["training_config"] = config.training.toJson();
    m["data_config"] = config.data.toJson();
    m["tokenizer"] = config.data.tokenizer;
    return m;
  }

  // Every rank takes part (the weight check, the RNG states); rank 0 alone
  // writes, and every rank fails when its write does.
  std::string save(const std::string& file, double loss, bool final, double elapsedSeconds) {
    const std::string path = (fs::path(outputDir) / file).string();
    checkWeightsAgree();
    std::vector<at::Tensor> rngs;
    if (world->size() > 1)
      rngs = world->allGather(rngState(), "collecting the ranks' random states");
    world->agree(
        [&] {
          if (world->rank() != 0) return;
          CheckpointContent c;
          c.modelState = model->stateDict();
          c.optimizer = snapshotOptimizer();
          c.metadata = metadata(loss, final);
          c.trainerState = json{{"sampler_position", sampler->position()},
                                {"elapsed_seconds", elapsedSeconds},
                                {"best_val_loss", bestValLoss ? json(*bestValLoss) : json(nullptr)},
                                {"world_size", world->size()},
                                {"backend", world->backend()}};
          c.rngState = rngState();
          c.rankRngStates = rngs;
          removeStaleTempFiles(outputDir);  // a killed writer's leftovers
          saveCheckpointContent(path, c);
        },
        "writing the checkpoint");
    lastSaved = path;
    return path;
  }

  // Keep the newest `keepLast` step checkpoints of this run.
  void prune() {
    if (config.training.keepLast <= 0 || world->rank() != 0) return;
    const std::regex re(std::regex_replace(config.training.runName,
                                           std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                        R"(_step(\d+)\.pt)");
    std::vector<std::pair<int64_t, fs::path>> steps;
    for (const auto& e : fs::directory_iterator(outputDir)) {
      std::smatch m;
      const std::string name = e.path().filename().string();
      if (std::regex_match(name, m, re)) steps.emplace_back(std::stoll(m[1]), e.path());
    }
    std::sort(steps.begin(), steps.end());
    for (size_t i = 0; i + size_t(config.training.keepLast) < steps.size(); ++i)
      fs::remove(steps[i].second);
  }

  void appendMetrics(const StepReport& r) {
    if (world->rank() != 0) return;
    json line{{"step", r.step},
              {"loss", r.loss},
              {"lr", r.learningRate},
              {"tokens", r.tokensSeen},
              {"tokens_per_sec", r.tokensPerSecond},
              {"wall_time", r.elapsedSeconds}};
    if (r.valLoss) line["val_loss"] = *r.valLoss;
    if (world->size() > 1) {
      // The step's gradient all-reduce: the training thread's time on it
      // (of it, waiting after backward), its buckets, and those started
      // before backward returned.
      line["allreduce_time"] = r.allReduceSeconds;
      line["allreduce_wait"] = r.allReduceWaitSeconds;
      line["allreduce_buckets"] = r.allReduceBuckets;
      line["allreduce_buckets_in_backward"] = r.allReduceBucketsInBackward;
    }
    std::ofstream out(fs::path(outputDir) / "metrics.jsonl", std::ios::app);
    out << line.dump() << '\n';
    if (!out)
      throw std::runtime_error((fs::path(outputDir) / "metrics.jsonl").string() +
                               ": cannot append");
  }

  // What preparing decided and promised in notes(): moves, the metrics cut,
  // the lineage, before the first step writes anything.
  void applyPending() {
    if (world->rank() != 0) return;
    removeStaleTempFiles(outputDir);
    if (!pendingTrash.empty()) {
      moveToTrash(outputDir, pendingTrash);
      pendingTrash.clear();
    }
    if (trimMetricsTo) {
      trimMetrics(outputDir, *trimMetricsTo);
      trimMetricsTo.reset();
    }
    if (lineage) {
      writeLineage(outputDir, *lineage);
      lineage.reset();
    }
  }

  // An end-of-run file already at the final path (a finished run extended
  // with a larger max_steps) is kept beside it as <run>_final_step<N>.pt,
  // never replaced.
  void keepEarlierFinal(const std::string& file) {
    if (world->rank() != 0) return;
    const fs::path path = fs::path(outputDir) / file;
    if (!fs::exists(path)) return;
    const CheckpointEntry old = describeCheckpoint(path.string(), file);
    const std::string stem = path.stem().string();
    const fs::path kept =
        fs::path(outputDir) / (stem + "_step" + std::to_string(old.step.value_or(0)) + ".pt");
    if (fs::exists(kept))
      moveToTrash(outputDir, {path.string()});
    else
      fs::rename(path, kept);
  }

  RunResult run(const ProgressCallback& progress) {
    applyPending();
    const TrainingConfig& t = config.training;
    const int64_t T = seqLen();
    const int64_t micro = t.microBatchSize;
    model->train(true);
    std::vector<int32_t> buf(size_t(micro * T));
    const auto start = Clock::now();
    auto elapsed = [&] {
      return elapsedBefore + std::chrono::duration<double>(Clock::now() - start).count();
    };
    RunResult result;
    result.outputDir = outputDir;
    double lastLoss = 0;
    bool stopped = false;
    std::string stopCheckpoint;  // the checkpoint a stop leaves to resume from
    while (step < t.maxSteps && !stopped) {
      const auto stepStart = Clock::now();
      const double lr = learningRateAt(t, step);
      for (auto& group : optimizer->param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
      optimizer->zero_grad();
      world->setStep(step);
      double stepLoss = 0;
      // This rank's share of the step's windows: the global micro-batches
      // rank x accumulation + a, so that the data order depends on the step
      // and the seed only, never on the world size.
      const uint64_t base = sampler->position();
      for (int64_t a = 0; a < t.gradientAccumulationSteps; ++a) {
        sampler->restore(base +
                         uint64_t((world->rank() * t.gradientAccumulationSteps + a) * micro));
        sampler->next(buf.data(), micro);
        const at::Tensor ids =
            torch::from_blob(buf.data(), {micro, T}, torch::kInt32).to(torch::kLong).to(device);
        at::Tensor loss;
        {
          AutocastGuard guard(autocast);
          loss = Decoder::loss(model->forward(ids), ids);
        }
        if (reducer) reducer->beforeBackward(a + 1 == t.gradientAccumulationSteps);
        (loss / double(t.gradientAccumulationSteps)).backward();
        stepLoss += loss.item<double>() / double(t.gradientAccumulationSteps);
      }
      sampler->restore(base + uint64_t(t.batchSize));
      if (world->size() > 1) {
        reducer->finish();  // the buckets not started during backward, then every wait
        stepLoss = world->sum({stepLoss}, "the loss all-reduce")[0] / double(world->size());
      }
      if (!std::isfinite(stepLoss)) {
        throw std::runtime_error("step " + std::to_string(step + 1) + ": the loss is " +
                                 (std::isnan(stepLoss) ? "NaN" : "infinite") + "; the run stopped" +
                                 (lastSaved.empty()
                                      ? std::string(" before any checkpoint was written")
                                      : "; the last good checkpoint is " + lastSaved));
      }
      if (t.maxGradNorm > 0)
        torch::nn::utils::clip_grad_norm_(parameters(), t.maxGradNorm);  // the averaged gradient
      optimizer->step();
      ++step;
      tokensSeen += t.batchSize * T;
      lastLoss = stepLoss;

      StepReport r;
      r.step = step;
      r.maxSteps = t.maxSteps;
      r.loss = stepLoss;
      r.learningRate = lr;
      r.tokensSeen = tokensSeen;
      r.tokensPerSecond =
          double(t.batchSize * T) /
          std::max(1e-9, std::chrono::duration<double>(Clock::now() - stepStart).count());
      r.elapsedSeconds = elapsed();
      if (reducer) {
        const GradientReducer::StepStats& ar = reducer->lastStep();
        r.allReduceSeconds = ar.exposedSeconds;
        r.allReduceWaitSeconds = ar.waitSeconds;
        r.allReduceBuckets = ar.buckets;
        r.allReduceBucketsInBackward = ar.startedInBackward;
      }
      bool improved = false;
      if (t.evalEvery > 0 && step % t.evalEvery == 0) {
        r.valLoss = evaluate();
        lastValLoss = r.valLoss;
        improved = !bestValLoss || *r.valLoss < *bestValLoss;
        if (improved) bestValLoss = r.valLoss;
      }
      // The step's metrics line goes out before its checkpoint: a kill in
      // between leaves a line that the resume in place cuts back, never a
      // checkpoint whose step has no line.
      appendMetrics(r);
      if (t.saveEvery > 0 && step % t.saveEvery == 0 && step < t.maxSteps)
        r.savedCheckpoint = save(t.runName + "_step" + std::to_string(step) + ".pt", stepLoss,
                                 false, r.elapsedSeconds);
      if (improved) {
        const std::string best = save("best_checkpoint.pt", stepLoss, false, r.elapsedSeconds);
        if (r.savedCheckpoint.empty()) r.savedCheckpoint = best;
      }
      prune();
      bool stop = progress && !progress(r);
      if (world->size() > 1)
        stop = world->sum({stop ? 1.0 : 0.0}, "the stop vote")[0] > 0;  // a stop reaches every rank
      if (stop && step < t.maxSteps) {
        stopped = true;
        // Stopping finishes the step and leaves a checkpoint to resume from:
        // the step's own, even when best_checkpoint.pt was written after it.
        const std::string file = t.runName + "_step" + std::to_string(step) + ".pt";
        stopCheckpoint = fs::path(r.savedCheckpoint).filename() == file
                             ? r.savedCheckpoint
                             : save(file, stepLoss, false, r.elapsedSeconds);
      }
    }
    if (!stopped) {
      keepEarlierFinal(t.runName + "_final.pt");
      result.lastCheckpoint = save(t.runName + "_final.pt", lastLoss, true, elapsed());
      result.outcome = RunOutcome::Finished;
    } else {
      result.lastCheckpoint = stopCheckpoint;
      result.outcome = RunOutcome::Stopped;
    }
    result.step = step;
    result.bestValLoss = bestValLoss;
    return result;
  }
};

}  // namespace ckpt
