// Compare of two checkpoints on another machine: the agent's `diff` with
// `full: true` from a real `ckptscope-cli serve --stdio` on a pipe, read
// back as the app's Compare tab reads it (ckpt/remote/diff_wire.h), equals
// diffCheckpoints and diffMetadata of the same files here, field by field,
// for every pair of the diff fixtures; the relative changes equal torch's
// (make_diff_fixtures.py's expected.json, computed in float64 by
// diff_reference.py). A wrong `full` is refused by name; an answer with a
// wrong field names it.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <cmath>

#include "ckpt/analysis/diff.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/diff_wire.h"

using Json = nlohmann::ordered_json;

namespace {

const QString kDiffDir = QStringLiteral(CKPT_FIXTURE_DIR) + "/diff";

bool sameReal(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// A JSON number, or {"$float": "nan"|"inf"|"-inf"} as the fixtures write non-finite values.
double number(const QJsonValue& v) {
  if (v.isObject()) {
    const QString f = v.toObject().value("$float").toString();
    if (f == "nan") return std::nan("");
    return f.startsWith('-') ? -INFINITY : INFINITY;
  }
  return v.toDouble();
}

void compareMetadata(const std::vector<ckpt::MetadataChange>& r,
                     const std::vector<ckpt::MetadataChange>& l) {
  QCOMPARE(r.size(), l.size());
  for (size_t i = 0; i < l.size(); ++i) {
    QCOMPARE(r[i].key, l[i].key);
    QCOMPARE(r[i].inA, l[i].inA);
    QCOMPARE(r[i].inB, l[i].inB);
    QCOMPARE(r[i].aText, l[i].aText);
    QCOMPARE(r[i].bText, l[i].bText);
    QVERIFY2(r[i].aJson == l[i].aJson, l[i].key.c_str());
    QVERIFY2(r[i].bJson == l[i].bJson, l[i].key.c_str());
    QCOMPARE(r[i].same, l[i].same);
  }
}

void compareAggregates(const std::vector<ckpt::LayerAggregate>& r,
                       const std::vector<ckpt::LayerAggregate>& l) {
  QCOMPARE(r.size(), l.size());
  for (size_t i = 0; i < l.size(); ++i) {
    QCOMPARE(r[i].block, l[i].block);
    QVERIFY(r[i].module == l[i].module);
    QVERIFY(sameReal(r[i].sumDiffSq, l[i].sumDiffSq));
    QVERIFY(sameReal(r[i].sumASq, l[i].sumASq));
    QCOMPARE(r[i].numel, l[i].numel);
    QCOMPARE(r[i].finitePairs, l[i].finitePairs);
    QCOMPARE(r[i].tensors, l[i].tensors);
  }
}

void compareDiff(const ckpt::CheckpointDiff& r, const ckpt::CheckpointDiff& l) {
  QCOMPARE(r.pathA, l.pathA);
  QCOMPARE(r.pathB, l.pathB);
  QCOMPARE(r.stateKeyA, l.stateKeyA);
  QCOMPARE(r.stateKeyB, l.stateKeyB);
  QCOMPARE(r.compiledPrefixA, l.compiledPrefixA);
  QCOMPARE(r.compiledPrefixB, l.compiledPrefixB);
  QCOMPARE(r.ddpPrefixA, l.ddpPrefixA);
  QCOMPARE(r.ddpPrefixB, l.ddpPrefixB);
  QCOMPARE(r.added, l.added);
  QCOMPARE(r.removed, l.removed);
  QCOMPARE(r.changedShape.size(), l.changedShape.size());
  for (size_t i = 0; i < l.changedShape.size(); ++i) {
    QCOMPARE(r.changedShape[i].name, l.changedShape[i].name);
    QCOMPARE(r.changedShape[i].shapeA, l.changedShape[i].shapeA);
    QCOMPARE(r.changedShape[i].shapeB, l.changedShape[i].shapeB);
    QVERIFY(r.changedShape[i].dtypeA == l.changedShape[i].dtypeA);
    QVERIFY(r.changedShape[i].dtypeB == l.changedShape[i].dtypeB);
  }
  QCOMPARE(r.tensors.size(), l.tensors.size());
  for (size_t i = 0; i < l.tensors.size(); ++i) {
    const ckpt::TensorDiff &a = r.tensors[i], &b = l.tensors[i];
    const QByteArray at = QByteArray::fromStdString(b.name);
    QCOMPARE(a.name, b.name);
    QCOMPARE(a.tensorA, b.tensorA);
    QCOMPARE(a.tensorB, b.tensorB);
    QVERIFY2(a.dtypeA == b.dtypeA && a.dtypeB == b.dtypeB, at);
    QCOMPARE(a.shape, b.shape);
    QCOMPARE(a.layer.block, b.layer.block);
    QVERIFY2(a.layer.module == b.layer.module, at);
    QCOMPARE(a.numel, b.numel);
    QCOMPARE(a.finitePairs, b.finitePairs);
    QCOMPARE(a.nanA, b.nanA);
    QCOMPARE(a.infA, b.infA);
    QCOMPARE(a.nanB, b.nanB);
    QCOMPARE(a.infB, b.infB);
    using Pair = std::pair<double, double>;
    for (const auto& [x, y] : std::initializer_list<Pair>{{a.normA, b.normA},
                                                          {a.normB, b.normB},
                                                          {a.normDiff, b.normDiff},
                                                          {a.dot, b.dot},
                                                          {a.relL2, b.relL2},
                                                          {a.cosine, b.cosine},
                                                          {a.maxAbs, b.maxAbs},
                                                          {a.meanAbs, b.meanAbs}})
      QVERIFY2(sameReal(x, y), at + ": " + QByteArray::number(x, 'g', 17) + " against " +
                                   QByteArray::number(y, 'g', 17));
    QCOMPARE(a.tiedTo, b.tiedTo);
    QCOMPARE(a.error, b.error);
    QCOMPARE(a.computed, b.computed);
  }
  compareMetadata(r.metadata, l.metadata);
  compareAggregates(r.blocks, l.blocks);
  compareAggregates(r.modules, l.modules);
  QCOMPARE(r.notes, l.notes);
  QCOMPARE(r.top, l.top);
  QCOMPARE(r.bytesCompared, l.bytesCompared);
  QCOMPARE(r.cancelled, l.cancelled);
}

}  // namespace

class TestRemoteDiff : public QObject {
  Q_OBJECT

  std::unique_ptr<ckpt::remote::AgentClient> m_agent;
  QJsonArray m_pairs;

 private slots:
  void initTestCase() {
    QFile f(kDiffDir + "/expected.json");
    QVERIFY2(f.open(QIODevice::ReadOnly), "no diff fixtures: run ctest (make_diff_fixtures)");
    m_pairs = QJsonDocument::fromJson(f.readAll()).object().value("pairs").toArray();
    QVERIFY(m_pairs.size() > 3);
    // The agent straight on a pipe: what ssh would start on the host.
    m_agent = std::make_unique<ckpt::remote::AgentClient>(
        std::vector<std::string>{CKPT_CLI, "serve", "--stdio"}, "the test's agent",
        "tst_remote_diff");
    m_agent->call("open", Json{{"path", kDiffDir.toStdString()}});
  }

  // Every pair: computed by the agent, read back, equal to the local diff
  // field by field, and its relative changes to torch's.
  void fullDiffEqualsLocal() {
    int pairs = 0, tensors = 0, againstTorch = 0, keys = 0;
    for (const QJsonValue& v : m_pairs) {
      const QJsonObject pair = v.toObject();
      const std::string a = (kDiffDir + "/" + pair.value("a").toString()).toStdString();
      const std::string b = (kDiffDir + "/" + pair.value("b").toString()).toStdString();
      const QByteArray at = pair.value("name").toString().toUtf8();
      const auto fa = ckpt::CheckpointFile::open(a);
      const auto fb = ckpt::CheckpointFile::open(b);
      const ckpt::CheckpointDiff local = ckpt::diffCheckpoints(*fa, *fb);
      const auto everyKey = ckpt::diffMetadata(*fa, *fb, /*everyKey=*/true);
      const Json answer = m_agent->call("diff", Json{{"a", a}, {"b", b}, {"full", true}});
      QVERIFY2(answer.contains("diff") && !answer.contains("document"), at);
      const ckpt::remote::WireDiff wire = ckpt::remote::diffFromWire(answer.at("diff"));
      compareDiff(wire.diff, local);
      if (QTest::currentTestFailed()) qWarning("in pair %s", at.constData());
      if (QTest::currentTestFailed()) return;
      compareMetadata(wire.everyKey, everyKey);
      if (QTest::currentTestFailed()) return;
      keys += int(everyKey.size());

      const QJsonObject torch = pair.value("expected").toObject().value("tensors").toObject();
      for (const ckpt::TensorDiff& t : wire.diff.tensors) {
        const QJsonObject e = torch.value(QString::fromStdString(t.name)).toObject();
        if (e.isEmpty() || !t.error.empty()) continue;
        const double want = number(e.value("rel_l2"));
        const bool ok = std::isfinite(want)
                            ? std::abs(t.relL2 - want) <= 1e-9 * std::max(1.0, std::abs(want))
                            : sameReal(t.relL2, want);
        QVERIFY2(ok, at + " " + QByteArray::fromStdString(t.name) + ": " +
                         QByteArray::number(t.relL2, 'g', 17) + " against torch's " +
                         QByteArray::number(want, 'g', 17));
        ++againstTorch;
      }
      ++pairs;
      tensors += int(wire.diff.tensors.size());
    }
    QVERIFY(pairs > 3 && againstTorch > 10 && keys > 10);
    qInfo(
        "%d pairs, %d tensors and %d metadata keys equal here, %d relative changes equal "
        "torch's",
        pairs, tensors, keys, againstTorch);
  }

  // Without `full`: diff --json's document, as before; `full` not a bool: refused by name.
  void fullIsChecked() {
    const QJsonObject pair = m_pairs.first().toObject();
    const std::string a = (kDiffDir + "/" + pair.value("a").toString()).toStdString();
    const std::string b = (kDiffDir + "/" + pair.value("b").toString()).toStdString();
    const Json plain = m_agent->call("diff", Json{{"a", a}, {"b", b}});
    QVERIFY(plain.contains("document") && !plain.contains("diff"));
    try {
      (void)m_agent->call("diff", Json{{"a", a}, {"b", b}, {"full", "yes"}});
      QFAIL("full: \"yes\" was taken");
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(QString::fromStdString(e.code()), QString("bad_field"));
      QVERIFY2(QString(e.what()).startsWith("full:"), e.what());
    }
    // Still serving.
    QVERIFY(m_agent->call("diff", Json{{"a", a}, {"b", b}, {"full", true}}).contains("diff"));
  }

  // A wrong field of the answer is named where it is.
  void wrongFieldIsNamed() {
    const QJsonObject pair = m_pairs.first().toObject();
    const std::string a = (kDiffDir + "/" + pair.value("a").toString()).toStdString();
    const std::string b = (kDiffDir + "/" + pair.value("b").toString()).toStdString();
    Json d = m_agent->call("diff", Json{{"a", a}, {"b", b}, {"full", true}}).at("diff");
    QVERIFY(d.at("tensors").size() > 2);
    Json bad = d;
    bad["tensors"][2]["norm_a"] = "big";
    try {
      (void)ckpt::remote::diffFromWire(bad);
      QFAIL("a norm that is not a number was taken");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()), QString("diff: diff.tensors[2].norm_a is not a number"));
    }
    bad = d;
    bad["tensors"][0]["dtype_b"] = "float99";
    try {
      (void)ckpt::remote::diffFromWire(bad);
      QFAIL("an unknown dtype was taken");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()), QString("diff: diff.tensors[0].dtype_b is not a dtype"));
    }
    bad = d;
    bad["top"] = Json::array({d.at("tensors").size()});
    try {
      (void)ckpt::remote::diffFromWire(bad);
      QFAIL("an index past the tensors was taken");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).startsWith("diff: diff.top "), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestRemoteDiff)
#include "tst_remote_diff.moc"
