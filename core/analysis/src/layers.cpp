// Names -> (block, module) and the per-layer sums the compare view charts.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "ckpt/analysis/diff.h"
#include "diff_internal.h"

namespace ckpt {
namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The number after a "blocks." / "layers." / "h." component, and where the
// rest of the name starts; -1 when there is none.
int blockIndex(std::string_view name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) break;
    const std::string_view part = name.substr(start, dot - start);
    if (part == "blocks" || part == "layers" || part == "h" || part == "layer") {
      const size_t numStart = dot + 1;
      size_t numEnd = name.find('.', numStart);
      if (numEnd == std::string_view::npos) numEnd = name.size();
      int value = -1;
      const char* b = name.data() + numStart;
      const char* e = name.data() + numEnd;
      const auto r = std::from_chars(b, e, value);
      if (numEnd > numStart && r.ec == std::errc() && r.ptr == e && value >= 0) return value;
    }
    start = dot + 1;
  }
  return -1;
}

}  // namespace

std::string_view layerModuleName(LayerModule m) {
  switch (m) {
    case LayerModule::Embedding:
      return "embedding";
    case LayerModule::Q:
      return "q";
    case LayerModule::K:
      return "k";
    case LayerModule::V:
      return "v";
    case LayerModule::Out:
      return "out";
    case LayerModule::FfnGate:
      return "ffn_gate";
    case LayerModule::FfnProj:
      return "ffn_proj";
    case LayerModule::AttnNorm:
      return "attn_norm";
    case LayerModule::FfnNorm:
      return "ffn_norm";
    case LayerModule::FinalNorm:
      return "final_norm";
    case LayerModule::Head:
      return "head";
    case LayerModule::Sinks:
      return "sinks";
    case LayerModule::Other:
      return "other";
  }
  return "other";
}

LayerKey classifyTensorName(std::string_view name) {
  LayerKey key;
  key.block = blockIndex(name);
  using M = LayerModule;
  // MODEL.md's names first; the common Hugging Face spellings of the same
  // parts map alike so that other decoders still get a useful heat map.
  if (contains(name, "sink"))
    key.module = M::Sinks;
  else if (contains(name, "q_proj"))
    key.module = M::Q;
  else if (contains(name, "k_proj"))
    key.module = M::K;
  else if (contains(name, "v_proj"))
    key.module = M::V;
  else if (contains(name, "out_proj") || contains(name, "o_proj"))
    key.module = M::Out;
  else if (contains(name, "attn_norm") || contains(name, "input_layernorm"))
    key.module = M::AttnNorm;
  else if (contains(name, "ffn_norm") || contains(name, "post_attention_layernorm"))
    key.module = M::FfnNorm;
  else if (contains(name, "final_norm") || name.starts_with("norm.") ||
           name.starts_with("model.norm."))
    key.module = M::FinalNorm;
  else if (contains(name, "router"))
    key.module = M::Other;
  else if (contains(name, "ffn.gate") || contains(name, "experts.e.0.") ||
           contains(name, "gate_proj") || contains(name, "up_proj"))
    key.module = M::FfnGate;
  else if (contains(name, "ffn.proj") || contains(name, "experts.e.2.") ||
           contains(name, "down_proj"))
    key.module = M::FfnProj;
  else if (contains(name, "token_embed") || contains(name, "embed_tokens") ||
           contains(name, "wte."))
    key.module = M::Embedding;
  else if (contains(name, "lm_head"))
    key.module = M::Head;
  return key;
}

double LayerAggregate::relL2() const {
  if (finitePairs == 0 && numel > 0) return std::numeric_limits<double>::quiet_NaN();
  if (sumASq > 0) return std::sqrt(sumDiffSq) / std::sqrt(sumASq);
  return sumDiffSq == 0 ? 0.0 : std::numeric_limits<double>::infinity();
}

namespace detail {

void aggregateLayers(CheckpointDiff& diff) {
  std::map<int, LayerAggregate> blocks;
  std::map<std::pair<int, int>, LayerAggregate> modules;
  for (const TensorDiff& t : diff.tensors) {
    if (!t.computed || !t.error.empty()) continue;
    auto add = [&](LayerAggregate& g) {
      g.sumDiffSq += t.normDiff * t.normDiff;
      g.sumASq += t.normA * t.normA;
      g.numel += t.numel;
      g.finitePairs += t.finitePairs;
      g.tensors += 1;
    };
    LayerAggregate& m = modules[{t.layer.block, int(t.layer.module)}];
    m.block = t.layer.block;
    m.module = t.layer.module;
    add(m);
    if (!t.tiedTo.empty()) continue;  // the same bytes count once per block
    LayerAggregate& b = blocks[t.layer.block];
    b.block = t.layer.block;
    add(b);
  }
  diff.blocks.clear();
  diff.modules.clear();
  for (auto& [k, g] : blocks) diff.blocks.push_back(g);
  for (auto& [k, g] : modules) diff.modules.push_back(g);
}

}  // namespace detail
}  // namespace ckpt
