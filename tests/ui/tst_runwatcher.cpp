// The folders the browser's watcher watches (runwatcher.h): the opened
// folder and every folder below it, except hidden ones (.git, .cache and
// all below them), and a link to a folder watched as a name, not followed
// into where it leads. The expected set is written out by hand.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "browser/runwatcher.h"

using namespace ckpt;

class TestRunWatcher : public QObject {
  Q_OBJECT

 private slots:
  void watchesEveryFolderButHiddenOnes() {
    QTemporaryDir dir, outside;
    QVERIFY(dir.isValid() && outside.isValid());
    const QString root = QDir::cleanPath(QFileInfo(dir.path()).absoluteFilePath());
    for (const char* p :
         {"lr1e-3_seed0/checkpoints", "lr1e-3_seed0/logs/deeper", "lr1e-3_seed1", ".git/objects/ab",
          "lr1e-3_seed1/.cache/x", "lr1e-3_seed1/.hidden_run/sub"})
      QVERIFY(QDir(root).mkpath(p));
    QVERIFY(QDir(outside.path()).mkpath("far/away"));
    QVERIFY(QFile::link(outside.path() + "/far", root + "/lr1e-3_seed1/linked"));
    QFile plain(root + "/lr1e-3_seed0/notes.txt");
    QVERIFY(plain.open(QIODevice::WriteOnly));

    QStringList expected;
    for (const char* p : {"", "/lr1e-3_seed0", "/lr1e-3_seed0/checkpoints", "/lr1e-3_seed0/logs",
                          "/lr1e-3_seed0/logs/deeper", "/lr1e-3_seed1", "/lr1e-3_seed1/linked"})
      expected << root + p;
    expected.sort();
    auto sorted = [](QStringList l) {
      l.sort();
      return l;
    };
    RunWatcher watcher;
    watcher.watch({dir.path()});
    // (Listed off the GUI thread: watched a moment later.)
    QTRY_COMPARE(sorted(watcher.watchedDirectories()), expected);
    QVERIFY(watcher.polledDirectories().isEmpty());
    // Watched again from scratch: the same folders, not twice.
    watcher.watch({dir.path()});
    QTRY_COMPARE(sorted(watcher.watchedDirectories()), expected);
  }

  // A root on a network filesystem (here: asked to, CKPTSCOPE_POLL=1) is
  // polled: the same folders, none watched by inotify.
  void pollsTheSameFolders() {
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath("run/checkpoints") && QDir(dir.path()).mkpath(".git/x"));
    const QString root = QDir::cleanPath(QFileInfo(dir.path()).absoluteFilePath());
    qputenv("CKPTSCOPE_POLL", "1");
    RunWatcher watcher;
    watcher.watch({dir.path()});
    qunsetenv("CKPTSCOPE_POLL");
    const QStringList expected = {root, root + "/run", root + "/run/checkpoints"};
    auto sorted = [](QStringList l) {
      l.sort();
      return l;
    };
    QTRY_COMPARE(sorted(watcher.polledDirectories()), sorted(expected));
    QVERIFY(watcher.watchedDirectories().isEmpty());
  }
};

QTEST_MAIN(TestRunWatcher)
#include "tst_runwatcher.moc"
