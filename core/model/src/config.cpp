#include "ckpt/model/config.h"

#include <array>
#include <string_view>
#include <unordered_set>

#include "ckpt/format/value.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;
using K = Value::Kind;

// MODEL.md's table, in its order: what toJson writes and what is not `extra`.
constexpr std::array<std::string_view, 21> kKnownKeys = {
    "vocab_size",
    "d_model",
    "n_layers",
    "n_heads",
    "ffn_hidden_size",
    "max_seq_len",
    "rmsnorm_eps",
    "dropout",
    "initializer_range",
    "rope_theta",
    "rope_scaling",
    "use_rope",
    "use_attention_sinks",
    "num_attention_sinks",
    "use_swiglu",
    "swiglu_multiplier",
    "use_gqa",
    "gqa_groups",
    "use_moe",
    "moe_config",
    "tie_embeddings",
};

std::string typeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "int";
    case json::value_t::number_float:
      return "float";
    case json::value_t::string:
      return "str";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "dict";
    default:
      return "unknown";
  }
}

[[noreturn]] void wrongType(std::string_view key, std::string_view want, const json& got) {
  throw ConfigError("config: " + std::string(key) + " must be " + std::string(want) + ", got " +
                    typeName(got) + " (" + got.dump() + ")");
}

// Field readers. A required field that is absent is "missing"; an optional
// one keeps its default. Booleans are not integers here (Python's dataclass
// would take True as 1, but no checkpoint writes that).
class Reader {
 public:
  explicit Reader(const json& j) : m_j(j) {}

  const json* find(std::string_view key) const {
    auto it = m_j.find(std::string(key));
    return it == m_j.end() ? nullptr : &*it;
  }
  const json& required(std::string_view key) const {
    const json* v = find(key);
    if (!v) throw ConfigError("config: missing " + std::string(key));
    return *v;
  }

  static int64_t asInt(std::string_view key, const json& v) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
        throw ConfigError("config: " + std::string(key) + " is out of range (" + v.dump() + ")");
      return v.get<int64_t>();
    }
    wrongType(key, "an int", v);
  }
  static double asFloat(std::string_view key, const json& v) {
    if (v.is_number()) return v.get<double>();  // Python takes an int for a float field
    wrongType(key, "a float", v);
  }
  static bool asBool(std::string_view key, const json& v) {
    if (v.is_boolean()) return v.get<bool>();
    wrongType(key, "a bool", v);
  }

  int64_t requiredInt(std::string_view key) const { return asInt(key, required(key)); }
  void optInt(std::string_view key, int64_t& out) const {
    if (const json* v = find(key)) out = asInt(key, *v);
  }
  void optFloat(std::string_view key, double& out) const {
    if (const json* v = find(key)) out = asFloat(key, *v);
  }
  void optBool(std::string_view key, bool& out) const {
    if (const json* v = find(key)) out = asBool(key, *v);
  }

 private:
  const json& m_j;
};

std::string num(double d) {
  return formatPythonFloat(d);
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

bool isModelConfigKey(std::string_view key) {
  for (std::string_view k : kKnownKeys)
    if (k == key) return true;
  return false;
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
  if (!j.is_object()) throw ConfigError("config: expected a dict, got " + typeName(j));
  Reader r(j);
  ModelConfig c;
  c.vocabSize = r.requiredInt("vocab_size");
  c.dModel = r.requiredInt("d_model");
  c.nLayers = r.requiredInt("n_layers");
  c.nHeads = r.requiredInt("n_heads");
  c.ffnHiddenSize = r.requiredInt("ffn_hidden_size");
  c.maxSeqLen = r.requiredInt("max_seq_len");
  r.optFloat("rmsnorm_eps", c.rmsnormEps);
  r.optFloat("dropout", c.dropout);
  r.optFloat("initializer_range", c.initializerRange);
  r.optFloat("rope_theta", c.ropeTheta);
  if (const json* v = r.find("rope_scaling"); v && !v->is_null())
    c.ropeScaling = Reader::asFloat("rope_scaling", *v);
  r.optBool("use_rope", c.useRope);
  r.optBool("use_attention_sinks", c.useAttentionSinks);
  r.optInt("num_attention_sinks", c.numAttentionSinks);
  r.optBool("use_swiglu", c.useSwiglu);
  r.optFloat("swiglu_multiplier", c.swigluMultiplier);
  r.optBool("use_gqa", c.useGqa);
  if (const json* v = r.find("gqa_groups"); v && !v->is_null())
    c.gqaGroups = Reader::asInt("gqa_groups", *v);
  r.optBool("use_moe", c.useMoe);
  if (const json* v = r.find("moe_config"); v && !v->is_null()) {
    if (!v->is_object()) wrongType("moe_config", "a dict or None", *v);
    c.moeConfig = *v;
  }
  r.optBool("tie_embeddings", c.tieEmbeddings);

  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (std::string_view k : kKnownKeys) known |= (k == it.key());
    if (!known) c.extra[it.key()] = it.value();
  }
  return c;
}

json ModelConfig::toJson() const {
  json j = json::object();
  j["vocab_size"] = vocabSize;
  j["d_model"] = dModel;
  j["n_layers"] = nLayers;
  j["n_heads"] = nHeads;
  j["ffn_hidden_size"] = ffnHiddenSize;
  j["max_seq_len"] = maxSeqLen;
  j["rmsnorm_eps"] = rmsnormEps;
  j["dropout"] = dropout;
  j["initializer_range"] = initializerRange;
  j["rope_theta"] = ropeTheta;
  j["rope_scaling"] = ropeScaling ? json(*ropeScaling) : json(nullptr);
  j["use_rope"] = useRope;
  j["use_attention_sinks"] = useAttentionSinks;
  j["num_attention_sinks"] = numAttentionSinks;
  j["use_swiglu"] = useSwiglu;
  j["swiglu_multiplier"] = swigluMultiplier;
  j["use_gqa"] = useGqa;
  j["gqa_groups"] = gqaGroups ? json(*gqaGroups) : json(nullptr);
  j["use_moe"] = useMoe;
  j["moe_config"] = moeConfig.is_null() ? json(nullptr) : moeConfig;
  j["tie_embeddings"] = tieEmbeddings;
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

void ModelConfig::validate() const {
  auto positive = [](std::string_view name, int64_t v) {
    if (v <= 0) throw ConfigError(std::string(name) + " must be > 0");
  };
  positive("vocab_size", vocabSize);
  positive("d_model", dModel);
  positive("n_layers", nLayers);
  positive("n_heads", nHeads);
  positive("ffn_hidden_size", ffnHiddenSize);
  positive("max_seq_len", maxSeqLen);
  if (dModel % nHeads != 0)
    throw ConfigError("d_model (" + num(dModel) + ") must be divisible by n_heads (" + num(nHeads) +
                      ")");
  if (ffnHiddenSize <= dModel)
    throw ConfigError("ffn_hidden_size (" + num(ffnHiddenSize) + ") must exceed d_model (" +
                      num(dModel) + ")");
  if (!(rmsnormEps > 0)) throw ConfigError("rmsnorm_eps must be > 0");
  if (!(dropout >= 0 && dropout < 1))
    throw ConfigError("dropout (" + num(dropout) + ") must be in [0, 1)");
  if (!(initializerRange >= 0)) throw ConfigError("initializer_range must be >= 0");
  if (ropeScaling && !(*ropeScaling > 0)) throw ConfigError("rope_scaling must be > 0");
  if (useRope) {
    if (!(ropeTheta > 0)) throw ConfigError("rope_theta must be > 0");
    // rot() splits each head in halves: an odd head_dim has no halves.
    if (headDim() % 2 != 0)
      throw ConfigError("head_dim (" + num(headDim()) +
                        " = d_model / n_heads) must be even when use_rope is set");
  }
  if (useAttentionSinks && numAttentionSinks <= 0)
    throw ConfigError("num_attention_sinks must be > 0 when use_attention_sinks is set");
  if (useGqa) {
    if (!gqaGroups) throw ConfigError("gqa_groups must be set when use_gqa is set");
    if (*gqaGroups <= 0) throw ConfigError("gqa_groups must be > 0");
    if (nHeads % *gqaGroups != 0)
      throw ConfigError("gqa_groups (" + num(*gqaGroups) + ") must divide n_heads (" + num(nHeads) +
                        ")");
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
      throw ConfigError("moe_config.num_experts must be set (an int > 0) when use_moe is set");
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
