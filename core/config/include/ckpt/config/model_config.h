#pragma once
// ModernLLMConfig (MODEL.md) without LibTorch: parsed from a checkpoint's
// `config` dict or a JSON file, validated like the reference library, and
// written back with unknown keys kept.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt {

struct Value;

struct ConfigSection;

// A config that the reference library would reject; the message names the
// field: "ffn_hidden_size (64) must exceed d_model (64)", and so does
// fields(): {"ffn_hidden_size", "d_model"}, the one to fix first first
// (empty when the error is about no field: a file, the whole config).
// kind() tells the batch numbers that contradict each other (for the world
// size at hand) from every other problem: the run cannot be what was asked,
// and the fix is in what was typed, so the CLI exits 2 for it as for a wrong
// command line.
class ConfigError : public std::runtime_error {
 public:
  enum class Kind { Invalid, BatchSplit };
  explicit ConfigError(const std::string& message, std::vector<std::string> fields = {},
                       Kind kind = Kind::Invalid)
      : std::runtime_error(message), m_fields(std::move(fields)), m_kind(kind) {}
  [[nodiscard]] const std::vector<std::string>& fields() const { return m_fields; }
  [[nodiscard]] Kind kind() const { return m_kind; }

 private:
  std::vector<std::string> m_fields;
  Kind m_kind;
};

// The defaults below are the ones MODEL.md lists; the field table
// (modelConfigSection(), config.cpp) reads them from here.
struct ModelConfig {
  int64_t vocabSize = 0;
  int64_t dModel = 0;
  int64_t nLayers = 0;
  int64_t nHeads = 0;
  int64_t ffnHiddenSize = 0;
  int64_t maxSeqLen = 0;
  double rmsnormEps = 1e-5;
  double dropout = 0.0;
  double initializerRange = 0.02;
  double ropeTheta = 10000.0;
  std::optional<double> ropeScaling;
  bool useRope = true;
  bool useAttentionSinks = true;
  int64_t numAttentionSinks = 2;
  bool useSwiglu = true;          // stored, not used by the math
  double swigluMultiplier = 2.0;  // stored, not used by the math
  bool useGqa = false;
  std::optional<int64_t> gqaGroups;
  bool useMoe = false;
  nlohmann::ordered_json moeConfig;  // null when absent
  bool tieEmbeddings = true;
  // Keys MODEL.md does not list, in file order: kept and written back.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();

  // Throws ConfigError naming the first bad or missing field. Parsing does
  // not validate (a checkpoint with an odd config can still be browsed):
  // call validate(), as Decoder's constructor does, before running one.
  static ModelConfig fromJson(const nlohmann::ordered_json& j);
  // A checkpoint's config dict (or a dataclass's state) from the reader.
  static ModelConfig fromValue(const Value* dict);
  // Every field in MODEL.md's order (snake_case keys), then `extra`.
  [[nodiscard]] nlohmann::ordered_json toJson() const;
  // The reference library's checks: the table's bounds, then the rules
  // across fields. Throws ConfigError naming the field(s).
  void validate() const;

  [[nodiscard]] int64_t headDim() const { return dModel / nHeads; }
  [[nodiscard]] int64_t kvHeads() const { return useGqa && gqaGroups ? *gqaGroups : nHeads; }
};

// One state-dict entry as MODEL.md's "Parameters, in registration order"
// lists it: the key and the shape.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// The state dict of a model with this config, in registration order, without
// LibTorch (for browsing, diffing and optimizer-state mapping). With
// tie_embeddings, `lm_head.weight` is listed (last) only when includeTiedHead:
// the state dict has it, the optimizer's de-duplicated parameter list does
// not. MoE configs get MODEL.md's router/expert entries (moe_config must name
// num_experts; ConfigError otherwise).
std::vector<ParamSpec> stateDictLayout(const ModelConfig& config, bool includeTiedHead = true);

// MODEL.md's config fields, in its order: what fromJson reads, toJson
// writes, validate() bounds, `train --help` lists and the Train form shows.
const ConfigSection& modelConfigSection();

// Whether `key` is one of MODEL.md's config fields (snake_case).
bool isModelConfigKey(std::string_view key);

// A reader Value (dict, list, scalars) as plain JSON: what the trainer
// writes back into a checkpoint's metadata. Opaque objects become their
// state when it is a dict, else null.
nlohmann::ordered_json plainJson(const Value* v);

}  // namespace ckpt
