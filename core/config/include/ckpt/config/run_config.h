#pragma once
// What a training run needs, from RUN.json or the reference library's flat
// pipeline config. No LibTorch here: the desktop form uses it too.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ckpt/config/model_config.h"

namespace ckpt {

enum class LrSchedule {
  Constant,
  Cosine
};  // warmup, then constant (pretraining) or cosine (SFT/DPO)

// The defaults below are RUN.json's; the field tables (trainingConfigSection()
// and dataConfigSection(), run_config.cpp) read them from here.
struct TrainingConfig {
  std::string runName = "run";
  std::string outputDir;  // "" -> "<runName>" next to the working directory
  std::string stage = "pretrain";
  int64_t batchSize = 8;                  // sequences per optimizer step, over all ranks
  int64_t microBatchSize = 8;             // sequences per forward/backward on one rank
  int64_t gradientAccumulationSteps = 1;  // batchSize / (worldSize x microBatchSize)
  // Data-parallel training: the ranks the batch numbers are for (given, or
  // the launch environment's once adaptToWorld knows it; recorded in
  // checkpoints), which batch number follows when a given world_size is
  // not the run's ("gradient_accumulation_steps": batch_size stays;
  // "batch_size": the accumulation stays and the global batch scales), the
  // flattened all-reduce buckets, whether they start during backward, and
  // the timeout of the rendezvous and of every collective.
  int64_t worldSize = 1;
  std::string worldAdapts = "gradient_accumulation_steps";
  double allreduceBucketMb = 25;
  bool allreduceOverlap = true;
  double distTimeoutSeconds = 600;
  int64_t seqLen = 0;  // 0 -> the model's max_seq_len
  double learningRate = 3e-4;
  int64_t maxSteps = 1000;
  int64_t warmupSteps = 0;
  LrSchedule schedule = LrSchedule::Constant;
  double weightDecay = 0.01;  // AdamW defaults (MODEL.md)
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double maxGradNorm = 1.0;  // <= 0: no clipping
  int64_t evalEvery = 100;   // 0: never
  int64_t evalBatches = 8;   // micro-batches of validation windows per evaluation
  int64_t saveEvery = 500;   // 0: only final
  int64_t logEvery = 10;
  int64_t keepLast = 0;  // keep the newest K step checkpoints; 0 keeps all
  uint64_t seed = 1337;
  std::string mixedPrecision = "bf16";  // bf16 | fp16 | fp32 (autocast on CUDA only)
  std::string device = "auto";          // auto | cpu | cuda

  // Which batch numbers the config was given (RUN.json, key=value, a
  // checkpoint's config), kept so that what was given is never replaced:
  // the others follow from them once the run's world size is known. None
  // recorded (a config built in code, never update()d): every number
  // stands as it is, for worldSize ranks.
  struct Given {
    bool batchSize = false;
    bool microBatchSize = false;
    bool gradientAccumulationSteps = false;
    bool worldSize = false;
  };
  std::optional<Given> given;

  [[nodiscard]] nlohmann::ordered_json toJson() const;
  // Fills from snake_case keys, adding them to `given`; the batch numbers
  // not given follow from those given, for world_size when it is given, else
  // provisionally (1 rank, or the ranks that all three given fit) until
  // adaptToWorld. Throws a ConfigError naming the fields: a value out of
  // bounds, or given batch numbers that no world size fits.
  void update(const nlohmann::ordered_json& j);
  // The table's bounds and choices, then the batch split and run_name.
  void validate() const;
  // A run on `world` ranks, once the launch says how many. world_size not
  // given: the given batch numbers must fit `world` as they are (the others
  // follow). world_size given and different: worldAdapts says which number
  // follows. A ConfigError (Kind::BatchSplit) naming the fields otherwise.
  // Returns what changed from the given numbers, for the log ("" if none).
  std::string adaptToWorld(int64_t world);
};

struct DataConfig {
  std::string path;                 // text file, directory, or .bin
  std::string tokenizer = "bytes";  // "bytes", tokenizer.json, or a GPT-2 vocabulary directory
  double valFraction = 0.1;
  bool uint32Tokens = false;  // .bin files hold uint32 instead of uint16

  [[nodiscard]] nlohmann::ordered_json toJson() const;
  void update(const nlohmann::ordered_json& j);  // and checks val_fraction
};

// RUN.json's "training" and "data" fields, in the order toJson writes them.
const ConfigSection& trainingConfigSection();
const ConfigSection& dataConfigSection();
// Every field of RUN.json's three sections with its type, default, bounds
// and help: what `ckptscope-cli train --help` prints after the usage.
std::string runConfigHelp();

struct RunConfig {
  ModelConfig model;
  TrainingConfig training;
  DataConfig data;

  // {"model": {...}, "training": {...}, "data": {...}}, or the reference
  // library's flat pipeline config (model fields at the top level,
  // pretrain_max_steps, pretrain_lr, ..., output_dir, run_name, seed).
  static RunConfig fromJson(const nlohmann::ordered_json& j);
  static RunConfig fromFile(const std::string& path);
  [[nodiscard]] nlohmann::ordered_json toJson() const;
};

// `key=value` command-line overrides ("training.max_steps=20",
// "max_steps=20", "model.d_model=64"): numbers, booleans, null and strings.
void applyOverride(RunConfig& config, const std::string& assignment);

}  // namespace ckpt
