// The metric the Curves tab opens on, as a person meets it: opened on a run
// another trainer wrote, the chart shows its training loss under the name
// that trainer gives it, not the alphabetical first name ("epoch"). The
// runs: Lightning's metrics.csv (tests/python/make_trainer_layouts.py: its
// columns train_loss, epoch, step, val_loss, val_acc) and metrics.jsonl
// files written here by hand with the names TensorBoard / W&B users log.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "curves/curvesview.h"
#include "mainwindow.h"

using namespace ckpt;

namespace {

constexpr int kLoadTimeoutMs = 60'000;
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

// A run folder `name` under `root` whose metrics.jsonl holds `line` at steps 1..3.
bool writeRun(const QDir& root, const QString& name, const QByteArray& line) {
  if (!root.mkpath(name)) return false;
  QFile f(root.filePath(name + "/metrics.jsonl"));
  if (!f.open(QIODevice::WriteOnly)) return false;
  for (int step = 1; step <= 3; ++step)
    f.write("{\"step\": " + QByteArray::number(step) + ", " + line + "}\n");
  return true;
}

}  // namespace

class TestCurvesDefault : public QObject {
  Q_OBJECT

 private slots:
  void opensOnTheTrainingLoss_data() {
    QTest::addColumn<QString>("folder");  // a fixture folder, or "" for `line`
    QTest::addColumn<QByteArray>("line");
    QTest::addColumn<QString>("expected");
    QTest::newRow("Lightning metrics.csv")
        << kFixtures + "/trainer_layouts/lt/lightning_logs" << QByteArray() << "train_loss";
    QTest::newRow("train/loss beside val/loss")
        << QString() << QByteArray(R"("epoch": 0, "lr": 0.1, "val/loss": 2.0, "train/loss": 2.5)")
        << "train/loss";
    QTest::newRow("Loss/train") << QString()
                                << QByteArray(R"("epoch": 0, "Loss/val": 2.0, "Loss/train": 2.5)")
                                << "Loss/train";
    QTest::newRow("only a validation loss")
        << QString() << QByteArray(R"("epoch": 0, "eval_loss": 2.0, "eval_accuracy": 0.5)")
        << "eval_loss";
    QTest::newRow("no loss at all: the first name")
        << QString() << QByteArray(R"("epoch": 0, "accuracy": 0.5)") << "accuracy";
  }
  void opensOnTheTrainingLoss() {
    QFETCH(QString, folder);
    QFETCH(QByteArray, line);
    QFETCH(QString, expected);
    QTemporaryDir tmp;
    if (folder.isEmpty()) {
      QVERIFY(writeRun(QDir(tmp.path()), "run_a", line));
      folder = tmp.path();
    }
    QVERIFY2(QDir(folder).exists(), qPrintable(folder + ": no fixtures: run ctest"));

    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.activateWindow();
    QSignalSpy loaded(&w, &MainWindow::loaded);
    w.openPaths({folder});
    QVERIFY(loaded.wait(kLoadTimeoutMs));
    CurvesView* view = w.curvesView();
    QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));  // the Curves tab
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
    auto* box = view->findChild<QComboBox*>("metric");
    QVERIFY(box);
    QTRY_VERIFY_WITH_TIMEOUT(!view->isLoading() && box->count() > 0, kLoadTimeoutMs);
    // What the person sees in the box, and the chart's metric.
    QCOMPARE(box->currentText(), expected);
    QCOMPARE(view->metric(), expected);
  }
};

QTEST_MAIN(TestCurvesDefault)
#include "tst_curves_default.moc"
