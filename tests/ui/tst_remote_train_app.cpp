// The Train tab on a checkpoint on another machine (docs/REMOTE.md,
// "Training on the host"), driven as a person does: a real OpenSSH server
// on loopback (tests/core/ssh_server.h) serves a folder with a tiny run.
// - A click on its older checkpoint, Ctrl+R, a max_steps typed, a click on
//   "Start on 127.0.0.1": the resume starts on "the host" in a session of
//   its own, its new run appears in the browser, its metrics.jsonl lines on
//   the Curves tab and on the Train tab's chart; closing the window leaves
//   it training, and what it saves when stopped there is a checkpoint
//   python3-torch loads with its step and run name.
// - Where the host has sbatch (a fake one first on the agent's PATH, as in
//   tests/train/tst_remote_train), "as a SLURM job" shows the batch script
//   in an editable box; the script the person edited is what sbatch gets.
// - A fine-tune into an output folder that exists is refused with the
//   host's words on the Train tab; the folder is left as it was.
// - "Stop on 127.0.0.1" on the Train tab (after a confirmation) stops the
//   run there: the step finishes, a checkpoint python3-torch loads is
//   written, and the tab says at which step and where.
#include <signal.h>
#include <unistd.h>

#include <qcustomplot.h>
#include <QAbstractButton>
#include <QApplication>
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QtTest>
#include <fstream>

#include "../core/run_process.h"
#include "../core/ssh_server.h"
#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "mainwindow.h"
#include "training/livecurves.h"
#include "training/remotelaunch.h"
#include "training/runview.h"
#include "training/trainpanel.h"
#include "window_driver.h"

using ckpt::MainWindow;
using ckpt::test::ProcessResult;

namespace {

const QString kCli = QStringLiteral(CKPT_CLI);

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeFile(const QString& path, const QByteArray& bytes, bool executable = false) {
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
  f.write(bytes);
  f.close();
  if (executable) f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
}

bool running(qint64 pid) {
  const QByteArray stat = readAll(QString("/proc/%1/stat").arg(pid));
  const int close = stat.lastIndexOf(')');
  return close > 0 && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

// Field `n` (1-based, as proc(5) counts) of /proc/PID/stat.
qint64 statField(qint64 pid, int n) {
  const QByteArray stat = readAll(QString("/proc/%1/stat").arg(pid));
  const QList<QByteArray> fields = stat.mid(stat.lastIndexOf(')') + 2).split(' ');
  return fields.size() > n - 3 ? fields[n - 3].toLongLong() : -1;
}

// The largest step the Curves tab holds for `metric` of the run at `runPath` (-1: none).
int64_t lastStep(ckpt::CurvesView* view, const QString& runPath, const std::string& metric) {
  for (const ckpt::CurveRun& r : view->runs()) {
    if (r.path != runPath) continue;
    const ckpt::MetricSeries* s = r.find(metric);
    if (!s || s->points.size() == 0) return -1;
    return s->points[s->points.size() - 1].step;
  }
  return -1;
}

// The largest step metrics.jsonl holds (what the trainer wrote on the host).
int64_t lastLoggedStep(const QString& file) {
  int64_t last = -1;
  for (const QByteArray& line : readAll(file).split('\n')) {
    const auto m = QRegularExpression("\"step\":\\s*(\\d+)").match(QString::fromUtf8(line));
    if (m.hasMatch()) last = std::max<int64_t>(last, m.captured(1).toLongLong());
  }
  return last;
}

// What python3-torch reads of a checkpoint's metadata: "STEP RUN_NAME".
QByteArray torchMeta(const QString& file) {
  const ProcessResult r = ckpt::test::runProcess(
      QStringLiteral(CKPT_TORCH_PYTHON),
      {"-c",
       "import sys, torch; m = torch.load(sys.argv[1], weights_only=False)['metadata']; "
       "print(m['step'], m['run_name'])",
       file});
  return r.exitCode == 0 ? r.out.trimmed() : "python failed: " + r.err;
}

// The last x the Train tab's loss chart holds (-1: none).
double chartLastStep(ckpt::TrainPanel* panel) {
  QCPGraph* g = panel->runView()->curves()->lossGraph();
  return g->dataCount() ? g->data()->at(g->dataCount() - 1)->key : -1;
}

// Clicks a checkpoint's row where it is drawn.
void clickCheckpoint(MainWindow& w, const QString& path) {
  QTreeView* view = w.checkpointView();
  const QModelIndex row =
      w.browserPanel()->proxy()->mapFromSource(w.checkpointModel()->indexOfPath(path));
  QVERIFY(row.isValid());
  view->scrollTo(row);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(row).center());
  QCOMPARE(w.checkpointView()->currentIndex(), row);
}

// A field typed into as a person does: focus, select all, type (nothing: cleared).
void typeInto(QLineEdit* edit, const QString& text) {
  edit->setFocus();
  edit->selectAll();
  QTest::keyClick(edit, Qt::Key_Backspace);
  if (!text.isEmpty()) QTest::keyClicks(edit, text);
  QCOMPARE(edit->text(), text);
}

// A number typed into a spin box as a person does.
void typeInto(QSpinBox* box, int value) {
  box->setFocus();
  box->selectAll();
  QTest::keyClicks(box, QString::number(value));
  QCOMPARE(box->value(), value);
}

}  // namespace

class TestRemoteTrainApp : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_exp;

  QString remote(const QString& path) const {
    return QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(path);
  }
  // The agent on "the host": agent.sh with PATH=/usr/bin:/bin (no
  // sbatch), agent-slurm.sh with the fake sbatch first on it.
  // With CKPT_SHOT_DIR set (a person looking at the Train tab under Xvfb):
  // the screen as `import -window root` takes it, into DIR/NAME-WxH.png;
  // with `hover`, the pointer rests on it (its tooltip shows).
  void shoot(MainWindow& w, const QString& name, QWidget* hover = nullptr) {
    const QString dir = qEnvironmentVariable("CKPT_SHOT_DIR");
    if (dir.isEmpty()) return;
    if (hover) QTest::mouseMove(hover);
    QTest::qWait(hover ? 1500 : 800);
    ckpt::test::runProcess(
        "import", {"-window", "root",
                   QString("%1/%2-%3x%4.png").arg(dir, name).arg(w.width()).arg(w.height())});
  }
  void useAgent(const QString& script) {
    qputenv("CKPTSCOPE_REMOTE_CLI", (m_server.home() + "/" + script).toUtf8());
  }
  // The window shown at 1280x800 (CKPT_SHOT_SIZE=WxH: that size) on the
  // experiment over ssh.
  bool openWindow(MainWindow& w) {
    const QList<QByteArray> size = qgetenv("CKPT_SHOT_SIZE").split('x');
    if (size.size() == 2)
      w.resize(size[0].toInt(), size[1].toInt());
    else
      w.resize(1280, 800);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) return false;
    w.activateWindow();
    return ckpt::test::openAndWait(w, {remote(m_exp)}, 60000);
  }

  // The folder opened, `checkpoint` clicked where it is drawn and the Train
  // tab opened for it by its shortcut (Ctrl+Shift+F: fine-tune; Ctrl+R:
  // resume); nullptr when any of that did not happen.
  ckpt::TrainPanel* openTrainTab(MainWindow& w, const QString& checkpoint, bool finetune) {
    if (!openWindow(w) ||
        !QTest::qWaitFor([&] { return w.checkpointModel()->indexOfPath(checkpoint).isValid(); },
                         20000))
      return nullptr;
    clickCheckpoint(w, checkpoint);
    if (QTest::currentTestFailed()) return nullptr;
    if (finetune)
      QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
    else
      QTest::keyClick(&w, Qt::Key_R, Qt::ControlModifier);
    ckpt::TrainPanel* panel = w.trainPanel();
    return QTest::qWaitFor([&] { return panel->isVisible(); }) ? panel : nullptr;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    QDir().mkpath(m_tmp.path() + "/fakebin");
    writeFile(
        m_server.home() + "/agent.sh",
        QString("#!/bin/sh\nexport PATH=/usr/bin:/bin\nexec '%1' \"$@\"\n").arg(kCli).toUtf8(),
        true);
    writeFile(m_server.home() + "/agent-slurm.sh",
              QString("#!/bin/sh\nexport PATH='%1/fakebin':/usr/bin:/bin\nexec '%2' \"$@\"\n")
                  .arg(m_tmp.path(), kCli)
                  .toUtf8(),
              true);
    // A fake sbatch: records its arguments one per line, copies the script
    // (its first argument that is not an option), answers as SLURM does.
    writeFile(
        m_tmp.path() + "/fakebin/sbatch",
        QString("#!/bin/sh\nd='%1'\n"
                "for a in \"$@\"; do printf '%s\\n' \"$a\" >> \"$d/sbatch.argv\"; done\n"
                "for a in \"$@\"; do case \"$a\" in --*) ;; *) cp \"$a\" \"$d/sbatch.script\"; "
                "break;; esac; done\n"
                "echo 'Submitted batch job 4242'\n")
            .arg(m_tmp.path())
            .toUtf8(),
        true);

    m_exp = m_tmp.path() + "/exp 'one'; two";
    QVERIFY(QDir().mkpath(m_exp));
    std::ofstream corpus((m_exp + "/corpus.txt").toStdString());
    for (int i = 0; i < 60; ++i)
      corpus << "Sing, O goddess, the anger of Achilles son of Peleus, line " << i << ".\n";
    corpus.close();
    std::ofstream((m_exp + "/run.json").toStdString()) << R"({
      "model": {"vocab_size": 256, "d_model": 32, "n_layers": 1, "n_heads": 4, "ffn_hidden_size": 80, "max_seq_len": 32},
      "training": {"run_name": "tiny", "batch_size": 2, "micro_batch_size": 2, "seq_len": 32, "learning_rate": 0.003,
                   "max_steps": 4, "eval_every": 2, "save_every": 2, "log_every": 1, "mixed_precision": "fp32"},
      "data": {"path": "corpus.txt"}})";
    const ProcessResult r = ckpt::test::runProcess(
        kCli, {"train", "--config", "run.json", "--out", "runs/tiny", "--device", "cpu"}, m_exp);
    QVERIFY2(r.exitCode == 0, r.err.constData());
  }

  void cleanupTestCase() { m_server.stop(); }

  void resumeStartsOnTheHostAndIsFollowed() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    useAgent("agent.sh");
    const QString older = m_exp + "/runs/tiny/tiny_step2.pt";
    const QString branch = m_exp + "/runs/tiny@2";
    const QByteArray parentMetrics = readAll(m_exp + "/runs/tiny/metrics.jsonl");
    qint64 pid = 0;
    int64_t shown = -1;
    // A check that fails leaves no trainer writing on "the host".
    const auto stopTrainer = qScopeGuard([&pid] {
      if (pid > 0 && running(pid)) ::kill(pid_t(pid), SIGKILL);
    });
    {
      MainWindow w;
      // The older checkpoint clicked where it is drawn, then Ctrl+R.
      ckpt::TrainPanel* panel = openTrainTab(w, older, /*finetune=*/false);
      QVERIFY(panel);
      QCOMPARE(panel->resumeCheckpointEdit()->text(), remote(older));
      QVERIFY2(
          panel->resumePlanText().startsWith("On 127.0.0.1: Start runs the resume there, detached"),
          qPrintable(panel->resumePlanText()));
      // This host has no sbatch: no SLURM box.
      QVERIFY(!panel->sbatchBox()->isVisible());
      // max_steps typed: enough steps that it still trains when the window closes.
      typeInto(panel->resumeMaxStepsBox(), 5000);
      QPushButton* start = panel->startButton();
      QTRY_VERIFY(start->isEnabled());
      QCOMPARE(start->text(), QString("Start on 127.0.0.1"));
      QTest::mouseClick(start, Qt::LeftButton);

      QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().contains("Started on 127.0.0.1 (pid"), 90000);
      const auto m = QRegularExpression("\\(pid (\\d+)\\)").match(panel->statusText());
      QVERIFY(m.hasMatch());
      pid = m.captured(1).toLongLong();
      QVERIFY2(panel->statusText().contains("run tiny@2 in " + branch),
               qPrintable(panel->statusText()));
      // A process of the host, in a session of its own (not this test's).
      QVERIFY(running(pid));
      QVERIFY(statField(pid, 6) > 0);
      QVERIFY(statField(pid, 6) != statField(::getpid(), 6));

      // The new run in the browser, its lines on the Curves tab and on the
      // Train tab's chart as they are written.
      QTRY_VERIFY_WITH_TIMEOUT(lastStep(w.curvesView(), branch, "loss") >= 20, 60000);
      QTRY_VERIFY_WITH_TIMEOUT(
          w.checkpointModel()->indexOfPath(branch + "/tiny@2_step4.pt").isValid(), 30000);
      shown = lastStep(w.curvesView(), branch, "loss");
      QVERIFY(shown <= lastLoggedStep(branch + "/metrics.jsonl"));
      QTRY_VERIFY_WITH_TIMEOUT(chartLastStep(panel) >= double(shown), 10000);
      QVERIFY2(panel->runView()->title().startsWith("tiny@2 on 127.0.0.1 (pid "),
               qPrintable(panel->runView()->title()));
      // More keeps arriving while it trains.
      QTRY_VERIFY_WITH_TIMEOUT(lastStep(w.curvesView(), branch, "loss") > shown, 30000);
      QTRY_VERIFY_WITH_TIMEOUT(chartLastStep(panel) > double(shown), 10000);
      QVERIFY(running(pid));
      shown = lastStep(w.curvesView(), branch, "loss");
    }
    // The window (and its ssh connections) closed: the run goes on there.
    QTest::qWait(1500);
    QVERIFY2(running(pid), "closing the app stopped the run on the host");
    const int64_t before = lastLoggedStep(branch + "/metrics.jsonl");
    QTRY_VERIFY_WITH_TIMEOUT(lastLoggedStep(branch + "/metrics.jsonl") > before, 20000);
    // Stopped there as a person would (kill PID: it saves a checkpoint and ends).
    ::kill(pid_t(pid), SIGTERM);
    QTRY_VERIFY_WITH_TIMEOUT(!running(pid), 60000);
    // Its newest checkpoint is what torch loads: the branch's name, a step
    // past what the window showed before it closed.
    const QFileInfoList saved = QDir(branch).entryInfoList({"*.pt"}, QDir::Files, QDir::Time);
    QVERIFY(!saved.isEmpty());
    const QList<QByteArray> meta = torchMeta(saved.front().filePath()).split(' ');
    QCOMPARE(meta.size(), 2);
    QCOMPARE(meta[1], QByteArray("tiny@2"));
    QVERIFY2(meta[0].toLongLong() > shown, meta[0].constData());
    // The run it branched from is as it was.
    QCOMPARE(readAll(m_exp + "/runs/tiny/metrics.jsonl"), parentMetrics);
  }

  // "as a SLURM job": the script is shown in an editable box, the edited
  // one is what sbatch gets, with the trainer's argv as its arguments.
  void sbatchShowsTheScriptToEdit() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    useAgent("agent-slurm.sh");
    const QString final = m_exp + "/runs/tiny/tiny_final.pt";
    const QString runDir = m_exp + "/runs/tiny-sft";
    MainWindow w;
    ckpt::TrainPanel* panel = openTrainTab(w, final, /*finetune=*/true);
    QVERIFY(panel);
    QCOMPARE(panel->finetuneCheckpointEdit()->text(), remote(final));
    // Without data it cannot start, and says the data is the host's.
    typeInto(panel->finetuneDataEdit(), QString());
    QVERIFY2(panel->validationError().startsWith("data: the fine-tuning data, a path on 127.0.0.1"),
             qPrintable(panel->validationError()));
    QVERIFY(!panel->startButton()->isEnabled());
    // The host's paths are typed: this machine's file dialogs are off.
    const auto browse = panel->finetuneDataEdit()->parentWidget()->findChildren<QToolButton*>();
    QVERIFY(!browse.isEmpty());
    for (QToolButton* b : browse) QVERIFY(!b->isEnabled());
    typeInto(panel->finetuneDataEdit(), m_exp + "/corpus.txt");
    QTRY_VERIFY(panel->startButton()->isEnabled());

    QCheckBox* slurm = panel->sbatchBox();
    QTRY_VERIFY(slurm->isVisible());
    QTest::mouseClick(slurm, Qt::LeftButton, {}, QPoint(8, slurm->height() / 2));
    QVERIFY(slurm->isChecked());
    QCOMPARE(panel->startButton()->text(), QString("Submit on 127.0.0.1…"));

    // The dialog is modal: driven from a timer while it is up. First
    // Cancel: nothing is written on the host.
    QTimer canceller;
    canceller.setInterval(100);
    connect(&canceller, &QTimer::timeout, this, [&] {
      auto* dialog = qobject_cast<ckpt::SbatchDialog*>(QApplication::activeModalWidget());
      if (!dialog || !dialog->isVisible()) return;
      canceller.stop();
      QTest::mouseClick(dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Cancel),
                        Qt::LeftButton);
    });
    canceller.start();
    QTest::mouseClick(panel->startButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(panel->statusText(),
                              QString("Not submitted: nothing was written on 127.0.0.1"), 60000);
    QVERIFY(!QDir(runDir).exists());
    QVERIFY(!QFile::exists(m_tmp.path() + "/sbatch.argv"));
    QTRY_VERIFY(panel->startButton()->isEnabled());

    // Then edited and submitted.
    QString proposed, edited, title;
    QTimer driver;
    driver.setInterval(100);
    connect(&driver, &QTimer::timeout, this, [&] {
      auto* dialog = qobject_cast<ckpt::SbatchDialog*>(QApplication::activeModalWidget());
      if (!dialog || !dialog->isVisible()) return;
      driver.stop();
      title = dialog->windowTitle();
      QPlainTextEdit* editor = dialog->editor();
      proposed = editor->toPlainText();
      // A line typed after the shebang, as a person adds a partition.
      editor->setFocus();
      QTest::keyClick(editor, Qt::Key_Home, Qt::ControlModifier);
      QTest::keyClick(editor, Qt::Key_Down);
      QTest::keyClicks(editor, "#SBATCH --partition=edited");
      QTest::keyClick(editor, Qt::Key_Return);
      edited = editor->toPlainText();
      QPushButton* submit = dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
      QTest::mouseClick(submit, Qt::LeftButton);
    });
    driver.start();
    QTest::mouseClick(panel->startButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().startsWith("Submitted to SLURM on 127.0.0.1"),
                             60000);
    QCOMPARE(title, QString("Submit to SLURM on 127.0.0.1"));
    QVERIFY2(proposed.startsWith("#!/bin/bash\n") && proposed.endsWith("exec \"$@\"\n"),
             qPrintable(proposed));
    QVERIFY(edited.contains("\n#SBATCH --partition=edited\n"));
    QVERIFY(!proposed.contains("--partition=edited"));
    // What sbatch got on the host: the edited script, and the trainer's argv after it.
    QCOMPARE(QString::fromUtf8(readAll(m_tmp.path() + "/sbatch.script")), edited);
    QStringList argv = QString::fromUtf8(readAll(m_tmp.path() + "/sbatch.argv")).split('\n');
    QCOMPARE(argv.takeLast(), QString());
    QVERIFY(argv.size() > 5);
    QCOMPARE(argv[0], QString("--job-name=ckptscope-tiny-sft"));
    QCOMPARE(argv[2], "--chdir=" + runDir);
    QCOMPARE(argv[4], QFileInfo(kCli).canonicalFilePath());
    QCOMPARE(argv[5], QString("finetune"));
    QCOMPARE(argv.back(), QFileInfo(final).canonicalFilePath());
    QVERIFY(argv.contains(QFileInfo(m_exp + "/corpus.txt").canonicalFilePath()));
    QVERIFY2(panel->statusText().contains("job 4242"), qPrintable(panel->statusText()));
    QCOMPARE(panel->runView()->title(), QString("tiny-sft on 127.0.0.1: SLURM job 4242"));
    // The job followed holds Start (a second click would submit a second
    // job into the same folder) until the person stops following it.
    QVERIFY(!panel->startButton()->isEnabled());
    QVERIFY2(panel->startButton()->toolTip().contains("(SLURM job 4242, tiny-sft)"),
             qPrintable(panel->startButton()->toolTip()));
    // The host cannot say how the job stands (this one has no squeue): said
    // once in the log; the job is still followed.
    QTRY_VERIFY_WITH_TIMEOUT(
        panel->logText().count("Cannot tell how the run on 127.0.0.1 stands: ") == 1, 20000);
    QVERIFY2(panel->logText().contains("squeue is not on the PATH"), qPrintable(panel->logText()));
    QTest::qWait(3500);  // asked again: not said again
    QCOMPARE(panel->logText().count("Cannot tell how the run on 127.0.0.1 stands: "), 1);
    QVERIFY(!panel->startButton()->isEnabled());
    QPushButton* unfollow = panel->stopFollowingButton();
    QVERIFY(unfollow->isVisible());
    QTest::mouseClick(unfollow, Qt::LeftButton);
    QVERIFY(panel->startButton()->isEnabled());
    QVERIFY(!unfollow->isVisible());
    QVERIFY2(panel->statusText().startsWith("Not following the run in " + runDir),
             qPrintable(panel->statusText()));
  }

  // Stop on the Train tab for a run on the host: "Stop on 127.0.0.1" is
  // enabled while it trains there; clicked, it asks first (Cancel sends
  // nothing), then the host's trainer finishes its step, writes a checkpoint
  // python3-torch loads and ends, and the tab says "Stopped on the host at
  // step N" with that checkpoint, which the browser lists.
  void stopOnTheHostFromTheTrainTab() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    useAgent("agent.sh");
    const QString final = m_exp + "/runs/tiny/tiny_final.pt";
    const QString runDir = m_exp + "/runs/tiny-stopped";
    qint64 pid = 0;
    const auto killer = qScopeGuard([&pid] {
      if (pid > 0 && running(pid)) ::kill(pid_t(pid), SIGKILL);
    });
    MainWindow w;
    ckpt::TrainPanel* panel = openTrainTab(w, final, /*finetune=*/true);
    QVERIFY(panel);
    typeInto(panel->finetuneDataEdit(), m_exp + "/corpus.txt");
    typeInto(panel->finetuneOutputEdit(), runDir);
    typeInto(panel->finetuneMaxStepsBox(), 100000);
    QPushButton* stop = panel->stopButton();
    QVERIFY(!stop->isEnabled());  // nothing runs yet
    QTRY_VERIFY(panel->startButton()->isEnabled());
    QTest::mouseClick(panel->startButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().contains("Started on 127.0.0.1 (pid"), 90000);
    pid =
        QRegularExpression("\\(pid (\\d+)\\)").match(panel->statusText()).captured(1).toLongLong();
    QVERIFY(pid > 0 && running(pid));
    // While it trains there: Start starts no second run; Stop says where it stops.
    QVERIFY(!panel->startButton()->isEnabled());
    QVERIFY(stop->isVisible());
    QTRY_VERIFY(stop->isEnabled());
    QCOMPARE(stop->text(), QString("Stop on 127.0.0.1"));
    QVERIFY2(stop->toolTip().contains("finishes the step in flight"), qPrintable(stop->toolTip()));
    QTRY_VERIFY_WITH_TIMEOUT(chartLastStep(panel) >= 5, 60000);
    shoot(w, "remote-run-training");

    // The confirmation: Cancel first (nothing is asked of the host), then
    // "Stop on 127.0.0.1". It is modal: driven from a timer.
    QString question;
    auto answer = [&](const QString& button) {
      auto* timer = new QTimer(this);
      timer->setInterval(100);
      connect(timer, &QTimer::timeout, this, [&question, button, timer] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box || !box->isVisible()) return;
        timer->stop();
        timer->deleteLater();
        question = box->text() + "\n" + box->informativeText();
        for (QAbstractButton* b : box->buttons())
          if (b->text() == button) QTest::mouseClick(b, Qt::LeftButton);
      });
      timer->start();
    };
    answer("Cancel");
    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_VERIFY(!question.isEmpty());
    QVERIFY2(question.startsWith(QString("Stop the trainer (pid %1) on 127.0.0.1?").arg(pid)),
             qPrintable(question));
    QVERIFY2(question.contains("writes a checkpoint to resume from in " + runDir),
             qPrintable(question));
    QTest::qWait(1500);
    QVERIFY(running(pid));
    QVERIFY(stop->isEnabled());
    const int64_t beforeStop = lastLoggedStep(runDir + "/metrics.jsonl");
    QTRY_VERIFY_WITH_TIMEOUT(lastLoggedStep(runDir + "/metrics.jsonl") > beforeStop, 20000);

    question.clear();
    answer("Stop on 127.0.0.1");
    QTest::mouseClick(stop, Qt::LeftButton);
    QTRY_VERIFY(!question.isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().startsWith("Stopping on 127.0.0.1"), 30000);
    QCOMPARE(stop->text(), QString("Stopping…"));
    QVERIFY(!stop->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().startsWith("Stopped on the host at step "), 60000);
    QVERIFY(!running(pid));
    const auto said =
        QRegularExpression("^Stopped on the host at step (\\d+): (.+)$").match(panel->statusText());
    QVERIFY2(said.hasMatch(), qPrintable(panel->statusText()));
    const int64_t step = said.captured(1).toLongLong();
    const QString checkpoint = said.captured(2);
    QCOMPARE(checkpoint, runDir + "/tiny-sft_step" + QString::number(step) + ".pt");
    QCOMPARE(step, lastLoggedStep(runDir + "/metrics.jsonl"));
    QVERIFY(step > beforeStop);
    QCOMPARE(torchMeta(checkpoint), QByteArray::number(step) + " tiny-sft");
    // The checkpoint in the browser; Stop has nothing more to stop.
    QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(checkpoint).isValid(), 30000);
    QVERIFY(!stop->isEnabled());
    QVERIFY2(panel->runView()->title().endsWith(" · stopped at step " + QString::number(step)),
             qPrintable(panel->runView()->title()));
    QVERIFY(panel->logText().contains("Stopping on 127.0.0.1: pid " + QString::number(pid)));
    QTRY_VERIFY_WITH_TIMEOUT(chartLastStep(panel) >= double(step), 20000);
    QVERIFY(panel->startButton()->isEnabled());  // it has ended there: another may start
    QVERIFY(!panel->stopFollowingButton()->isVisible());
    shoot(w, "remote-run-stopped");
  }

  // A fine-tune into a folder that exists: the host's refusal on the Train
  // tab, nothing started, the folder as it was.
  void existingOutputIsRefused() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    useAgent("agent.sh");
    const QString final = m_exp + "/runs/tiny/tiny_final.pt";
    const QString taken = m_exp + "/runs/taken";
    QVERIFY(QDir().mkpath(taken));
    writeFile(taken + "/notes.txt", "mine\n");
    MainWindow w;
    ckpt::TrainPanel* panel = openTrainTab(w, final, /*finetune=*/true);
    QVERIFY(panel);
    typeInto(panel->finetuneDataEdit(), m_exp + "/corpus.txt");
    typeInto(panel->finetuneOutputEdit(), taken);
    QPushButton* start = panel->startButton();
    QTRY_VERIFY(start->isEnabled());
    QCOMPARE(start->text(), QString("Start on 127.0.0.1"));
    QTest::mouseClick(start, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().startsWith("Not started on 127.0.0.1: "), 60000);
    QVERIFY2(panel->statusText().contains("already exists: nothing is overwritten"),
             qPrintable(panel->statusText()));
    QCOMPARE(QDir(taken).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList{"notes.txt"});
    QCOMPARE(readAll(taken + "/notes.txt"), QByteArray("mine\n"));
    QTRY_VERIFY(start->isEnabled());  // it can be corrected and started again

    // Corrected: a new folder and three steps. It starts, runs to its end
    // there, and the Train tab says so once its final checkpoint is listed.
    const QString runDir = m_exp + "/runs/tiny-ft";
    typeInto(panel->finetuneOutputEdit(), runDir);
    typeInto(panel->finetuneMaxStepsBox(), 3);
    QTRY_VERIFY(start->isEnabled());
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY(!start->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().startsWith("Finished on the host at step 3: "),
                             90000);
    QVERIFY(start->isEnabled());  // it has ended there: another may start
    shoot(w, "remote-run-finished");
    const QString written = panel->statusText().section(": ", 1);
    QVERIFY2(written.startsWith(runDir + "/") && written.endsWith("_final.pt"),
             qPrintable(written));
    const QString runName = QFileInfo(written).fileName().chopped(int(qstrlen("_final.pt")));
    QCOMPARE(torchMeta(written), "3 " + runName.toUtf8());
    QVERIFY(panel->logText().contains("Started on 127.0.0.1 (pid "));
  }

  // One run at a time from the Train tab, on the host as here: while a
  // start is asked and while the run it started trains there, Start is off
  // and its tooltip says why (another checkpoint selected meanwhile
  // changes nothing); it comes back when the trainer ends there without
  // Stop (killed, as a crash), or when the person stops following it.
  // max_steps 1,000,000: the chart's step axis follows the steps written,
  // and says where max_steps is.
  void startWaitsForTheRunOnTheHost() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    useAgent("agent.sh");
    const QString final = m_exp + "/runs/tiny/tiny_final.pt";
    const QString older = m_exp + "/runs/tiny/tiny_step2.pt";
    const QString runDir = m_exp + "/runs/tiny-once";
    const QString second = m_exp + "/runs/tiny-twice";
    QList<qint64> pids;
    const auto killer = qScopeGuard([&pids] {
      for (qint64 pid : pids)
        if (pid > 0 && running(pid)) ::kill(pid_t(pid), SIGKILL);
    });
    MainWindow w;
    ckpt::TrainPanel* panel = openTrainTab(w, final, /*finetune=*/true);
    QVERIFY(panel);
    typeInto(panel->finetuneDataEdit(), m_exp + "/corpus.txt");
    typeInto(panel->finetuneOutputEdit(), runDir);
    typeInto(panel->finetuneMaxStepsBox(), 1000000);
    QPushButton* start = panel->startButton();
    QPushButton* unfollow = panel->stopFollowingButton();
    QTRY_VERIFY(start->isEnabled());
    QVERIFY(!unfollow->isVisible());
    QTest::mouseClick(start, Qt::LeftButton);
    // Asked of the host: Start is off and says why.
    QVERIFY(!start->isEnabled());
    QVERIFY2(start->toolTip().startsWith("Starting a run on 127.0.0.1"),
             qPrintable(start->toolTip()));
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().contains("Started on 127.0.0.1 (pid"), 90000);
    const qint64 pid =
        QRegularExpression("\\(pid (\\d+)\\)").match(panel->statusText()).captured(1).toLongLong();
    pids << pid;
    QVERIFY(pid > 0 && running(pid));
    // Training there: Start is still off, and says what holds it.
    QVERIFY(!start->isEnabled());
    QCOMPARE(start->toolTip(),
             QString("The run started from this tab is training on 127.0.0.1 (pid %1, tiny-once)."
                     "\nStop on 127.0.0.1, or Stop following, before starting another.")
                 .arg(pid));
    QVERIFY(unfollow->isVisible());
    // A click on it asks nothing of the host (the log was cleared for the
    // run followed: a second start would say "Starting the fine-tune…" again).
    const QString said = panel->statusText();
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(panel->statusText(), said);
    QCOMPARE(panel->logText().count("Starting the fine-tune on the host"), 0);

    // Its curve: the step axis follows the steps written (past its first
    // ten steps of headroom, the last one drawn about two thirds of the
    // way along), the axis title and the progress bar say of how many.
    QTRY_VERIFY_WITH_TIMEOUT(chartLastStep(panel) >= 30, 60000);
    ckpt::LiveCurves* curves = panel->runView()->curves();
    QCustomPlot* plot = curves->lossPlot();
    plot->replot();
    const double last = chartLastStep(panel);
    const QRect area = plot->axisRect()->rect();
    const double along = (plot->xAxis->coordToPixel(last) - area.left()) / double(area.width());
    QVERIFY2(along > 0.6 && along < 0.8,
             qPrintable(QString("step %1 drawn at %2 of the width").arg(last).arg(along)));
    QCOMPARE(plot->xAxis->label(), QString("step (of 1,000,000)"));
    QVERIFY(!curves->maxStepsShown());
    QVERIFY2(panel->progressBar()->text().endsWith(" of 1,000,000"),
             qPrintable(panel->progressBar()->text()));
    shoot(w, "remote-run-once", start);

    // Another checkpoint clicked in the browser: the pages name it, Start stays off.
    clickCheckpoint(w, older);
    QTRY_COMPARE(panel->finetuneCheckpointEdit()->text(), remote(older));
    QVERIFY(!start->isEnabled());
    QVERIFY2(start->toolTip().contains("(pid " + QString::number(pid)),
             qPrintable(start->toolTip()));

    // The trainer dies there (no Stop, no checkpoint): the tab notices, Start is back.
    ::kill(pid_t(pid), SIGKILL);
    QTRY_VERIFY_WITH_TIMEOUT(start->isEnabled(), 30000);
    QVERIFY2(panel->statusText().startsWith("Ended on the host"), qPrintable(panel->statusText()));
    QVERIFY(!unfollow->isVisible());
    QCOMPARE(start->toolTip(), QString());
    shoot(w, "remote-run-ended");

    // A second run, then "Stop following": it goes on there, Start is back.
    typeInto(panel->finetuneOutputEdit(), second);
    QTRY_VERIFY(start->isEnabled());
    QTest::mouseClick(start, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().contains("Started on 127.0.0.1 (pid") &&
                                 panel->statusText().contains(second),
                             90000);
    const qint64 pid2 =
        QRegularExpression("\\(pid (\\d+)\\)").match(panel->statusText()).captured(1).toLongLong();
    pids << pid2;
    QVERIFY(!start->isEnabled());
    QTRY_VERIFY(unfollow->isVisible());
    QCOMPARE(panel->stopButton()->text(), QString("Stop on 127.0.0.1"));
    QTest::mouseClick(unfollow, Qt::LeftButton);
    QVERIFY(start->isEnabled());
    QVERIFY(!unfollow->isVisible());
    QCOMPARE(panel->stopButton()->text(), QString("Stop"));
    QVERIFY(!panel->stopButton()->isEnabled());
    QVERIFY2(panel->runView()->title().endsWith(" · not followed"),
             qPrintable(panel->runView()->title()));
    QVERIFY2(panel->statusText().startsWith("Not following the run in " + second +
                                            " any more: it keeps training on 127.0.0.1 (pid "),
             qPrintable(panel->statusText()));
    shoot(w, "remote-run-unfollowed");
    QTest::qWait(500);
    QVERIFY(running(pid2));
    ::kill(pid_t(pid2), SIGTERM);
    QTRY_VERIFY_WITH_TIMEOUT(!running(pid2), 60000);
  }

  // The host cannot be reached: the start fails, Start is back at once.
  void startComesBackWhenTheHostIsUnreachable() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    useAgent("agent.sh");
    const QString final = m_exp + "/runs/tiny/tiny_final.pt";
    MainWindow w;
    ckpt::TrainPanel* panel = openTrainTab(w, final, /*finetune=*/false);
    QVERIFY(panel);
    // A port nothing listens on (1: privileged, never the test's sshd).
    typeInto(panel->resumeCheckpointEdit(), "ssh://127.0.0.1:1" + final);
    QPushButton* start = panel->startButton();
    QTRY_VERIFY(start->isEnabled());
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY(!start->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(panel->statusText().startsWith("Not started on 127.0.0.1: "), 60000);
    QTRY_VERIFY(start->isEnabled());
    QCOMPARE(start->toolTip(), QString());
    QVERIFY(!panel->stopFollowingButton()->isVisible());
  }
};

QTEST_MAIN(TestRemoteTrainApp)
#include "tst_remote_train_app.moc"
