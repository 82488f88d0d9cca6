// Checkpoints of many files opened as one: what ckptscope-cli says about the
// layouts make_sharded.py wrote with python3-torch, checked against torch's
// own shapes and dtypes, and consolidated files torch.equal to the state
// dict they were made from.
#include <QRegularExpression>
#include <QtTest>

#include <fstream>
#include <tuple>

#include "ckpt/analysis/tensor_stats.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_data.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;

namespace {

using Run = ckpt::test::ProcessResult;

const QString kDir = QStringLiteral(CKPT_FIXTURE_DIR "/sharded");

const QString kScript = QStringLiteral(CKPT_SOURCE_DIR "/tests/python/make_sharded.py");

Run cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, {}, 60000);
}

// make_sharded.py serve: `check` for each consolidated file, one torch
// import for the whole test ("OK n" when every tensor torch.equal's the
// reference). Started on first use, ended with the test case.
class TorchChecker {
 public:
  ~TorchChecker() {
    if (m_p.state() == QProcess::NotRunning) return;
    m_p.closeWriteChannel();
    if (!m_p.waitForFinished(10000)) m_p.kill();
  }
  Run check(const QString& consolidated, const QStringList& extra) {
    Run r;
    if (m_p.state() == QProcess::NotRunning) {
      m_p.start(QStringLiteral(CKPT_TORCH_PYTHON), {kScript, "serve", kDir});
      if (!m_p.waitForStarted(30000)) {
        r.err = "cannot start " CKPT_TORCH_PYTHON;
        return r;
      }
    }
    json req{{"consolidated", consolidated.toStdString()}};
    for (int i = 0; i + 1 < extra.size(); i += 2)
      req[extra[i].mid(2).toStdString()] = extra[i + 1].toStdString();
    m_p.write(QByteArray::fromStdString(req.dump() + "\n"));
    QByteArray line;
    while (!line.endsWith('\n')) {
      if (!m_p.canReadLine() && !m_p.waitForReadyRead(120000)) {
        r.err = "make_sharded.py serve gave no answer: " + m_p.readAllStandardError();
        return r;
      }
      line += m_p.readLine();
    }
    const json answer = json::parse(line.toStdString());
    r.exitCode = answer["rc"].get<int>();
    r.out = QByteArray::fromStdString(answer["out"].get<std::string>());
    return r;
  }

 private:
  QProcess m_p;
};

json manifest() {
  return ckpt::test::readJsonFile(kDir.toStdString() + "/manifest.json");
}

QByteArray fileBytes(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

}  // namespace

class TestSharded : public QObject {
  Q_OBJECT

 private slots:
  // info --json: every logical tensor with torch's dtype and shape, in the
  // writer's order; the incomplete ones marked, with an error.
  void infoJson_data() {
    QTest::addColumn<QString>("layout");
    const json layouts = manifest()["layouts"];
    for (const auto& [name, spec] : layouts.items())
      if (spec.contains("tensors")) QTest::newRow(name.c_str()) << QString::fromStdString(name);
  }
  void infoJson() {
    QFETCH(QString, layout);
    const json want = manifest()["layouts"][layout.toStdString()];
    const Run r = cli({"info", kDir + "/" + layout, "--json"});
    // info exits 1 for a checkpoint with tensors it cannot read, after the
    // whole document.
    bool anyIncomplete = false;
    for (const json& t : want["tensors"]) anyIncomplete |= t["incomplete"].get<bool>();
    QCOMPARE(r.exitCode, anyIncomplete ? 1 : 0);
    const json got = json::parse(r.out.toStdString());
    QCOMPARE(got["format"].get<std::string>(), std::string("sharded"));
    QVERIFY(got.contains("sharded"));
    QCOMPARE(got["tensors"].size(), want["tensors"].size());
    for (size_t i = 0; i < want["tensors"].size(); ++i) {
      const json& w = want["tensors"][i];
      const json& g = got["tensors"][i];
      const std::string name = w["name"].get<std::string>();
      QVERIFY2(g["path"] == w["path"], (g["path"].dump() + " vs " + w["path"].dump()).c_str());
      const bool incomplete = w["incomplete"].get<bool>();
      QVERIFY2(g.value("incomplete", false) == incomplete, name.c_str());
      QVERIFY2(g.contains("error") == incomplete, name.c_str());
      if (incomplete) continue;
      QCOMPARE(g["dtype"].get<std::string>(), w["dtype"].get<std::string>());
      QVERIFY2(g["shape"] == w["shape"], name.c_str());
      QVERIFY2(!g["chunks"].empty(), name.c_str());
    }
    // FSDP's LOCAL_STATE_DICT: flat buffers marked as such, nothing else.
    for (size_t i = 0; i < want["tensors"].size(); ++i) {
      const std::string name = want["tensors"][i]["name"].get<std::string>();
      const bool flat = want.contains("flat") && std::find(want["flat"].begin(), want["flat"].end(),
                                                           json(name)) != want["flat"].end();
      QVERIFY2(got["tensors"][i].value("flat", false) == flat, name.c_str());
    }
    if (want.contains("files"))
      QCOMPARE(got["sharded"]["files"].size() +
                   (got["sharded"]["entry"].get<std::string>().empty() ? 0 : 1),
               want["files"].get<size_t>());
    if (want.contains("ranks"))
      QCOMPARE(got["sharded"]["ranks"].get<int>(), want["ranks"].get<int>());
  }

  // The layout across ranks as make_sharded.py split it (FSDP's dim-0 rule:
  // ceil(rows / ranks) per rank): 10 rows over 3 ranks are 4 + 4 + 2, 2 rows
  // are 1 + 1 + an empty chunk, a replicated tensor is stored once.
  void dcpLayout() {
    const Run r = cli({"info", kDir + "/dcp_ws3", "--json"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    std::map<std::string, json> byName;
    for (const json& t : got["tensors"]) byName[t["path"].back().get<std::string>()] = t;
    auto rows = [&](const std::string& name) {
      std::vector<std::pair<int, int>> out;
      for (const json& c : byName.at(name)["chunks"])
        out.emplace_back(c["offsets"][0].get<int>(), c["sizes"][0].get<int>());
      return out;
    };
    QCOMPARE(rows("token_embed.weight"),
             (std::vector<std::pair<int, int>>{{0, 4}, {4, 4}, {8, 2}}));
    QCOMPARE(rows("blocks.0.attn.sink_states"),
             (std::vector<std::pair<int, int>>{{0, 1}, {1, 1}, {2, 0}}));
    QCOMPARE(rows("position_ids"), (std::vector<std::pair<int, int>>{{0, 5}}));
    QCOMPARE(byName.at("token_embed.weight")["chunks"][2]["file"].get<std::string>(),
             std::string("__2_0.distcp"));
    QCOMPARE(byName.at("token_embed.weight")["chunks"][2]["rank"].get<int>(), 2);
    QCOMPARE(byName.at("scale")["chunks"].size(), size_t(1));
    QVERIFY(byName.at("scale")["shape"].empty());
    QCOMPARE(got["sharded"]["summary"].get<std::string>(),
             std::string("sharded: DCP, 3 ranks, 4 files"));
  }

  // FSDP's rank files: each chunk where the ShardedTensor metadata or the
  // DTensor placements put it (torch.chunk's split: 10 rows over 3 ranks
  // are 4 + 4 + 2; FSDP's ShardedTensor leaves an empty chunk out, DTensor
  // keeps it), buffers stored on every rank kept once.
  void fsdpLayout() {
    auto byName = [](const QString& layout) {
      const Run r = cli({"info", kDir + "/" + layout, "--json"});
      std::map<std::string, json> out;
      if (r.exitCode != 0) return out;
      const json doc = json::parse(r.out.toStdString());  // alive through the loop
      for (const json& t : doc["tensors"]) out[t["path"].back().get<std::string>()] = t;
      return out;
    };
    auto chunks = [](const json& t) {
      std::vector<std::tuple<int, int, std::string>> out;
      for (const json& c : t["chunks"])
        out.emplace_back(c["offsets"][0].get<int>(), c["sizes"][0].get<int>(),
                         c["file"].get<std::string>());
      return out;
    };
    using C = std::vector<std::tuple<int, int, std::string>>;
    const auto st = byName("fsdp_ws3");
    QVERIFY(!st.empty());
    QCOMPARE(chunks(st.at("token_embed.weight")),
             (C{{0, 4, "model_rank0.pt"}, {4, 4, "model_rank1.pt"}, {8, 2, "model_rank2.pt"}}));
    QCOMPARE(chunks(st.at("blocks.0.attn.sink_states")),
             (C{{0, 1, "model_rank0.pt"}, {1, 1, "model_rank1.pt"}}));
    QCOMPARE(chunks(st.at("position_ids")), (C{{0, 5, "model_rank0.pt"}}));
    QCOMPARE(st.at("position_ids")["replicas"].get<int>(), 2);
    QCOMPARE(st.at("token_embed.weight")["chunks"][2]["rank"].get<int>(), 2);

    const auto dt = byName("fsdp_dtensor_ws3");
    QVERIFY(!dt.empty());
    QCOMPARE(chunks(dt.at("blocks.0.attn.sink_states")),
             (C{{0, 1, "model_rank0.pt"}, {1, 1, "model_rank1.pt"}, {2, 0, "model_rank2.pt"}}));
    QCOMPARE(chunks(dt.at("blocks.1.ffn.gate.bias")),
             (C{{0, 3, "model_rank0.pt"}, {3, 3, "model_rank1.pt"}, {6, 1, "model_rank2.pt"}}));
    QCOMPARE(chunks(dt.at("final_norm.weight")).size(), size_t(3));
    // Replicate(): the same chunk on every rank, kept once.
    QCOMPARE(chunks(dt.at("position_ids")), (C{{0, 5, "model_rank0.pt"}}));
    QCOMPARE(dt.at("position_ids")["replicas"].get<int>(), 2);
    QCOMPARE(dt.at("scale")["chunks"].size(), size_t(1));  // 0-dim: no offsets to list
    QCOMPARE(dt.at("scale")["replicas"].get<int>(), 2);

    // LOCAL_STATE_DICT: one flat buffer, each rank's share of it.
    const auto local = byName("fsdp_local_ws2");
    QVERIFY(!local.empty());
    const json& flat = local.at("_fsdp_wrapped_module._flat_param");
    QVERIFY(flat["flat"].get<bool>());
    const int numel = flat["shape"][0].get<int>();
    const int per = (numel + 1) / 2;
    QCOMPARE(chunks(flat), (C{{0, per, "model_rank0.pt"}, {per, numel - per, "model_rank1.pt"}}));
    QVERIFY(!local.at("_fsdp_wrapped_module.position_ids").contains("flat"));
  }

  // DeepSpeed's fp32 masters: runs of the ranks' flat partitions, each cut
  // into boxes of the tensor. token_embed.weight (10 x 6) under ZeRO-3 at 3
  // ranks: 20 elements from each rank; under ZeRO-2 at 2 ranks (group 0:
  // 163 elements padded to 164, 82 per rank) q_proj.weight's 36 elements
  // start at 72: 10 in rank 0, 26 in rank 1 from its start.
  void deepSpeedLayout() {
    auto chunksOf = [](const QString& layout, const std::string& name) {
      using Box = std::tuple<std::vector<int>, std::vector<int>, std::string, int>;
      std::vector<Box> out;
      const Run r = cli({"info", kDir + "/" + layout, "--json"});
      if (r.exitCode != 0) return out;
      const json doc = json::parse(r.out.toStdString());  // alive through the loop
      for (const json& t : doc["tensors"])
        if (t["path"] == json::array({"model", name}))
          for (const json& c : t["chunks"])
            out.emplace_back(c["offsets"].get<std::vector<int>>(),
                             c["sizes"].get<std::vector<int>>(), c["file"].get<std::string>(),
                             c.value("source_offset", 0));
      return out;
    };
    using B = std::vector<std::tuple<std::vector<int>, std::vector<int>, std::string, int>>;
    const std::string r0 = "zero_pp_rank_0_mp_rank_00_optim_states.pt";
    const std::string r1 = "zero_pp_rank_1_mp_rank_00_optim_states.pt";
    const std::string r2 = "zero_pp_rank_2_mp_rank_00_optim_states.pt";
    QCOMPARE(chunksOf("ds_z3_ws3/global_step1000", "token_embed.weight"),
             (B{{{0, 0}, {3, 6}, r0, 0},
                {{3, 0}, {1, 2}, r0, 18},
                {{3, 2}, {1, 4}, r1, 0},
                {{4, 0}, {2, 6}, r1, 4},
                {{6, 0}, {1, 4}, r1, 16},
                {{6, 4}, {1, 2}, r2, 0},
                {{7, 0}, {3, 6}, r2, 2}}));
    QCOMPARE(chunksOf("ds_z2_ws2/global_step1000", "blocks.0.attn.q_proj.weight"),
             (B{{{0, 0}, {1, 6}, "bf16_" + r0, 72},
                {{1, 0}, {1, 4}, "bf16_" + r0, 78},
                {{1, 4}, {1, 2}, "bf16_" + r1, 0},
                {{2, 0}, {4, 6}, "bf16_" + r1, 2}}));
    const Run r = cli({"info", kDir + "/ds_z3_ws3/global_step1000", "--json"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    QCOMPARE(got["sharded"]["summary"].get<std::string>(),
             std::string("sharded: DeepSpeed, 3 ranks, 6 files"));
  }

  // consolidate: one file torch loads, every tensor equal to the original.
  void consolidate_data() {
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("out");
    QTest::addColumn<QStringList>("options");
    QTest::newRow("hf safetensors -> pt") << "hf_st"
                                          << "out.pt" << QStringList{};
    QTest::newRow("hf index file -> pt") << "hf_st/model.safetensors.index.json"
                                         << "out.pt" << QStringList{};
    QTest::newRow("hf bin -> safetensors") << "hf_bin"
                                           << "out.safetensors" << QStringList{};
    QTest::newRow("hf bin -> pt bf16") << "hf_bin"
                                       << "out.pt" << QStringList{"--dtype", "bf16"};
    QTest::newRow("hf safetensors -> safetensors fp32 model-only")
        << "hf_st"
        << "out.safetensors" << QStringList{"--dtype", "fp32", "--model-only"};
    QTest::newRow("dcp 3 ranks -> pt model-only") << "dcp_ws3"
                                                  << "out.pt" << QStringList{"--model-only"};
    QTest::newRow("dcp .metadata file -> safetensors")
        << "dcp_ws2/.metadata"
        << "out.safetensors" << QStringList{"--model-only"};
    QTest::newRow("dcp 1 rank -> pt bf16 model-only")
        << "dcp_ws1"
        << "out.pt" << QStringList{"--dtype", "bf16", "--model-only"};
    QTest::newRow("dcp old flattening -> whole tree") << "dcp_ws2_old"
                                                      << "out.pt" << QStringList{};
    QTest::newRow("dcp 3 ranks -> whole tree") << "dcp_ws3"
                                               << "out.pt" << QStringList{};
    QTest::newRow("fsdp 1 rank -> pt") << "fsdp_ws1"
                                       << "out.pt" << QStringList{};
    QTest::newRow("fsdp 2 ranks -> safetensors") << "fsdp_ws2"
                                                 << "out.safetensors" << QStringList{};
    QTest::newRow("fsdp 3 ranks -> pt bf16") << "fsdp_ws3"
                                             << "out.pt" << QStringList{"--dtype", "bf16"};
    QTest::newRow("fsdp DTensor 1 rank -> pt") << "fsdp_dtensor_ws1"
                                               << "out.pt" << QStringList{};
    QTest::newRow("fsdp DTensor 2 ranks -> pt") << "fsdp_dtensor_ws2"
                                                << "out.pt" << QStringList{};
    QTest::newRow("fsdp DTensor 3 ranks -> safetensors") << "fsdp_dtensor_ws3"
                                                         << "out.safetensors" << QStringList{};
    // DeepSpeed: the fp32 masters as zero_to_fp32.py rebuilds them.
    QTest::newRow("deepspeed zero-2 1 rank -> pt model-only")
        << "ds_z2_ws1/global_step1000"
        << "out.pt" << QStringList{"--model-only"};
    QTest::newRow("deepspeed zero-2 bf16 2 ranks via latest -> pt model-only")
        << "ds_run"
        << "out.pt" << QStringList{"--model-only"};
    QTest::newRow("deepspeed zero-2 3 ranks -> safetensors model-only")
        << "ds_z2_ws3/global_step1000"
        << "out.safetensors" << QStringList{"--model-only"};
    QTest::newRow("deepspeed zero-2 3 ranks -> whole tree") << "ds_z2_ws3/global_step1000"
                                                            << "out.pt" << QStringList{};
    QTest::newRow("deepspeed zero-3 1 rank -> pt model-only")
        << "ds_z3_ws1/global_step1000"
        << "out.pt" << QStringList{"--model-only"};
    QTest::newRow("deepspeed zero-3 2 ranks -> pt model-only")
        << "ds_z3_ws2/global_step1000"
        << "out.pt" << QStringList{"--model-only"};
    QTest::newRow("deepspeed zero-3 3 ranks -> safetensors model-only bf16")
        << "ds_z3_ws3/global_step1000"
        << "out.safetensors" << QStringList{"--model-only", "--dtype", "bf16"};
    // LOCAL_STATE_DICT: the flat buffer as FSDP held it, rebuilt from the ranks.
    QTest::newRow("fsdp local 2 ranks -> pt") << "fsdp_local_ws2"
                                              << "out.pt" << QStringList{};
  }
  void consolidate() {
    QFETCH(QString, layout);
    QFETCH(QString, out);
    QFETCH(QStringList, options);
    QTemporaryDir tmp;
    const QString target = tmp.filePath(out);
    const Run r = cli(QStringList{"consolidate", kDir + "/" + layout, target} + options);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QStringList check;
    if (const int at = int(options.indexOf("--dtype")); at >= 0)
      check << "--dtype" << options[at + 1];
    // The whole tree of a DCP checkpoint keeps the state dict under "model".
    if ((layout.startsWith("dcp") || layout.startsWith("ds_")) && !options.contains("--model-only"))
      check << "--key"
            << "model";
    // The flat buffers of LOCAL_STATE_DICT against the flat parameter
    // make_sharded.py made them from.
    const bool local = layout == "fsdp_local_ws2";
    if (local)
      check << "--ref"
            << "fsdp_local_ws2.expected.pt";
    const Run c = m_torch.check(target, check);
    QVERIFY2(c.exitCode == 0, (c.out + c.err).constData());
    QVERIFY2(c.out.startsWith(local ? "OK 2" : "OK 14"), c.out.constData());
  }

  void consolidateNeverOverwrites() {
    QTemporaryDir tmp;
    const QString target = tmp.filePath("taken.pt");
    {
      QFile f(target);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("mine");
    }
    const Run r = cli({"consolidate", kDir + "/hf_st", target});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("exists"), r.err.constData());
    QCOMPARE(fileBytes(target), QByteArray("mine"));
    QCOMPARE(QDir(tmp.path()).entryList(QDir::Files | QDir::Hidden).size(),
             1);  // no temporary left
  }

  // A consolidate that cannot read every tensor writes nothing.
  void consolidateIncompleteFails() {
    QTemporaryDir tmp;
    const QString target = tmp.filePath("out.pt");
    const Run r = cli({"consolidate", kDir + "/hostile/hf_missing", target});
    QCOMPARE(r.exitCode, 1);
    const std::string missing =
        manifest()["layouts"]["hostile/hf_missing"]["missing"].get<std::string>();
    QVERIFY2(r.err.contains(missing.c_str()), r.err.constData());
    QVERIFY(!QFile::exists(target));
    QCOMPARE(QDir(tmp.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
  }

  // diff between layouts of the same state dict, and against the plain file.
  void diffZero_data() {
    QTest::addColumn<QString>("a");
    QTest::addColumn<QString>("b");
    QTest::newRow("hf st vs hf bin") << "hf_st"
                                     << "hf_bin";
    QTest::newRow("hf st vs reference.pt") << "hf_st"
                                           << "reference.pt";
    QTest::newRow("dcp 2 ranks vs dcp 3 ranks") << "dcp_ws2"
                                                << "dcp_ws3";
    QTest::newRow("dcp 3 ranks vs reference.pt") << "dcp_ws3"
                                                 << "reference.pt";
    QTest::newRow("dcp old vs hf bin") << "dcp_ws2_old"
                                       << "hf_bin";
    QTest::newRow("fsdp 2 ranks vs fsdp 3 ranks") << "fsdp_ws2"
                                                  << "fsdp_ws3";
    QTest::newRow("fsdp DTensor 2 ranks vs DTensor 3 ranks") << "fsdp_dtensor_ws2"
                                                             << "fsdp_dtensor_ws3";
    QTest::newRow("fsdp 1 rank vs reference.pt") << "fsdp_ws1"
                                                 << "reference.pt";
    QTest::newRow("fsdp DTensor 3 ranks vs dcp 2 ranks") << "fsdp_dtensor_ws3"
                                                         << "dcp_ws2";
    QTest::newRow("deepspeed zero-2 2 ranks vs 3 ranks") << "ds_z2_ws2/global_step1000"
                                                         << "ds_z2_ws3/global_step1000";
    QTest::newRow("deepspeed zero-3 2 ranks vs 3 ranks") << "ds_z3_ws2/global_step1000"
                                                         << "ds_z3_ws3/global_step1000";
    QTest::newRow("deepspeed zero-3 3 ranks vs reference.pt") << "ds_z3_ws3/global_step1000"
                                                              << "reference.pt";
    QTest::newRow("deepspeed zero-2 1 rank vs fsdp 2 ranks") << "ds_z2_ws1/global_step1000"
                                                             << "fsdp_ws2";
  }
  void diffZero() {
    QFETCH(QString, a);
    QFETCH(QString, b);
    const Run r = cli({"diff", kDir + "/" + a, kDir + "/" + b, "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const json d = json::parse(r.out.toStdString());
    QVERIFY(d["added"].empty());
    QVERIFY(d["removed"].empty());
    QVERIFY(d["changed_shape"].empty());
    QCOMPARE(d["tensors"].size(), size_t(14));
    for (const json& t : d["tensors"]) {
      QVERIFY2(!t.contains("error"), t.dump().c_str());
      QCOMPARE(t["max_abs"].get<double>(), 0.0);
      QCOMPARE(t["rel_l2"].get<double>(), 0.0);
    }
  }

  // Hostile descriptions: a clear error naming the file and the key; nothing
  // outside the folder is opened.
  void hostile_data() {
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QStringList>("mustSay");
    const json m = manifest()["layouts"];
    QTest::newRow("path escape") << "hostile/hf_escape"
                                 << QStringList{"weight_map['token_embed.weight']",
                                                "'../../etc/passwd'",
                                                "model.safetensors.index.json",
                                                "weight_map['scale']", "'/etc/passwd'"};
    QTest::newRow("missing shard")
        << "hostile/hf_missing"
        << QStringList{
               QString::fromStdString(m["hostile/hf_missing"]["missing"].get<std::string>()),
               "is missing"};
    QTest::newRow("dcp chunk outside the shape")
        << "hostile/dcp_outside"
        << QStringList{"tensor model.token_embed.weight", "__1_0.distcp", "offsets [8, 0]",
                       "lies outside the global shape [10, 6]"};
    QTest::newRow("dcp chunks overlap")
        << "hostile/dcp_overlap"
        << QStringList{"tensor model.token_embed.weight", "__1_0.distcp", "overlaps"};
    QTest::newRow("dcp slice past the file's end")
        << "hostile/dcp_pastend"
        << QStringList{"tensor model.token_embed.weight", "__1_0.distcp",
                       "runs past the end of the file"};
    QTest::newRow("dcp rank file missing")
        << "hostile/dcp_missing" << QStringList{"__1_0.distcp is missing"};
    QTest::newRow("fsdp chunk outside the shape")
        << "hostile/fsdp_outside"
        << QStringList{"tensor token_embed.weight", "model_rank1.pt", "offsets [8, 0]",
                       "lies outside the global shape [10, 6]"};
    QTest::newRow("fsdp chunks overlap")
        << "hostile/fsdp_overlap"
        << QStringList{"tensor token_embed.weight", "model_rank1.pt", "overlaps"};
    QTest::newRow("fsdp chunk past its record's end")
        << "hostile/fsdp_pastend"
        << QStringList{"tensor token_embed.weight", "model_rank1.pt", "holds 16 bytes",
                       "120 bytes"};
    QTest::newRow("fsdp rank file missing")
        << "hostile/fsdp_missing"
        << QStringList{"model_rank1.pt is missing", "'token_embed.weight'"};
    QTest::newRow("deepspeed rank's optimizer file missing")
        << "hostile/ds_missing/global_step1000"
        << QStringList{"zero_pp_rank_1_mp_rank_00_optim_states.pt is missing",
                       "'token_embed.weight'"};
    QTest::newRow("key not in shard")
        << "hostile/hf_nokey"
        << QStringList{"weight_map['ghost.weight']",
                       QString::fromStdString(m["hostile/hf_nokey"]["file"].get<std::string>()),
                       "has no tensor 'ghost.weight'"};
  }
  void hostile() {
    QFETCH(QString, layout);
    QFETCH(QStringList, mustSay);
    const Run r = cli({"verify", kDir + "/" + layout});
    QCOMPARE(r.exitCode, 1);
    const QByteArray all = r.out + r.err;
    for (const QString& s : mustSay)
      QVERIFY2(all.contains(s.toUtf8()), (s + " not in: " + all).toUtf8().constData());
    // The rest is still shown.
    const Run info = cli({"info", kDir + "/" + layout, "--json"});
    QCOMPARE(info.exitCode, 1);
    const json got = json::parse(info.out.toStdString());
    size_t readable = 0;
    for (const json& t : got["tensors"]) readable += t.contains("error") ? 0 : 1;
    QVERIFY(readable > 0);
  }

  // The index's names are checked before anything is opened: a link inside
  // the folder that leads out is refused as well.
  void pathInsideFolder() {
    QTemporaryDir tmp;
    QVERIFY(QFile::link("/etc/hostname", tmp.filePath("link.safetensors")));
    QVERIFY(QDir(tmp.path()).mkdir("sub"));
    QFile(tmp.filePath("sub/a.safetensors")).open(QIODevice::WriteOnly);
    const std::string dir = tmp.path().toStdString();
    QCOMPARE(QString::fromStdString(ckpt::pathInsideFolder(dir, "sub/a.safetensors", "k")),
             QString::fromStdString(dir + "/sub/a.safetensors"));
    for (const char* bad :
         {"../x.safetensors", "/etc/passwd", "sub/../../x", "link.safetensors", ""}) {
      try {
        (void)ckpt::pathInsideFolder(dir, bad, "weight_map['w']");
        QFAIL(bad);
      } catch (const ckpt::FormatError& e) {
        QVERIFY2(std::string(e.what()).find("weight_map['w']") != std::string::npos, e.what());
      }
    }
  }

  // ls: one row per logical checkpoint, its files not listed on their own.
  void lsOneRow() {
    const Run r = cli({"ls", kDir, "--json"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    std::map<std::string, json> byFile;
    for (const json& run : got["runs"])
      for (const json& c : run["checkpoints"]) byFile[c["file"].get<std::string>()] = c;
    QVERIFY(byFile.count("hf_st/model.safetensors.index.json"));
    QVERIFY(byFile.count("hf_bin/pytorch_model.bin.index.json"));
    const json& st = byFile["hf_st/model.safetensors.index.json"];
    QCOMPARE(st["format"].get<std::string>(), std::string("sharded"));
    QCOMPARE(st["sharded"]["files"].get<int>(), 3);
    QCOMPARE(st["sharded"]["summary"].get<std::string>(),
             std::string("sharded: Hugging Face, 3 files"));
    QCOMPARE(st["size"].get<uint64_t>(),
             uint64_t(QFileInfo(kDir + "/hf_st/model-00001-of-00002.safetensors").size() +
                      QFileInfo(kDir + "/hf_st/model-00002-of-00002.safetensors").size() +
                      QFileInfo(kDir + "/hf_st/model.safetensors.index.json").size()));
    for (const auto& [file, c] : byFile) {
      QVERIFY2(file.find("model-0000") == std::string::npos, file.c_str());
      QVERIFY2(file.find("pytorch_model-0000") == std::string::npos, file.c_str());
    }
    // A DCP folder is one row: its step from the bytes item, its rank files not listed.
    QVERIFY(byFile.count("dcp_ws3"));
    QCOMPARE(byFile["dcp_ws3"]["sharded"]["summary"].get<std::string>(),
             std::string("sharded: DCP, 3 ranks, 4 files"));
    QCOMPARE(byFile["dcp_ws3"]["step"].get<int>(), 1000);
    for (const auto& [file, c] : byFile)
      QVERIFY2(file.find(".distcp") == std::string::npos, file.c_str());
    // FSDP's rank files: the folder is one row.
    QVERIFY(byFile.count("fsdp_ws3"));
    QCOMPARE(byFile["fsdp_ws3"]["sharded"]["summary"].get<std::string>(),
             std::string("sharded: FSDP, 3 ranks, 3 files"));
    QCOMPARE(byFile["fsdp_ws3"]["format"].get<std::string>(), std::string("sharded"));
    for (const auto& [file, c] : byFile)
      QVERIFY2(file.find("model_rank") == std::string::npos, file.c_str());
    // Steps from folder names where the files say none; the run is the
    // folder holding the checkpoint folders.
    QCOMPARE(byFile["fsdp_run/checkpoint-700"]["step"].get<int>(), 700);
    QCOMPARE(byFile["fsdp_run/step_300"]["step"].get<int>(), 300);
    for (const json& run : got["runs"])
      for (const json& c : run["checkpoints"])
        if (c["file"].get<std::string>().rfind("fsdp_run/", 0) == 0)
          QCOMPARE(run["name"].get<std::string>(), std::string("fsdp_run"));
    // DeepSpeed: each tag folder a row, its step from global_steps; the
    // folder with `latest` is not listed again.
    QVERIFY(byFile.count("ds_run/global_step1000"));
    QVERIFY(byFile.count("ds_run/global_step500"));
    QVERIFY(!byFile.count("ds_run"));
    QCOMPARE(byFile["ds_run/global_step500"]["step"].get<int>(), 500);
    QCOMPARE(byFile["ds_run/global_step1000"]["step"].get<int>(), 1000);
    QCOMPARE(byFile["ds_z3_ws3/global_step1000"]["sharded"]["summary"].get<std::string>(),
             std::string("sharded: DeepSpeed, 3 ranks, 6 files"));
    for (const auto& [file, c] : byFile)
      QVERIFY2(file.find("_states.pt") == std::string::npos, file.c_str());
    // A gap in the rank numbers is a missing file, known from the names alone.
    QCOMPARE(byFile["hostile/fsdp_missing"]["sharded"]["summary"].get<std::string>(),
             std::string("sharded: FSDP, 3 ranks, 3 files, 1 missing"));
    QCOMPARE(byFile["hostile/fsdp_missing"]["sharded"]["missing"].get<int>(), 1);
    QCOMPARE(byFile["fsdp_ws3"]["sharded"]["missing"].get<int>(), 0);
    QCOMPARE(byFile["hostile/ds_missing/global_step1000"]["sharded"]["summary"].get<std::string>(),
             std::string("sharded: DeepSpeed, 3 ranks, 4 files, 1 missing"));
    // The last rank's file gone: no gap in the names, the metadata says how
    // many ranks wrote it (FSDP's shard metadata, DCP's .metadata,
    // DeepSpeed's dp_world_size).
    QCOMPARE(byFile["hostile/fsdp_lastmissing"]["sharded"]["summary"].get<std::string>(),
             std::string("sharded: FSDP, 3 ranks, 3 files, 1 missing"));
    QCOMPARE(byFile["hostile/fsdp_lastmissing"]["sharded"]["ranks"].get<int>(), 3);
    QCOMPARE(byFile["hostile/dcp_lastmissing"]["sharded"]["summary"].get<std::string>(),
             std::string("sharded: DCP, 3 ranks, 4 files, 1 missing"));
    QCOMPARE(
        byFile["hostile/ds_lastmissing/global_step1000"]["sharded"]["summary"].get<std::string>(),
        std::string("sharded: DeepSpeed, 3 ranks, 4 files, 1 missing"));
    QVERIFY(byFile["hostile/dcp_missing"]["sharded"]["summary"].get<std::string>().find(
                "1 missing") != std::string::npos);
    QVERIFY(byFile["hostile/hf_missing/model.safetensors.index.json"]["sharded"]["summary"]
                .get<std::string>()
                .find("1 missing") != std::string::npos);
  }

  // A checkpoint's folder opened on its own (ls DIR, File > Open Directory on
  // it): one row named after the folder, in the run of the folder holding it,
  // as when that parent is opened; it was "." in a run "..".
  void lsFolderOnItsOwn() {
    for (const char* folder : {"dcp_ws3", "fsdp_ws3"}) {
      const Run r = cli({"ls", kDir + "/" + folder, "--json"});
      QCOMPARE(r.exitCode, 0);
      const json got = json::parse(r.out.toStdString());
      QCOMPARE(got["runs"].size(), size_t(1));
      const json& run = got["runs"][0];
      QCOMPARE(run["name"].get<std::string>(), std::string("sharded"));
      QCOMPARE(run["checkpoints"].size(), size_t(1));
      QCOMPARE(run["checkpoints"][0]["file"].get<std::string>(), std::string(folder));
      QCOMPARE(run["checkpoints"][0]["format"].get<std::string>(), std::string("sharded"));
    }
  }

  // Statistics of a logical tensor read across its chunks equal those of the
  // same tensor in the single file (both streamed from mapped bytes).
  void statsAcrossChunks_data() {
    QTest::addColumn<QString>("layout");
    QTest::newRow("hf bin") << "hf_bin";
    QTest::newRow("dcp 3 ranks (uneven, an empty chunk)") << "dcp_ws3";
    QTest::newRow("dcp 2 ranks") << "dcp_ws2";
    QTest::newRow("fsdp 3 ranks") << "fsdp_ws3";
    QTest::newRow("deepspeed zero-3 3 ranks (runs of flat buffers)") << "ds_z3_ws3/global_step1000";
    QTest::newRow("deepspeed zero-2 2 ranks") << "ds_z2_ws2/global_step1000";
    QTest::newRow("fsdp DTensor 3 ranks (an empty chunk)") << "fsdp_dtensor_ws3";
  }
  void statsAcrossChunks() {
    QFETCH(QString, layout);
    const auto sharded = ckpt::CheckpointFile::open((kDir + "/" + layout).toStdString());
    const auto single = ckpt::CheckpointFile::open((kDir + "/reference.pt").toStdString());
    // DeepSpeed ZeRO-2 holds the 16-bit module after the fp32 masters.
    const size_t module = layout.startsWith("ds_z2") ? single->tensors().size() : 0;
    QCOMPARE(sharded->tensors().size(), single->tensors().size() + module);
    for (size_t i = 0; i < single->tensors().size(); ++i) {
      const ckpt::TensorData a = sharded->tensorData(i);
      const ckpt::TensorData b = single->tensorData(i);
      QVERIFY(a.chunked());
      const auto sa = ckpt::computeStats(a);
      const auto sb = ckpt::computeStats(b);
      QVERIFY(sa && sb);
      QCOMPARE(sa->count, sb->count);
      QCOMPARE(sa->l2norm, sb->l2norm);
      QCOMPARE(sa->min, sb->min);
      for (uint64_t k = 0; k < a.numel(); ++k) QCOMPARE(a.at(k), b.at(k));
    }
  }

 private:
  TorchChecker m_torch;
};

QTEST_GUILESS_MAIN(TestSharded)
#include "tst_sharded.moc"
