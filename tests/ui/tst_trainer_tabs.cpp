// Other trainers' runs in the Curves, Drift and Compare tabs, as a person
// meets them. The folder a trainer left opened in the window, Ctrl+2, each
// metric picked in the metric box with the keyboard, and the run's line
// drawn point for point as an independent reader of that trainer's files
// reads them:
//   * MLflow's file store and Lightning's metrics.csv
//     (tests/python/make_trainer_layouts.py), against trainer_layouts_reader.py;
//   * nanoGPT's console log (tests/python/make_nanogpt.py), against the
//     regex reader's expected.json;
//   * torchtitan's tb/<datetime>/ event files (make_megatron_titan.py),
//     against tfevents_reader.py.
// A Megatron-LM save of two tensor-parallel ranks: Drift through the run
// (Ctrl+Shift+D on its row) and Compare with the previous save (Ctrl+D on
// its newest checkpoint) compare the whole tensors, the ranks' slices
// joined, as PyTorch computes the change (tests/python/megatron_drift.py).
#include <qcustomplot.h>
#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTest>
#include <QTreeView>
#include <cmath>

#include "browser/browserpanel.h"
#include "ckpt/analysis/diff.h"
#include "compare/compareview.h"
#include "compare/diffmodel.h"
#include "compare/driftview.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "window_driver.h"

using namespace ckpt;

namespace {

constexpr int kTimeoutMs = 60'000;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

QJsonObject pythonJson(const QString& script, const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(CKPT_TORCH_PYTHON),
          QStringList{QStringLiteral(CKPT_SOURCE_DIR "/tests/python/") + script} + args);
  if (!p.waitForFinished(kTimeoutMs) || p.exitCode() != 0) return {};
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// Close enough for a float32 model's change summed in double on both sides.
bool near(double got, double want) {
  return std::abs(got - want) <= 1e-6 * std::max(1.0, std::abs(want));
}

QModelIndex rowNamed(const QAbstractItemModel* m, const QString& name,
                     const QModelIndex& parent = {}) {
  for (int r = 0; r < m->rowCount(parent); ++r)
    if (m->index(r, 0, parent).data().toString() == name) return m->index(r, 0, parent);
  return {};
}

void clickRow(QTreeView* view, const QModelIndex& index) {
  view->scrollTo(index);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(index).center());
}

}  // namespace

class TestTrainerTabs : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(kFixtures + "/nanogpt/expected.json"),
             "no fixtures: run ctest (make_nanogpt, make_trainer_layouts, make_megatron_titan)");
  }

  void everyMetricPointForPoint_data() {
    QTest::addColumn<QString>("folder");  // what the person opens
    QTest::addColumn<QString>("run");     // the run's name in the window
    // {metric: [[step, value|null, ...], ...]} as the trainer's reader reads them.
    QTest::addColumn<QJsonObject>("want");

    const QJsonObject ml =
        pythonJson("trainer_layouts_reader.py", {kFixtures + "/trainer_layouts/ml"});
    QTest::newRow("MLflow") << kFixtures + "/trainer_layouts/ml/mlruns"
                            << "lr3e-4-seed2" << ml["runs"].toObject()["lr3e-4-seed2"].toObject();

    // Lightning's CSVLogger metrics.csv (a NaN cell a gap), as
    // trainer_layouts_reader.py reads it; the TensorBoardLogger's tags that
    // the CSV also has are drawn from the CSV.
    const QJsonObject lt =
        pythonJson("trainer_layouts_reader.py", {kFixtures + "/trainer_layouts/lt/lightning_logs"});
    QTest::newRow("Lightning") << kFixtures + "/trainer_layouts/lt/lightning_logs"
                               << "version_0" << lt["runs"].toObject()["version_0"].toObject();

    const QJsonObject nano = readJson(kFixtures + "/nanogpt/expected.json");
    QTest::newRow("nanoGPT") << kFixtures + "/nanogpt" << nano["run"].toString()
                             << nano["series"].toObject();

    const QJsonObject tb =
        pythonJson("tfevents_reader.py", {kFixtures + "/megatron_titan/titan/outputs/tb"});
    const QJsonObject tags = tb["runs"].toObject()["20250101-1200"].toObject();
    QJsonObject titan;
    for (const QString& tag : tags.keys()) titan[tag] = tags[tag].toObject()["points"];
    QTest::newRow("torchtitan") << kFixtures + "/megatron_titan/titan"
                                << "outputs" << titan;
  }

  void everyMetricPointForPoint() {
    QFETCH(QString, folder);
    QFETCH(QString, run);
    QFETCH(QJsonObject, want);
    QVERIFY2(want.size() >= 2, qPrintable(folder + ": the reader found " +
                                          QString::number(want.size()) + " metrics"));

    MainWindow w;
    QString why;
    CurvesView* curves =
        ckpt::test::openOnCurvesTab(w, {folder}, QSize(1000, 700), kTimeoutMs, &why);
    QVERIFY2(curves, qPrintable(why));
    QTRY_VERIFY_WITH_TIMEOUT(!curves->isLoading() && !curves->metrics().isEmpty(), kTimeoutMs);
    for (const QString& metric : want.keys()) {
      QVERIFY2(ckpt::test::pickMetric(curves, metric),
               qPrintable(metric + " among " + curves->metrics().join(", ")));
      const QString d =
          ckpt::test::differsFromPoints(curves->rawGraph(run), want[metric].toArray());
      QVERIFY2(d.isEmpty(), qPrintable(run + " " + metric + ": " + d));
    }
  }

  void megatronDriftAndCompareJoinTheRanks() {
    const QString save = kFixtures + "/megatron_titan/mg/tp";
    const QJsonObject want =
        pythonJson("megatron_drift.py", {save + "/iter_0000100", save + "/iter_0000200"});
    QVERIFY2(want["tensors"].toInt() > 0, "megatron_drift.py failed");

    MainWindow w;
    w.resize(1000, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.activateWindow();
    QVERIFY(ckpt::test::openAndWait(w, {kFixtures + "/megatron_titan/mg"}, kTimeoutMs));
    QTreeView* view = w.checkpointView();
    const QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
    const QModelIndex run = rowNamed(proxy, "tp");
    QVERIFY(run.isValid());

    // Drift through the run: its row clicked, Ctrl+Shift+D.
    clickRow(view, run);
    QCOMPARE(view->currentIndex(), run);
    QSignalSpy drifted(w.driftView(), &DriftView::finished);
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    QVERIFY(drifted.wait(kTimeoutMs));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.driftView()));
    QCOMPARE(w.driftView()->steps().size(), size_t(1));
    const DriftView::Step& step = w.driftView()->steps()[0];
    QVERIFY2(step.error.isEmpty(), qPrintable(step.error));
    QVERIFY2(near(step.total, want["total"].toDouble()),
             qPrintable(QString("drift %1, PyTorch on the joined tensors %2")
                            .arg(step.total, 0, 'g', 17)
                            .arg(want["total"].toDouble(), 0, 'g', 17)));

    // Compare with the previous save: the newest checkpoint's row, Ctrl+D.
    view->expand(run);
    QTRY_VERIFY(proxy->rowCount(run) == 2);
    const QModelIndex newest = proxy->index(1, 0, run);
    clickRow(view, newest);
    QCOMPARE(view->currentIndex(), newest);
    QSignalSpy compared(w.compareView(), &CompareView::finished);
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
    QVERIFY(compared.wait(kTimeoutMs));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.compareView()));
    const CheckpointDiff* d = w.compareView()->model()->diff();
    QVERIFY(d);
    const QJsonObject rel = want["rel_l2"].toObject();
    QCOMPARE(int(d->tensors.size()), rel.size());
    uint64_t elements = 0;
    for (const TensorDiff& t : d->tensors) {
      const QString name = QString::fromStdString(t.name);
      QVERIFY2(rel.contains(name), qPrintable(name + " is no tensor PyTorch joined"));
      QVERIFY2(near(t.relL2, rel[name].toDouble()),
               qPrintable(
                   QString("%1: %2, PyTorch %3").arg(name).arg(t.relL2).arg(rel[name].toDouble())));
      elements += t.numel;
    }
    QCOMPARE(elements, uint64_t(want["elements"].toDouble()));
  }
};

QTEST_MAIN(TestTrainerTabs)
#include "tst_trainer_tabs.moc"
