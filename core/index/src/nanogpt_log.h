#pragma once

#include <string_view>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt::detail {

// nanoGPT's console lines (karpathy/nanoGPT train.py's print calls):
//   iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%
//   step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}
// give `loss` and `mfu` (percent) at iter_num, and `train_loss` / `val_loss`
// at the evaluation's step. nanoGPT prints mfu -100.00% until its estimate
// has settled (running_mfu starts at -1): no point then. Fields forks add
// (", tokens 1,024") are ignored. Returns whether the line has one of these
// shapes (then no other reader needs to look at it).
bool parseNanoGptLine(std::string_view line, std::vector<LoggedPoint>& out);

}  // namespace ckpt::detail
