#include "ckpt/format/checkpoint_view.h"

#include "ckpt/format/state_names.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>
#include <tuple>

namespace ckpt {
namespace {

using K = Value::Kind;

bool isStateDict(const Value* v, bool allowMetadataKey) {
  if (!v || v->kind != K::Dict || v->entries.empty()) return false;
  bool anyTensor = false;
  for (const auto& [k, x] : v->entries) {
    if (allowMetadataKey && k->isStr() && k->text == "__metadata__") continue;
    if (!k->isStr() || x->kind != K::Tensor) return false;
    anyTensor = true;
  }
  return anyTensor;
}

bool isOptimizerState(const Value* v) {
  return v && v->kind == K::Dict && v->get("state") && v->get("param_groups");
}

std::optional<double> asNumber(const Value* v) {
  if (!v) return std::nullopt;
  if (v->kind == K::Int) return double(v->integer);
  if (v->kind == K::Float) return v->real;
  if (v->kind == K::Str) {  // safetensors metadata holds strings
    double d = 0;
    const char* b = v->text.data();
    const auto r = std::from_chars(b, b + v->text.size(), d);
    if (r.ec == std::errc() && r.ptr == b + v->text.size()) return d;
  }
  return std::nullopt;
}

}  // namespace

CheckpointView::CheckpointView(const CheckpointFile& file) : m_file(file) {
  findParts();
}

CheckpointView::~CheckpointView() = default;

void CheckpointView::findParts() {
  const Value* root = m_file.root();
  if (!root || root->kind != K::Dict) return;
  // A sharded checkpoint keeps its description's metadata as safetensors does.
  const bool safetensors =
      m_file.format() == FileFormat::Safetensors || m_file.format() == FileFormat::Sharded;
  if (findMegatronDist()) {
    // Model, optimizer and metadata found by Megatron's rules.
  } else if (isStateDict(root, safetensors)) {
    m_modelState = root;
  } else {
    for (const char* key : {"model_state", "model_state_dict", "state_dict", "model"}) {
      const Value* v = root->get(key);
      if (v && v->kind == K::Dict) {
        m_modelState = v;
        m_modelStateKey = key;
        break;
      }
    }
  }
  // torchtitan's CheckpointManager (_flattened_model_states_sd) saves the
  // model's keys at the top of its DCP state dict, beside optimizer,
  // lr_scheduler, dataloader and train_state: the top level's tensors are
  // the model (not every tensor, the optimizer's moments included).
  if (!m_modelState && !m_megatronDist && m_file.format() == FileFormat::Sharded &&
      std::any_of(root->entries.begin(), root->entries.end(), [](const ValuePair& e) {
        return e.first->isStr() && e.second->kind == K::Tensor;
      }))
    m_modelState = root;
  for (const char* key : {"optimizer", "optimizer_state", "optimizer_state_dict", "optim"}) {
    if (m_megatronDist) break;
    if (const Value* v = root->get(key); isOptimizerState(v)) {
      m_optimizer = v;
      break;
    }
  }
  // PyTorch Lightning saves a list, one state_dict per optimizer
  // (configure_optimizers may return several; each holds its own share of
  // the parameters).
  if (!m_optimizer && !m_megatronDist)
    if (const Value* v = root->get("optimizer_states");
        v && v->isSequence() && !v->items.empty() && isOptimizerState(v->items[0])) {
      m_optimizer = v->items[0];
      if (v->items.size() > 1)
        m_notes.push_back("optimizer_states holds " + std::to_string(v->items.size()) +
                          " optimizers: the first is shown");
    }
  // A bare optimizer state_dict (a Hugging Face Trainer's optimizer.pt): its
  // parameters cannot be named, the model is in another file.
  if (!m_optimizer && !m_modelState && !m_megatronDist && isOptimizerState(root))
    m_optimizer = root;
  if (!m_megatronDist) {
    m_metadata = root->get(safetensors ? "__metadata__" : "metadata");
    if (m_metadata && m_metadata->kind != K::Dict) m_metadata = nullptr;
  }

  for (const char* key : {"config", "model_config"}) {
    const Value* c = lookup(key);
    if (c && c->kind == K::Object && c->state && c->state->kind == K::Dict)
      c = c->state;  // a dataclass
    if (c && c->kind == K::Dict) {
      m_config = c;
      break;
    }
  }
  // DeepSpeed's model states say global_steps, nanoGPT's ckpt.pt iter_num,
  // Megatron-LM's rank files and common.pt iteration.
  for (const char* key : {"step", "global_step", "global_steps", "iter_num", "iteration"}) {
    if (const auto n = asNumber(lookup(key)); n && *n >= 0 && *n == double(int64_t(*n))) {
      m_step = int64_t(*n);
      // A torch_dist save's tensors say no step: common.pt does.
      if (m_megatronDist) m_stepSource = "common.pt";
      break;
    }
  }
  for (const char* key : {"loss", "train_loss", "val_loss"}) {
    if (const auto n = asNumber(lookup(key))) {
      m_loss = *n;
      break;
    }
  }
  for (const char* key : {"run_name", "run"}) {
    if (const Value* v = lookup(key); v && v->isStr()) {
      m_run = v->text;
      break;
    }
  }
  if (const Value* v = lookup("stage"); v && v->isStr()) m_stage = v->text;
  if (const Value* v = lookup("final"); v && v->kind == K::Bool) m_final = v->boolean;
}

const Value* CheckpointView::lookup(std::string_view key) const {
  const Value* root = m_file.root();
  if (root && root->kind == K::Dict) {
    const Value* v = root->get(key);
    // Beside a top-level model's tensors (torchtitan): what is not a tensor.
    if (v && (root != m_modelState || v->kind != K::Tensor)) return v;
  }
  return m_metadata ? m_metadata->get(key) : nullptr;
}

const std::vector<StateEntry>& CheckpointView::entries() const {
  if (!m_mapped) {
    m_mapped = true;
    mapEntries();
    mapOptimizer();
  }
  return m_entries;
}

const std::vector<OptimizerParam>& CheckpointView::optimizerParams() const {
  (void)entries();
  return m_optParams;
}

const std::vector<std::string>& CheckpointView::notes() const {
  (void)entries();
  return m_notes;
}

void CheckpointView::mapEntries() const {
  if (!m_modelState) return;
  const auto& tensors = m_file.tensors();
  std::vector<std::string_view> keys;
  for (const auto& [k, v] : m_modelState->entries)
    if (k->isStr() && v->kind == K::Tensor) keys.push_back(k->text);
  StateNames names = normaliseStateNames(keys);
  m_ddpPrefix = names.ddp;
  m_compiledPrefix = names.compiled;
  // Tied weights: the same bytes seen through the same view.
  std::map<std::tuple<int, int64_t, std::vector<int64_t>, std::vector<int64_t>, int>, int>
      firstView;
  size_t i = 0;
  for (const auto& [k, v] : m_modelState->entries) {
    if (!k->isStr() || v->kind != K::Tensor) continue;
    StateEntry e;
    e.rawKey = k->text;
    e.name = std::move(names.names[i++]);
    e.tensor = int(v->index);
    const TensorInfo& t = tensors[size_t(e.tensor)];
    if (t.storage >= 0) {
      const auto key = std::make_tuple(t.storage, t.storageOffset, t.shape, t.stride, int(t.dtype));
      auto [it, inserted] = firstView.emplace(key, int(m_entries.size()));
      if (!inserted) e.tiedTo = it->second;
    }
    m_entries.push_back(std::move(e));
  }
}

void CheckpointView::mapOptimizer() const {
  if (m_megatronDist) {
    mapMegatronOptimizer();
    return;
  }
  if (!m_optimizer) return;
  const Value* state = m_optimizer->get("state");
  const Value* groups = m_optimizer->get("param_groups");
  // The de-duplicated parameter list (MODEL.md): tied entries count once.
  std::vector<int> params;
  for (size_t i = 0; i < m_entries.size(); ++i)
    if (m_entries[i].tiedTo < 0) params.push_back(int(i));
  size_t groupParams = 0;
  if (groups && groups->kind == K::List)
    for (const Value* g : groups->items)
      if (const Value* p = g->get("params"); p && p->kind == K::List)
        groupParams += p->items.size();
  const bool mappable = m_modelState && groupParams == params.size();
  if (!m_modelState && m_optimizer == m_file.root())
    m_notes.push_back(
        "an optimizer state without its model: its parameters are numbered (torch's order of the "
        "model's parameters, which this file does not hold), not named");
  if (m_modelState && !mappable)
    m_notes.push_back("the optimizer holds " + std::to_string(groupParams) +
                      " parameters, the model state " + std::to_string(params.size()) +
                      " (tied weights counted once): names not mapped");
  if (!state || state->kind != K::Dict) return;
  // apex's FusedAdam (and Transformer Engine's) keeps the step in the param
  // group, not per parameter: a parameter without its own takes its group's.
  std::map<int64_t, const Value*> groupStep;
  if (groups && groups->kind == K::List)
    for (const Value* g : groups->items)
      if (const Value* st = g->get("step"); st && (st->isNumber() || st->kind == K::Tensor))
        if (const Value* ids = g->get("params"); ids && ids->kind == K::List)
          for (const Value* id : ids->items)
            if (id->isInt()) groupStep.emplace(id->integer, st);
  const auto& tensors = m_file.tensors();
  for (const auto& [k, v] : state->entries) {
    if (!k->isInt()) continue;
    OptimizerParam p;
    p.index = k->integer;
    if (mappable && p.index >= 0 && size_t(p.index) < params.size()) {
      p.param = params[size_t(p.index)];
      p.name = m_entries[size_t(p.param)].name;
    }
    const Value* s = v->get("step");
    if (!s)
      if (const auto g = groupStep.find(p.index); g != groupStep.end()) s = g->second;
    if (s) {
      if (s->kind == K::Tensor)
        p.stepTensor = int(s->index);
      else if (s->isNumber())
        p.step = s->number();
    }
    if (const Value* a = v->get("exp_avg"); a && a->kind == K::Tensor) p.expAvg = int(a->index);
    if (const Value* a = v->get("exp_avg_sq"); a && a->kind == K::Tensor)
      p.expAvgSq = int(a->index);
    // A Megatron save's fp32 master copy, where its ranks' optimizer state is joined.
    if (const Value* a = v->get("fp32_param"); a && a->kind == K::Tensor) p.master = int(a->index);
    if (p.param >= 0 && p.expAvg >= 0) {
      const TensorInfo& param = tensors[size_t(m_entries[size_t(p.param)].tensor)];
      const TensorInfo& avg = tensors[size_t(p.expAvg)];
      if (param.shape != avg.shape)
        p.problem = "exp_avg " + avg.shapeString() + " does not match " + p.name + " " +
                    param.shapeString();
    }
    m_optParams.push_back(std::move(p));
  }
}

std::optional<OptimizerSummary> summarizeOptimizer(const CheckpointView& view) {
  const Value* opt = view.optimizer();
  if (!opt) return std::nullopt;
  OptimizerSummary s;
  const Value* groups = opt->get("param_groups");
  const Value* state = opt->get("state");
  s.withState = state && state->isDict() ? state->entries.size() : 0;
  if (groups && groups->kind == K::List && !groups->items.empty()) {
    s.groups = groups->items.size();
    for (const char* key : {"lr", "betas", "eps", "weight_decay"})
      if (const Value* v = groups->items.front()->get(key))
        s.hyper.emplace_back(key, shortRepr(v, 30));
  }
  for (const OptimizerParam& p : view.optimizerParams())
    if (!p.name.empty() && p.problem.empty()) ++s.mapped;
  s.params = view.optimizerParams().size();
  return s;
}

uint64_t CheckpointView::parameterCount() const {
  uint64_t n = 0;
  const auto& tensors = m_file.tensors();
  for (const StateEntry& e : entries())
    if (e.tiedTo < 0) n += tensors[size_t(e.tensor)].numel();
  return n;
}

}  // namespace ckpt
