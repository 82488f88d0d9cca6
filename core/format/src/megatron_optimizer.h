#pragma once
// What a Megatron-LM rank file's (model_optim_rng.pt) optimizer state holds
// per parameter of the rank's model (sharded_megatron.cpp joins it across
// the tensor-parallel ranks). ckpt_format's sources only.
#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ckpt/format/checkpoint_file.h"

namespace ckpt::megatron {

// What a rank file's optimizer state holds per parameter of its model, by
// Megatron's numbering (megatron/core/optimizer get_param_groups: groups of
// the model's parameters in named_parameters order, by (wd_mult, lr_mult,
// is_expert_parallel), a parameter without weight decay being a bias or
// 1-dimensional; torch's state_dict numbers them group after group). The
// non-distributed optimizers keep it in model_optim_rng.pt: FP32Optimizer
// {state, param_groups}, Float16OptimizerWithFloat16Params {optimizer:
// {state, param_groups}, fp32_from_fp16_params: [[master per group param]]}.
struct RankOptimizer {
  const Value* groups = nullptr;
  // Local parameter name -> {exp_avg, exp_avg_sq, fp32 master} tensor indices (-1: none).
  std::map<std::string, std::array<int, 3>, std::less<>> moments;
  std::map<std::string, size_t, std::less<>> group;        // local name -> its group
  std::map<std::string, const Value*, std::less<>> steps;  // a step kept per parameter
  std::string problem;  // why its state cannot be named ("" when it can)
};

inline constexpr std::array<std::string_view, 3> kMoments = {"exp_avg", "exp_avg_sq", "fp32_param"};

// `model`: the rank's model tensors (dotted name, tensor index), in file
// order. A file without per-parameter state (the distributed optimizer
// keeps it in distrib_optim.pt) gives no moments and no problem.
[[nodiscard]] RankOptimizer rankOptimizer(const CheckpointFile& f,
                                          const std::vector<std::pair<std::string, int>>& model);

}  // namespace ckpt::megatron
