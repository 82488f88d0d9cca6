// A W&B run folder in the app, as a person uses it: a still-running offline
// run (its .wandb file ends in a record being written) opened in the window,
// the Curves tab shows a key's curve point for point as an independent Python
// reader (tests/python/wandb_reader.py) reads the file; what the run appends
// next is followed live, without a reload. The same for a run folder written
// by wandb before 0.10 (its wandb-history.jsonl ends in a line being written).
#include <qcustomplot.h>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <vector>

#include "../core/copy_tree.h"
#include "curves/curvesview.h"
#include "curves_fixture.h"
#include "mainwindow.h"
#include "window_driver.h"

using namespace ckpt;
using ckpt::test::copyTree;
using curves_fixture::describe;
using curves_fixture::graphPoints;
using curves_fixture::Point;
using curves_fixture::Series;

namespace {

constexpr int kLoadTimeoutMs = 60'000;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR "/wandb");
const QString kRun = QStringLiteral("offline-run-20240102_090000-def456");

// The Python reader's points of `run`'s `metric` under `root`.
Series pythonSeries(const QString& root, const QString& run, const QString& metric) {
  QProcess p;
  p.start(QStringLiteral(CKPT_TORCH_PYTHON),
          {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/wandb_reader.py"), root});
  Series out;
  if (!p.waitForFinished(60'000) || p.exitCode() != 0) return out;
  const QJsonObject doc = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
  const QJsonArray points =
      doc["runs"].toObject()[run].toObject()["series"].toObject()[metric].toArray();
  for (const QJsonValue& v : points)
    out.push_back({qint64(v.toArray().at(0).toDouble()), v.toArray().at(1).toDouble()});
  return out;
}

}  // namespace

class TestCurvesWandb : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(kFixtures + "/live_rest.bin"),
             "no fixtures: run ctest (make_wandb sets them up)");
  }

  void legacyHistoryInTheCurvesTab() {
    const QString fixtures = QStringLiteral(CKPT_FIXTURE_DIR "/wandb_legacy");
    const QString folder = QStringLiteral("run-20200301_101500-old111");
    const QString name = QStringLiteral("legacy-baseline");  // wandb-metadata.json's name
    QTemporaryDir tmp;
    const QDir root(tmp.path());
    QVERIFY(root.mkpath("wandb"));
    QVERIFY(copyTree(fixtures + "/proj/wandb/" + folder, root.filePath("wandb/" + folder)));

    MainWindow w;
    QString opened;
    CurvesView* view =
        ckpt::test::openOnCurvesTab(w, {tmp.path()}, QSize(1200, 800), kLoadTimeoutMs, &opened);
    QVERIFY2(view, qPrintable(opened));
    view->setPollInterval(200);

    const QString metric = "eval.acc";  // a dict logged under "eval"
    auto* box = view->findChild<QComboBox*>("metric");
    QVERIFY(box);
    QTRY_VERIFY_WITH_TIMEOUT(!view->isLoading() && box->findText(metric) >= 0, kLoadTimeoutMs);
    for (const QString none : {"examples", "phase", "is_best", "gradients", "system.cpu"})
      QVERIFY2(box->findText(none) < 0, qPrintable(none));
    box->setFocus();
    for (int i = 0; i < box->count() && box->currentText() != metric; ++i)
      QTest::keyClick(box, box->currentIndex() < box->findText(metric) ? Qt::Key_Down : Qt::Key_Up);
    QCOMPARE(box->currentText(), metric);
    const Series evalAcc = pythonSeries(tmp.path(), name, metric);
    QCOMPARE(evalAcc.size(), size_t(6));
    QCOMPARE(graphPoints(view->rawGraph(name)), evalAcc);

    const QString acc = "acc";
    for (int i = 0; i < box->count() && box->currentText() != acc; ++i)
      QTest::keyClick(box, box->currentIndex() < box->findText(acc) ? Qt::Key_Down : Qt::Key_Up);
    QCOMPARE(box->currentText(), acc);
    const Series want = pythonSeries(tmp.path(), name, acc);
    QCOMPARE(want.size(), size_t(28));  // the line being written is not a row yet
    QCOMPARE(graphPoints(view->rawGraph(name)), want);

    // The script finishes the line: that row is followed, nothing reloaded.
    QSignalSpy reloads(view, &CurvesView::curvesReady);
    {
      QFile rest(fixtures + "/legacy_rest.txt");
      QVERIFY(rest.open(QIODevice::ReadOnly));
      QFile history(root.filePath("wandb/" + folder + "/wandb-history.jsonl"));
      QVERIFY(history.open(QIODevice::Append));
      QCOMPARE(history.write(rest.readAll()), rest.size());
    }
    const Series after = pythonSeries(tmp.path(), name, acc);
    QCOMPARE(after.size(), size_t(29));
    QTRY_VERIFY2_WITH_TIMEOUT(graphPoints(view->rawGraph(name)) == after,
                              qPrintable(describe(graphPoints(view->rawGraph(name)))), 10'000);
    QCOMPARE(reloads.count(), 0);
  }

  void historyInTheCurvesTab() {
    QTemporaryDir tmp;
    const QDir root(tmp.path());
    QVERIFY(root.mkpath("wandb"));
    QVERIFY(copyTree(kFixtures + "/proj/wandb/" + kRun, root.filePath("wandb/" + kRun)));

    MainWindow w;
    QString opened;
    CurvesView* view =
        ckpt::test::openOnCurvesTab(w, {tmp.path()}, QSize(1200, 800), kLoadTimeoutMs, &opened);
    QVERIFY2(view, qPrintable(opened));
    view->setPollInterval(200);

    // The key chosen in the metric box with the keyboard, as a person would.
    const QString metric = "train/loss";
    auto* box = view->findChild<QComboBox*>("metric");
    QVERIFY(box);
    QTRY_VERIFY_WITH_TIMEOUT(!view->isLoading() && box->findText(metric) >= 0, kLoadTimeoutMs);
    box->setFocus();
    for (int i = 0; i < box->count() && box->currentText() != metric; ++i)
      QTest::keyClick(box, box->currentIndex() < box->findText(metric) ? Qt::Key_Down : Qt::Key_Up);
    QCOMPARE(box->currentText(), metric);
    QCOMPARE(view->plot()->yAxis->label(), metric);

    const Series want = pythonSeries(tmp.path(), kRun, metric);
    QCOMPARE(want.size(), size_t(60));  // the record being written is not one yet
    QCOMPARE(graphPoints(view->rawGraph(kRun)), want);

    // The run writes on: the rest of that record and the next one are
    // followed from where the read stopped, not read again from scratch.
    QSignalSpy reloads(view, &CurvesView::curvesReady);
    {
      QFile rest(kFixtures + "/live_rest.bin");
      QVERIFY(rest.open(QIODevice::ReadOnly));
      QFile store(root.filePath("wandb/" + kRun + "/run-def456.wandb"));
      QVERIFY(store.open(QIODevice::Append));
      QCOMPARE(store.write(rest.readAll()), rest.size());
    }
    const Series after = pythonSeries(tmp.path(), kRun, metric);
    QCOMPARE(after.size(), size_t(62));
    QTRY_VERIFY2_WITH_TIMEOUT(graphPoints(view->rawGraph(kRun)) == after,
                              qPrintable(describe(graphPoints(view->rawGraph(kRun)))), 10'000);
    QCOMPARE(reloads.count(), 0);

    // File > Reload (F5) draws the same.
    QSignalSpy reloaded(view, &CurvesView::curvesReady);
    QTest::keyClick(&w, Qt::Key_F5);
    QVERIFY(reloaded.wait(kLoadTimeoutMs));
    QCOMPARE(graphPoints(view->rawGraph(kRun)), after);
  }
};

QTEST_MAIN(TestCurvesWandb)
#include "tst_curves_wandb.moc"
