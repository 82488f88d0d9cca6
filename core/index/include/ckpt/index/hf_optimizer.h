#pragma once
// A Hugging Face Trainer checkpoint's optimizer.pt names no parameter: torch's
// optimizer state numbers them by their place in the param groups, and the
// Trainer builds two groups (Trainer.create_optimizer): the parameters with
// weight decay, then those without (biases and norm weights), each in
// model.named_parameters() order. With the weights' file in that order
// (pytorch_model.bin: a torch.save of the state dict), the numbers can be
// named again; a safetensors file or a shard index keeps no order (their
// keys are sorted), so their optimizer's parameters stay numbered.
// No Qt, no LibTorch.

#include <string>
#include <vector>

#include "ckpt/format/checkpoint_view.h"

namespace ckpt {

struct TrainerOptimizerNames {
  // By optimizer state index (param group order, numbered across groups);
  // empty when the parameters could not be named.
  std::vector<std::string> names;
  // How they were named, or why not: one sentence for the Summary and `info`.
  std::string note;
};

// Names `optimizer`'s parameters from `weights`' state dict: one group in
// the weights' order, or the Trainer's two groups, by the no-decay rules
// transformers has used (its forbidden name patterns `bias`, `layernorm`,
// `rmsnorm`, `norm` as a name part; older versions: `bias` only; either with
// the 1-D weights of a LayerNorm module). A rule is taken only where the
// group sizes are the ones the file holds and every moment (exp_avg,
// exp_avg_sq) has its parameter's shape; where rules that fit disagree on a
// name, none is taken.
[[nodiscard]] TrainerOptimizerNames trainerOptimizerNames(const CheckpointView& weights,
                                                          const CheckpointView& optimizer);

}  // namespace ckpt
