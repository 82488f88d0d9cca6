// diff A B with A and B on different machines (ckpt/remote/cross_diff.h,
// docs/REMOTE.md "Comparing across machines"): through a real OpenSSH
// server on loopback (ssh_server.h) and the real agent behind it,
// `ckptscope-cli diff --json` of a file here and one on "the host" (either
// order, or two hosts) must print what diff --json of the two files here
// prints, byte for byte, with the same exit status. Tensors equal on both
// sides are not fetched (the bytes and requests counted); a cancelled
// comparison comes back cancelled with the agent still serving; a host
// that cannot be reached, drops mid-tensor or sends more than the header
// says fails with a message naming the host and the tensor. A checkpoint
// of many files on a host (every sharded layout) is compared the same way,
// its files sent without their storages' bytes.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>

#include "ckpt/analysis/diff.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/bytes_wire.h"
#include "ckpt/remote/cross_diff.h"
#include "run_process.h"
#include "ssh_server.h"

using Json = nlohmann::ordered_json;
using ckpt::test::ProcessResult;

namespace {

const QString kCli = QStringLiteral(CKPT_CLI);
const QString kFixtures = QStringLiteral(CKPT_FIXTURE_DIR);
const QString kCross = kFixtures + "/cross";

std::unique_ptr<ckpt::remote::AgentClient> pipeAgent(const QString& root,
                                                     const QString& program = kCli,
                                                     const QStringList& before = {}) {
  std::vector<std::string> argv{program.toStdString()};
  for (const QString& a : before) argv.push_back(a.toStdString());
  argv.insert(argv.end(), {"serve", "--stdio"});
  auto agent = std::make_unique<ckpt::remote::AgentClient>(argv, "host test", "tst_cross_diff");
  agent->call("open", Json{{"path", root.toStdString()}});
  return agent;
}

std::string localJson(const QString& a, const QString& b) {
  const auto fa = ckpt::CheckpointFile::open(a.toStdString());
  const auto fb = ckpt::CheckpointFile::open(b.toStdString());
  return ckpt::diffToJson(ckpt::diffCheckpoints(*fa, *fb)).dump(1);
}

}  // namespace

class TestCrossDiff : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QJsonObject m_expected;  // cross.json

  QProcessEnvironment sshEnv(const QString& remoteCli = kCli) const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("CKPTSCOPE_SSH", m_server.sshCommand());
    env.insert("CKPTSCOPE_REMOTE_CLI", remoteCli);
    return env;
  }
  ProcessResult cli(const QStringList& args, const QProcessEnvironment& env) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(kCli, args);
    return ckpt::test::finishProcess(p, 120000);
  }
  // The two "hosts" are one sshd reached as two endpoints ([user@]host[:port]).
  QString host1(const QString& path) const {
    return QString("ssh://127.0.0.1:%1%2").arg(m_server.port()).arg(path);
  }
  QString host2(const QString& path) const {
    const passwd* pw = ::getpwuid(::getuid());
    return QString("ssh://%1@127.0.0.1:%2%3")
        .arg(QString::fromLocal8Bit(pw ? pw->pw_name : "root"))
        .arg(m_server.port())
        .arg(path);
  }
  // `--remote-cli` for a host that lies (tests/python/lying_agent.py MODE).
  QString lyingCli(const QString& mode) {
    const QString wrapper = m_tmp.path() + "/lying-" + mode;
    QFile f(wrapper);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(QString("#!/bin/sh\nexec /usr/bin/python3 '%1' '%2' %3 \"$@\"\n")
                .arg(QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/lying_agent.py", kCli, mode)
                .toUtf8());
    f.close();
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return wrapper;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    QFile f(kCross + "/cross.json");
    QVERIFY2(f.open(QIODevice::ReadOnly), "no fixtures: run ctest (make_cross_diff_fixtures)");
    m_expected = QJsonDocument::fromJson(f.readAll()).object();
    QVERIFY(m_expected.value("identical").toArray().size() > 10);
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
  }

  void cleanupTestCase() { m_server.stop(); }

  // ---- ckptscope-cli through ssh: the report of the two files here

  void cliEqualsLocal_data() {
    QTest::addColumn<QString>("a");
    QTest::addColumn<QString>("b");
    QTest::addColumn<QStringList>("options");
    const QString d = kFixtures + "/diff";
    const QList<QPair<QString, QString>> pairs{
        {kCross + "/base.pt", kCross + "/changed.pt"},
        {d + "/perturbed/a.pt", d + "/perturbed/b.pt"},
        {d + "/structure/a.pt", d + "/structure/b.pt"},
        {d + "/special/a.pt", d + "/special/b.pt"},
        {d + "/legacy/a.pt", d + "/legacy/b.pt"},
        {d + "/safetensors/a.safetensors", d + "/safetensors/b.pt"},
        {d + "/views/a.pt", d + "/views/b.pt"},
        {d + "/ddp_compiled/plain.pt", d + "/ddp_compiled/wrapped.pt"},
        // meta tensors (unreadable: exit 1), packed quint4x2 / quint2x4, deflated records
        {kFixtures + "/dtypes.pt", kFixtures + "/dtypes_deflated.pt"},
    };
    for (const auto& [a, b] : pairs) {
      const QString tag = QFileInfo(a).dir().dirName() + "/" + QFileInfo(a).fileName();
      QTest::newRow(qPrintable(tag)) << a << b << QStringList{"--json"};
    }
    // Checkpoints of many files (a host's sent as its files without their
    // storages' bytes): every layout, an index file named instead of its
    // folder, DeepSpeed's `latest`, a Megatron join, and broken ones (a
    // tensor that cannot be read is that tensor's error, as here).
    const QString sh = kFixtures + "/sharded";
    const QList<QPair<QString, QString>> sharded{
        {sh + "/dcp_ws3", sh + "/reference.pt"},
        {sh + "/hf_st/model.safetensors.index.json", sh + "/hf_bin"},
        {sh + "/fsdp_dtensor_ws3", sh + "/fsdp_ws2"},
        {sh + "/ds_run", sh + "/ds_z3_ws2/global_step1000"},
        {kFixtures + "/megatron_titan/mg_join/gpt/iter_0000300",
         kFixtures + "/megatron_titan/mg_join/bad/iter_0000010"},
        {sh + "/hostile/dcp_pastend", sh + "/reference.pt"},
        {sh + "/hostile/fsdp_overlap", sh + "/hostile/hf_nokey"},
        {kCross + "/sharded_base", kCross + "/sharded_changed"},
    };
    for (const auto& [a, b] : sharded) {
      const QString tag = "sharded " + QFileInfo(a).fileName() + " " + QFileInfo(b).fileName();
      QTest::newRow(qPrintable(tag)) << a << b << QStringList{"--json"};
    }
    QTest::newRow("sharded text") << sh + "/hostile/dcp_pastend" << sh + "/dcp_ws3"
                                  << QStringList{};
    QTest::newRow("cross top") << kCross + "/base.pt" << kCross + "/changed.pt"
                               << QStringList{"--json", "--top", "3"};
    QTest::newRow("cross text") << kCross + "/base.pt" << kCross + "/changed.pt" << QStringList{};
    QTest::newRow("dtypes text") << kFixtures + "/dtypes.pt" << kFixtures + "/dtypes_deflated.pt"
                                 << QStringList{};
  }

  // Here and on the host, on the host and here, on two hosts: diff --json
  // (and the text report) of the two files here, byte for byte, the exit
  // status and stderr too.
  void cliEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(QString, a);
    QFETCH(QString, b);
    QFETCH(QStringList, options);
    const ProcessResult local = cli(QStringList{"diff"} + options + QStringList{a, b},
                                    QProcessEnvironment::systemEnvironment());
    QVERIFY2(local.exitCode == 0 || local.exitCode == 1, local.err.constData());
    QVERIFY(!local.out.isEmpty());
    const QList<QPair<QString, QString>> placed{{a, host1(b)}, {host1(a), b}, {host1(a), host2(b)}};
    for (const auto& [pa, pb] : placed) {
      const ProcessResult r = cli(QStringList{"diff"} + options + QStringList{pa, pb}, sshEnv());
      const QByteArray what = (pa + " " + pb).toUtf8();
      QVERIFY2(r.exitCode == local.exitCode, what + ": " + r.err);
      QVERIFY2(r.out == local.out, what);
      QVERIFY2(r.err == local.err, what + ": " + r.err + " against " + local.err);
    }
  }

  // ---- what travels

  // A file here against its changed copy on a host: only the changed
  // tensors are fetched (cross.json: which, and their bytes); the file
  // without its tensors is a few kilobytes; two hosts fetch an equal tensor
  // from one of them only. The report is the one of two files here.
  void identicalTensorsAreNotFetched() {
    const QString base = kCross + "/base.pt", changed = kCross + "/changed.pt";
    const auto agent = pipeAgent(kCross);
    const int identical = int(m_expected.value("identical").toArray().size());
    const int changedCount = int(m_expected.value("changed").toArray().size());
    const qint64 changedBytes = qint64(m_expected.value("changed_bytes").toDouble());
    QVERIFY(changedCount == 4 && changedBytes > 0);

    ckpt::remote::DiffEnd here{base.toStdString(), nullptr, ""};
    ckpt::remote::DiffEnd there{changed.toStdString(), agent.get(), "test"};
    ckpt::remote::CrossDiff r = ckpt::remote::diffAcrossMachines(here, there);
    QCOMPARE(QString::fromStdString(ckpt::diffToJson(r.diff).dump(1)),
             QString::fromStdString(localJson(base, changed)));
    QCOMPARE(int(r.identical), identical);
    QCOMPARE(int(r.trafficB.tensorsFetched), changedCount);
    QCOMPARE(qint64(r.trafficB.tensorBytes), changedBytes);
    QCOMPARE(int(r.trafficA.tensorsFetched), 0);
    const qint64 fileSize = QFileInfo(changed).size();
    QVERIFY2(qint64(r.trafficB.skeletonBytes) < 16384,
             qPrintable(QString::number(r.trafficB.skeletonBytes)));
    qInfo(
        "changed.pt (%lld bytes) on the host: %llu bytes of it without its tensors, %zu "
        "tensors fetched (%llu bytes), %zu equal tensors not fetched",
        fileSize, (unsigned long long)r.trafficB.skeletonBytes, r.trafficB.tensorsFetched,
        (unsigned long long)r.trafficB.tensorBytes, r.identical);

    // The same file on both sides: nothing but the skeleton moves.
    ckpt::remote::DiffEnd same{base.toStdString(), agent.get(), "test"};
    r = ckpt::remote::diffAcrossMachines(here, same);
    QCOMPARE(int(r.trafficB.tensorsFetched), 0);
    QCOMPARE(qint64(r.trafficB.tensorBytes), qint64(0));
    QCOMPARE(QString::fromStdString(ckpt::diffToJson(r.diff).dump(1)),
             QString::fromStdString(localJson(base, base)));

    // Two hosts: a changed tensor from both, an equal one from the first only.
    const auto agent2 = pipeAgent(kCross);
    ckpt::remote::DiffEnd first{base.toStdString(), agent2.get(), "one"};
    r = ckpt::remote::diffAcrossMachines(first, there);
    QCOMPARE(QString::fromStdString(ckpt::diffToJson(r.diff).dump(1)),
             QString::fromStdString(localJson(base, changed)));
    QCOMPARE(int(r.trafficA.tensorsFetched), changedCount + identical);
    QCOMPARE(int(r.trafficB.tensorsFetched), changedCount);
    QCOMPARE(qint64(r.trafficB.tensorBytes), changedBytes);
  }

  // A checkpoint of many files on a host (Hugging Face shards: an index and
  // two torch.save files) against the same state here: its files travel
  // without their storages' bytes, written here as sparse files in a
  // private folder under TMPDIR that goes with the comparison; only the
  // changed tensors are fetched (cross.json, as for one file). The report
  // is the one of the two folders here.
  void shardedOnHost() {
    const QString base = kCross + "/sharded_base", changed = kCross + "/sharded_changed";
    const QString tmp = m_tmp.path() + "/skeletons";
    QVERIFY(QDir().mkpath(tmp));
    const QByteArray oldTmp = qgetenv("TMPDIR");
    qputenv("TMPDIR", tmp.toUtf8());
    const auto restore = qScopeGuard([&] { qputenv("TMPDIR", oldTmp); });
    const int changedCount = int(m_expected.value("changed").toArray().size());
    const qint64 changedBytes = qint64(m_expected.value("changed_bytes").toDouble());
    const auto agent = pipeAgent(kCross);
    ckpt::remote::DiffEnd here{base.toStdString(), nullptr, ""};
    ckpt::remote::DiffEnd there{changed.toStdString(), agent.get(), "test"};
    auto r =
        std::make_unique<ckpt::remote::CrossDiff>(ckpt::remote::diffAcrossMachines(here, there));
    QCOMPARE(QString::fromStdString(ckpt::diffToJson(r->diff).dump(1)),
             QString::fromStdString(localJson(base, changed)));
    QCOMPARE(int(r->trafficB.tensorsFetched), changedCount);
    QCOMPARE(qint64(r->trafficB.tensorBytes), changedBytes);
    QCOMPARE(int(r->trafficA.tensorsFetched), 0);
    qint64 hostBytes = 0;
    for (const QFileInfo& f : QDir(changed).entryInfoList(QDir::Files)) hostBytes += f.size();
    QVERIFY2(qint64(r->trafficB.skeletonBytes) < hostBytes / 10,
             qPrintable(QString("%1 of %2").arg(r->trafficB.skeletonBytes).arg(hostBytes)));

    // While the comparison is held: the host's files by name and size, in
    // one private folder named as on the host, holes where the storages are.
    const QStringList made = QDir(tmp).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(made.size(), 1);
    QVERIFY2(made[0].startsWith("ckptscope-skeleton-"), qPrintable(made[0]));
    QCOMPARE(QFileInfo(tmp + "/" + made[0]).permissions() & (QFile::ReadOther | QFile::ReadGroup),
             QFile::Permissions());
    const QString mirror = tmp + "/" + made[0] + "/sharded_changed";
    qint64 allocated = 0, sizes = 0;
    for (const QFileInfo& f : QDir(changed).entryInfoList(QDir::Files)) {
      const QFileInfo m(mirror + "/" + f.fileName());
      QVERIFY2(m.exists(), qPrintable(m.filePath()));
      QCOMPARE(m.size(), f.size());
      struct stat st {};
      QCOMPARE(::stat(m.filePath().toLocal8Bit().constData(), &st), 0);
      allocated += qint64(st.st_blocks) * 512;
      sizes += m.size();
    }
    QVERIFY2(allocated < sizes / 2, qPrintable(QString("%1 of %2").arg(allocated).arg(sizes)));
    r.reset();
    QVERIFY2(QDir(tmp).isEmpty(), qPrintable(QDir(tmp).entryList().join(", ")));

    // Both on hosts (each its own folder), and the host's folder named by its index.
    const auto agent2 = pipeAgent(kCross);
    ckpt::remote::DiffEnd first{(base + "/pytorch_model.bin.index.json").toStdString(),
                                agent2.get(), "one"};
    r = std::make_unique<ckpt::remote::CrossDiff>(ckpt::remote::diffAcrossMachines(first, there));
    QCOMPARE(QString::fromStdString(ckpt::diffToJson(r->diff).dump(1)),
             QString::fromStdString(localJson(base + "/pytorch_model.bin.index.json", changed)));
    QCOMPARE(int(r->trafficB.tensorsFetched), changedCount);
    QCOMPARE(QDir(tmp).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 2);
    r.reset();
    QVERIFY(QDir(tmp).isEmpty());
  }

  void lyingShardedHostFails_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("says");
    QTest::newRow("a file outside its folder")
        << "escape"
        << "is not a plain path inside the checkpoint's folder";
    QTest::newRow("a file sent twice") << "twice"
                                       << "is sent twice";
    QTest::newRow("a folder named ..") << "folder"
                                       << "which is not a plain folder name";
    QTest::newRow("a file of 2^60 bytes") << "bigfile"
                                          << "holds 1152921504606846976 bytes";
    QTest::newRow("read otherwise") << "summary"
                                    << "update ckptscope-cli on one of them";
  }

  // A host that lies about a checkpoint of many files: exit 1, nothing on
  // stdout, a message naming the host and what is wrong; nothing is
  // written outside the private folder, and the folder goes.
  void lyingShardedHostFails() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(QString, mode);
    QFETCH(QString, says);
    const QString wrapper = lyingCli(mode);
    QVERIFY(!wrapper.isEmpty());
    const QString tmp = m_tmp.path() + "/lying-skeletons/" + mode + "/deep/tmp";
    QVERIFY(QDir().mkpath(tmp));
    QProcessEnvironment env = sshEnv(wrapper);
    env.insert("TMPDIR", tmp);
    const ProcessResult r =
        cli({"diff", "--json", kCross + "/sharded_base", host1(kCross + "/sharded_changed")}, env);
    QVERIFY2(r.exitCode == 1, r.err.constData());
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(says.toUtf8()), r.err.constData());
    QVERIFY2(r.err.contains(QString("127.0.0.1:%1").arg(m_server.port()).toUtf8()),
             r.err.constData());
    QVERIFY2(QDir(tmp).isEmpty(), qPrintable(QDir(tmp).entryList().join(", ")));
    QDirIterator it(m_tmp.path() + "/lying-skeletons", QDirIterator::Subdirectories);
    while (it.hasNext()) QVERIFY2(!it.next().contains("escaped"), qPrintable(it.filePath()));
  }

  // ---- cancel and failures

  // Cancelled while a tensor is fetched: a cancelled comparison with nothing
  // in it, and the agent still answers (the connection stayed in step).
  void cancelledComparison() {
    const auto agent = pipeAgent(kCross);
    ckpt::remote::DiffEnd here{(kCross + "/base.pt").toStdString(), nullptr, ""};
    ckpt::remote::DiffEnd there{(kCross + "/changed.pt").toStdString(), agent.get(), "test"};
    ckpt::remote::CrossDiffOptions options;
    QStringList phases;
    options.progress = [&phases](const std::string& phase, uint64_t, uint64_t) {
      const QString p = QString::fromStdString(phase);
      if (phases.isEmpty() || phases.back() != p) phases << p;
      return !p.startsWith("fetching");
    };
    const ckpt::remote::CrossDiff r = ckpt::remote::diffAcrossMachines(here, there, options);
    QVERIFY(r.diff.cancelled);
    QVERIFY(r.diff.tensors.empty());
    QVERIFY2(phases.contains("reading test") && phases.contains("fetching from test"),
             qPrintable(phases.join(", ")));
    const Json again = agent->call("skeleton", Json{{"path", there.path}, {"digests", false}});
    QVERIFY(again.contains("parts"));
  }

  void unreachableHostFails() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    // Nothing listens on port 1.
    const QString b = QString("ssh://127.0.0.1:1%1/changed.pt").arg(kCross);
    const ProcessResult r = cli({"diff", "--json", kCross + "/base.pt", b}, sshEnv());
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains("127.0.0.1"), r.err.constData());
  }

  void lyingHostFails_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("says");
    QTest::newRow("connection drops mid-tensor") << "cut"
                                                 << "127.0.0.1";
    QTest::newRow("more bytes than the header") << "longer"
                                                << "the host sent a chunk";
    QTest::newRow("a chunk elsewhere") << "offset"
                                       << "the host sent a chunk at byte 1099511627776";
    QTest::newRow("a file of 2^60 bytes") << "huge"
                                          << "the host says the file holds";
  }

  // A host that drops or lies while a tensor is on its way: exit 1, nothing
  // on stdout, a message naming the host and the tensor.
  void lyingHostFails() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(QString, mode);
    QFETCH(QString, says);
    const QString wrapper = lyingCli(mode);
    QVERIFY(!wrapper.isEmpty());
    const ProcessResult r = cli(
        {"diff", "--json", kCross + "/base.pt", host1(kCross + "/changed.pt")}, sshEnv(wrapper));
    QVERIFY2(r.exitCode == 1, r.err.constData());
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(says.toUtf8()), r.err.constData());
    if (mode != "huge")
      QVERIFY2(r.err.contains("tensor model_state.blocks.2.") ||
                   r.err.contains("tensor model_state.final_norm"),
               r.err.constData());
    QVERIFY2(r.err.contains(QString("127.0.0.1:%1").arg(m_server.port()).toUtf8()),
             r.err.constData());
  }

  // The bytes' wire form: RFC 4648's vectors, and what is not base64.
  void base64() {
    using ckpt::remote::base64Decode;
    using ckpt::remote::base64Encode;
    const QList<QPair<QByteArray, QByteArray>> vectors{{"", ""},
                                                       {"f", "Zg=="},
                                                       {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},
                                                       {"foob", "Zm9vYg=="},
                                                       {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, coded] : vectors) {
      QCOMPARE(QByteArray::fromStdString(base64Encode(plain.toStdString())), coded);
      std::string back = "x";
      QVERIFY(base64Decode(coded.toStdString(), back));
      QCOMPARE(QByteArray::fromStdString(back), "x" + plain);
    }
    std::string all;
    for (int i = 0; i < 256; ++i) all += char(i);
    std::string back;
    QVERIFY(base64Decode(base64Encode(all), back));
    QVERIFY(back == all);
    for (const char* bad : {"Zg=", "Z===", "Zm9v!A==", "Zg==Zg==", "=Zg="}) {
      std::string out;
      QVERIFY2(!base64Decode(bad, out), bad);
    }
  }

  // scan takes paths on two machines too now (tests/core/tst_remote_machines
  // checks it against each machine's own scan): the same two files as here,
  // the host's named as an ssh:// location.
  void scanAcrossMachines() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const ProcessResult r =
        cli({"scan", "--json", kCross + "/base.pt", host1(kCross + "/changed.pt")}, sshEnv());
    const ProcessResult l =
        cli({"scan", "--json", kCross + "/base.pt", kCross + "/changed.pt"}, sshEnv());
    QVERIFY2(r.exitCode == l.exitCode, r.err.constData());
    const QJsonArray files = QJsonDocument::fromJson(r.out).object()["files"].toArray();
    const QJsonArray here = QJsonDocument::fromJson(l.out).object()["files"].toArray();
    QCOMPARE(files.size(), 2);
    QCOMPARE(here.size(), 2);
    QCOMPARE(files[0].toObject(), here[0].toObject());
    QCOMPARE(files[1].toObject()["file"].toString(), host1(kCross + "/changed.pt"));
    QCOMPARE(files[1].toObject()["verdict"], here[1].toObject()["verdict"]);
    QCOMPARE(files[1].toObject()["globals"], here[1].toObject()["globals"]);
  }
};

QTEST_GUILESS_MAIN(TestCrossDiff)
#include "tst_cross_diff.moc"
