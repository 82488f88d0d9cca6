#include "megatron_optimizer.h"

namespace ckpt::megatron {

using K = Value::Kind;

RankOptimizer rankOptimizer(const CheckpointFile& f,
                            const std::vector<std::pair<std::string, int>>& model) {
  RankOptimizer r;
  const Value* opt = f.root() ? f.root()->get("optimizer") : nullptr;
  if (!opt || !opt->isDict()) return r;
  const Value* inner = opt;
  if (const Value* o = opt->get("optimizer"); o && o->isDict() && o->get("param_groups")) inner = o;
  const Value* state = inner->get("state");
  const Value* groups = inner->get("param_groups");
  if (!state || !state->isDict() || state->entries.empty()) return r;
  if (!groups || groups->kind != K::List || groups->items.empty()) {
    r.problem = "its optimizer state has no param_groups";
    return r;
  }
  r.groups = groups;
  const auto& tensors = f.tensors();
  const auto noDecay = [&](const std::pair<std::string, int>& p) {
    return p.first.ends_with(".bias") || tensors[size_t(p.second)].shape.size() == 1;
  };
  // Per group: -1 every parameter (one group), 0 those without weight decay, 1 the others.
  std::vector<int> decay(groups->items.size(), -1);
  if (groups->items.size() > 1) {
    for (size_t g = 0; g < groups->items.size(); ++g) {
      const Value* grp = groups->items[g];
      if (const Value* e = grp->get("is_expert_parallel"); e && e->kind == K::Bool && e->boolean) {
        r.problem = "param group " + std::to_string(g) + " is expert-parallel";
        return r;
      }
      const Value* m = grp->get("wd_mult");
      if (!m || !m->isNumber()) m = grp->get("weight_decay");
      if (!m || !m->isNumber()) {
        r.problem = "param group " + std::to_string(g) + " says neither wd_mult nor weight_decay";
        return r;
      }
      decay[g] = m->number() == 0 ? 0 : 1;
      for (size_t h = 0; h < g; ++h)
        if (decay[h] == decay[g]) {
          r.problem = "param groups " + std::to_string(h) + " and " + std::to_string(g) +
                      " have the same weight decay (an lr_mult?): which parameter is in which "
                      "cannot be told";
          return r;
        }
    }
  }
  std::map<int64_t, size_t> byIndex;  // state index -> position in `model`
  std::vector<std::vector<size_t>> members(groups->items.size());
  for (size_t g = 0; g < groups->items.size(); ++g) {
    const Value* ids = groups->items[g]->get("params");
    for (size_t i = 0; i < model.size(); ++i)
      if (decay[g] < 0 || noDecay(model[i]) == (decay[g] == 0)) members[g].push_back(i);
    if (!ids || ids->kind != K::List || ids->items.size() != members[g].size()) {
      r.problem = "param group " + std::to_string(g) + " lists " +
                  std::to_string(ids && ids->kind == K::List ? ids->items.size() : 0) +
                  " parameters, the rank's model has " + std::to_string(members[g].size()) +
                  (decay[g] < 0 ? ""
                   : decay[g]   ? " with weight decay"
                                : " without weight decay");
      return r;
    }
    for (size_t j = 0; j < members[g].size(); ++j) {
      if (!ids->items[j]->isInt()) {
        r.problem = "param group " + std::to_string(g) + " holds a parameter id that is no int";
        return r;
      }
      byIndex[ids->items[j]->integer] = members[g][j];
      r.group[model[members[g][j]].first] = g;
    }
  }
  for (const auto& [k, v] : state->entries) {
    if (!k->isInt() || !v->isDict()) continue;
    const auto it = byIndex.find(k->integer);
    if (it == byIndex.end()) continue;
    const std::string& name = model[it->second].first;
    auto& m = r.moments.try_emplace(name, std::array<int, 3>{-1, -1, -1}).first->second;
    for (size_t i = 0; i < 2; ++i)
      if (const Value* t = v->get(kMoments[i]); t && t->kind == K::Tensor) m[i] = int(t->index);
    if (const Value* st = v->get("step"); st && st->isNumber()) r.steps[name] = st;
  }
  if (const Value* masters = inner != opt ? opt->get("fp32_from_fp16_params") : nullptr;
      masters && masters->isSequence() && masters->items.size() == members.size())
    for (size_t g = 0; g < members.size(); ++g) {
      const Value* list = masters->items[g];
      if (!list->isSequence() || list->items.size() != members[g].size()) continue;
      for (size_t j = 0; j < members[g].size(); ++j)
        if (list->items[j]->kind == K::Tensor)
          r.moments.try_emplace(model[members[g][j]].first, std::array<int, 3>{-1, -1, -1})
              .first->second[2] = int(list->items[j]->index);
    }
  return r;
}

}  // namespace ckpt::megatron
