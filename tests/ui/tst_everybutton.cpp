// The buttons and menu entries the other gesture tests do not click: each
// one pressed as a person presses it (a click on the visible button, a key
// sequence, a menu opened and its entry clicked, a path typed into the file
// dialog), and what the person then sees or what is on disk checked against
// what torch wrote (make_large_run.py's expected.json) or the files
// themselves.
#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>
#include <QProcess>
#include <QProgressBar>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QToolButton>
#include <cmath>
#include <functional>
#include <vector>

#include "compare/compareview.h"
#include "compare/diffmodel.h"
#include "compare/driftview.h"
#include "curves/curveaxes.h"
#include "curves/curvesview.h"
#include "gestures.h"
#include "inspector/inspectorwidget.h"
#include "inspector/tensorview.h"
#include "inspector/valuetablemodel.h"
#include "training/trainpanel.h"
#include "workpool.h"

using namespace ckpt;

class TestEveryButton : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void compareCancelStopsAndSaysSo();
  void driftCancelStopsAndSaysSo();
  void compareDifferencesOnly();
  void goToRowShowsThatRowsValues();
  void openFilesThenRecentThenClear();
  void reloadKeepsTheSelection();
  void trainBrowseButtonsFillTheirFields();
  void quitClosesAndRemembersTheWindow();
  void slidersBoxesFiltersAndTheDock();

 private:
  bool open(MainWindow& w, const QStringList& paths, QSize size = {1280, 800});
  [[nodiscard]] QString big(const QString& file) const {
    return QDir::cleanPath(m_large.path() + "/big/" + file);
  }

  QTemporaryDir m_large;  // make_large_run.py's run, written once
  QJsonObject m_expected;
};

void TestEveryButton::initTestCase() {
  QVERIFY(m_large.isValid());
  QProcess py;
  py.start(QStringLiteral(CKPT_TORCH_PYTHON),
           {QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/make_large_run.py", m_large.path()});
  QVERIFY(py.waitForFinished(kTimeoutMs));
  QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
  QFile f(m_large.path() + "/expected.json");
  QVERIFY(f.open(QIODevice::ReadOnly));
  m_expected = QJsonDocument::fromJson(f.readAll()).object();
  QVERIFY(!m_expected.value("rows").toObject().isEmpty());
}

void TestEveryButton::init() {
  // Each test starts from the Curves tab's defaults, not from what the last
  // one chose with the keys or the mouse (remembered in QSettings).
  QSettings().remove("curves");
}

// Every thread of ui/'s pool (workpool.h) held until this goes: a job
// started meanwhile (Compare's, Drift's) waits in the queue, so a click on
// Cancel lands while it has compared nothing, however fast the machine
// reads 128 MiB (the test was a race an idle machine lost). Holding the
// global pool instead hangs the click: Qt paints on it.
class PoolHold {
 public:
  PoolHold() : m_threads(ckpt::workPool()->maxThreadCount()) {
    for (int i = 0; i < m_threads; ++i)
      ckpt::workPool()->start([this] {
        m_started.release();
        m_release.acquire();
      });
    m_started.acquire(m_threads);
  }
  PoolHold(const PoolHold&) = delete;
  PoolHold& operator=(const PoolHold&) = delete;
  ~PoolHold() { m_release.release(m_threads); }

 private:
  int m_threads;
  QSemaphore m_started, m_release;
};

bool TestEveryButton::open(MainWindow& w, const QStringList& paths, QSize size) {
  return openWindow(w, paths, size);
}

void TestEveryButton::compareCancelStopsAndSaysSo() {
  MainWindow w;
  QVERIFY(open(w, {m_large.path()}));
  clickRow(w, big("big_step100.pt"));
  clickRow(w, big("big_step200.pt"), Qt::ControlModifier);
  CompareView* compare = w.compareView();
  QSignalSpy done(compare, &CompareView::finished);
  {
    PoolHold hold;
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(compare));
    // 128 MiB of tensors to read: the button is there while they are.
    QPushButton* cancel = compare->cancelButton();
    QVERIFY(cancel->isVisible() && cancel->isEnabled());
    QTest::mouseClick(cancel, Qt::LeftButton);
  }
  QPushButton* cancel = compare->cancelButton();
  QVERIFY(done.count() == 1 || done.wait(kTimeoutMs));
  QCOMPARE(done.back().front().toBool(), false);
  QVERIFY(!cancel->isVisible());
  QVERIFY2(compare->statusText().contains("Cancelled"), qPrintable(compare->statusText()));
  QVERIFY2(w.statusBar()->currentMessage().startsWith("Comparison cancelled"),
           qPrintable(w.statusBar()->currentMessage()));
  // Fewer tensors compared than the files hold: it really stopped.
  DiffModel* model = compare->model();
  int computed = 0;
  for (int r = 0; r < model->rowCount(); ++r)
    if (std::isfinite(model->index(r, int(DiffModel::Column::RelL2))
                          .data(int(DiffModel::Role::Value))
                          .toDouble()))
      ++computed;
  QVERIFY2(computed < 8, qPrintable(QString::number(computed)));
}

void TestEveryButton::driftCancelStopsAndSaysSo() {
  MainWindow w;
  QVERIFY(open(w, {m_large.path()}));
  const QModelIndex run =
      w.browserPanel()->proxy()->mapFromSource(w.checkpointModel()->indexOfRun(big("")));
  QVERIFY(run.isValid());
  QTest::mouseClick(w.checkpointView()->viewport(), Qt::LeftButton, {},
                    w.checkpointView()->visualRect(run).center());
  DriftView* drift = w.driftView();
  QSignalSpy done(drift, &DriftView::finished);
  QPushButton* cancel = drift->cancelButton();
  {
    PoolHold hold;
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(drift));
    QVERIFY(cancel->isVisible());
    QTest::mouseClick(cancel, Qt::LeftButton);
  }
  QVERIFY(done.count() == 1 || done.wait(kTimeoutMs));
  QCOMPARE(done.back().front().toBool(), false);
  QVERIFY(!cancel->isVisible());
  QVERIFY2(drift->statusText().startsWith("Cancelled"), qPrintable(drift->statusText()));
  QVERIFY2(w.statusBar()->currentMessage().startsWith("Cancelled"),
           qPrintable(w.statusBar()->currentMessage()));
  // The chain has two steps; the second was never started.
  QVERIFY(drift->steps().size() < 2);
}

void TestEveryButton::compareDifferencesOnly() {
  MainWindow w;
  QVERIFY(open(w, {m_large.path()}));
  clickRow(w, big("big_step100.pt"));
  clickRow(w, big("big_step300.pt"), Qt::ControlModifier);
  CompareView* compare = w.compareView();
  QSignalSpy done(compare, &CompareView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
  QVERIFY(done.wait(kTimeoutMs));
  QVERIFY(done.back().front().toBool());
  clickTab(compare->tabs(), "Metadata");
  QTableWidget* table = compare->metadataTable();
  // The rows a person sees: key -> (A, B) as shown.
  auto shownRows = [table] {
    QMap<QString, QPair<QString, QString>> rows;
    for (int r = 0; r < table->rowCount(); ++r)
      if (!table->isRowHidden(r))
        rows[table->item(r, 0)->text()] = {table->item(r, 1)->text(), table->item(r, 2)->text()};
    return rows;
  };
  const QJsonObject a = m_expected.value("metadata").toObject().value("big_step100.pt").toObject();
  const QJsonObject b = m_expected.value("metadata").toObject().value("big_step300.pt").toObject();
  const auto all = shownRows();
  QStringList differing, same;
  for (auto it = a.begin(); it != a.end(); ++it) {
    const QString key = it.key();
    QVERIFY2(all.contains(key),
             qPrintable(key + " is not shown; shown: " + QStringList(all.keys()).join(", ")));
    (it.value() == b.value(it.key()) ? same : differing) << key;
  }
  QVERIFY(!differing.isEmpty() && !same.isEmpty());

  QCheckBox* only = compare->differencesOnlyBox();
  QVERIFY(only->isVisible() && !only->isChecked());
  QTest::mouseClick(only, Qt::LeftButton, {}, QPoint(6, only->height() / 2));
  QVERIFY(only->isChecked());
  const auto diffs = shownRows();
  for (const QString& k : differing) QVERIFY2(diffs.contains(k), qPrintable(k));
  for (const QString& k : same) QVERIFY2(!diffs.contains(k), qPrintable(k));
  for (auto it = diffs.begin(); it != diffs.end(); ++it)
    QVERIFY2(it->first != it->second, qPrintable(it.key()));
  QTest::mouseClick(only, Qt::LeftButton, {}, QPoint(6, only->height() / 2));
  QCOMPARE(shownRows().size(), all.size());
}

void TestEveryButton::goToRowShowsThatRowsValues() {
  MainWindow w;
  QVERIFY(open(w, {big("big_step100.pt")}));
  InspectorWidget* inspector = w.inspector();
  const QJsonObject rows = m_expected.value("rows").toObject();
  const QString name = rows.keys().front();
  // The tensor clicked in Parameters, where a person finds it.
  clickTab(inspector->tabs(), "Parameters");
  QTreeView* params = inspector->parameterView();
  params->expandAll();
  QModelIndex leaf;
  std::function<void(const QModelIndex&)> find = [&](const QModelIndex& parent) {
    for (int r = 0; r < params->model()->rowCount(parent) && !leaf.isValid(); ++r) {
      const QModelIndex i = params->model()->index(r, 0, parent);
      if (params->model()->rowCount(i) > 0)
        find(i);
      else if (name.endsWith(i.data().toString()) &&
               i.parent().data().toString() == name.section('.', -2, -2))
        leaf = i;
    }
  };
  find({});
  QVERIFY2(leaf.isValid(), qPrintable(name));
  params->scrollTo(leaf);
  QTest::mouseClick(params->viewport(), Qt::LeftButton, {}, params->visualRect(leaf).center());
  TensorView* tensor = inspector->tensorView();
  clickTab(inspector->tabs(), "Tensor");
  QTRY_VERIFY_WITH_TIMEOUT(tensor->analysis().has_value(), kTimeoutMs);

  auto* rowBox = tensor->findChild<QSpinBox*>();
  QVERIFY(rowBox && rowBox->isVisible());
  QLineEdit* edit = rowBox->findChild<QLineEdit*>();
  const QJsonObject wanted = rows.value(name).toObject();
  for (const QString& rowText : wanted.keys()) {
    // Click, select what is there, type the row, Return.
    QTest::mouseClick(edit, Qt::LeftButton, {}, edit->rect().center());
    QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(edit, rowText);
    QTest::keyClick(edit, Qt::Key_Return);
    QTableView* view = tensor->valueView();
    ValueTableModel* model = tensor->valueModel();
    const QModelIndex current = view->currentIndex();
    QVERIFY(current.isValid());
    QCOMPARE(model->headerData(current.row(), Qt::Vertical).toString(), rowText);
    // Shown in the view's rectangle, and the values torch read back.
    QVERIFY(view->viewport()->rect().intersects(view->visualRect(current)));
    const QJsonArray values = wanted.value(rowText).toArray();
    for (int c = 0; c < values.size(); ++c) {
      const QModelIndex cell = model->index(current.row(), c);
      QTRY_VERIFY_WITH_TIMEOUT(model->data(cell, int(ValueTableModel::Role::Value)).isValid(),
                               kTimeoutMs);
      QCOMPARE(model->data(cell, int(ValueTableModel::Role::Value)).toDouble(),
               values.at(c).toDouble());
    }
  }
}

void TestEveryButton::openFilesThenRecentThenClear() {
  QSettings().remove("recent");
  MainWindow::clearRecentPaths();
  MainWindow w;
  w.resize(1280, 800);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  // File > Open Files... with a file typed into the dialog.
  QSignalSpy loaded(&w, &MainWindow::loaded);
  answerFileDialog(big("big_step200.pt"));
  clickMenu(w, "File", "Open Files...");
  QVERIFY(loaded.count() == 1 || loaded.wait(kTimeoutMs));
  QCOMPARE(w.openedPaths(), QStringList{big("big_step200.pt")});
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(1));
  QTRY_VERIFY(w.inspector()->shownPath().endsWith("big_step200.pt"));
  w.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&w));

  // Another directory opened, then File > Open Recent > the file: open again.
  loaded.clear();
  w.openPaths({m_large.path() + "/big"});
  QVERIFY(loaded.count() == 1 || loaded.wait(kTimeoutMs));
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(3));
  loaded.clear();
  const QString shownFile = QDir::toNativeSeparators(big("big_step200.pt"));
  const QStringList entries = clickSubmenu(w, "File", "Open Recent", shownFile);
  QVERIFY2(entries.contains(shownFile), qPrintable(entries.join(" | ")));
  QVERIFY(loaded.count() == 1 || loaded.wait(kTimeoutMs));
  QCOMPARE(w.openedPaths(), QStringList{big("big_step200.pt")});
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(1));

  // Open Recent > Clear List: the menu then offers nothing to open.
  clickSubmenu(w, "File", "Open Recent", "Clear List");
  QVERIFY(MainWindow::recentPaths().isEmpty());
  const QStringList after = clickSubmenu(w, "File", "Open Recent", "");
  QVERIFY2(after.contains("(none)") && !after.contains(shownFile), qPrintable(after.join(" | ")));
}

void TestEveryButton::reloadKeepsTheSelection() {
  MainWindow w;
  QVERIFY(open(w, {m_large.path()}));
  clickRow(w, big("big_step300.pt"));
  QCOMPARE(w.selectedCheckpoints(), QStringList{big("big_step300.pt")});
  // F5: the same row afterwards, not the first one.
  QSignalSpy scanned(&w, &MainWindow::scanFinished);
  QTest::keySequence(&w, QKeySequence::Refresh);
  QVERIFY(scanned.count() >= 1 || scanned.wait(kTimeoutMs));
  QCOMPARE(w.selectedCheckpoints(), QStringList{big("big_step300.pt")});
  QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->shownPath().endsWith("big_step300.pt"), kTimeoutMs);
  // File > Reload with the run's row selected: the run's row again.
  const QModelIndex run =
      w.browserPanel()->proxy()->mapFromSource(w.checkpointModel()->indexOfRun(big("")));
  QTest::mouseClick(w.checkpointView()->viewport(), Qt::LeftButton, {},
                    w.checkpointView()->visualRect(run).center());
  scanned.clear();
  clickMenu(w, "File", "Reload");
  QVERIFY(scanned.count() >= 1 || scanned.wait(kTimeoutMs));
  const QModelIndex current = w.checkpointView()->currentIndex();
  QCOMPARE(current.data(int(CheckpointListModel::Role::Path)).toString(), big(""));
}

void TestEveryButton::trainBrowseButtonsFillTheirFields() {
  MainWindow w;
  QVERIFY(open(w, {m_large.path()}));
  TrainPanel* panel = w.trainPanel();
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_N));
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(panel));
  // The tool button labelled `label` beside `edit` (in the edit's row).
  auto buttonBeside = [](QWidget* edit, const QString& label) -> QToolButton* {
    for (QToolButton* b : edit->parentWidget()->findChildren<QToolButton*>())
      if (b->text() == label && b->isVisible()) return b;
    return nullptr;
  };
  auto pressAndAnswer = [&](QToolButton* button, const QString& path) {
    answerFileDialog(path);
    QTest::mouseClick(button, Qt::LeftButton);
  };
  const QString dataDir = m_large.path() + "/big";
  const QString dataFile = big("big_step100.pt");
  QToolButton* folder = buttonBeside(panel->dataPathEdit(), QStringLiteral("Folder…"));
  QVERIFY(folder);
  pressAndAnswer(folder, dataDir);
  QCOMPARE(QDir::cleanPath(panel->dataPathEdit()->text()), QDir::cleanPath(dataDir));
  QToolButton* file = buttonBeside(panel->dataPathEdit(), QStringLiteral("File…"));
  QVERIFY(file);
  pressAndAnswer(file, dataFile);
  QCOMPARE(panel->dataPathEdit()->text(), dataFile);
  QToolButton* out = buttonBeside(panel->outputDirEdit(), QStringLiteral("…"));
  QVERIFY(out);
  const QString outDir = m_large.path() + "/runs-out";
  QVERIFY(QDir().mkpath(outDir));
  pressAndAnswer(out, outDir);
  QCOMPARE(QDir::cleanPath(panel->outputDirEdit()->text()), QDir::cleanPath(outDir));

  // The Resume page's checkpoint chooser.
  clickTab(panel->findChild<QTabWidget*>(), "Resume");
  QToolButton* ckpt = buttonBeside(panel->resumeCheckpointEdit(), QStringLiteral("…"));
  QVERIFY(ckpt);
  pressAndAnswer(ckpt, big("big_step300.pt"));
  QCOMPARE(panel->resumeCheckpointEdit()->text(), big("big_step300.pt"));
  // Choosing files starts nothing.
  QVERIFY(!panel->isRunning());
}

void TestEveryButton::quitClosesAndRemembersTheWindow() {
  QSettings().remove("window");
  MainWindow w;
  QVERIFY(open(w, {m_large.path()}, {1100, 720}));
  QVERIFY(w.isVisible());
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_Q));
  QTRY_VERIFY(!w.isVisible());
  // The next window opens at the size this one had (as main() starts it).
  QVERIFY(QSettings().contains("window/geometry"));
  MainWindow again;
  again.resize(1280, 800);
  QVERIFY(again.restoreLayout());
  again.show();
  QVERIFY(QTest::qWaitForWindowExposed(&again));
  QCOMPARE(again.size(), QSize(1100, 720));
}

// The rest of what a person can set: the smoothing slider and the x axis of
// Curves by keyboard, the Compare and Parameters filters typed, and the
// browser dock hidden and shown from the View menu.
void TestEveryButton::slidersBoxesFiltersAndTheDock() {
  MainWindow w;
  QVERIFY(open(w, {m_large.path()}));
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
  CurvesView* curves = w.curvesView();
  if (curves->isLoading()) {
    QSignalSpy ready(curves, &CurvesView::curvesReady);
    QVERIFY(ready.wait(kTimeoutMs));
  }
  // The losses the checkpoints record (make_large_run.py), in step order.
  std::vector<double> loss;
  for (const char* f : {"big_step100.pt", "big_step200.pt", "big_step300.pt"})
    loss.push_back(
        m_expected.value("metadata").toObject().value(f).toObject().value("loss").toDouble());
  auto* slider = curves->findChild<QSlider*>("smoothing");
  QVERIFY(slider && slider->isVisible() && slider->isEnabled());
  QTest::mouseClick(slider, Qt::LeftButton, {}, QPoint(slider->width() - 2, slider->height() / 2));
  QTest::keyClick(slider, Qt::Key_End);
  const double w99 = slider->maximum() / 100.0;
  QCOMPARE(curves->smoothing(), w99);
  // TensorBoard's debiased EMA of the three losses, by hand.
  double ema = 0, weight = 0;
  for (double x : loss) {
    ema = w99 * ema + (1 - w99) * x;
    weight = w99 * weight + (1 - w99);
  }
  QCPGraph* smoothed = curves->smoothedGraph("big");
  QVERIFY(smoothed && smoothed->dataCount() == 3);
  QVERIFY(std::abs(smoothed->data()->at(2)->value - ema / weight) < 1e-12);
  QTest::keyClick(slider, Qt::Key_Home);
  QCOMPARE(curves->smoothing(), 0.0);
  QCOMPARE(curves->smoothedGraph("big")->data()->at(2)->value, loss[2]);

  auto* axis = curves->findChild<QComboBox*>("xaxis");
  QVERIFY(axis && axis->isVisible());
  axis->setFocus();
  QTest::keyClick(axis, Qt::Key_Down);
  QCOMPARE(curves->xAxis(), CurveAxis::RelativeStep);
  QTest::keyClick(axis, Qt::Key_Up);
  QCOMPARE(curves->xAxis(), CurveAxis::Step);
  QCOMPARE(curves->smoothedGraph("big")->data()->at(0)->key, 100.0);

  // Compare's tensor filter, typed.
  clickRow(w, big("big_step100.pt"));
  clickRow(w, big("big_step200.pt"), Qt::ControlModifier);
  QSignalSpy done(w.compareView(), &CompareView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
  QVERIFY(done.wait(kTimeoutMs));
  QLineEdit* filter = w.compareView()->filterEdit();
  QTest::mouseClick(filter, Qt::LeftButton);
  QTest::keyClicks(filter, "w2");
  QSortFilterProxyModel* rows = w.compareView()->proxy();
  QCOMPARE(rows->rowCount(), 4);  // blocks.0..3.mlp.w2.weight
  for (int r = 0; r < rows->rowCount(); ++r)
    QVERIFY(rows->index(r, int(DiffModel::Column::Name)).data().toString().contains("w2"));

  // Parameters' search, typed: only w1 leaves stay.
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_1));
  InspectorWidget* inspector = w.inspector();
  clickTab(inspector->tabs(), "Parameters");
  auto* search = inspector->findChild<QLineEdit*>();
  for (QLineEdit* e : inspector->findChildren<QLineEdit*>())
    if (e->isVisible() && e->placeholderText().startsWith("Search parameters")) search = e;
  QVERIFY(search && search->isVisible());
  QTest::mouseClick(search, Qt::LeftButton);
  QTest::keyClicks(search, "w1");
  QSortFilterProxyModel* params = inspector->parameterProxy();
  int leaves = 0;
  std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
    for (int r = 0; r < params->rowCount(parent); ++r) {
      const QModelIndex i = params->index(r, 0, parent);
      if (params->rowCount(i) > 0) {
        walk(i);
      } else {
        ++leaves;
        QCOMPARE(i.parent().data().toString(), QStringLiteral("w1"));
      }
    }
  };
  walk({});
  QCOMPARE(leaves, 4);

  // View > Experiments hides the browser dock, and shows it again.
  QWidget* dock = w.browserPanel()->parentWidget();
  while (dock && !qobject_cast<QDockWidget*>(dock)) dock = dock->parentWidget();
  QVERIFY(dock && dock->isVisible());
  clickMenu(w, "View", "Experiments");
  QTRY_VERIFY(!dock->isVisible());
  clickMenu(w, "View", "Experiments");
  QTRY_VERIFY(dock->isVisible());
}

QTEST_MAIN(TestEveryButton)
#include "tst_everybutton.moc"
