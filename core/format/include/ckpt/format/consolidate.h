#pragma once
// One file from a checkpoint of many (or any checkpoint our reader opens):
// `ckptscope-cli consolidate`.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ckpt/format/dtype.h"

namespace ckpt {

class CheckpointFile;

struct ConsolidateOptions {
  // Floating-point tensors converted to this type (Float32 or BFloat16:
  // round to nearest even); other tensors keep theirs. Unset: as stored.
  std::optional<DType> dtype;
  // Only the model's state dict (CheckpointView::modelState), not the
  // optimizer and metadata around it.
  bool modelOnly = false;
  // Called after each tensor with the tensors written and in all; false stops
  // (nothing is left behind: the target is never created).
  std::function<bool(size_t done, size_t total)> progress;
};

struct ConsolidateResult {
  size_t tensors = 0;
  uint64_t bytes = 0;  // tensor bytes written
  bool cancelled = false;
};

// Writes `source` as one file: `.safetensors` by the target's extension (a
// flat name -> tensor map, the source's metadata strings as "__metadata__"),
// otherwise a torch zip file that torch.load reads: the source's tree as it
// is (a state dict stays a state dict; a modern_llm checkpoint keeps
// model_state, optimizer and metadata), or just the model state with
// `modelOnly`. Tensors are assembled and written one at a time. Refuses to
// overwrite an existing target; throws FormatError naming the tensor that
// cannot be read (a part missing, chunks that do not fit).
ConsolidateResult consolidateCheckpoint(const CheckpointFile& source, const std::string& target,
                                        const ConsolidateOptions& options = {});

}  // namespace ckpt
