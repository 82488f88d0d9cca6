// The Train panel's Processes field end to end, offscreen, with the real
// LibTorch plugin starting ckptscope-train ranks (Gloo on loopback): each
// rank's device in the status area, the ranks' lines merged in the log, Stop
// reaching every rank, Resume and Fine-tune with two processes, and on disk
// what one process writes accumulating the same global batch (PyTorch's
// verdict, tests/python/compare_runs.py). Its own executable: QtTest's
// watchdog gives one executable 300 s, and tst_trainpanel needs them.
#include <QtTest>

#include <qcustomplot.h>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <fstream>

#include "../core/run_outputs.h"
#include "../core/run_process.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "training/livecurves.h"
#include "training/trainbackendloader.h"
#include "training/trainpanel.h"
#include "trainpanel_driver.h"

using namespace ckpt;
using ckpt::test::Finished;
using ckpt::test::kRunTimeoutMs;
using ckpt::test::metricsLines;
using ckpt::test::waitForRun;

class TestTrainPanelDist : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  QString m_data;

  QString dir(const QString& name) const { return m_tmp.filePath(name); }

  // The tiny config on `processes` CPU processes of one thread each (as
  // torchrun's ranks run): batch 4 is micro-batch 2 x accumulation 2 in one
  // process, micro-batch 2 on each of two. The count is typed into the
  // Processes field.
  void fillProcesses(TrainPanel& panel, const QString& out, int steps, int processes) const {
    ckpt::test::fillTiny(panel, m_data, out, steps);
    panel.threadsBox()->setValue(1);
    QSpinBox* field = panel.processesBox();
    QVERIFY(field->isVisible() && field->isEnabled());
    QTest::mouseClick(field, Qt::LeftButton);
    QTest::keyClick(field, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(field, QString::number(processes));
    QCOMPARE(field->value(), processes);
  }

  // PyTorch's verdict (tests/python/compare_runs.py) on two runs that should be one.
  static ckpt::test::ProcessResult compareRuns(const QString& a, const QString& b,
                                               const QString& ckpt, const QString& rtol,
                                               bool bitwise) {
    QStringList args{QStringLiteral(CKPT_SOURCE_DIR "/tests/python/compare_runs.py"), a, b, ckpt,
                     rtol};
    if (bitwise) args << QStringLiteral("--bitwise");
    return ckpt::test::runProcess(QStringLiteral(CKPT_TORCH_PYTHON), args);
  }

 private slots:
  void initTestCase() {
    ckpt::test::startTrainTest("tst_trainpanel_dist");
    if (qEnvironmentVariableIsEmpty("CKPTSCOPE_TRAIN_PROGRAM"))
      qputenv("CKPTSCOPE_TRAIN_PROGRAM", CKPT_TRAIN_PROGRAM);
    QVERIFY(m_tmp.isValid());
    m_data = dir("corpus.txt");
    ckpt::test::writeTinyCorpus(m_data);
  }

  // Two CPU processes from the Processes field: each rank's device in the
  // status area, both ranks' lines in the one log, the finish line, and on
  // disk the checkpoint one process writes accumulating two micro-batches.
  void twoProcessesEqualOneAccumulating() {
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    QSignalSpy loaded(&panel, &TrainPanel::backendLoaded);
    QVERIFY(panel.backendReady() || loaded.wait(60000));
    QVERIFY2(panel.processesBox()->toolTip().contains(
                 trainBackend().backend->devices().cudaAvailable ? "GPU" : "CPU processes"),
             qPrintable(panel.processesBox()->toolTip()));
    QString failure;
    Finished one, two;
    fillProcesses(panel, dir("dp/one"), 6, 1);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY2(waitForRun(panel, &one, &failure), qPrintable(failure));
    QCOMPARE(panel.findChild<QLabel*>("rankDevices")->text(), QStringLiteral("cpu"));

    fillProcesses(panel, dir("dp/two"), 6, 2);
    QVERIFY2(panel.validationError().isEmpty(), qPrintable(panel.validationError()));
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY(panel.isRunning());
    QVERIFY(!panel.processesBox()->isEnabled());
    QVERIFY2(waitForRun(panel, &two, &failure), qPrintable(failure + "\n" + panel.logText()));
    QVERIFY(!two.stopped);
    QCOMPARE(two.lastCheckpoint, dir("dp/two/tiny_final.pt"));
    // What a person sees.
    const QLabel* devices = panel.findChild<QLabel*>("rankDevices");
    QVERIFY(devices && devices->isVisible());
    QCOMPARE(devices->text(), QStringLiteral("rank 0: cpu · rank 1: cpu"));
    const QString log = panel.logText();
    QVERIFY2(
        log.contains(
            "[rank0]: rank 0 of 2 on cpu (gloo), micro-batch 2 x 1 accumulation of the batch of 4"),
        qPrintable(log));
    QVERIFY2(
        log.contains(
            "[rank1]: rank 1 of 2 on cpu (gloo), micro-batch 2 x 1 accumulation of the batch of 4"),
        qPrintable(log));
    QVERIFY2(log.contains("[rank0]: step=6 loss=") &&
                 log.contains("[rank0]: saved " + dir("dp/two/tiny_step4.pt")),
             qPrintable(log));
    QVERIFY2(log.contains("run tiny on 2 processes (gloo) from step 0 to 6"), qPrintable(log));
    QVERIFY2(panel.statusText().startsWith("Finished 6 steps") &&
                 panel.statusText().contains("Final checkpoint: " + two.lastCheckpoint),
             qPrintable(panel.statusText()));
    QCOMPARE(panel.jobInfo().worldSize, 2);
    // The curves are rank 0's steps, as metrics.jsonl has them.
    const auto lines = metricsLines(dir("dp/two").toStdString());
    QCOMPARE(lines.size(), size_t(6));
    QCPGraph* loss = panel.curves()->lossGraph();
    QCOMPARE(loss->dataCount(), 6);
    for (int i = 0; i < 6; ++i)
      QCOMPARE(loss->data()->at(i)->value, lines[size_t(i)]["loss"].get<double>());
    // What is on disk: PyTorch compares every weight, AdamW moment and loss.
    const auto c = compareRuns(dir("dp/one"), dir("dp/two"), "tiny_final.pt", "1e-6", false);
    QVERIFY2(c.exitCode == 0, (c.err + c.out).constData());
    const auto bits = compareRuns(dir("dp/one"), dir("dp/two"), "tiny_final.pt", "0", true);
    qInfo("1 process x accumulation 2 vs 2 processes: %s; bit for bit: %s",
          c.out.trimmed().constData(), bits.exitCode == 0 ? "yes" : "no");
    QVERIFY(panel.grab().save(QStringLiteral(CKPT_BINARY_DIR "/trainpanel-two-processes.png")));
  }

  // Stop reaches every rank: each finishes its step, rank 0 saves, all exit
  // 0; Resume and Fine-tune go on with two processes.
  void stopTwoProcessesThenResumeAndFinetune() {
    const int steps = 60;
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    QSignalSpy loaded(&panel, &TrainPanel::backendLoaded);
    QVERIFY(panel.backendReady() || loaded.wait(60000));
    QString failure;
    Finished straight;
    fillProcesses(panel, dir("dp/straight"), steps, 1);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY2(waitForRun(panel, &straight, &failure), qPrintable(failure));

    fillProcesses(panel, dir("dp/stopped"), steps, 2);
    QSignalSpy done(&panel, &TrainPanel::runFinished);
    QSignalSpy failed(&panel, &TrainPanel::runFailed);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY(panel.isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(panel.progressBar()->value() >= 3, kRunTimeoutMs);
    QTest::mouseClick(panel.stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!done.isEmpty() || !failed.isEmpty(), kRunTimeoutMs);
    QVERIFY2(failed.isEmpty(), qPrintable(panel.statusText() + "\n" + panel.logText()));
    QVERIFY2(done.front().at(2).toBool(), "the run finished before Stop reached it");
    const QString stopCkpt = done.front().at(1).toString();
    const int stoppedAt = QFileInfo(stopCkpt).completeBaseName().section("step", 1).toInt();
    QVERIFY2(stoppedAt >= 3 && stoppedAt < steps, qPrintable(stopCkpt));
    QVERIFY(QFileInfo::exists(stopCkpt));
    QVERIFY(!QFileInfo::exists(dir("dp/stopped/tiny_final.pt")));
    QVERIFY2(panel.statusText().startsWith("Stopped at step " + QString::number(stoppedAt)),
             qPrintable(panel.statusText()));
    // Both ranks left their loop at the same step (the stop vote), and no
    // temp file is left beside the checkpoints.
    QCOMPARE(metricsLines(dir("dp/stopped").toStdString()).size(), size_t(stoppedAt));
    QVERIFY(QDir(dir("dp/stopped")).entryList({"*.tmp*"}, QDir::Files | QDir::Hidden).isEmpty());

    // Resume with the same two processes (the field keeps its value).
    QCOMPARE(panel.processesBox()->value(), 2);
    QVERIFY(panel.startResume(stopCkpt));
    Finished resumed;
    QVERIFY2(waitForRun(panel, &resumed, &failure), qPrintable(failure + "\n" + panel.logText()));
    QCOMPARE(resumed.lastCheckpoint, dir("dp/stopped/tiny_final.pt"));
    QCOMPARE(panel.jobInfo().startStep, int64_t(stoppedAt));
    QCOMPARE(panel.findChild<QLabel*>("rankDevices")->text(),
             QStringLiteral("rank 0: cpu · rank 1: cpu"));
    QVERIFY2(
        panel.statusText().startsWith(QStringLiteral("Finished at step %1: %2 steps from step %3")
                                          .arg(steps)
                                          .arg(steps - stoppedAt)
                                          .arg(stoppedAt)),
        qPrintable(panel.statusText()));
    const auto c =
        compareRuns(dir("dp/straight"), dir("dp/stopped"), "tiny_final.pt", "1e-6", false);
    QVERIFY2(c.exitCode == 0, (c.err + c.out).constData());
    qInfo("stopped at step %d of %d on 2 processes, resumed on 2: %s", stoppedAt, steps,
          c.out.trimmed().constData());

    // Fine-tune with two processes: the stage next to the parent's directory.
    panel.finetuneDataEdit()->setText(m_data);
    panel.finetuneMaxStepsBox()->setValue(2);
    QVERIFY2(panel.startFinetune(resumed.lastCheckpoint),
             qPrintable(panel.statusText() + panel.validationError()));
    Finished ft;
    QVERIFY2(waitForRun(panel, &ft, &failure), qPrintable(failure + "\n" + panel.logText()));
    QCOMPARE(ft.lastCheckpoint, dir("dp/tiny-sft/tiny-sft_final.pt"));
    QCOMPARE(panel.jobInfo().worldSize, 2);
    QVERIFY2(panel.logText().contains("[rank1]: rank 1 of 2 on cpu (gloo)"),
             qPrintable(panel.logText()));
    const auto f = CheckpointFile::open(ft.lastCheckpoint.toStdString());
    QCOMPARE(CheckpointView(*f).stage(), std::optional<std::string>("sft"));
  }

  // A failure in the ranks is the panel's failure, naming each rank and why.
  void failingRanksAreNamed() {
    TrainPanel panel;
    panel.resize(1280, 860);
    panel.show();
    QSignalSpy loaded(&panel, &TrainPanel::backendLoaded);
    QVERIFY(panel.backendReady() || loaded.wait(60000));
    const QString shortFile = dir("short.txt");
    std::ofstream(shortFile.toStdString()) << "tiny";
    fillProcesses(panel, dir("dp/short"), 3, 2);
    panel.dataPathEdit()->setText(shortFile);
    QVERIFY2(panel.validationError().isEmpty(), qPrintable(panel.validationError()));
    QSignalSpy failed(&panel, &TrainPanel::runFailed);
    QTest::mouseClick(panel.startButton(), Qt::LeftButton);
    QVERIFY(failed.wait(kRunTimeoutMs));
    const QString error = failed.front().front().toString();
    // Each rank's own message, then the launcher's account.
    QVERIFY2(error.contains(QRegularExpression("rank 0: [^\\n]*fewer than one window")),
             qPrintable(error));
    QVERIFY2(error.contains("\nrank 1: "), qPrintable(error));
    QVERIFY2(error.contains("exited with code 1 first"), qPrintable(error));
    QVERIFY2(panel.statusText().startsWith("Training failed: "), qPrintable(panel.statusText()));
    QVERIFY(!panel.isRunning());
    QVERIFY(panel.processesBox()->isEnabled());
  }
};

QTEST_MAIN(TestTrainPanelDist)
#include "tst_trainpanel_dist.moc"
