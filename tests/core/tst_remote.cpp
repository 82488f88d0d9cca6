// The agent (`ckptscope-cli serve --stdio`, docs/REMOTE.md) spoken to over a
// pipe, and the read commands on ssh:// paths through a real OpenSSH server
// this test starts on loopback with its own keys and configs: the remote
// output must be the local output, byte for byte.
#include <signal.h>
#include <unistd.h>

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include "agent_pipe.h"
#include "run_process.h"
#include "ssh_server.h"

using json = nlohmann::json;
using ckpt::test::ProcessResult;

namespace {

const QString kCli = QStringLiteral(CKPT_CLI);
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);

void writeFile(const QString& path, const QByteArray& bytes, bool append = false) {
  QFile f(path);
  QVERIFY2(f.open(append ? QIODevice::Append : QIODevice::WriteOnly), qPrintable(path));
  f.write(bytes);
}

// One agent on a pipe (in `cwd`, where relative paths are read from).
class Agent : public ckpt::test::AgentPipe {
 public:
  explicit Agent(const QString& cwd = {}) : AgentPipe(kCli, cwd) {}
};

// A safetensors file (8-byte little-endian header length, JSON header,
// data) holding one float32 tensor of `n` elements, its bytes a hole: big
// enough that statistics take seconds, taking no disk.
void writeSparseSafetensors(const QString& path, qint64 n) {
  QByteArray header = QByteArray::fromStdString(
      json{{"big", {{"dtype", "F32"}, {"shape", {n}}, {"data_offsets", {0, n * 4}}}}}.dump());
  while (header.size() % 8) header += ' ';
  QByteArray len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = char((quint64(header.size()) >> (8 * i)) & 0xFF);
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(len + header);
  QVERIFY(f.resize(8 + header.size() + n * 4));
}

// The processes whose parent is `pid` and that have not been reaped yet.
QStringList childrenOf(qint64 pid) {
  QStringList out;
  for (const QString& p : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool numeric = false;
    if (p.toLongLong(&numeric) <= 0 || !numeric) continue;
    QFile f(QStringLiteral("/proc/") + p + "/stat");
    if (!f.open(QIODevice::ReadOnly)) continue;
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
    const QByteArray stat = f.readAll();
    const QList<QByteArray> fields = stat.mid(stat.lastIndexOf(')') + 2).split(' ');
    if (fields.size() > 1 && fields[1].toLongLong() == pid) out << p;
  }
  return out;
}

}  // namespace

class TestRemote : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;  // sshd on loopback, its keys and configs (ssh_server.h)
  QString m_sshdHome;              // keys, configs
  int m_port = 0;
  QString m_skip;  // why the ssh tests cannot run

  QProcessEnvironment sshEnv(const QString& config = {}, const QString& remoteCli = kCli) const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("CKPTSCOPE_SSH",
               "ssh -F " + (config.isEmpty() ? m_sshdHome + "/ssh_config" : config));
    env.insert("CKPTSCOPE_REMOTE_CLI", remoteCli);
    return env;
  }
  ProcessResult cli(const QStringList& args,
                    const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(kCli, args);
    return ckpt::test::finishProcess(p, 120000);
  }
  QString remote(const QString& path) const {
    return QString("ssh://127.0.0.1:%1%2").arg(m_port).arg(path);
  }

 private slots:
  void initTestCase();
  void cleanupTestCase();

  // ---- the protocol over a pipe
  void helloAndVersion();
  void badRequestsKeepServing();
  void rootConfinement();
  void cancelLongRequest();
  void cancelReportStopsItsCommand();
  void reportPathsThatLookLikeOptions();
  void statsAndSlice();
  void metricsSinceOffset();
  void metricsSinceWandbHistory();
  void watchReportsNewCheckpoint();
  void watchReportsRecentFiles();
  void clientGoneEndsAgent();

  // ---- through a real sshd
  void remoteEqualsLocal_data();
  void remoteEqualsLocal();
  void scpFormAndLocalNamesWithAColon();
  void oddPathRunsNothing();
  void missingAgentSaysHowToInstall();
  void tooOldAgentNamesBothVersions();
  void agentWithoutReportSaysAddJson();
  void unknownHostKeySaysWhatToDo();
  void droppedConnectionFails();
};

void TestRemote::initTestCase() {
  QVERIFY(m_tmp.isValid());
  m_skip = ckpt::test::SshServer::unavailable();
  if (!m_skip.isEmpty()) return;
  QString why;
  QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
  m_sshdHome = m_server.home();
  m_port = m_server.port();
}

void TestRemote::cleanupTestCase() {
  m_server.stop();
}

// ---------------------------------------------------------------- protocol

void TestRemote::helloAndVersion() {
  const ProcessResult v = ckpt::test::runProcess(kCli, {"--version"});
  const QByteArray firstLine = v.out.split('\n').front();  // "ckptscope-cli X.Y.Z"
  Agent a;
  const json r = a.call(1, "hello", {{"protocol", 1}, {"client", "test"}});
  QCOMPARE(r["id"].get<int>(), 1);
  QCOMPARE(r["result"]["protocol"].get<int>(), 1);
  QCOMPARE(QByteArray("ckptscope-cli ") + QByteArray::fromStdString(r["result"]["version"]),
           firstLine);
}

void TestRemote::badRequestsKeepServing() {
  Agent a;
  // Before hello: refused, and the agent keeps going.
  QCOMPARE(a.call(1, "scan", {{"path", "/"}})["error"]["code"], "no_hello");
  QCOMPARE(a.call(2, "hello")["result"]["protocol"], 1);
  a.sendLine("this is not json");
  json r = a.next();
  QVERIFY(r["id"].is_null());
  QCOMPARE(r["error"]["code"], "parse_error");
  QVERIFY(r["error"]["message"].get<std::string>().find("line 3") != std::string::npos);
  QCOMPARE(a.call(3, "frobnicate")["error"]["code"], "unknown_method");
  r = a.call(4, "info");
  QCOMPARE(r["error"]["code"], "missing_field");
  QVERIFY(r["error"]["message"].get<std::string>().rfind("path", 0) == 0);
  QCOMPARE(a.call(5, "info", {{"path", 42}})["error"]["code"], "bad_field");
  a.sendLine(R"({"method": "hello"})");
  QCOMPARE(a.next()["error"]["code"], "invalid_request");
  // A line past the limit (1 MiB) is dropped, with one error.
  a.sendLine(R"({"id": 6, "method": "open", "params": {"path": ")" + QByteArray(3 << 20, 'x') +
             R"("}})");
  r = a.next();
  QCOMPARE(r["error"]["code"], "line_too_long");
  QVERIFY(r["id"].is_null());
  // And the agent still answers.
  r = a.call(7, "open", {{"path", m_tmp.path().toStdString()}});
  QCOMPARE(r["id"].get<int>(), 7);
  QCOMPARE(r["result"]["root"].get<std::string>(),
           QFileInfo(m_tmp.path()).canonicalFilePath().toStdString());
}

void TestRemote::rootConfinement() {
  const QString root = m_tmp.path() + "/confined", outside = m_tmp.path() + "/outside";
  QVERIFY(QDir().mkpath(root + "/run"));
  QVERIFY(QDir().mkpath(outside));
  QVERIFY(QFile::copy(kFixtures + "/experiment/checkpoints/tiny-dpo/tiny-dpo_step20.pt",
                      outside + "/secret.pt"));
  QVERIFY(QFile::link(outside, root + "/escape"));
  QVERIFY(QFile::link(outside + "/secret.pt", root + "/run/secret.pt"));
  Agent a;
  a.call(1, "hello");
  // Nothing is open yet: nothing is readable.
  QCOMPARE(a.call(2, "scan", {{"path", root.toStdString()}})["error"]["code"], "outside_roots");
  QVERIFY(a.call(3, "open", {{"path", root.toStdString()}}).contains("result"));
  QVERIFY(a.call(4, "scan", {{"path", (root + "/run").toStdString()}}).contains("result"));
  // Hyperparameters: of folders under a root, named in `paths`.
  QCOMPARE(a.call(41, "hparams",
                  {{"paths", json::array({(root + "/escape").toStdString()})}})["error"]["code"],
           "outside_roots");
  QCOMPARE(a.call(42, "hparams", json::object())["error"]["code"], "missing_field");
  const json hp = a.call(43, "hparams", {{"paths", json::array({(root + "/run").toStdString()})}});
  QVERIFY2(hp["result"]["runs"].size() == 1 &&
               hp["result"]["runs"][0]["path"] == (root + "/run").toStdString(),
           hp.dump().c_str());
  for (const QString& p : {root + "/../outside", root + "/run/../../outside/secret.pt",
                           root + "/escape", root + "/escape/secret.pt", root + "/run/secret.pt"}) {
    const json r = a.call(5, "info", {{"path", p.toStdString()}});
    QVERIFY2(r["error"]["code"] == "outside_roots", qPrintable(p));
    QVERIFY(r["error"]["message"].get<std::string>().find(p.toStdString()) != std::string::npos);
  }
  // A path that does not exist is named.
  const json r = a.call(6, "info", {{"path", (root + "/nope.pt").toStdString()}});
  QCOMPARE(r["error"]["code"], "not_found");
  QVERIFY(r["error"]["message"].get<std::string>().find("nope.pt") != std::string::npos);

  // A text report reads under the same roots, and runs only the read commands.
  auto report = [&](int id, const std::string& command, const json& paths) {
    return a.call(id, "report", {{"command", command}, {"paths", paths}});
  };
  json rep = report(7, "info", json::array({(root + "/run/secret.pt").toStdString()}));
  QCOMPARE(rep["error"]["code"], "outside_roots");
  rep = report(8, "prune", json::array({root.toStdString()}));
  QCOMPARE(rep["error"]["code"], "bad_field");
  QVERIFY2(rep["error"]["message"].get<std::string>().rfind("command", 0) == 0, rep.dump().c_str());
  rep = report(9, "diff", json::array({(root + "/run").toStdString()}));
  QCOMPARE(rep["error"]["code"], "bad_field");
  QVERIFY2(rep["error"]["message"].get<std::string>().rfind("paths", 0) == 0, rep.dump().c_str());
  // What it sends back is what the command prints here.
  rep = report(10, "ls", json::array({root.toStdString()}));
  QVERIFY2(rep.contains("result"), rep.dump().c_str());
  const ProcessResult local = ckpt::test::runProcess(kCli, {"ls", root});
  QCOMPARE(rep["result"]["exit"].get<int>(), local.exitCode);
  QCOMPARE(QByteArray::fromStdString(rep["result"]["stdout"].get<std::string>()), local.out);
  QCOMPARE(QByteArray::fromStdString(rep["result"]["stderr"].get<std::string>()), local.err);
  QVERIFY(local.out.contains(" in "));  // "N checkpoints in M runs"
}

void TestRemote::cancelLongRequest() {
  const QString dir = m_tmp.path() + "/big";
  QVERIFY(QDir().mkpath(dir));
  writeSparseSafetensors(dir + "/big.safetensors", qint64(1) << 30);  // 4 GiB of floats
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", dir.toStdString()}});
  a.send(json{{"id", "long"},
              {"method", "stats"},
              {"params", {{"path", (dir + "/big.safetensors").toStdString()}, {"tensor", "big"}}}});
  // It is running once it reports progress.
  json m = a.next();
  QCOMPARE(m["id"], "long");
  QVERIFY2(m.contains("progress"), m.dump().c_str());
  QVERIFY(m["progress"]["total"].get<uint64_t>() >= (uint64_t(1) << 30));
  QElapsedTimer t;
  t.start();
  a.send(json{{"id", 3}, {"method", "cancel"}, {"params", {{"id", "long"}}}});
  bool cancelAnswered = false, longAnswered = false;
  while (!(cancelAnswered && longAnswered)) {
    m = a.next(10000);
    QVERIFY2(!m.is_null(), "no answer to the cancel");
    if (m["id"] == 3) {
      QCOMPARE(m["result"]["cancelled"], true);
      cancelAnswered = true;
    } else if (m["id"] == "long" && !m.contains("progress")) {
      QCOMPARE(m["error"]["code"], "cancelled");
      longAnswered = true;
    }
  }
  QVERIFY2(t.elapsed() < 3000, qPrintable(QString("cancel took %1 ms").arg(t.elapsed())));
  // Serving goes on; cancelling what is not running says so.
  m = a.call(4, "cancel", {{"id", "long"}});
  QVERIFY2(m["id"] == 4 && m["result"]["cancelled"] == false, m.dump().c_str());
  QCOMPARE(a.call(5, "hello")["result"]["protocol"], 1);
}

void TestRemote::cancelReportStopsItsCommand() {
  const QString dir = m_tmp.path() + "/bigreport";
  QVERIFY(QDir().mkpath(dir));
  writeSparseSafetensors(dir + "/a.safetensors", qint64(1) << 30);  // 4 GiB of floats each
  writeSparseSafetensors(dir + "/b.safetensors", qint64(1) << 30);
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", dir.toStdString()}});
  const json paths =
      json::array({(dir + "/a.safetensors").toStdString(), (dir + "/b.safetensors").toStdString()});
  a.send(json{
      {"id", "long"}, {"method", "report"}, {"params", {{"command", "diff"}, {"paths", paths}}}});
  // The diff runs as the agent's child.
  const qint64 pid = a.process().processId();
  QElapsedTimer t;
  t.start();
  while (childrenOf(pid).isEmpty() && t.elapsed() < 10000) QTest::qWait(10);
  QVERIFY2(!childrenOf(pid).isEmpty(), "the report started no command");
  t.restart();
  a.send(json{{"id", 3}, {"method", "cancel"}, {"params", {{"id", "long"}}}});
  bool cancelAnswered = false, longAnswered = false;
  while (!(cancelAnswered && longAnswered)) {
    const json m = a.next(10000);
    QVERIFY2(!m.is_null(), "no answer to the cancel");
    if (m["id"] == 3) {
      QCOMPARE(m["result"]["cancelled"], true);
      cancelAnswered = true;
    } else if (m["id"] == "long") {
      QCOMPARE(m["error"]["code"], "cancelled");
      longAnswered = true;
    }
  }
  QVERIFY2(t.elapsed() < 3000, qPrintable(QString("cancel took %1 ms").arg(t.elapsed())));
  // The command is gone (killed and reaped) by the time the answer leaves.
  QVERIFY2(childrenOf(pid).isEmpty(), qPrintable(childrenOf(pid).join(' ')));
  QCOMPARE(a.call(4, "hello")["result"]["protocol"], 1);
}

void TestRemote::reportPathsThatLookLikeOptions() {
  // Files named as the commands' options: the agent gives the paths after
  // "--", so each is read as a file (relative names from the agent's
  // working folder, where they were checked against the roots).
  const QString dir = m_tmp.path() + "/dashes";
  QVERIFY(QDir().mkpath(dir));
  const QString src = kFixtures + "/experiment/checkpoints/tiny-dpo/tiny-dpo_step20.pt";
  for (const char* name : {"--top", "--json", "-r"}) QVERIFY(QFile::copy(src, dir + "/" + name));
  Agent a(dir);
  a.call(1, "hello");
  QVERIFY(a.call(2, "open", {{"path", "."}}).contains("result"));
  struct Case {
    std::string command;
    std::vector<std::string> paths;
  };
  const std::vector<Case> cases = {{"info", {"--json"}},
                                   {"verify", {"--top"}},
                                   {"diff", {"--top", "--json"}},
                                   {"scan", {"-r", "--json"}}};
  int id = 3;
  for (const Case& c : cases) {
    QStringList local{QString::fromStdString(c.command), "--"};
    for (const std::string& p : c.paths) local << QString::fromStdString(p);
    const ProcessResult l = ckpt::test::runProcess(kCli, local, dir);
    const json r = a.call(id++, "report", {{"command", c.command}, {"paths", c.paths}});
    QVERIFY2(r.contains("result"), r.dump().c_str());
    QCOMPARE(r["result"]["exit"].get<int>(), l.exitCode);
    QCOMPARE(QByteArray::fromStdString(r["result"]["stdout"].get<std::string>()), l.out);
    QCOMPARE(QByteArray::fromStdString(r["result"]["stderr"].get<std::string>()), l.err);
    QVERIFY2(l.out.contains(QByteArray::fromStdString(c.paths.back())), l.out.constData());
  }
}

void TestRemote::statsAndSlice() {
  // Four float32 values whose statistics are worked out by hand.
  const QString dir = m_tmp.path() + "/small";
  QVERIFY(QDir().mkpath(dir));
  QByteArray header = QByteArray::fromStdString(
      json{{"w", {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}}}}.dump());
  while (header.size() % 8) header += ' ';
  QByteArray file(8, '\0');
  file[0] = char(header.size());
  file += header;
  for (const float v : {1.0f, -2.0f, 3.0f, 4.0f})
    file += QByteArray(reinterpret_cast<const char*>(&v), 4);
  writeFile(dir + "/w.safetensors", file);
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", dir.toStdString()}});
  const std::string path = (dir + "/w.safetensors").toStdString();
  json r = a.call(3, "stats", {{"path", path}, {"tensor", "w"}});
  QVERIFY2(r.contains("result"), r.dump().c_str());
  const json& s = r["result"]["stats"];
  QCOMPARE(s["count"].get<int>(), 4);
  QCOMPARE(s["min"].get<double>(), -2.0);
  QCOMPARE(s["max"].get<double>(), 4.0);
  QCOMPARE(s["mean"].get<double>(), 1.5);
  // sample std: sum (x - 1.5)^2 = 0.25 + 12.25 + 2.25 + 6.25 = 21, / 3 = 7
  QVERIFY(std::abs(s["std"].get<double>() - std::sqrt(7.0)) < 1e-12);
  QVERIFY(std::abs(s["l2norm"].get<double>() - std::sqrt(30.0)) < 1e-12);
  r = a.call(4, "slice", {{"path", path}, {"tensor", 0}, {"first", 1}, {"count", 2}});
  QCOMPARE(QByteArray::fromStdString(r["result"].dump()),
           QByteArray(R"({"first":1,"numel":4,"tensor":0,"values":[-2.0,3.0]})"));
  // Past the end: what there is; over the limit: refused, naming the field.
  r = a.call(5, "slice", {{"path", path}, {"tensor", "w"}, {"first", 3}, {"count", 10}});
  QCOMPARE(r["result"]["values"].size(), size_t(1));
  r = a.call(6, "slice", {{"path", path}, {"tensor", "w"}, {"count", 65537}});
  QCOMPARE(r["error"]["code"], "bad_field");
  QVERIFY(r["error"]["message"].get<std::string>().rfind("count", 0) == 0);
  r = a.call(7, "stats", {{"path", path}, {"tensor", "nope"}});
  QCOMPARE(r["error"]["code"], "not_found");
  r = a.call(8, "stats", {{"path", path}, {"tensor", 1}});
  QCOMPARE(r["error"]["code"], "bad_field");
}

void TestRemote::metricsSinceOffset() {
  const QString run = m_tmp.path() + "/follow/run-a";
  QVERIFY(QDir().mkpath(run));
  const QString file = run + "/metrics.jsonl";
  writeFile(file, "{\"step\": 1, \"loss\": 4.0}\n{\"step\": 2, \"loss\": 3.5}\n");
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", (m_tmp.path() + "/follow").toStdString()}});
  json r = a.call(3, "metrics", {{"paths", {file.toStdString()}}});
  QVERIFY2(r.contains("result"), r.dump().c_str());
  const json& runJ = r["result"]["runs"][0];
  const uint64_t end = runJ["read_ends"][file.toStdString()];
  QCOMPARE(end, uint64_t(QFileInfo(file).size()));
  QCOMPARE(runJ["series"][0]["points"].size(), size_t(2));
  // The run goes on: three lines appended, one of them not finished yet.
  writeFile(
      file,
      "{\"step\": 3, \"loss\": 3.25}\n{\"step\": 4, \"loss\": 3.0, \"lr\": 0.5}\n{\"step\": 5,",
      /*append=*/true);
  r = a.call(4, "metrics", {{"since", {{file.toStdString(), end}}}});
  QVERIFY2(r.contains("result"), r.dump().c_str());
  const json& f = r["result"]["files"][0];
  QCOMPARE(f["from"].get<uint64_t>(), end);
  // Only the two whole new lines, read up to the end of the second.
  const QByteArray all = [&] {
    QFile in(file);
    in.open(QIODevice::ReadOnly);
    return in.readAll();
  }();
  QCOMPARE(f["to"].get<uint64_t>(), uint64_t(all.lastIndexOf('\n') + 1));
  const json expected = json::array({{{"metric", "loss"}, {"point", {3, 3.25, nullptr, nullptr}}},
                                     {{"metric", "loss"}, {"point", {4, 3.0, nullptr, nullptr}}},
                                     {{"metric", "lr"}, {"point", {4, 0.5, nullptr, nullptr}}}});
  QCOMPARE(QByteArray::fromStdString(f["points"].dump()),
           QByteArray::fromStdString(expected.dump()));
  // Nothing new: nothing sent.
  r = a.call(5, "metrics", {{"since", {{file.toStdString(), f["to"]}}}});
  QVERIFY(r["result"]["files"][0]["points"].empty());
}

void TestRemote::metricsSinceWandbHistory() {
  // A run folder as wandb before 0.10 leaves it: its rows keyed by _step.
  const QString run = m_tmp.path() + "/oldwandb/wandb/run-20200301_101500-abc123";
  QVERIFY(QDir().mkpath(run));
  const QString file = run + "/wandb-history.jsonl";
  writeFile(file,
            "{\"loss\": 2.5, \"_runtime\": 1.0, \"_timestamp\": 1583057701.5, \"_step\": 0}\n");
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", (m_tmp.path() + "/oldwandb").toStdString()}});
  json r = a.call(3, "metrics", {{"paths", {(m_tmp.path() + "/oldwandb").toStdString()}}});
  QVERIFY2(r.contains("result"), r.dump().c_str());
  const uint64_t end = r["result"]["runs"][0]["read_ends"][file.toStdString()];
  QCOMPARE(end, uint64_t(QFileInfo(file).size()));
  // One whole row more, and one still being written.
  writeFile(file,
            "{\"loss\": 2.0, \"_runtime\": 2.0, \"_timestamp\": 1583057702.5, \"_step\": 1}\n"
            "{\"loss\": 1.",
            /*append=*/true);
  r = a.call(4, "metrics", {{"since", {{file.toStdString(), end}}}});
  QVERIFY2(r.contains("result"), r.dump().c_str());
  const json& f = r["result"]["files"][0];
  const json expected =
      json::array({{{"metric", "loss"}, {"point", {1, 2.0, 1583057702.5, nullptr}}}});
  QCOMPARE(QByteArray::fromStdString(f["points"].dump()),
           QByteArray::fromStdString(expected.dump()));
  QVERIFY2(f["problems"].empty(), f.dump().c_str());
  const QByteArray all = [&] {
    QFile in(file);
    in.open(QIODevice::ReadOnly);
    return in.readAll();
  }();
  QCOMPARE(f["to"].get<uint64_t>(), uint64_t(all.lastIndexOf('\n') + 1));  // the cut row waits
}

void TestRemote::watchReportsNewCheckpoint() {
  const QString dir = m_tmp.path() + "/watched/run";
  QVERIFY(QDir().mkpath(dir));
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", (m_tmp.path() + "/watched").toStdString()}});
  a.send(json{
      {"id", "w"},
      {"method", "watch"},
      {"params", {{"path", (m_tmp.path() + "/watched").toStdString()}, {"interval_ms", 100}}}});
  json m = a.next();
  QCOMPARE(m["id"], "w");
  QCOMPARE(m["event"]["files"], 0);
  // Requests are still answered while the watch runs.
  QCOMPARE(a.call(3, "hello")["id"], 3);
  QVERIFY(QFile::copy(kFixtures + "/experiment/checkpoints/tiny-dpo/tiny-dpo_step20.pt",
                      dir + "/run_step20.pt"));
  m = a.next(5000);
  QCOMPARE(m["id"], "w");
  QCOMPARE(QByteArray::fromStdString(m["event"]["added"].dump()),
           QByteArray::fromStdString(json::array({(dir + "/run_step20.pt").toStdString()}).dump()));
  a.send(json{{"id", 4}, {"method", "cancel"}, {"params", {{"id", "w"}}}});
  bool stopped = false;
  for (int i = 0; i < 2; ++i) {
    m = a.next(5000);
    if (m["id"] == "w") stopped = m["result"]["stopped"] == true;
  }
  QVERIFY(stopped);
}

// `recent_ms`: a file written since the client's listing (its time within
// those ms of the host's clock) is reported at the watch's first look; an
// older one is not.
void TestRemote::watchReportsRecentFiles() {
  const QString dir = m_tmp.path() + "/recent";
  QVERIFY(QDir().mkpath(dir));
  writeFile(dir + "/old.log", "a\n");
  writeFile(dir + "/new.log", "b\n");
  QFile old(dir + "/old.log");
  QVERIFY(old.open(QIODevice::ReadWrite));
  QVERIFY(old.setFileTime(QDateTime::currentDateTime().addSecs(-3600),
                          QFileDevice::FileModificationTime));
  old.close();
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", dir.toStdString()}});
  a.send(json{
      {"id", "w"},
      {"method", "watch"},
      {"params", {{"path", dir.toStdString()}, {"interval_ms", 100000}, {"recent_ms", 60000}}}});
  json m = a.next();
  QCOMPARE(m["event"]["files"], 2);
  m = a.next(5000);
  QCOMPARE(m["id"], "w");
  QCOMPARE(QByteArray::fromStdString(m["event"]["changed"].dump()),
           QByteArray::fromStdString(json::array({(dir + "/new.log").toStdString()}).dump()));
  QVERIFY(m["event"]["added"].empty() && m["event"]["removed"].empty());
  QCOMPARE(a.call(3, "watch", {{"path", dir.toStdString()}, {"recent_ms", -1}})["error"]["code"],
           "bad_field");
}

void TestRemote::clientGoneEndsAgent() {
  Agent a;
  a.call(1, "hello");
  a.call(2, "open", {{"path", m_tmp.path().toStdString()}});
  a.send(json{{"id", 3},
              {"method", "watch"},
              {"params", {{"path", m_tmp.path().toStdString()}, {"interval_ms", 60000}}}});
  QCOMPARE(a.next()["id"], 3);
  a.process().closeWriteChannel();
  QVERIFY2(a.process().waitForFinished(5000), "the agent outlived its client");
  QCOMPARE(a.process().exitCode(), 0);
}

// ---------------------------------------------------------------- over ssh

void TestRemote::remoteEqualsLocal_data() {
  QTest::addColumn<QStringList>("args");  // "@" before a path: given remote as ssh://
  const QString e = kFixtures + "/experiment", d = kFixtures + "/diff";
  QTest::newRow("ls") << QStringList{"ls", "--json", "@" + e + "/checkpoints"};
  QTest::newRow("info") << QStringList{"info", "--json",
                                       "@" + e + "/checkpoints/tiny-sft/tiny-sft_step30.pt"};
  QTest::newRow("metrics json") << QStringList{"metrics", "--json", "@" + e};
  QTest::newRow("metrics csv") << QStringList{"metrics", "--csv", "@" + e};
  QTest::newRow("metrics text") << QStringList{"metrics", "@" + e + "/checkpoints"};
  QTest::newRow("scan") << QStringList{"scan", "--json", "@" + kFixtures + "/safety"};
  QTest::newRow("scan recursive") << QStringList{"scan", "--json", "--recursive", "@" + e};
  QTest::newRow("diff") << QStringList{"diff", "--json", "@" + d + "/perturbed/a.pt",
                                       "@" + d + "/perturbed/b.pt"};
  QTest::newRow("diff top") << QStringList{
      "diff", "--json", "--top", "3", "@" + d + "/plain/a.pt", "@" + d + "/plain/b.pt"};
  // Names that are not UTF-8 come back as the same bytes.
  QTest::newRow("names ls") << QStringList{"ls", "--json", "@" + kFixtures + "/json_names/exp"};
  QTest::newRow("names info") << QStringList{"info", "--json",
                                             "@" + kFixtures + "/json_names/names.pt"};
  // A command that fails fails the same way (its message on stderr too).
  QTest::newRow("unreadable") << QStringList{"info", "--json",
                                             "@" + kFixtures + "/json_names/unreadable.pt"};
  QTest::newRow("missing") << QStringList{"ls", "--json", "@" + e + "/no-such-folder"};
  // Text reports (a tag ending in " text"): the host's own output, its
  // stderr and exit status too.
  const QString step30 = e + "/checkpoints/tiny-sft/tiny-sft_step30.pt";
  QTest::newRow("ls text") << QStringList{"ls", "@" + e + "/checkpoints"};
  QTest::newRow("info text") << QStringList{"info", "@" + step30};
  QTest::newRow("verify text") << QStringList{"verify", "@" + step30};
  QTest::newRow("diff text") << QStringList{"diff", "@" + d + "/perturbed/a.pt",
                                            "@" + d + "/perturbed/b.pt"};
  QTest::newRow("diff top text") << QStringList{"diff", "--top", "3", "@" + d + "/plain/a.pt",
                                                "@" + d + "/plain/b.pt"};
  QTest::newRow("scan text") << QStringList{"scan", "@" + kFixtures + "/safety"};
  QTest::newRow("scan recursive text") << QStringList{"scan", "--recursive", "@" + e};
  QTest::newRow("names ls text") << QStringList{"ls", "@" + kFixtures + "/json_names/exp"};
  QTest::newRow("names info text") << QStringList{"info", "@" + kFixtures + "/json_names/names.pt"};
  QTest::newRow("unreadable text")
      << QStringList{"info", "@" + kFixtures + "/json_names/unreadable.pt"};
  QTest::newRow("unreadable verify text")
      << QStringList{"verify", "@" + kFixtures + "/json_names/unreadable.pt"};
}

void TestRemote::remoteEqualsLocal() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  QFETCH(QStringList, args);
  QStringList local, remoteArgs;
  for (const QString& a : args) {
    local << (a.startsWith('@') ? a.mid(1) : a);
    remoteArgs << (a.startsWith('@') ? remote(a.mid(1)) : a);
  }
  const ProcessResult l = cli(local);
  const ProcessResult r = cli(remoteArgs, sshEnv());
  QVERIFY2(l.exitCode >= 0, l.err.constData());
  QCOMPARE(r.exitCode, l.exitCode);
  QVERIFY(!l.out.isEmpty() || l.exitCode != 0);
  QCOMPARE(r.out, l.out);
  const QString tag(QTest::currentDataTag());
  if (l.exitCode == 1 && tag == "unreadable") QCOMPARE(r.err, l.err);
  // The host is given the path the local command is given (ssh://...'s
  // path part), so even messages that name it are the same.
  if (tag.endsWith(" text")) QCOMPARE(r.err, l.err);
  if (tag.startsWith("unreadable")) QCOMPARE(l.exitCode, 1);
  if (QString(QTest::currentDataTag()) == "missing")
    QVERIFY2(r.err.contains("no-such-folder"), r.err.constData());
}

void TestRemote::scpFormAndLocalNamesWithAColon() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const QString dir = kFixtures + "/experiment/checkpoints";
  const ProcessResult l = cli({"ls", "--json", dir});
  // host:/path (the port from the ssh config) is remote ...
  const ProcessResult r = cli({"ls", "--json", "127.0.0.1:" + dir}, sshEnv());
  QCOMPARE(r.exitCode, 0);
  QCOMPARE(r.out, l.out);
  // ... unless a local path of that name exists: then it is read here (ssh
  // is not even started: it is `false` in this run).
  const QString cwd = m_tmp.path() + "/colon";
  QVERIFY(QDir().mkpath(cwd + "/127.0.0.1:run"));
  QVERIFY(QFile::copy(kFixtures + "/experiment/checkpoints/tiny-dpo/tiny-dpo_step20.pt",
                      cwd + "/127.0.0.1:run/tiny_step20.pt"));
  QProcessEnvironment env = sshEnv();
  env.insert("CKPTSCOPE_SSH", "false");
  QProcess p;
  p.setProcessEnvironment(env);
  p.setWorkingDirectory(cwd);
  p.start(kCli, {"ls", "--json", "127.0.0.1:run"});
  const ProcessResult local = ckpt::test::finishProcess(p, 60000);
  QVERIFY2(local.exitCode == 0, local.err.constData());
  QVERIFY(local.out.contains("tiny_step20.pt"));
}

void TestRemote::oddPathRunsNothing() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const QString dir = m_tmp.path() + "/odd/run 'one' \"two\"; touch PWNED; $(touch PWNED2)";
  QVERIFY(QDir().mkpath(dir));
  QVERIFY(QFile::copy(kFixtures + "/experiment/checkpoints/tiny-dpo/tiny-dpo_step20.pt",
                      dir + "/tiny_step20.pt"));
  const ProcessResult l = cli({"ls", "--json", m_tmp.path() + "/odd"});
  const ProcessResult r = cli({"ls", "--json", remote(m_tmp.path() + "/odd")}, sshEnv());
  QCOMPARE(r.exitCode, 0);
  QCOMPARE(r.out, l.out);
  QVERIFY(r.out.contains("PWNED"));  // the name is listed ...
  const ProcessResult info = cli({"info", "--json", remote(dir + "/tiny_step20.pt")}, sshEnv());
  QCOMPARE(info.exitCode, 0);
  // The text reports: the host runs the command with the name as one word.
  for (const QStringList& args :
       {QStringList{"info", dir + "/tiny_step20.pt"}, QStringList{"ls", m_tmp.path() + "/odd"}}) {
    const ProcessResult lt = cli(args);
    const ProcessResult rt = cli({args[0], remote(args[1])}, sshEnv());
    QCOMPARE(rt.exitCode, 0);
    QCOMPARE(rt.out, lt.out);
    QCOMPARE(rt.err, lt.err);
    QVERIFY(rt.out.contains("PWNED"));
  }
  // ... and nothing ran: not here, not in the home folder where ssh starts.
  for (const QString& where : {QDir::currentPath(), QDir::homePath(), m_tmp.path() + "/odd"}) {
    QVERIFY2(!QFile::exists(where + "/PWNED"), qPrintable(where));
    QVERIFY2(!QFile::exists(where + "/PWNED2"), qPrintable(where));
  }
}

void TestRemote::missingAgentSaysHowToInstall() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const ProcessResult r = cli({"ls", "--json", remote(kFixtures + "/experiment")},
                              sshEnv({}, m_tmp.path() + "/not-installed/ckptscope-cli"));
  QCOMPARE(r.exitCode, 1);
  QVERIFY(r.out.isEmpty());
  QVERIFY2(r.err.contains("ckptscope-cli was not found there"), r.err.constData());
  QVERIFY2(r.err.contains("sudo apt install ./ckptscope_"), r.err.constData());
  QVERIFY2(r.err.contains("--remote-cli"), r.err.constData());
}

// A stand-in agent on the host: answers hello as `mode` says, then leaves.
static QString fakeAgent(const QString& dir, const QString& mode) {
  const QString path = dir + "/fake-agent-" + mode;
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(QString("#!" CKPT_TORCH_PYTHON "\n"
                  "import json, sys\n"
                  "for line in sys.stdin:\n"
                  "    req = json.loads(line)\n"
                  "    if '%1' == 'no-report' and req['method'] == 'open':\n"
                  "        print(json.dumps({'id': req['id'], 'result': {'root': "
                  "req['params']['path']}}), flush=True)\n"
                  "        continue\n"
                  "    if '%1' == 'no-report' and req['method'] != 'hello':\n"
                  "        print(json.dumps({'id': req['id'], 'error': {'code': "
                  "'unknown_method', 'message': 'unknown method'}}), flush=True)\n"
                  "        continue\n"
                  "    if req['method'] != 'hello' or '%1' == 'drop-at-once':\n"
                  "        sys.exit(0)  # the connection drops before the answer\n"
                  "    proto = 0 if '%1' == 'old' else 1\n"
                  "    print(json.dumps({'id': req['id'], 'result': {'protocol': proto,\n"
                  "          'version': '0.0.9', 'program': 'ckptscope-cli'}}), flush=True)\n")
              .arg(mode)
              .toUtf8());
  f.close();
  f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

void TestRemote::tooOldAgentNamesBothVersions() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  const ProcessResult r = cli({"ls", "--json", remote(kFixtures + "/experiment")},
                              sshEnv({}, fakeAgent(m_tmp.path(), "old")));
  QCOMPARE(r.exitCode, 1);
  QVERIFY(r.out.isEmpty());
  QVERIFY2(r.err.contains("ckptscope-cli 0.0.9 (agent protocol 0)"), r.err.constData());
  QVERIFY2(r.err.contains("needs protocol 1"), r.err.constData());
}

void TestRemote::agentWithoutReportSaysAddJson() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // An agent of protocol 1 from before `report`: text reports say what to
  // do instead, in one line.
  const QString file = kFixtures + "/experiment/checkpoints/tiny-dpo/tiny-dpo_step20.pt";
  const QProcessEnvironment env = sshEnv({}, fakeAgent(m_tmp.path(), "no-report"));
  ProcessResult r = cli({"info", remote(file)}, env);
  QCOMPARE(r.exitCode, 1);
  QVERIFY(r.out.isEmpty());
  QVERIFY2(r.err.contains("add --json, or update ckptscope-cli on the host"), r.err.constData());
  QCOMPARE(r.err.count('\n'), qsizetype(1));
  // verify has no --json: only the update is suggested.
  r = cli({"verify", remote(file)}, env);
  QCOMPARE(r.exitCode, 1);
  QVERIFY2(r.err.contains("update ckptscope-cli on the host"), r.err.constData());
  QVERIFY2(!r.err.contains("--json"), r.err.constData());
}

void TestRemote::unknownHostKeySaysWhatToDo() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  // A client that has never seen the host and may not ask.
  const QString config = m_sshdHome + "/ssh_config_strict";
  writeFile(config, QString("Host *\n  Port %1\n  IdentityFile %2/user_key\n  IdentitiesOnly yes\n"
                            "  UserKnownHostsFile %2/empty_known_hosts\n"
                            "  StrictHostKeyChecking yes\n")
                        .arg(m_port)
                        .arg(m_sshdHome)
                        .toUtf8());
  const ProcessResult r = cli({"ls", "--json", remote(kFixtures + "/experiment")}, sshEnv(config));
  QCOMPARE(r.exitCode, 1);
  QVERIFY2(r.err.contains("known_hosts"), r.err.constData());
  // ssh as CKPTSCOPE_SSH names it: that config's known_hosts is the one to add to.
  QVERIFY2(
      r.err.contains(
          QString("`ssh -F %1 -p %2 127.0.0.1` in a terminal").arg(config).arg(m_port).toUtf8()),
      r.err.constData());
}

void TestRemote::droppedConnectionFails() {
  if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
  for (const char* mode : {"drop", "drop-at-once"}) {
    const ProcessResult r = cli({"metrics", "--json", remote(kFixtures + "/experiment")},
                                sshEnv({}, fakeAgent(m_tmp.path(), mode)));
    QVERIFY2(r.exitCode == 1, mode);
    QVERIFY2(r.out.isEmpty(), mode);  // never a partial answer
    QVERIFY2(r.err.contains("the connection closed while"), r.err.constData());
  }
}

QTEST_GUILESS_MAIN(TestRemote)
#include "tst_remote.moc"
