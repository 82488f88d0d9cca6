// Many runs drawn apart in the Curves tab (no grouping), as a person sees
// them: every run's raw curve holds its logged values exactly where drawn
// (they are read in the series' own column now, not copied), the drawn
// curves cost 16 bytes a point besides the series (they were 40), lines are
// thin while more than 50 runs are drawn and thick again when a filter
// typed in the runs table leaves fewer, and hovering a run names its step
// and raw value. Runs are written here with values computed from a formula
// (the truth); one run logs a spike, one logs some lines without a wall
// time (its points drawn in another order on the wall-time axis).
#include <qcustomplot.h>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <cmath>

#include "curves/curvesview.h"
#include "curves_fixture.h"
#include "textformat.h"

using namespace ckpt;

namespace {

constexpr int kRuns = 60;
constexpr int kSteps = 3000;
constexpr int kSpikeRun = 7, kSpikeStep = 1234;
constexpr int kGapRun = 11;  // logs no wall time on every 7th line

// What run r logged at `step` (exactly representable: a quarter-step grid
// of small integers over a power of two).
double logged(int r, int step) {
  if (r == kSpikeRun && step == kSpikeStep) return 1000.0;
  return double((step * 37 + r * 101) % 997) / 64.0;
}

QString runName(int r) {
  return QString("run%1").arg(r, 3, 10, QChar('0'));
}

}  // namespace

class TestCurvesMany : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

 private slots:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    for (int r = 0; r < kRuns; ++r) {
      QVERIFY(QDir(m_dir.path()).mkpath(runName(r)));
      QFile f(QDir(m_dir.path()).filePath(runName(r) + "/metrics.jsonl"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      QByteArray lines;
      for (int step = 1; step <= kSteps; ++step) {
        const bool wall = !(r == kGapRun && step % 7 == 0);
        lines += QString("{\"step\": %1, \"loss\": %2%3}\n")
                     .arg(step)
                     .arg(logged(r, step), 0, 'g', 17)
                     .arg(wall ? QString(", \"wall_time\": %1").arg(step * 0.5) : QString())
                     .toUtf8();
      }
      QCOMPARE(f.write(lines), lines.size());
    }
  }

  void runsDrawnApart() {
    CurvesView view;
    view.resize(1280, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(curves_fixture::load(view, m_dir.path()));
    QCOMPARE(view.groupBy(), QStringLiteral("none"));  // no seeds: every run its own line
    QCOMPARE(int(view.runs().size()), kRuns);

    // Each raw curve: the logged values at their steps, its first and last
    // point, and the spike; lines 1 px with 60 runs drawn.
    for (int r = 0; r < kRuns; ++r) {
      const QCPGraph* raw = view.rawGraph(runName(r));
      QVERIFY2(raw && raw->visible(), qPrintable(runName(r)));
      const auto points = curves_fixture::graphPoints(raw);
      QVERIFY(points.size() > 100);
      QCOMPARE(points.front().step, qint64(1));
      QCOMPARE(points.back().step, qint64(kSteps));
      bool spike = false;
      for (const auto& p : points) {
        if (p.value != logged(r, int(p.step)))
          QFAIL(qPrintable(QString("%1 step %2: drawn %3, logged %4")
                               .arg(runName(r))
                               .arg(p.step)
                               .arg(p.value)
                               .arg(logged(r, int(p.step)))));
        spike = spike || p.value == 1000.0;
      }
      QCOMPARE(spike, r == kSpikeRun);
      QCOMPARE(view.smoothedGraph(runName(r))->pen().widthF(), 1.0);
    }
    // x's and smoothed values: 16 bytes a point, not the 40 of copies.
    const size_t points = size_t(kRuns) * kSteps;
    QVERIFY2(view.drawnBytes() <= points * 16 + points / 2,
             qPrintable(QString("%1 bytes for %2 points").arg(view.drawnBytes()).arg(points)));

    // Hover run 7 at its spike: the tooltip names its raw value and step.
    QCustomPlot* plot = view.plot();
    plot->xAxis->setRange(kSpikeStep - 30, kSpikeStep + 30);
    plot->replot();
    const QPoint at(
        int(plot->xAxis->coordToPixel(kSpikeStep)),
        int(plot->yAxis->coordToPixel(
            view.smoothedGraph(runName(kSpikeRun))->data()->findBegin(kSpikeStep, false)->value)));
    QTest::mouseMove(plot, at);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY2(QToolTip::text().contains(runName(kSpikeRun)) &&
                 QToolTip::text().contains("(raw 1000) at step 1234"),
             qPrintable(QToolTip::text()));

    // A filter typed in the runs table leaves ten runs: thick lines again.
    auto* filter = view.findChild<QLineEdit*>("runsFilter");
    QVERIFY(filter && filter->isVisible());
    filter->setFocus();
    QTest::keyClicks(filter, "name ~ run00");
    QTest::keyClick(filter, Qt::Key_Return);
    QTRY_VERIFY(!view.smoothedGraph(runName(20))->visible());
    for (int r = 0; r < 10; ++r) QCOMPARE(view.smoothedGraph(runName(r))->pen().widthF(), 2.0);
  }

  void wallTimeAxisWithMissingTimes() {
    // The run without a wall time on some lines is drawn without those
    // points on the wall-time axis, every other value where it was logged.
    CurvesView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(curves_fixture::load(view, m_dir.path()));
    auto* axis = view.findChild<QComboBox*>("xaxis");
    QVERIFY(axis);
    const int wall = axis->findText("Wall time");
    QVERIFY(wall >= 0);
    axis->setFocus();
    QTest::keyClicks(axis, "Wall");
    QCOMPARE(axis->currentIndex(), wall);
    const QCPGraph* raw = view.rawGraph(runName(kGapRun));
    QVERIFY(raw);
    const auto points = curves_fixture::graphPoints(raw);  // keys are wall times here
    QVERIFY(points.size() > 100);
    for (auto it = raw->data()->constBegin(); it != raw->data()->constEnd(); ++it) {
      const int step = int(std::lround(it->key / 0.5));
      QVERIFY2(step % 7 != 0, qPrintable(QString("step %1 has no wall time").arg(step)));
      QCOMPARE(it->value, logged(kGapRun, step));
    }
  }
};

QTEST_MAIN(TestCurvesMany)
#include "tst_curves_many.moc"
