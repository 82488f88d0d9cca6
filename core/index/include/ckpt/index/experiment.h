#pragma once
// How the runs of an experiment relate: the stage a run's name carries
// ("shakespeare-sft" is the sft stage of the family "shakespeare"), the branch
// a mid-run resume starts ("shakespeare-sft@200"), which runs form a family,
// the order of stages, and a run's checkpoint chain. The one home of these
// rules: the trainer (naming a fine-tuned run), ckptscope-cli ls and the
// desktop app's browser, Compare and Drift all call these. No Qt, no LibTorch.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/scanner.h"

namespace ckpt {

// "<family>[-_]<stage>[@<step>[-<n>]]". The stage is one of the training
// stages people name their runs after (pretrain, sft, dpo, rlhf, verifier,
// ...: isStageWord), matched case-insensitively and reported in lower case;
// the branch suffix is the one a mid-run resume gives its new run
// (run_plan.h). A name without a stage keeps its whole (branch-less) self
// as its family: "baseline" -> {"baseline", "", ""}, "tiny_pretrain@200-2"
// -> {"tiny", "pretrain", "@200-2"}. A '/' in a nested run name stays in the
// family ("exp/gpt-dpo" -> {"exp/gpt", "dpo"}).
struct StageName {
  std::string family;
  std::string stage;   // lower case; "" when the name has no stage suffix
  std::string branch;  // "@200" or "@200-2" for a branch run; "" otherwise
};
[[nodiscard]] StageName splitStageName(std::string_view runName);

// Is `word` (any case) a training stage's name? The stages are open-ended:
// pretraining variants, supervised and preference tuning, RL, reward and
// verifier models, distillation.
[[nodiscard]] bool isStageWord(std::string_view word);

// Training order of stages: "" (a plain run) first, then pretrain, midtrain,
// sft, the preference methods, RL, reward/verifier models, distillation;
// a stage word without a place in that order sorts after them (ties by name).
[[nodiscard]] int stageRank(std::string_view stage);

// The name of `stage` fine-tuned from `parentRun`: the parent's family with
// the new stage ("tiny_pretrain" or "tiny-pretrain@200" + "sft" ->
// "tiny-sft"); a parent without a stage suffix keeps its whole name
// ("shakespeare" + "sft" -> "shakespeare-sft").
[[nodiscard]] std::string stageRunName(std::string_view parentRun, std::string_view stage);

// Which runs form stage families. For each name, the family it belongs to,
// or "" when it stands alone: a family is two runs or more sharing a family
// name, at least one of them with a stage or a branch suffix (so "gpt" and
// "gpt-sft" are a family; "a-b" and "a-c" are not, unless b or c is a stage).
[[nodiscard]] std::vector<std::string> familiesOf(const std::vector<std::string>& runNames);

// Orders two runs of one family: by stage (stageRank), the plain run before
// its branches, branches by step.
[[nodiscard]] bool stageBefore(const StageName& a, const StageName& b);

// A run's readable checkpoints in their order (the scanner's), without a
// best_/latest_ copy of a step already in the run: the chain that "compare
// with previous", Drift and a run's curve markers walk through.
[[nodiscard]] std::vector<const CheckpointEntry*> checkpointChain(
    const std::vector<CheckpointEntry>& checkpoints);

}  // namespace ckpt
