// The decoder against MODEL.md: config parsing and validation, parameter
// names/order/shapes as MODEL.md lists them, init, strict state-dict loading,
// and logits/loss against an independent Python implementation
// (tests/python/modern_llm_ref.py, run with Debian's python3-torch).
// LibTorch before Qt: its headers use `slots` as a name, Qt defines it away.
#include <torch/torch.h>

#include <QtTest>

#include <cmath>
#include <fstream>
#include <map>

#include "ckpt/config/config_schema.h"
#include "ckpt/config/model_config.h"
#include "ckpt/format/value.h"
#include "ckpt/model/decoder.h"
#include "ckpt/model/device.h"

using namespace ckpt;
using json = nlohmann::ordered_json;
using Shape = std::vector<int64_t>;

Q_DECLARE_METATYPE(std::string)

// Readable QCOMPARE failures for std::string.
namespace QTest {
template <>
inline char* toString(const std::string& s) {
  return qstrdup(s.c_str());
}
}  // namespace QTest

namespace {

// MODEL.md's "small" test model: vocab 64, d_model 32, 2 layers, 4 heads,
// ffn 80, max_seq_len 32 (head_dim 8).
json smallConfig() {
  return json{{"vocab_size", 64}, {"d_model", 32},         {"n_layers", 2},
              {"n_heads", 4},     {"ffn_hidden_size", 80}, {"max_seq_len", 32}};
}

ModelConfig configWith(const json& changes) {
  json j = smallConfig();
  for (auto it = changes.begin(); it != changes.end(); ++it) j[it.key()] = it.value();
  return ModelConfig::fromJson(j);
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// MODEL.md's list, typed in by hand (not derived from stateDictLayout).
std::vector<std::pair<std::string, Shape>> modelMdLayout(bool sinks, int64_t sinkCount,
                                                         int64_t kvDim, bool withHead) {
  std::vector<std::pair<std::string, Shape>> out{{"token_embed.weight", {64, 32}}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    if (sinks) out.push_back({b + "attn.sink_states", {sinkCount, 32}});
    out.push_back({b + "attn.q_proj.weight", {32, 32}});
    out.push_back({b + "attn.k_proj.weight", {kvDim, 32}});
    out.push_back({b + "attn.v_proj.weight", {kvDim, 32}});
    out.push_back({b + "attn.out_proj.weight", {32, 32}});
    out.push_back({b + "attn_norm.weight", {32}});
    out.push_back({b + "ffn_norm.weight", {32}});
    out.push_back({b + "ffn.gate.weight", {160, 32}});
    out.push_back({b + "ffn.gate.bias", {160}});
    out.push_back({b + "ffn.proj.weight", {32, 80}});
    out.push_back({b + "ffn.proj.bias", {32}});
  }
  out.push_back({"final_norm.weight", {32}});
  if (withHead) out.push_back({"lm_head.weight", {64, 32}});
  return out;
}

std::vector<std::pair<std::string, Shape>> layoutOf(const NamedTensors& entries) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& [name, t] : entries) out.push_back({name, t.sizes().vec()});
  return out;
}

QString describe(const std::vector<std::pair<std::string, Shape>>& layout) {
  QStringList lines;
  for (const auto& [name, shape] : layout) {
    QStringList dims;
    for (int64_t d : shape) dims << QString::number(d);
    lines << QString::fromStdString(name) + " [" + dims.join(", ") + "]";
  }
  return lines.join("\n");
}

// The fixed input of the interop cases: B=2, T=11, ids in [0, 64).
torch::Tensor fixedInput() {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 22; ++i) ids.push_back((i * 37 + 5) % 64);
  return torch::tensor(ids, torch::kLong).view({2, 11});
}

// Init gives near-uniform attention (std 0.02): a RoPE or sink mistake
// would move logits by less than the tolerance. Widen every parameter so
// each part of the math shows in the logits.
void roughen(Decoder& model) {
  torch::NoGradGuard noGrad;
  for (auto& [name, p] : model.namedParameters()) {
    if (name.find("norm.weight") != std::string::npos)
      p.copy_(1.0 + 0.3 * torch::randn_like(p));
    else if (name.find(".bias") != std::string::npos ||
             name.find("sink_states") != std::string::npos)
      p.copy_(0.5 * torch::randn_like(p));
    else
      p.copy_(torch::randn_like(p) / std::sqrt(double(p.size(-1))) * 1.5);
  }
}

void writeRaw(const QString& path, const torch::Tensor& t) {
  const auto c = t.contiguous().cpu();
  std::ofstream f(path.toStdString(), std::ios::binary);
  f.write(static_cast<const char*>(c.data_ptr()), std::streamsize(c.numel() * c.element_size()));
  if (!f) throw std::runtime_error("cannot write " + path.toStdString());
}

torch::Tensor readRawFloat(const QString& path, at::IntArrayRef shape) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot read " + path.toStdString());
  const QByteArray bytes = f.readAll();
  auto t = torch::empty(shape, torch::kFloat);
  if (size_t(bytes.size()) != size_t(t.numel()) * sizeof(float))
    throw std::runtime_error("wrong size: " + path.toStdString());
  std::memcpy(t.data_ptr(), bytes.constData(), size_t(bytes.size()));
  return t;
}

json rawEntry(const std::string& file, const torch::Tensor& t) {
  return json{{"file", file}, {"shape", t.sizes().vec()}};
}

struct InteropCase {
  std::string name;
  json changes;  // over smallConfig()
  bool withMask = false;
};

const std::vector<InteropCase>& interopCases() {
  static const std::vector<InteropCase> cases{
      {"sinks", json::object()},
      {"no_sinks", {{"use_attention_sinks", false}}},
      {"gqa", {{"use_gqa", true}, {"gqa_groups", 2}}},
      {"gqa_no_sinks", {{"use_gqa", true}, {"gqa_groups", 2}, {"use_attention_sinks", false}}},
      {"rope_scaling_0.5", {{"rope_scaling", 0.5}}},
      {"no_rope", {{"use_rope", false}}},
      {"untied", {{"tie_embeddings", false}}},
      {"sinks3_theta500_eps",
       {{"num_attention_sinks", 3}, {"rope_theta", 500.0}, {"rmsnorm_eps", 1e-3}}},
      {"dropout_eval", {{"dropout", 0.1}}},
      {"mask_gqa_untied", {{"use_gqa", true}, {"gqa_groups", 2}, {"tie_embeddings", false}}, true},
      {"mask_no_sinks", {{"use_attention_sinks", false}}, true},
  };
  return cases;
}

}  // namespace

class TestModel : public QObject {
  Q_OBJECT

  struct InteropResult {
    torch::Tensor cppLogits, refLogits;
    double cppLoss = 0, refLoss = 0;
    QStringList layoutErrors;
  };
  std::map<std::string, InteropResult> m_interop;
  QString m_interopError;
  bool m_interopRan = false;

  // Builds every interop case, runs the Python reference once over all of
  // them, and keeps both sides' results for interop() to compare.
  void runInterop() {
    if (m_interopRan) return;
    m_interopRan = true;
    QTemporaryDir dir;
    if (!dir.isValid()) {
      m_interopError = "no temp dir";
      return;
    }
    json cases = json::array();
    int seed = 100;
    for (const auto& c : interopCases()) {
      torch::manual_seed(seed++);
      Decoder model(configWith(c.changes));
      roughen(model);
      model.train(false);
      const auto ids = fixedInput();
      auto labels = ids.clone();
      torch::Tensor mask;
      if (c.withMask) {
        // Right padding on row 0 (last 3), left padding on row 1 (first 2).
        mask = torch::ones({2, 11}, torch::kLong);
        mask.index_put_({0, torch::indexing::Slice(8, 11)}, 0);
        mask.index_put_({1, torch::indexing::Slice(0, 2)}, 0);
        labels.masked_fill_(mask.eq(0), -100);
      }
      InteropResult r;
      {
        torch::NoGradGuard noGrad;
        r.cppLogits = model.forward(ids, mask);
        r.cppLoss = Decoder::loss(r.cppLogits, labels).item<double>();
      }
      json tensors = json::array();
      int i = 0;
      for (const auto& [name, t] : model.stateDict()) {
        const std::string file = c.name + "." + std::to_string(i++) + ".f32";
        writeRaw(dir.filePath(QString::fromStdString(file)), t);
        tensors.push_back(json{{"name", name}, {"file", file}, {"shape", t.sizes().vec()}});
      }
      writeRaw(dir.filePath(QString::fromStdString(c.name + ".ids.i64")), ids);
      writeRaw(dir.filePath(QString::fromStdString(c.name + ".labels.i64")), labels);
      json jc{{"name", c.name},
              {"config", model.config().toJson()},
              {"tensors", tensors},
              {"input_ids", rawEntry(c.name + ".ids.i64", ids)},
              {"labels", rawEntry(c.name + ".labels.i64", labels)},
              {"attention_mask", nullptr}};
      if (mask.defined()) {
        writeRaw(dir.filePath(QString::fromStdString(c.name + ".mask.i64")), mask);
        jc["attention_mask"] = rawEntry(c.name + ".mask.i64", mask);
      }
      cases.push_back(jc);
      m_interop[c.name] = r;
    }
    {
      std::ofstream f(dir.filePath("cases.json").toStdString());
      f << json{{"cases", cases}}.dump(1);
    }

    QProcess python;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("PYTHONDONTWRITEBYTECODE", "1");
    python.setProcessEnvironment(env);
    python.start(CKPT_TORCH_PYTHON, {CKPT_SOURCE_DIR "/tests/python/model_interop.py", dir.path()});
    if (!python.waitForFinished(180000) || python.exitStatus() != QProcess::NormalExit ||
        python.exitCode() != 0) {
      m_interopError =
          "model_interop.py failed: " + QString::fromUtf8(python.readAllStandardError());
      return;
    }
    QFile resultsFile(dir.filePath("results.json"));
    if (!resultsFile.open(QIODevice::ReadOnly)) {
      m_interopError = "no results.json";
      return;
    }
    const json results = json::parse(resultsFile.readAll().toStdString());
    for (auto& [name, r] : m_interop) {
      const json& jr = results.at("cases").at(name);
      r.refLoss = jr.at("loss").get<double>();
      for (const auto& e : jr.at("layout_errors"))
        r.layoutErrors << QString::fromStdString(e.get<std::string>());
      r.refLogits = readRawFloat(dir.filePath(QString::fromStdString(name + ".logits.f32")),
                                 r.cppLogits.sizes());
    }
  }

 private slots:
  void initTestCase() { torch::set_num_threads(1); }

  // ---- config --------------------------------------------------------

  void configDefaults() {
    const ModelConfig c = ModelConfig::fromJson(smallConfig());
    QCOMPARE(c.vocabSize, int64_t(64));
    QCOMPARE(c.rmsnormEps, 1e-5);
    QCOMPARE(c.dropout, 0.0);
    QCOMPARE(c.initializerRange, 0.02);
    QCOMPARE(c.ropeTheta, 10000.0);
    QVERIFY(!c.ropeScaling);
    QVERIFY(c.useRope);
    QVERIFY(c.useAttentionSinks);
    QCOMPARE(c.numAttentionSinks, int64_t(2));
    QVERIFY(c.useSwiglu);
    QCOMPARE(c.swigluMultiplier, 2.0);
    QVERIFY(!c.useGqa);
    QVERIFY(!c.gqaGroups);
    QVERIFY(!c.useMoe);
    QVERIFY(c.moeConfig.is_null());
    QVERIFY(c.tieEmbeddings);
    QVERIFY(c.extra.empty());
    QCOMPARE(c.headDim(), int64_t(8));
    QCOMPARE(c.kvHeads(), int64_t(4));
    QCOMPARE(configWith({{"use_gqa", true}, {"gqa_groups", 2}}).kvHeads(), int64_t(2));
    c.validate();
  }

  void configParseErrors_data() {
    QTest::addColumn<std::string>("config");
    QTest::addColumn<std::string>("message");
    auto without = [](const char* key) {
      json j = smallConfig();
      j.erase(key);
      return j.dump();
    };
    auto with = [](const char* key, json v) {
      json j = smallConfig();
      j[key] = v;
      return j.dump();
    };
    QTest::newRow("missing vocab_size")
        << without("vocab_size") << std::string("config: missing vocab_size");
    QTest::newRow("missing max_seq_len")
        << without("max_seq_len") << std::string("config: missing max_seq_len");
    QTest::newRow("d_model str") << with("d_model", "32")
                                 << std::string("config: d_model must be an int, got str (\"32\")");
    QTest::newRow("n_layers float")
        << with("n_layers", 2.0) << std::string("config: n_layers must be an int, got float (2.0)");
    QTest::newRow("dropout str") << with("dropout", "0.1")
                                 << std::string(
                                        "config: dropout must be a float, got str (\"0.1\")");
    QTest::newRow("use_rope int") << with("use_rope", 1)
                                  << std::string("config: use_rope must be a bool, got int (1)");
    QTest::newRow("gqa_groups float")
        << with("gqa_groups", 2.5)
        << std::string("config: gqa_groups must be an int, got float (2.5)");
    QTest::newRow("moe_config list")
        << with("moe_config", json::array({1}))
        << std::string("config: moe_config must be a dict or None, got list ([1])");
    QTest::newRow("not a dict") << std::string("[1, 2]")
                                << std::string("config: expected a dict, got list");
  }
  void configParseErrors() {
    QFETCH(std::string, config);
    QFETCH(std::string, message);
    QCOMPARE(errorOf([&] { ModelConfig::fromJson(json::parse(config)); }), message);
  }

  void configValidation_data() {
    QTest::addColumn<std::string>("changes");
    QTest::addColumn<std::string>("message");
    auto row = [](const char* tag, json changes, const char* message) {
      QTest::newRow(tag) << changes.dump() << std::string(message);
    };
    row("ffn not above d_model", {{"ffn_hidden_size", 64}, {"d_model", 64}},
        "ffn_hidden_size (64) must exceed d_model (64)");
    row("d_model % n_heads", {{"d_model", 100}, {"n_heads", 3}, {"ffn_hidden_size", 200}},
        "d_model (100) must be divisible by n_heads (3)");
    row("gqa_groups divides", {{"n_heads", 8}, {"use_gqa", true}, {"gqa_groups", 3}},
        "gqa_groups (3) must divide n_heads (8)");
    row("dropout 1.5", {{"dropout", 1.5}}, "dropout (1.5) must be in [0, 1)");
    row("dropout 1", {{"dropout", 1}}, "dropout (1.0) must be in [0, 1)");
    row("dropout negative", {{"dropout", -0.1}}, "dropout (-0.1) must be in [0, 1)");
    row("rmsnorm_eps 0", {{"rmsnorm_eps", 0.0}}, "rmsnorm_eps must be > 0");
    row("rope_scaling 0", {{"rope_scaling", 0.0}}, "rope_scaling must be > 0");
    row("rope_scaling negative", {{"rope_scaling", -1.0}}, "rope_scaling must be > 0");
    row("sinks 0", {{"num_attention_sinks", 0}},
        "num_attention_sinks must be > 0 when use_attention_sinks is set");
    row("vocab 0", {{"vocab_size", 0}}, "vocab_size must be > 0");
    row("d_model 0", {{"d_model", 0}}, "d_model must be > 0");
    row("n_layers 0", {{"n_layers", 0}}, "n_layers must be > 0");
    row("n_heads 0", {{"n_heads", 0}}, "n_heads must be > 0");
    row("max_seq_len 0", {{"max_seq_len", 0}}, "max_seq_len must be > 0");
    row("gqa without groups", {{"use_gqa", true}}, "gqa_groups must be set when use_gqa is set");
    row("gqa_groups 0", {{"use_gqa", true}, {"gqa_groups", 0}}, "gqa_groups must be > 0");
    row("odd head_dim with rope", {{"d_model", 12}, {"n_heads", 4}},
        "head_dim (3 = d_model / n_heads) must be even when use_rope is set");
    row("ok: sinks 0 when off", {{"num_attention_sinks", 0}, {"use_attention_sinks", false}}, "");
    row("ok: gqa_groups ignored when off", {{"gqa_groups", 3}}, "");
    row("ok: odd head_dim without rope", {{"d_model", 12}, {"n_heads", 4}, {"use_rope", false}},
        "");
    row("ok: MoE validates",
        {{"use_moe", true}, {"moe_config", {{"num_experts", 4}, {"top_k", 2}}}}, "");
  }
  void configValidation() {
    QFETCH(std::string, changes);
    QFETCH(std::string, message);
    const ModelConfig c = configWith(json::parse(changes));
    std::string got;
    try {
      c.validate();
    } catch (const ConfigError& e) {
      got = e.what();
    }
    QCOMPARE(got, message);
    if (!message.empty()) QCOMPARE(errorOf([&] { Decoder d(c); }), message);
  }

  void configRoundTrip() {
    // Unknown keys, interleaved with known ones, come back after the table's
    // fields in their file order, values untouched.
    const json in = json::parse(R"({"zeta": 1, "vocab_size": 64, "d_model": 32, "n_layers": 2,
      "alpha": {"nested": [1, 2.5, null]}, "n_heads": 4, "ffn_hidden_size": 80,
      "max_seq_len": 32, "rope_scaling": 0.5, "gqa_groups": 2, "use_gqa": true,
      "moe_config": {"num_experts": 4, "top_k": 2, "dropout": 0.0, "capacity_factor": 1.25},
      "rope_theta": 10000, "middle": "x"})");
    const ModelConfig c = ModelConfig::fromJson(in);
    QCOMPARE(c.extra.dump(),
             std::string(R"({"zeta":1,"alpha":{"nested":[1,2.5,null]},"middle":"x"})"));
    const json out = c.toJson();
    std::vector<std::string> keys;
    for (auto it = out.begin(); it != out.end(); ++it) keys.push_back(it.key());
    const std::vector<std::string> expected{"vocab_size",
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
                                            "zeta",
                                            "alpha",
                                            "middle"};
    QCOMPARE(keys, expected);
    // The field table that fromJson, toJson, validate, the CLI's help and the
    // Train form are made from holds exactly MODEL.md's fields, in its order.
    std::vector<std::string> table;
    for (const ConfigField& f : modelConfigSection().fields) table.push_back(f.name);
    QCOMPARE(table, std::vector<std::string>(expected.begin(), expected.end() - 3));
    QCOMPARE(out["rope_scaling"].get<double>(), 0.5);
    QVERIFY(out["rope_theta"].is_number_float());  // a float field stays a float
    QCOMPARE(out["gqa_groups"].get<int64_t>(), 2);
    QCOMPARE(out["moe_config"]["capacity_factor"].get<double>(), 1.25);
    QVERIFY(ModelConfig::fromJson(smallConfig()).toJson()["rope_scaling"].is_null());
    QVERIFY(ModelConfig::fromJson(smallConfig()).toJson()["gqa_groups"].is_null());
    // And parsing what we wrote gives the same JSON back.
    QCOMPARE(ModelConfig::fromJson(out).toJson().dump(), out.dump());
  }

  void configFromValue() {
    ValueArena arena;
    auto str = [&](std::string_view s) {
      Value* v = arena.make(Value::Kind::Str);
      v->text = arena.copy(s);
      return v;
    };
    auto integer = [&](int64_t i) {
      Value* v = arena.make(Value::Kind::Int);
      v->integer = i;
      return v;
    };
    auto dict = [&](std::vector<std::pair<const Value*, const Value*>> items) {
      Value* d = arena.make(Value::Kind::Dict);
      for (auto& [k, x] : items) arena.append(d->entries, ValuePair{k, x});
      return d;
    };
    Value* f = arena.make(Value::Kind::Float);
    f->real = 0.25;
    Value* b = arena.make(Value::Kind::Bool);
    b->boolean = false;
    Value* none = arena.make(Value::Kind::None);
    Value* big = arena.make(Value::Kind::BigInt);
    big->text = arena.copy("123456789012345678901234567890");
    Value* bytes = arena.make(Value::Kind::Bytes);
    bytes->text = arena.copy(std::string_view("\x01\xab", 2));
    Value* tuple = arena.make(Value::Kind::Tuple);
    arena.append(tuple->items, static_cast<const Value*>(integer(1)));
    arena.append(tuple->items, static_cast<const Value*>(str("a")));
    // A pathlib-like object (no dict state) and a dataclass-like one.
    Value* path = arena.make(Value::Kind::Object);
    path->text = arena.copy("pathlib.PosixPath");
    arena.append(path->items, static_cast<const Value*>(str("/tmp/x")));
    Value* moe = arena.make(Value::Kind::Object);
    moe->text = arena.copy("modern_llm.MoEConfig");
    moe->state = dict({{str("num_experts"), integer(4)}, {str("top_k"), integer(2)}});
    Value* tensor = arena.make(Value::Kind::Tensor);
    tensor->index = 0;

    const Value* cfg = dict({{str("vocab_size"), integer(64)},
                             {str("d_model"), integer(32)},
                             {str("n_layers"), integer(2)},
                             {str("n_heads"), integer(4)},
                             {str("ffn_hidden_size"), integer(80)},
                             {str("max_seq_len"), integer(32)},
                             {str("dropout"), f},
                             {str("use_rope"), b},
                             {str("rope_scaling"), none},
                             {str("moe_config"), moe},
                             {str("big"), big},
                             {str("raw"), bytes},
                             {str("pair"), tuple},
                             {str("where"), path},
                             {str("t"), tensor},
                             {integer(7), str("int key")}});
    const ModelConfig c = ModelConfig::fromValue(cfg);
    QCOMPARE(c.dropout, 0.25);
    QVERIFY(!c.useRope);
    QVERIFY(!c.ropeScaling);
    QCOMPARE(c.moeConfig.dump(), std::string(R"({"num_experts":4,"top_k":2})"));
    QCOMPARE(
        c.extra.dump(),
        std::string(
            R"({"big":"123456789012345678901234567890","raw":"01ab","pair":[1,"a"],"where":null,"t":null,"7":"int key"})"));

    // A dataclass config (an Object whose state is the dict).
    Value* obj = arena.make(Value::Kind::Object);
    obj->text = arena.copy("modern_llm.config.ModernLLMConfig");
    obj->state = cfg;
    QCOMPARE(ModelConfig::fromValue(obj).dModel, int64_t(32));

    QCOMPARE(errorOf([&] { ModelConfig::fromValue(nullptr); }), std::string("config: missing"));
    QCOMPARE(errorOf([&] { ModelConfig::fromValue(str("x")); }),
             std::string("config: expected a dict, got str"));
    QCOMPARE(errorOf([&] {
               ModelConfig::fromValue(dict({{str("d_model"), integer(32)}}));
             }),
             std::string("config: missing vocab_size"));

    // Cycles end in null instead of recursing forever.
    Value* loop = arena.make(Value::Kind::List);
    arena.append(loop->items, static_cast<const Value*>(loop));
    QCOMPARE(plainJson(loop).dump(), std::string("[null]"));
  }

  // ---- parameters ----------------------------------------------------

  void layout_data() {
    QTest::addColumn<std::string>("changes");
    QTest::addColumn<bool>("sinks");
    QTest::addColumn<int>("sinkCount");
    QTest::addColumn<int>("kvDim");
    QTest::addColumn<bool>("tied");
    QTest::newRow("sinks, tied") << std::string("{}") << true << 2 << 32 << true;
    QTest::newRow("3 sinks") << std::string(R"({"num_attention_sinks": 3})") << true << 3 << 32
                             << true;
    QTest::newRow("no sinks") << std::string(R"({"use_attention_sinks": false})") << false << 0
                              << 32 << true;
    QTest::newRow("untied") << std::string(R"({"tie_embeddings": false})") << true << 2 << 32
                            << false;
    QTest::newRow("gqa 2, no sinks, untied")
        << std::string(
               R"({"use_gqa": true, "gqa_groups": 2, "use_attention_sinks": false, "tie_embeddings": false})")
        << false << 0 << 16 << false;
  }
  void layout() {
    QFETCH(std::string, changes);
    QFETCH(bool, sinks);
    QFETCH(int, sinkCount);
    QFETCH(int, kvDim);
    QFETCH(bool, tied);
    const ModelConfig config = configWith(json::parse(changes));
    Decoder model(config);
    const auto stateLayout = layoutOf(model.stateDict());
    const auto expectedState = modelMdLayout(sinks, sinkCount, kvDim, /*withHead=*/true);
    QCOMPARE(describe(stateLayout), describe(expectedState));
    const auto paramLayout = layoutOf(model.namedParameters());
    const auto expectedParams = modelMdLayout(sinks, sinkCount, kvDim, /*withHead=*/!tied);
    QCOMPARE(describe(paramLayout), describe(expectedParams));

    // The LibTorch-free layout says the same.
    std::vector<std::pair<std::string, Shape>> fromConfig;
    for (const auto& p : stateDictLayout(config)) fromConfig.push_back({p.name, p.shape});
    QCOMPARE(describe(fromConfig), describe(expectedState));
    fromConfig.clear();
    for (const auto& p : stateDictLayout(config, /*includeTiedHead=*/false))
      fromConfig.push_back({p.name, p.shape});
    QCOMPARE(describe(fromConfig), describe(expectedParams));

    // The optimizer sees module().parameters() in namedParameters()' order.
    const auto params = model.module().parameters();
    const auto named = model.namedParameters();
    QCOMPARE(params.size(), named.size());
    for (size_t i = 0; i < params.size(); ++i) QVERIFY(params[i].is_same(named[i].second));
    int64_t count = 0;
    for (const auto& [n, s] : expectedParams) {
      int64_t numel = 1;
      for (int64_t d : s) numel *= d;
      count += numel;
    }
    QCOMPARE(model.parameterCount(), count);
    for (const auto& [name, t] : model.stateDict()) QVERIFY(t.requires_grad());
    QCOMPARE(model.module().named_buffers().size(), size_t(2));  // RoPE tables only
  }

  void tiedHead() {
    Decoder model(ModelConfig::fromJson(smallConfig()));
    for (const auto& [name, t] : model.namedParameters()) QVERIFY(name != "lm_head.weight");
    const auto state = model.stateDict();
    QCOMPARE(state.back().first, std::string("lm_head.weight"));
    QCOMPARE(state.front().first, std::string("token_embed.weight"));
    QVERIFY(state.back().second.is_same(state.front().second));
    QCOMPARE(state.back().second.data_ptr(), state.front().second.data_ptr());
    // Logits come from the embedding matrix.
    model.train(false);
    torch::NoGradGuard noGrad;
    const auto ids = fixedInput();
    const auto before = model.forward(ids);
    state.front().second.mul_(2.0);
    QVERIFY(!torch::allclose(before, model.forward(ids)));
    Decoder untied(configWith({{"tie_embeddings", false}}));
    const auto us = untied.stateDict();
    QVERIFY(!us.back().second.is_same(us.front().second));
  }

  void init() {
    json big = smallConfig();
    big["d_model"] = 256;
    big["ffn_hidden_size"] = 512;
    big["vocab_size"] = 512;
    big["initializer_range"] = 0.05;
    big["num_attention_sinks"] = 64;
    torch::manual_seed(7);
    Decoder model(ModelConfig::fromJson(big));
    for (const auto& [name, p] : model.namedParameters()) {
      const QByteArray what = QByteArray::fromStdString(name);
      if (name.find("norm.weight") != std::string::npos) {
        QVERIFY2(torch::equal(p, torch::ones_like(p)), what);
      } else if (name.find(".bias") != std::string::npos) {
        QVERIFY2(torch::equal(p, torch::zeros_like(p)), what);
      } else {
        const double want = name.find("sink_states") != std::string::npos ? 0.02 : 0.05;
        const double std = p.std().item<double>(), mean = p.mean().item<double>();
        QVERIFY2(std::abs(std / want - 1.0) < 0.05, what + " std " + QByteArray::number(std));
        QVERIFY2(std::abs(mean) < want * 0.05, what + " mean " + QByteArray::number(mean));
      }
    }
    // Deterministic under the seed; another seed gives other values.
    torch::manual_seed(3);
    Decoder a(ModelConfig::fromJson(smallConfig()));
    torch::manual_seed(3);
    Decoder b(ModelConfig::fromJson(smallConfig()));
    torch::manual_seed(4);
    Decoder c(ModelConfig::fromJson(smallConfig()));
    const auto sa = a.stateDict(), sb = b.stateDict(), sc = c.stateDict();
    for (size_t i = 0; i < sa.size(); ++i) {
      QVERIFY(torch::equal(sa[i].second, sb[i].second));
      if (sa[i].first.find("norm") == std::string::npos &&
          sa[i].first.find("bias") == std::string::npos)
        QVERIFY(!torch::equal(sa[i].second, sc[i].second));
    }
  }

  // ---- state dict loading --------------------------------------------

  void loadStateDict() {
    torch::manual_seed(1);
    Decoder source(configWith({{"use_gqa", true}, {"gqa_groups", 2}}));
    roughen(source);
    torch::manual_seed(2);
    Decoder target(configWith({{"use_gqa", true}, {"gqa_groups", 2}}));
    source.train(false);
    target.train(false);
    const auto ids = fixedInput();
    torch::NoGradGuard noGrad;

    // torch.compile's prefix, float64 values: stripped and converted.
    NamedTensors entries;
    for (const auto& [name, t] : source.stateDict())
      entries.emplace_back("_orig_mod." + name, t.to(torch::kDouble));
    target.loadStateDict(entries);
    for (const auto& [name, t] : target.stateDict()) QCOMPARE(t.scalar_type(), torch::kFloat);
    QVERIFY(torch::equal(source.forward(ids), target.forward(ids)));
    // Copies, not shared tensors.
    QVERIFY(!target.stateDict().front().second.is_same(source.stateDict().front().second));
    QVERIFY(target.stateDict().back().second.is_same(target.stateDict().front().second));
  }

  void loadStateDictStrict() {
    Decoder model(ModelConfig::fromJson(smallConfig()));
    const auto good = model.stateDict();
    const auto before = model.stateDict().at(1).second.clone();

    NamedTensors bad;
    for (const auto& [name, t] : good) {
      if (name == "blocks.1.ffn.proj.bias" || name == "final_norm.weight") continue;  // missing
      if (name == "blocks.0.attn.k_proj.weight") {
        bad.emplace_back(name, torch::zeros({16, 32}));
        continue;
      }
      if (name == "blocks.0.attn.sink_states") {
        bad.emplace_back(name, torch::zeros({3, 32}));
        continue;
      }
      bad.emplace_back(name, t);
    }
    bad.emplace_back("blocks.2.attn.q_proj.weight", torch::zeros({32, 32}));
    bad.emplace_back("rope.inv_freq", torch::zeros({4}));
    const std::string message = errorOf([&] { model.loadStateDict(bad); });
    QCOMPARE(message,
             std::string(
                 "state dict does not match the model:\n"
                 "  missing keys (2): blocks.1.ffn.proj.bias, final_norm.weight\n"
                 "  unexpected keys (2): blocks.2.attn.q_proj.weight, rope.inv_freq\n"
                 "  mis-shaped keys (2): blocks.0.attn.sink_states: expected [2, 32], got [3, 32]; "
                 "blocks.0.attn.k_proj.weight: expected [32, 32], got [16, 32]"));
    // Nothing was copied.
    QVERIFY(torch::equal(model.stateDict().at(1).second, before));

    // A tied model needs lm_head.weight too (the state dict lists both).
    NamedTensors noHead(good.begin(), good.end() - 1);
    QCOMPARE(
        errorOf([&] { model.loadStateDict(noHead); }),
        std::string("state dict does not match the model:\n  missing keys (1): lm_head.weight"));
    // ... and it must equal the embedding.
    NamedTensors untiedValues;
    for (const auto& [name, t] : good) untiedValues.emplace_back(name, t.clone());
    untiedValues.back().second.add_(1.0);
    QCOMPARE(errorOf([&] { model.loadStateDict(untiedValues); }),
             std::string("state dict does not match the model: tie_embeddings is set but "
                         "lm_head.weight differs from token_embed.weight"));

    // Many missing keys are abbreviated.
    NamedTensors empty;
    const std::string many = errorOf([&] { model.loadStateDict(empty); });
    QVERIFY2(many.find("missing keys (25): token_embed.weight, blocks.0.attn.sink_states") !=
                     std::string::npos &&
                 many.find(", ... and 5 more") != std::string::npos,
             many.c_str());
  }

  // ---- refusals --------------------------------------------------------

  void moeRefused() {
    const ModelConfig c =
        configWith({{"use_moe", true}, {"moe_config", {{"num_experts", 4}, {"top_k", 2}}}});
    QCOMPARE(errorOf([&] { Decoder d(c); }),
             std::string("MoE layers (use_moe) cannot be run or trained; the checkpoint can still "
                         "be browsed and compared"));
    // Its layout is still known for browsing.
    const auto layout = stateDictLayout(c);
    QCOMPARE(layout.at(7).name, std::string("blocks.0.ffn_norm.weight"));
    QCOMPARE(layout.at(8).name, std::string("blocks.0.ffn.router.router.weight"));
    QCOMPARE(layout.at(8).shape, (Shape{4, 32}));
    QCOMPARE(layout.at(9).name, std::string("blocks.0.ffn.experts.0.0.weight"));
    QCOMPARE(layout.at(9).shape, (Shape{128, 32}));
    QCOMPARE(layout.at(12).name, std::string("blocks.0.ffn.experts.0.2.bias"));
    QCOMPARE(layout.at(12).shape, (Shape{32}));
    QCOMPARE(layout.at(24).name, std::string("blocks.0.ffn.experts.3.2.bias"));
    QCOMPARE(layout.at(25).name, std::string("blocks.1.attn.sink_states"));
    QCOMPARE(errorOf([] {
               stateDictLayout(configWith({{"use_moe", true}}));
             }),
             std::string("moe_config.num_experts must be set (an int > 0) when use_moe is set"));
  }

  void tooLongRefused() {
    Decoder model(ModelConfig::fromJson(smallConfig()));
    torch::NoGradGuard noGrad;
    QCOMPARE(model.forward(torch::zeros({1, 32}, torch::kLong)).sizes().vec(), (Shape{1, 32, 64}));
    QCOMPARE(errorOf([&] {
               model.forward(torch::zeros({1, 33}, torch::kLong));
             }),
             std::string("decoder: input length 33 exceeds max_seq_len (32)"));
  }

  // ---- training behaviour ----------------------------------------------

  void dropoutAndGradients() {
    torch::manual_seed(5);
    Decoder model(configWith({{"dropout", 0.2}}));
    roughen(model);
    const auto ids = fixedInput();
    model.train(true);
    QVERIFY(model.isTraining());
    const auto a = model.forward(ids), b = model.forward(ids);
    QVERIFY(!torch::allclose(a, b));  // dropout is on
    const auto loss = Decoder::loss(a, ids);
    loss.backward();
    for (const auto& [name, p] : model.namedParameters()) {
      QVERIFY2(p.grad().defined() && p.grad().abs().sum().item<double>() > 0, name.c_str());
    }
    model.train(false);
    torch::NoGradGuard noGrad;
    QVERIFY(torch::equal(model.forward(ids), model.forward(ids)));
  }

  void lossMatchesDefinition() {
    // Random logits; labels with -100: the loss is the mean over the rest of
    // -log softmax at the next token.
    torch::manual_seed(9);
    const auto logits = torch::randn({2, 5, 7});
    auto labels = torch::randint(0, 7, {2, 5}, torch::kLong);
    labels.index_put_({0, 3}, -100);
    double sum = 0;
    int n = 0;
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 4; ++t) {
        const int64_t y = labels[b][t + 1].item<int64_t>();
        if (y == -100) continue;
        sum += -torch::log_softmax(logits[b][t], 0)[y].item<double>();
        ++n;
      }
    QVERIFY(std::abs(Decoder::loss(logits, labels).item<double>() - sum / n) < 1e-6);
  }

  void deviceHelpers() {
    QCOMPARE(pickDevice("cpu"), c10::Device(c10::kCPU));
    if (!torch::cuda::is_available()) {
      QCOMPARE(pickDevice("auto"), c10::Device(c10::kCPU));
      QVERIFY(errorOf([] { pickDevice("cuda"); }).find("CUDA is not available") !=
              std::string::npos);
    } else {
      QCOMPARE(pickDevice("auto"), c10::Device(c10::kCUDA, 0));
    }
    QCOMPARE(errorOf([] { pickDevice("tpu"); }),
             std::string("unknown device 'tpu' (expected auto, cpu, cuda or cuda:N)"));
    QCOMPARE(parsePrecision("bf16"), Precision::BF16);
    QCOMPARE(parsePrecision("fp16"), Precision::FP16);
    QCOMPARE(parsePrecision("fp32"), Precision::FP32);
    QCOMPARE(errorOf([] { parsePrecision("int8"); }),
             std::string("unknown precision 'int8' (expected fp32, bf16 or fp16)"));
    const auto cpuPlan = autocastPlan(Precision::BF16, c10::Device(c10::kCPU));
    QVERIFY(!cpuPlan.dtype);
    QCOMPARE(cpuPlan.note,
             std::string("bf16 autocast is only used on CUDA; running in fp32 on the CPU"));
    const auto cudaPlan = autocastPlan(Precision::BF16, c10::Device(c10::kCUDA, 0));
    QCOMPARE(*cudaPlan.dtype, c10::kBFloat16);
    QVERIFY(cudaPlan.note.empty());
    QVERIFY(!autocastPlan(Precision::FP32, c10::Device(c10::kCUDA, 0)).dtype);
    { AutocastGuard noOp(cpuPlan); }
    Decoder model(ModelConfig::fromJson(smallConfig()));
    model.to(pickDevice("cpu"));
    QCOMPARE(model.device(), c10::Device(c10::kCPU));
  }

  // ---- against the Python reference -------------------------------------

  void interop_data() {
    QTest::addColumn<std::string>("name");
    for (const auto& c : interopCases()) QTest::newRow(c.name.c_str()) << c.name;
  }
  void interop() {
    QFETCH(std::string, name);
    runInterop();
    QVERIFY2(m_interopError.isEmpty(), qPrintable(m_interopError));
    const InteropResult& r = m_interop.at(name);
    QVERIFY2(r.layoutErrors.isEmpty(), qPrintable(r.layoutErrors.join("\n")));
    const double maxDiff = (r.cppLogits - r.refLogits).abs().max().item<double>();
    const double scale = r.refLogits.abs().max().item<double>();
    qInfo("%s: max |logits diff| %.3g (max |logit| %.3g, std %.3g), loss C++ %.7f ref %.7f",
          name.c_str(), maxDiff, scale, r.refLogits.std().item<double>(), r.cppLoss, r.refLoss);
    QVERIFY2(maxDiff <= 1e-5, qPrintable(QString("max diff %1").arg(maxDiff)));
    QVERIFY(std::abs(r.cppLoss - r.refLoss) <= 1e-5);
    QVERIFY(std::isfinite(r.cppLoss));
  }
};

QTEST_GUILESS_MAIN(TestModel)
#include "tst_model.moc"
