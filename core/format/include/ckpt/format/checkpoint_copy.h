#pragma once
// One streaming copy of a checkpoint into a new file, tensor by tensor:
// `ckptscope-cli consolidate` (many files into one) and `ckptscope-cli
// export` / Checkpoint > Export... (a slim copy without optimizer state).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ckpt/format/dtype.h"

namespace ckpt {

class CheckpointFile;

// What of the source goes into the copy.
enum class CopyContent {
  // The tree as it is (a state dict stays a state dict; a modern_llm
  // checkpoint keeps model_state, optimizer and metadata).
  Whole,
  // The bare model state dict (CheckpointView::modelState).
  ModelState,
  // The modern_llm layout without optimizer state: model_state, metadata
  // (with `exported_from`) and every other top-level entry but the
  // optimizer's. A bare state dict or safetensors file becomes
  // {"model_state", "metadata", metadata keys repeated at the top level}.
  WithoutOptimizer,
  // As WithoutOptimizer, and top-level entries holding tensors other than
  // the model state's (RNG state, a scheduler's buffers) left out too.
  ModelOnly,
};

enum class CopyFormat {
  ByExtension,  // ".safetensors" -> Safetensors, anything else -> Torch
  Torch,        // a torch zip file that torch.load reads
  Safetensors,
};

struct CopyOptions {
  CopyContent content = CopyContent::Whole;
  CopyFormat format = CopyFormat::ByExtension;
  // Floating-point tensors converted to this type (Float32, BFloat16 or
  // Float16, rounding to nearest even as torch's .to() does); other tensors
  // keep theirs. Unset: as stored.
  std::optional<DType> dtype;
  // Called before each tensor with the tensors written and in all; false
  // stops (nothing is left behind: the target is never created).
  std::function<bool(size_t done, size_t total)> progress;
};

struct CopyResult {
  size_t tensors = 0;
  uint64_t bytes = 0;  // tensor bytes written
  bool cancelled = false;
};

// Where a copy came from, as WithoutOptimizer / ModelOnly record it
// (`exported_from` in the metadata): the absolute path, its size in bytes
// (a folder: the files directly in it), its modification time (UTC,
// ISO 8601) and the checkpoint's step when it has one.
struct CopySource {
  std::string path;
  uint64_t size = 0;
  std::string mtime;
  std::optional<int64_t> step;
};
CopySource describeCopySource(const CheckpointFile& source);

// Parses "fp32" / "float32", "bf16" / "bfloat16", "fp16" / "float16" / "half".
std::optional<DType> parseCopyDtype(std::string_view name);

// Writes `source` into `target`, one tensor in memory at a time.
// Safetensors holds a flat name -> tensor map: for Whole the tensors by their
// path in the tree, otherwise the model state by its keys; "__metadata__"
// holds the source's metadata (strings as they are, other values as JSON,
// the config included) and, for WithoutOptimizer / ModelOnly,
// `exported_from` as JSON. Tensors sharing bytes in the source share them
// in a torch file. Refuses an existing target (never overwrites), a dtype
// it cannot convert to, and a source without a model state when one is
// needed; throws FormatError naming the tensor that cannot be read.
CopyResult copyCheckpoint(const CheckpointFile& source, const std::string& target,
                          const CopyOptions& options = {});

// What copyCheckpoint would write (no file touched, no tensor bytes read):
// the tensors and their bytes after the dtype conversion, a tie counted once
// in a torch file. Throws as copyCheckpoint does for what it refuses.
struct CopyEstimate {
  size_t tensors = 0;
  uint64_t bytes = 0;
};
CopyEstimate estimateCopy(const CheckpointFile& source, const CopyOptions& options);

}  // namespace ckpt
