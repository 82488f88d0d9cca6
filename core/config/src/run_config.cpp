#include "ckpt/config/run_config.h"

#include <fstream>

#include "ckpt/config/config_schema.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& field, const std::string& why,
                      std::vector<std::string> fields = {}) {
  if (fields.empty()) fields = {field};
  throw ConfigError(field + ": " + why, std::move(fields));
}

// RUN.json's "training" section, in the order toJson writes it.
const FieldTable<TrainingConfig>& trainingTable() {
  using T = TrainingConfig;
  static const FieldTable<T> table(
      "training", "RUN.json", FieldStyle::Run,
      {
          field("run_name", &T::runName)
              .form()
              .help("Names the checkpoints: <run_name>_step<N>.pt, <run_name>_final.pt; no '/'"),
          field("output_dir", &T::outputDir)
              .help("Where the run writes; empty: <run_name> in the working directory"),
          field("stage", &T::stage)
              .help("The run's stage (pretrain, sft, dpo, ...), recorded in its checkpoints"),
          field("batch_size", &T::batchSize)
              .above(0)
              .form()
              .help("Sequences per optimizer step, over all ranks"),
          field("micro_batch_size", &T::microBatchSize)
              .above(0)
              .form()
              .help("Sequences per forward/backward on one rank"),
          field("gradient_accumulation_steps", &T::gradientAccumulationSteps)
              .above(0)
              .help(
                  "batch_size / (world_size x micro_batch_size): two of the three give the third"),
          field("world_size", &T::worldSize)
              .above(0)
              .help("Data-parallel ranks the batch numbers are for; not given: the run's "
                    "(the launch environment, --nproc)"),
          field("world_adapts", &T::worldAdapts, {"gradient_accumulation_steps", "batch_size"})
              .help("What follows when a given world_size is not the run's: the accumulation "
                    "(batch_size stays) or batch_size (the accumulation stays)"),
          field("allreduce_bucket_mb", &T::allreduceBucketMb)
              .above(0)
              .help("Size of the flattened gradient all-reduce buckets, in MB"),
          field("allreduce_overlap", &T::allreduceOverlap)
              .help("Start each bucket's all-reduce during backward, once its gradients are "
                    "final; false: all after backward"),
          field("dist_timeout_seconds", &T::distTimeoutSeconds)
              .above(0)
              .help("Timeout of the rendezvous and of every collective"),
          field("seq_len", &T::seqLen)
              .atLeast(0)
              .form()
              .help("Tokens per sequence; 0: max_seq_len"),
          field("learning_rate", &T::learningRate).above(0).form().help("Peak learning rate"),
          field("max_steps", &T::maxSteps).above(0).form().help("Optimizer steps"),
          field("warmup_steps", &T::warmupSteps)
              .atLeast(0)
              .form(100)
              .help("Linear warmup (step+1)/warmup_steps"),
          field("lr_schedule", &T::schedule, {"constant", "cosine"})
              .form()
              .help("Warmup, then constant (pretraining) or cosine (SFT/DPO)"),
          field("weight_decay", &T::weightDecay).atLeast(0).form().help("AdamW weight decay"),
          field("beta1", &T::beta1).atLeast(0).below(1).form().help("AdamW beta1"),
          field("beta2", &T::beta2).atLeast(0).below(1).form().help("AdamW beta2"),
          field("eps", &T::eps).above(0).form().help("AdamW epsilon"),
          field("max_grad_norm", &T::maxGradNorm).form().help("Gradient clipping; <= 0: none"),
          field("eval_every", &T::evalEvery)
              .atLeast(0)
              .form()
              .help("Validation loss every N steps; 0: never"),
          field("eval_batches", &T::evalBatches)
              .form()
              .formMinimum(1)
              .help("Micro-batches of validation windows per evaluation"),
          field("save_every", &T::saveEvery)
              .atLeast(0)
              .form()
              .help("A checkpoint every N steps; 0: only the final one"),
          field("log_every", &T::logEvery)
              .atLeast(0)
              .form()
              .formMinimum(1)
              .help("A log line every N steps"),
          field("keep_last", &T::keepLast)
              .atLeast(0)
              .form()
              .help("Keep the newest K step checkpoints; 0: all"),
          field("seed", &T::seed).form().help("Seeds the init, the data order and dropout"),
          field("mixed_precision", &T::mixedPrecision, {"bf16", "fp16", "fp32"})
              .form()
              .help("Autocast dtype on CUDA (the CPU runs fp32)"),
          field("device", &T::device, {"auto", "cpu", "cuda"}).help("Where the run trains"),
      });
  return table;
}

// RUN.json's "data" section.
const FieldTable<DataConfig>& dataTable() {
  using D = DataConfig;
  static const FieldTable<D> table(
      "data", "RUN.json", FieldStyle::Run,
      {
          field("path", &D::path).help("A text file, a directory of text files, or .bin tokens"),
          field("tokenizer", &D::tokenizer)
              .help(
                  "bytes; a Hugging Face tokenizer.json; or a directory with GPT-2's vocab.json + "
                  "merges.txt"),
          field("val_fraction", &D::valFraction)
              .atLeast(0)
              .below(1)
              .form()
              .help("Share of the data held out for the validation loss"),
          field("uint32", &D::uint32Tokens)
              .form()
              .help(".bin files hold uint32 tokens (uint16 otherwise)"),
      });
  return table;
}

// ---- the batch split: batch_size = world_size x micro_batch_size x
// gradient_accumulation_steps. What was given is never replaced; a number
// not given follows from those given, and given ones that contradict each
// other for the world at hand are a ConfigError naming them all.

using Given = TrainingConfig::Given;

// Reading a config without world_size (1 rank until the launch says) or
// with it, or at the launch, for the run's world: the messages say which,
// and name world_size where it counts.
enum class SplitAt { Provisional, GivenWorld, Launch };

[[noreturn]] void refuseSplit(const std::string& why, std::vector<std::string> fields) {
  throw ConfigError("batch_size: " + why, std::move(fields), ConfigError::Kind::BatchSplit);
}

// a x b, or a ConfigError: JSON holds numbers whose product int64 does not.
int64_t times(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    refuseSplit("the product of world_size, micro_batch_size and gradient_accumulation_steps (" +
                    std::to_string(a) + " x " + std::to_string(b) + ") is too large",
                {"batch_size", "micro_batch_size", "gradient_accumulation_steps", "world_size"});
  return r;
}

std::string named(const char* field, int64_t v) {
  return std::string(field) + " (" + std::to_string(v) + ")";
}

std::string ranks(int64_t n) {
  return std::to_string(n) + (n == 1 ? " rank" : " ranks");
}

// The four numbers' own bounds (> 0) first: the split divides by them.
void requirePositive(const TrainingConfig& t) {
  const json j = trainingTable().write(t);
  for (const char* key :
       {"batch_size", "micro_batch_size", "gradient_accumulation_steps", "world_size"})
    checkField(*trainingTable().section().find(key), j[key], FieldStyle::Run);
}

// batch_size is no multiple of world x `other` (`v`), or of the world alone
// (other null).
[[noreturn]] void refuseMultiple(const TrainingConfig& t, int64_t world, const char* other,
                                 int64_t v, SplitAt at) {
  const bool sayWorld = world != 1 || at != SplitAt::Provisional || !other;
  std::string of = !other      ? named("world_size", world)
                   : !sayWorld ? named(other, v)
                               : named("world_size", world) + " x " + named(other, v) + " = " +
                                     std::to_string(times(world, v));
  std::vector<std::string> fields{"batch_size"};
  if (other) fields.emplace_back(other);
  if (sayWorld) fields.emplace_back("world_size");
  const std::string b = "(" + std::to_string(t.batchSize) + ") ";
  if (at != SplitAt::Launch) refuseSplit(b + "must be a multiple of " + of, std::move(fields));
  refuseSplit(b + "cannot be split over " + ranks(world) + ": it must be a multiple of " + of +
                  "; change batch_size" + (other ? std::string(" or ") + other : std::string()),
              std::move(fields));
}

// All three given, and batch_size is not their product for `world`.
[[noreturn]] void refuseProduct(const TrainingConfig& t, int64_t world, SplitAt at) {
  const bool sayWorld = world != 1 || at != SplitAt::Provisional;
  std::vector<std::string> fields{"batch_size", "micro_batch_size", "gradient_accumulation_steps"};
  if (sayWorld) fields.emplace_back("world_size");
  const int64_t perRank = times(t.microBatchSize, t.gradientAccumulationSteps);
  std::string why = "(" + std::to_string(t.batchSize) + ") must equal " +
                    (sayWorld ? named("world_size", world) + " x " : std::string()) +
                    named("micro_batch_size", t.microBatchSize) + " x " +
                    named("gradient_accumulation_steps", t.gradientAccumulationSteps) + " = " +
                    std::to_string(times(world, perRank));
  if (at == SplitAt::Launch) {
    why += " in this run of " + ranks(world) + " (batch_size counts the sequences of all ranks";
    if (t.batchSize % perRank == 0) why += "; the three fit " + ranks(t.batchSize / perRank);
    why += "); give two of the three and the third follows";
  }
  refuseSplit(why, std::move(fields));
}

// All three given and no world size fits them.
[[noreturn]] void refuseAnyWorld(const TrainingConfig& t) {
  refuseSplit("(" + std::to_string(t.batchSize) + ") must be a multiple of " +
                  named("micro_batch_size", t.microBatchSize) + " x " +
                  named("gradient_accumulation_steps", t.gradientAccumulationSteps) + " = " +
                  std::to_string(times(t.microBatchSize, t.gradientAccumulationSteps)) +
                  " (world_size times it): no number of ranks fits the three",
              {"batch_size", "micro_batch_size", "gradient_accumulation_steps"});
}

// The numbers not given, from those given, for `world` ranks.
void splitBatch(TrainingConfig& t, const Given& g, int64_t world, SplitAt at) {
  if (g.batchSize && g.microBatchSize && g.gradientAccumulationSteps) {
    if (t.batchSize != times(world, times(t.microBatchSize, t.gradientAccumulationSteps)))
      refuseProduct(t, world, at);
  } else if (g.batchSize && g.microBatchSize) {
    const int64_t per = times(world, t.microBatchSize);
    if (t.batchSize % per != 0) refuseMultiple(t, world, "micro_batch_size", t.microBatchSize, at);
    t.gradientAccumulationSteps = t.batchSize / per;
  } else if (g.batchSize && g.gradientAccumulationSteps) {
    const int64_t per = times(world, t.gradientAccumulationSteps);
    if (t.batchSize % per != 0)
      refuseMultiple(t, world, "gradient_accumulation_steps", t.gradientAccumulationSteps, at);
    t.microBatchSize = t.batchSize / per;
  } else if (g.batchSize) {
    if (t.batchSize % world != 0) refuseMultiple(t, world, nullptr, 0, at);
    t.microBatchSize = t.batchSize / world;
    t.gradientAccumulationSteps = 1;
  } else {
    t.batchSize = times(world, times(t.microBatchSize, t.gradientAccumulationSteps));
  }
  t.worldSize = world;
}

// Keys that belong to the model in a flat config: everything MODEL.md lists.
bool isModelKey(const std::string& k) {
  return isModelConfigKey(k);
}

std::string getString(const json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  bad(key, "expected a string, got " + it->dump());
}

}  // namespace

const ConfigSection& trainingConfigSection() {
  return trainingTable().section();
}
const ConfigSection& dataConfigSection() {
  return dataTable().section();
}

std::string runConfigHelp() {
  return "RUN.json: {\"model\": {...}, \"training\": {...}, \"data\": {...}}; key=value on the\n"
         "command line sets one field (max_steps=20, model.d_model=64).\n" +
         describeSections({&modelConfigSection(), &trainingConfigSection(), &dataConfigSection()});
}

json TrainingConfig::toJson() const {
  return trainingTable().write(*this);
}

void TrainingConfig::update(const json& j) {
  if (!j.is_object()) throw ConfigError("training: expected an object");
  // The reference library's betas pair; beta1 and beta2 override it.
  if (j.contains("betas") && j["betas"].is_array() && j["betas"].size() == 2) {
    beta1 = j["betas"][0].get<double>();
    beta2 = j["betas"][1].get<double>();
  }
  // Null keeps a value (FieldStyle::Run), so it gives nothing either.
  auto has = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && !it->is_null();
  };
  Given g = given.value_or(Given{});
  g.batchSize = g.batchSize || has("batch_size");
  g.microBatchSize = g.microBatchSize || has("micro_batch_size");
  g.gradientAccumulationSteps = g.gradientAccumulationSteps || has("gradient_accumulation_steps");
  g.worldSize = g.worldSize || has("world_size");
  trainingTable().read(*this, j);
  given = g;
  requirePositive(*this);
  if (g.worldSize) {
    splitBatch(*this, g, worldSize, SplitAt::GivenWorld);
  } else if (g.batchSize && g.microBatchSize && g.gradientAccumulationSteps) {
    // All three given, for a world not yet known: they must fit some number
    // of ranks, which stands in world_size until the launch says how many.
    const int64_t perRank = times(microBatchSize, gradientAccumulationSteps);
    if (batchSize % perRank != 0) refuseAnyWorld(*this);
    worldSize = batchSize / perRank;
  } else {
    splitBatch(*this, g, 1, SplitAt::Provisional);
  }
}

void TrainingConfig::validate() const {
  trainingTable().check(*this);  // batch_size > 0, beta1 in [0, 1), device auto|cpu|cuda, ...
  if (batchSize != times(times(worldSize, microBatchSize), gradientAccumulationSteps))
    refuseProduct(*this, worldSize,
                  given && given->worldSize ? SplitAt::GivenWorld : SplitAt::Provisional);
  if (runName.empty() || runName.find('/') != std::string::npos)
    bad("run_name", "must be a non-empty name without '/'");
}

std::string TrainingConfig::adaptToWorld(int64_t world) {
  if (world <= 0) bad("world_size", "must be > 0 (got " + std::to_string(world) + ")");
  requirePositive(*this);
  if (given && !given->worldSize) {
    // No world_size given: the numbers given are for this run's world.
    splitBatch(*this, *given, world, SplitAt::Launch);
    given = Given{true, true, true, true};  // as a checkpoint of this run records them
    return {};
  }
  if (world == worldSize) return {};
  const std::string change = "world_size " + std::to_string(worldSize) + " in the config, " +
                             std::to_string(world) + " in this run: ";
  std::string note;
  if (worldAdapts == "batch_size") {
    const int64_t before = batchSize;
    batchSize = times(times(world, microBatchSize), gradientAccumulationSteps);
    note = change + "batch_size " + std::to_string(before) + " -> " + std::to_string(batchSize) +
           " (world_adapts), gradient_accumulation_steps stays " +
           std::to_string(gradientAccumulationSteps);
  } else {
    const int64_t per = times(world, microBatchSize);
    if (batchSize % per != 0)
      refuseSplit(
          "(" + std::to_string(batchSize) + ") cannot be split over " + std::to_string(world) +
              " ranks: it must be a multiple of world_size (" + std::to_string(world) +
              ") x micro_batch_size (" + std::to_string(microBatchSize) +
              ") = " + std::to_string(per) +
              "; change batch_size or micro_batch_size, or set world_adapts to batch_size to keep "
              "gradient_accumulation_steps (" +
              std::to_string(gradientAccumulationSteps) + ") and scale the batch",
          {"batch_size", "micro_batch_size", "world_size"});
    const int64_t before = gradientAccumulationSteps;
    gradientAccumulationSteps = batchSize / per;
    note = change + "gradient_accumulation_steps " + std::to_string(before) + " -> " +
           std::to_string(gradientAccumulationSteps) + " (world_adapts), batch_size stays " +
           std::to_string(batchSize);
  }
  worldSize = world;
  return note;
}

json DataConfig::toJson() const {
  return dataTable().write(*this);
}

void DataConfig::update(const json& j) {
  if (!j.is_object()) throw ConfigError("data: expected an object");
  dataTable().read(*this, j);
  dataTable().check(*this);  // val_fraction in [0, 1)
}

RunConfig RunConfig::fromJson(const json& j) {
  if (!j.is_object()) throw ConfigError("run config: expected a JSON object");
  RunConfig rc;
  if (j.contains("model")) {
    rc.model = ModelConfig::fromJson(j["model"]);
    if (j.contains("training")) rc.training.update(j["training"]);
    if (j.contains("data")) rc.data.update(j["data"]);
  } else {
    // The reference library's flat pipeline config.
    json model = json::object(), training = json::object();
    for (const auto& [k, v] : j.items())
      if (isModelKey(k)) model[k] = v;
    rc.model = ModelConfig::fromJson(model);
    struct Map {
      const char* from;
      const char* to;
    };
    static const Map maps[] = {{"pretrain_max_steps", "max_steps"},
                               {"pretrain_lr", "learning_rate"},
                               {"pretrain_batch_size", "batch_size"},
                               {"pretrain_micro_batch_size", "micro_batch_size"},
                               {"pretrain_warmup_steps", "warmup_steps"},
                               {"output_dir", "output_dir"},
                               {"run_name", "run_name"},
                               {"seed", "seed"},
                               {"save_every", "save_every"},
                               {"eval_every", "eval_every"},
                               {"log_every", "log_every"},
                               {"weight_decay", "weight_decay"},
                               {"max_grad_norm", "max_grad_norm"},
                               {"mixed_precision", "mixed_precision"},
                               {"gradient_accumulation_steps", "gradient_accumulation_steps"}};
    for (const Map& m : maps)
      if (j.contains(m.from)) training[m.to] = j[m.from];
    rc.training.update(training);
    if (j.contains("data_path")) rc.data.path = getString(j, "data_path", "");
    if (j.contains("tokenizer") && j["tokenizer"].is_string())
      rc.data.tokenizer = j["tokenizer"].get<std::string>();
  }
  rc.training.validate();
  return rc;
}

RunConfig RunConfig::fromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path + ": not valid JSON: " + e.what());
  }
  try {
    return fromJson(j);
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what(), e.fields(), e.kind());
  }
}

json RunConfig::toJson() const {
  return json{{"model", model.toJson()}, {"training", training.toJson()}, {"data", data.toJson()}};
}

void applyOverride(RunConfig& config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("override '" + assignment + "': expected key=value");
  std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = json::parse(text);
  } catch (const nlohmann::json::exception&) {
    value = text;  // a bare string
  }
  std::string section;
  if (const size_t dot = key.find('.'); dot != std::string::npos) {
    section = key.substr(0, dot);
    key = key.substr(dot + 1);
  } else if (isModelKey(key)) {
    section = "model";
  } else if (dataConfigSection().find(key)) {
    section = "data";
  } else {
    section = "training";
  }
  if (section == "model") {
    json m = config.model.toJson();
    m[key] = value;
    config.model = ModelConfig::fromJson(m);
  } else if (section == "training") {
    config.training.update(json{{key, value}});
    config.training.validate();
  } else if (section == "data") {
    config.data.update(json{{key, value}});
  } else {
    throw ConfigError("override '" + assignment + "': unknown section " + section);
  }
}

}  // namespace ckpt
