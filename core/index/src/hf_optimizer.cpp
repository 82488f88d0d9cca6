#include "ckpt/index/hf_optimizer.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

namespace ckpt {

namespace {

using K = Value::Kind;

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// transformers' forbidden name patterns (Trainer.get_decay_parameter_names):
// bias, layernorm, rmsnorm, (?:^|\.)norm(?:$|\.), _norm(?:$|\.), searched in
// the lower-cased name.
bool forbiddenName(std::string_view name, bool onlyBias) {
  const std::string n = lowered(name);
  if (n.find("bias") != std::string::npos) return true;
  if (onlyBias) return false;
  if (n.find("layernorm") != std::string::npos || n.find("rmsnorm") != std::string::npos)
    return true;
  size_t start = 0;
  while (start <= n.size()) {
    const size_t end = std::min(n.find('.', start), n.size());
    const std::string_view part(n.data() + start, end - start);
    if (part == "norm" || (part.size() >= 5 && part.substr(part.size() - 5) == "_norm"))
      return true;
    start = end + 1;
  }
  return false;
}

struct Param {
  std::string name;
  std::vector<int64_t> shape;
};

// One way the Trainer may have split the parameters: which take no decay.
struct Rule {
  bool onlyBias;      // transformers before the name patterns
  bool oneDimWeight;  // a 1-D `.weight` counted as a LayerNorm module's
};

bool noDecay(const Param& p, const Rule& r) {
  if (forbiddenName(p.name, r.onlyBias)) return true;
  return r.oneDimWeight && p.shape.size() == 1 && p.name.size() > 7 &&
         p.name.compare(p.name.size() - 7, 7, ".weight") == 0;
}

// The parameters' indices per group, as the file lists them.
std::optional<std::vector<std::vector<int64_t>>> groupIndices(const Value* groups) {
  if (!groups || groups->kind != K::List) return std::nullopt;
  std::vector<std::vector<int64_t>> out;
  for (const Value* g : groups->items) {
    const Value* ids = g ? g->get("params") : nullptr;
    if (!ids || ids->kind != K::List) return std::nullopt;
    std::vector<int64_t>& v = out.emplace_back();
    for (const Value* id : ids->items) {
      if (!id->isInt()) return std::nullopt;
      v.push_back(id->integer);
    }
  }
  return out;
}

}  // namespace

TrainerOptimizerNames trainerOptimizerNames(const CheckpointView& weights,
                                            const CheckpointView& optimizer) {
  TrainerOptimizerNames out;
  const FileFormat format = weights.file().format();
  if (format != FileFormat::TorchZip && format != FileFormat::TorchLegacy) {
    out.note =
        "the weights' file keeps no parameter order (its names are sorted), so the optimizer's "
        "parameters stay numbered";
    return out;
  }
  if (!weights.modelState() || !optimizer.optimizer()) {
    out.note = "no state dict beside the optimizer: its parameters stay numbered";
    return out;
  }
  // The model's parameters in named_parameters() order: the state dict's,
  // tied weights once.
  std::vector<Param> params;
  const auto& wt = weights.file().tensors();
  for (const StateEntry& e : weights.entries())
    if (e.tiedTo < 0) params.push_back({e.name, wt[size_t(e.tensor)].shape});
  const auto groups = groupIndices(optimizer.optimizer()->get("param_groups"));
  if (!groups || groups->empty() || groups->size() > 2) {
    out.note = groups ? std::to_string(groups->size()) +
                            " param groups, not the Trainer's one or two: the optimizer's "
                            "parameters stay numbered"
                      : "the optimizer's param_groups cannot be read: its parameters stay numbered";
    return out;
  }
  size_t groupTotal = 0;
  for (const auto& g : *groups) groupTotal += g.size();

  // The moments' shapes by state index, to check a naming against.
  const auto& ot = optimizer.file().tensors();
  auto fits = [&](const std::vector<std::string>& names, const std::vector<const Param*>& byIndex) {
    for (const OptimizerParam& p : optimizer.optimizerParams()) {
      if (p.index < 0 || size_t(p.index) >= names.size() || names[size_t(p.index)].empty())
        return false;
      for (const int t : {p.expAvg, p.expAvgSq})
        if (t >= 0 && ot[size_t(t)].shape != byIndex[size_t(p.index)]->shape) return false;
    }
    return true;
  };
  // A naming from each split into groups; those that fit must agree.
  std::vector<std::vector<std::vector<const Param*>>> splits;
  if (groups->size() == 1) {
    splits.emplace_back(1);
    for (const Param& p : params) splits.back()[0].push_back(&p);
  } else {
    for (const Rule r :
         {Rule{false, true}, Rule{false, false}, Rule{true, true}, Rule{true, false}}) {
      auto& s = splits.emplace_back(2);
      for (const Param& p : params) s[noDecay(p, r) ? 1 : 0].push_back(&p);
    }
  }
  std::optional<std::vector<std::string>> chosen;
  bool disagree = false;
  for (const auto& split : splits) {
    bool sizes = true;
    for (size_t g = 0; g < groups->size(); ++g)
      sizes = sizes && split[g].size() == (*groups)[g].size();
    if (!sizes) continue;
    std::vector<std::string> names(groupTotal);
    std::vector<const Param*> byIndex(groupTotal, nullptr);
    bool ok = true;
    for (size_t g = 0; g < groups->size() && ok; ++g)
      for (size_t k = 0; k < split[g].size(); ++k) {
        const int64_t i = (*groups)[g][k];
        if (i < 0 || size_t(i) >= groupTotal || byIndex[size_t(i)]) {
          ok = false;
          break;
        }
        names[size_t(i)] = split[g][k]->name;
        byIndex[size_t(i)] = split[g][k];
      }
    if (!ok || !fits(names, byIndex)) continue;
    if (chosen && *chosen != names) disagree = true;
    if (!chosen) chosen = std::move(names);
  }
  if (disagree) {
    out.note =
        "the Trainer's weight-decay groups can be read more than one way here: the optimizer's "
        "parameters stay numbered";
    return out;
  }
  if (!chosen) {
    out.note = "the optimizer's " + std::to_string(groups->size()) + " group" +
               (groups->size() == 1 ? "" : "s") + " of " + std::to_string(groupTotal) +
               " parameters do not match the " + std::to_string(params.size()) +
               " parameters of the weights (by the Trainer's weight-decay groups and each "
               "moment's shape): its parameters stay numbered";
    return out;
  }
  out.names = std::move(*chosen);
  out.note = groups->size() == 1
                 ? "parameters named in the weights' order (one param group)"
                 : "parameters named by the Trainer's two param groups (weight decay, then none) "
                   "in the weights' order";
  return out;
}

}  // namespace ckpt
