// The experiments browser: stage families, the filter box, the directory
// watcher (complete checkpoints appear, half-written ones wait), the recent
// list, the remembered layout and drag and drop. Files are the fixtures
// written by Python (make_fixtures.py), copied into temporary directories.
#include <QAbstractItemModelTester>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QIcon>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QMimeData>
#include <QPixmap>
#include <QProcess>
#include <QScreen>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <QUrl>
#include <algorithm>
#include <chrono>

#include <unistd.h>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "browser/runwatcher.h"
#include "ckpt/index/filesystem_kind.h"
#include "ckpt/index/scanner.h"
#include "inspector/inspectorwidget.h"
#include "mainwindow.h"
#include "textformat.h"

using namespace ckpt;
using Role = CheckpointListModel::Role;

namespace {

constexpr int kTimeoutMs = 30'000;

QString cleanAbsolute(const QString& p) {
  return QDir::cleanPath(QFileInfo(p).absoluteFilePath());
}

bool openAndWait(MainWindow& w, const QStringList& paths) {
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths(paths);
  return loaded.count() == 1 || loaded.wait(kTimeoutMs);
}

// Every checkpoint path the proxy (what the tree shows) still has.
QStringList visiblePaths(const QAbstractItemModel* m, const QModelIndex& parent = {}) {
  QStringList out;
  for (int r = 0; r < m->rowCount(parent); ++r) {
    const QModelIndex i = m->index(r, 0, parent);
    if (i.data(int(Role::IsGroup)).toBool())
      out << visiblePaths(m, i);
    else
      out << QFileInfo(i.data(int(Role::Path)).toString()).fileName();
  }
  return out;
}

bool copyFile(const QString& from, const QString& to) {
  QFile::remove(to);
  return QFile::copy(from, to);
}

// A folder and everything below it.
bool copyTree(const QString& from, const QString& to) {
  if (!QDir().mkpath(to)) return false;
  const QDir src(from);
  for (const QFileInfo& f :
       src.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden)) {
    const QString target = to + "/" + f.fileName();
    if (f.isDir() ? !copyTree(f.filePath(), target) : !copyFile(f.filePath(), target)) return false;
  }
  return true;
}

}  // namespace

class TestBrowser : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void stageFamilies();
  void familyJoinsLive();
  void updateRunWithManyCheckpoints();
  void filterSubstringAndRegex();
  void watcherAddsCopiedCheckpoint();
  void watcherWaitsForHalfWrittenFile();
  void watcherListsFileThatStaysBroken();
  void watcherRemovesDeletedFiles();
  void watcherSeesNewRunDirectory();
  void watcherPollsNetworkFilesystem();
  void recentList();
  void layoutIsRemembered();
  void dropOpensPaths();
  void safetyBadge();
  void shardedBadge();
  void shardedSafety();

 private:
  // A temporary experiments directory holding a copy of runs/tiny.
  bool makeRunCopy(QTemporaryDir& dir);

  QString m_root;
  QString m_runsDir;
};

void TestBrowser::initTestCase() {
  m_root = QStringLiteral(CKPT_FIXTURE_DIR);
  m_runsDir = m_root + "/runs";
  QVERIFY2(QFileInfo::exists(m_runsDir + "/tiny/tiny_step100.pt"),
           "no fixtures: run ctest (make_fixtures)");
  // ctest points XDG_CONFIG_HOME into the build tree; start each run clean.
  QCoreApplication::setOrganizationName("CkptScopeTest");
  QCoreApplication::setApplicationName("tst_browser");
  QSettings().clear();
}

bool TestBrowser::makeRunCopy(QTemporaryDir& dir) {
  if (!dir.isValid() || !QDir(dir.path()).mkpath("tiny")) return false;
  for (const char* f : {"tiny_step100.pt", "tiny_step200.pt"})
    if (!copyFile(m_runsDir + "/tiny/" + f, dir.path() + "/tiny/" + f)) return false;
  return true;
}

void TestBrowser::stageFamilies() {
  MainWindow w;
  QAbstractItemModelTester tester(w.checkpointModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(openAndWait(w, {m_runsDir}));
  CheckpointListModel* model = w.checkpointModel();
  // fixtures: runs/fam-pretrain, runs/fam-sft, runs/fam-dpo (make_fixtures.py)
  QModelIndex family;
  for (int r = 0; r < model->rowCount(); ++r)
    if (model->index(r, 0).data(int(Role::IsFamily)).toBool()) {
      QVERIFY2(!family.isValid(), "one family expected");
      family = model->index(r, 0);
    }
  QVERIFY(family.isValid());
  QCOMPARE(family.data().toString(), QStringLiteral("fam"));
  QCOMPARE(model->familyName(family), QStringLiteral("fam"));
  QCOMPARE(model->rowCount(family), 3);
  const QStringList order = {"pretrain", "sft", "dpo"};  // training order, not alphabetical
  for (int r = 0; r < 3; ++r) {
    const QModelIndex stage = model->index(r, 0, family);
    QCOMPARE(stage.data(int(Role::Stage)).toString(), order[r]);
    QCOMPARE(QFileInfo(stage.data(int(Role::Path)).toString()).fileName(), "fam-" + order[r]);
    QCOMPARE(model->rowCount(stage), 1);
  }
  // Runs without a stage suffix stay at the top.
  QVERIFY(model->indexOfRun(m_runsDir + "/tiny").isValid());
  QVERIFY(!model->indexOfRun(m_runsDir + "/tiny").parent().isValid());

  // Selecting the family shows its stages.
  QSignalSpy shown(&w, &MainWindow::summaryShown);
  w.checkpointView()->setCurrentIndex(w.browserPanel()->proxy()->mapFromSource(family));
  QTRY_VERIFY(shown.count() >= 1);
  const QString text = w.inspector()->text();
  QVERIFY2(text.contains("fam-pretrain") && text.contains("fam-dpo"), qPrintable(text));
  QVERIFY(text.indexOf("fam-pretrain") < text.indexOf("fam-sft"));
}

void TestBrowser::familyJoinsLive() {
  // A model fed run by run, as the watcher does: the second stage makes a
  // family, the third joins it in training order.
  CheckpointListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  auto run = [](const QString& name) {
    BrowseGroup g;
    g.name = name;
    g.path = "/x/" + name;
    CheckpointEntry c;
    c.path = ("/x/" + name + "/a.pt").toStdString();
    c.file = "a.pt";
    g.checkpoints.push_back(c);
    return g;
  };
  model.setGroups({run("other"), run("gpt-dpo")});
  QCOMPARE(model.rowCount(), 2);
  model.updateRun(run("gpt-pretrain"));
  QCOMPARE(model.rowCount(), 2);  // other, gpt{pretrain, dpo}
  const QModelIndex fam = model.index(1, 0);
  QVERIFY(fam.data(int(Role::IsFamily)).toBool());
  QCOMPARE(model.rowCount(fam), 2);
  model.updateRun(run("gpt-sft"));
  QCOMPARE(model.rowCount(fam), 3);
  QCOMPARE(model.index(1, 0, fam).data(int(Role::Stage)).toString(), QStringLiteral("sft"));
  QCOMPARE(model.groupCount(), size_t(4));
  QVERIFY(model.removeRun("/x/gpt-sft"));
  QCOMPARE(model.rowCount(fam), 2);
  QCOMPARE(model.checkpointCount(), size_t(3));
}

void TestBrowser::updateRunWithManyCheckpoints() {
  // A followed run that saves often (a trainer on a host saving every few
  // steps): one more checkpoint is one row inserted, and the rows kept are
  // said changed once, as one range, not once each (each made the view
  // measure every row: minutes of a frozen window at a few thousand).
  CheckpointListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  BrowseGroup g;
  g.name = "tiny@2";
  g.path = "/x/tiny@2";
  auto add = [&g](int step) {
    CheckpointEntry c;
    c.file = QString("tiny@2_step%1.pt").arg(step).toStdString();
    c.path = "/x/tiny@2/" + c.file;
    c.step = step;
    g.checkpoints.push_back(c);
  };
  const int kept = 3000;
  for (int i = 1; i <= kept; ++i) add(2 * i);
  model.setGroups({g});
  const QModelIndex run = model.index(0, 0);
  QCOMPARE(model.rowCount(run), kept);
  add(2 * kept + 2);
  QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
  QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
  QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
  model.updateRun(g);
  QCOMPARE(model.rowCount(run), kept + 1);
  QCOMPARE(inserted.count(), 1);
  QCOMPARE(inserted.front().at(1).toInt(), kept);
  QCOMPARE(removed.count(), 0);
  QCOMPARE(changed.count(), 2);  // the kept rows as one range, then the run's own row
  QCOMPARE(changed.front().at(0).value<QModelIndex>(), model.index(0, 0, run));
  QCOMPARE(changed.front().at(1).value<QModelIndex>().row(), kept - 1);
  QCOMPARE(changed.back().at(0).value<QModelIndex>(), run);
  QCOMPARE(changed.back().at(1).value<QModelIndex>(), model.index(0, 5));  // to Modified
  QCOMPARE(model.index(0, 2).data().toString(), QString("3,001 files"));
  QCOMPARE(model.index(kept, 0, run).data().toString(),
           QString("tiny@2_step%1.pt").arg(2 * kept + 2));
  // One gone from the middle (step 22): one row removed, the others kept in order.
  g.checkpoints.erase(g.checkpoints.begin() + 10);
  changed.clear();
  removed.clear();
  model.updateRun(g);
  QCOMPARE(removed.count(), 1);
  QCOMPARE(removed.front().at(1).toInt(), 10);
  QCOMPARE(changed.count(), 2);
  QCOMPARE(changed.back().at(0).value<QModelIndex>(), run);
  QCOMPARE(model.rowCount(run), kept);
  QCOMPARE(model.index(10, 0, run).data().toString(), QString("tiny@2_step24.pt"));
}

void TestBrowser::filterSubstringAndRegex() {
  MainWindow w;
  QVERIFY(openAndWait(w, {m_runsDir}));
  BrowserPanel* panel = w.browserPanel();
  QSortFilterProxyModel* proxy = panel->proxy();
  QAbstractItemModelTester tester(proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
  const QStringList all = visiblePaths(proxy);
  QCOMPARE(size_t(all.size()), w.checkpointModel()->checkpointCount());

  // Substring, case-insensitive, on checkpoint names: their runs stay.
  panel->setFilter("STEP100", false);
  QCOMPARE(visiblePaths(proxy), QStringList{"tiny_step100.pt"});
  // A run's name keeps all its checkpoints.
  panel->setFilter("handloop", false);
  QCOMPARE(visiblePaths(proxy).size(), 4);
  // A family's name keeps its stages.
  panel->setFilter("fam", false);
  QCOMPARE(visiblePaths(proxy).size(), 3);
  // Regular expressions.
  panel->setFilter("^tiny_step[12]00\\.pt$", true);
  QCOMPARE(visiblePaths(proxy), (QStringList{"tiny_step100.pt", "tiny_step200.pt"}));
  QVERIFY(panel->filterError().isEmpty());
  // A broken expression says why and keeps the last good filter.
  panel->setFilter("tiny_(step", true);
  QVERIFY(!panel->filterError().isEmpty());
  QVERIFY(panel->filterEdit()->toolTip().contains(panel->filterError()));
  QCOMPARE(visiblePaths(proxy).size(), 2);
  // The same text as a substring matches nothing.
  panel->setFilter("tiny_(step", false);
  QVERIFY(panel->filterError().isEmpty());
  QCOMPARE(visiblePaths(proxy).size(), 0);
  panel->setFilter({}, false);
  QCOMPARE(visiblePaths(proxy), all);

  // Selecting a file the filter hides clears the filter.
  panel->setFilter("handloop", false);
  QVERIFY(w.selectPath(m_runsDir + "/tiny/tiny_step200.pt"));
  QVERIFY(panel->filterEdit()->text().isEmpty());
  QCOMPARE(
      QFileInfo(w.checkpointView()->currentIndex().data(int(Role::Path)).toString()).fileName(),
      QStringLiteral("tiny_step200.pt"));
}

void TestBrowser::watcherAddsCopiedCheckpoint() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  MainWindow w;
  QAbstractItemModelTester tester(w.checkpointModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(openAndWait(w, {dir.path()}));
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(2));
  QTRY_VERIFY(w.runWatcher()->watchedDirectories().contains(cleanAbsolute(dir.path() + "/tiny")));

  const QString added = dir.path() + "/tiny/tiny_final.pt";
  QVERIFY(copyFile(m_runsDir + "/tiny/tiny_final.pt", added));
  QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(added).isValid(), kTimeoutMs);
  const QModelIndex row = w.checkpointModel()->indexOfPath(added);
  QVERIFY(row.data(int(Role::Error)).toString().isEmpty());
  QCOMPARE(row.data(int(Role::Kind)).toString(), QStringLiteral("final"));
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(3));
  // Sorted by step within the run: the final one (step 300 in its metadata) is last.
  QCOMPARE(row.row(), 2);
}

void TestBrowser::watcherWaitsForHalfWrittenFile() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  MainWindow w;
  w.runWatcher()->setSettleTime(60'000);  // "still being written" for as long as the test needs
  QVERIFY(openAndWait(w, {dir.path()}));
  QTRY_VERIFY(w.runWatcher()->watchedDirectories().contains(cleanAbsolute(dir.path() + "/tiny")));

  QFile source(m_runsDir + "/tiny/tiny_final.pt");
  QVERIFY(source.open(QIODevice::ReadOnly));
  const QByteArray bytes = source.readAll();
  const QString target = dir.path() + "/tiny/tiny_final.pt";
  QFile out(target);
  QVERIFY(out.open(QIODevice::WriteOnly));
  QCOMPARE(out.write(bytes.left(bytes.size() / 2)), qint64(bytes.size() / 2));
  QVERIFY(out.flush());
  // The watcher looks at it, finds it unreadable and fresh: it waits.
  QTRY_VERIFY_WITH_TIMEOUT(w.runWatcher()->pendingFiles().contains(cleanAbsolute(target)),
                           kTimeoutMs);
  QTest::qWait(500);
  QVERIFY(!w.checkpointModel()->indexOfPath(target).isValid());
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(2));

  QCOMPARE(out.write(bytes.mid(bytes.size() / 2)), qint64(bytes.size() - bytes.size() / 2));
  out.close();
  QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(target).isValid(), kTimeoutMs);
  const QModelIndex row = w.checkpointModel()->indexOfPath(target);
  QVERIFY2(row.data(int(Role::Error)).toString().isEmpty(),
           qPrintable(row.data(int(Role::Error)).toString()));
  QVERIFY(w.runWatcher()->pendingFiles().isEmpty());
}

void TestBrowser::watcherListsFileThatStaysBroken() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  MainWindow w;
  w.runWatcher()->setSettleTime(300);
  QVERIFY(openAndWait(w, {dir.path()}));
  QTRY_VERIFY(w.runWatcher()->watchedDirectories().contains(cleanAbsolute(dir.path() + "/tiny")));
  const QString target = dir.path() + "/tiny/tiny_step300.pt";
  QFile out(target);
  QVERIFY(out.open(QIODevice::WriteOnly));
  QVERIFY(out.write(QByteArray("PK\x03\x04 not a whole zip", 22)) == 22);
  out.close();
  // A writer that died: after the settle time the file is listed, marked unreadable.
  QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(target).isValid(), kTimeoutMs);
  const QString error = w.checkpointModel()->indexOfPath(target).data(int(Role::Error)).toString();
  QVERIFY2(error.contains("truncated"), qPrintable(error));
}

void TestBrowser::watcherRemovesDeletedFiles() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  MainWindow w;
  QAbstractItemModelTester tester(w.checkpointModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(openAndWait(w, {dir.path()}));
  QTRY_VERIFY(w.runWatcher()->watchedDirectories().contains(cleanAbsolute(dir.path() + "/tiny")));
  QSignalSpy changed(&w, &MainWindow::checkpointsChanged);
  QVERIFY(QFile::remove(dir.path() + "/tiny/tiny_step100.pt"));
  QTRY_COMPARE_WITH_TIMEOUT(w.checkpointModel()->checkpointCount(), size_t(1), kTimeoutMs);
  QVERIFY(changed.count() >= 1);
  // The last one gone: the run goes too.
  QVERIFY(QFile::remove(dir.path() + "/tiny/tiny_step200.pt"));
  QTRY_COMPARE_WITH_TIMEOUT(w.checkpointModel()->rowCount(), 0, kTimeoutMs);
}

void TestBrowser::watcherSeesNewRunDirectory() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  MainWindow w;
  QAbstractItemModelTester tester(w.checkpointModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(openAndWait(w, {dir.path()}));
  QTRY_VERIFY(w.runWatcher()->watchedDirectories().contains(cleanAbsolute(dir.path())));
  // A fine-tune stage of "tiny" starts writing: a new directory, then a file.
  QVERIFY(QDir(dir.path()).mkpath("tiny-sft"));
  const QString added = dir.path() + "/tiny-sft/tiny_step100.pt";
  QTRY_VERIFY(
      w.runWatcher()->watchedDirectories().contains(cleanAbsolute(dir.path() + "/tiny-sft")));
  QVERIFY(copyFile(m_runsDir + "/tiny/tiny_step100.pt", added));
  QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(added).isValid(), kTimeoutMs);
  // ... and "tiny" with "tiny-sft" now form a family.
  const QModelIndex run = w.checkpointModel()->indexOfRun(dir.path() + "/tiny-sft");
  QVERIFY(run.parent().isValid());
  QCOMPARE(run.parent().data().toString(), QStringLiteral("tiny"));
  QCOMPARE(w.checkpointModel()->rowCount(run.parent()), 2);
}

// A folder on NFS, SMB or sshfs: inotify never fires for what other machines
// write, so the watcher polls the directories' modification times, backing
// off while nothing changes. CKPTSCOPE_POLL=1 makes a local folder behave so
// (no inotify at all: only the poll can see the copy).
void TestBrowser::watcherPollsNetworkFilesystem() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  // This folder is local as coreutils' stat -f names it, and so it is here.
  QProcess stat;
  stat.start("stat", {"-f", "-c", "%T", dir.path()});
  QVERIFY(stat.waitForFinished());
  const QString type = QString::fromUtf8(stat.readAllStandardOutput()).trimmed();
  QVERIFY2(!QStringList({"nfs", "cifs", "smb", "smb2", "fuseblk", "fuse", "v9fs", "ceph", "afs",
                         "lustre", "gpfs"})
                .contains(type),
           qPrintable(type));
  QVERIFY2(!networkFilesystem(dir.path().toStdString()).has_value(), qPrintable(type));

  qputenv("CKPTSCOPE_POLL", "1");
  struct Unset {
    ~Unset() { qunsetenv("CKPTSCOPE_POLL"); }
  } unset;
  MainWindow w;
  QVERIFY(openAndWait(w, {dir.path()}));
  RunWatcher* watcher = w.runWatcher();
  const QString tiny = cleanAbsolute(dir.path() + "/tiny");
  QTRY_VERIFY(watcher->polledDirectories().contains(tiny));
  QVERIFY(watcher->watchedDirectories().isEmpty());
  QCOMPARE(watcher->polledRoots().value(cleanAbsolute(dir.path())),
           QStringLiteral("CKPTSCOPE_POLL"));
  // Nothing changes: the poll backs off.
  QTRY_VERIFY_WITH_TIMEOUT(watcher->pollInterval() > RunWatcher::kPollMinMs, 5000);

  const QString added = dir.path() + "/tiny/tiny_final.pt";
  QVERIFY(copyFile(m_runsDir + "/tiny/tiny_final.pt", added));
  QTRY_VERIFY_WITH_TIMEOUT(w.checkpointModel()->indexOfPath(added).isValid(), kTimeoutMs);
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(3));
  QCOMPARE(watcher->pollInterval(), RunWatcher::kPollMinMs);  // a change: back to every second
  QVERIFY(watcher->watchedDirectories().isEmpty());
}

void TestBrowser::recentList() {
  MainWindow::clearRecentPaths();
  QTemporaryDir a, b;
  QVERIFY(makeRunCopy(a));
  QVERIFY(makeRunCopy(b));
  MainWindow w;
  QVERIFY(openAndWait(w, {a.path()}));
  QVERIFY(openAndWait(w, {b.path(), m_runsDir + "/tiny/tiny_step100.pt"}));
  QList<QStringList> recent = MainWindow::recentPaths();
  QCOMPARE(recent.size(), 2);
  QCOMPARE(recent[0], (QStringList{cleanAbsolute(b.path()),
                                   cleanAbsolute(m_runsDir + "/tiny/tiny_step100.pt")}));
  QCOMPARE(recent[1], QStringList{cleanAbsolute(a.path())});
  // Opening again moves it to the top without a duplicate.
  QVERIFY(openAndWait(w, {a.path() + "/"}));
  recent = MainWindow::recentPaths();
  QCOMPARE(recent.size(), 2);
  QCOMPARE(recent[0], QStringList{cleanAbsolute(a.path())});
  // A path that does not exist (a typo on the command line) is not remembered.
  w.openPaths({a.path() + "/missing"});
  QCOMPARE(MainWindow::recentPaths().size(), 2);
  QCOMPARE(MainWindow::recentPaths().front(), QStringList{cleanAbsolute(a.path())});
  // At most ten are kept, and a new window sees them (they live in QSettings).
  for (int i = 0; i < 12; ++i) {
    QVERIFY(QDir(a.path()).mkpath("dir-" + QString::number(i)));
    w.openPaths({a.path() + "/dir-" + QString::number(i)});
  }
  QCOMPARE(MainWindow::recentPaths().size(), 10);
  QCOMPARE(MainWindow::recentPaths().front(), QStringList{cleanAbsolute(a.path() + "/dir-11")});
  MainWindow::clearRecentPaths();
  QVERIFY(MainWindow::recentPaths().isEmpty());
}

void TestBrowser::layoutIsRemembered() {
  QSettings().remove("window");
  {
    MainWindow w;
    QVERIFY(!w.restoreLayout());
    // A first start: 1280x800 where the screen has room, else the screen's
    // available area (the offscreen platform's screen is 800x600).
    const QSize room = w.screen()->availableGeometry().size();
    QCOMPARE(w.size(), QSize(std::min(1280, room.width()), std::min(800, room.height())));
    QVERIFY(room.width() >= 1280 || w.width() <= room.width());
    w.resize(1000, 700);
    auto* dock = w.findChild<QDockWidget*>("experimentsDock");
    QVERIFY(dock);
    w.removeDockWidget(dock);
    w.addDockWidget(Qt::RightDockWidgetArea, dock);
    dock->show();
    w.saveLayout();
  }
  MainWindow w2;
  QVERIFY(w2.restoreLayout());
  QCOMPARE(w2.size(), QSize(1000, 700));
  auto* dock = w2.findChild<QDockWidget*>("experimentsDock");
  QCOMPARE(w2.dockWidgetArea(dock), Qt::RightDockWidgetArea);
}

void TestBrowser::dropOpensPaths() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  MainWindow w;
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(dir.path()), QUrl("https://example.com/not-a-file.pt")});
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&w, &enter);
  QVERIFY(enter.isAccepted());
  QSignalSpy loaded(&w, &MainWindow::loaded);
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&w, &drop);
  QCOMPARE(w.openedPaths(), QStringList{dir.path()});  // local files only
  QVERIFY(loaded.count() == 1 || loaded.wait(kTimeoutMs));
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(2));

  // Something that is not a file is refused.
  QMimeData text;
  text.setText("hello");
  QDragEnterEvent refuse(QPoint(10, 10), Qt::CopyAction, &text, Qt::LeftButton, Qt::NoModifier);
  refuse.setAccepted(false);
  QCoreApplication::sendEvent(&w, &refuse);
  QVERIFY(!refuse.isAccepted());
}

// A checkpoint that would run code in Python carries a badge, and so does its
// run; the tooltip names the globals, the Summary's first line the verdict.
void TestBrowser::safetyBadge() {
  QTemporaryDir dir;
  QVERIFY(makeRunCopy(dir));
  const QString evil = dir.path() + "/tiny/tiny_step300.pt";
  QVERIFY(copyFile(m_root + "/hostile/pwn_eval.pt", evil));
  MainWindow w;
  QAbstractItemModelTester tester(w.checkpointModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(openAndWait(w, {dir.path()}));
  CheckpointListModel* model = w.checkpointModel();
  const QModelIndex bad = model->indexOfPath(evil);
  QVERIFY(bad.isValid());
  QCOMPARE(bad.data(int(Role::Verdict)).toString(), QStringLiteral("dangerous"));
  const QString tip = bad.data(Qt::ToolTipRole).toString();
  QVERIFY2(tip.contains("Would run code") && tip.contains("builtins.eval"), qPrintable(tip));
  const QModelIndex good = model->indexOfPath(dir.path() + "/tiny/tiny_step100.pt");
  QVERIFY(good.isValid());
  QVERIFY(good.data(int(Role::Verdict)).toString() != QStringLiteral("dangerous"));
  const QIcon badIcon = bad.data(Qt::DecorationRole).value<QIcon>();
  const QIcon goodIcon = good.data(Qt::DecorationRole).value<QIcon>();
  QVERIFY(!badIcon.isNull());
  QVERIFY(badIcon.pixmap(16).toImage() != goodIcon.pixmap(16).toImage());
  const QModelIndex run = model->indexOfRun(dir.path() + "/tiny");
  QVERIFY(run.isValid());
  QCOMPARE(run.data(int(Role::Verdict)).toString(), QStringLiteral("dangerous"));
  QVERIFY(run.data(Qt::ToolTipRole).toString().contains("would run code"));

  // Selecting it: the Summary starts with the verdict.
  QSignalSpy shown(&w, &MainWindow::summaryShown);
  w.checkpointView()->setCurrentIndex(w.browserPanel()->proxy()->mapFromSource(bad));
  QTRY_VERIFY(shown.count() >= 1);
  QTRY_VERIFY(w.inspector()->text().contains("DANGEROUS"));
  const QString text = w.inspector()->text();
  QVERIFY2(text.contains("builtins.eval"), qPrintable(text));
  QVERIFY(!QFileInfo::exists(m_root + "/hostile/PWNED"));
}

// A checkpoint written by many ranks is one row with a badge saying so (its
// rank files are no rows of their own); a click on it shows it.
void TestBrowser::shardedBadge() {
  QTemporaryDir dir;
  const QString sharded = m_root + "/sharded";
  QVERIFY(copyTree(sharded + "/fsdp_ws2", dir.path() + "/run/fsdp_ws2"));
  QVERIFY(copyTree(sharded + "/ds_z3_ws3/global_step1000", dir.path() + "/run/global_step1000"));
  // FSDP at 3 ranks with rank 1's file gone (make_sharded.py removed it).
  QVERIFY(copyTree(sharded + "/hostile/fsdp_missing", dir.path() + "/run/fsdp_missing"));
  QVERIFY(!QFileInfo::exists(dir.path() + "/run/fsdp_missing/model_rank1.pt"));
  MainWindow w;
  w.resize(1280, 800);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY(openAndWait(w, {dir.path()}));
  CheckpointListModel* model = w.checkpointModel();
  const QModelIndex fsdp = model->indexOfPath(dir.path() + "/run/fsdp_ws2");
  QVERIFY(fsdp.isValid());
  QCOMPARE(fsdp.data(Qt::DisplayRole).toString(),
           QStringLiteral("fsdp_ws2  [sharded: FSDP, 2 ranks, 2 files]"));
  const QModelIndex ds = model->indexOfPath(dir.path() + "/run/global_step1000");
  QVERIFY(ds.isValid());
  QCOMPARE(ds.data(Qt::DisplayRole).toString(),
           QStringLiteral("global_step1000  [sharded: DeepSpeed, 3 ranks, 6 files]"));
  // Its step from the folder's name (FSDP files say none) or DeepSpeed's global_steps.
  QCOMPARE(ds.data(int(Role::Step)).toLongLong(), 1000);
  // A missing rank file is said on the badge, as ls says it.
  const QModelIndex gone = model->indexOfPath(dir.path() + "/run/fsdp_missing");
  QVERIFY(gone.isValid());
  const QModelIndex goneShown = w.browserPanel()->proxy()->mapFromSource(gone);
  QVERIFY(goneShown.isValid());
  QCOMPARE(goneShown.data(Qt::DisplayRole).toString(),
           QStringLiteral("fsdp_missing  [sharded: FSDP, 3 ranks, 3 files, 1 missing]"));
  w.checkpointView()->scrollTo(goneShown);
  QVERIFY(!w.checkpointView()->visualRect(goneShown).isEmpty());
  const QStringList rows = visiblePaths(w.browserPanel()->proxy());
  QCOMPARE(rows.size(), 3);
  for (const QString& r : rows) QVERIFY2(!r.endsWith(".pt"), qPrintable(r));
  // The size a person sees is every file's together.
  qint64 total = 0;
  for (const QFileInfo& f : QDir(dir.path() + "/run/fsdp_ws2").entryInfoList(QDir::Files))
    total += f.size();
  QVERIFY(fsdp.data(Qt::ToolTipRole).toString().contains("One checkpoint of 2 files"));
  QCOMPARE(fsdp.siblingAtColumn(int(CheckpointListModel::Column::Size))
               .data(int(Role::SortKey))
               .toULongLong(),
           quint64(total));

  // A click on the row (at where the view draws it) shows that checkpoint.
  QTreeView* view = w.checkpointView();
  const QModelIndex shown = w.browserPanel()->proxy()->mapFromSource(fsdp);
  view->scrollTo(shown);
  QSignalSpy summary(&w, &MainWindow::summaryShown);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(shown).center());
  QCOMPARE(view->currentIndex(), shown);
  QTRY_VERIFY(summary.count() >= 1);
  QTRY_VERIFY2(w.inspector()->text().contains("fsdp_ws2"), qPrintable(w.inspector()->text()));
}

// The safety of a sharded checkpoint is its worst file's: the row of a DCP
// folder whose rank 2 file would call os.system carries the danger, and the
// Summary's Safety row a click shows names that file (it said "unknown: the
// scan stopped: ... is a directory"). Which file and which global come from
// make_sharded.py's manifest.
void TestBrowser::shardedSafety() {
  QTemporaryDir dir;
  const QString sharded = m_root + "/sharded";
  QFile mf(sharded + "/manifest.json");
  QVERIFY(mf.open(QIODevice::ReadOnly));
  const QJsonObject evil = QJsonDocument::fromJson(mf.readAll())
                               .object()["safety"]
                               .toObject()["hostile/dcp_evil"]
                               .toObject();
  const QString file = evil["file"].toString();
  const QString global = evil["dangerous"].toString();
  QCOMPARE(file, QStringLiteral("__2_0.distcp"));
  QVERIFY(copyTree(sharded + "/hostile/dcp_evil", dir.path() + "/run/dcp_evil"));
  QVERIFY(copyTree(sharded + "/hf_st", dir.path() + "/run/hf_st"));
  MainWindow w;
  w.resize(1280, 800);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY(openAndWait(w, {dir.path()}));
  CheckpointListModel* model = w.checkpointModel();
  const QModelIndex bad = model->indexOfPath(dir.path() + "/run/dcp_evil");
  QVERIFY(bad.isValid());
  QCOMPARE(bad.data(int(Role::Verdict)).toString(), QStringLiteral("dangerous"));
  QVERIFY2(bad.data(Qt::ToolTipRole).toString().contains(global),
           qPrintable(bad.data(Qt::ToolTipRole).toString()));

  QTreeView* view = w.checkpointView();
  auto click = [&](const QModelIndex& source) {
    const QModelIndex shown = w.browserPanel()->proxy()->mapFromSource(source);
    view->scrollTo(shown);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(shown).center());
    return view->currentIndex() == shown;
  };
  QVERIFY(click(bad));
  const QString want =
      "Safety\nDANGEROUS: " + file + " would run code if loaded in Python (torch.load): " + global;
  QTRY_VERIFY2(w.inspector()->text().contains(want), qPrintable(w.inspector()->text()));
  QVERIFY(!w.inspector()->text().contains("is a directory"));

  // Safetensors shards hold no pickle: safe, every shard scanned.
  const QModelIndex good =
      model->indexOfPath(dir.path() + "/run/hf_st/model.safetensors.index.json");
  QVERIFY(good.isValid());
  QVERIFY(click(good));
  QTRY_VERIFY2(
      w.inspector()->text().contains("Safety\nsafe: 2 shard files, only tensors and plain data"),
      qPrintable(w.inspector()->text()));
  QVERIFY(!QFileInfo::exists(sharded + "/hostile/PWNED"));
}

QTEST_MAIN(TestBrowser)
#include "tst_browser.moc"
