#include "ckpt/train/run_config.h"

#include <fstream>

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& field, const std::string& why) { throw ConfigError(field + ": " + why); }

int64_t getInt(const json& j, const char* key, int64_t fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float() && it->get<double>() == double(int64_t(it->get<double>()))) return int64_t(it->get<double>());
  bad(key, "expected an integer, got " + it->dump());
}

double getDouble(const json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_number()) return it->get<double>();
  bad(key, "expected a number, got " + it->dump());
}

std::string getString(const json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  bad(key, "expected a string, got " + it->dump());
}

bool getBool(const json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_boolean()) return it->get<bool>();
  bad(key, "expected true or false, got " + it->dump());
}

// Keys that belong to the model in a flat config: everything MODEL.md lists.
bool isModelKey(const std::string& k) { return isModelConfigKey(k); }

}  // namespace

json TrainingConfig::toJson() const {
  return json{{"run_name", runName},
              {"output_dir", outputDir},
              {"stage", stage},
              {"batch_size", batchSize},
              {"micro_batch_size", microBatchSize},
              {"gradient_accumulation_steps", gradientAccumulationSteps},
              {"world_size", worldSize},
              {"world_adapts", worldAdapts},
              {"allreduce_bucket_mb", allreduceBucketMb},
              {"dist_timeout_seconds", distTimeoutSeconds},
              {"seq_len", seqLen},
              {"learning_rate", learningRate},
              {"max_steps", maxSteps},
              {"warmup_steps", warmupSteps},
              {"lr_schedule", schedule == LrSchedule::Cosine ? "cosine" : "constant"},
              {"weight_decay", weightDecay},
              {"beta1", beta1},
              {"beta2", beta2},
              {"eps", eps},
              {"max_grad_norm", maxGradNorm},
              {"eval_every", evalEvery},
              {"eval_batches", evalBatches},
              {"save_every", saveEvery},
              {"log_every", logEvery},
              {"keep_last", keepLast},
              {"seed", seed},
              {"mixed_precision", mixedPrecision},
              {"device", device}};
}

void TrainingConfig::update(const json& j) {
  if (!j.is_object()) bad("training", "expected an object");
  runName = getString(j, "run_name", runName);
  outputDir = getString(j, "output_dir", outputDir);
  stage = getString(j, "stage", stage);
  const bool hasBatch = j.contains("batch_size"), hasMicro = j.contains("micro_batch_size"),
             hasAccum = j.contains("gradient_accumulation_steps");
  batchSize = getInt(j, "batch_size", batchSize);
  microBatchSize = getInt(j, "micro_batch_size", microBatchSize);
  gradientAccumulationSteps = getInt(j, "gradient_accumulation_steps", gradientAccumulationSteps);
  worldSize = getInt(j, "world_size", worldSize);
  if (microBatchSize <= 0) bad("micro_batch_size", "must be > 0");
  if (worldSize <= 0) bad("world_size", "must be > 0");
  const int64_t W = worldSize;
  // "micro_batch_size (2)" alone, or "world_size (2) x micro_batch_size (2) = 4".
  auto per = [&](const char* field, int64_t v) {
    const std::string one = std::string(field) + " (" + std::to_string(v) + ")";
    return W == 1 ? one : "world_size (" + std::to_string(W) + ") x " + one + " = " + std::to_string(W * v);
  };
  if (hasBatch && hasMicro && !hasAccum) {
    if (batchSize % (W * microBatchSize) != 0)
      bad("batch_size", "(" + std::to_string(batchSize) + ") must be a multiple of " + per("micro_batch_size", microBatchSize));
    gradientAccumulationSteps = batchSize / (W * microBatchSize);
  } else if (hasBatch && hasAccum && !hasMicro) {
    if (gradientAccumulationSteps <= 0 || batchSize % (W * gradientAccumulationSteps) != 0)
      bad("batch_size", "(" + std::to_string(batchSize) + ") must be a multiple of " +
                            per("gradient_accumulation_steps", gradientAccumulationSteps));
    microBatchSize = batchSize / (W * gradientAccumulationSteps);
  } else if (hasBatch && !hasMicro && !hasAccum) {
    if (batchSize % W != 0)
      bad("batch_size", "(" + std::to_string(batchSize) + ") must be a multiple of world_size (" + std::to_string(W) + ")");
    microBatchSize = batchSize / W;
    gradientAccumulationSteps = 1;
  } else {
    batchSize = W * microBatchSize * gradientAccumulationSteps;
  }
  worldAdapts = getString(j, "world_adapts", worldAdapts);
  allreduceBucketMb = getDouble(j, "allreduce_bucket_mb", allreduceBucketMb);
  distTimeoutSeconds = getDouble(j, "dist_timeout_seconds", distTimeoutSeconds);
  seqLen = getInt(j, "seq_len", seqLen);
  learningRate = getDouble(j, "learning_rate", learningRate);
  maxSteps = getInt(j, "max_steps", maxSteps);
  warmupSteps = getInt(j, "warmup_steps", warmupSteps);
  const std::string sched = getString(j, "lr_schedule", schedule == LrSchedule::Cosine ? "cosine" : "constant");
  if (sched == "cosine") schedule = LrSchedule::Cosine;
  else if (sched == "constant") schedule = LrSchedule::Constant;
  else bad("lr_schedule", "expected constant or cosine, got " + sched);
  weightDecay = getDouble(j, "weight_decay", weightDecay);
  if (j.contains("betas") && j["betas"].is_array() && j["betas"].size() == 2) {
    beta1 = j["betas"][0].get<double>();
    beta2 = j["betas"][1].get<double>();
  }
  beta1 = getDouble(j, "beta1", beta1);
  beta2 = getDouble(j, "beta2", beta2);
  eps = getDouble(j, "eps", eps);
  maxGradNorm = getDouble(j, "max_grad_norm", maxGradNorm);
  evalEvery = getInt(j, "eval_every", evalEvery);
  evalBatches = getInt(j, "eval_batches", evalBatches);
  saveEvery = getInt(j, "save_every", saveEvery);
  logEvery = getInt(j, "log_every", logEvery);
  keepLast = getInt(j, "keep_last", keepLast);
  seed = uint64_t(getInt(j, "seed", int64_t(seed)));
  mixedPrecision = getString(j, "mixed_precision", mixedPrecision);
  device = getString(j, "device", device);
}

void TrainingConfig::validate() const {
  auto positive = [](const char* field, int64_t v) {
    if (v <= 0) bad(field, "must be > 0 (got " + std::to_string(v) + ")");
  };
  positive("batch_size", batchSize);
  positive("micro_batch_size", microBatchSize);
  positive("gradient_accumulation_steps", gradientAccumulationSteps);
  positive("world_size", worldSize);
  if (batchSize != worldSize * microBatchSize * gradientAccumulationSteps)
    bad("batch_size", "(" + std::to_string(batchSize) + ") must equal " +
                          (worldSize == 1 ? std::string() : "world_size (" + std::to_string(worldSize) + ") x ") +
                          "micro_batch_size (" + std::to_string(microBatchSize) + ") x gradient_accumulation_steps (" +
                          std::to_string(gradientAccumulationSteps) + ")");
  if (worldAdapts != "gradient_accumulation_steps" && worldAdapts != "batch_size")
    bad("world_adapts", "expected gradient_accumulation_steps or batch_size, got " + worldAdapts);
  if (!(allreduceBucketMb > 0)) bad("allreduce_bucket_mb", "must be > 0");
  if (!(distTimeoutSeconds > 0)) bad("dist_timeout_seconds", "must be > 0");
  positive("max_steps", maxSteps);
  if (!(learningRate > 0)) bad("learning_rate", "must be > 0");
  if (warmupSteps < 0) bad("warmup_steps", "must be >= 0");
  if (seqLen < 0) bad("seq_len", "must be >= 0");
  if (weightDecay < 0) bad("weight_decay", "must be >= 0");
  if (!(beta1 >= 0 && beta1 < 1)) bad("beta1", "must be in [0, 1)");
  if (!(beta2 >= 0 && beta2 < 1)) bad("beta2", "must be in [0, 1)");
  if (!(eps > 0)) bad("eps", "must be > 0");
  if (evalEvery < 0 || saveEvery < 0 || logEvery < 0 || keepLast < 0)
    bad("eval_every/save_every/log_every/keep_last", "must be >= 0");
  if (mixedPrecision != "bf16" && mixedPrecision != "fp16" && mixedPrecision != "fp32")
    bad("mixed_precision", "expected bf16, fp16 or fp32, got " + mixedPrecision);
  if (device != "auto" && device != "cpu" && device != "cuda") bad("device", "expected auto, cpu or cuda, got " + device);
  if (runName.empty() || runName.find('/') != std::string::npos) bad("run_name", "must be a non-empty name without '/'");
}

void TrainingConfig::adaptToWorld(int64_t world) {
  if (world <= 0) bad("world_size", "must be > 0 (got " + std::to_string(world) + ")");
  if (world == worldSize) return;
  if (worldAdapts == "batch_size") {
    batchSize = world * microBatchSize * gradientAccumulationSteps;
  } else {
    const int64_t per = world * microBatchSize;
    if (batchSize % per != 0)
      bad("batch_size", "(" + std::to_string(batchSize) + ") cannot be split over " + std::to_string(world) +
                            " ranks: it must be a multiple of world_size (" + std::to_string(world) +
                            ") x micro_batch_size (" + std::to_string(microBatchSize) + ") = " + std::to_string(per) +
                            "; change batch_size or micro_batch_size, or set world_adapts to batch_size to keep "
                            "gradient_accumulation_steps (" +
                            std::to_string(gradientAccumulationSteps) + ") and scale the batch");
    gradientAccumulationSteps = batchSize / per;
  }
  worldSize = world;
}

json DataConfig::toJson() const {
  return json{{"path", path}, {"tokenizer", tokenizer}, {"val_fraction", valFraction}, {"uint32", uint32Tokens}};
}

void DataConfig::update(const json& j) {
  if (!j.is_object()) bad("data", "expected an object");
  path = getString(j, "path", path);
  tokenizer = getString(j, "tokenizer", tokenizer);
  valFraction = getDouble(j, "val_fraction", valFraction);
  uint32Tokens = getBool(j, "uint32", uint32Tokens);
  if (!(valFraction >= 0 && valFraction < 1)) bad("val_fraction", "must be in [0, 1)");
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
    static const Map maps[] = {{"pretrain_max_steps", "max_steps"},     {"pretrain_lr", "learning_rate"},
                               {"pretrain_batch_size", "batch_size"},   {"pretrain_micro_batch_size", "micro_batch_size"},
                               {"pretrain_warmup_steps", "warmup_steps"}, {"output_dir", "output_dir"},
                               {"run_name", "run_name"},                {"seed", "seed"},
                               {"save_every", "save_every"},            {"eval_every", "eval_every"},
                               {"log_every", "log_every"},              {"weight_decay", "weight_decay"},
                               {"max_grad_norm", "max_grad_norm"},      {"mixed_precision", "mixed_precision"},
                               {"gradient_accumulation_steps", "gradient_accumulation_steps"}};
    for (const Map& m : maps)
      if (j.contains(m.from)) training[m.to] = j[m.from];
    rc.training.update(training);
    if (j.contains("data_path")) rc.data.path = getString(j, "data_path", "");
    if (j.contains("tokenizer") && j["tokenizer"].is_string()) rc.data.tokenizer = j["tokenizer"].get<std::string>();
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
    throw ConfigError(path + ": " + e.what());
  }
}

json RunConfig::toJson() const {
  return json{{"model", model.toJson()}, {"training", training.toJson()}, {"data", data.toJson()}};
}

void applyOverride(RunConfig& config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("override '" + assignment + "': expected key=value");
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
  } else if (key == "path" || key == "tokenizer" || key == "val_fraction" || key == "uint32") {
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
