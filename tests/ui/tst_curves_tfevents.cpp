// TensorBoard event files in the app, as a person uses it: a run folder with
// a checkpoint and a job's event files opened in the window, the Curves tab
// shows a tag's curve point for point as an independent Python reader
// (tests/python/tfevents_reader.py) reads the files; a restarted job's new
// event file dropped into the folder is followed live to what a reload draws.
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
#include <QToolTip>
#include <cmath>
#include <vector>

#include "curves/curvesview.h"
#include "curves_fixture.h"
#include "mainwindow.h"
#include "window_driver.h"

using namespace ckpt;
using curves_fixture::describe;
using curves_fixture::graphPoints;
using curves_fixture::Point;
using curves_fixture::Series;

namespace {

constexpr int kLoadTimeoutMs = 60'000;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

// The Python reader's points of `run`'s `tag` under `root` (and the steps
// its restart rule noted).
Series pythonSeries(const QString& root, const QString& run, const QString& tag,
                    QStringList* restarts = nullptr) {
  QProcess p;
  p.start(QStringLiteral(CKPT_TORCH_PYTHON),
          {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/tfevents_reader.py"), root});
  Series out;
  if (!p.waitForFinished(60'000) || p.exitCode() != 0) return out;
  const QJsonObject doc = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
  const QJsonObject series = doc["runs"].toObject()[run].toObject()[tag].toObject();
  const QJsonArray points = series["points"].toArray();
  if (restarts)
    for (const QJsonValue& v : series["restarts"].toArray())
      *restarts << QString::number(qint64(v.toDouble()));
  for (const QJsonValue& v : points)
    out.push_back({qint64(v.toArray().at(0).toDouble()),
                   v.toArray().at(1).isNull() ? std::nan("") : v.toArray().at(1).toDouble()});
  return out;
}

}  // namespace

class TestCurvesTfEvents : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(kFixtures + "/tfevents/tb_damage.json"),
             "no fixtures: run ctest (make_tfevents_fixtures sets them up)");
    QVERIFY(QFile::exists(kFixtures + "/runs/tiny/tiny_step100.pt"));
  }

  void tagCurveInTheCurvesTab() {
    QTemporaryDir tmp;
    const QDir root(tmp.path());
    QVERIFY(root.mkpath("tbrun"));
    QVERIFY(QFile::copy(kFixtures + "/runs/tiny/tiny_step100.pt",
                        root.filePath("tbrun/tiny_step100.pt")));
    const QDir job(kFixtures + "/tfevents/tb/job");
    for (const QString& f : job.entryList({"events.out.tfevents.*"}, QDir::Files))
      QVERIFY(QFile::copy(job.filePath(f), root.filePath("tbrun/" + f)));

    MainWindow w;
    QString opened;
    CurvesView* view =
        ckpt::test::openOnCurvesTab(w, {tmp.path()}, QSize(1200, 800), kLoadTimeoutMs, &opened);
    QVERIFY2(view, qPrintable(opened));
    view->setPollInterval(200);

    // The tag chosen in the metric box with the keyboard, as a person would.
    auto* box = view->findChild<QComboBox*>("metric");
    QVERIFY(box);
    // The tab reads the runs on a worker once the scan is in.
    QTRY_VERIFY_WITH_TIMEOUT(!view->isLoading() && box->findText("train/lr") >= 0, kLoadTimeoutMs);
    box->setFocus();
    for (int i = 0; i < box->count() && box->currentText() != "train/lr"; ++i)
      QTest::keyClick(box,
                      box->currentIndex() < box->findText("train/lr") ? Qt::Key_Down : Qt::Key_Up);
    QCOMPARE(box->currentText(), QStringLiteral("train/lr"));
    QCOMPARE(view->plot()->yAxis->label(), QStringLiteral("train/lr"));

    QStringList restarts;
    const Series want = pythonSeries(tmp.path(), "tbrun", "train/lr", &restarts);
    QCOMPARE(want.size(), size_t(80));  // 0..39 of the first job, 40..79 of the restarted one
    QCOMPARE(graphPoints(view->rawGraph("tbrun")), want);

    // The mouse over the chart at step 50: the tooltip says the job
    // restarted where the reader's rule says, and whose points are drawn.
    QVERIFY(!restarts.isEmpty());
    view->plot()->replot();
    const QRect area = view->plot()->axisRect()->rect();
    const QPoint at(int(std::lround(view->plot()->xAxis->coordToPixel(50))), area.top() + 2);
    QToolTip::hideText();
    QTest::mouseMove(view->plot(), at + QPoint(12, 0));
    QTest::mouseMove(view->plot(), at);
    QVERIFY(QTest::qWaitFor([] { return QToolTip::isVisible(); }, 5000));
    const QString tip = QToolTip::text();
    QVERIFY2(
        tip.contains(QStringLiteral("tbrun: ")) &&
            tip.contains(QStringLiteral("(restarted at step %1: the later job's points are shown)")
                             .arg(restarts.join(", "))),
        qPrintable(tip + " / reader: " + restarts.join(", ")));

    // The job restarts again at step 60: its new event file appears in the
    // folder and is followed, not read again from scratch.
    QSignalSpy reloads(view, &CurvesView::curvesReady);
    const QString live = "events.out.tfevents.1700009000.node1.6000.0";
    QVERIFY(QFile::copy(kFixtures + "/tfevents/tb_live/" + live, root.filePath("tbrun/" + live)));
    const Series after = pythonSeries(tmp.path(), "tbrun", "train/lr");
    QCOMPARE(after.size(), size_t(65));  // 0..59, then the third job's 60..64
    QTRY_VERIFY2_WITH_TIMEOUT(graphPoints(view->rawGraph("tbrun")) == after,
                              qPrintable(describe(graphPoints(view->rawGraph("tbrun")))), 10'000);
    QCOMPARE(reloads.count(), 0);
    // Every tag of the folder lost the orphans at and after 60, as on a reload.
    box->setFocus();
    const QString loss = "loss";
    for (int i = 0; i < box->count() && box->currentText() != loss; ++i)
      QTest::keyClick(box, box->currentIndex() < box->findText(loss) ? Qt::Key_Down : Qt::Key_Up);
    QCOMPARE(box->currentText(), loss);
    const Series lossWant = pythonSeries(tmp.path(), "tbrun", "loss");
    QVERIFY(!lossWant.empty() && lossWant.back().step == 59);
    QVERIFY(std::isnan(lossWant[13].value));
    // The NaN at step 13 is no point on the chart.
    Series finite;
    for (const Point& p : lossWant)
      if (!std::isnan(p.value)) finite.push_back(p);
    const Series drawn = graphPoints(view->rawGraph("tbrun"));
    Series drawnFinite;
    for (const Point& p : drawn)
      if (!std::isnan(p.value)) drawnFinite.push_back(p);
    QCOMPARE(drawnFinite, finite);

    // File > Reload (F5) draws the same.
    QSignalSpy reloaded(view, &CurvesView::curvesReady);
    QTest::keyClick(&w, Qt::Key_F5);
    QVERIFY(reloaded.wait(kLoadTimeoutMs));
    Series again;
    for (const Point& p : graphPoints(view->rawGraph("tbrun")))
      if (!std::isnan(p.value)) again.push_back(p);
    QCOMPARE(again, finite);
  }
};

QTEST_MAIN(TestCurvesTfEvents)
#include "tst_curves_tfevents.moc"
