#pragma once
// Pieces of the checkpoint diff shared between its source files.

#include "ckpt/analysis/diff.h"

namespace ckpt::detail {

// Fills diff.blocks and diff.modules from diff.tensors.
void aggregateLayers(CheckpointDiff& diff);

}  // namespace ckpt::detail
