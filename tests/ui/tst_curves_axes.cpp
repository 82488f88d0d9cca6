// The Curves tab's x axes, chosen in their box with the mouse as a person
// does (the box opened, the item clicked where the list draws it): relative
// step starts a fine-tune at 0, relative time counts seconds from each
// run's first wall time, wall time is the clock, a run without wall times
// is named in the status line, and groups align by relative step. The truth
// is tests/python/curves_axes_fixtures.py's, computed from the metrics.jsonl
// files it writes.
#include <qcustomplot.h>
#include <QAbstractItemView>
#include <QApplication>
#include <QComboBox>
#include <QJsonArray>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSettings>
#include <QTest>
#include <cmath>
#include <map>
#include <vector>

#include "curves/curveaxes.h"
#include "curves/curvesview.h"
#include "curves_fixture.h"

using namespace ckpt;

namespace {

using curves_fixture::load;
using curves_fixture::readJson;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

// Opens `box` with a click and clicks the item `text` where its list draws it.
void chooseWithMouse(QComboBox* box, const QString& text) {
  QTest::mouseClick(box, Qt::LeftButton);
  QAbstractItemView* list = box->view();
  QTRY_VERIFY(list->isVisible());
  // The box ignores a release this soon after opening (the opening click's own).
  QTest::qWait(QApplication::doubleClickInterval() + 50);
  const int row = box->findText(text);
  QVERIFY2(row >= 0, qPrintable(text));
  const QModelIndex index = box->model()->index(row, box->modelColumn());
  list->scrollTo(index);
  QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualRect(index).center());
  QTRY_VERIFY(!list->isVisible());
  QCOMPARE(box->currentText(), text);
}

// The graph's points, in order.
std::vector<std::pair<double, double>> points(const QCPGraph* g) {
  std::vector<std::pair<double, double>> out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    out.emplace_back(it->key, it->value);
  return out;
}

// `graph` holds exactly the [x, value] pairs of `want` (x within `tol`).
bool samePoints(const QCPGraph* graph, const QJsonArray& want, double tol, QString* why) {
  if (!graph) {
    *why = "no graph";
    return false;
  }
  const auto got = points(graph);
  if (got.size() != size_t(want.size())) {
    *why = QString("%1 points drawn, %2 logged").arg(got.size()).arg(want.size());
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double x = want[qsizetype(i)].toArray()[0].toDouble();
    const double y = want[qsizetype(i)].toArray()[1].toDouble();
    if (std::abs(got[i].first - x) > tol || got[i].second != y) {
      *why = QString("point %1: (%2, %3), want (%4, %5)")
                 .arg(i)
                 .arg(got[i].first, 0, 'g', 17)
                 .arg(got[i].second, 0, 'g', 17)
                 .arg(x, 0, 'g', 17)
                 .arg(y, 0, 'g', 17);
      return false;
    }
  }
  return true;
}

}  // namespace

class TestCurvesAxes : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void relativeStepAndTime();
  void groupsAlignByRelativeStep();
  void onePointOnEveryAxis();
  void durationLabels();

 private:
  QJsonObject m_truth;
};

void TestCurvesAxes::initTestCase() {
  m_truth = readJson(kFixtures + "/curves_axes_truth.json");
  QVERIFY2(!m_truth.isEmpty(), "run tests/python/curves_axes_fixtures.py first");
}

void TestCurvesAxes::init() {
  // Each test starts from the Curves tab's defaults, not from what the last
  // one chose with the keys or the mouse (remembered in QSettings).
  QSettings().remove("curves");
}

void TestCurvesAxes::relativeStepAndTime() {
  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kFixtures + "/curves_axes"));
  view.setSmoothing(0);  // the raw graph is then the drawn line; its keys are what is tested
  auto* box = view.findChild<QComboBox*>("xaxis");
  QVERIFY(box && box->isVisible());
  const QJsonObject relStep = m_truth["relative_step"].toObject();
  const QJsonObject relTime = m_truth["relative_time"].toObject();
  QString why;

  // Relative step: the fine-tune that starts at step 5,000 from 0.
  chooseWithMouse(box, "Rel. step");
  QCOMPARE(view.xAxis(), CurveAxis::RelativeStep);
  QCOMPARE(view.plot()->xAxis->label(), QStringLiteral("relative step"));
  for (const QString& run : relStep.keys()) {
    QVERIFY2(samePoints(view.rawGraph(run), relStep[run].toObject()["loss"].toArray(), 0, &why),
             qPrintable(run + ": " + why));
  }
  QCOMPARE(view.rawGraph("finetune")->data()->at(0)->key, 0.0);
  // Every run starts at the left edge: the axis begins near 0, not near 5,000.
  QVERIFY(view.plot()->xAxis->range().lower < 0 && view.plot()->xAxis->range().upper < 2200);
  // val_loss, first logged at step 5,250, starts where it did in the run.
  view.setMetric("val_loss");
  QVERIFY2(samePoints(view.rawGraph("finetune"),
                      relStep["finetune"].toObject()["val_loss"].toArray(), 0, &why),
           qPrintable(why));
  QCOMPARE(view.rawGraph("finetune")->data()->at(0)->key, 250.0);
  view.setMetric("loss");
  // The tooltip names the real step.
  QVERIFY2(view.valuesAt(0).startsWith("relative step 0") &&
               view.valuesAt(0).contains("finetune: ") && view.valuesAt(0).contains("at step 5000"),
           qPrintable(view.valuesAt(0)));

  // Relative time: seconds from each run's first wall time; the run without
  // wall times is named, not drawn.
  chooseWithMouse(box, "Rel. time");
  QCOMPARE(view.xAxis(), CurveAxis::RelativeTime);
  for (const QString& run : relTime.keys()) {
    QVERIFY2(samePoints(view.rawGraph(run), relTime[run].toObject()["loss"].toArray(), 1e-6, &why),
             qPrintable(run + ": " + why));
  }
  QCOMPARE(view.rawGraph("base")->data()->at(0)->key, 0.0);
  const QJsonArray missing = m_truth["no_wall_time"].toArray();
  QCOMPARE(missing.size(), 1);
  const QString notime = missing[0].toString();
  QCOMPARE(view.rawGraph(notime)->data()->size(), 0);
  QVERIFY2(
      view.statusText().contains(QString("1 run has no wall time: not drawn (%1)").arg(notime)),
      qPrintable(view.statusText()));
  // Ticks in units a person reads: the first at 0, the others with s, m, h or d.
  view.plot()->replot();
  const QVector<QString> labels = view.plot()->xAxis->tickVectorLabels();
  QVERIFY(labels.size() >= 2);
  for (const QString& label : labels)
    QVERIFY2(label == "0" || label.contains(QRegularExpression("^-?(\\d+(\\.\\d+)?[smhd] ?)+$")),
             qPrintable(label));

  // Wall time: the clock, Unix times as logged. The fine-tune ran a day
  // after the others: a few pixels wide, so M4 keeps some of its points,
  // each one a logged (time, value) and the first and last among them.
  chooseWithMouse(box, "Wall time");
  const QJsonArray wall = m_truth["wall_time"].toObject()["finetune"].toObject()["loss"].toArray();
  std::map<double, double> logged;
  for (const QJsonValue& v : wall) logged[v.toArray()[0].toDouble()] = v.toArray()[1].toDouble();
  const auto drawn = points(view.rawGraph("finetune"));
  QVERIFY(drawn.size() >= 2);
  for (const auto& [x, y] : drawn)
    QVERIFY2(logged.count(x) && logged.at(x) == y, qPrintable(QString::number(x, 'f', 6)));
  QCOMPARE(drawn.front().first, logged.begin()->first);
  QCOMPARE(drawn.back().first, logged.rbegin()->first);
  QVERIFY2(
      view.statusText().contains(QString("1 run has no wall time: not drawn (%1)").arg(notime)),
      qPrintable(view.statusText()));
  // A run that logs seconds since its start has no place on the clock: not
  // drawn at 1970, named; on Rel. time it was drawn (above, from 0).
  const QString elapsed = m_truth["elapsed_wall_time"].toArray()[0].toString();
  QCOMPARE(view.rawGraph(elapsed)->data()->size(), 0);
  QVERIFY2(view.statusText().contains(
               QString("1 run logs seconds since a start, not clock times: not drawn on Wall "
                       "time, see Rel. time (%1)")
                   .arg(elapsed)),
           qPrintable(view.statusText()));
  QVERIFY(view.plot()->xAxis->range().lower > 1e9);

  // Back to Step: every run drawn, nothing named.
  chooseWithMouse(box, "Step");
  QCOMPARE(view.rawGraph("finetune")->data()->at(0)->key, 5000.0);
  QCOMPARE(view.rawGraph(notime)->data()->size(), 11);
  QVERIFY2(!view.statusText().contains("not drawn"), qPrintable(view.statusText()));
}

void TestCurvesAxes::groupsAlignByRelativeStep() {
  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kFixtures + "/curves_axes"));
  view.setSmoothing(0);
  auto* groupBox = view.findChild<QComboBox*>("groupBy");
  QVERIFY(groupBox && groupBox->isVisible());
  const int byName = groupBox->findData(QStringLiteral("name"));
  QVERIFY(byName >= 0);
  chooseWithMouse(groupBox, groupBox->itemText(byName));
  QCOMPARE(view.groupBy(), QStringLiteral("name"));
  const QString label = view.groupLabels().value(0);
  QCOMPARE(view.groupLabels().size(), 1);
  QVERIFY2(label.startsWith("ft_seed"), qPrintable(label));

  // On Step the two fine-tunes (from 5,000 and 7,000) never overlap: one run a step.
  for (int n : view.groupRunCounts(label)) QCOMPARE(n, 1);

  auto* box = view.findChild<QComboBox*>("xaxis");
  chooseWithMouse(box, "Rel. step");
  const QJsonObject truth = m_truth["group_relative"].toObject();
  std::vector<int> counts;
  for (const QJsonValue& v : truth["runs"].toArray()) counts.push_back(v.toInt());
  QCOMPARE(view.groupRunCounts(label), counts);
  const auto drawn = points(view.groupLine(label));
  const QJsonArray steps = truth["steps"].toArray(), mean = truth["mean"].toArray();
  QCOMPARE(drawn.size(), size_t(steps.size()));
  for (size_t i = 0; i < drawn.size(); ++i) {
    QCOMPARE(drawn[i].first, steps[qsizetype(i)].toDouble());
    QVERIFY2(std::abs(drawn[i].second - mean[qsizetype(i)].toDouble()) < 1e-12,
             qPrintable(QString::number(i)));
  }
  QVERIFY2(!view.statusText().contains("groups are aligned by step"),
           qPrintable(view.statusText()));

  // On a time axis groups cannot align: their runs are drawn, and the status says why.
  chooseWithMouse(box, "Rel. time");
  QVERIFY(view.groupLabels().isEmpty());
  QVERIFY(view.smoothedGraph("ft_seed0")->visible());
  QVERIFY2(view.statusText().contains("groups are aligned by step"), qPrintable(view.statusText()));
}

void TestCurvesAxes::onePointOnEveryAxis() {
  // A run of one point: on every axis the chart shows a small range around
  // it (a Unix time once got a range of years around it).
  const QJsonObject single = m_truth["single"].toObject();
  CurvesView view;
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kFixtures + "/curves_axes_single"));
  auto* box = view.findChild<QComboBox*>("xaxis");
  const std::pair<const char*, double> axes[] = {{"Step", single["step"].toDouble()},
                                                 {"Rel. step", 0},
                                                 {"Wall time", single["wall_time"].toDouble()},
                                                 {"Rel. time", 0}};
  for (const auto& [item, x] : axes) {
    if (box->currentText() != item) chooseWithMouse(box, item);
    QCOMPARE(view.rawGraph("one")->data()->size(), 1);
    QCOMPARE(view.rawGraph("one")->data()->at(0)->key, x);
    const QCPRange range = view.plot()->xAxis->range();
    QVERIFY2(range.contains(x) && range.size() > 0 && range.size() <= 200,
             qPrintable(QString("%1: %2 .. %3").arg(item).arg(range.lower).arg(range.upper)));
  }
}

void TestCurvesAxes::durationLabels() {
  // Hand-computed.
  QCOMPARE(durationText(0), QStringLiteral("0"));
  QCOMPARE(durationText(45), QStringLiteral("45s"));
  QCOMPARE(durationText(0.5), QStringLiteral("0.5s"));
  QCOMPARE(durationText(90), QStringLiteral("1m 30s"));
  QCOMPARE(durationText(3600), QStringLiteral("1h"));
  QCOMPARE(durationText(5400), QStringLiteral("1h 30m"));
  QCOMPARE(durationText(86400 + 4 * 3600), QStringLiteral("1d 4h"));
  QCOMPARE(durationText(-120), QStringLiteral("-2m"));
  // Zoomed in past an hour: the seconds still tell ticks apart.
  QCOMPARE(durationText(3605), QStringLiteral("1h 5s"));
  QCOMPARE(durationText(0.1 * 3), QStringLiteral("0.3s"));
  QCOMPARE(axisValueText(CurveAxis::RelativeTime, 3725), QStringLiteral("1:02:05"));
}

QTEST_MAIN(TestCurvesAxes)
#include "tst_curves_axes.moc"
