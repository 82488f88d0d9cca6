// What the app's Inspect tab shows of a checkpoint on another machine: the
// agent's `describe`, `stats` and `slice` answers from a real
// `ckptscope-cli serve --stdio` on a pipe, read back as the app reads them
// (ckpt/remote/describe_wire.h, plots_wire.h), equal describeCheckpoint, computeStats and
// TensorData::read of the same files opened here, field by field. And a
// request the client no longer wants is cancelled on the agent by its id.
#include <QtTest>
#include <chrono>
#include <cmath>

#include "ckpt/analysis/tensor_stats.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/index/checkpoint_description.h"
#include "ckpt/index/scanner.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/describe_wire.h"
#include "ckpt/remote/plots_wire.h"

using ckpt::CheckpointDescription;
using ckpt::DescribedValue;
using Json = nlohmann::ordered_json;

namespace {

const std::string kFixtures = CKPT_FIXTURE_DIR;

bool sameReal(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// Node by node, so that a difference names where it is.
void compareTree(const DescribedValue& r, const DescribedValue& l, const QByteArray& at) {
  QVERIFY2(r.keyKind == l.keyKind, at);
  QCOMPARE(r.key, l.key);
  QCOMPARE(r.item, l.item);
  QCOMPARE(r.type, l.type);
  QCOMPARE(r.text, l.text);
  QCOMPARE(r.count, l.count);
  QCOMPARE(r.tensor, l.tensor);
  QCOMPARE(r.repeats, l.repeats);
  QCOMPARE(r.truncated, l.truncated);
  QCOMPARE(r.children.size(), l.children.size());
  for (size_t i = 0; i < l.children.size(); ++i) {
    compareTree(r.children[i], l.children[i],
                at + "/" + QByteArray::fromStdString(l.children[i].key));
    if (QTest::currentTestFailed()) return;
  }
}

void compareDescription(const CheckpointDescription& r, const CheckpointDescription& l) {
  const QByteArray at = QByteArray::fromStdString(l.path);
  QCOMPARE(r.path, l.path);
  QCOMPARE(r.format, l.format);
  QCOMPARE(r.bigEndian, l.bigEndian);
  QCOMPARE(r.fileSize, l.fileSize);
  QCOMPARE(r.mtime, l.mtime);
  QVERIFY2(r.safety.verdict == l.safety.verdict, at);
  QCOMPARE(r.safety.sharded, l.safety.sharded);
  QCOMPARE(r.safety.dangerous, l.safety.dangerous);
  QCOMPARE(r.safety.suspicious, l.safety.suspicious);
  QCOMPARE(r.safety.error, l.safety.error);
  QCOMPARE(r.safety.worstFile, l.safety.worstFile);
  QCOMPARE(r.safety.filesWithVerdict, l.safety.filesWithVerdict);
  QCOMPARE(r.safety.scope, l.safety.scope);
  QCOMPARE(r.safety.missing, l.safety.missing);
  QCOMPARE(r.sharded, l.sharded);
  QVERIFY2(r.step == l.step, at);
  QCOMPARE(r.stepSource, l.stepSource);
  QVERIFY2(r.stepFromName == l.stepFromName, at);
  QVERIFY2(r.loss.has_value() == l.loss.has_value() && (!l.loss || sameReal(*r.loss, *l.loss)), at);
  QVERIFY2(r.run == l.run, at);
  QVERIFY2(r.stage == l.stage, at);
  QCOMPARE(r.final, l.final);
  QCOMPARE(r.hasModelState, l.hasModelState);
  QCOMPARE(r.parameterCount, l.parameterCount);
  QCOMPARE(r.modelStateKey, l.modelStateKey);
  QCOMPARE(r.ddpPrefix, l.ddpPrefix);
  QCOMPARE(r.compiledPrefix, l.compiledPrefix);
  QCOMPARE(r.entries.size(), l.entries.size());
  for (size_t i = 0; i < l.entries.size(); ++i) {
    QCOMPARE(r.entries[i].name, l.entries[i].name);
    QCOMPARE(r.entries[i].tensor, l.entries[i].tensor);
    QCOMPARE(r.entries[i].dtype, l.entries[i].dtype);
    QCOMPARE(r.entries[i].shape, l.entries[i].shape);
    QCOMPARE(r.entries[i].numel, l.entries[i].numel);
    QCOMPARE(r.entries[i].nbytes, l.entries[i].nbytes);
    QCOMPARE(r.entries[i].tiedTo, l.entries[i].tiedTo);
  }
  QCOMPARE(r.hasOptimizer, l.hasOptimizer);
  QCOMPARE(r.optimizerWithState, l.optimizerWithState);
  QCOMPARE(r.optimizerGroups, l.optimizerGroups);
  QVERIFY2(r.optimizerHyper == l.optimizerHyper, at);
  QCOMPARE(r.optimizer.size(), l.optimizer.size());
  for (size_t i = 0; i < l.optimizer.size(); ++i) {
    QCOMPARE(r.optimizer[i].index, l.optimizer[i].index);
    QCOMPARE(r.optimizer[i].name, l.optimizer[i].name);
    QCOMPARE(r.optimizer[i].step, l.optimizer[i].step);
    QCOMPARE(r.optimizer[i].stepUnreadable, l.optimizer[i].stepUnreadable);
    QCOMPARE(r.optimizer[i].shape, l.optimizer[i].shape);
    QCOMPARE(r.optimizer[i].expAvg, l.optimizer[i].expAvg);
    QCOMPARE(r.optimizer[i].expAvgSq, l.optimizer[i].expAvgSq);
    QCOMPARE(r.optimizer[i].problem, l.optimizer[i].problem);
  }
  QVERIFY2(r.config == l.config, at);
  QVERIFY2(r.metadata == l.metadata, at);
  QCOMPARE(r.metadataKeys, l.metadataKeys);
  QCOMPARE(r.notes, l.notes);
  QCOMPARE(r.tensors.size(), l.tensors.size());
  for (size_t i = 0; i < l.tensors.size(); ++i) {
    const auto &a = r.tensors[i], &b = l.tensors[i];
    QCOMPARE(a.name, b.name);
    QCOMPARE(a.dtype, b.dtype);
    QCOMPARE(a.shape, b.shape);
    QCOMPARE(a.sizes, b.sizes);
    QCOMPARE(a.elements, b.elements);
    QCOMPARE(a.bytes, b.bytes);
    QVERIFY2(a.ownerKind == b.ownerKind, at);
    QCOMPARE(a.owner, b.owner);
    QCOMPARE(a.location, b.location);
    QCOMPARE(a.meta, b.meta);
    QCOMPARE(a.joined, b.joined);
    QCOMPARE(a.error, b.error);
  }
  compareTree(r.tree, l.tree, at);
  if (QTest::currentTestFailed()) return;
  QVERIFY2(r == l, at);  // and nothing the fields above left out
}

}  // namespace

class TestRemoteDescribe : public QObject {
  Q_OBJECT

  std::unique_ptr<ckpt::remote::AgentClient> m_agent;

  Json ask(const std::string& method, const std::string& root, Json params) {
    m_agent->call("open", Json{{"path", root}});
    return m_agent->call(method, std::move(params));
  }

 private slots:
  void initTestCase() {
    // The agent straight on a pipe: what ssh would start on the host.
    m_agent = std::make_unique<ckpt::remote::AgentClient>(
        std::vector<std::string>{CKPT_CLI, "serve", "--stdio"}, "the test's agent",
        "tst_remote_describe");
  }

  // Every checkpoint the scan finds in these folders, described there and here.
  void describeEqualsLocal_data() {
    QTest::addColumn<QString>("folder");
    QTest::newRow("experiment") << QString::fromStdString(kFixtures + "/experiment");
    QTest::newRow("safety") << QString::fromStdString(kFixtures + "/safety");
    QTest::newRow("sharded") << QString::fromStdString(kFixtures + "/sharded");
    QTest::newRow("hf trainer") << QString::fromStdString(kFixtures + "/hf_trainer");
    QTest::newRow("names") << QString::fromStdString(kFixtures + "/json_names/exp");
  }
  void describeEqualsLocal() {
    QFETCH(QString, folder);
    const std::string dir = folder.toStdString();
    const ckpt::ScanResult scan = ckpt::scanDirectory(dir);
    size_t described = 0, refused = 0, tensors = 0;
    for (const ckpt::RunEntry& run : scan.runs)
      for (const ckpt::CheckpointEntry& c : run.checkpoints) {
        const QByteArray at = QByteArray::fromStdString(c.path);
        std::optional<CheckpointDescription> local;
        std::string localError;
        try {
          local = ckpt::describeCheckpointAt(c.path);
        } catch (const std::exception& e) {
          localError = e.what();
        }
        try {
          const Json answer = ask("describe", dir, Json{{"path", c.path}});
          QVERIFY2(local, ("the agent described what does not open here: " + at).constData());
          compareDescription(ckpt::remote::describeFromWire(answer.at("description")), *local);
          if (QTest::currentTestFailed()) return;
          ++described;
          tensors += local->tensors.size();
        } catch (const ckpt::remote::RemoteError& e) {
          // A file that cannot be opened: the reader's message, as here.
          QVERIFY2(!local, (at + ": " + e.what()).constData());
          QCOMPARE(QString::fromStdString(e.code()), QString("failed"));
          QCOMPARE(std::string(e.what()), localError);
          ++refused;
        }
      }
    QVERIFY(described > 0);
    QVERIFY(tensors > 0);
    qInfo("%zu described (%zu tensors), %zu refused alike", described, tensors, refused);
  }

  // The Tensor tab's numbers: every tensor's statistics and its first
  // values, computed there and here.
  void statsAndSliceEqualLocal() {
    const std::string dir = kFixtures + "/experiment";
    const ckpt::ScanResult scan = ckpt::scanDirectory(dir);
    QVERIFY(!scan.runs.empty() && !scan.runs.front().checkpoints.empty());
    const std::string path = scan.runs.front().checkpoints.back().path;
    const auto file = ckpt::CheckpointFile::open(path);
    QVERIFY(file->tensors().size() > 2);
    size_t values = 0;
    for (size_t i = 0; i < file->tensors().size(); ++i) {
      const ckpt::TensorData data = file->tensorData(i);
      const std::optional<ckpt::TensorStats> l = ckpt::computeStats(data);
      QVERIFY(l);
      const Json answer = ask("stats", dir, Json{{"path", path}, {"tensor", i}});
      const ckpt::remote::WireStats r = ckpt::remote::statsFromWire(answer.at("stats"));
      QCOMPARE(r.count, l->count);
      QCOMPARE(r.finite, l->finite);
      QCOMPARE(r.zeros, l->zeros);
      QCOMPARE(r.nans, l->nans);
      QCOMPARE(r.posInf, l->posInf);
      QCOMPARE(r.negInf, l->negInf);
      QVERIFY(sameReal(r.min, l->min));
      QVERIFY(sameReal(r.max, l->max));
      QVERIFY(sameReal(r.mean, l->mean));
      QVERIFY(sameReal(r.std, l->std));
      QVERIFY(sameReal(r.l2norm, l->l2norm));

      // From the middle, past the end: what read() gives here.
      const uint64_t first = data.numel() / 3;
      const size_t count = 700;
      std::vector<double> here(count);
      here.resize(data.read(first, count, here.data()));
      const Json s = ask("slice", dir,
                         Json{{"path", path}, {"tensor", i}, {"first", first}, {"count", count}});
      const std::vector<double> there = ckpt::remote::sliceFromWire(s, count);
      QCOMPARE(there.size(), here.size());
      for (size_t k = 0; k < here.size(); ++k) QVERIFY(sameReal(there[k], here[k]));
      values += here.size();
    }
    QVERIFY(values > 0);
  }

  // The Tensor tab's histogram and heat map (`stats` with bins and heat
  // cells) equal analyzeTensor's here, count for count and cell for cell.
  void statsPlotsEqualLocal() {
    const std::string dir = kFixtures + "/experiment";
    const ckpt::ScanResult scan = ckpt::scanDirectory(dir);
    const std::string path = scan.runs.front().checkpoints.back().path;
    const auto file = ckpt::CheckpointFile::open(path);
    ckpt::AnalysisOptions options;
    options.bins = 100;
    options.heatRows = 7;
    options.heatCols = 5;
    size_t matrices = 0;
    for (size_t i = 0; i < file->tensors().size(); ++i) {
      const auto l = ckpt::analyzeTensor(file->tensorData(i), options);
      QVERIFY(l);
      const Json answer = ask(
          "stats", dir,
          Json{{"path", path}, {"tensor", i}, {"bins", 100}, {"heat_rows", 7}, {"heat_cols", 5}});
      const auto h = ckpt::remote::histogramFromWire(answer);
      QVERIFY(h);
      QVERIFY(sameReal(h->lo, l->histogram.lo) && sameReal(h->hi, l->histogram.hi));
      QCOMPARE(h->counts, l->histogram.counts);
      const auto m = ckpt::remote::heatMapFromWire(answer);
      QVERIFY(m);
      QCOMPARE(m->rows, l->heatMap.rows);
      QCOMPARE(m->cols, l->heatMap.cols);
      QCOMPARE(m->sourceRows, l->heatMap.sourceRows);
      QCOMPARE(m->values.size(), l->heatMap.values.size());
      for (size_t k = 0; k < m->values.size(); ++k)
        QVERIFY(sameReal(m->values[k], l->heatMap.values[k]));
      if (m->rows > 0) ++matrices;
    }
    QVERIFY(matrices > 0);
    // Without bins: no histogram (an older client's request is answered as before).
    QVERIFY(
        !ckpt::remote::histogramFromWire(ask("stats", dir, Json{{"path", path}, {"tensor", 0}})));
    try {
      (void)ask("stats", dir, Json{{"path", path}, {"tensor", 0}, {"bins", -3}});
      QFAIL("bins -3 was taken");
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(QString::fromStdString(e.code()), QString("bad_field"));
      QVERIFY2(QString(e.what()).startsWith("bins"), e.what());
    }
  }

  void describeFieldErrorsNameTheField() {
    const std::string dir = kFixtures + "/experiment";
    const ckpt::ScanResult scan = ckpt::scanDirectory(dir);
    const std::string path = scan.runs.front().checkpoints.front().path;
    Json answer = ask("describe", dir, Json{{"path", path}}).at("description");
    answer["tensors"][1]["bytes"] = "many";
    try {
      (void)ckpt::remote::describeFromWire(answer);
      QFAIL("bytes that are not a number were taken");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()),
               QString("describe: description.tensors[1].bytes is not an integer"));
    }
    answer.erase("tree");
    answer["tensors"][1]["bytes"] = 4;
    try {
      (void)ckpt::remote::describeFromWire(answer);
      QFAIL("a description without its tree was taken");
    } catch (const std::runtime_error& e) {
      QCOMPARE(QString(e.what()), QString("describe: description.tree is missing"));
    }
  }

  // A request the client gives up on is cancelled on the agent, by its id:
  // a watch never ends on its own, so only the cancel can end this call;
  // the agent then goes on serving.
  void cancelReachesTheAgent() {
    const std::string dir = kFixtures + "/experiment";
    m_agent->call("open", Json{{"path", dir}});
    const auto start = std::chrono::steady_clock::now();
    const auto waited = [&start] { return std::chrono::steady_clock::now() - start; };
    int asked = 0;
    const Json answer = m_agent->call("watch", Json{{"path", dir}, {"interval_ms", 100}}, {}, [&] {
      ++asked;
      return waited() > std::chrono::milliseconds(300);
    });
    QCOMPARE(answer.value("stopped", false), true);
    QVERIFY(asked > 1);
    QVERIFY(waited() < std::chrono::seconds(5));
    // Still in step: the next answer is the next request's.
    const Json opened = m_agent->call("open", Json{{"path", dir}});
    QVERIFY(opened.contains("root"));

    // A request that the agent cancels answers `cancelled`.
    const std::string path = ckpt::scanDirectory(dir).runs.front().checkpoints.front().path;
    try {
      (void)m_agent->call("report", Json{{"command", "info"}, {"paths", {path}}}, {},
                          [] { return true; });
      // It may finish before the cancel arrives: then its answer is whole.
    } catch (const ckpt::remote::RemoteError& e) {
      QCOMPARE(QString::fromStdString(e.code()), QString("cancelled"));
    }
    QVERIFY(m_agent->call("open", Json{{"path", dir}}).contains("root"));
  }
};

QTEST_GUILESS_MAIN(TestRemoteDescribe)
#include "tst_remote_describe.moc"
