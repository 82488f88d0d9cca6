// The agent's `shards` (what the app's Shards tab shows of a checkpoint
// written by many ranks) through a real OpenSSH server on loopback
// (ssh_server.h) and `ckptscope-cli serve --stdio` behind it: the answer,
// read back as the app reads it (ckpt/remote/shards_wire.h), equals the
// ShardSet of the same checkpoint opened here, field by field, and the
// writer's own record of its chunks (make_sharded.py's manifest.json), for
// DCP, Hugging Face, FSDP, DeepSpeed and a DCP folder missing a rank
// (Megatron's tensor-parallel join: against the local set). One
// file is refused; answers that lie (counts, sizes, parts) are refused with
// a message naming the field.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/remote_path.h"
#include "ckpt/remote/shards_wire.h"
#include "ckpt/remote/ssh_command.h"
#include "ssh_server.h"

using Json = nlohmann::ordered_json;
using ckpt::LogicalTensor;
using ckpt::ShardChunk;
using ckpt::ShardListing;

namespace {

const QString kSharded = QStringLiteral(CKPT_FIXTURE_DIR) + "/sharded";

std::vector<int64_t> dimsOf(const QJsonArray& a) {
  std::vector<int64_t> out;
  for (const QJsonValue& v : a) out.push_back(v.toInteger());
  return out;
}

void compareChunks(const std::vector<ShardChunk>& r, const std::vector<ShardChunk>& l,
                   const QByteArray& at) {
  QVERIFY2(r.size() == l.size(), at);
  for (size_t i = 0; i < l.size(); ++i) {
    QVERIFY2(r[i].part == l[i].part, at);
    QVERIFY2(r[i].offsets.vec() == l[i].offsets.vec(), at);
    QVERIFY2(r[i].sizes.vec() == l[i].sizes.vec(), at);
    QVERIFY2(r[i].sourceOffset == l[i].sourceOffset, at);
    QVERIFY2(r[i].slice == -1 && r[i].tensor == -1, at);  // nothing to read them by here
  }
}

void compareListing(const ShardListing& r, const ShardListing& l) {
  const QByteArray at = QByteArray::fromStdString(l.folder);
  QVERIFY2(r.layout == l.layout, at);
  QCOMPARE(r.folder, l.folder);
  QCOMPARE(r.entry, l.entry);
  QCOMPARE(r.ranks, l.ranks);
  QCOMPARE(r.summary(), l.summary());
  QCOMPARE(r.totalSize(), l.totalSize());
  QCOMPARE(r.parts.size(), l.parts.size());
  for (size_t i = 0; i < l.parts.size(); ++i) {
    QCOMPARE(r.parts[i].file, l.parts[i].file);
    QCOMPARE(r.parts[i].path, l.parts[i].path);
    QCOMPARE(r.parts[i].rank, l.parts[i].rank);
    QCOMPARE(r.parts[i].size, l.parts[i].size);
    QCOMPARE(r.parts[i].present, l.parts[i].present);
    QCOMPARE(r.parts[i].error, l.parts[i].error);
  }
  QCOMPARE(r.tensors.size(), l.tensors.size());
  for (size_t i = 0; i < l.tensors.size(); ++i) {
    const LogicalTensor &a = r.tensors[i], &b = l.tensors[i];
    const QByteArray where = at + ": " + QByteArray::fromStdString(b.name);
    QCOMPARE(a.name, b.name);
    QVERIFY2(a.dtype == b.dtype, where);
    QVERIFY2(a.shape.vec() == b.shape.vec(), where);
    compareChunks(a.chunks, b.chunks, where);
    compareChunks(a.missing, b.missing, where + " (missing)");
    QCOMPARE(a.replicas, b.replicas);
    QCOMPARE(a.flat, b.flat);
    QCOMPARE(a.note, b.note);
    QCOMPARE(a.error, b.error);
  }
  QCOMPARE(r.notes, l.notes);
  QVERIFY2(r.metadata == l.metadata, at);
}

}  // namespace

class TestRemoteShards : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QJsonObject m_layouts;
  std::unique_ptr<ckpt::remote::AgentClient> m_agent;

  // A real answer of the agent to `shards` for `dir` (opened as a root first).
  Json ask(const QString& dir) {
    m_agent->call("open", Json{{"path", dir.toStdString()}});
    return m_agent->call("shards", Json{{"path", dir.toStdString()}});
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    QFile f(kSharded + "/manifest.json");
    QVERIFY2(f.open(QIODevice::ReadOnly), "no fixtures: run ctest (make_sharded)");
    m_layouts = QJsonDocument::fromJson(f.readAll()).object()["layouts"].toObject();
    QVERIFY(m_layouts.contains("dcp_ws3") && m_layouts.contains("hf_st"));
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    ckpt::remote::RemotePath where;
    where.host = "127.0.0.1";
    where.port = m_server.port();
    m_agent = std::make_unique<ckpt::remote::AgentClient>(
        ckpt::remote::sshAgentCommand(where, CKPT_CLI, ckpt::remote::SshQuestions{}),
        "host 127.0.0.1", "tst_remote_shards");
  }

  void cleanupTestCase() {
    m_agent.reset();
    m_server.stop();
  }

  void agentEqualsLocal_data() {
    QTest::addColumn<QString>("layout");
    for (const char* l :
         {"dcp_ws3", "dcp_ws2_old", "hf_st", "hf_bin", "fsdp_ws2", "fsdp_dtensor_ws3",
          "ds_z2_ws2/global_step1000", "ds_z3_ws3/global_step1000", "hostile/dcp_missing",
          "hostile/ds_missing/global_step1000", "hostile/dcp_overlap"})
      QTest::newRow(l) << QString(l);
  }
  void agentEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(QString, layout);
    const QString dir = kSharded + "/" + layout;
    const Json answer = ask(dir);
    QVERIFY(answer.contains("shards"));
    const ShardListing there = ckpt::remote::shardsFromWire(answer["shards"]);

    // The same checkpoint opened here.
    const auto file = ckpt::CheckpointFile::open(dir.toStdString());
    QVERIFY(file->shards());
    const ShardListing here = ckpt::listShards(*file->shards());
    compareListing(there, here);
    if (QTest::currentTestFailed()) return;
    // Row i of the tab is tensor i of the file (the Tensor tab's index).
    QCOMPARE(there.tensors.size(), file->tensors().size());

    // The writer's record: every logical tensor with its dtype and global
    // shape, and (DCP) each chunk's file, rank, offsets and sizes.
    const QJsonObject truth = m_layouts[layout].toObject();
    QVERIFY2(!truth.isEmpty(), qPrintable(layout));
    if (truth.contains("ranks")) QCOMPARE(there.ranks, truth["ranks"].toInt());
    for (const QJsonValue& v : truth["tensors"].toArray()) {
      const QJsonObject t = v.toObject();
      // Its key as the writer flattened it: its path joined ("model.token_embed.weight";
      // DeepSpeed's 16-bit module weights "module.token_embed.weight").
      QStringList path;
      for (const QJsonValue& p : t["path"].toArray()) path << p.toString();
      const std::string name = path.join('.').toStdString();
      const std::string dtype = t["dtype"].toString().toStdString();
      const auto it =
          std::find_if(there.tensors.begin(), there.tensors.end(), [&](const LogicalTensor& x) {
            return x.name == name && ckpt::dtypeName(x.dtype) == dtype;
          });
      QVERIFY2(it != there.tensors.end(), (name + " " + dtype).c_str());
      QVERIFY2(it->shape.vec() == dimsOf(t["shape"].toArray()), name.c_str());
      QCOMPARE(it->incomplete(), t["incomplete"].toBool());
    }
    const QJsonObject chunks = truth["chunks"].toObject();
    for (auto c = chunks.begin(); c != chunks.end(); ++c) {
      const std::string name = c.key().toStdString();
      const auto it = std::find_if(there.tensors.begin(), there.tensors.end(),
                                   [&](const LogicalTensor& x) { return x.name == name; });
      QVERIFY2(it != there.tensors.end(), name.c_str());
      std::vector<ShardChunk> all = it->chunks;
      all.insert(all.end(), it->missing.begin(), it->missing.end());
      QCOMPARE(all.size(), size_t(c.value().toArray().size()));
      for (const QJsonValue& w : c.value().toArray()) {
        const QJsonObject want = w.toObject();
        const bool found = std::any_of(all.begin(), all.end(), [&](const ShardChunk& got) {
          const ckpt::ShardPart& p = there.parts[size_t(got.part)];
          return p.file == want["file"].toString().toStdString() &&
                 p.rank == want["rank"].toInt() &&
                 got.offsets.vec() == dimsOf(want["offsets"].toArray()) &&
                 got.sizes.vec() == dimsOf(want["sizes"].toArray());
        });
        QVERIFY2(found, qPrintable(c.key() + " " + QJsonDocument(want).toJson()));
      }
    }
    // No tensor bytes travel: the answer is small next to the parts.
    QVERIFY2(answer.dump().size() < 64 * 1024, qPrintable(QString::number(answer.dump().size())));
  }

  // Megatron's tensor-parallel join (mp_rank_00..03 of one save): the
  // joins' notes and chunks as the local set has them.
  void megatronEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString dir =
        QStringLiteral(CKPT_FIXTURE_DIR) + "/megatron_titan/mg_join/gpt/iter_0000300";
    const Json answer = ask(dir);
    const ShardListing there = ckpt::remote::shardsFromWire(answer["shards"]);
    const auto file = ckpt::CheckpointFile::open(dir.toStdString());
    QVERIFY(file->shards());
    compareListing(there, ckpt::listShards(*file->shards()));
    if (QTest::currentTestFailed()) return;
    QVERIFY(there.layout == ckpt::ShardLayout::Megatron);
    QCOMPARE(there.ranks, 4);
    QVERIFY(std::any_of(there.tensors.begin(), there.tensors.end(), [](const LogicalTensor& t) {
      return t.chunks.size() > 1 && !t.note.empty();
    }));
  }

  void oneFileRefused() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString file = kSharded + "/reference.pt";
    m_agent->call("open", Json{{"path", file.toStdString()}});
    try {
      (void)m_agent->call("shards", Json{{"path", file.toStdString()}});
      QFAIL("a single file was listed as shards");
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(e.code(), std::string("bad_field"));
      QVERIFY2(QString(e.what()).contains("not a sharded checkpoint"), e.what());
    }
  }

  // The agent's real answer, changed as a broken or hostile host would:
  // refused with the field named, nothing sized from the lie.
  void lyingAnswerRefused_data() {
    QTest::addColumn<QString>("change");
    QTest::addColumn<QString>("named");
    QTest::newRow("more tensors") << "tensors+1"
                                  << "shards.counts.tensors is 15 but 14";
    QTest::newRow("fewer parts") << "parts-1"
                                 << "shards.counts.parts is 3 but 2";
    QTest::newRow("chunks") << "chunks*1000"
                            << "shards.counts.chunks";
    QTest::newRow("huge part") << "size 2^60"
                               << "shards.parts[0].size claims 1152921504606846976";
    QTest::newRow("total") << "total+1"
                           << "shards.total_size is";
    QTest::newRow("part index") << "part 99"
                                << "shards.tensors[0].chunks[0].part is 99, past the 3";
    QTest::newRow("negative part") << "part -1"
                                   << "shards.tensors[0].chunks[0].part is -1";
    QTest::newRow("huge shape") << "shape 2^40"
                                << "shards.tensors[0].shape holds more than 2^62";
    QTest::newRow("chunk outside") << "offset 9"
                                   << "shards.tensors[0].chunks[0] lies outside";
    QTest::newRow("dimensions") << "dims 65"
                                << "shards.tensors[0].shape has 65 dimensions";
    QTest::newRow("rank") << "rank 2^40"
                          << "shards.parts[0].rank is 1099511627776";
    QTest::newRow("dtype") << "dtype"
                           << "shards.tensors[0].dtype is \"float33\"";
    QTest::newRow("layout") << "layout"
                            << "shards.layout is \"zarr\"";
  }
  void lyingAnswerRefused() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(QString, change);
    QFETCH(QString, named);
    Json s = ask(kSharded + "/dcp_ws3")["shards"];
    QCOMPARE(s["counts"]["tensors"].get<int>(), 14);
    QCOMPARE(s["counts"]["parts"].get<int>(), 3);
    Json& t0 = s["tensors"][0];
    if (change == "tensors+1") s["counts"]["tensors"] = 15;
    if (change == "parts-1") s["parts"].erase(s["parts"].size() - 1);
    if (change == "chunks*1000") s["counts"]["chunks"] = s["counts"]["chunks"].get<int>() * 1000;
    if (change == "size 2^60") s["parts"][0]["size"] = uint64_t(1) << 60;
    if (change == "total+1") s["total_size"] = s["total_size"].get<uint64_t>() + 1;
    if (change == "part 99") t0["chunks"][0]["part"] = 99;
    if (change == "part -1") t0["chunks"][0]["part"] = -1;
    if (change == "shape 2^40") t0["shape"] = Json::array({int64_t(1) << 40, int64_t(1) << 40});
    if (change == "offset 9") t0["chunks"][0]["offsets"][0] = 9;
    if (change == "dims 65") t0["shape"] = Json(std::vector<int>(65, 1));
    if (change == "rank 2^40") s["parts"][0]["rank"] = int64_t(1) << 40;
    if (change == "dtype") t0["dtype"] = "float33";
    if (change == "layout") s["layout"] = "zarr";
    try {
      (void)ckpt::remote::shardsFromWire(s);
      QFAIL(qPrintable("accepted: " + change));
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).startsWith("shards: "), e.what());
      QVERIFY2(QString(e.what()).contains(named), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestRemoteShards)
#include "tst_remote_shards.moc"
