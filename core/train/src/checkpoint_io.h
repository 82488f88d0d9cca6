#pragma once
// Checkpoints in the modern_llm layout (MODEL.md) between LibTorch tensors
// and files: read through the safe reader, written through our writer.
// Internal to ckpt_train.

#include <ATen/core/Tensor.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/config/model_config.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/model/decoder.h"

namespace ckpt {

// One parameter's AdamW state, by its index in the de-duplicated order.
struct AdamState {
  int64_t index = 0;
  int64_t step = 0;
  at::Tensor expAvg;
  at::Tensor expAvgSq;
};

struct OptimizerSnapshot {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  int64_t paramCount = 0;         // parameters in the group (params: [0..N-1])
  std::vector<AdamState> states;  // may be fewer than the parameters (never stepped)
};

// What we save and what we read back.
struct CheckpointContent {
  NamedTensors modelState;  // MODEL.md keys; tied entries share their tensor
  std::optional<OptimizerSnapshot> optimizer;
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();  // repeated at the top level
  nlohmann::ordered_json trainerState;    // exact-resume state (ours only); null otherwise
  std::optional<at::Tensor> rngState;     // torch's CPU generator state (uint8)
  std::vector<at::Tensor> rankRngStates;  // data-parallel runs: every rank's, by rank
};

// The tensor `index` of a file as an owned, contiguous CPU tensor.
at::Tensor readTensor(const CheckpointFile& file, size_t index);

// Reads a checkpoint written by us or by the Python library (a bare state
// dict too). Throws std::runtime_error naming the file.
CheckpointContent loadCheckpointContent(const std::string& path, ModelConfig* config);

// Writes atomically (temp file, fsync, rename). Throws FormatError naming the
// path; an existing file at `path` is left intact on failure.
void saveCheckpointContent(const std::string& path, const CheckpointContent& content);

}  // namespace ckpt
