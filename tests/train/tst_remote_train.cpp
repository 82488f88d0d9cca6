// Training on the host (docs/REMOTE.md): `ckptscope-cli resume|finetune
// ssh://...` through a real OpenSSH server this test starts on loopback
// (tests/core/ssh_server.h). The trainer started there outlives the
// connection and writes a checkpoint python3-torch loads with the expected
// step; a folder named with spaces, quotes and ';' runs nothing else; a path
// outside the roots and an existing output folder are refused; with a fake
// `sbatch` on the agent's PATH the script the person edited is what is
// submitted, with the trainer's argv as its arguments. `ckptscope-cli stop`
// (the agent's `stop`) stops a run started there: the step finishes, a
// checkpoint torch loads is written; a pid that is not our trainer, or a
// job that is not our run, is refused and left alone.
#include <signal.h>
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../core/run_process.h"
#include "../core/ssh_server.h"

using json = nlohmann::json;
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

// Runs (a zombie waiting for its reaper does not).
bool running(qint64 pid) {
  const QByteArray stat = readAll(QString("/proc/%1/stat").arg(pid));
  if (stat.isEmpty()) return false;
  const int close = stat.lastIndexOf(')');
  return close > 0 && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

// Field `n` (1-based, as proc(5) counts) of /proc/PID/stat.
qint64 statField(qint64 pid, int n) {
  const QByteArray stat = readAll(QString("/proc/%1/stat").arg(pid));
  const QList<QByteArray> fields = stat.mid(stat.lastIndexOf(')') + 2).split(' ');
  return fields.size() > n - 3 ? fields[n - 3].toLongLong() : -1;
}

bool waitGone(qint64 pid, int ms) {
  QElapsedTimer t;
  t.start();
  while (running(pid) && t.elapsed() < ms) QThread::msleep(100);
  return !running(pid);
}

// One agent on a pipe (no ssh): the protocol's refusals.
class Agent {
 public:
  explicit Agent(const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    m_p.setProcessEnvironment(env);
    m_p.start(kCli, {"serve", "--stdio"});
    m_p.waitForStarted();
    call("hello", {{"protocol", 1}});
  }
  ~Agent() {
    m_p.closeWriteChannel();
    if (!m_p.waitForFinished(5000)) m_p.kill();
    m_p.waitForFinished();
  }
  json call(const std::string& method, const json& params = json::object()) {
    m_p.write(QByteArray::fromStdString(
                  json{{"id", ++m_id}, {"method", method}, {"params", params}}.dump()) +
              "\n");
    m_p.waitForBytesWritten();
    QElapsedTimer t;
    t.start();
    while (!m_p.canReadLine() && t.elapsed() < 60000) m_p.waitForReadyRead(1000);
    if (!m_p.canReadLine()) return json();
    return json::parse(m_p.readLine().toStdString());
  }

 private:
  QProcess m_p;
  int m_id = 0;
};

}  // namespace

class TestRemoteTrain : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_exp;  // the experiment on "the host": a name with spaces, quotes and ';'

  QProcessEnvironment env(const QString& agent = "agent.sh") const {
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert("CKPTSCOPE_SSH", m_server.sshCommand());
    e.insert("CKPTSCOPE_REMOTE_CLI", m_server.home() + "/" + agent);
    return e;
  }
  ProcessResult cli(const QStringList& args, const QString& agent = "agent.sh") const {
    QProcess p;
    p.setProcessEnvironment(env(agent));
    p.start(kCli, args);
    return ckpt::test::finishProcess(p, 120000);
  }
  QString remote(const QString& path) const {
    return QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(path);
  }
  // What python3-torch reads of a checkpoint's metadata: "STEP RUN_NAME".
  static QByteArray torchMeta(const QString& file) {
    const ProcessResult r = ckpt::test::runProcess(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {"-c",
         "import sys, torch; m = torch.load(sys.argv[1], weights_only=False)['metadata']; "
         "print(m['step'], m['run_name'])",
         file});
    return r.exitCode == 0 ? r.out.trimmed() : "python failed: " + r.err;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    // The agent on "the host": this build's ckptscope-cli, with a PATH of
    // its own (agent-slurm.sh: a fake sbatch first on it).
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

    // A fake squeue (`squeue -h -j ID -o FORMAT`): job 4242 is a ckptscope
    // run in the folder job4242.dir names, 777 someone else's, any other
    // has left the queue. A fake scancel records its arguments.
    writeFile(
        m_tmp.path() + "/fakebin/squeue",
        QString("#!/bin/sh\nd='%1'\n"
                "case \"$3\" in\n"
                "  4242) printf 'ckptscope-job-run|%s|RUNNING\\n' \"$(cat \"$d/job4242.dir\")\";;\n"
                "  777) echo 'someone-else|/tmp|RUNNING';;\n"
                "  *) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1;;\n"
                "esac\n")
            .arg(m_tmp.path())
            .toUtf8(),
        true);
    writeFile(m_tmp.path() + "/fakebin/scancel",
              QString("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '%1/scancel.argv'; "
                      "done\n")
                  .arg(m_tmp.path())
                  .toUtf8(),
              true);

    m_exp = m_tmp.path() + "/exp with 'quotes' and ; touch PWNED";
    QVERIFY(QDir().mkpath(m_exp));
    std::ofstream corpus((m_exp + "/corpus.txt").toStdString());
    for (int i = 0; i < 60; ++i)
      corpus << "Sing, O goddess, the anger of Achilles son of Peleus, line " << i << ".\n";
    corpus.close();
    writeFile(m_exp + "/run.json", R"({
      "model": {"vocab_size": 256, "d_model": 32, "n_layers": 1, "n_heads": 4, "ffn_hidden_size": 80, "max_seq_len": 32},
      "training": {"run_name": "tiny", "batch_size": 2, "micro_batch_size": 2, "seq_len": 32, "learning_rate": 0.003,
                   "max_steps": 4, "eval_every": 2, "save_every": 2, "log_every": 1, "mixed_precision": "fp32"},
      "data": {"path": "corpus.txt"}})");
    // The checkpoints to continue from, made here by the local trainer.
    const ProcessResult r = ckpt::test::runProcess(
        kCli, {"train", "--config", "run.json", "--out", "runs/tiny", "--device", "cpu"}, m_exp);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(QFile::exists(m_exp + "/runs/tiny/tiny_step2.pt"));
    QVERIFY(QFile::exists(m_exp + "/runs/tiny/tiny_final.pt"));
  }

  void cleanupTestCase() { m_server.stop(); }

  // The fine-tune starts on the host, the client ends (ssh closes), the
  // trainer goes on in a session of its own and finishes its steps; its
  // checkpoint is what python3-torch loads.
  void finetuneOutlivesTheConnection() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const int steps = 1000;
    const ProcessResult r =
        cli({"finetune", remote(m_exp + "/runs/tiny/tiny_final.pt"), "--data",
             m_exp + "/corpus.txt", "--max-steps", QString::number(steps), "--device", "cpu"});
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    const auto m = QRegularExpression("started on 127.0.0.1:\\d+ \\(pid (\\d+)\\)").match(r.out);
    QVERIFY2(m.hasMatch(), r.out.constData());
    const qint64 pid = m.captured(1).toLongLong();
    // The client and its ssh are gone; the trainer is not. It is in a
    // session of its own whose leader has gone (no terminal, no hangup can
    // reach it), not this test's nor the ssh session's.
    QVERIFY2(running(pid), "the trainer ended with the connection");
    const qint64 session = statField(pid, 6);
    QVERIFY(session > 0);
    QVERIFY(session != statField(::getpid(), 6));
    QVERIFY(!running(session));
    const QString runDir = m_exp + "/runs/tiny-sft";
    QVERIFY2(r.out.contains(("run:     " + runDir + " (tiny-sft)").toUtf8()), r.out.constData());
    QVERIFY2(r.out.contains(("follow:  ckptscope-cli metrics " + remote(runDir)).toUtf8()),
             r.out.constData());
    QVERIFY2(waitGone(pid, 90000), "the trainer did not finish in 90 s");
    QCOMPARE(torchMeta(runDir + "/tiny-sft_final.pt"), QByteArray::number(steps) + " tiny-sft");
    // Its log is in the run's folder; its metrics are what `metrics` follows.
    const QStringList logs = QDir(runDir).entryList({"ckptscope-train-*.log"});
    QCOMPARE(logs.size(), 1);
    QVERIFY(readAll(runDir + "/" + logs[0]).contains(", writing to " + runDir.toUtf8()));
    const ProcessResult metrics = cli({"metrics", remote(runDir), "--json"});
    QVERIFY2(metrics.exitCode == 0, metrics.err.constData());
    QVERIFY2(metrics.out.contains("\"tiny-sft\""), metrics.out.left(400).constData());
    // The ';' in the folder's name ran nothing.
    QVERIFY(!QFile::exists(m_exp + "/PWNED"));
    QVERIFY(!QFile::exists(m_server.home() + "/PWNED"));
    QVERIFY(!QFile::exists(QDir::homePath() + "/PWNED"));
  }

  // A resume from an older checkpoint: a branch "tiny@2" beside the run,
  // which stays as it was.
  void resumeBranchesOnTheHost() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QByteArray before = readAll(m_exp + "/runs/tiny/metrics.jsonl");
    const ProcessResult r = cli({"resume", remote(m_exp + "/runs/tiny/tiny_step2.pt"),
                                 "--max-steps", "6", "--device", "cpu"});
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    const auto m = QRegularExpression("\\(pid (\\d+)\\)").match(r.out);
    QVERIFY2(m.hasMatch(), r.out.constData());
    QVERIFY2(waitGone(m.captured(1).toLongLong(), 90000), "the trainer did not finish");
    const QString branch = m_exp + "/runs/tiny@2";
    QVERIFY2(r.out.contains(("run:     " + branch + " (tiny@2)").toUtf8()), r.out.constData());
    QCOMPARE(torchMeta(branch + "/tiny@2_final.pt"), QByteArray("6 tiny@2"));
    QCOMPARE(readAll(m_exp + "/runs/tiny/metrics.jsonl"), before);
  }

  // Stop (the agent's `stop`, `ckptscope-cli stop`): a fine-tune started
  // on the host is asked to stop; it finishes its step, writes a checkpoint
  // python3-torch loads (with its optimizer: it resumes) at the step the
  // CLI said, and ends. A pid that is not our trainer (a process working in
  // the very same folder) is refused and lives on.
  void stopFinishesTheStepAndSaves() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString runDir = m_exp + "/runs/tiny-stop";
    ProcessResult r =
        cli({"finetune", remote(m_exp + "/runs/tiny/tiny_final.pt"), "--data",
             m_exp + "/corpus.txt", "--out", runDir, "--max-steps", "100000", "--device", "cpu"});
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    const auto m = QRegularExpression("\\(pid (\\d+)\\)").match(r.out);
    QVERIFY2(m.hasMatch(), r.out.constData());
    const qint64 pid = m.captured(1).toLongLong();
    const auto killer = qScopeGuard([pid] {
      if (running(pid)) ::kill(pid_t(pid), SIGKILL);
    });
    QVERIFY(running(pid));
    QTRY_VERIFY_WITH_TIMEOUT(readAll(runDir + "/metrics.jsonl").count('\n') >= 3, 60000);

    // Not ours: a process in the run's folder that is not a trainer.
    QProcess other;
    other.setWorkingDirectory(runDir);
    other.start("/bin/sleep", {"300"});
    QVERIFY(other.waitForStarted());
    const auto endOther = qScopeGuard([&other] {
      other.kill();
      other.waitForFinished();
    });
    r = cli({"stop", remote(runDir), "--pid", QString::number(other.processId()), "--no-wait"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("is not a ckptscope trainer running in " + runDir.toUtf8()),
             r.err.constData());
    QVERIFY2(r.err.contains("nothing was signalled"), r.err.constData());
    // Our trainer named with another run's folder: refused too.
    r = cli({"stop", remote(m_exp + "/runs/tiny"), "--pid", QString::number(pid), "--no-wait"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("it trains in " + runDir.toUtf8()), r.err.constData());
    QTest::qWait(500);
    QCOMPARE(other.state(), QProcess::Running);
    QVERIFY(running(pid));
    {
      // Asking how it stands signals nothing.
      Agent a;
      a.call("open", {{"path", runDir.toStdString()}});
      const json status =
          a.call("stop", {{"run_dir", runDir.toStdString()}, {"pid", pid}, {"signal", false}});
      QCOMPARE(status["result"]["running"], json(true));
      QCOMPARE(status["result"]["signalled"], json(false));
      QVERIFY(status["result"]["log"].get<std::string>().starts_with(
          (runDir + "/ckptscope-train-").toStdString()));
      // A pid outside every root's run: the folder is checked first.
      const json outside = a.call("stop", {{"run_dir", m_tmp.path().toStdString()}, {"pid", pid}});
      QCOMPARE(outside["error"]["code"], json("outside_roots"));
    }
    QVERIFY(running(pid));

    // Stopped: the step in flight, a checkpoint, the end.
    r = cli({"stop", remote(runDir), "--pid", QString::number(pid)});
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    QVERIFY2(r.out.contains("asked pid " + QByteArray::number(pid) + " on 127.0.0.1:"),
             r.out.constData());
    const auto said = QRegularExpression("stopped on 127\\.0\\.0\\.1:\\d+ at step (\\d+): (.+)\\n")
                          .match(QString::fromUtf8(r.out));
    QVERIFY2(said.hasMatch(), r.out.constData());
    QVERIFY(!running(pid));
    const QString step = said.captured(1);
    const QString checkpoint = said.captured(2);
    QCOMPARE(checkpoint, runDir + "/tiny-sft_step" + step + ".pt");
    QVERIFY(step.toLongLong() >= 3 && step.toLongLong() < 100000);
    QCOMPARE(torchMeta(checkpoint), (step + " tiny-sft").toUtf8());
    // Resumable: it holds the optimizer's state, and the run's last line is its step.
    const ProcessResult keys = ckpt::test::runProcess(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {"-c",
         "import sys, torch; c = torch.load(sys.argv[1], weights_only=False); "
         "print(sorted(k for k in c if 'optim' in k))",
         checkpoint});
    QVERIFY2(keys.exitCode == 0 && keys.out.contains("optim"), (keys.out + keys.err).constData());
    const QList<QByteArray> lines = readAll(runDir + "/metrics.jsonl").trimmed().split('\n');
    const auto last =
        QRegularExpression("\"step\":\\s*(\\d+)").match(QString::fromUtf8(lines.back()));
    QVERIFY2(last.hasMatch() && last.captured(1) == step, lines.back().constData());
    // The other process was left alone; nothing is left to stop.
    QCOMPARE(other.state(), QProcess::Running);
    r = cli({"stop", remote(runDir)});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(
        r.err.contains("nothing to stop") && r.err.contains("stopped at step " + step.toUtf8()),
        r.err.constData());
    // A run folder named without a pid: the trainer running there (none now).
    r = cli({"stop", "--bogus", remote(runDir)});
    QCOMPARE(r.exitCode, 2);
    r = cli({"stop", "--help"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.startsWith("usage: ckptscope-cli stop REMOTE-RUN-DIR"));
  }

  // A SLURM job: our job in the run's folder gets scancel --batch
  // --signal=TERM (the batch step is the trainer: the script execs it);
  // another job is refused and scancel is not run.
  void stopAsksTheJob() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString runDir = m_exp + "/runs/job-run";
    QVERIFY(QDir().mkpath(runDir));
    writeFile(m_tmp.path() + "/job4242.dir", runDir.toUtf8());
    QFile::remove(m_tmp.path() + "/scancel.argv");
    ProcessResult r = cli({"stop", remote(runDir), "--job", "777", "--no-wait"}, "agent-slurm.sh");
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("job 777 (someone-else in /tmp) is not a ckptscope run"),
             r.err.constData());
    QVERIFY(!QFile::exists(m_tmp.path() + "/scancel.argv"));
    r = cli({"stop", remote(runDir), "--job", "4242", "--no-wait"}, "agent-slurm.sh");
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    QVERIFY2(r.out.startsWith("asked job 4242 on 127.0.0.1:"), r.out.constData());
    QCOMPARE(readAll(m_tmp.path() + "/scancel.argv"), QByteArray("--batch\n--signal=TERM\n4242\n"));
    // A job that left the queue: nothing to stop.
    r = cli({"stop", remote(runDir), "--job", "5000", "--no-wait"}, "agent-slurm.sh");
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("nothing to stop"), r.err.constData());
  }

  // Refusals: a path outside the roots (checkpoint, data), an output folder
  // that exists (left as it was), a command or device that is not one.
  void refusals() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const std::string ckpt = (m_exp + "/runs/tiny/tiny_final.pt").toStdString();
    const std::string data = (m_exp + "/corpus.txt").toStdString();
    QTemporaryDir outside;
    QFile::copy(m_exp + "/corpus.txt", outside.path() + "/corpus.txt");
    {
      Agent a;
      // The run's folder alone.
      QCOMPARE(a.call("open", {{"path", (m_exp + "/runs/tiny").toStdString()}})["result"]["root"],
               json((m_exp + "/runs/tiny").toStdString()));
      // The data outside every root.
      json e = a.call("launch", {{"command", "finetune"},
                                 {"checkpoint", ckpt},
                                 {"data", (outside.path() + "/corpus.txt").toStdString()}});
      QCOMPARE(e["error"]["code"], "outside_roots");
      QVERIFY(e["error"]["message"].get<std::string>().rfind("data: ", 0) == 0);
      // The default folder of a fine-tune (runs/tiny-sft, beside the run) is outside it.
      a.call("open", {{"path", data}});
      e = a.call("launch", {{"command", "finetune"}, {"checkpoint", ckpt}, {"data", data}});
      QCOMPARE(e["error"]["code"], "outside_roots");
      QVERIFY(e["error"]["message"].get<std::string>().rfind("out: ", 0) == 0);
      e = a.call("launch", {{"command", "train"}, {"checkpoint", ckpt}});
      QCOMPARE(e["error"]["code"], "bad_field");
      e = a.call("launch", {{"command", "resume"}, {"checkpoint", ckpt}, {"device", "cpu; ls"}});
      QCOMPARE(e["error"]["code"], "bad_field");
      e = a.call("launch", {{"command", "resume"}, {"checkpoint", ckpt}, {"out", "/tmp/x"}});
      QCOMPARE(e["error"]["code"], "bad_field");
      // A checkpoint outside every root.
      QFile::copy(m_exp + "/runs/tiny/tiny_final.pt", outside.path() + "/x.pt");
      e = a.call("launch",
                 {{"command", "resume"}, {"checkpoint", (outside.path() + "/x.pt").toStdString()}});
      QCOMPARE(e["error"]["code"], "outside_roots");
    }
    // An output folder that exists is not written to.
    const QString taken = m_exp + "/taken";
    QVERIFY(QDir().mkpath(taken));
    writeFile(taken + "/notes.txt", "mine\n");
    const ProcessResult r =
        cli({"finetune", remote(m_exp + "/runs/tiny/tiny_final.pt"), "--data",
             m_exp + "/corpus.txt", "--out", taken, "--max-steps", "2", "--device", "cpu"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("already exists: nothing is overwritten"), r.err.constData());
    QCOMPARE(QDir(taken).entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList{"notes.txt"});
    QCOMPARE(readAll(taken + "/notes.txt"), QByteArray("mine\n"));
  }

  // SLURM: the proposed script, edited, is what sbatch gets, with the
  // trainer's argv as its arguments; the job id is reported. Without
  // sbatch on the host the hello says so and --sbatch is refused.
  void sbatchSubmitsTheEditedScript() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString ckpt = m_exp + "/runs/tiny/tiny_final.pt";
    const QStringList base{"finetune", remote(ckpt), "--data",      m_exp + "/corpus.txt",
                           "--stage",  "dpo",        "--max-steps", "3",
                           "--sbatch"};
    ProcessResult r = cli(base + QStringList{"--print-script"}, "agent-slurm.sh");
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(r.out.startsWith("#!/bin/bash\n"));
    QVERIFY(r.out.endsWith("exec \"$@\"\n"));
    QByteArray edited = r.out;
    edited.replace("#SBATCH --time=24:00:00",
                   "#SBATCH --time=00:10:00\n#SBATCH --partition=edited");
    QVERIFY(edited != r.out);
    writeFile(m_tmp.path() + "/edited.sbatch", edited);
    r = cli(base + QStringList{"--script", m_tmp.path() + "/edited.sbatch"}, "agent-slurm.sh");
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    QVERIFY2(r.out.startsWith("submitted to SLURM on 127.0.0.1:"), r.out.constData());
    QVERIFY2(r.out.contains(": job 4242 "), r.out.constData());
    QCOMPARE(readAll(m_tmp.path() + "/sbatch.script"), edited);
    const QString runDir = m_exp + "/runs/tiny-dpo";
    QStringList argv = QString::fromUtf8(readAll(m_tmp.path() + "/sbatch.argv")).split('\n');
    QCOMPARE(argv.takeLast(), QString());
    QVERIFY(argv.size() > 5);
    QCOMPARE(argv[0], QString("--job-name=ckptscope-tiny-dpo"));
    QCOMPARE(argv[1], "--output=" + runDir + "/ckptscope-train-%j.log");
    QCOMPARE(argv[2], "--chdir=" + runDir);
    QVERIFY(argv[3].startsWith(runDir + "/ckptscope-train-") && argv[3].endsWith(".sbatch"));
    QCOMPARE(readAll(argv[3]), edited);  // kept in the run's folder
    QCOMPARE(argv[4], QFileInfo(kCli).canonicalFilePath());
    const QStringList trainer = argv.mid(5);
    QCOMPARE(trainer.front(), QString("finetune"));
    QCOMPARE(trainer.back(), QFileInfo(ckpt).canonicalFilePath());
    QVERIFY(trainer.contains(QFileInfo(m_exp + "/corpus.txt").canonicalFilePath()));
    QVERIFY(trainer.contains(runDir));
    QVERIFY(r.out.contains(("log:     " + runDir + "/ckptscope-train-4242.log").toUtf8()));
    // A second submission into the same folder is refused: it exists now.
    r = cli(base, "agent-slurm.sh");
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("already exists"), r.err.constData());

    // No sbatch on the host.
    Agent plain([&] {
      QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
      e.insert("PATH", "/usr/bin:/bin");
      return e;
    }());
    Agent slurm([&] {
      QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
      e.insert("PATH", m_tmp.path() + "/fakebin:/usr/bin:/bin");
      return e;
    }());
    QCOMPARE(plain.call("hello")["result"]["sbatch"], json(false));
    QCOMPARE(slurm.call("hello")["result"]["sbatch"], json(true));
    r = cli(
        {"finetune", remote(ckpt), "--data", m_exp + "/corpus.txt", "--stage", "x", "--sbatch"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("sbatch is not on the PATH"), r.err.constData());
    QVERIFY(!QDir(m_exp + "/runs/tiny-x").exists());
  }
};

QTEST_GUILESS_MAIN(TestRemoteTrain)
#include "tst_remote_train.moc"
