// The window under a person's hands: every check here starts from input
// events on visible widgets (a click at a row's visual rect, at a marker's
// pixel, on a button; a key sequence for a shortcut; a menu opened and an
// entry clicked; a path typed into the file dialog) and asserts what the
// person then sees or what is on disk. Expectations come from Python (the
// fixtures' manifest, diff_reference.py run at test time), checksums and
// the files themselves, never from numbers typed in here.
#include <qcustomplot.h>
#include <QAbstractItemView>
#include <QAbstractScrollArea>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QCryptographicHash>
#include <QDialogButtonBox>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeView>
#include <QWheelEvent>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "compare/compareview.h"
#include "compare/diffmodel.h"
#include "compare/driftview.h"
#include "curves/curvesview.h"
#include "generate/generatepanel.h"
#include "gestures.h"
#include "inspector/inspectorwidget.h"
#include "inspector/tensorview.h"
#include "mainwindow.h"
#include "training/trainpanel.h"

using namespace ckpt;

class TestGestures : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void swapComparesTheOtherWay();
  void failedCompareLeavesNothingStale();
  void markerClickOpensTheCheckpoint();
  void markersAtRecordedValuesAndScheduleNotSmoothed();
  void resumeShortcutOpensTheFormOnly();
  void finetuneShortcutAndTabArePrefilled();
  void driftOfAStageFamilyFillsTheHeatMap();
  void tensorTabKeepsItsSubject();
  void viewMenuReachesEveryTab();
  void fileMenuFilterReloadExportNewRun();
  void referenceExperimentShowsEveryStage();
  void addLogsBringsTheCurves();
  void dangerousCheckpointIsNotTrainedFrom();

 private:
  // A window of `size` on `paths`, shown, its first summary loaded.
  bool open(MainWindow& w, const QStringList& paths, QSize size = {1280, 800});
  [[nodiscard]] QString fixture(const QString& rel) const { return m_fixtures + "/" + rel; }
  [[nodiscard]] double manifestLoss(const QString& rel) const {
    return m_manifest.value(rel).toObject().value("loss").toDouble(std::nan(""));
  }

  QString m_fixtures;
  QJsonObject m_manifest;  // "runs": rel -> {loss, step, ...}
  QJsonObject m_diffPair;  // a pair of make_diff_fixtures with torch's numbers
  std::unique_ptr<QTemporaryDir> m_dir;
};

void TestGestures::initTestCase() {
  m_fixtures = QStringLiteral(CKPT_FIXTURE_DIR);
  QFile manifest(m_fixtures + "/manifest.json");
  QVERIFY2(manifest.open(QIODevice::ReadOnly), "no fixtures: run ctest (make_fixtures)");
  m_manifest = QJsonDocument::fromJson(manifest.readAll()).object().value("runs").toObject();
  QFile pairs(m_fixtures + "/diff/expected.json");
  QVERIFY2(pairs.open(QIODevice::ReadOnly), "no diff fixtures: run ctest (make_diff_fixtures)");
  for (const QJsonValue& p :
       QJsonDocument::fromJson(pairs.readAll()).object().value("pairs").toArray()) {
    const QJsonObject o = p.toObject();
    // A pair of one model, changed (not the identical or the added/removed ones).
    const QJsonObject e = o.value("expected").toObject();
    if (e.value("added").toArray().isEmpty() && e.value("removed").toArray().isEmpty() &&
        !e.value("tensors").toObject().isEmpty() && m_diffPair.isEmpty() &&
        o.value("name").toString() != "same")
      m_diffPair = o;
  }
  QVERIFY(!m_diffPair.isEmpty());
}

void TestGestures::init() {
  // Each test on its own copies: what a gesture writes or spares is checked on disk.
  m_dir = std::make_unique<QTemporaryDir>();
  QVERIFY(m_dir->isValid());
  // Each test starts from the Curves tab's defaults, not from what the last
  // one chose with the keys or the mouse (remembered in QSettings).
  QSettings().remove("curves");
}

bool TestGestures::open(MainWindow& w, const QStringList& paths, QSize size) {
  return openWindow(w, paths, size);
}

void TestGestures::swapComparesTheOtherWay() {
  const QString root = m_dir->path();
  const QString a = root + "/pair/pair_step100.pt", b = root + "/pair/pair_step200.pt";
  QVERIFY(copyTo(m_fixtures + "/diff/" + m_diffPair.value("a").toString(), a));
  QVERIFY(copyTo(m_fixtures + "/diff/" + m_diffPair.value("b").toString(), b));
  // torch's numbers for B -> A, computed now by the reference script.
  QProcess py;
  py.start(QStringLiteral(CKPT_TORCH_PYTHON),
           {QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/diff_reference.py", b, a, "--out",
            root + "/ba.json"});
  QVERIFY(py.waitForFinished(kTimeoutMs) && py.exitCode() == 0);
  QFile baFile(root + "/ba.json");
  QVERIFY(baFile.open(QIODevice::ReadOnly));
  const QJsonObject ba =
      QJsonDocument::fromJson(baFile.readAll()).object().value("tensors").toObject();
  const QJsonObject ab = m_diffPair.value("expected").toObject().value("tensors").toObject();
  QVERIFY(!ba.isEmpty());

  MainWindow w;
  QVERIFY(open(w, {root + "/pair"}));
  clickRow(w, a);
  clickRow(w, b, Qt::ControlModifier);
  QSignalSpy done(w.compareView(), &CompareView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
  QVERIFY(done.wait(kTimeoutMs));
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.compareView()));

  auto relL2Of = [&w](const QString& name) {
    DiffModel* m = w.compareView()->model();
    for (int r = 0; r < m->rowCount(); ++r)
      if (m->index(r, int(DiffModel::Column::Name)).data().toString() == name)
        return m->index(r, int(DiffModel::Column::RelL2))
            .data(int(DiffModel::Role::Value))
            .toDouble();
    return std::nan("");
  };
  auto matches = [&](const QJsonObject& want) {
    int checked = 0;
    for (auto it = want.begin(); it != want.end(); ++it) {
      const QJsonValue v = it.value().toObject().value("rel_l2");
      if (!v.isDouble()) continue;
      const double got = relL2Of(it.key());
      if (!(std::abs(got - v.toDouble()) <= 1e-9 * std::max(1.0, std::abs(v.toDouble())))) {
        qWarning() << it.key() << "rel_l2" << got << "torch" << v.toDouble();
        return false;
      }
      ++checked;
    }
    return checked > 0;
  };
  QVERIFY(matches(ab));
  QVERIFY(w.compareView()->pathA().endsWith("pair_step100.pt"));

  // The visible button.
  QPushButton* swap = w.compareView()->swapButton();
  QVERIFY(swap->isVisible() && swap->isEnabled());
  done.clear();
  QTest::mouseClick(swap, Qt::LeftButton);
  QVERIFY(done.wait(kTimeoutMs));
  QVERIFY(w.compareView()->pathA().endsWith("pair_step200.pt"));
  QVERIFY(w.compareView()->pathB().endsWith("pair_step100.pt"));
  QVERIFY2(!w.compareView()->statusText().contains(", 0 changed"),
           qPrintable(w.compareView()->statusText()));
  QVERIFY(matches(ba));
  // The status bar says what ended, not "Comparing ...".
  QVERIFY2(!w.statusBar()->currentMessage().contains("Comparing"),
           qPrintable(w.statusBar()->currentMessage()));
}

void TestGestures::failedCompareLeavesNothingStale() {
  const QString root = m_dir->path();
  const QString a = root + "/pair/pair_step100.pt", b = root + "/pair/pair_step200.pt";
  QVERIFY(copyTo(m_fixtures + "/diff/" + m_diffPair.value("a").toString(), a));
  QVERIFY(copyTo(m_fixtures + "/diff/" + m_diffPair.value("b").toString(), b));
  const QString broken = root + "/elsewhere/broken_step400.pt";
  QVERIFY(copyTo(fixture("runs/tiny/broken_step400.pt"), broken));

  MainWindow w;
  QVERIFY(open(w, {root + "/pair"}));
  clickRow(w, a);
  clickRow(w, b, Qt::ControlModifier);
  QSignalSpy done(w.compareView(), &CompareView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
  QVERIFY(done.wait(kTimeoutMs));
  QVERIFY(w.compareView()->model()->rowCount() > 0);
  QVERIFY(w.compareView()->blockPlot()->plottableCount() > 0);
  QVERIFY(w.compareView()->heatMap());

  // Checkpoint > Compare With... and the damaged file typed into the dialog.
  clickRow(w, a);
  done.clear();
  answerFileDialog(broken);
  clickMenu(w, "Checkpoint", "Compare With...");
  QVERIFY(done.count() == 1 || done.wait(kTimeoutMs));
  QCOMPARE(done.back().front().toBool(), false);
  QVERIFY(w.compareView()->pathB().endsWith("broken_step400.pt"));
  // Nothing of the previous pair under the new titles.
  QCOMPARE(w.compareView()->model()->rowCount(), 0);
  QCOMPARE(w.compareView()->blockPlot()->plottableCount(), 0);
  QCOMPARE(w.compareView()->heatPlot()->plottableCount(), 0);
  QVERIFY(!w.compareView()->heatMap());
  QVERIFY(w.compareView()->statusText().contains("Cannot compare"));
  QVERIFY2(w.statusBar()->currentMessage().contains("Cannot compare"),
           qPrintable(w.statusBar()->currentMessage()));
  QVERIFY(w.statusBar()->currentMessage().contains("broken_step400.pt"));
}

void TestGestures::markerClickOpensTheCheckpoint() {
  const QString root = m_dir->path();
  for (const char* f : {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"})
    QVERIFY(copyTo(fixture(QStringLiteral("runs/tiny/") + f), root + "/alpha/" + f));
  // A log of every step, its values unlike the checkpoints' own.
  QFile jsonl(root + "/alpha/metrics.jsonl");
  QVERIFY(jsonl.open(QIODevice::WriteOnly));
  for (int step = 10; step <= 300; step += 10)
    jsonl.write(QStringLiteral("{\"step\": %1, \"loss\": %2, \"lr\": %3}\n")
                    .arg(step)
                    .arg(5.0 - step / 100.0)
                    .arg(step < 100 ? 3e-4 * step / 100 : 3e-4)
                    .toUtf8());
  jsonl.close();

  for (bool logY : {false, true}) {
    MainWindow w;
    QVERIFY(open(w, {root}));
    CurvesView* curves = w.curvesView();
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(curves));
    if (curves->isLoading()) {
      QSignalSpy ready(curves, &CurvesView::curvesReady);
      QVERIFY(ready.wait(kTimeoutMs));
    }
    if (logY) {
      auto* box = curves->findChild<QCheckBox*>();
      QVERIFY(box && box->isVisible());
      QTest::mouseClick(box, Qt::LeftButton, {}, QPoint(6, box->height() / 2));
      QVERIFY(curves->logScale());
    }
    curves->plot()->replot();
    QCPGraph* markers = curves->markerGraph("alpha");
    QVERIFY(markers);
    QCOMPARE(markers->data()->size(), 3);
    const auto point = markers->data()->at(1);  // step 200
    QCOMPARE(point->key, 200.0);
    const QPoint pixel = markers->coordsToPixels(point->key, point->value).toPoint();
    QVERIFY(curves->plot()->axisRect()->rect().contains(pixel));
    // The mouse comes over the marker (the hover line follows it), then clicks.
    QTest::mouseMove(curves->plot(), pixel + QPoint(20, 0));
    QTest::mouseMove(curves->plot(), pixel);
    QSignalSpy shown(&w, &MainWindow::summaryShown);
    QTest::mouseClick(curves->plot(), Qt::LeftButton, {}, pixel);
    QTRY_COMPARE_WITH_TIMEOUT(w.tabs()->currentWidget(), static_cast<QWidget*>(w.inspector()),
                              5000);
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->shownPath().endsWith("alpha/tiny_step200.pt"),
                             kTimeoutMs);
    QCOMPARE(w.selectedCheckpoints(),
             QStringList{QDir::cleanPath(root + "/alpha/tiny_step200.pt")});
    // A double click elsewhere on the chart opens nothing.
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
    QTest::mouseDClick(curves->plot(), Qt::LeftButton, {},
                       curves->plot()->axisRect()->topLeft() + QPoint(4, 4));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(curves));
  }
}

void TestGestures::markersAtRecordedValuesAndScheduleNotSmoothed() {
  const QString root = m_dir->path();
  for (const char* f : {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"})
    QVERIFY(copyTo(fixture(QStringLiteral("runs/tiny/") + f), root + "/alpha/" + f));
  // And a checkpoint that records no loss (a bare state dict) at a step nobody logged.
  QVERIFY(copyTo(fixture("runs/bare/bare_state.pt"), root + "/alpha/alpha_step155.pt"));
  QFile jsonl(root + "/alpha/metrics.jsonl");
  QVERIFY(jsonl.open(QIODevice::WriteOnly));
  std::vector<std::pair<int, double>> lr;
  for (int step = 10; step <= 300; step += 10) {
    const double rate = step <= 100 ? 3e-4 * step / 100.0 : 3e-4;  // a linear warmup
    lr.emplace_back(step, rate);
    jsonl.write(QStringLiteral("{\"step\": %1, \"loss\": %2, \"lr\": %3}\n")
                    .arg(step)
                    .arg(5.0 - step / 100.0, 0, 'g', 17)
                    .arg(rate, 0, 'g', 17)
                    .toUtf8());
  }
  jsonl.close();

  MainWindow w;
  QVERIFY(open(w, {root}));
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
  CurvesView* curves = w.curvesView();
  if (curves->isLoading()) {
    QSignalSpy ready(curves, &CurvesView::curvesReady);
    QVERIFY(ready.wait(kTimeoutMs));
  }
  QVERIFY(curves->smoothing() > 0);
  // Markers at the loss each checkpoint records (Python wrote it), not on the smoothed line.
  QCPGraph* markers = curves->markerGraph("alpha");
  QCOMPARE(markers->data()->size(), 3);
  const char* files[] = {"runs/tiny/tiny_step100.pt", "runs/tiny/tiny_step200.pt",
                         "runs/tiny/tiny_final.pt"};
  for (int i = 0; i < 3; ++i) QCOMPARE(markers->data()->at(i)->value, manifestLoss(files[i]));
  // The one without a value: hollow, on the x axis.
  QCPGraph* bare = curves->bareMarkerGraph("alpha");
  QVERIFY(bare);
  QCOMPARE(bare->data()->size(), 1);
  QCOMPARE(bare->data()->at(0)->key, 155.0);
  QCOMPARE(bare->data()->at(0)->value, curves->plot()->yAxis->range().lower);
  QCOMPARE(bare->scatterStyle().brush().style(), Qt::NoBrush);

  // lr, chosen with the keyboard in the metric box: drawn as logged, whatever the smoothing.
  auto* metricBox = curves->findChild<QComboBox*>();
  QVERIFY(metricBox && metricBox->isVisible());
  metricBox->setFocus();
  for (int i = 0; i < metricBox->count() && metricBox->currentText() != "lr"; ++i)
    QTest::keyClick(metricBox, Qt::Key_Down);
  QCOMPARE(curves->metric(), QStringLiteral("lr"));
  QCPGraph* line = curves->smoothedGraph("alpha");
  QCOMPARE(line->data()->size(), int(lr.size()));
  for (size_t i = 0; i < lr.size(); ++i) {
    QCOMPARE(line->data()->at(int(i))->key, double(lr[i].first));
    QCOMPARE(line->data()->at(int(i))->value, lr[i].second);
  }
  QCOMPARE(curves->effectiveSmoothing(), 0.0);
  // Log axis: labelled ticks although the values span less than a decade.
  auto* logBox = curves->findChild<QCheckBox*>();
  QTest::mouseClick(logBox, Qt::LeftButton, {}, QPoint(6, logBox->height() / 2));
  curves->plot()->replot();
  QVERIFY(curves->plot()->yAxis->tickVectorLabels().size() >= 2);
  for (const QString& label : curves->plot()->yAxis->tickVectorLabels()) QVERIFY(!label.isEmpty());
}

void TestGestures::resumeShortcutOpensTheFormOnly() {
  const QString root = m_dir->path();
  for (const char* f : {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"})
    QVERIFY(copyTo(fixture(QStringLiteral("runs/tiny/") + f), root + "/tiny/" + f));
  const auto before = checksums(root);

  MainWindow w;
  QVERIFY(open(w, {root}));
  const QString middle = QDir::cleanPath(root + "/tiny/tiny_step200.pt");
  clickRow(w, middle);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_R));
  TrainPanel* panel = w.trainPanel();
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(panel));
  QCOMPARE(panel->mode(), TrainPanel::Mode::Resume);
  QCOMPARE(panel->resumeCheckpointEdit()->text(), middle);
  // What Start would do, said before anything runs: a branch next to the run.
  QTRY_VERIFY_WITH_TIMEOUT(panel->resumePlanText().contains("tiny@200"), 5000);
  QVERIFY2(panel->resumePlanText().contains("not the newest"), qPrintable(panel->resumePlanText()));
  QVERIFY(!panel->isRunning());
  QTest::qWait(500);
  QVERIFY(!panel->isRunning());
  QCOMPARE(checksums(root), before);  // nothing written, nothing replaced
  QVERIFY(!QFileInfo::exists(root + "/tiny@200"));

  // The run's row and Ctrl+R: its newest intact checkpoint (the final one here).
  const QModelIndex run =
      w.browserPanel()->proxy()->mapFromSource(w.checkpointModel()->indexOfRun(root + "/tiny"));
  QVERIFY(run.isValid());
  QTest::mouseClick(w.checkpointView()->viewport(), Qt::LeftButton, {},
                    w.checkpointView()->visualRect(run).center());
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_R));
  QCOMPARE(panel->resumeCheckpointEdit()->text(), QDir::cleanPath(root + "/tiny/tiny_final.pt"));
  QVERIFY2(panel->resumePlanText().contains("newest"), qPrintable(panel->resumePlanText()));
  QVERIFY(!panel->isRunning());
  QCOMPARE(checksums(root), before);
}

void TestGestures::finetuneShortcutAndTabArePrefilled() {
  const QString root = m_dir->path();
  for (const char* f : {"tiny_step100.pt", "tiny_final.pt"})
    QVERIFY(copyTo(fixture(QStringLiteral("runs/tiny/") + f), root + "/tiny/" + f));
  const auto before = checksums(root);
  MainWindow w;
  QVERIFY(open(w, {root}));
  const QString final = QDir::cleanPath(root + "/tiny/tiny_final.pt");
  clickRow(w, final);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
  TrainPanel* panel = w.trainPanel();
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(panel));
  QCOMPARE(panel->mode(), TrainPanel::Mode::Finetune);
  QCOMPARE(panel->finetuneCheckpointEdit()->text(), final);
  QVERIFY(!panel->isRunning());

  // Another checkpoint picked in the browser, then the Fine-tune page by its tab: filled in, not
  // red.
  const QString other = QDir::cleanPath(root + "/tiny/tiny_step100.pt");
  clickRow(w, other);
  clickTab(w.tabs(), "Train");
  QTabWidget* modes = panel->findChild<QTabWidget*>();
  QVERIFY(modes);
  clickTab(modes, "Resume");
  clickTab(modes, "Fine-tune");
  QCOMPARE(panel->finetuneCheckpointEdit()->text(), other);
  QVERIFY(!panel->validationError().startsWith("checkpoint"));
  QVERIFY(!panel->isRunning());
  QCOMPARE(checksums(root), before);
}

void TestGestures::driftOfAStageFamilyFillsTheHeatMap() {
  MainWindow w;
  QVERIFY(open(w, {fixture("runs")}));
  CheckpointListModel* model = w.checkpointModel();
  QModelIndex family;
  for (int r = 0; r < model->rowCount(); ++r)
    if (!model->familyName(model->index(r, 0)).isEmpty()) family = model->index(r, 0);
  QVERIFY(family.isValid());
  QTreeView* view = w.checkpointView();
  const QModelIndex shown = w.browserPanel()->proxy()->mapFromSource(family);
  view->scrollTo(shown);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(shown).center());
  QSignalSpy done(w.driftView(), &DriftView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
  QVERIFY(done.wait(kTimeoutMs));
  QCPColorMap* map = w.driftView()->heatMap();
  QVERIFY(map);
  // Every cell the chain computed is a finite colour (none left blank), and
  // the map covers the x axis labels' cells.
  const auto& steps = w.driftView()->steps();
  QCOMPARE(int(steps.size()), 2);
  int finite = 0;
  for (int x = 0; x < map->data()->keySize(); ++x)
    for (int y = 0; y < map->data()->valueSize(); ++y)
      if (std::isfinite(map->data()->cell(x, y))) ++finite;
  QVERIFY(finite >= map->data()->keySize());
  // Painted: the image of the map's axis rect is not the background alone.
  w.driftView()->grab();
  QCustomPlot* plot = map->parentPlot();
  QImage image = plot->toPixmap(400, 300).toImage();
  const QRect cells = map->keyAxis()->axisRect()->rect();
  QSet<QRgb> colours;
  for (int y = cells.top() + 2; y < cells.bottom() - 2; y += 4)
    for (int x = cells.left() + 2; x < cells.right() - 2; x += 4) colours.insert(image.pixel(x, y));
  QVERIFY2(colours.size() >= 2, "the heat map's cells are blank");
  // The curves' y range holds every point with room above the highest.
  QCustomPlot* curves = w.driftView()->curvePlot();
  bool found = false;
  for (int g = 0; g < curves->graphCount(); ++g) {
    const QCPRange r = curves->graph(g)->getValueRange(found);
    if (found) QVERIFY(r.upper < curves->yAxis->range().upper);
  }
}

void TestGestures::tensorTabKeepsItsSubject() {
  MainWindow w;
  QVERIFY(open(w, {fixture("runs/tiny")}));
  clickRow(w, QDir::cleanPath(fixture("runs/tiny/tiny_step200.pt")));
  QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->shownPath().endsWith("tiny_step200.pt"), kTimeoutMs);
  InspectorWidget* inspector = w.inspector();
  clickTab(inspector->tabs(), "Parameters");
  QTreeView* params = inspector->parameterView();
  // The first leaf with a tensor, clicked where it is drawn.
  QModelIndex leaf;
  std::function<void(const QModelIndex&)> find = [&](const QModelIndex& parent) {
    for (int r = 0; r < params->model()->rowCount(parent) && !leaf.isValid(); ++r) {
      const QModelIndex i = params->model()->index(r, 0, parent);
      if (params->model()->hasChildren(i)) {
        params->expand(i);
        find(i);
      } else {
        leaf = i;
      }
    }
  };
  find({});
  QVERIFY(leaf.isValid());
  params->scrollTo(leaf);
  QTest::mouseClick(params->viewport(), Qt::LeftButton, {}, params->visualRect(leaf).center());
  const QString chosen = leaf.data().toString();
  QTRY_VERIFY(inspector->tensorView()->tensorIndex() >= 0);
  const int tensor = inspector->tensorView()->tensorIndex();
  // Opening Optimizer (its table gets focus) leaves the subject alone.
  clickTab(inspector->tabs(), "Optimizer");
  QTest::mouseClick(inspector->optimizerView()->viewport(), Qt::LeftButton, {},
                    QPoint(-10, -10));  // outside any row
  inspector->optimizerView()->setFocus();
  QTest::qWait(100);
  QCOMPARE(inspector->tensorView()->tensorIndex(), tensor);
  // A row of the optimizer table clicked: its exp_avg.
  const QModelIndex row = inspector->optimizerView()->model()->index(0, 0);
  QTest::mouseClick(inspector->optimizerView()->viewport(), Qt::LeftButton, {},
                    inspector->optimizerView()->visualRect(row).center());
  QTRY_VERIFY(inspector->tensorView()->tensorIndex() != tensor);
  // Back in Parameters, the chosen row clicked again brings its tensor back.
  clickTab(inspector->tabs(), "Parameters");
  QTest::mouseClick(params->viewport(), Qt::LeftButton, {}, params->visualRect(leaf).center());
  QTRY_COMPARE(inspector->tensorView()->tensorIndex(), tensor);
  QVERIFY(!chosen.isEmpty());
}

void TestGestures::viewMenuReachesEveryTab() {
  MainWindow w;
  QVERIFY(open(w, {fixture("runs/tiny")}));
  const std::pair<const char*, QWidget*> entries[] = {
      {"Curves", w.curvesView()}, {"Compare", w.compareView()},    {"Drift", w.driftView()},
      {"Train", w.trainPanel()},  {"Generate", w.generatePanel()}, {"Inspect", w.inspector()},
  };
  for (const auto& [entry, tab] : entries) {
    clickMenu(w, "View", entry);
    QCOMPARE(w.tabs()->currentWidget(), tab);
  }
  // And their shortcuts, Ctrl+1 .. Ctrl+6.
  const QWidget* byKey[] = {w.inspector(), w.curvesView(), w.compareView(),
                            w.driftView(), w.trainPanel(), w.generatePanel()};
  for (int i = 0; i < 6; ++i) {
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    QCOMPARE(w.tabs()->currentWidget(), byKey[i]);
  }
}

void TestGestures::fileMenuFilterReloadExportNewRun() {
  const QString root = m_dir->path();
  for (const char* f : {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"})
    QVERIFY(copyTo(fixture(QStringLiteral("runs/tiny/") + f), root + "/runs/tiny/" + f));
  MainWindow w;
  w.resize(1280, 800);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));

  // File > Open Directory..., the directory typed into the dialog.
  QSignalSpy loaded(&w, &MainWindow::loaded);
  answerFileDialog(root + "/runs");
  clickMenu(w, "File", "Open Directory...");
  QVERIFY(loaded.count() == 1 || loaded.wait(kTimeoutMs));
  QCOMPARE(w.openedPaths(), QStringList{root + "/runs"});
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(3));
  // The window is active again once the dialog has gone (offscreen needs telling).
  w.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&w));

  // A checkpoint written meanwhile, then F5: listed.
  QVERIFY(copyTo(fixture("runs/handloop/checkpoint_50.pt"), root + "/runs/tiny/checkpoint_50.pt"));
  QSignalSpy scanned(&w, &MainWindow::scanFinished);
  QTest::keySequence(&w, QKeySequence::Refresh);
  QVERIFY(scanned.count() >= 1 || scanned.wait(kTimeoutMs));
  QTRY_COMPARE(w.checkpointModel()->checkpointCount(), size_t(4));

  // Ctrl+F and a few letters: only matching rows stay.
  QTest::keySequence(&w, QKeySequence::Find);
  QLineEdit* filter = w.browserPanel()->filterEdit();
  QVERIFY(filter->hasFocus());
  QTest::keyClicks(filter, "step200");
  QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
  int leaves = 0;
  std::function<void(const QModelIndex&)> count = [&](const QModelIndex& parent) {
    for (int r = 0; r < proxy->rowCount(parent); ++r) {
      const QModelIndex i = proxy->index(r, 0, parent);
      if (proxy->rowCount(i) > 0)
        count(i);
      else if (i.data(int(CheckpointListModel::Role::Path)).toString().endsWith(".pt")) {
        ++leaves;
        QVERIFY(i.data().toString().contains("step200"));
      }
    }
  };
  count({});
  QCOMPARE(leaves, 1);
  QTest::keyClick(filter, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClick(filter, Qt::Key_Delete);

  // Curves > Export > Shown metric as CSV..., the file name typed: the file is written.
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
  CurvesView* curves = w.curvesView();
  if (curves->isLoading()) {
    QSignalSpy ready(curves, &CurvesView::curvesReady);
    QVERIFY(ready.wait(kTimeoutMs));
  }
  auto* exportButton = curves->findChild<QPushButton*>("export");
  QVERIFY(exportButton && exportButton->isVisible());
  const QString csv = root + "/loss.csv";
  answerFileDialog(csv);
  // The button's menu runs its own event loop: its entry is clicked from a timer.
  QMenu* menu = exportButton->menu();
  QVERIFY(menu);
  auto* chooser = new QTimer(this);
  chooser->setInterval(50);
  connect(chooser, &QTimer::timeout, this, [menu, chooser] {
    if (!menu->isVisible()) return;
    chooser->stop();
    for (QAction* a : menu->actions())
      if (a->text().contains("CSV"))
        QTest::mouseClick(menu, Qt::LeftButton, {}, menu->actionGeometry(a).center());
  });
  chooser->start();
  QTest::mouseClick(exportButton, Qt::LeftButton);
  QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(csv), 5000);
  chooser->deleteLater();
  QFile f(csv);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(lines.value(0), QStringLiteral("run,metric,step,value,smoothed"));
  QCOMPARE(lines.size(),
           1 + 4);  // the four checkpoints' losses, steps 50..300 (no metrics.jsonl here)
  // Zoomed with the wheel, then Fit: the data's range again.
  const QCPRange before = curves->plot()->xAxis->range();
  QWheelEvent wheel(QPointF(curves->plot()->axisRect()->center()),
                    curves->plot()->mapToGlobal(curves->plot()->axisRect()->center()), QPoint(),
                    QPoint(0, 240), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(curves->plot(), &wheel);
  QVERIFY(curves->plot()->xAxis->range().size() < before.size());
  QPushButton* fit = nullptr;
  for (QPushButton* b : curves->findChildren<QPushButton*>())
    if (b->text() == "Fit") fit = b;
  QVERIFY(fit);
  QTest::mouseClick(fit, Qt::LeftButton);
  QCOMPARE(curves->plot()->xAxis->range().lower, before.lower);
  QCOMPARE(curves->plot()->xAxis->range().upper, before.upper);

  // Checkpoint > New Training Run... (Ctrl+N): the New run page, nothing started.
  w.activateWindow();  // after the dialog (offscreen needs telling)
  QVERIFY(QTest::qWaitForWindowActive(&w));
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_N));
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.trainPanel()));
  QCOMPARE(w.trainPanel()->mode(), TrainPanel::Mode::NewRun);
  QVERIFY(!w.trainPanel()->isRunning());
}

namespace {

// The points of `run`'s `metric` as drawn (raw graph when smoothed, else the line).
std::vector<std::pair<double, double>> drawnPoints(CurvesView* curves, const QString& run) {
  std::vector<std::pair<double, double>> out;
  QCPGraph* g = curves->rawGraph(run);
  if (!g) return out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    out.emplace_back(it->key, it->value);
  return out;
}

// [[step, value, ...], ...] of the expectation file.
std::vector<std::pair<double, double>> expectedPoints(const QJsonArray& points) {
  std::vector<std::pair<double, double>> out;
  for (const QJsonValue& p : points)
    out.emplace_back(p.toArray().at(0).toDouble(), p.toArray().at(1).toDouble());
  return out;
}

QJsonObject experimentExpected() {
  QFile f(QStringLiteral(CKPT_FIXTURE_DIR) + "/experiment_expected.json");
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

bool waitForCurves(CurvesView* curves) {
  if (!curves->isLoading()) return true;
  QSignalSpy ready(curves, &CurvesView::curvesReady);
  return ready.wait(kTimeoutMs);
}

}  // namespace

void TestGestures::referenceExperimentShowsEveryStage() {
  // The reference library's layout: checkpoints/<run>-<stage>/ without a
  // loss, one job log in logs/ holding every stage's lines.
  const QJsonObject want = experimentExpected();
  QVERIFY2(!want.isEmpty(), "no experiment fixtures: run ctest (make_experiment_fixtures)");
  MainWindow w;
  QVERIFY(open(w, {fixture("experiment")}));
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
  CurvesView* curves = w.curvesView();
  QVERIFY(waitForCurves(curves));
  const QJsonObject runs = want.value("runs").toObject();
  QCOMPARE(runs.size(), 3);
  for (auto it = runs.begin(); it != runs.end(); ++it) {
    const QString run = it.key();
    QVERIFY2(curves->rawGraph(run), qPrintable(run + " has no loss curve"));
    QVERIFY(drawnPoints(curves, run) ==
            expectedPoints(it.value().toObject().value("loss").toArray()));
  }
  // Markers: at the loss logged at their step, or hollow on the x axis.
  const QJsonArray sft = want.value("markers").toObject().value("checkpoints/tiny-sft").toArray();
  int valued = 0, bare = 0;
  for (const QJsonValue& m : sft) (m.toArray().at(1).isNull() ? bare : valued) += 1;
  QCOMPARE(curves->markerGraph("checkpoints/tiny-sft")->data()->size(), valued);
  QCOMPARE(curves->bareMarkerGraph("checkpoints/tiny-sft")->data()->size(), bare);
  QVERIFY(bare >= 1);
}

void TestGestures::addLogsBringsTheCurves() {
  const QJsonObject want = experimentExpected();
  QVERIFY(!want.isEmpty());
  // One stage's directory alone: its job log is elsewhere.
  const QString root = m_dir->path();
  for (const QString& f : QDir(fixture("experiment/checkpoints/tiny-sft")).entryList(QDir::Files))
    QVERIFY(copyTo(fixture("experiment/checkpoints/tiny-sft/") + f, root + "/tiny-sft/" + f));
  MainWindow w;
  QVERIFY(open(w, {root}));
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));
  CurvesView* curves = w.curvesView();
  QVERIFY(waitForCurves(curves));
  QVERIFY(!curves->rawGraph("tiny-sft"));  // checkpoints without a loss, no log: nothing to draw

  // File > Add Logs..., the job log typed into the dialog.
  answerFileDialog(fixture("experiment/logs/pipeline_48213.err"));
  QSignalSpy ready(curves, &CurvesView::curvesReady);
  clickMenu(w, "File", "Add Logs...");
  QVERIFY(ready.count() >= 1 || ready.wait(kTimeoutMs));
  QVERIFY(curves->rawGraph("tiny-sft"));
  QVERIFY(drawnPoints(curves, "tiny-sft") == expectedPoints(want.value("runs")
                                                                .toObject()
                                                                .value("checkpoints/tiny-sft")
                                                                .toObject()
                                                                .value("loss")
                                                                .toArray()));
  // Remembered: the same directory opened again reads the log again.
  MainWindow again;
  QVERIFY(open(again, {root}));
  QCOMPARE(again.extraLogs(),
           QStringList{QDir::cleanPath(fixture("experiment/logs/pipeline_48213.err"))});
}

void TestGestures::dangerousCheckpointIsNotTrainedFrom() {
  const QString root = m_dir->path();
  const QString evil = root + "/evil/evil_step10.pt";
  QVERIFY(copyTo(fixture("hostile/pwn_os_system.pt"), evil));
  const auto before = checksums(root);
  MainWindow w;
  QVERIFY(open(w, {root}));
  clickRow(w, QDir::cleanPath(evil));
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_R));
  TrainPanel* panel = w.trainPanel();
  QCOMPARE(panel->mode(), TrainPanel::Mode::Resume);
  QVERIFY2(panel->validationError().startsWith("checkpoint: refused"),
           qPrintable(panel->validationError()));
  QVERIFY(panel->validationError().contains("dangerous"));
  QVERIFY(!panel->startButton()->isEnabled());
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
  QCOMPARE(panel->mode(), TrainPanel::Mode::Finetune);
  QVERIFY(!panel->startButton()->isEnabled());
  QCOMPARE(checksums(root), before);
}

QTEST_MAIN(TestGestures)
#include "tst_gestures.moc"
