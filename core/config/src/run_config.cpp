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
              .help("Data-parallel ranks (set from the launch environment)"),
          field("world_adapts", &T::worldAdapts, {"gradient_accumulation_steps", "batch_size"})
              .help("What follows a change of world size: the accumulation (batch_size "
                    "stays) or batch_size (the accumulation stays)"),
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
  const bool hasBatch = j.contains("batch_size"), hasMicro = j.contains("micro_batch_size"),
             hasAccum = j.contains("gradient_accumulation_steps");
  trainingTable().read(*this, j);
  if (microBatchSize <= 0) bad("micro_batch_size", "must be > 0");
  if (worldSize <= 0) bad("world_size", "must be > 0");
  const int64_t W = worldSize;
  // "micro_batch_size (2)" alone, or "world_size (2) x micro_batch_size (2) = 4".
  auto per = [&](const char* field, int64_t v) {
    const std::string one = std::string(field) + " (" + std::to_string(v) + ")";
    return W == 1
               ? one
               : "world_size (" + std::to_string(W) + ") x " + one + " = " + std::to_string(W * v);
  };
  // The fields a batch split names: batch_size, the other one, and world_size when it counts.
  auto split = [&](const char* other) {
    std::vector<std::string> f{"batch_size"};
    if (other) f.emplace_back(other);
    if (W != 1 || !other) f.emplace_back("world_size");
    return f;
  };
  if (hasBatch && hasMicro && !hasAccum) {
    if (batchSize % (W * microBatchSize) != 0)
      bad("batch_size",
          "(" + std::to_string(batchSize) + ") must be a multiple of " +
              per("micro_batch_size", microBatchSize),
          split("micro_batch_size"));
    gradientAccumulationSteps = batchSize / (W * microBatchSize);
  } else if (hasBatch && hasAccum && !hasMicro) {
    if (gradientAccumulationSteps <= 0 || batchSize % (W * gradientAccumulationSteps) != 0)
      bad("batch_size",
          "(" + std::to_string(batchSize) + ") must be a multiple of " +
              per("gradient_accumulation_steps", gradientAccumulationSteps),
          split("gradient_accumulation_steps"));
    microBatchSize = batchSize / (W * gradientAccumulationSteps);
  } else if (hasBatch && !hasMicro && !hasAccum) {
    if (batchSize % W != 0)
      bad("batch_size",
          "(" + std::to_string(batchSize) + ") must be a multiple of world_size (" +
              std::to_string(W) + ")",
          split(nullptr));
    microBatchSize = batchSize / W;
    gradientAccumulationSteps = 1;
  } else {
    batchSize = W * microBatchSize * gradientAccumulationSteps;
  }
}

void TrainingConfig::validate() const {
  trainingTable().check(*this);  // batch_size > 0, beta1 in [0, 1), device auto|cpu|cuda, ...
  if (batchSize != worldSize * microBatchSize * gradientAccumulationSteps) {
    std::vector<std::string> fields{"batch_size", "micro_batch_size",
                                    "gradient_accumulation_steps"};
    if (worldSize != 1) fields.emplace_back("world_size");
    bad("batch_size",
        "(" + std::to_string(batchSize) + ") must equal " +
            (worldSize == 1 ? std::string() : "world_size (" + std::to_string(worldSize) + ") x ") +
            "micro_batch_size (" + std::to_string(microBatchSize) +
            ") x gradient_accumulation_steps (" + std::to_string(gradientAccumulationSteps) + ")",
        fields);
  }
  if (runName.empty() || runName.find('/') != std::string::npos)
    bad("run_name", "must be a non-empty name without '/'");
}

void TrainingConfig::adaptToWorld(int64_t world) {
  if (world <= 0) bad("world_size", "must be > 0 (got " + std::to_string(world) + ")");
  if (world == worldSize) return;
  if (worldAdapts == "batch_size") {
    batchSize = world * microBatchSize * gradientAccumulationSteps;
  } else {
    const int64_t per = world * microBatchSize;
    if (batchSize % per != 0)
      bad("batch_size",
          "(" + std::to_string(batchSize) + ") cannot be split over " + std::to_string(world) +
              " ranks: it must be a multiple of world_size (" + std::to_string(world) +
              ") x micro_batch_size (" + std::to_string(microBatchSize) +
              ") = " + std::to_string(per) +
              "; change batch_size or micro_batch_size, or set world_adapts to batch_size to keep "
              "gradient_accumulation_steps (" +
              std::to_string(gradientAccumulationSteps) + ") and scale the batch",
          {"batch_size", "micro_batch_size", "world_size"});
    gradientAccumulationSteps = batchSize / per;
  }
  worldSize = world;
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
    throw ConfigError(path + ": " + e.what(), e.fields());
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
