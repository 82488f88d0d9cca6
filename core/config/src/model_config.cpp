#include "ckpt/config/model_config.h"

#include <string_view>
#include <unordered_set>

#include "ckpt/config/config_schema.h"
#include "ckpt/format/value.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;
using K = Value::Kind;

// MODEL.md's table, in its order. The defaults come from ModelConfig's
// members; the form's are a small model that trains on a CPU in minutes
// with the bytes tokenizer.
const FieldTable<ModelConfig>& modelTable() {
  using M = ModelConfig;
  static const FieldTable<M> table(
      "model", "MODEL.md's ModernLLMConfig", FieldStyle::Python,
      {
          field("vocab_size", &M::vocabSize)
              .required()
              .above(0)
              .form(256)
              .help("Vocabulary size; 256 for the bytes tokenizer"),
          field("d_model", &M::dModel)
              .required()
              .above(0)
              .form(128)
              .help("Hidden size; divisible by n_heads"),
          field("n_layers", &M::nLayers).required().above(0).form(4).help("Decoder blocks"),
          field("n_heads", &M::nHeads)
              .required()
              .above(0)
              .form(4)
              .help("Attention heads; head_dim = d_model / n_heads, even with use_rope"),
          field("ffn_hidden_size", &M::ffnHiddenSize)
              .required()
              .above(0)
              .form(512)
              .help("SwiGLU hidden size H; must exceed d_model"),
          field("max_seq_len", &M::maxSeqLen).required().above(0).form(256).help("Longest input"),
          field("rmsnorm_eps", &M::rmsnormEps).above(0).form().help("RMSNorm epsilon"),
          field("dropout", &M::dropout).atLeast(0).below(1).form().help("Dropout probability"),
          field("initializer_range", &M::initializerRange)
              .atLeast(0)
              .form()
              .help("Std of the normal init"),
          field("rope_theta", &M::ropeTheta).form().help("RoPE base; > 0 when use_rope is set"),
          field("rope_scaling", &M::ropeScaling)
              .above(0)
              .form()
              .help("Multiplies the RoPE angles when set"),
          field("use_rope", &M::useRope).form().help("Rotary position embeddings"),
          field("use_attention_sinks", &M::useAttentionSinks)
              .form()
              .help("Learned attention sinks in front of the keys"),
          field("num_attention_sinks", &M::numAttentionSinks)
              .form()
              .help("Sink states per block; > 0 when use_attention_sinks is set"),
          field("use_swiglu", &M::useSwiglu)
              .form()
              .help("Stored in the config, not used by the math"),
          field("swiglu_multiplier", &M::swigluMultiplier)
              .form()
              .help("Stored in the config, not used by the math"),
          field("use_gqa", &M::useGqa).form().help("Grouped-query attention"),
          field("gqa_groups", &M::gqaGroups)
              .form()
              .help("Key/value heads with use_gqa; must divide n_heads"),
          field("use_moe", &M::useMoe)
              .form()
              .help("Mixture of experts: the reference library cannot run it, so neither can this "
                    "trainer"),
          field("moe_config", &M::moeConfig)
              .help("With use_moe: {num_experts, top_k, dropout, capacity_factor}"),
          field("tie_embeddings", &M::tieEmbeddings)
              .form()
              .help("lm_head shares the embedding matrix"),
      });
  return table;
}

std::string num(int64_t i) {
  return std::to_string(i);
}

std::string hexOf(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    s += kHex[c >> 4];
    s += kHex[c & 15];
  }
  return s;
}

// Keys of a JSON object must be strings: Python dict keys of other kinds
// are written the way Python's json module would (ints as digits).
std::string keyOf(const Value* k) {
  if (!k) return "None";
  switch (k->kind) {
    case K::Str:
      return std::string(k->text);
    case K::Int:
      return std::to_string(k->integer);
    case K::BigInt:
      return std::string(k->text);
    case K::Float:
      return formatPythonFloat(k->real);
    case K::Bool:
      return k->boolean ? "true" : "false";
    case K::None:
      return "null";
    default:
      return shortRepr(k);
  }
}

constexpr int kMaxDepth = 500;

struct PlainEncoder {
  std::unordered_set<const Value*> onPath;  // pickles can build cycles

  json encode(const Value* v, int depth) {
    if (!v) return nullptr;
    switch (v->kind) {
      case K::None:
        return nullptr;
      case K::Bool:
        return v->boolean;
      case K::Int:
        return v->integer;
      case K::BigInt:
        return std::string(v->text);
      case K::Float:
        return v->real;
      case K::Str:
        return std::string(v->text);
      case K::Bytes:
        return hexOf(v->text);
      case K::List:
      case K::Tuple:
      case K::Set:
      case K::Dict:
      case K::Object:
        break;
      default:
        return nullptr;  // tensors, storages, globals: opaque
    }
    if (depth > kMaxDepth || !onPath.insert(v).second) return nullptr;
    json out;
    switch (v->kind) {
      case K::Dict:
        out = json::object();
        for (const auto& [k, x] : v->entries) out[keyOf(k)] = encode(x, depth + 1);
        break;
      case K::Object:
        if (v->state && v->state->kind == K::Dict) out = encode(v->state, depth + 1);
        break;
      default:
        out = json::array();
        for (const Value* x : v->items) out.push_back(encode(x, depth + 1));
        break;
    }
    onPath.erase(v);
    return out;
  }
};

}  // namespace

const ConfigSection& modelConfigSection() {
  return modelTable().section();
}

bool isModelConfigKey(std::string_view key) {
  return modelConfigSection().find(key) != nullptr;
}

json plainJson(const Value* v) {
  return PlainEncoder{}.encode(v, 0);
}

ModelConfig ModelConfig::fromValue(const Value* dict) {
  if (!dict) throw ConfigError("config: missing");
  const Value* d = dict;
  if (d->kind == K::Object && d->state && d->state->kind == K::Dict) d = d->state;
  if (d->kind != K::Dict)
    throw ConfigError("config: expected a dict, got " + std::string(kindName(dict->kind)) +
                      (dict->kind == K::Object ? " " + std::string(dict->text) : ""));
  return fromJson(plainJson(d));
}

ModelConfig ModelConfig::fromJson(const json& j) {
  if (!j.is_object()) throw ConfigError("config: expected a dict, got " + pythonTypeName(j));
  ModelConfig c;
  modelTable().read(c, j);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!isModelConfigKey(it.key())) c.extra[it.key()] = it.value();
  return c;
}

json ModelConfig::toJson() const {
  json j = modelTable().write(*this);
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

void ModelConfig::validate() const {
  modelTable().check(*this);  // vocab_size > 0, dropout in [0, 1), ...
  if (dModel % nHeads != 0)
    throw ConfigError(
        "d_model (" + num(dModel) + ") must be divisible by n_heads (" + num(nHeads) + ")",
        {"d_model", "n_heads"});
  if (ffnHiddenSize <= dModel)
    throw ConfigError(
        "ffn_hidden_size (" + num(ffnHiddenSize) + ") must exceed d_model (" + num(dModel) + ")",
        {"ffn_hidden_size", "d_model"});
  if (useRope) {
    if (!(ropeTheta > 0)) throw ConfigError("rope_theta must be > 0", {"rope_theta"});
    // rot() splits each head in halves: an odd head_dim has no halves.
    if (headDim() % 2 != 0)
      throw ConfigError(
          "head_dim (" + num(headDim()) + " = d_model / n_heads) must be even when use_rope is set",
          {"d_model", "n_heads"});
  }
  if (useAttentionSinks && numAttentionSinks <= 0)
    throw ConfigError("num_attention_sinks must be > 0 when use_attention_sinks is set",
                      {"num_attention_sinks"});
  if (useGqa) {
    if (!gqaGroups) throw ConfigError("gqa_groups must be set when use_gqa is set", {"gqa_groups"});
    if (*gqaGroups <= 0) throw ConfigError("gqa_groups must be > 0", {"gqa_groups"});
    if (nHeads % *gqaGroups != 0)
      throw ConfigError(
          "gqa_groups (" + num(*gqaGroups) + ") must divide n_heads (" + num(nHeads) + ")",
          {"gqa_groups", "n_heads"});
  }
}

std::vector<ParamSpec> stateDictLayout(const ModelConfig& c, bool includeTiedHead) {
  const int64_t d = c.dModel;
  const int64_t kv = c.kvHeads() * c.headDim();
  const int64_t h = c.ffnHiddenSize;
  int64_t experts = 0;
  if (c.useMoe) {
    const auto it = c.moeConfig.is_object() ? c.moeConfig.find("num_experts") : c.moeConfig.end();
    if (it == c.moeConfig.end() || !it->is_number_integer() || it->get<int64_t>() <= 0)
      throw ConfigError("moe_config.num_experts must be set (an int > 0) when use_moe is set",
                        {"moe_config"});
    experts = it->get<int64_t>();
  }
  std::vector<ParamSpec> out;
  out.push_back({"token_embed.weight", {c.vocabSize, d}});
  for (int64_t i = 0; i < c.nLayers; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    if (c.useAttentionSinks) out.push_back({p + "attn.sink_states", {c.numAttentionSinks, d}});
    out.push_back({p + "attn.q_proj.weight", {d, d}});
    out.push_back({p + "attn.k_proj.weight", {kv, d}});
    out.push_back({p + "attn.v_proj.weight", {kv, d}});
    out.push_back({p + "attn.out_proj.weight", {d, d}});
    out.push_back({p + "attn_norm.weight", {d}});
    out.push_back({p + "ffn_norm.weight", {d}});
    if (c.useMoe) {
      for (int64_t e = 0; e < experts; ++e) {
        const std::string x = p + "ffn.experts." + std::to_string(e) + ".";
        if (e == 0) out.push_back({p + "ffn.router.router.weight", {experts, d}});
        out.push_back({x + "0.weight", {4 * d, d}});
        out.push_back({x + "0.bias", {4 * d}});
        out.push_back({x + "2.weight", {d, 4 * d}});
        out.push_back({x + "2.bias", {d}});
      }
      continue;
    }
    out.push_back({p + "ffn.gate.weight", {2 * h, d}});
    out.push_back({p + "ffn.gate.bias", {2 * h}});
    out.push_back({p + "ffn.proj.weight", {d, h}});
    out.push_back({p + "ffn.proj.bias", {d}});
  }
  out.push_back({"final_norm.weight", {d}});
  if (!c.tieEmbeddings || includeTiedHead) out.push_back({"lm_head.weight", {c.vocabSize, d}});
  return out;
}

}  // namespace ckpt
