// `ckptscope-cli metrics` and `scan` of paths on several machines in one command (one
// here and one on a host, or two hosts), through a real OpenSSH server this
// test starts on loopback (ssh_server.h). "Two hosts" are 127.0.0.1 and
// localhost: two endpoints, two connections, one server. Each machine's runs
// must be what the same command prints for that machine's paths alone, a
// host's named "ENDPOINT:RUN" with its paths as ssh:// locations
// (docs/REMOTE.md), and the numbers those the test wrote.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <tuple>

#include "ckpt/remote/remote_path.h"
#include "loss_run.h"
#include "run_process.h"
#include "ssh_server.h"

using ckpt::test::ProcessResult;

namespace {

const QString kCli = QStringLiteral(CKPT_CLI);

// A run folder with a metrics.jsonl of `steps` lines: loss = base - step / 1000.
void writeRun(const QString& dir, int steps, double base) {
  ckpt::test::writeLossRun(dir, steps, base, 1000.0);
}

QJsonArray runsOf(const QByteArray& out) {
  QJsonParseError e{};
  const QJsonDocument d = QJsonDocument::fromJson(out, &e);
  if (e.error != QJsonParseError::NoError) qWarning("not JSON: %s", qPrintable(e.errorString()));
  return d.object().value("runs").toArray();
}

// A run of `metrics --json` on the host, as it must read among several
// machines' runs: its name after "ENDPOINT:", its paths as ssh:// locations.
QJsonObject placedOnHost(QJsonObject run, const QString& endpoint) {
  const QString at = "ssh://" + endpoint;
  run["name"] = endpoint + ":" + run["name"].toString();
  run["path"] = at + run["path"].toString();
  QJsonArray series = run["series"].toArray();
  for (auto s = series.begin(); s != series.end(); ++s) {
    QJsonObject o = s->toObject();
    QJsonArray files = o["files"].toArray();
    for (auto f = files.begin(); f != files.end(); ++f) *f = at + f->toString();
    o["files"] = files;
    *s = o;
  }
  run["series"] = series;
  QJsonArray markers = run["markers"].toArray();
  for (auto m = markers.begin(); m != markers.end(); ++m) {
    QJsonObject o = m->toObject();
    o["file"] = at + o["file"].toString();
    *m = o;
  }
  run["markers"] = markers;
  return run;
}

}  // namespace

class TestRemoteMachines : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_runA, m_runB;

  QProcessEnvironment sshEnv() const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("CKPTSCOPE_SSH", m_server.sshCommand());
    env.insert("CKPTSCOPE_REMOTE_CLI", kCli);
    return env;
  }
  ProcessResult cli(const QStringList& args) const {
    QProcess p;
    p.setProcessEnvironment(sshEnv());
    p.start(kCli, args);
    return ckpt::test::finishProcess(p, 120000);
  }
  QString endpoint(const QString& host) const {
    return QString("%1:%2").arg(host).arg(m_server.port());
  }
  QString remote(const QString& host, const QString& path) const {
    return "ssh://" + endpoint(host) + path;
  }

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void locationsReadBack();
  void metricsHereAndOnAHost();
  void metricsOnTwoHosts();
  void aFailingMachineFailsTheCommand();
  void scanHereAndOnAHost();
  void runsTable();
};

void TestRemoteMachines::initTestCase() {
  QVERIFY(m_tmp.isValid());
  m_runA = m_tmp.path() + "/exp/runA";
  m_runB = m_tmp.path() + "/exp/runB";
  writeRun(m_runA, 30, 3.0);
  writeRun(m_runB, 20, 5.0);
  // Hyperparameters as the reference trainer's RUN.json holds them.
  for (const auto& [dir, lr, seed] :
       {std::tuple{m_runA, "0.001", 0}, std::tuple{m_runB, "0.0003", 1}}) {
    QFile f(dir + "/RUN.json");
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QString("{\"training\": {\"learning_rate\": %1, \"seed\": %2}}\n")
                .arg(lr)
                .arg(seed)
                .toUtf8());
  }
  m_skip = ckpt::test::SshServer::unavailable();
  if (!m_skip.isEmpty()) return;
  QString why;
  QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
}

void TestRemoteMachines::cleanupTestCase() {
  m_server.stop();
}

// A location printed for a host's path reads back as that path on that host:
// an absolute path, and one in the home folder (ssh://host/~/x is "x").
void TestRemoteMachines::locationsReadBack() {
  using ckpt::remote::parseRemotePath;
  const struct {
    const char* given;
    const char* shown;
    const char* path;
  } cases[] = {
      {"ssh://u@h:2222/abs/x y", "ssh://u@h:2222/abs/x y", "/abs/x y"},
      {"ssh://h/~/runs/a", "ssh://h/~/runs/a", "runs/a"},
      {"ssh://h/~", "ssh://h/~", "."},
      {"ssh://h", "ssh://h/~", "."},
      {"h:runs/a", "ssh://h/~/runs/a", "runs/a"},
      {"h:/abs", "ssh://h/abs", "/abs"},
  };
  for (const auto& c : cases) {
    const auto r = parseRemotePath(c.given);
    QVERIFY2(r, c.given);
    QCOMPARE(QString::fromStdString(r->path), QString(c.path));
    QCOMPARE(QString::fromStdString(r->display()), QString(c.shown));
    const auto again = parseRemotePath(r->display());
    QVERIFY(again);
    QCOMPARE(QString::fromStdString(again->path), QString::fromStdString(r->path));
    QCOMPARE(QString::fromStdString(again->endpoint()), QString::fromStdString(r->endpoint()));
  }
}

void TestRemoteMachines::metricsHereAndOnAHost() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const ProcessResult both = cli({"metrics", "--json", m_runA, remote("127.0.0.1", m_runB)});
  QVERIFY2(both.exitCode == 0, both.err.constData());
  const ProcessResult a = cli({"metrics", "--json", m_runA});
  const ProcessResult b = cli({"metrics", "--json", m_runB});
  QCOMPARE(a.exitCode, 0);
  QCOMPARE(b.exitCode, 0);
  const QJsonArray runs = runsOf(both.out), ra = runsOf(a.out), rb = runsOf(b.out);
  QCOMPARE(ra.size(), 1);
  QCOMPARE(rb.size(), 1);
  QCOMPARE(runs.size(), 2);
  QCOMPARE(runs[0].toObject(), ra[0].toObject());
  QCOMPARE(runs[1].toObject(), placedOnHost(rb[0].toObject(), endpoint("127.0.0.1")));
  // The host's numbers are the ones written there.
  const QJsonObject hostRun = runs[1].toObject();
  QCOMPARE(hostRun["name"].toString(), endpoint("127.0.0.1") + ":runB");
  QCOMPARE(hostRun["path"].toString(), "ssh://" + endpoint("127.0.0.1") + m_runB);
  const QJsonArray series = hostRun["series"].toArray();
  QCOMPARE(series.size(), 1);
  QCOMPARE(series[0].toObject()["metric"].toString(), QString("loss"));
  QCOMPARE(series[0].toObject()["files"].toArray()[0].toString(),
           "ssh://" + endpoint("127.0.0.1") + m_runB + "/metrics.jsonl");
  const QJsonArray points = series[0].toObject()["points"].toArray();
  QCOMPARE(points.size(), 20);
  for (int s = 1; s <= 20; ++s) {
    QCOMPARE(points[s - 1].toArray()[0].toInteger(), qint64(s));
    QCOMPARE(points[s - 1].toArray()[1].toDouble(), 5.0 - s / 1000.0);
  }

  // The text form names each run with its host.
  const ProcessResult text = cli({"metrics", remote("127.0.0.1", m_runB), m_runA});
  QVERIFY2(text.exitCode == 0, text.err.constData());
  const QString t = QString::fromUtf8(text.out);
  const qsizetype host =
      t.indexOf(endpoint("127.0.0.1") + ":runB  (ssh://" + endpoint("127.0.0.1") + m_runB + ")");
  const qsizetype here = t.indexOf("runA  (" + m_runA + ")");
  QVERIFY2(host >= 0 && here > host, qPrintable(t));  // in the order the machines are named
}

void TestRemoteMachines::metricsOnTwoHosts() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // CSV: each host's rows are its own command's rows with the run and the
  // source named on that host.
  const ProcessResult both =
      cli({"metrics", "--csv", remote("localhost", m_runB), remote("127.0.0.1", m_runA)});
  QVERIFY2(both.exitCode == 0, both.err.constData());
  QByteArray expected;
  const struct {
    QString run, dir, host;
  } parts[] = {{"runB", m_runB, "localhost"}, {"runA", m_runA, "127.0.0.1"}};
  for (const auto& part : parts) {
    const ProcessResult one = cli({"metrics", "--csv", part.dir});
    QCOMPARE(one.exitCode, 0);
    QList<QByteArray> lines = one.out.split('\n');
    if (expected.isEmpty()) expected = lines.front() + '\n';  // the header, once
    for (const QByteArray& line : lines.mid(1)) {
      if (line.isEmpty()) continue;
      QList<QByteArray> fields = line.split(',');
      QCOMPARE(fields.size(), 7);  // run,metric,step,value,wall_time,tokens,source
      QCOMPARE(QString(fields[0]), part.run);
      fields[0] = (endpoint(part.host) + ":" + part.run).toUtf8();
      fields[6] = ("ssh://" + endpoint(part.host)).toUtf8() + fields[6];
      expected += fields.join(',') + '\n';
    }
  }
  QCOMPARE(both.out.count('\n'), 1 + 20 + 30);
  QCOMPARE(both.out, expected);
}

void TestRemoteMachines::aFailingMachineFailsTheCommand() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // Nothing printed partly: a host's missing folder fails the whole command,
  // named with its host.
  const QString missing = m_tmp.path() + "/exp/no-such-run";
  ProcessResult r = cli({"metrics", "--json", m_runA, remote("127.0.0.1", missing)});
  QCOMPARE(r.exitCode, 1);
  QVERIFY(r.out.isEmpty());
  QVERIFY2(r.err.contains(endpoint("127.0.0.1").toUtf8()) && r.err.contains("no-such-run"),
           r.err.constData());
  // A host that cannot be reached (a closed port) fails it too.
  r = cli({"metrics", "--json", m_runA, "ssh://127.0.0.1:1" + m_runB});
  QCOMPARE(r.exitCode, 1);
  QVERIFY(r.out.isEmpty());
  QVERIFY2(r.err.contains("127.0.0.1:1"), r.err.constData());
  // And so does a folder missing here, with the hosts' answers not printed.
  r = cli({"metrics", "--json", missing, remote("127.0.0.1", m_runB)});
  QCOMPARE(r.exitCode, 1);
  QVERIFY(r.out.isEmpty());
  QVERIFY2(r.err.contains("no-such-run"), r.err.constData());
}

// `scan` of a folder here and one on a host: one document of both
// machines' files (the host's as ssh:// locations), and the exit status of
// the worst (3: a file that would run code). The pickles are written by
// hand: an empty dict, and a call of posix.system.
void TestRemoteMachines::scanHereAndOnAHost() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const QString safe = m_tmp.path() + "/scan/safe", bad = m_tmp.path() + "/scan/bad";
  QVERIFY(QDir().mkpath(safe));
  QVERIFY(QDir().mkpath(bad));
  const auto write = [](const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
  };
  write(safe + "/dict.pkl", QByteArray("\x80\x02}q\x00.", 6));
  write(bad + "/dict.pkl", QByteArray("\x80\x02}q\x00.", 6));
  write(bad + "/system.pkl",
        QByteArray("\x80\x02"
                   "cposix\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.",
                   34));
  write(bad + "/notes.txt", "not a pickle\n");

  const ProcessResult both = cli({"scan", "--json", safe, remote("127.0.0.1", bad)});
  QCOMPARE(both.exitCode, 3);
  const ProcessResult a = cli({"scan", "--json", safe});
  const ProcessResult b = cli({"scan", "--json", bad});
  QCOMPARE(a.exitCode, 0);
  QCOMPARE(b.exitCode, 3);
  const QJsonObject d = QJsonDocument::fromJson(both.out).object();
  const QJsonObject da = QJsonDocument::fromJson(a.out).object();
  const QJsonObject db = QJsonDocument::fromJson(b.out).object();
  QJsonArray files = da["files"].toArray();
  for (const QJsonValue& f : db["files"].toArray()) {
    QJsonObject o = f.toObject();
    o["file"] = "ssh://" + endpoint("127.0.0.1") + o["file"].toString();
    files.append(o);
  }
  QCOMPARE(files.size(), 3);
  QCOMPARE(d["files"].toArray(), files);
  QCOMPARE(d["checkpoints"].toArray(), QJsonArray());
  // What was passed over is counted for both machines (notes.txt on the host).
  QCOMPARE(d["not_examined"].toObject()["not_pickles"].toInt(), 1);
  QCOMPARE(d["files"].toArray()[2].toObject()["file"].toString(),
           "ssh://" + endpoint("127.0.0.1") + bad + "/system.pkl");
  QCOMPARE(d["files"].toArray()[2].toObject()["verdict"].toString(), QString("dangerous"));

  // Text: each machine's own report under its name.
  const ProcessResult text = cli({"scan", safe, remote("127.0.0.1", bad)});
  QCOMPARE(text.exitCode, 3);
  const ProcessResult ta = cli({"scan", safe});
  const ProcessResult tb = cli({"scan", bad});
  QCOMPARE(text.out, "here:\n" + ta.out + "\n" + endpoint("127.0.0.1").toUtf8() + ":\n" + tb.out);
}

// The runs table (`runs`): of a folder on a host, byte for byte what the
// same command prints for it here (the host reads the curves and the
// hyperparameters); of runs here and on a host, the table of both as if
// both were here, the host's row named with its host.
void TestRemoteMachines::runsTable() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const QString exp = m_tmp.path() + "/exp";
  for (const QStringList& form : {QStringList{"--json"}, QStringList{"--csv"}, QStringList{},
                                  QStringList{"--group-by", "learning_rate"}}) {
    const ProcessResult here = cli(QStringList{"runs"} + form + QStringList{exp});
    const ProcessResult there =
        cli(QStringList{"runs"} + form + QStringList{remote("127.0.0.1", exp)});
    QVERIFY2(here.exitCode == 0, here.err.constData());
    QCOMPARE(there.exitCode, 0);
    QCOMPARE(there.out, here.out);
    QCOMPARE(there.err, here.err);
  }
  QVERIFY(cli({"runs", exp}).out.contains("learning_rate"));

  // The host named first or last: the same table.
  const ProcessResult both = cli({"runs", "--json", m_runA, remote("127.0.0.1", m_runB)});
  QVERIFY2(both.exitCode == 0, both.err.constData());
  const ProcessResult hostFirst = cli({"runs", "--json", remote("127.0.0.1", m_runB), m_runA});
  QVERIFY2(hostFirst.exitCode == 0, hostFirst.err.constData());
  QCOMPARE(hostFirst.out, both.out);
  const ProcessResult local = cli({"runs", "--json", m_runA, m_runB});
  const QJsonObject d = QJsonDocument::fromJson(both.out).object();
  const QJsonObject l = QJsonDocument::fromJson(local.out).object();
  for (const char* key : {"metric", "goal", "columns", "runs_shown", "runs_total"})
    QCOMPARE(d[key], l[key]);
  QCOMPARE(d["columns"].toArray(), (QJsonArray{"learning_rate", "seed"}));
  QMap<QString, QJsonObject> rows;
  for (const QJsonValue& r : d["rows"].toArray())
    rows[r.toObject()["path"].toString()] = r.toObject();
  QCOMPARE(rows.size(), 2);
  for (const QJsonValue& r : l["rows"].toArray()) {
    QJsonObject want = r.toObject();
    if (want["path"].toString() == m_runB) {
      want["name"] = endpoint("127.0.0.1") + ":" + want["name"].toString();
      want["path"] = "ssh://" + endpoint("127.0.0.1") + m_runB;
    }
    QCOMPARE(rows.value(want["path"].toString()), want);
  }
  // The numbers are the ones written: runB's loss ends at 5 - 20/1000.
  const QJsonObject b = rows.value("ssh://" + endpoint("127.0.0.1") + m_runB);
  QCOMPARE(b["last"].toDouble(), 5.0 - 20 / 1000.0);
  QCOMPARE(b["hparams"].toObject()["learning_rate"].toDouble(), 0.0003);

  // An agent older than `hparams` (the method renamed on its way, so it
  // answers unknown_method): the table still comes, without the host's
  // hyperparameters, and says why.
  const QString old = m_tmp.path() + "/old-agent.sh";
  QVERIFY(ckpt::test::writeScript(old, ckpt::test::renamingAgentScript(kCli, "hparams")));
  QProcessEnvironment env = sshEnv();
  env.insert("CKPTSCOPE_REMOTE_CLI", old);
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(kCli, {"runs", "--json", remote("127.0.0.1", m_tmp.path() + "/exp")});
  const ProcessResult older = ckpt::test::finishProcess(p, 120000);
  QVERIFY2(older.exitCode == 0, older.err.constData());
  const QJsonObject o = QJsonDocument::fromJson(older.out).object();
  QCOMPARE(o["rows"].toArray().size(), 2);
  QList<double> lasts;
  for (const QJsonValue& r : o["rows"].toArray()) lasts << r.toObject()["last"].toDouble();
  std::sort(lasts.begin(), lasts.end());
  QCOMPARE(lasts, (QList<double>{3.0 - 30 / 1000.0, 5.0 - 20 / 1000.0}));
  QCOMPARE(older.out.count("older than `hparams`"), 1);  // said once, not once a run
  QVERIFY(!older.out.contains("learning_rate"));
}

QTEST_GUILESS_MAIN(TestRemoteMachines)
#include "tst_remote_machines.moc"
