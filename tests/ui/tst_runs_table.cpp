// The Curves tab's runs table, as a person uses it: headers clicked to
// sort, expressions typed into the filter box, a checkpoint cell clicked
// to open it, rows hovered. What it shows is checked against numpy's
// numbers for the sweep (tests/python/sweep_fixtures.py writes the runs and
// sweep_reference.json), never against the core that builds the table.
#include <qcustomplot.h>
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <QTreeWidget>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "browser/checkpointlistmodel.h"
#include "ckpt/index/natural_order.h"
#include "curves/curvesview.h"
#include "curves/runstable.h"
#include "curves_fixture.h"
#include "inspector/inspectorwidget.h"
#include "mainwindow.h"
#include "textformat.h"

using namespace ckpt;

namespace {

using curves_fixture::kLoadTimeoutMs;
using curves_fixture::load;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);
const QString kSweep = kFixtures + "/sweep/sweep";

QJsonObject reference() {
  return curves_fixture::readJson(kFixtures + "/sweep/sweep_reference.json");
}

// The hyperparameters that differ between the runs, as sweep_fixtures.py's
// differing(): a key some run lacks or whose values are not all equal.
QStringList differing(const QJsonObject& hparams) {
  std::set<QString> keys;
  for (const QJsonValue& h : hparams) {
    const QStringList k = h.toObject().keys();
    keys.insert(k.begin(), k.end());
  }
  QStringList out;
  for (const QString& key : keys) {
    std::set<QString> values;
    for (const QJsonValue& h : hparams)
      values.insert(h.toObject().contains(key)
                        ? QString::fromUtf8(QJsonDocument(QJsonArray{h.toObject()[key]}).toJson())
                        : QStringLiteral("<absent>"));
    if (values.size() > 1) out << key;
  }
  return out;
}

QString cell(RunsTablePanel* panel, int row, int column) {
  return panel->model()->index(row, column).data().toString();
}

QString header(RunsTablePanel* panel, int column) {
  return panel->model()->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString();
}

int column(RunsTablePanel* panel, const QString& title) {
  for (int c = 0; c < panel->model()->columnCount(); ++c)
    if (header(panel, c) == title) return c;
  return -1;
}

QStringList columnTexts(RunsTablePanel* panel, int c) {
  QStringList out;
  for (int r = 0; r < panel->model()->rowCount(); ++r) out << cell(panel, r, c);
  return out;
}

// A click on a header section where it is drawn.
void clickHeader(RunsTablePanel* panel, int c) {
  QTableView* view = panel->view();
  view->scrollTo(panel->model()->index(0, c));
  QHeaderView* h = view->horizontalHeader();
  const QPoint at(h->sectionViewportPosition(c) + h->sectionSize(c) / 2, h->height() / 2);
  QTest::mouseClick(h->viewport(), Qt::LeftButton, {}, at);
}

QPoint cellCentre(RunsTablePanel* panel, int row, int c) {
  const QModelIndex index = panel->model()->index(row, c);
  panel->view()->scrollTo(index);
  return panel->view()->visualRect(index).center();
}

// Replaces the filter box's text by typing, then Return.
void typeFilter(RunsTablePanel* panel, const QString& text) {
  QLineEdit* box = panel->filterBox();
  box->setFocus();
  QTest::keyClick(box, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClick(box, Qt::Key_Backspace);
  QTest::keyClicks(box, text);
  QTest::keyClick(box, Qt::Key_Return);
}

bool close(double got, double want) {
  // Cells show 6 significant digits.
  return std::abs(got - want) <= 5e-6 * std::max(1.0, std::abs(want));
}

}  // namespace

class TestRunsTable : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void runsAgainstNumpy();
  void sortByClickingHeaders();
  void filterExpressions();
  void groupsFollowTheChart();
  void hoverBothWays();
  void followsALiveRun();
  void remembersFilterAndSort();
  void checkpointOpensInInspector();

 private:
  void openSweep(CurvesView& view);
  QJsonObject m_ref;
};

void TestRunsTable::initTestCase() {
  m_ref = reference();
  QVERIFY2(!m_ref.isEmpty(), "no sweep fixtures: run ctest (make_sweep_fixtures)");
  // ctest points XDG_CONFIG_HOME into the build tree; the remembered filter
  // and sort start empty.
  QCoreApplication::setOrganizationName("CkptScopeTest");
  QCoreApplication::setApplicationName("tst_runs_table");
}

void TestRunsTable::init() {
  QSettings().clear();
}

void TestRunsTable::openSweep(CurvesView& view) {
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, kSweep));
  QCOMPARE(view.runs().size(), size_t(15));
  QVERIFY(view.runsTable()->isVisible());
  // One row per run: no groups, chosen with the keyboard.
  auto* box = view.findChild<QComboBox*>("groupBy");
  box->setFocus();
  QTest::keyClick(box, Qt::Key_Home);
  QCOMPARE(view.groupBy(), QStringLiteral("none"));
  QCOMPARE(view.metric(), QStringLiteral("loss"));
}

void TestRunsTable::runsAgainstNumpy() {
  CurvesView view;
  RunsTablePanel* panel = view.runsTable();
  QAbstractItemModelTester tester(panel->model(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  openSweep(view);
  if (QTest::currentTestFailed()) return;

  // Columns: the run, the metric's, then exactly the hyperparameters that differ.
  const QJsonObject hparams = m_ref["hparams"].toObject();
  const QStringList keys = differing(hparams);
  QCOMPARE(keys, (QStringList{"learning_rate", "seed", "warmup_steps"}));
  QStringList want = {"Run", "Best (min)", "Best step", "Last", "Points", "Checkpoint"};
  want << keys;
  QStringList got;
  for (int c = 0; c < panel->model()->columnCount(); ++c) got << header(panel, c);
  QCOMPARE(got, want);

  // Every run, its numbers as numpy computed them from metrics.jsonl.
  const QJsonObject runs = m_ref["runs"].toObject();
  QCOMPARE(panel->model()->rowCount(), runs.size());
  QCOMPARE(panel->view()->model()->rowCount(), runs.size());
  const int points = column(panel, "Points"), last = column(panel, "Last"),
            best = column(panel, "Best (min)"), bestStep = column(panel, "Best step"),
            ckpt = column(panel, "Checkpoint");
  for (int r = 0; r < panel->model()->rowCount(); ++r) {
    const QString name = cell(panel, r, 0);
    QVERIFY2(runs.contains(name), qPrintable(name));
    const QJsonObject loss = runs[name].toObject()["loss"].toObject();
    const QString what = name + ": ";
    QCOMPARE(cell(panel, r, points).toInt(), loss["points"].toInt());
    QVERIFY2(close(cell(panel, r, last).toDouble(), loss["last"].toDouble()),
             qPrintable(what + cell(panel, r, last)));
    QVERIFY2(close(cell(panel, r, best).toDouble(), loss["best"].toDouble()),
             qPrintable(what + cell(panel, r, best) + " numpy " +
                        QString::number(loss["best"].toDouble(), 'g', 17)));
    QCOMPARE(cell(panel, r, bestStep).toInt(), loss["best_step"].toInt());
    QCOMPARE(cell(panel, r, ckpt), loss["checkpoint"].toString());  // null: ""
    for (int k = 0; k < keys.size(); ++k) {
      const QJsonValue v = hparams[name].toObject()[keys[k]];
      const QString text = cell(panel, r, column(panel, keys[k]));
      if (v.isUndefined())
        QVERIFY2(text.isEmpty(), qPrintable(what + keys[k] + " " + text));
      else
        QVERIFY2(text.toDouble() == v.toDouble(), qPrintable(what + keys[k] + " " + text));
    }
  }
  // The metric follows the chart's choice: val_acc is better high.
  auto* metricBox = view.findChild<QComboBox*>("metric");
  metricBox->setFocus();
  QTest::keyClicks(metricBox, "val_acc");
  QCOMPARE(view.metric(), QStringLiteral("val_acc"));
  const int bestAcc = column(panel, "Best (max)");
  QVERIFY2(bestAcc > 0, qPrintable(header(panel, 1)));
  for (int r = 0; r < panel->model()->rowCount(); ++r) {
    const QJsonObject acc = runs[cell(panel, r, 0)].toObject()["val_acc"].toObject();
    QVERIFY(close(cell(panel, r, bestAcc).toDouble(), acc["best"].toDouble()));
    QCOMPARE(cell(panel, r, column(panel, "Best step")).toInt(), acc["best_step"].toInt());
  }
}

void TestRunsTable::sortByClickingHeaders() {
  CurvesView view;
  openSweep(view);
  if (QTest::currentTestFailed()) return;
  RunsTablePanel* panel = view.runsTable();
  const QJsonObject runs = m_ref["runs"].toObject();

  // By name at first, in natural order.
  QStringList names = runs.keys();
  std::sort(names.begin(), names.end(), [](const QString& a, const QString& b) {
    return naturalLess(pathToStd(a), pathToStd(b));
  });
  QCOMPARE(columnTexts(panel, 0), names);

  // Best, ascending then descending: numpy's order of the runs' best losses.
  std::vector<std::pair<double, QString>> byBest;
  for (const QString& n : names)
    byBest.push_back({runs[n].toObject()["loss"].toObject()["best"].toDouble(), n});
  std::sort(byBest.begin(), byBest.end());
  QStringList ascending;
  for (const auto& [v, n] : byBest) ascending << n;
  clickHeader(panel, column(panel, "Best (min)"));
  QCOMPARE(columnTexts(panel, 0), ascending);
  QCOMPARE(panel->sortKey(), QStringLiteral("best"));
  clickHeader(panel, column(panel, "Best (min)"));
  std::reverse(ascending.begin(), ascending.end());
  QCOMPARE(columnTexts(panel, 0), ascending);
  QCOMPARE(panel->sortKey(), QStringLiteral("-best"));

  // Points as numbers (61 before 101), not as text.
  clickHeader(panel, column(panel, "Points"));
  const QStringList points = columnTexts(panel, column(panel, "Points"));
  for (int i = 1; i < points.size(); ++i)
    QVERIFY2(points[i - 1].toInt() <= points[i].toInt(), qPrintable(points.join(' ')));
  QVERIFY2(points.first().toInt() < 100 && points.last().toInt() >= 100,
           qPrintable(points.join(' ')));

  // Runs without a checkpoint (seeds 2 to 4) last, in either direction.
  const int ckpt = column(panel, "Checkpoint");
  for (int click = 0; click < 2; ++click) {
    clickHeader(panel, ckpt);
    const QStringList files = columnTexts(panel, ckpt);
    QCOMPARE(files.count(QString()), 9);
    for (int i = 0; i < 6; ++i) QVERIFY2(!files[i].isEmpty(), qPrintable(files.join(' ')));
  }
  // The header shows what the rows are sorted by.
  QCOMPARE(panel->view()->horizontalHeader()->sortIndicatorSection(), ckpt);
}

void TestRunsTable::filterExpressions() {
  CurvesView view;
  openSweep(view);
  if (QTest::currentTestFailed()) return;
  RunsTablePanel* panel = view.runsTable();
  const QJsonObject runs = m_ref["runs"].toObject();
  const QJsonObject hparams = m_ref["hparams"].toObject();
  // What the chart draws: the runs whose smoothed line is visible.
  auto drawn = [&] {
    QStringList out;
    for (const CurveRun& r : view.runs())
      if (const QCPGraph* g = view.smoothedGraph(r.name); g && g->visible()) out << r.name;
    out.sort();
    return out;
  };
  auto rows = [&] {
    QStringList out = columnTexts(panel, 0);
    out.sort();
    return out;
  };

  typeFilter(panel, "learning_rate == 3e-4");
  QStringList want;
  for (auto it = hparams.begin(); it != hparams.end(); ++it)
    if (it.value().toObject()["learning_rate"].toDouble() == 3e-4) want << it.key();
  want.sort();
  QCOMPARE(want.size(), 5);
  QCOMPARE(rows(), want);
  QCOMPARE(drawn(), want);  // the chart shows the runs the filter keeps
  QCOMPARE(view.legend()->tree()->topLevelItemCount(), 5);
  QVERIFY(panel->errorLabel()->isHidden());

  // A metric compares by its last value: numpy's last val_loss.
  std::vector<double> lasts;
  for (const QJsonValue& r : runs)
    lasts.push_back(r.toObject()["val_loss"].toObject()["last"].toDouble());
  std::sort(lasts.begin(), lasts.end());
  const double cut = (lasts[6] + lasts[7]) / 2;
  typeFilter(panel, QString("val_loss < %1").arg(cut, 0, 'g', 17));
  want.clear();
  for (auto it = runs.begin(); it != runs.end(); ++it)
    if (it.value().toObject()["val_loss"].toObject()["last"].toDouble() < cut) want << it.key();
  want.sort();
  QCOMPARE(want.size(), 7);
  QCOMPARE(rows(), want);
  QCOMPARE(drawn(), want);

  typeFilter(panel, "name ~ 'seed[01]$' and not learning_rate > 5e-4");
  QCOMPARE(rows(), (QStringList{"lr1e-4_seed0", "lr1e-4_seed1", "lr3e-4_seed0", "lr3e-4_seed1"}));

  // A bad expression: its error in red under the box, every run shown.
  typeFilter(panel, "learning_rate ==");
  QVERIFY(panel->errorLabel()->isVisible());
  QVERIFY2(panel->errorLabel()->text().contains("position"),
           qPrintable(panel->errorLabel()->text()));
  QCOMPARE(panel->errorLabel()->palette().color(QPalette::WindowText).red(), 200);
  QCOMPARE(panel->model()->rowCount(), 15);
  QCOMPARE(drawn().size(), 15);
  typeFilter(panel, "nosuch > 1");
  QVERIFY2(panel->errorLabel()->isVisible() && panel->errorLabel()->text().contains("'nosuch'"),
           qPrintable(panel->errorLabel()->text()));
  typeFilter(panel, "name ~ '('");
  QVERIFY2(panel->errorLabel()->isVisible(), "a bad regular expression shows no error");
  QCOMPARE(panel->model()->rowCount(), 15);

  // Typing without Return: applied once the keys pause.
  typeFilter(panel, "");
  QVERIFY(panel->errorLabel()->isHidden());
  QTest::keyClicks(panel->filterBox(), "seed == 4");
  QTRY_COMPARE(panel->model()->rowCount(), 3);
  QCOMPARE(drawn().size(), 3);
}

void TestRunsTable::groupsFollowTheChart() {
  CurvesView view;
  openSweep(view);
  if (QTest::currentTestFailed()) return;
  RunsTablePanel* panel = view.runsTable();
  auto* box = view.findChild<QComboBox*>("groupBy");
  box->setFocus();
  QTest::keyClicks(box, "learning");
  QCOMPARE(view.groupBy(), QStringLiteral("learning_rate"));
  QCOMPARE(header(panel, 0), QStringLiteral("Group"));
  QCOMPARE(header(panel, 1), QStringLiteral("Runs"));
  QCOMPARE(panel->model()->rowCount(), 3);
  // Each group's row against numpy's mean line of its runs: its lowest
  // point, the step of it, and its last point.
  auto checkGroups = [&](const QJsonObject& groups, const QString& runs) {
    const int best = column(panel, "Best (min)"), bestStep = column(panel, "Best step"),
              last = column(panel, "Last");
    for (int r = 0; r < panel->model()->rowCount(); ++r) {
      const QString label = cell(panel, r, 0);
      QVERIFY2(view.groupLabels().contains(label), qPrintable(label));
      QCOMPARE(cell(panel, r, 1), runs);
      QJsonObject g;
      for (auto it = groups.begin(); it != groups.end(); ++it)
        if (std::abs(it.key().toDouble() - label.section('=', 1).toDouble()) < 1e-15)
          g = it.value().toObject();
      QVERIFY2(!g.isEmpty(), qPrintable(label));
      const QJsonArray mean = g["mean"].toArray(), steps = g["steps"].toArray();
      qsizetype at = 0;
      for (qsizetype i = 1; i < mean.size(); ++i)
        if (mean[i].toDouble() < mean[at].toDouble()) at = i;
      QVERIFY2(close(cell(panel, r, best).toDouble(), mean[at].toDouble()),
               qPrintable(label + " " + cell(panel, r, best)));
      QCOMPARE(cell(panel, r, bestStep).toLongLong(), qint64(steps[at].toDouble()));
      QVERIFY(close(cell(panel, r, last).toDouble(), mean.last().toDouble()));
    }
  };
  checkGroups(m_ref["groups"].toObject(), "5");
  if (QTest::currentTestFailed()) return;
  // Filtered while grouped: the table's groups and the chart's hold the same runs.
  typeFilter(panel, "seed < 3");
  QCOMPARE(panel->model()->rowCount(), 3);
  checkGroups(m_ref["groups_seed_lt3"].toObject(), "3");
  if (QTest::currentTestFailed()) return;
  QCOMPARE(view.groupLabels().size(), 3);
  QTreeWidget* tree = view.legend()->tree();
  QCOMPARE(tree->topLevelItemCount(), 3);
  for (int i = 0; i < 3; ++i) QCOMPARE(tree->topLevelItem(i)->childCount(), 3);
  for (const QString& label : view.groupLabels()) {
    const std::vector<int> counts = view.groupRunCounts(label);
    QCOMPARE(*std::max_element(counts.begin(), counts.end()), 3);
  }
  // A group's row hovered: its line is highlighted, and its legend row.
  const QString label = cell(panel, 1, 0);
  QTest::mouseMove(panel->view()->viewport(), cellCentre(panel, 1, 0));
  QTRY_VERIFY(view.highlighted().group);
  QCOMPARE(view.groupLabels().at(view.highlighted().index), label);
  // (The row shows the label shortened; its tooltip is the whole label.)
  QVERIFY2(tree->currentItem() && tree->currentItem()->toolTip(0).startsWith(label + " ("),
           qPrintable(tree->currentItem() ? tree->currentItem()->toolTip(0) : QString()));
}

void TestRunsTable::followsALiveRun() {
  // One run of the sweep, copied: lines appended to its metrics.jsonl reach the table.
  QTemporaryDir dir;
  const QString run = dir.filePath("lr1e-4_seed0");
  QVERIFY(QDir().mkpath(run));
  for (const char* f : {"metrics.jsonl", "RUN.json"})
    QVERIFY(QFile::copy(kSweep + "/lr1e-4_seed0/" + f, run + "/" + f));
  CurvesView view;
  view.setPollInterval(50);
  view.resize(1000, 700);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view, dir.path()));
  // A run's row (a group's is computed from the points themselves).
  auto* box = view.findChild<QComboBox*>("groupBy");
  box->setFocus();
  QTest::keyClick(box, Qt::Key_Home);
  RunsTablePanel* panel = view.runsTable();
  QCOMPARE(header(panel, 0), QStringLiteral("Run"));
  QCOMPARE(panel->model()->rowCount(), 1);
  const QJsonObject loss = m_ref["runs"].toObject()["lr1e-4_seed0"].toObject()["loss"].toObject();
  const int points = column(panel, "Points"), best = column(panel, "Best (min)"),
            bestStep = column(panel, "Best step"), last = column(panel, "Last");
  QCOMPARE(cell(panel, 0, points).toInt(), loss["points"].toInt());
  QVERIFY(loss["best"].toDouble() > 0.25);
  {
    QFile f(run + "/metrics.jsonl");
    QVERIFY(f.open(QIODevice::Append));
    f.write("{\"step\": 5000, \"loss\": 0.25}\n");
  }
  QTRY_COMPARE(cell(panel, 0, points).toInt(), loss["points"].toInt() + 1);
  QCOMPARE(cell(panel, 0, best), QStringLiteral("0.25"));
  QCOMPARE(cell(panel, 0, bestStep), QStringLiteral("5000"));
  QCOMPARE(cell(panel, 0, last), QStringLiteral("0.25"));
}

void TestRunsTable::hoverBothWays() {
  CurvesView view;
  openSweep(view);
  if (QTest::currentTestFailed()) return;
  RunsTablePanel* panel = view.runsTable();
  QTableView* table = panel->view();

  // A row hovered: its run's line is highlighted.
  const int row = 4;
  const QString name = cell(panel, row, 0);
  QTest::mouseMove(table->viewport(), cellCentre(panel, row, 0));
  QTRY_VERIFY(view.highlighted().index >= 0);
  QCOMPARE(view.highlighted().group, false);
  QCOMPARE(view.runs()[size_t(view.highlighted().index)].name, name);
  // Off the table: nothing.
  QTest::mouseMove(view.plot(),
                   QPoint(view.plot()->axisRect()->left() + 2, view.plot()->axisRect()->top() + 2));
  QTRY_VERIFY(view.highlighted().index < 0);

  // A line hovered: its run's row is selected.
  QCustomPlot* plot = view.plot();
  QCPGraph* line = view.smoothedGraph("lr1e-4_seed3");
  const auto mid = line->data()->at(line->data()->size() - 2);
  QTest::mouseMove(plot, QPoint(int(plot->xAxis->coordToPixel(mid->key)),
                                int(plot->yAxis->coordToPixel(mid->value))));
  QTRY_VERIFY(view.highlighted().index >= 0);
  const QString hovered = view.runs()[size_t(view.highlighted().index)].name;
  const QModelIndexList selected = table->selectionModel()->selectedRows();
  QCOMPARE(selected.size(), 1);
  QCOMPARE(cell(panel, selected.first().row(), 0), hovered);
}

void TestRunsTable::remembersFilterAndSort() {
  {
    CurvesView view;
    openSweep(view);
    if (QTest::currentTestFailed()) return;
    typeFilter(view.runsTable(), "seed >= 3");
    clickHeader(view.runsTable(), column(view.runsTable(), "Points"));
    clickHeader(view.runsTable(), column(view.runsTable(), "Points"));
    QCOMPARE(view.runsTable()->sortKey(), QStringLiteral("-points"));
  }
  // A new window: the same filter in the box, the same order, applied.
  CurvesView again;
  QCOMPARE(again.runsTable()->filterBox()->text(), QStringLiteral("seed >= 3"));
  openSweep(again);
  if (QTest::currentTestFailed()) return;
  RunsTablePanel* panel = again.runsTable();
  QCOMPARE(panel->model()->rowCount(), 6);
  const QStringList points = columnTexts(panel, column(panel, "Points"));
  for (int i = 1; i < points.size(); ++i)
    QVERIFY2(points[i - 1].toInt() >= points[i].toInt(), qPrintable(points.join(' ')));
  QCOMPARE(panel->view()->horizontalHeader()->sortIndicatorOrder(), Qt::DescendingOrder);
}

void TestRunsTable::checkpointOpensInInspector() {
  MainWindow w;
  w.resize(1000, 700);
  w.setView(MainWindow::View::Curves);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QSignalSpy ready(w.curvesView(), &CurvesView::curvesReady);
  w.openPaths({kSweep});
  QVERIFY(ready.wait(kLoadTimeoutMs));
  CurvesView* view = w.curvesView();
  RunsTablePanel* panel = view->runsTable();
  QVERIFY(panel->isVisible());
  // The sweep has seeds: the chart, and so the table, group all but the seed.
  QCOMPARE(view->groupBy(), QStringLiteral("all-but"));
  QCOMPARE(header(panel, 0), QStringLiteral("Group"));
  QCOMPARE(panel->model()->rowCount(), 4);  // lr1e-3_seed4 alone has warmup_steps

  // Only seeds 0 and 1 have checkpoints: the groups of those runs.
  typeFilter(panel, "seed < 2");
  QCOMPARE(panel->model()->rowCount(), 3);
  // A group's checkpoint: the one nearest the best step of its run with the
  // lowest loss, by numpy's numbers.
  const QJsonObject runs = m_ref["runs"].toObject();
  const QJsonObject hparams = m_ref["hparams"].toObject();
  const int lrColumn = column(panel, "learning_rate"), ckpt = column(panel, "Checkpoint");
  QVERIFY(lrColumn > 0 && ckpt > 0);
  int row = -1;
  QString bestRun;
  for (auto it = runs.begin(); it != runs.end(); ++it) {
    const QJsonObject hp = hparams[it.key()].toObject();
    if (hp["learning_rate"].toDouble() != 3e-4 || hp["seed"].toInt() >= 2) continue;
    if (bestRun.isEmpty() || it.value().toObject()["loss"].toObject()["best"].toDouble() <
                                 runs[bestRun].toObject()["loss"].toObject()["best"].toDouble())
      bestRun = it.key();
  }
  const QString file = runs[bestRun].toObject()["loss"].toObject()["checkpoint"].toString();
  QVERIFY2(!file.isEmpty(), qPrintable(bestRun));
  for (int r = 0; r < panel->model()->rowCount(); ++r)
    if (cell(panel, r, lrColumn).toDouble() == 3e-4) row = r;
  QVERIFY(row >= 0);
  QCOMPARE(cell(panel, row, ckpt), file);

  QTest::mouseClick(panel->view()->viewport(), Qt::LeftButton, {}, cellCentre(panel, row, ckpt));
  const QString expected = QDir(kSweep).filePath(bestRun + "/" + file);
  QTRY_COMPARE_WITH_TIMEOUT(
      QDir::cleanPath(
          w.checkpointView()->currentIndex().data(int(CheckpointListModel::Role::Path)).toString()),
      QDir::cleanPath(expected), 5000);
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.inspector()));

  // The table sits below the chart in a splitter that leaves the chart most of the height.
  auto* splitter = view->findChild<QSplitter*>("runsTableSplitter");
  QVERIFY(splitter);
  const QList<int> sizes = splitter->sizes();
  QVERIFY2(sizes[0] > sizes[1] * 3 / 2, qPrintable(QString("%1 / %2").arg(sizes[0]).arg(sizes[1])));
}

QTEST_MAIN(TestRunsTable)
#include "tst_runs_table.moc"
