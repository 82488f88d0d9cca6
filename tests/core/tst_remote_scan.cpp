// What the app makes of the agent's answers (ckpt/remote/scan_wire.h,
// metrics_wire.h): a folder scanned and its curves read by a real
// `ckptscope-cli serve --stdio` on a pipe, converted back, equal what
// scanDirectory and collectMetrics give for the same folder here, field by
// field (the app lists and draws remote runs from these).
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "ckpt/index/metrics.h"
#include "ckpt/index/scanner.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/metrics_wire.h"
#include "ckpt/remote/scan_wire.h"

using ckpt::CheckpointEntry;
using ckpt::RunEntry;
using ckpt::ScanResult;
using Json = nlohmann::ordered_json;

namespace {

const std::string kFixtures = CKPT_FIXTURE_DIR;

bool sameReal(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}
bool sameReal(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || sameReal(*a, *b));
}

// `full`: every field; else those ls --json holds (and the path it implies).
void compareEntry(const CheckpointEntry& r, const CheckpointEntry& l, bool full) {
  const QByteArray at = QByteArray::fromStdString(l.path);
  QCOMPARE(r.file, l.file);
  QVERIFY2(r.step == l.step, at);
  QVERIFY2(r.kind == l.kind, at);
  QVERIFY2(sameReal(r.loss, l.loss), at);
  QCOMPARE(r.size, l.size);
  QCOMPARE(r.mtime, l.mtime);
  QCOMPARE(r.error, l.error);
  QCOMPARE(r.format, l.format);
  QVERIFY2(r.stage == l.stage, at);
  QCOMPARE(r.sharded, l.sharded);
  QCOMPARE(r.layout, l.layout);
  QCOMPARE(r.ranks, l.ranks);
  QCOMPARE(r.shardFiles, l.shardFiles);
  QCOMPARE(r.shardMissing, l.shardMissing);
  QCOMPARE(r.trainer, l.trainer);
  QCOMPARE(r.best, l.best);
  QCOMPARE(r.latest, l.latest);
  QCOMPARE(r.verdict, l.verdict);
  QCOMPARE(r.safety, l.safety);
  QCOMPARE(r.parts.size(), l.parts.size());
  for (size_t i = 0; i < l.parts.size(); ++i) {
    QCOMPARE(r.parts[i].role, l.parts[i].role);
    QCOMPARE(r.parts[i].file, l.parts[i].file);
    QCOMPARE(r.parts[i].size, l.parts[i].size);
    QCOMPARE(r.parts[i].verdict, l.parts[i].verdict);
    if (full) QCOMPARE(r.parts[i].path, l.parts[i].path);
  }
  if (!full) return;
  QCOMPARE(r.path, l.path);
  QVERIFY2(r.runName == l.runName, at);
  QCOMPARE(r.scalars.size(), l.scalars.size());
  for (const auto& [k, v] : l.scalars) {
    QVERIFY2(r.scalars.count(k), (at + " " + k.c_str()).constData());
    QVERIFY2(sameReal(r.scalars.at(k), v), (at + " " + k.c_str()).constData());
  }
  QCOMPARE(r.tensorBytes, l.tensorBytes);
  QCOMPARE(r.optimizerBytes, l.optimizerBytes);
  QCOMPARE(r.offenders, l.offenders);
  QCOMPARE(r.folder, l.folder);
}

void compareScan(const ScanResult& r, const ScanResult& l, bool full) {
  QCOMPARE(r.root, l.root);
  QCOMPARE(r.runs.size(), l.runs.size());
  for (size_t i = 0; i < l.runs.size(); ++i) {
    const RunEntry &rr = r.runs[i], &lr = l.runs[i];
    QCOMPARE(rr.name, lr.name);
    QCOMPARE(rr.path, lr.path);
    QCOMPARE(rr.trainer, lr.trainer);
    QCOMPARE(rr.metricFiles, lr.metricFiles);
    if (full) QCOMPARE(rr.root, lr.root);
    QCOMPARE(rr.checkpoints.size(), lr.checkpoints.size());
    for (size_t k = 0; k < lr.checkpoints.size(); ++k) {
      compareEntry(rr.checkpoints[k], lr.checkpoints[k], full);
      if (QTest::currentTestFailed()) return;
    }
  }
}

}  // namespace

class TestRemoteScan : public QObject {
  Q_OBJECT

  std::unique_ptr<ckpt::remote::AgentClient> m_agent;

  // The agent's answer to `method` on `path` (opened as its root first).
  Json ask(const std::string& method, const std::string& path, Json params) {
    m_agent->call("open", Json{{"path", path}});
    return m_agent->call(method, std::move(params));
  }

 private slots:
  void initTestCase() {
    // The agent straight on a pipe: what ssh would start on the host.
    m_agent = std::make_unique<ckpt::remote::AgentClient>(
        std::vector<std::string>{CKPT_CLI, "serve", "--stdio"}, "the test's agent",
        "tst_remote_scan");
  }

  void scanEqualsLocal_data() {
    QTest::addColumn<QString>("folder");
    QTest::newRow("experiment") << QString::fromStdString(kFixtures + "/experiment");
    QTest::newRow("safety") << QString::fromStdString(kFixtures + "/safety");
    QTest::newRow("sharded") << QString::fromStdString(kFixtures + "/sharded");
    QTest::newRow("hf trainer") << QString::fromStdString(kFixtures + "/hf_trainer");
    QTest::newRow("names") << QString::fromStdString(kFixtures + "/json_names/exp");
  }
  void scanEqualsLocal() {
    QFETCH(QString, folder);
    const std::string dir = folder.toStdString();
    const ScanResult local = ckpt::scanDirectory(dir);
    QVERIFY(!local.runs.empty());
    size_t checkpoints = 0;
    for (const RunEntry& r : local.runs) checkpoints += r.checkpoints.size();
    QVERIFY(checkpoints > 0);

    const Json full = ask("scan", dir, Json{{"path", dir}, {"full", true}});
    QVERIFY(full.contains("scan"));
    compareScan(ckpt::remote::scanFromWire(full["scan"]), local, /*full=*/true);
    if (QTest::currentTestFailed()) return;

    // An agent asked without `full` (or one older than it): ls --json's
    // document, read back as far as it goes.
    const Json plain = ask("scan", dir, Json{{"path", dir}});
    QVERIFY(plain.contains("document"));
    QVERIFY(!plain.contains("scan"));
    compareScan(ckpt::remote::scanFromWire(plain["document"]), local, /*full=*/false);
  }

  void scanFieldErrorsNameTheField() {
    Json doc = Json::parse(R"({"root": "/r", "runs": [{"name": "a", "path": "/r/a",
        "metrics": [], "checkpoints": [{"file": "x.pt", "size": "big"}]}]})");
    try {
      (void)ckpt::remote::scanFromWire(doc);
      QFAIL("a size that is not a number was taken");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()), QString("scan: runs[0].checkpoints[0].size is not an integer"));
    }
    doc = Json::parse(R"({"root": "/r"})");
    try {
      (void)ckpt::remote::scanFromWire(doc);
      QFAIL("a document without runs was taken");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()), QString("scan: document.runs is missing"));
    }
  }

  void agentRefusesBadFull() {
    const std::string dir = kFixtures + "/experiment";
    try {
      (void)ask("scan", dir, Json{{"path", dir}, {"full", "yes"}});
      QFAIL("full: \"yes\" was taken");
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(QString::fromStdString(e.code()), QString("bad_field"));
      QVERIFY(QString(e.what()).startsWith("full:"));
    }
  }

  // The curves: the agent's `metrics` runs equal collectMetrics' here.
  void metricsEqualLocal() {
    const std::string dir = kFixtures + "/experiment";
    const std::vector<ckpt::RunMetrics> local = ckpt::collectMetrics(ckpt::findMetricRuns(dir), {});
    const Json answer = ask("metrics", dir, Json{{"paths", {dir}}});
    const Json& runs = answer["runs"];
    QCOMPARE(runs.size(), local.size());
    size_t points = 0;
    for (size_t i = 0; i < local.size(); ++i) {
      const ckpt::RunMetrics r = ckpt::remote::runMetricsFromWire(runs[i]);
      const ckpt::RunMetrics& l = local[i];
      QCOMPARE(r.run, l.run);
      QCOMPARE(r.path, l.path);
      QCOMPARE(r.checkpointSteps, l.checkpointSteps);
      QCOMPARE(r.readEnds, l.readEnds);
      QCOMPARE(r.series.size(), l.series.size());
      for (size_t s = 0; s < l.series.size(); ++s) {
        QCOMPARE(r.series[s].metric, l.series[s].metric);
        QVERIFY(r.series[s].source == l.series[s].source);
        QCOMPARE(r.series[s].files, l.series[s].files);
        QCOMPARE(r.series[s].points.size(), l.series[s].points.size());
        for (size_t p = 0; p < l.series[s].points.size(); ++p) {
          const ckpt::MetricPoint a = r.series[s].points[p], b = l.series[s].points[p];
          QCOMPARE(a.step, b.step);
          QVERIFY(sameReal(a.value, b.value));
          QVERIFY(sameReal(a.wallTime, b.wallTime));
          QVERIFY(a.tokens == b.tokens);
          ++points;
        }
      }
    }
    QVERIFY(points > 0);
  }

  // One file opened (ssh://host/run/step_100.pt in the app): `scan` with
  // `file` lists it in its folder as describeCheckpoint here describes it
  // (a checkpoint, a sharded checkpoint's index, a file that is none), and
  // says so; without `file` the path is refused as ls FILE refuses it.
  void oneFileIsListedAsAFile_data() {
    QTest::addColumn<QString>("file");
    const QString f = QString::fromStdString(kFixtures);
    QTest::newRow("checkpoint") << f + "/cross/base.pt";
    QTest::newRow("sharded index") << f + "/sharded/hf_st/model.safetensors.index.json";
    QTest::newRow("not a checkpoint") << f + "/cross/cross.json";
  }
  void oneFileIsListedAsAFile() {
    QFETCH(QString, file);
    const std::string path = file.toStdString();
    const QFileInfo info(file);
    const CheckpointEntry local = ckpt::describeCheckpoint(path, info.fileName().toStdString());
    ckpt::remote::AgentClient agent({CKPT_CLI, "serve", "--stdio"}, "the test's agent",
                                    "tst_remote_scan");
    agent.call("open", Json{{"path", path}});
    const Json answer = agent.call("scan", Json{{"path", path}, {"full", true}, {"file", true}});
    QCOMPARE(answer.value("file", false), true);
    const ScanResult r = ckpt::remote::scanFromWire(answer["scan"]);
    QCOMPARE(r.runs.size(), size_t(1));
    QCOMPARE(QString::fromStdString(r.runs[0].path), info.absolutePath());
    QCOMPARE(QString::fromStdString(r.runs[0].name), info.absoluteDir().dirName());
    QCOMPARE(r.runs[0].checkpoints.size(), size_t(1));
    compareEntry(r.runs[0].checkpoints[0], local, /*full=*/true);
    // The curves the app asks of it with the scan: its folder's run.
    if (local.error.empty()) {
      const Json curves = agent.call("metrics", Json{{"paths", {path}}});
      QCOMPARE(curves["runs"].size(), size_t(1));
      QCOMPARE(QString::fromStdString(curves["runs"][0]["path"].get<std::string>()),
               info.absolutePath());
    }
    try {
      (void)agent.call("scan", Json{{"path", path}, {"full", true}});
      QFAIL("a file was scanned as a folder");
    } catch (const ckpt::remote::RemoteError& e) {
      QVERIFY2(QString(e.what()).endsWith("not a directory"), e.what());
    }
    try {
      (void)agent.call("scan", Json{{"path", path}, {"file", "yes"}});
      QFAIL("file: \"yes\" was taken");
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(QString::fromStdString(e.code()), QString("bad_field"));
    }
  }

  // A log beside the run folder opened (a sweep's train.log) is one of the
  // run's sources, outside the root: `metrics` names it, and `since` then
  // follows it (what the app asks when the folder changes); a file it did
  // not name stays outside.
  void logBesideTheRunIsFollowed() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString run = tmp.path() + "/sweep/run1";
    QVERIFY(QDir().mkpath(run));
    QVERIFY(
        QFile::copy(QString::fromStdString(kFixtures) + "/cross/base.pt", run + "/step_100.pt"));
    const QString log = tmp.path() + "/sweep/run1.log", other = tmp.path() + "/sweep/notes.txt";
    auto write = [](const QString& path, const QByteArray& text, QIODevice::OpenMode mode) {
      QFile f(path);
      return f.open(mode) && f.write(text) == text.size();
    };
    QVERIFY(write(log, "step=10 loss=2.5\n", QIODevice::WriteOnly));
    QVERIFY(write(other, "step=10 loss=9\n", QIODevice::WriteOnly));
    ckpt::remote::AgentClient agent({CKPT_CLI, "serve", "--stdio"}, "the test's agent",
                                    "tst_remote_scan");
    agent.call("open", Json{{"path", run.toStdString()}});
    const Json answer = agent.call("metrics", Json{{"paths", {run.toStdString()}}});
    QCOMPARE(answer["runs"].size(), size_t(1));
    const ckpt::RunMetrics m = ckpt::remote::runMetricsFromWire(answer["runs"][0]);
    const auto end = m.readEnds.find(log.toStdString());
    QVERIFY2(end != m.readEnds.end(), "the log beside the run is not one of its sources");
    QCOMPARE(end->second, uint64_t(QFileInfo(log).size()));

    QVERIFY(write(log, "step=20 loss=2.25\n", QIODevice::Append));
    const Json gained =
        agent.call("metrics", Json{{"since", Json{{log.toStdString(), end->second}}}});
    QCOMPARE(gained["files"].size(), size_t(1));
    QCOMPARE(gained["files"][0]["to"].get<uint64_t>(), uint64_t(QFileInfo(log).size()));
    QCOMPARE(gained["files"][0]["points"].size(), size_t(1));
    try {
      (void)agent.call("metrics", Json{{"since", Json{{other.toStdString(), 0}}}});
      QFAIL("a file outside the root that metrics did not name was read");
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(QString::fromStdString(e.code()), QString("outside_roots"));
    }
  }

  // Requests posted one after another (scan, metrics, hparams, and one the
  // agent refuses) are all answered, each as the same request asked on its
  // own answers it, in the order posted; the connection then goes on.
  void postedRequestsAnsweredInOrder() {
    const std::string dir = kFixtures + "/experiment";
    const Json scanAlone = ask("scan", dir, Json{{"path", dir}, {"full", true}});
    const std::string metricsAlone = m_agent->callText("metrics", Json{{"paths", {dir}}});
    const Json hparamsAlone = m_agent->call("hparams", Json{{"paths", {dir}}});
    QVERIFY(!hparamsAlone.empty());

    const int64_t a = m_agent->post("scan", Json{{"path", dir}, {"full", true}});
    const int64_t b = m_agent->post("metrics", Json{{"paths", {dir}}});
    const int64_t c = m_agent->post("hparams", Json{{"paths", {dir}}});
    const int64_t d = m_agent->post("scan", Json{{"path", "/usr"}});
    QVERIFY(a < b && b < c && c < d);
    QVERIFY(m_agent->await(a, "scan") == scanAlone);
    QCOMPARE(m_agent->awaitText(b, "metrics"), metricsAlone);
    QVERIFY(m_agent->await(c, "hparams") == hparamsAlone);
    try {
      (void)m_agent->await(d, "scan");
      QFAIL("a folder outside the roots was scanned");
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(QString::fromStdString(e.code()), QString("outside_roots"));
    }
    // An answer nobody took is skipped by the next wait.
    (void)m_agent->post("hparams", Json{{"paths", {dir}}});
    QVERIFY(m_agent->call("hparams", Json{{"paths", {dir}}}) == hparamsAlone);
  }
};

QTEST_GUILESS_MAIN(TestRemoteScan)
#include "tst_remote_scan.moc"
