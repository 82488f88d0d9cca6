// Many runs in the Curves tab, as a person uses it: zooming with the wheel
// keeps a one-point spike drawn (M4 through the core, on what the graphs
// hold, not on the screen), the smoothing methods chosen from their box
// against Python's numbers (tests/python/curves_drawing_fixtures.py).
#include <qcustomplot.h>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QPushButton>
#include <QScopeGuard>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QSplitter>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QTreeWidget>
#include <QWheelEvent>
#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "curves/curvesview.h"
#include "curves_fixture.h"
#include "textformat.h"
#include "workpool.h"

using namespace ckpt;

namespace {

using curves_fixture::load;
using curves_fixture::readJson;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

// The graph's points by key.
std::map<double, double> graphMap(const QCPGraph* g) {
  std::map<double, double> out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    out[it->key] = it->value;
  return out;
}

void wheel(QWidget* w, QPointF pos, int notches) {
  QWheelEvent ev(pos, w->mapToGlobal(pos), QPoint(), QPoint(0, 120 * notches), Qt::NoButton,
                 Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(w, &ev);
}

}  // namespace

class TestCurvesSweep : public QObject {
  Q_OBJECT

 private slots:
  void init();
  void spikeDrawnAtEveryZoom();
  void timeWeightedEmaMatchesPython();
  void groupsAgainstNumpy();
  void expandAndHover();
  void choicesRemembered();
  void rememberedChoicesIgnoreInvalid();
  void cancelReading();
};

void TestCurvesSweep::init() {
  // Each test starts from the Curves tab's defaults, not from what the last
  // one chose with the keys or the mouse (remembered in QSettings).
  QSettings().remove("curves");
}

void TestCurvesSweep::spikeDrawnAtEveryZoom() {
  const QJsonObject truth = readJson(kFixtures + "/curves_drawing_truth.json")["spike"].toObject();
  QVERIFY(!truth.isEmpty());
  const double spikeStep = truth["step"].toDouble();
  const double spikeValue = truth["value"].toDouble();
  const QJsonArray first = truth["first"].toArray(), last = truth["last"].toArray();

  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kFixtures + "/curves_spike"));
  QCustomPlot* plot = view.plot();
  QCPGraph* raw = view.rawGraph("spike");
  QVERIFY(raw && raw->visible());

  // Every zoom level: the spike, the curve's first and last point, and no
  // more than M4's 4 points per pixel column (+ the 4 at the edges).
  auto check = [&](const char* when) {
    const std::map<double, double> drawn = graphMap(raw);
    const int pixels = plot->axisRect()->width();
    QVERIFY2(
        drawn.size() <= size_t(4 * pixels + 4),
        qPrintable(QString("%1: %2 points for %3 pixels").arg(when).arg(drawn.size()).arg(pixels)));
    QVERIFY2(drawn.count(spikeStep) && drawn.at(spikeStep) == spikeValue,
             qPrintable(QString("%1: the spike is not drawn").arg(when)));
    QVERIFY2(
        drawn.count(first[0].toDouble()) && drawn.at(first[0].toDouble()) == first[1].toDouble(),
        qPrintable(QString("%1: the first point is not drawn").arg(when)));
    QVERIFY2(drawn.count(last[0].toDouble()) && drawn.at(last[0].toDouble()) == last[1].toDouble(),
             qPrintable(QString("%1: the last point is not drawn").arg(when)));
  };
  check("fitted");
  QVERIFY(graphMap(raw).size() < 200'000 / 10);

  // Zoom in with the wheel around the spike, as far as single steps.
  for (int i = 0; i < 6; ++i) {
    const QPointF at(plot->xAxis->coordToPixel(spikeStep), plot->axisRect()->center().y());
    const double before = plot->xAxis->range().size();
    wheel(plot, at, 8);
    QVERIFY(plot->xAxis->range().size() < before * 0.5);
    QVERIFY(plot->xAxis->range().contains(spikeStep));
    check(qPrintable(QString("zoom %1").arg(i + 1)));
  }
  // Zoomed this far every raw point in view is drawn.
  const QCPRange range = plot->xAxis->range();
  QVERIFY2(range.size() < plot->axisRect()->width(), qPrintable(QString::number(range.size())));
  const std::map<double, double> drawn = graphMap(raw);
  for (double step = std::ceil(range.lower); step <= range.upper; ++step)
    QVERIFY2(drawn.count(step), qPrintable(QString("step %1 in view is not drawn").arg(step)));

  // A narrower window: decimated again for its width.
  view.resize(500, 700);
  QTRY_VERIFY(plot->axisRect()->width() < 500);
  plot->replot();
  view.fitToData();
  check("narrow, fitted");
}

void TestCurvesSweep::timeWeightedEmaMatchesPython() {
  const QJsonObject truth =
      readJson(kFixtures + "/curves_drawing_truth.json")["time_ema"].toObject();
  QVERIFY(!truth.isEmpty());
  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kFixtures + "/curves_density"));
  QCOMPARE(view.smoothing(), truth["weight"].toDouble());

  // Chosen from the box with the keyboard: EMA -> Time-weighted EMA.
  auto* box = view.findChild<QComboBox*>("smoothingMethod");
  QVERIFY(box && box->isVisible());
  QCOMPARE(box->currentText(), QStringLiteral("EMA"));
  box->setFocus();
  QTest::keyClick(box, Qt::Key_Down);
  QCOMPARE(box->currentText(), QStringLiteral("Time-weighted EMA"));
  QCOMPARE(view.smoothingMethod(), SmoothingMethod::TimeWeightedEma);
  QVERIFY2(std::abs(view.smoothingParameters().span - truth["half_life"].toDouble()) < 1e-9,
           qPrintable(QString::number(view.smoothingParameters().span)));
  QVERIFY2(view.statusText().contains("time-weighted EMA, half-life"),
           qPrintable(view.statusText()));

  for (const char* run : {"dense", "sparse"}) {
    std::map<double, double> want;
    for (const QJsonValue& v : truth[run].toArray())
      want[v.toArray().at(0).toDouble()] = v.toArray().at(1).toDouble();
    const std::map<double, double> drawn = graphMap(view.smoothedGraph(run));
    QVERIFY(drawn.size() > 100);
    for (const auto& [step, value] : drawn) {
      QVERIFY2(want.count(step), qPrintable(QString("%1: step %2 not logged").arg(run).arg(step)));
      QVERIFY2(std::abs(value - want.at(step)) <= 1e-12 * std::abs(want.at(step)),
               qPrintable(QString("%1 at step %2: %3, Python %4")
                              .arg(run)
                              .arg(step)
                              .arg(value, 0, 'g', 17)
                              .arg(want.at(step), 0, 'g', 17)));
    }
  }
  // The same curve logged every step and every 10 steps: the same line
  // where both logged, within what sampling allows (a point holds its value
  // over its 10 steps: 10 * max |y'| < 0.05 here).
  const std::map<double, double> dense = graphMap(view.smoothedGraph("dense"));
  const std::map<double, double> sparse = graphMap(view.smoothedGraph("sparse"));
  int compared = 0;
  for (const auto& [step, value] : sparse)
    if (dense.count(step) && step >= 100) {
      QVERIFY2(std::abs(dense.at(step) - value) < 0.05, qPrintable(QString::number(step)));
      ++compared;
    }
  QVERIFY(compared > 20);

  // And on to the moving average: a different line, every run still drawn.
  QTest::keyClick(box, Qt::Key_Down);
  QCOMPARE(view.smoothingMethod(), SmoothingMethod::CentredMovingAverage);
  QVERIFY(graphMap(view.smoothedGraph("sparse")) != sparse);
  QVERIFY(view.statusText().contains("centred moving average over"));
}

namespace {

const QString kSweep = kFixtures + "/sweep/sweep";

// numpy's statistics of the group of learning rate `lr` (sweep_fixtures.py).
QJsonObject numpyGroup(double lr) {
  const QJsonObject groups =
      readJson(kFixtures + "/sweep/sweep_reference.json")["groups"].toObject();
  for (auto it = groups.begin(); it != groups.end(); ++it)
    if (std::abs(it.key().toDouble() - lr) <= 1e-15) return it.value().toObject();
  return {};
}

// The drawn points of `g` against numpy's `field` at the same steps.
bool matchesNumpy(const QCPGraph* g, const QJsonObject& ref, const char* field,
                  const std::function<double(size_t)>& want, QString* why) {
  const QJsonArray steps = ref["steps"].toArray();
  std::map<double, size_t> at;
  for (qsizetype i = 0; i < steps.size(); ++i) at[steps[i].toDouble()] = size_t(i);
  size_t n = 0;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it, ++n) {
    if (!at.count(it->key)) {
      *why = QString("%1: step %2 is not numpy's").arg(field).arg(it->key);
      return false;
    }
    const double w = want(at.at(it->key));
    if (std::abs(it->value - w) > 1e-9 * std::max(1.0, std::abs(w))) {
      *why = QString("%1 at step %2: %3, numpy %4")
                 .arg(field)
                 .arg(it->key)
                 .arg(it->value, 0, 'g', 17)
                 .arg(w, 0, 'g', 17);
      return false;
    }
  }
  if (n < 100) {
    *why = QString("%1: only %2 points drawn").arg(field).arg(n);
    return false;
  }
  return true;
}

}  // namespace

void TestCurvesSweep::groupsAgainstNumpy() {
  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kSweep));
  QCOMPARE(view.runs().size(), size_t(15));
  // Runs with a seed: grouped by all but the seed at first. lr1e-3_seed4
  // alone has warmup_steps: a row of its own.
  QCOMPARE(view.groupBy(), QStringLiteral("all-but"));
  QCOMPARE(view.groupLabels().size(), 3);
  QCOMPARE(view.legend()->tree()->topLevelItemCount(), 4);
  // A group row leaves out the keys its runs lack, and the first key is
  // the legend's heading: "0.001 (4 runs)" under "learning_rate", not
  // "learning_rate=0.001, warmup_steps=(none) (4 runs)"; that is its tooltip.
  QTreeWidget* legendTree = view.legend()->tree();
  QVERIFY(!legendTree->isHeaderHidden());
  QCOMPARE(legendTree->headerItem()->text(0), QStringLiteral("learning_rate"));
  int groupRows = 0;
  for (int i = 0; i < 4; ++i) {
    const QTreeWidgetItem* row = legendTree->topLevelItem(i);
    if (row->childCount() == 0) continue;  // lr1e-3_seed4, a group of one: its run
    ++groupRows;
    const QString lr = row->toolTip(0).section('=', 1).section(',', 0, 0);
    QCOMPARE(row->text(0), lr + QString(" (%1 runs)").arg(row->childCount()));
    QVERIFY2(row->toolTip(0).startsWith("learning_rate=" + lr + ", warmup_steps=(none) ("),
             qPrintable(row->toolTip(0)));
  }
  QCOMPARE(groupRows, 3);

  // Group by the learning rate, chosen with the keyboard.
  auto* box = view.findChild<QComboBox*>("groupBy");
  QVERIFY(box && box->isVisible());
  box->setFocus();
  QTest::keyClicks(box, "learning");
  QCOMPARE(box->currentText(), QStringLiteral("learning_rate"));
  QCOMPARE(view.groupBy(), QStringLiteral("learning_rate"));
  const QStringList labels = view.groupLabels();
  QCOMPARE(labels.size(), 3);
  // Three lines, three bands, no run drawn alone; three legend rows of five runs.
  int lines = 0;
  for (int i = 0; i < view.plot()->graphCount(); ++i)
    if (view.plot()->graph(i)->visible() && view.plot()->graph(i)->brush().style() != Qt::NoBrush)
      ++lines;
  QCOMPARE(lines, 3);  // the filled upper band edges
  // A run folded into its group's line keeps no graph of its own (memory).
  for (const CurveRun& run : view.runs()) QVERIFY(!view.smoothedGraph(run.name));
  QTreeWidget* tree = view.legend()->tree();
  QCOMPARE(tree->topLevelItemCount(), 3);
  for (int i = 0; i < 3; ++i) QCOMPARE(tree->topLevelItem(i)->childCount(), 5);
  // Each row says its value (the heading names the key) and its runs; the
  // whole label is its tooltip.
  QCOMPARE(tree->headerItem()->text(0), QStringLiteral("learning_rate"));
  for (int i = 0; i < 3; ++i) {
    const QTreeWidgetItem* row = tree->topLevelItem(i);
    QCOMPARE(row->text(0), labels[i].section('=', 1) + " (5 runs)");
    QCOMPARE(row->toolTip(0), labels[i] + " (5 runs)");
  }

  // Raw values: smoothing to 0 with the keyboard.
  auto* slider = view.findChild<QSlider*>("smoothing");
  slider->setFocus();
  QTest::keyClick(slider, Qt::Key_Home);
  QCOMPARE(view.smoothing(), 0.0);

  auto* lineBox = view.findChild<QComboBox*>("groupLine");
  auto* bandBox = view.findChild<QComboBox*>("groupBand");
  for (const QString& label : labels) {
    const double lr = label.section('=', 1).toDouble();
    const QJsonObject ref = numpyGroup(lr);
    QVERIFY2(!ref.isEmpty(), qPrintable(label));
    auto field = [&](const char* name) {
      return [arr = ref[name].toArray()](size_t i) { return arr[qsizetype(i)].toDouble(); };
    };
    QString why;
    QVERIFY2(matchesNumpy(view.groupLine(label), ref, "mean", field("mean"), &why),
             qPrintable(label + ": " + why));
    const auto [low, high] = view.groupBandGraphs(label);
    QVERIFY2(matchesNumpy(low, ref, "min", field("min"), &why), qPrintable(label + ": " + why));
    QVERIFY2(matchesNumpy(high, ref, "max", field("max"), &why), qPrintable(label + ": " + why));
    // How many runs a step has, as numpy counted them, and the tooltip says so.
    std::vector<int> counts;
    for (const QJsonValue& v : ref["runs"].toArray()) counts.push_back(v.toInt());
    QCOMPARE(view.groupRunCounts(label), counts);
    const QJsonArray steps = ref["steps"].toArray();
    const qsizetype late = steps.size() - 3;  // past the end of some runs
    const QString tip = view.valuesAt(steps[late].toDouble());
    QVERIFY2(tip.contains(QString("%1: mean").arg(label)) &&
                 tip.contains(QString("%1 of 5 at step %2")
                                  .arg(countText(size_t(counts[size_t(late)]), "run", "runs"))
                                  .arg(qint64(steps[late].toDouble()))),
             qPrintable(tip));
  }
  // The std band and the median line, chosen with the keyboard.
  bandBox->setFocus();
  QTest::keyClick(bandBox, Qt::Key_Down);
  lineBox->setFocus();
  QTest::keyClick(lineBox, Qt::Key_Down);
  for (const QString& label : view.groupLabels()) {
    const QJsonObject ref = numpyGroup(label.section('=', 1).toDouble());
    const QJsonArray mean = ref["mean"].toArray(), sd = ref["std"].toArray(),
                     median = ref["median"].toArray();
    QString why;
    QVERIFY2(matchesNumpy(
                 view.groupLine(label), ref, "median",
                 [&](size_t i) { return median[qsizetype(i)].toDouble(); }, &why),
             qPrintable(why));
    QVERIFY2(
        matchesNumpy(
            view.groupBandGraphs(label).first, ref, "mean-std",
            [&](size_t i) { return mean[qsizetype(i)].toDouble() - sd[qsizetype(i)].toDouble(); },
            &why),
        qPrintable(why));
    QVERIFY2(
        matchesNumpy(
            view.groupBandGraphs(label).second, ref, "mean+std",
            [&](size_t i) { return mean[qsizetype(i)].toDouble() + sd[qsizetype(i)].toDouble(); },
            &why),
        qPrintable(why));
  }
  // Percentiles.
  bandBox->setFocus();
  QTest::keyClick(bandBox, Qt::Key_Down);
  for (const QString& label : view.groupLabels()) {
    const QJsonObject ref = numpyGroup(label.section('=', 1).toDouble());
    const QJsonArray p25 = ref["p25"].toArray(), p75 = ref["p75"].toArray();
    QString why;
    QVERIFY2(matchesNumpy(
                 view.groupBandGraphs(label).first, ref, "p25",
                 [&](size_t i) { return p25[qsizetype(i)].toDouble(); }, &why),
             qPrintable(why));
    QVERIFY2(matchesNumpy(
                 view.groupBandGraphs(label).second, ref, "p75",
                 [&](size_t i) { return p75[qsizetype(i)].toDouble(); }, &why),
             qPrintable(why));
  }

  // No groups: one line per run, one legend row per run, in natural order.
  box->setFocus();
  QTest::keyClick(box, Qt::Key_Home);
  QCOMPARE(view.groupBy(), QStringLiteral("none"));
  QVERIFY(view.groupLabels().isEmpty());
  QCOMPARE(tree->topLevelItemCount(), 15);
  QVERIFY(tree->isHeaderHidden());  // rows name their runs
  for (const CurveRun& run : view.runs()) QVERIFY(view.smoothedGraph(run.name)->visible());
  QCOMPARE(tree->topLevelItem(0)->text(0), QStringLiteral("lr1e-3_seed0"));
}

void TestCurvesSweep::expandAndHover() {
  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kSweep));
  auto* box = view.findChild<QComboBox*>("groupBy");
  box->setFocus();
  QTest::keyClicks(box, "learning");
  QCOMPARE(view.groupBy(), QStringLiteral("learning_rate"));
  QTreeWidget* tree = view.legend()->tree();
  QTreeWidgetItem* row = tree->topLevelItem(1);
  const QString label = view.groupLabels().at(1);
  QVERIFY2(row->toolTip(0).startsWith(label + " ("), qPrintable(row->toolTip(0)));

  // Expand the group's row with the keyboard: its five runs are drawn, in its colour.
  QTest::mouseClick(tree->viewport(), Qt::LeftButton, {}, tree->visualItemRect(row).center());
  QCOMPARE(tree->currentItem(), row);
  QTest::keyClick(tree, Qt::Key_Right);
  QVERIFY(row->isExpanded());
  QStringList members;
  for (int j = 0; j < row->childCount(); ++j) members << row->child(j)->text(0);
  QCOMPARE(members.size(), 5);
  for (const QString& run : members) {
    QVERIFY2(view.smoothedGraph(run)->visible(), qPrintable(run));
    QCOMPARE(view.smoothedGraph(run)->pen().color().rgb(),
             view.groupLine(label)->pen().color().rgb());
  }
  for (const CurveRun& run : view.runs())
    if (!members.contains(run.name)) QVERIFY(!view.smoothedGraph(run.name));  // still folded
  // Unticking a run hides it; collapsing hides them all again.
  QTreeWidgetItem* child = row->child(0);
  const QRect r = tree->visualItemRect(child);
  QTest::keyClick(tree, Qt::Key_Down);
  QCOMPARE(tree->currentItem(), child);
  QTest::keyClick(tree, Qt::Key_Space);
  QCOMPARE(child->checkState(0), Qt::Unchecked);
  QVERIFY(!view.smoothedGraph(members[0])->visible());
  QVERIFY(!r.isEmpty());
  QTest::keyClick(tree, Qt::Key_Up);
  QTest::keyClick(tree, Qt::Key_Left);
  QVERIFY(!row->isExpanded());
  for (const QString& run : members) QVERIFY(!view.smoothedGraph(run));  // dropped again

  // Hover a group's line: it is highlighted, and its legend row too.
  QCustomPlot* plot = view.plot();
  QCPGraph* line = view.groupLine(label);
  const auto mid = line->data()->at(line->data()->size() / 3);
  const QPoint at(int(plot->xAxis->coordToPixel(mid->key)),
                  int(plot->yAxis->coordToPixel(mid->value)));
  QTest::mouseMove(plot, at);
  QTRY_VERIFY(view.highlighted() == (LegendKey{true, 1}));
  QCOMPARE(tree->currentItem(), row);
  // Away from every line: nothing highlighted.
  QTest::mouseMove(plot, QPoint(plot->axisRect()->left() + 2, plot->axisRect()->top() + 2));
  QTRY_VERIFY(view.highlighted().index < 0);
  // Hover the legend row of another group: its line is highlighted.
  QTreeWidgetItem* other = tree->topLevelItem(2);
  QTest::mouseMove(tree->viewport(), tree->visualItemRect(other).center());
  QTRY_VERIFY(view.highlighted() == (LegendKey{true, 2}));

  // The legend's search keeps the rows that match.
  view.legend()->search()->setFocus();
  QTest::keyClicks(view.legend()->search(), "seed3");
  QCOMPARE(view.legend()->shownRows(), 6);  // three groups, each with its seed3
}

namespace {

// A drag of `splitter`'s handle by `by` pixels (along its orientation), as a
// person drags it with the mouse.
void dragHandle(QSplitter* splitter, int by) {
  QSplitterHandle* handle = splitter->handle(1);
  const QPoint from = handle->rect().center();
  const QPoint to =
      from + (splitter->orientation() == Qt::Horizontal ? QPoint(by, 0) : QPoint(0, by));
  QTest::mousePress(handle, Qt::LeftButton, {}, from);
  QTest::mouseMove(handle, (from + to) / 2);
  QTest::mouseMove(handle, to);
  QTest::mouseRelease(handle, Qt::LeftButton, {}, to);
}

// When the runs are read, the Cancel button beside the status line is
// hidden; the layout that gives its height back to the splitters is posted,
// not done. Done here, so that sizes are those a person sees (under load the
// splitters were read before it, 8 px short).
void settleLayout() {
  QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
}

QString sizesOf(const QSplitter* s) {
  return QString("%1,%2").arg(s->sizes().value(0)).arg(s->sizes().value(1));
}

}  // namespace

void TestCurvesSweep::choicesRemembered() {
  // Chosen as a person chooses: the metric and the grouping with the keys,
  // the splitters dragged with the mouse.
  QString chartSizes, tableSizes;
  {
    CurvesView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(load(view, kSweep));
    settleLayout();
    auto* metric = view.findChild<QComboBox*>("metric");
    metric->setFocus();
    QTest::keyClicks(metric, "val_l");
    QCOMPARE(metric->currentText(), QStringLiteral("val_loss"));
    QCOMPARE(view.metric(), QStringLiteral("val_loss"));
    auto* group = view.findChild<QComboBox*>("groupBy");
    group->setFocus();
    QTest::keyClicks(group, "learning");
    QCOMPARE(view.groupBy(), QStringLiteral("learning_rate"));
    auto* chart = view.findChild<QSplitter*>("curvesSplitter");
    auto* table = view.findChild<QSplitter*>("runsTableSplitter");
    QVERIFY(chart && table && chart->isVisible() && table->isVisible());
    const QList<int> chartBefore = chart->sizes(), tableBefore = table->sizes();
    dragHandle(chart, -120);  // a wider legend
    dragHandle(table, 60);    // a shorter table
    QVERIFY2(chart->sizes()[1] >= chartBefore[1] + 100, qPrintable(sizesOf(chart)));
    QVERIFY2(table->sizes()[1] <= tableBefore[1] - 40, qPrintable(sizesOf(table)));
    chartSizes = sizesOf(chart);
    tableSizes = sizesOf(table);
  }
  {
    // A new view, as the next start of the app makes: the same choices shown and used.
    CurvesView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(load(view, kSweep));
    settleLayout();
    QCOMPARE(view.findChild<QComboBox*>("metric")->currentText(), QStringLiteral("val_loss"));
    QCOMPARE(view.metric(), QStringLiteral("val_loss"));
    QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("val_loss"));
    QCOMPARE(view.findChild<QComboBox*>("groupBy")->currentText(), QStringLiteral("learning_rate"));
    QCOMPARE(view.groupBy(), QStringLiteral("learning_rate"));
    QCOMPARE(view.groupLabels().size(), 3);
    QCOMPARE(view.legend()->tree()->topLevelItemCount(), 3);
    QTRY_COMPARE(sizesOf(view.findChild<QSplitter*>("curvesSplitter")), chartSizes);
    QTRY_COMPARE(sizesOf(view.findChild<QSplitter*>("runsTableSplitter")), tableSizes);

    // Set from code, nothing is remembered.
    view.setMetric("lr");
    view.setGroupBy("none");
  }
  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kSweep));
  settleLayout();
  QCOMPARE(view.metric(), QStringLiteral("val_loss"));
  QCOMPARE(view.groupBy(), QStringLiteral("learning_rate"));

  // Runs without that metric or that hyperparameter: the defaults (the
  // training loss; no grouping for one run without hyperparameters).
  QVERIFY(load(view, kFixtures + "/curves_spike"));
  QCOMPARE(view.metric(), QStringLiteral("loss"));
  QCOMPARE(view.findChild<QComboBox*>("metric")->currentText(), QStringLiteral("loss"));
  QCOMPARE(view.groupBy(), QStringLiteral("none"));
  QCOMPARE(view.findChild<QComboBox*>("groupBy")->currentText(), QStringLiteral("None"));
  QVERIFY(view.rawGraph("spike") && view.rawGraph("spike")->visible());
}

void TestCurvesSweep::rememberedChoicesIgnoreInvalid() {
  // The sizes a view has with nothing remembered.
  QString chartDefault, tableDefault;
  {
    CurvesView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(load(view, kSweep));  // the same status line (its height) as below
    settleLayout();
    chartDefault = sizesOf(view.findChild<QSplitter*>("curvesSplitter"));
    tableDefault = sizesOf(view.findChild<QSplitter*>("runsTableSplitter"));
  }
  // A file edited by hand or written by another version: what is not
  // understood keeps its default.
  const std::pair<QVariant, QVariant> sizes[] = {
      {"wide,narrow", "1,2,3"}, {"0,500", "99999999,1"}, {QVariant(), "-5,200"}};
  const QVariant metrics[] = {"no_such_metric", "", 5};
  const QVariant groups[] = {"learning rate", "seed:x", "no_such_key"};
  for (int i = 0; i < 3; ++i) {
    QSettings settings;
    settings.setValue("curves/metric", metrics[i]);
    settings.setValue("curves/groupBy", groups[i]);
    settings.setValue("curves/chartSplitter", sizes[i].first);
    settings.setValue("curves/tableSplitter", sizes[i].second);
    CurvesView view;
    view.resize(1000, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(load(view, kSweep));
    settleLayout();
    QCOMPARE(view.metric(), QStringLiteral("loss"));
    QCOMPARE(view.findChild<QComboBox*>("metric")->currentText(), QStringLiteral("loss"));
    QCOMPARE(view.groupBy(), QStringLiteral("all-but"));  // the default for runs with seeds
    QCOMPARE(view.groupLabels().size(), 3);
    QTRY_COMPARE(sizesOf(view.findChild<QSplitter*>("curvesSplitter")), chartDefault);
    QTRY_COMPARE(sizesOf(view.findChild<QSplitter*>("runsTableSplitter")), tableDefault);
  }
}

void TestCurvesSweep::cancelReading() {
  // 120 runs of 4,000 lines, read one at a time (a pool of one thread): the
  // Cancel beside the status line stops after the runs being read.
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  constexpr int kRuns = 120;
  for (int r = 0; r < kRuns; ++r) {
    const QString run = QString("run%1").arg(r, 3, 10, QChar('0'));
    QVERIFY(QDir(dir.path()).mkpath(run));
    QFile f(QDir(dir.path()).filePath(run + "/metrics.jsonl"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    QByteArray lines;
    for (int step = 0; step < 4000; ++step)
      lines +=
          QString("{\"step\": %1, \"loss\": %2}\n").arg(step).arg(5.0 / (step + 1 + r)).toUtf8();
    QCOMPARE(f.write(lines), lines.size());
  }
  const int threads = ckpt::workPool()->maxThreadCount();
  ckpt::workPool()->setMaxThreadCount(1);
  const auto restore = qScopeGuard([threads] { ckpt::workPool()->setMaxThreadCount(threads); });

  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  auto* cancel = view.findChild<QPushButton*>("cancelReading");
  QVERIFY(cancel && !cancel->isVisible());
  QSignalSpy ready(&view, &CurvesView::curvesReady);
  view.setRuns(scanDirectory(pathToStd(dir.path())).runs);
  QVERIFY(view.isLoading());
  QVERIFY(cancel->isVisible() && cancel->isEnabled());
  QTest::mouseClick(cancel, Qt::LeftButton);
  QVERIFY(ready.wait(curves_fixture::kLoadTimeoutMs));
  QVERIFY(!view.isLoading());
  QVERIFY(!cancel->isVisible());
  // The runs read before the first one not read, in order, drawn.
  const size_t read = view.runs().size();
  QVERIFY2(read < size_t(kRuns), qPrintable(QString::number(read)));
  for (size_t i = 0; i < read; ++i) {
    QCOMPARE(view.runs()[i].name, QString("run%1").arg(i, 3, 10, QChar('0')));
    QVERIFY(view.smoothedGraph(view.runs()[i].name));
  }
  QCOMPARE(view.legend()->tree()->topLevelItemCount(), int(read));
  QVERIFY2(view.statusText().startsWith(
               QString("Reading cancelled: %1 of %2 runs read").arg(read).arg(kRuns)),
           qPrintable(view.statusText()));

  // Opened again and left to finish: every run, and no word of a cancel.
  QVERIFY(load(view, dir.path()));
  QCOMPARE(view.runs().size(), size_t(kRuns));
  QVERIFY(!view.statusText().contains("cancelled"));
  QVERIFY(!cancel->isVisible());

  // Cancel clicked after every run was read, before the view took them:
  // nothing was cancelled, and the status line does not say it was.
  view.setRuns(scanDirectory(pathToStd(dir.path())).runs);
  QVERIFY(ckpt::workPool()->waitForDone(curves_fixture::kLoadTimeoutMs));
  QVERIFY(cancel->isVisible() && cancel->isEnabled());
  QTest::mouseClick(cancel, Qt::LeftButton);
  QVERIFY(ready.wait(curves_fixture::kLoadTimeoutMs));
  QCOMPARE(view.runs().size(), size_t(kRuns));
  QVERIFY2(!view.statusText().contains("cancelled"), qPrintable(view.statusText()));
}

QTEST_MAIN(TestCurvesSweep)
#include "tst_curves_sweep.moc"
