// A Hugging Face Trainer output folder in the browser, as a person uses it:
// one run whose rows are the checkpoint-<step> folders (best marked), a
// click opens the folder's weights in Inspect; runs in natural order; a run
// with metrics and no checkpoint listed; the watcher adds a new checkpoint
// folder and a new metrics-only run. Files from make_hf_trainer.py.
#include <qcustomplot.h>
#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <algorithm>
#include <cmath>

#include "../core/copy_tree.h"
#include "browser/browserpanel.h"
#include "compare/compareview.h"
#include "compare/diffmodel.h"
#include "curves/curvesview.h"
#include "curves/runstable.h"

#include "browser/checkpointlistmodel.h"
#include "inspector/inspectorwidget.h"
#include "inspector/optimizermodel.h"
#include "inspector/tensortablemodel.h"
#include "mainwindow.h"
#include "window_driver.h"

using namespace ckpt;
using Role = CheckpointListModel::Role;
using ckpt::test::copyTree;

namespace {

constexpr int kTimeoutMs = 30'000;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR "/hf_trainer");

bool openAndWait(MainWindow& w, const QStringList& paths) {
  return ckpt::test::openAndWait(w, paths, kTimeoutMs);
}

using ckpt::test::topNames;

}  // namespace

class TestHfBrowser : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(QFileInfo::exists(kFixtures + "/hf/out/checkpoint-500/trainer_state.json"),
             "no fixtures: run ctest (make_hf_trainer)");
    QCoreApplication::setOrganizationName("CkptScopeTest");
    QCoreApplication::setApplicationName("tst_hf_browser");
  }

  void oneRunClickOpensWeights() {
    QTemporaryDir dir;
    QVERIFY(copyTree(kFixtures + "/hf/out", dir.path() + "/out"));
    QVERIFY(copyTree(kFixtures + "/sweep", dir.path() + "/sweep"));
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QAbstractItemModelTester tester(w.checkpointModel(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(openAndWait(w, {dir.path()}));
    QSortFilterProxyModel* proxy = w.browserPanel()->proxy();

    // What the tree shows at the top: one Trainer run, the sweep in natural
    // order, seed3 (metrics only) among them.
    QCOMPARE(topNames(proxy),
             (QStringList{"out", "sweep/seed1", "sweep/seed2", "sweep/seed3", "sweep/seed10"}));
    const QModelIndex seed3 = proxy->index(3, 0);
    QCOMPARE(proxy->rowCount(seed3), 0);

    const QModelIndex run = proxy->index(0, 0);
    QCOMPARE(proxy->rowCount(run), 4);
    const QStringList names{"checkpoint-500", "checkpoint-1000",
                            "checkpoint-1500  [sharded: Hugging Face, 3 files]",
                            "model.safetensors"};
    const QStringList kinds{"step", "step, best", "step", "final"};
    for (int r = 0; r < 4; ++r) {
      QCOMPARE(proxy->index(r, 0, run).data().toString(), names[r]);
      QCOMPARE(proxy->index(r, int(CheckpointListModel::Column::Kind), run).data().toString(),
               kinds[r]);
    }
    QVERIFY(proxy->index(0, 0, run).data(Qt::ToolTipRole).toString().contains("optimizer.pt"));

    // A click on checkpoint-1000 (where the view draws it) opens its weights.
    QTreeView* view = w.checkpointView();
    view->expandAll();
    const QModelIndex shown = proxy->index(1, 0, run);
    view->scrollTo(shown);
    QSignalSpy summary(&w, &MainWindow::summaryShown);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(shown).center());
    QCOMPARE(view->currentIndex(), shown);
    QTRY_VERIFY(summary.count() >= 1);
    QTRY_VERIFY2(w.inspector()->text().contains("pytorch_model.bin"),
                 qPrintable(w.inspector()->text()));
    QTRY_COMPARE(w.inspector()->tensorModel()->rowCount(), 5);  // make_hf_trainer.py's model_state

    // Its optimizer.pt beside the weights: the Summary's Optimizer line and
    // the Optimizer tab show its state as torch.load reads it back.
    QFile optFile(kFixtures + "/hf/expected_optimizers.json");
    QVERIFY(optFile.open(QIODevice::ReadOnly));
    const QJsonObject wantOpt = QJsonDocument::fromJson(optFile.readAll())
                                    .object()["checkpoint-1000/optimizer.pt"]
                                    .toObject();
    const int withState = wantOpt["with_state"].toInt();
    QVERIFY(withState > 0);
    const QString optLine = QStringLiteral("%1 parameters with state").arg(withState);
    QTRY_VERIFY2(w.inspector()->text().contains(optLine), qPrintable(w.inspector()->text()));
    // pytorch_model.bin keeps the model's order: every parameter named by
    // the Trainer's two param groups, as torch numbered them.
    const QJsonArray optNames = wantOpt["names"].toArray();
    QCOMPARE(optNames.size(), withState);
    QVERIFY2(
        w.inspector()->text().contains(
            QStringLiteral("; %1 of %1 mapped to parameters (from optimizer.pt)").arg(withState)),
        qPrintable(w.inspector()->text()));
    QTabWidget* tabs = w.inspector()->findChild<QTabWidget*>();
    QVERIFY(tabs);
    for (int i = 0; i < tabs->count(); ++i)
      if (tabs->tabText(i).remove('&') == "Optimizer")
        QTest::mouseClick(tabs->tabBar(), Qt::LeftButton, {}, tabs->tabBar()->tabRect(i).center());
    QCOMPARE(tabs->tabText(tabs->currentIndex()).remove('&'), QStringLiteral("Optimizer"));
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->optimizerStatsDone(), kTimeoutMs);
    const OptimizerModel* opt = w.inspector()->optimizerModel();
    QCOMPARE(opt->rowCount(), withState);
    const QJsonArray norms = wantOpt["exp_avg_norms"].toArray();
    QCOMPARE(int(opt->stats().size()), int(norms.size()));
    for (int r = 0; r < opt->rowCount(); ++r) {
      QCOMPARE(opt->rows()[size_t(r)].index, qint64(r));
      QCOMPARE(opt->index(r, int(OptimizerModel::Column::Name)).data().toString(),
               optNames[r].toString());
      const auto& m = opt->stats()[size_t(r)].expAvg;
      QVERIFY2(m.has_value(), qPrintable(QString::number(r)));
      const double want = norms[r].toDouble();
      QVERIFY2(
          std::abs(m->l2norm - want) <= 1e-5 * std::max(1.0, std::abs(want)),
          qPrintable(
              QStringLiteral("exp_avg norm of %1: %2, torch %3").arg(r).arg(m->l2norm).arg(want)));
    }

    // The watcher: a new checkpoint folder joins the run, a new run that
    // only logs appears.
    QVERIFY(copyTree(dir.path() + "/out/checkpoint-500", dir.path() + "/out/checkpoint-2000"));
    QTRY_COMPARE_WITH_TIMEOUT(proxy->rowCount(proxy->index(0, 0)), 5, kTimeoutMs);
    QCOMPARE(proxy->index(4, int(CheckpointListModel::Column::Step), proxy->index(0, 0))
                 .data()
                 .toString(),
             QStringLiteral("2000"));
    QVERIFY(QDir().mkpath(dir.path() + "/sweep/seed4"));
    QFile jsonl(dir.path() + "/sweep/seed4/metrics.jsonl");
    QVERIFY(jsonl.open(QIODevice::WriteOnly));
    jsonl.write("{\"step\": 1, \"loss\": 2.0}\n");
    jsonl.close();
    QTRY_VERIFY_WITH_TIMEOUT(topNames(proxy).contains("sweep/seed4"), kTimeoutMs);
    // Where the scan would list it: natural order.
    QCOMPARE(topNames(proxy), (QStringList{"out", "sweep/seed1", "sweep/seed2", "sweep/seed3",
                                           "sweep/seed4", "sweep/seed10"}));
  }

  // The Curves tab draws the Trainer run's log_history: val_loss (eval_loss)
  // at the steps and values the Python reader found; the metrics-only run
  // has its curve too.
  // Two checkpoint folders selected with clicks (checkpoint-1000's
  // pytorch_model.bin, checkpoint-1500's shard index) and Ctrl+D: Compare
  // shows each tensor's change as torch computes it.
  void compareTwoFolders() {
    QTemporaryDir dir;
    QVERIFY(copyTree(kFixtures + "/hf/out", dir.path() + "/out"));
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openAndWait(w, {dir.path() + "/out"}));
    QSortFilterProxyModel* proxy = w.browserPanel()->proxy();
    QTreeView* view = w.checkpointView();
    view->expandAll();
    const QModelIndex run = proxy->index(0, 0);
    const QModelIndex a = proxy->index(1, 0, run), b = proxy->index(2, 0, run);
    QCOMPARE(a.data().toString(), QStringLiteral("checkpoint-1000"));
    QVERIFY(b.data().toString().startsWith("checkpoint-1500"));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(a).center());
    QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::ControlModifier,
                      view->visualRect(b).center());
    QCOMPARE(w.selectedCheckpoints().size(), 2);
    QSignalSpy done(w.compareView(), &CompareView::finished);
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
    QVERIFY(done.wait(kTimeoutMs));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.compareView()));

    QFile wantFile(kFixtures + "/hf/expected_diffs.json");
    QVERIFY(wantFile.open(QIODevice::ReadOnly));
    const QJsonObject want = QJsonDocument::fromJson(wantFile.readAll())
                                 .object()["checkpoint-1000 checkpoint-1500"]
                                 .toObject();
    const DiffModel* m = w.compareView()->model();
    QCOMPARE(m->rowCount(), int(want.size()));
    for (int r = 0; r < m->rowCount(); ++r) {
      const QString name = m->index(r, int(DiffModel::Column::Name)).data().toString();
      QVERIFY2(want.contains(name), qPrintable(name));
      const QJsonObject t = want[name].toObject();
      for (const auto& [column, key] : {std::pair{DiffModel::Column::RelL2, "rel_l2"},
                                        std::pair{DiffModel::Column::Cosine, "cosine"}}) {
        const double got = m->index(r, int(column)).data(int(DiffModel::Role::Value)).toDouble();
        const double torch = t[key].toDouble();
        QVERIFY2(
            std::abs(got - torch) <= 1e-9 * std::max(1.0, std::abs(torch)),
            qPrintable(QStringLiteral("%1 %2: %3, torch %4").arg(name, key).arg(got).arg(torch)));
      }
    }
  }

  void curvesTab() {
    QFile expectedFile(kFixtures + "/hf/expected_metrics.json");
    QVERIFY(expectedFile.open(QIODevice::ReadOnly));
    const QJsonArray want =
        QJsonDocument::fromJson(expectedFile.readAll())["series"]["val_loss"].toArray();
    QCOMPARE(want.size(), 6);
    MainWindow w;
    w.resize(1280, 800);
    w.setView(MainWindow::View::Curves);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy ready(w.curvesView(), &CurvesView::curvesReady);
    w.openPaths({kFixtures});
    QVERIFY(ready.wait(kTimeoutMs));
    QStringList names;
    for (const CurveRun& r : w.curvesView()->runs()) names << r.name;
    QCOMPARE(names, (QStringList{"hf/out", "hf_peft/out", "sweep/seed1", "sweep/seed2",
                                 "sweep/seed3", "sweep/seed10"}));
    CurvesView* view = w.curvesView();
    QVERIFY2(view->metrics().contains("val_loss"), qPrintable(view->metrics().join(',')));
    view->setMetric("val_loss");
    view->setSmoothing(0);
    const QCPGraph* graph = view->rawGraph("hf/out");
    QVERIFY(graph);
    QCOMPARE(graph->data()->size(), int(want.size()));
    for (int i = 0; i < want.size(); ++i) {
      QCOMPARE(graph->data()->at(i)->key, want[i].toArray()[0].toDouble());
      QCOMPARE(graph->data()->at(i)->value, want[i].toArray()[1].toDouble());
    }
    view->setMetric("loss");
    QVERIFY(view->rawGraph("sweep/seed3"));
    QCOMPARE(view->rawGraph("sweep/seed3")->data()->size(), 3);

    // The runs table shows the Trainer run's hyperparameters (training_args.bin
    // and config.json, as make_hf_trainer.py wrote them); the others' cells
    // empty but the peft run's training arguments.
    QFile hparamsFile(kFixtures + "/hf/expected_hparams.json");
    QVERIFY(hparamsFile.open(QIODevice::ReadOnly));
    const QJsonObject hparams = QJsonDocument::fromJson(hparamsFile.readAll()).object();
    RunsTableModel* table = view->runsTable()->model();
    int hfRow = -1;
    for (int r = 0; r < table->rowCount(); ++r)
      if (table->index(r, 0).data().toString() == "hf/out") hfRow = r;
    QVERIFY(hfRow >= 0);
    for (const QString& key : {QStringLiteral("learning_rate"), QStringLiteral("eval_strategy"),
                               QStringLiteral("hidden_size")}) {
      const int column = table->columnOf(key);
      QVERIFY2(column >= 0, qPrintable(key + " is no column"));
      const QString shown = table->index(hfRow, column).data().toString();
      const QJsonValue v = hparams.value(key);
      if (v.isString())
        QCOMPARE(shown, v.toString());
      else
        QCOMPARE(shown.toDouble(), v.toDouble());
      // The peft run pickled the same TrainingArguments and has no config.json.
      for (int r = 0; r < table->rowCount(); ++r) {
        if (r == hfRow) continue;
        const bool sameArgs = table->index(r, 0).data().toString() == "hf_peft/out" &&
                              key != QStringLiteral("hidden_size");
        QCOMPARE(table->index(r, column).data().toString(), sameArgs ? shown : QString());
      }
    }
  }
};

QTEST_MAIN(TestHfBrowser)
#include "tst_hf_browser.moc"
