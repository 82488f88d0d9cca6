#pragma once
// Reading a number out of an open checkpoint, and the Lightning facts a
// checkpoint file holds (lightning.cpp); for checkpoint_entry.cpp. Internal to
// core/index.

#include <cstddef>
#include <optional>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/index/scanner.h"

namespace ckpt::detail {

// A number, or the value of a one-element tensor (nanoGPT's best_val_loss is
// losses['val'], a 0-dim tensor; a ModelCheckpoint's best_model_score too):
// its few bytes are the one tensor read.
inline std::optional<double> numberOrScalar(const CheckpointFile& file, const Value* v) {
  if (!v) return std::nullopt;
  if (v->isNumber()) return v->number();
  if (v->kind != Value::Kind::Tensor || v->index < 0 || size_t(v->index) >= file.tensors().size() ||
      file.tensors()[size_t(v->index)].numel() != 1)
    return std::nullopt;
  try {
    return file.tensorData(size_t(v->index)).at(0);
  } catch (const std::exception&) {
    return std::nullopt;  // metadata only, or bytes not there
  }
}

// A checkpoint PyTorch Lightning's Trainer saved (its dict says
// `pytorch-lightning_version`): sets e.trainer to kLightningId, adds the
// file's epoch and the metrics its name says (lightningNameMetrics) to
// e.scalars where the file has none of that name, and e.recordedBest from its
// ModelCheckpoint callbacks. False, `e` untouched, for any other file.
bool describeLightningCheckpoint(const CheckpointFile& file, const CheckpointView& view,
                                 const std::string& fileName, CheckpointEntry& e);

}  // namespace ckpt::detail
