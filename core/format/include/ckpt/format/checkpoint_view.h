#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/format/checkpoint_file.h"

namespace ckpt {

// One entry of a model state dict.
struct StateEntry {
  std::string name;  // key without wrapper prefixes (normaliseStateNames: "module.", "_orig_mod.")
  std::string rawKey;  // key as stored
  int tensor = -1;     // index into CheckpointFile::tensors()
  int tiedTo = -1;     // index into StateView::entries of the first entry viewing the same bytes
};

// One parameter of the optimizer, mapped to its name by MODEL.md's rule: the
// state indices 0..N-1 follow the model's de-duplicated parameter order.
struct OptimizerParam {
  int64_t index = 0;
  std::string name;            // "" when it could not be mapped
  std::optional<double> step;  // when stored as a number
  int stepTensor = -1;         // when stored as a 0-dim tensor (torch >= 1.12)
  int param = -1;              // index into CheckpointView::entries()
  int expAvg = -1;             // tensor index
  int expAvgSq = -1;           // tensor index
  int master = -1;             // tensor index: Megatron's fp32 master copy (fp32_param)
  std::string problem;         // e.g. shape mismatch with the parameter it maps to
};

// What a modern_llm-style checkpoint holds, found wherever it is: a dict with
// model_state / optimizer / metadata (keys repeated at the top level), a bare
// state dict, or a safetensors file. A Megatron-LM torch_dist save (a DCP
// folder whose tensors are keyed by ShardedTensor key, beside common.pt) is
// read by Megatron's rules (checkpoint_view_megatron.cpp): the model is
// every tensor but the optimizer's, the moments `optimizer.state.<moment>.
// <parameter key>` map to their parameter by name, and common.pt (args,
// iteration, the optimizer's param_groups) is the metadata.
class CheckpointView {
 public:
  explicit CheckpointView(const CheckpointFile& file);
  ~CheckpointView();
  CheckpointView(const CheckpointView&) = delete;
  CheckpointView& operator=(const CheckpointView&) = delete;

  [[nodiscard]] const CheckpointFile& file() const { return m_file; }
  [[nodiscard]] const Value* modelState() const { return m_modelState; }
  [[nodiscard]] const std::string& modelStateKey() const { return m_modelStateKey; }
  // Computed on first use: listing a directory needs none of this.
  [[nodiscard]] const std::vector<StateEntry>& entries() const;
  // Whether the keys carried wrapper prefixes (stripped from the names):
  // "_orig_mod." (torch.compile) and "module." (DistributedDataParallel /
  // DataParallel). Computed with entries().
  [[nodiscard]] bool compiledPrefix() const {
    (void)entries();
    return m_compiledPrefix;
  }
  [[nodiscard]] bool ddpPrefix() const {
    (void)entries();
    return m_ddpPrefix;
  }
  [[nodiscard]] const Value* optimizer() const { return m_optimizer; }
  [[nodiscard]] const Value* metadata() const { return m_metadata; }
  [[nodiscard]] const Value* config() const { return m_config; }
  [[nodiscard]] const std::vector<OptimizerParam>& optimizerParams() const;
  // Things a user should know: an optimizer that does not match the model, ...
  [[nodiscard]] const std::vector<std::string>& notes() const;

  [[nodiscard]] std::optional<int64_t> step() const { return m_step; }
  // The file the step was read from when it is not the checkpoint itself
  // ("common.pt" for a Megatron torch_dist save); "" otherwise.
  [[nodiscard]] const std::string& stepSource() const { return m_stepSource; }
  // A Megatron torch_dist save's common.pt, opened for its values (no
  // tensors); null for anything else or when it cannot be read (a note says why).
  [[nodiscard]] const CheckpointFile* megatronCommon() const { return m_common.get(); }
  [[nodiscard]] std::optional<double> loss() const { return m_loss; }
  [[nodiscard]] std::optional<std::string> run() const { return m_run; }
  [[nodiscard]] std::optional<std::string> stage() const { return m_stage; }
  [[nodiscard]] bool isFinal() const { return m_final; }
  // Parameter count of the model state with tied tensors counted once.
  [[nodiscard]] uint64_t parameterCount() const;

  // A metadata value by key: the top level first, then `metadata`.
  [[nodiscard]] const Value* lookup(std::string_view key) const;

 private:
  void findParts();
  void mapEntries() const;
  void mapOptimizer() const;
  // checkpoint_view_megatron.cpp
  bool findMegatronDist();
  void mapMegatronOptimizer() const;

  const CheckpointFile& m_file;
  const Value* m_modelState = nullptr;
  std::string m_modelStateKey;
  const Value* m_optimizer = nullptr;
  const Value* m_metadata = nullptr;
  const Value* m_config = nullptr;
  mutable bool m_mapped = false;
  mutable std::vector<StateEntry> m_entries;
  mutable bool m_compiledPrefix = false;
  mutable bool m_ddpPrefix = false;
  mutable std::vector<OptimizerParam> m_optParams;
  mutable std::vector<std::string> m_notes;
  std::optional<int64_t> m_step;
  std::optional<double> m_loss;
  std::optional<std::string> m_run;
  std::optional<std::string> m_stage;
  bool m_final = false;
  std::string m_stepSource;
  // A Megatron torch_dist save: values made here (the model state and the
  // optimizer state as dicts over the file's tensor nodes), common.pt, and
  // each synthetic optimizer state entry's parameter key (in its order).
  bool m_megatronDist = false;
  std::unique_ptr<ValueArena> m_own;
  std::unique_ptr<CheckpointFile> m_common;
  std::vector<std::string> m_megatronStateKeys;
};

// What the Summary and `info` say of an optimizer state, from one place:
// how many parameters have state, its groups and the first group's
// hyperparameters, and how many of its parameters map to a model parameter
// (with no problem such as a moment whose shape differs from it).
struct OptimizerSummary {
  size_t withState = 0;  // entries of `state`
  size_t groups = 0;     // entries of `param_groups`
  // The first group's lr, betas, eps and weight_decay, as shortRepr writes them.
  std::vector<std::pair<std::string, std::string>> hyper;
  size_t mapped = 0;  // optimizerParams() mapped to a parameter, without a problem
  size_t params = 0;  // optimizerParams().size()
};
// Null when the view has no optimizer.
[[nodiscard]] std::optional<OptimizerSummary> summarizeOptimizer(const CheckpointView& view);

}  // namespace ckpt
