// A Megatron-LM save in the torch_dist format (megatron/core/
// dist_checkpointing), seen as a checkpoint of a model and its optimizer.
// The DCP folder holds every ShardedTensor by its key, flat: the model's
// ("decoder.layers.mlp.linear_fc1.weight", layers stacked on a leading axis)
// and the optimizer's, which optim_state_to_sharding_state and the
// distributed optimizer name `optimizer.state.<state key>.<model key>`
// (exp_avg, exp_avg_sq, fp32_param); ShardedObjects (rng_state, a layer's
// _extra_state) are bytes items. What is not sharded (args, iteration, the
// optimizer's param_groups, the scheduler) is rank 0's torch.save in
// common.pt beside them.
#include <filesystem>
#include <map>
#include <string_view>

#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/megatron_names.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using K = Value::Kind;

constexpr std::string_view kOptimizerPrefix = "optimizer.";
constexpr std::string_view kStatePrefix = "optimizer.state.";

// param_groups wherever Megatron's optimizers put them in common.pt:
// FP32Optimizer {"param_groups"}, the mixed-precision and distributed
// optimizers {"optimizer": {"param_groups"}}.
const Value* paramGroupsIn(const Value* optimizer) {
  for (int depth = 0; depth < 2 && optimizer && optimizer->isDict(); ++depth) {
    if (const Value* g = optimizer->get("param_groups"); g && g->isSequence()) return g;
    optimizer = optimizer->get("optimizer");
  }
  return nullptr;
}

}  // namespace

bool CheckpointView::findMegatronDist() {
  const ShardSet* shards = m_file.shards();
  if (!shards || shards->layout() != ShardLayout::Dcp) return false;
  const std::string common = (fs::path(shards->folder()) / "common.pt").string();
  std::error_code ec;
  if (!isMegatronCommonFile(common) || !fs::is_regular_file(common, ec)) return false;
  m_megatronDist = true;
  m_own = std::make_unique<ValueArena>();
  try {
    ReadOptions options;
    options.metadataOnly = true;  // its values; a tensor in it is not the model's
    m_common = CheckpointFile::open(common, options);
    if (m_common->root() && m_common->root()->isDict()) m_metadata = m_common->root();
  } catch (const std::exception& e) {
    m_notes.push_back(std::string("common.pt (args, iteration) cannot be read: ") + e.what());
  }

  // The model: every tensor that is not the optimizer's.
  Value* model = m_own->make(K::Dict);
  // Optimizer moments by parameter key, in file order of first appearance.
  std::map<std::string, size_t, std::less<>> slot;
  std::vector<Value*> perParam;
  size_t otherOptimizer = 0;
  for (const auto& [k, v] : m_file.root()->entries) {
    if (!k->isStr() || v->kind != K::Tensor) continue;
    const std::string_view key = k->text;
    if (!key.starts_with(kOptimizerPrefix)) {
      m_own->append(model->entries, ValuePair{k, v});
      continue;
    }
    const std::string_view rest =
        key.starts_with(kStatePrefix) ? key.substr(kStatePrefix.size()) : std::string_view{};
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == rest.size()) {
      ++otherOptimizer;  // the dp_zero_gather_scatter buffers, ...
      continue;
    }
    const std::string_view moment = rest.substr(0, dot), param = rest.substr(dot + 1);
    auto [it, inserted] = slot.emplace(std::string(param), perParam.size());
    if (inserted) {
      perParam.push_back(m_own->make(K::Dict));
      m_megatronStateKeys.emplace_back(param);
    }
    Value* name = m_own->make(K::Str);
    name->text = m_own->copy(moment);
    m_own->append(perParam[it->second]->entries, ValuePair{name, v});
  }
  if (!model->entries.empty()) m_modelState = model;
  if (otherOptimizer)
    m_notes.push_back(std::to_string(otherOptimizer) +
                      " optimizer tensors are not optimizer.state.<state>.<parameter> (a "
                      "distributed optimizer's flat buffers): not mapped to parameters");
  if (perParam.empty() && !paramGroupsIn(m_metadata ? m_metadata->get("optimizer") : nullptr))
    return true;

  // The optimizer as the rest of the app reads one: {"state": {i: {moment:
  // tensor}}, "param_groups": common.pt's}.
  Value* optimizer = m_own->make(K::Dict);
  Value* state = m_own->make(K::Dict);
  for (size_t i = 0; i < perParam.size(); ++i) {
    Value* index = m_own->make(K::Int);
    index->integer = int64_t(i);
    m_own->append(state->entries, ValuePair{index, perParam[i]});
  }
  auto str = [this](std::string_view s) {
    Value* v = m_own->make(K::Str);
    v->text = m_own->copy(s);
    return v;
  };
  m_own->append(optimizer->entries, ValuePair{str("state"), state});
  const Value* groups = paramGroupsIn(m_metadata ? m_metadata->get("optimizer") : nullptr);
  m_own->append(optimizer->entries,
                ValuePair{str("param_groups"), groups ? groups : m_own->make(K::List)});
  m_optimizer = optimizer;
  return true;
}

// Each state entry belongs to the parameter its key names (no positional
// rule: Megatron orders its optimizer's parameters by its own groups).
void CheckpointView::mapMegatronOptimizer() const {
  if (!m_optimizer) return;
  const Value* state = m_optimizer->get("state");
  if (!state) return;
  std::map<std::string_view, int> byKey;
  for (size_t i = 0; i < m_entries.size(); ++i) byKey.emplace(m_entries[i].rawKey, int(i));
  const auto& tensors = m_file.tensors();
  for (size_t i = 0; i < state->entries.size(); ++i) {
    const Value* moments = state->entries[i].second;
    OptimizerParam p;
    p.index = int64_t(i);
    const std::string& key = m_megatronStateKeys[i];
    if (auto it = byKey.find(key); it != byKey.end()) {
      p.param = it->second;
      p.name = m_entries[size_t(p.param)].name;
    } else {
      p.problem = "optimizer.state.*." + key + " names no tensor of the model";
    }
    if (const Value* a = moments->get("exp_avg")) p.expAvg = int(a->index);
    if (const Value* a = moments->get("exp_avg_sq")) p.expAvgSq = int(a->index);
    if (const Value* a = moments->get("fp32_param")) p.master = int(a->index);
    if (p.param >= 0) {
      const TensorInfo& param = tensors[size_t(m_entries[size_t(p.param)].tensor)];
      for (const auto& [name, t] : moments->entries) {
        const TensorInfo& m = tensors[size_t(t->index)];
        if (m.shape != param.shape && p.problem.empty())
          p.problem = std::string(name->text) + " " + m.shapeString() + " does not match " +
                      p.name + " " + param.shapeString();
      }
    }
    m_optParams.push_back(std::move(p));
  }
}

}  // namespace ckpt
