// ckpt/index/huge_page_malloc.h: ckptscope-cli (and the app, by the same
// call) starts itself again with glibc's heap advised for huge pages, once,
// keeping its pid, its arguments and a person's own GLIBC_TUNABLES. Read
// from /proc/PID/environ and cmdline of a running `ckptscope-cli serve
// --stdio` (it answers hello: its main has run).
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTest>
#include <fstream>
#include <string>

namespace {

bool transparentHugePagesOn() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  return mode.find("[madvise]") != std::string::npos || mode.find("[always]") != std::string::npos;
}

// The NUL-separated words of /proc/PID/<what>.
QList<QByteArray> procWords(qint64 pid, const char* what) {
  QFile f(QString("/proc/%1/%2").arg(pid).arg(what));
  if (!f.open(QIODevice::ReadOnly)) return {};
  QList<QByteArray> words = f.readAll().split('\0');
  if (!words.isEmpty() && words.back().isEmpty()) words.pop_back();
  return words;
}

}  // namespace

class TestHugePageMalloc : public QObject {
  Q_OBJECT
 private slots:
  void startedAgainWithTheTunable_data() {
    QTest::addColumn<QString>("given");  // GLIBC_TUNABLES before; "-": not set
    QTest::addColumn<QString>("seen");   // in the running program
    QTest::newRow("not set") << "-"
                             << "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=33554432:"
                                "glibc.malloc.tcache_count=255";
    QTest::newRow("a person's other tunable kept")
        << "glibc.malloc.arena_max=2"
        << "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1:glibc.malloc.top_pad=33554432:"
           "glibc.malloc.tcache_count=255";
    QTest::newRow("a person's own top_pad kept")
        << "glibc.malloc.top_pad=1048576"
        << "glibc.malloc.top_pad=1048576:glibc.malloc.hugetlb=1:glibc.malloc.tcache_count=255";
    QTest::newRow("a person's own tcache_count kept")
        << "glibc.malloc.tcache_count=7"
        << "glibc.malloc.tcache_count=7:glibc.malloc.hugetlb=1:glibc.malloc.top_pad=33554432";
    QTest::newRow("a person's own hugetlb=0 kept") << "glibc.malloc.hugetlb=0"
                                                   << "glibc.malloc.hugetlb=0";
  }
  void startedAgainWithTheTunable() {
    if (!transparentHugePagesOn()) QSKIP("transparent huge pages are off here: nothing is done");
    QFETCH(QString, given);
    QFETCH(QString, seen);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("GLIBC_TUNABLES");
    if (given != "-") env.insert("GLIBC_TUNABLES", given);
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(CKPT_CLI, {"serve", "--stdio"});
    QVERIFY(p.waitForStarted());
    p.write("{\"id\": 1, \"method\": \"hello\", \"params\": {}}\n");
    QTRY_VERIFY_WITH_TIMEOUT(p.canReadLine(), 15000);
    QVERIFY2(p.readLine().contains("\"protocol\""), "no answer to hello");
    // The same process (pid), its arguments as given, the tunable once.
    const QList<QByteArray> cmdline = procWords(p.processId(), "cmdline");
    QCOMPARE(cmdline, (QList<QByteArray>{QByteArray(CKPT_CLI), "serve", "--stdio"}));
    // The environment block as the program was started with it. (glibc
    // splits GLIBC_TUNABLES there at each ':' as it reads it: the parts
    // are looked for in order, not the whole value.)
    QFile environ(QString("/proc/%1/environ").arg(p.processId()));
    QVERIFY(environ.open(QIODevice::ReadOnly));
    const QByteArray block = environ.readAll();
    QCOMPARE(block.count("GLIBC_TUNABLES="), qsizetype(1));
    qsizetype at = block.indexOf("GLIBC_TUNABLES=");
    for (const QString& part : seen.split(':')) {
      QCOMPARE(block.count(part.toUtf8()), qsizetype(1));
      const qsizetype next = block.indexOf(part.toUtf8(), at);
      QVERIFY2(next > at, qPrintable(part));
      at = next;
    }
    if (given == "glibc.malloc.hugetlb=0") QCOMPARE(block.count("glibc.malloc.hugetlb=1"), 0);
    if (given.contains("top_pad") || given.contains("hugetlb"))
      QCOMPARE(block.count("glibc.malloc.top_pad=33554432"), 0);
    if (given.contains("tcache_count") || given.contains("hugetlb"))
      QCOMPARE(block.count("glibc.malloc.tcache_count=255"), 0);
    p.closeWriteChannel();  // the client goes away: the agent ends
    QVERIFY(p.waitForFinished(15000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  }
};

QTEST_GUILESS_MAIN(TestHugePageMalloc)
#include "tst_huge_page_malloc.moc"
