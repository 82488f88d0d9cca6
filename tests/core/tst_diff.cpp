// Checkpoint diff against torch: pairs written by make_diff_fixtures.py, the
// expected numbers computed by diff_reference.py in float64 from the files.
// The library is checked directly and through `ckptscope-cli diff --json`.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "ckpt/analysis/diff.h"
#include "ckpt/format/error.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;

namespace {

const std::string kDir = std::string(CKPT_FIXTURE_DIR) + "/diff";

const json& expectations() {
  static const json doc = ckpt::test::readJsonFile(kDir + "/expected.json");
  return doc;
}

const json& pair(const std::string& name) {
  for (const json& p : expectations()["pairs"])
    if (p["name"] == name) return p;
  throw std::runtime_error("no pair " + name);
}

// A number from the reference: {"$float": "nan"|"inf"|"-inf"} or plain.
double refNumber(const json& j) {
  if (j.is_object()) {
    const std::string s = j["$float"].get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? std::numeric_limits<double>::infinity()
                      : -std::numeric_limits<double>::infinity();
  }
  return j.get<double>();
}

// Relative 1e-9 (summation order differs between torch and us); NaN and
// infinities must match exactly.
bool close(double want, double got, double rel = 1e-9) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return want == got;
  return std::fabs(want - got) <= rel * std::max(std::fabs(want), std::fabs(got)) + 1e-300;
}

std::string show(double d) {
  return QString::number(d, 'g', 17).toStdString();
}

std::unique_ptr<ckpt::CheckpointFile> open(const std::string& rel) {
  return ckpt::CheckpointFile::open(kDir + "/" + rel);
}

ckpt::CheckpointDiff diffPair(const json& p, const ckpt::DiffOptions& o = {}) {
  const auto a = open(p["a"].get<std::string>());
  const auto b = open(p["b"].get<std::string>());
  return ckpt::diffCheckpoints(*a, *b, o);
}

std::vector<std::string> names(const json& list) {
  std::vector<std::string> out;
  for (const json& x : list)
    out.push_back(x.is_string() ? x.get<std::string>() : x["name"].get<std::string>());
  return out;
}

ckpt::test::ProcessResult cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, {}, 120000);
}

}  // namespace

class TestDiff : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(expectations()["pairs"].size() >= 8); }

  void againstTorch_data() {
    QTest::addColumn<QString>("name");
    for (const json& p : expectations()["pairs"]) {
      const std::string n = p["name"].get<std::string>();
      QTest::newRow(n.c_str()) << QString::fromStdString(n);
    }
  }
  void againstTorch() {
    QFETCH(QString, name);
    const json& p = pair(name.toStdString());
    const json& want = p["expected"];
    const ckpt::CheckpointDiff d = diffPair(p);
    QVERIFY(!d.cancelled);
    QCOMPARE(d.errorCount(), size_t(0));

    // Structure.
    QCOMPARE(d.added, names(want["added"]));
    QCOMPARE(d.removed, names(want["removed"]));
    QCOMPARE(d.changedShape.size(), want["changed_shape"].size());
    for (size_t i = 0; i < d.changedShape.size(); ++i) {
      const json& w = want["changed_shape"][i];
      QCOMPARE(d.changedShape[i].name, w["name"].get<std::string>());
      QCOMPARE(d.changedShape[i].shapeA, w["a"].get<std::vector<int64_t>>());
      QCOMPARE(d.changedShape[i].shapeB, w["b"].get<std::vector<int64_t>>());
    }
    std::vector<std::string> dtypeChanged;
    for (const ckpt::TensorDiff& t : d.tensors)
      if (t.dtypeA != t.dtypeB)
        dtypeChanged.push_back(t.name + ":" + std::string(ckpt::dtypeName(t.dtypeA)) + "->" +
                               std::string(ckpt::dtypeName(t.dtypeB)));
    std::vector<std::string> wantDtype;
    for (const json& w : want["changed_dtype"])
      wantDtype.push_back(w["name"].get<std::string>() + ":" + w["a"].get<std::string>() + "->" +
                          w["b"].get<std::string>());
    QCOMPARE(dtypeChanged, wantDtype);
    QCOMPARE(d.stateKeyA, want["state_key_a"].get<std::string>());
    QCOMPARE(d.stateKeyB, want["state_key_b"].get<std::string>());

    // Every matching tensor, in a's order, with torch's float64 numbers.
    QCOMPARE(d.tensors.size(), want["tensors"].size());
    size_t i = 0;
    for (const auto& [tname, w] : want["tensors"].items()) {
      const ckpt::TensorDiff& t = d.tensors[i++];
      QCOMPARE(t.name, tname);
      QVERIFY2(t.computed, tname.c_str());
      QCOMPARE(t.numel, w["numel"].get<uint64_t>());
      QCOMPARE(t.finitePairs, w["finite_pairs"].get<uint64_t>());
      QCOMPARE(t.nanA, w["nan_a"].get<uint64_t>());
      QCOMPARE(t.infA, w["inf_a"].get<uint64_t>());
      QCOMPARE(t.nanB, w["nan_b"].get<uint64_t>());
      QCOMPARE(t.infB, w["inf_b"].get<uint64_t>());
      QCOMPARE(t.tiedTo, w["tied_to"].is_null() ? std::string() : w["tied_to"].get<std::string>());
      QCOMPARE(t.layer.block, w["block"].get<int>());
      QCOMPARE(std::string(ckpt::layerModuleName(t.layer.module)), w["module"].get<std::string>());
      const std::pair<const char*, double> metrics[] = {
          {"rel_l2", t.relL2},      {"cosine", t.cosine}, {"max_abs", t.maxAbs},
          {"mean_abs", t.meanAbs},  {"norm_a", t.normA},  {"norm_b", t.normB},
          {"norm_diff", t.normDiff}};
      for (const auto& [key, got] : metrics) {
        const double expected = refNumber(w[key]);
        const std::string msg =
            tname + " " + key + ": torch " + show(expected) + ", ours " + show(got);
        QVERIFY2(close(expected, got), msg.c_str());
      }
    }

    // Per block and per block x module.
    std::map<std::string, double> blocks, modules;
    for (const ckpt::LayerAggregate& g : d.blocks) blocks[std::to_string(g.block)] = g.relL2();
    for (const ckpt::LayerAggregate& g : d.modules)
      modules[std::to_string(g.block) + ":" + std::string(ckpt::layerModuleName(g.module))] =
          g.relL2();
    QCOMPARE(blocks.size(), want["blocks"].size());
    QCOMPARE(modules.size(), want["modules"].size());
    for (const auto& [k, w] : want["blocks"].items()) {
      QVERIFY2(blocks.count(k), k.c_str());
      QVERIFY2(close(refNumber(w), blocks[k]),
               ("block " + k + ": " + show(refNumber(w)) + " vs " + show(blocks[k])).c_str());
    }
    for (const auto& [k, w] : want["modules"].items()) {
      QVERIFY2(modules.count(k), k.c_str());
      QVERIFY2(close(refNumber(w), modules[k]), ("module " + k).c_str());
    }

    // Metadata: the keys that differ, in order, with both values.
    QCOMPARE(d.metadata.size(), want["metadata"].size());
    for (size_t m = 0; m < d.metadata.size(); ++m) {
      const ckpt::MetadataChange& c = d.metadata[m];
      const json& w = want["metadata"][m];
      QCOMPARE(c.key, w["key"].get<std::string>());
      QCOMPARE(c.inA, w["in_a"].get<bool>());
      QCOMPARE(c.inB, w["in_b"].get<bool>());
      if (c.inA) QVERIFY2(ckpt::test::compareJson(w["a"], c.aJson).empty(), (c.key + " a").c_str());
      if (c.inB) QVERIFY2(ckpt::test::compareJson(w["b"], c.bJson).empty(), (c.key + " b").c_str());
    }
  }

  // The pairs cover what they claim to (so that againstTorch cannot pass
  // on fixtures that lost their point).
  void fixturesCoverTheCases() {
    const json& s = pair("structure")["expected"];
    QVERIFY(!s["added"].empty() && !s["removed"].empty() && !s["changed_shape"].empty());
    QCOMPARE(s["changed_dtype"].size(), size_t(3));
    const json& sp = pair("special")["expected"]["tensors"];
    QCOMPARE(refNumber(sp["blocks.0.ffn.proj.bias"]["rel_l2"]),
             std::numeric_limits<double>::infinity());
    QCOMPARE(refNumber(sp["blocks.0.ffn.gate.bias"]["rel_l2"]), 0.0);
    QVERIFY(std::isnan(refNumber(sp["blocks.2.attn_norm.weight"]["rel_l2"])));
    QCOMPARE(sp["blocks.1.attn_norm.weight"]["nan_b"].get<int>(), 2);
    QVERIFY(pair("perturbed")["expected"]["tensors"]["lm_head.weight"]["tied_to"] ==
            "token_embed.weight");
    const ckpt::CheckpointDiff d = diffPair(pair("structure"));
    QVERIFY(d.compiledPrefixB && !d.compiledPrefixA);
    const ckpt::CheckpointDiff sd = diffPair(pair("special"));
    QCOMPARE(sd.notes.size(), size_t(1));
    QVERIFY(sd.notes[0].find("lm_head.weight is tied to token_embed.weight in a only") !=
            std::string::npos);
  }

  // One thread or two, small chunks or large: the same numbers (bit for bit
  // across threads, each tensor is summed by one of them in a fixed order).
  void threadsAndChunks() {
    const json& p = pair("perturbed");
    ckpt::DiffOptions one, two, tiny;
    one.threads = 1;
    two.threads = 2;
    tiny.threads = 2;
    tiny.chunkElements = 256;
    const auto d1 = diffPair(p, one), d2 = diffPair(p, two), d3 = diffPair(p, tiny);
    QCOMPARE(d1.tensors.size(), d2.tensors.size());
    for (size_t i = 0; i < d1.tensors.size(); ++i) {
      QCOMPARE(d1.tensors[i].relL2, d2.tensors[i].relL2);
      QCOMPARE(d1.tensors[i].meanAbs, d2.tensors[i].meanAbs);
      QVERIFY(close(d1.tensors[i].relL2, d3.tensors[i].relL2, 1e-12));
      QCOMPARE(d1.tensors[i].maxAbs, d3.tensors[i].maxAbs);
    }
    QCOMPARE(d1.bytesCompared, d2.bytesCompared);
    QCOMPARE(d1.top.size(), std::min<size_t>(20, d1.tensors.size()));
    QCOMPARE(d1.top, d1.topByRelL2(20));
    for (size_t i = 1; i < d1.top.size(); ++i)
      QVERIFY(d1.tensors[d1.top[i - 1]].relL2 >= d1.tensors[d1.top[i]].relL2);
    QVERIFY(d1.bytesCompared > 0);
  }

  void progressAndCancel() {
    const json& p = pair("perturbed");
    std::vector<std::pair<size_t, size_t>> calls;
    ckpt::DiffOptions o;
    o.chunkElements = 256;
    o.progress = [&calls](size_t done, size_t total) {
      calls.emplace_back(done, total);
      return true;
    };
    const auto d = diffPair(p, o);
    QVERIFY(!d.cancelled);
    QVERIFY(calls.size() >= 2);
    for (size_t i = 1; i < calls.size(); ++i) {
      QVERIFY(calls[i].first >= calls[i - 1].first);
      QCOMPARE(calls[i].second, calls[0].second);
    }
    QCOMPARE(calls.back().first, calls.back().second);
    QCOMPARE(size_t(d.bytesCompared), calls.back().second);

    // Cancel at the first report: a result marked cancelled, not an error,
    // with nothing computed.
    ckpt::DiffOptions c;
    c.progress = [](size_t, size_t) { return false; };
    const auto dc = diffPair(p, c);
    QVERIFY(dc.cancelled);
    QCOMPARE(dc.errorCount(), size_t(0));
    for (const auto& t : dc.tensors) QVERIFY(!t.computed);
    QVERIFY(dc.blocks.empty());
    QVERIFY(!dc.metadata.empty());  // structure and metadata need no tensor bytes

    // Cancel part way: some tensors done, the rest not.
    int left = 3;
    ckpt::DiffOptions c2;
    c2.threads = 1;
    c2.chunkElements = 256;
    c2.progress = [&left](size_t, size_t) { return --left > 0; };
    const auto dp = diffPair(p, c2);
    QVERIFY(dp.cancelled);
    size_t done = 0;
    for (const auto& t : dp.tensors) done += t.computed ? 1 : 0;
    QVERIFY(done < dp.tensors.size());
  }

  void classifyNames_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("block");
    QTest::addColumn<QString>("module");
    auto row = [](const char* n, int b, const char* m) {
      QTest::newRow(n) << QString(n) << b << QString(m);
    };
    row("token_embed.weight", -1, "embedding");
    row("blocks.0.attn.sink_states", 0, "sinks");
    row("blocks.11.attn.q_proj.weight", 11, "q");
    row("blocks.3.attn.k_proj.weight", 3, "k");
    row("blocks.3.attn.v_proj.weight", 3, "v");
    row("blocks.3.attn.out_proj.weight", 3, "out");
    row("blocks.2.attn_norm.weight", 2, "attn_norm");
    row("blocks.2.ffn_norm.weight", 2, "ffn_norm");
    row("blocks.2.ffn.gate.weight", 2, "ffn_gate");
    row("blocks.2.ffn.gate.bias", 2, "ffn_gate");
    row("blocks.2.ffn.proj.weight", 2, "ffn_proj");
    row("blocks.7.ffn.router.router.weight", 7, "other");
    row("blocks.7.ffn.experts.e.0.weight", 7, "ffn_gate");
    row("blocks.7.ffn.experts.e.2.bias", 7, "ffn_proj");
    row("final_norm.weight", -1, "final_norm");
    row("lm_head.weight", -1, "head");
    row("model.layers.5.self_attn.o_proj.weight", 5, "out");
    row("blocks.x.attn.q_proj.weight", -1, "q");
    row("blocks.99999999999999999999.ffn.gate.weight", -1, "ffn_gate");
    row("something.else", -1, "other");
  }
  void classifyNames() {
    QFETCH(QString, name);
    QFETCH(int, block);
    QFETCH(QString, module);
    const ckpt::LayerKey k = ckpt::classifyTensorName(name.toStdString());
    QCOMPARE(k.block, block);
    QCOMPARE(QString::fromUtf8(ckpt::layerModuleName(k.module).data()), module);
  }

  // ----------------------------------------------------------------- CLI

  void cliJson_data() { againstTorch_data(); }
  void cliJson() {
    QFETCH(QString, name);
    const json& p = pair(name.toStdString());
    const json& want = p["expected"];
    const QString a = QString::fromStdString(kDir + "/" + p["a"].get<std::string>());
    const QString b = QString::fromStdString(kDir + "/" + p["b"].get<std::string>());
    const auto r = cli({"diff", a, b, "--json"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.err.isEmpty());
    const json got = json::parse(r.out.toStdString());
    for (const char* key : {"a", "b", "added", "removed", "changed_shape", "tensors", "metadata"})
      QVERIFY2(got.contains(key), key);
    QCOMPARE(got["a"].get<std::string>(), a.toStdString());
    QCOMPARE(got["b"].get<std::string>(), b.toStdString());
    QCOMPARE(names(got["added"]), names(want["added"]));
    QCOMPARE(names(got["removed"]), names(want["removed"]));
    QCOMPARE(names(got["changed_shape"]), names(want["changed_shape"]));
    QCOMPARE(got["tensors"].size(), want["tensors"].size());
    size_t i = 0;
    for (const auto& [tname, w] : want["tensors"].items()) {
      const json& t = got["tensors"][i++];
      QCOMPARE(t["name"].get<std::string>(), tname);
      for (const char* key : {"rel_l2", "cosine", "max_abs", "mean_abs"}) {
        const double expected = refNumber(w[key]);
        // JSON has no NaN or infinity: those are null.
        if (!std::isfinite(expected)) {
          QVERIFY2(t[key].is_null(), (tname + " " + key).c_str());
          continue;
        }
        QVERIFY2(close(expected, t[key].get<double>()), (tname + " " + key).c_str());
      }
    }
    QCOMPARE(got["metadata"].size(), want["metadata"].size());
    for (size_t m = 0; m < want["metadata"].size(); ++m) {
      const json& w = want["metadata"][m];
      const json& g = got["metadata"][m];
      QCOMPARE(g["key"].get<std::string>(), w["key"].get<std::string>());
      QVERIFY2(ckpt::test::compareJson(w["a"], g["a"]).empty(),
               g["key"].get<std::string>().c_str());
      QVERIFY2(ckpt::test::compareJson(w["b"], g["b"]).empty(),
               g["key"].get<std::string>().c_str());
      QCOMPARE(g.contains("only"), w["in_a"] != w["in_b"]);
    }
  }

  void cliTop() {
    const json& p = pair("perturbed");
    const QString a = QString::fromStdString(kDir + "/" + p["a"].get<std::string>());
    const QString b = QString::fromStdString(kDir + "/" + p["b"].get<std::string>());
    // The reference's three largest rel_l2, largest first.
    std::vector<std::pair<double, std::string>> rels;
    for (const auto& [n, w] : p["expected"]["tensors"].items())
      rels.emplace_back(refNumber(w["rel_l2"]), n);
    std::sort(rels.begin(), rels.end(),
              [](const auto& x, const auto& y) { return x.first > y.first; });
    const auto r = cli({"diff", a, b, "--json", "--top", "3"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    QCOMPARE(got["tensors"].size(), size_t(3));
    for (size_t i = 0; i < 3; ++i)
      QCOMPARE(got["tensors"][i]["name"].get<std::string>(), rels[i].second);

    const auto t = cli({"diff", a, b, "--top=3"});
    QCOMPARE(t.exitCode, 0);
    QVERIFY(t.out.contains("top 3 of 36 tensors by relative change"));
    const int first = t.out.indexOf(QByteArray::fromStdString("  " + rels[0].second + " "));
    const int second = t.out.indexOf(QByteArray::fromStdString("  " + rels[1].second + " "));
    QVERIFY(first > 0 && second > first);
    QVERIFY(!t.out.contains(QByteArray::fromStdString("  " + rels[3].second + " ")));
    QVERIFY(t.out.contains("tied: lm_head.weight = token_embed.weight"));
    QVERIFY(t.out.contains("per block"));
    QVERIFY(t.out.contains("metadata: 7 keys differ"));
    QVERIFY(t.out.contains("git_commit"));
  }

  void cliText() {
    const json& p = pair("structure");
    const auto r = cli({"diff", QString::fromStdString(kDir + "/" + p["a"].get<std::string>()),
                        QString::fromStdString(kDir + "/" + p["b"].get<std::string>())});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains(
        "structure: 34 tensors in both, 1 added, 1 removed, 1 changed shape, 3 changed dtype"));
    QVERIFY(r.out.contains("  + blocks.0.attn.extra_scale"));
    QVERIFY(r.out.contains("  - blocks.2.ffn.proj.bias"));
    QVERIFY(r.out.contains("  ~ blocks.1.attn.sink_states  [2, 16] float32 -> [3, 16] float32"));
    QVERIFY(r.out.contains("  ~ blocks.0.ffn.gate.weight  float32 -> bfloat16"));
    QVERIFY(r.out.contains("keys of b carry _orig_mod."));
    QVERIFY(r.out.contains("config.num_attention_sinks"));

    const json& s = pair("special");
    const auto rs = cli({"diff", QString::fromStdString(kDir + "/" + s["a"].get<std::string>()),
                         QString::fromStdString(kDir + "/" + s["b"].get<std::string>())});
    QCOMPARE(rs.exitCode, 0);
    QVERIFY(
        rs.out.contains("blocks.1.attn_norm.weight: 2 NaN in b; left out of its metrics (14 of 16 "
                        "pairs compared)"));
    QVERIFY(rs.out.contains("final_norm.weight: 1 inf in a, 1 inf in b"));
  }

  void wrappedModels_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("compiled");
    QTest::addColumn<QString>("said");
    QTest::newRow("ddp") << "ddp" << false << "keys of b carry module. (stripped)";
    QTest::newRow("ddp_compiled") << "ddp_compiled" << true
                                  << "keys of b carry module. and _orig_mod. (stripped)";
    QTest::newRow("compiled_ddp") << "compiled_ddp" << true
                                  << "keys of b carry module. and _orig_mod. (stripped)";
  }
  void wrappedModels() {
    // A checkpoint saved from a DDP-wrapped (and compiled) model against its
    // unwrapped sibling: every name matches (the numbers are checked against
    // torch in againstTorch / cliJson), and the wrapping is reported.
    QFETCH(QString, name);
    QFETCH(bool, compiled);
    QFETCH(QString, said);
    const json& p = pair(name.toStdString());
    const ckpt::CheckpointDiff d = diffPair(p);
    QVERIFY(d.added.empty() && d.removed.empty() && d.changedShape.empty());
    QCOMPARE(d.tensors.size(), p["plain_names"].size());
    QVERIFY(d.ddpPrefixB && !d.ddpPrefixA);
    QCOMPARE(d.compiledPrefixB, compiled);
    const QString a = QString::fromStdString(kDir + "/" + p["a"].get<std::string>());
    const QString b = QString::fromStdString(kDir + "/" + p["b"].get<std::string>());
    auto r = cli({"diff", a, b});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains(said.toUtf8()), r.out.left(400).constData());
    QVERIFY(r.out.contains(", 0 added, 0 removed, 0 changed shape"));

    // info shows the plain names, the state dict as torch holds it otherwise.
    r = cli({"info", b, "--json"});
    QCOMPARE(r.exitCode, 0);
    const json info = json::parse(r.out.toStdString());
    QCOMPARE(info["model_state"]["names"], p["plain_names"]);
    QCOMPARE(info["model_state"]["ddp_wrapped"].get<bool>(), true);
    QCOMPARE(info["model_state"]["compiled"].get<bool>(), compiled);
    const json& raw = p["raw_keys_b"];
    for (const json& t : info["tensors"]) {
      if (!t.contains("name")) continue;  // optimizer state
      QCOMPARE(t["path"][0].get<std::string>(), std::string("model_state"));
      const std::string key = t["path"][1].get<std::string>();  // as stored
      QVERIFY2(std::find(raw.begin(), raw.end(), json(key)) != raw.end(), key.c_str());
    }
    r = cli({"info", b});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains(compiled ? "saved from a DDP-wrapped / compiled model"
                                    : "saved from a DDP-wrapped model"));
    QVERIFY(r.out.contains("model_state.blocks.0.attn.q_proj.weight"));
    // No tensor is listed under its wrapped key (only the summary line names the prefixes).
    QVERIFY(!r.out.contains("model_state.module.") && !r.out.contains("model_state._orig_mod."));
  }

  void cliErrors() {
    const QString good = QString::fromStdString(kDir + "/perturbed/a.pt");
    const QString missing = QString::fromStdString(kDir + "/no-such-file.pt");
    auto r = cli({"diff", good, missing});
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.out.isEmpty());
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY(r.err.contains(missing.toUtf8()));

    // Not a checkpoint at all.
    const QString junk = QString::fromStdString(kDir + "/expected.json");
    r = cli({"diff", junk, good});
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY(r.err.contains(junk.toUtf8()));

    for (const QStringList& args :
         {QStringList{"diff", good}, QStringList{"diff", good, good, good},
          QStringList{"diff", good, good, "--top"}, QStringList{"diff", good, good, "--top", "0"},
          QStringList{"diff", good, good, "--top", "x"},
          QStringList{"diff", good, good, "--bogus"}}) {
      r = cli(args);
      QCOMPARE(r.exitCode, 2);
      QVERIFY(r.err.contains("usage: ckptscope-cli diff A B"));
    }
  }

  // Every hostile fixture of the reader tests, against itself and against a
  // good file: the library throws nothing but FormatError, the CLI exits 0
  // or 1 (one line per problem, naming the file), never crashes.
  void hostileInputs() {
    const QDir dir(QStringLiteral(CKPT_FIXTURE_DIR) + "/hostile");
    const QStringList files = dir.entryList({"*.pt", "*.safetensors"}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 20);
    const QString good = QString::fromStdString(kDir + "/perturbed/a.pt");
    int opened = 0;
    for (const QString& name : files) {
      const QString path = dir.filePath(name);
      std::unique_ptr<ckpt::CheckpointFile> f;
      try {
        f = ckpt::CheckpointFile::open(path.toStdString());
      } catch (const ckpt::FormatError&) {
      }
      if (f) {
        ++opened;
        const auto g = ckpt::CheckpointFile::open(good.toStdString());
        try {
          (void)ckpt::diffCheckpoints(*f, *f);
          (void)ckpt::diffCheckpoints(*g, *f);
        } catch (const ckpt::FormatError&) {
        }
      }
      for (const QStringList& args :
           {QStringList{"diff", path, path}, QStringList{"diff", good, path, "--json"}}) {
        const auto r = cli(args);
        QVERIFY2(r.exitCode == 0 || r.exitCode == 1,
                 qPrintable(name + ": exit " + QString::number(r.exitCode)));
        if (r.exitCode == 1) {
          QVERIFY2(r.err.startsWith("ckptscope-cli: "), qPrintable(name + ": " + r.err));
          QVERIFY2(r.err.contains(path.toUtf8()), qPrintable(name + ": " + r.err));
        }
      }
    }
    QVERIFY(opened >= 3);  // the control files at least
  }

  // A tensor whose bytes are missing (a truncated copy): the rest is still
  // compared, the tensor carries an error naming the file, the CLI exits 1.
  void truncatedFile() {
    const std::string src = kDir + "/legacy/a.pt";  // legacy: tensor bytes at the end of the file
    const QString cut = QDir::temp().filePath("ckpt_diff_truncated.pt");
    QFile::remove(cut);
    QVERIFY(QFile::copy(QString::fromStdString(src), cut));
    QFile f(cut);
    QVERIFY(f.open(QIODevice::ReadWrite));
    QVERIFY(f.resize(f.size() - 64));
    f.close();
    std::unique_ptr<ckpt::CheckpointFile> a;
    try {
      a = ckpt::CheckpointFile::open(cut.toStdString());
    } catch (const ckpt::FormatError& e) {
      QSKIP(qPrintable(QString("the reader rejects the whole file: ") + e.what()));
    }
    const auto b = open("legacy/b.pt");
    const ckpt::CheckpointDiff d = ckpt::diffCheckpoints(*a, *b);
    QVERIFY(d.errorCount() >= 1);
    QVERIFY(d.errorCount() < d.tensors.size());
    for (const auto& t : d.tensors)
      if (!t.error.empty())
        QVERIFY2(t.error.find(cut.toStdString()) != std::string::npos, t.error.c_str());
    const auto r = cli({"diff", cut, QString::fromStdString(kDir + "/legacy/b.pt"), "--json"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.contains(cut.toUtf8()));
    const json got = json::parse(r.out.toStdString());
    size_t errors = 0;
    for (const json& t : got["tensors"]) errors += t.contains("error") ? 1 : 0;
    QCOMPARE(errors, d.errorCount());
    QFile::remove(cut);
  }
};

QTEST_GUILESS_MAIN(TestDiff)
#include "tst_diff.moc"
