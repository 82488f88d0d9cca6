#pragma once

#include <cstdint>
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
  std::string problem;         // e.g. shape mismatch with the parameter it maps to
};

// What a modern_llm-style checkpoint holds, found wherever it is: a dict with
// model_state / optimizer / metadata (keys repeated at the top level), a bare
// state dict, or a safetensors file.
class CheckpointView {
 public:
  explicit CheckpointView(const CheckpointFile& file);

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
};

}  // namespace ckpt
