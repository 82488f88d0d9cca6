// The `metrics` answer as a stream (docs/REMOTE.md, `stream`): the agent
// sends each run as an event of its own as soon as it and the runs before
// it are read, and the client prints (or draws) a run while the host reads
// the next. The runs the test writes (one much longer than the rest, so the
// threads finish them out of order) must come one an event, in the order of
// the answer without `stream`, each equal to that answer's run; a bad
// `stream` is refused and the agent keeps serving. Through a real sshd on
// loopback: `metrics` over ssh prints the first run before the agent's last
// answer has left the host (a relay holds it back until then), and with an
// agent older than `stream` (a wrapper drops the field) prints the same
// bytes as the local command.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>
#include <tuple>

#include "agent_pipe.h"
#include "loss_run.h"
#include "run_process.h"
#include "ssh_server.h"

using json = nlohmann::json;
using ckpt::test::ProcessResult;

namespace {

const QString kCli = QStringLiteral(CKPT_CLI);

class Agent : public ckpt::test::AgentPipe {
 public:
  Agent() : AgentPipe(kCli) {}
  void send(int id, const std::string& method, const json& params) {
    AgentPipe::send(json{{"id", id}, {"method", method}, {"params", params}});
  }
};

}  // namespace

class TestRemoteStream : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_sweep;
  QStringList m_names;  // the runs, in the order the test names them

  ProcessResult cli(const QStringList& args, const QString& agent) const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("CKPTSCOPE_SSH", m_server.sshCommand());
    env.insert("CKPTSCOPE_REMOTE_CLI", agent);
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(kCli, args);
    return ckpt::test::finishProcess(p, 120000);
  }
  QString remote(const QString& path) const {
    return QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(path);
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_sweep = m_tmp.path() + "/sweep";
    // run_1 is long: the other thread reads several short runs meanwhile.
    for (int i = 0; i < 12; ++i) {
      const QString name = QString("run_%1").arg(i, 2, 10, QChar('0'));
      ckpt::test::writeLossRun(m_sweep + "/" + name, i == 1 ? 200000 : 50 + i, 3.0 + i, 1e5);
      m_names << name;
    }
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
  }
  void cleanupTestCase() { m_server.stop(); }

  void eventsAreTheRunsInOrder() {
    Agent a;
    a.send(1, "hello", {{"protocol", 1}});
    QVERIFY(a.answer(1).back().contains("result"));
    a.send(2, "open", {{"path", m_sweep.toStdString()}});
    QVERIFY(a.answer(2).back().contains("result"));
    const json paths = {m_sweep.toStdString()};
    a.send(3, "metrics", {{"paths", paths}, {"columns", true}});
    const std::vector<json> whole = a.answer(3);
    QCOMPARE(whole.size(), size_t(1));
    const json& runs = whole.back()["result"]["runs"];
    QCOMPARE(runs.size(), size_t(m_names.size()));

    a.send(4, "metrics", {{"paths", paths}, {"columns", true}, {"stream", true}});
    const std::vector<json> streamed = a.answer(4);
    QCOMPARE(streamed.size(), runs.size() + 1);
    for (size_t i = 0; i < runs.size(); ++i) {
      const json& e = streamed[i];
      QVERIFY2(e.contains("event"), e.dump().c_str());
      QCOMPARE(e["event"]["runs"].size(), size_t(1));
      const json& run = e["event"]["runs"][0];
      // The names the test gave, in its order; the points it wrote.
      QCOMPARE(QString::fromStdString(run["name"].get<std::string>()), m_names[int(i)]);
      const int steps = i == 1 ? 200000 : 50 + int(i);
      QCOMPARE(run["series"][0]["columns"]["count"].get<int>(), steps);
      QVERIFY2(run == runs[i], run["name"].get<std::string>().c_str());
    }
    QVERIFY(streamed.back().contains("result"));
    QVERIFY(streamed.back()["result"]["runs"].empty());

    // Without columns too.
    a.send(5, "metrics", {{"paths", paths}, {"stream", true}});
    const std::vector<json> points = a.answer(5);
    QCOMPARE(points.size(), runs.size() + 1);
    QCOMPARE(points[2]["event"]["runs"][0]["series"][0]["points"].size(), size_t(52));
    QCOMPARE(points[2]["event"]["runs"][0]["series"][0]["points"][0][0].get<int>(), 1);
    QCOMPARE(points[2]["event"]["runs"][0]["series"][0]["points"][0][1].get<double>(),
             5.0 - 1 / 1e5);
  }

  void badStreamIsRefused() {
    Agent a;
    a.send(1, "hello", {{"protocol", 1}});
    a.answer(1);
    a.send(2, "open", {{"path", m_sweep.toStdString()}});
    a.answer(2);
    a.send(3, "metrics", {{"paths", {m_sweep.toStdString()}}, {"stream", "yes"}});
    const std::vector<json> bad = a.answer(3);
    QCOMPARE(bad.size(), size_t(1));
    QCOMPARE(bad.back()["error"]["code"].get<std::string>(), std::string("bad_field"));
    QVERIFY(QString::fromStdString(bad.back()["error"]["message"]).contains("stream"));
    a.send(4, "metrics", {{"paths", {(m_sweep + "/run_00").toStdString()}}, {"stream", true}});
    const std::vector<json> good = a.answer(4);
    QCOMPARE(good.size(), size_t(2));
    QCOMPARE(good[0]["event"]["runs"][0]["name"].get<std::string>(), std::string("run_00"));
  }

  // scan, hparams and metrics of one folder asked together share the
  // host's listing of it (serve.h ScanShare); asked again after a run was
  // added, they list it anew and all see the new run.
  void askedTogetherThenAgain() {
    const QString dir = m_tmp.path() + "/together";
    for (int i = 0; i < 3; ++i)
      ckpt::test::writeLossRun(dir + QString("/r%1").arg(i), 20 + i, 2.0 + i, 100.0);
    Agent a;
    a.send(1, "hello", {{"protocol", 1}});
    a.answer(1);
    a.send(2, "open", {{"path", dir.toStdString()}});
    a.answer(2);
    const json paths = {dir.toStdString()};
    const auto ask = [&](int first) {
      // One write: the three arrive together, as the app posts them.
      QByteArray lines;
      for (const auto& [id, method, params] :
           {std::tuple{first, "scan", json{{"path", dir.toStdString()}, {"full", true}}},
            std::tuple{first + 1, "hparams", json{{"paths", paths}}},
            std::tuple{first + 2, "metrics", json{{"paths", paths}, {"stream", true}}}})
        lines += QByteArray::fromStdString(
                     json{{"id", id}, {"method", method}, {"params", params}}.dump()) +
                 "\n";
      a.sendLine(lines.chopped(1));
      QStringList scanned, hparams, streamed;
      const json scan = a.answer(first).back(), read = a.answer(first + 1).back();
      for (const json& r : scan["result"]["scan"]["runs"])
        scanned << QString::fromStdString(r["name"].get<std::string>());
      for (const json& r : read["result"]["runs"])
        hparams << QString::fromStdString(r["run"].get<std::string>());
      const std::vector<json> metrics = a.answer(first + 2);
      for (const json& m : metrics)
        if (m.contains("event")) streamed << QString::fromStdString(m["event"]["runs"][0]["name"]);
      return std::tuple{scanned, hparams, streamed};
    };
    const QStringList three{"r0", "r1", "r2"};
    QCOMPARE(ask(3), (std::tuple{three, three, three}));
    ckpt::test::writeLossRun(dir + "/r3", 5, 9.0, 100.0);
    const QStringList four{"r0", "r1", "r2", "r3"};
    QCOMPARE(ask(6), (std::tuple{four, four, four}));
  }

  // The host's last answer is held until the command has printed the first
  // run: it must print runs as they come, not after the answer.
  void printedAsTheyArrive() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString out = m_tmp.path() + "/printed.json", log = m_tmp.path() + "/relay.log";
    const QString relay = m_tmp.path() + "/relay.py";
    QVERIFY(ckpt::test::writeScript(
        relay,
        QString("#!/usr/bin/python3\n"
                "import os, subprocess, sys, threading, time\n"
                "agent = subprocess.Popen(['%1'] + sys.argv[1:], stdout=subprocess.PIPE)\n"
                "log = open('%2', 'a', buffering=1)\n"
                "for line in agent.stdout:\n"
                "    if b'\"result\":{\"runs\":[]}' in line:\n"
                "        t = time.time()\n"
                "        while time.time() - t < 30:\n"
                "            if os.path.exists('%3') and b'run_00' in open('%3', 'rb').read():\n"
                "                log.write('printed before the answer\\n')\n"
                "                break\n"
                "            time.sleep(0.05)\n"
                "        else:\n"
                "            log.write('nothing printed in 30 s\\n')\n"
                "    sys.stdout.buffer.write(line)\n"
                "    sys.stdout.buffer.flush()\n")
            .arg(kCli, log, out)
            .toUtf8()));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("CKPTSCOPE_SSH", m_server.sshCommand());
    env.insert("CKPTSCOPE_REMOTE_CLI", relay);
    QProcess p;
    p.setProcessEnvironment(env);
    p.setStandardOutputFile(out);
    p.start(kCli, {"metrics", "--json", remote(m_sweep)});
    const ProcessResult r = ckpt::test::finishProcess(p, 120000);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QFile logFile(log);
    QVERIFY(logFile.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(logFile.readAll()), QString("printed before the answer\n"));
    QFile printed(out);
    QVERIFY(printed.open(QIODevice::ReadOnly));
    const ProcessResult local = ckpt::test::runProcess(kCli, {"metrics", "--json", m_sweep});
    QCOMPARE(local.exitCode, 0);
    QVERIFY(printed.readAll() == local.out);
  }

  // An agent older than `stream` ignores it and answers all runs at once.
  void olderAgentSameOutput() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString older = m_tmp.path() + "/older.sh", asked = m_tmp.path() + "/asked.txt";
    QVERIFY(ckpt::test::writeScript(
        older, QString("#!/bin/sh\nsed -u 's/,\"stream\":true//' | tee '%1' | '%2' \"$@\"\n")
                   .arg(asked, kCli)
                   .toUtf8()));
    for (const QString& format : {QString("--json"), QString("--csv"), QString()}) {
      QStringList args{"metrics"};
      if (!format.isEmpty()) args << format;
      const ProcessResult local = ckpt::test::runProcess(kCli, args + QStringList{m_sweep});
      QCOMPARE(local.exitCode, 0);
      for (const QString& agent : {older, kCli}) {
        const ProcessResult r = cli(args + QStringList{remote(m_sweep)}, agent);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.out == local.out, qPrintable(format + " " + agent));
      }
      QFile f(asked);
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QByteArray requests = f.readAll();
      QVERIFY(requests.contains("\"method\":\"metrics\""));
      QVERIFY(!requests.contains("\"stream\""));
    }
  }
};

QTEST_GUILESS_MAIN(TestRemoteStream)
#include "tst_remote_stream.moc"
