// Metadata and config side by side: every plain key of both checkpoints,
// flattened to dotted names, kept where the two differ.
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ckpt/analysis/diff.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/json_export.h"

namespace ckpt {
namespace {

using K = Value::Kind;

// Nesting kept as dotted keys ("config.moe_config.top_k"); deeper values are
// compared whole.
constexpr int kMaxDepth = 4;
// Values walked when looking for tensors / encoded for comparison: metadata
// is small, a pickle that is not must not make the diff slow.
constexpr size_t kMaxNodes = 100000;

bool holdsTensor(const Value* v, std::unordered_set<uint32_t>& seen, size_t& budget) {
  if (!v || budget == 0) return false;
  --budget;
  if (v->kind == K::Tensor || v->kind == K::Storage) return true;
  if (!seen.insert(v->id).second) return false;
  for (const Value* x : v->items)
    if (holdsTensor(x, seen, budget)) return true;
  for (const Value* x : v->listItems)
    if (holdsTensor(x, seen, budget)) return true;
  for (const auto& [k, x] : v->entries)
    if (holdsTensor(k, seen, budget) || holdsTensor(x, seen, budget)) return true;
  return holdsTensor(v->state, seen, budget);
}

bool holdsTensor(const Value* v) {
  std::unordered_set<uint32_t> seen;
  size_t budget = kMaxNodes;
  return holdsTensor(v, seen, budget);
}

std::string keyText(const Value* k) {
  return k->isStr() ? k->str() : shortRepr(k, 60);
}

class Flattener {
 public:
  std::vector<std::pair<std::string, const Value*>> items;

  void add(const std::string& key, const Value* v, int depth) {
    if (m_keys.count(key)) return;  // the top level wins over `metadata`
    const Value* dict = v;
    if (v->kind == K::Object && v->state && v->state->kind == K::Dict)
      dict = v->state;  // a dataclass
    if (dict->kind == K::Dict && !dict->entries.empty() && depth < kMaxDepth) {
      for (const auto& [k, x] : dict->entries) add(key + "." + keyText(k), x, depth + 1);
      return;
    }
    if (holdsTensor(v)) return;  // model states, optimizer states, RNG tensors: not metadata
    m_keys.insert(key);
    items.emplace_back(key, v);
  }

 private:
  std::unordered_set<std::string> m_keys;
};

std::vector<std::pair<std::string, const Value*>> flatten(const CheckpointFile& file) {
  const CheckpointView view(file);
  Flattener f;
  const Value* root = file.root();
  if (root && root->isDict() && root != view.modelState()) {
    for (const auto& [k, v] : root->entries) {
      if (v == view.modelState() || v == view.optimizer() || v == view.metadata()) continue;
      f.add(keyText(k), v, 1);
    }
  }
  if (const Value* meta = view.metadata())
    for (const auto& [k, v] : meta->entries) f.add(keyText(k), v, 1);
  return std::move(f.items);
}

}  // namespace

std::vector<MetadataChange> diffMetadata(const CheckpointFile& a, const CheckpointFile& b,
                                         bool everyKey) {
  const auto fa = flatten(a);
  const auto fb = flatten(b);
  std::unordered_map<std::string, const Value*> inB;
  for (const auto& [k, v] : fb) inB.emplace(k, v);
  std::unordered_set<std::string> inA;
  std::vector<MetadataChange> out;
  auto side = [](const Value* v, std::string& text, nlohmann::ordered_json& json) {
    text = shortRepr(v, 200);
    json = valueToJson(v, kMaxNodes);
  };
  for (const auto& [key, va] : fa) {
    inA.insert(key);
    MetadataChange c;
    c.key = key;
    c.inA = true;
    side(va, c.aText, c.aJson);
    if (auto it = inB.find(key); it != inB.end()) {
      c.inB = true;
      side(it->second, c.bText, c.bJson);
      c.same = c.aJson == c.bJson && va->kind == it->second->kind;
      if (c.same && !everyKey) continue;
    }
    out.push_back(std::move(c));
  }
  for (const auto& [key, vb] : fb) {
    if (inA.count(key)) continue;
    MetadataChange c;
    c.key = key;
    c.inB = true;
    side(vb, c.bText, c.bJson);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ckpt
