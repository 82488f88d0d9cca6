// The browser while a folder is scanned (issue #26): the first runs are
// listed, with their checkpoints, while the rest are read; the whole
// result then adds the rest after them (CheckpointListModel::listedPrefix,
// restoreHandedOver). Split from tst_browser.cpp.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <algorithm>
#include <chrono>

#include <unistd.h>

#include "browser/checkpointlistmodel.h"
#include "browser/pathscan.h"
#include "ckpt/index/scanner.h"
#include "mainwindow.h"
#include "textformat.h"

using namespace ckpt;
using Role = CheckpointListModel::Role;

namespace {
constexpr int kTimeoutMs = 30'000;
}  // namespace

class TestBrowserScan : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    m_root = QStringLiteral(CKPT_FIXTURE_DIR);
    QCoreApplication::setOrganizationName("CkptScopeTest");
    QCoreApplication::setApplicationName("tst_browser_scan");
    QSettings().clear();
  }
  void firstRunsWhileScanning();
  void listedPrefix();

 private:
  QString m_root;
};

// Many runs of small checkpoints (issue #26): the first runs are in the
// tree, with their checkpoints, while the status line still counts the
// files; then every run. The folder is the many_runs fixture linked again
// and again until one scan of it takes about a second on this machine, so
// that the scan is still running when the first progress tick lists runs.
void TestBrowserScan::firstRunsWhileScanning() {
  const QString fixture = m_root + "/many_runs/runs";
  QVERIFY2(QFileInfo::exists(fixture + "/lr1e-4_seed0/step_100.pt"),
           "no fixtures: run ctest (make_many_runs_fixtures)");
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QStringList runs = QDir(fixture).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  int batches = 0;
  auto addBatches = [&](int upTo) {
    for (; batches < upTo; ++batches)
      for (const QString& run : runs) {
        const QString to = dir.path() + QStringLiteral("/b%1/").arg(batches) + run;
        if (!QDir().mkpath(to)) return false;
        for (const QString& f : QDir(fixture + "/" + run).entryList(QDir::Files))
          if (::link(QFile::encodeName(fixture + "/" + run + "/" + f).constData(),
                     QFile::encodeName(to + "/" + f).constData()) != 0)
            return false;
      }
    return true;
  };
  QVERIFY(addBatches(8));
  const auto t0 = std::chrono::steady_clock::now();
  (void)scanDirectory(pathToStd(dir.path()));
  const double ms8 =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  QVERIFY(addBatches(std::clamp(int(8 * 1000 / std::max(ms8, 1.0)), 8, 2000)));

  MainWindow w;
  w.resize(1000, 700);
  w.show();
  QSignalSpy scanned(&w, &MainWindow::scanFinished);
  w.openPaths({dir.path()});
  QAbstractItemModel* tree = w.checkpointView()->model();
  QTRY_VERIFY_WITH_TIMEOUT(tree->rowCount() > 0 || !scanned.isEmpty(), kTimeoutMs);
  QVERIFY2(scanned.isEmpty() && w.isScanning(), "the scan ended before any run was shown");
  const QModelIndex first = tree->index(0, 0);
  QCOMPARE(first.data().toString(), QStringLiteral("b0/lr1e-3_seed0"));
  QCOMPARE(tree->rowCount(first), 6);
  QVERIFY(tree->rowCount() < 36 * batches);
  QVERIFY2(w.statusBar()->currentMessage().startsWith(QStringLiteral("Scanning")),
           qPrintable(w.statusBar()->currentMessage()));
  // A checkpoint clicked while the rest are scanned stays the one selected
  // when the whole result replaces the rows (it was the first row again).
  const QModelIndex picked = tree->index(2, 0, first);
  const QString pickedPath = picked.data(int(Role::Path)).toString();
  QVERIFY(!pickedPath.isEmpty());
  QTreeView* view = w.checkpointView();
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(picked).center());
  QCOMPARE(view->currentIndex().data(int(Role::Path)).toString(), pickedPath);
  // The runs listed while scanning are the first of the result: the rest
  // are added after them, nothing is listed anew.
  QSignalSpy resets(w.checkpointModel(), &QAbstractItemModel::modelReset);
  QVERIFY(!scanned.isEmpty() || scanned.wait(kTimeoutMs * 4));
  QCOMPARE(resets.count(), 0);
  // What is listed is what a scan of the folder gives, run by run.
  const std::vector<BrowseGroup> listed = w.checkpointModel()->groups();
  const std::vector<BrowseGroup> whole = scanPaths({dir.path()});
  QCOMPARE(listed.size(), whole.size());
  for (size_t i = 0; i < listed.size(); ++i) {
    QCOMPARE(listed[i].name, whole[i].name);
    QVERIFY2(listed[i].checkpoints == whole[i].checkpoints, qPrintable(listed[i].name));
  }
  QCOMPARE(view->currentIndex().data(int(Role::Path)).toString(), pickedPath);
  QCOMPARE(w.checkpointModel()->groupCount(), size_t(36 * batches));
  QCOMPARE(w.checkpointModel()->checkpointCount(), size_t(211 * batches));
  QVERIFY(!w.statusBar()->currentMessage().startsWith(QStringLiteral("Scanning")));
}

void TestBrowserScan::listedPrefix() {
  // The rows are the first groups of a result only when every field of
  // every checkpoint is the same, in the same order.
  CheckpointListModel model;
  auto run = [](const QString& name, const std::string& verdict) {
    BrowseGroup g;
    g.name = name;
    g.path = "/x/" + name;
    for (int step : {100, 200}) {
      CheckpointEntry c;
      c.file = "step_" + std::to_string(step) + ".pt";
      c.path = ("/x/" + name).toStdString() + "/" + c.file;
      c.step = step;
      c.verdict = verdict;
      g.checkpoints.push_back(c);
    }
    return g;
  };
  const BrowseGroup a = run("a", "safe"), b = run("b", "safe"), c = run("c", "safe");
  QCOMPARE(model.listedPrefix({}), std::optional<size_t>(0));
  QCOMPARE(model.listedPrefix({a}), std::optional<size_t>(0));
  model.setGroups({a, b});
  QCOMPARE(model.listedPrefix({a, b}), std::optional<size_t>(2));
  QCOMPARE(model.listedPrefix({a, b, c}), std::optional<size_t>(2));
  QCOMPARE(model.listedPrefix({b, a}), std::nullopt);
  QCOMPARE(model.listedPrefix({a}), std::nullopt);
  QCOMPARE(model.listedPrefix({a, run("b", "dangerous")}), std::nullopt);
  BrowseGroup shorter = b;
  shorter.checkpoints.pop_back();
  QCOMPARE(model.listedPrefix({a, shorter, c}), std::nullopt);
  BrowseGroup moved = b;
  moved.path = "/y/b";
  QCOMPARE(model.listedPrefix({a, moved}), std::nullopt);

  // A run the scan handed over while it ran (moved to the rows, not
  // copied) holds its place in the result without its checkpoints: equal
  // when all else is.
  BrowseGroup place = b;
  place.checkpoints.clear();
  place.handedOver = true;
  QCOMPARE(model.listedPrefix({a, place, c}), std::optional<size_t>(2));
  BrowseGroup elsewhere = place;
  elsewhere.path = "/y/b";
  QCOMPARE(model.listedPrefix({a, elsewhere}), std::nullopt);
  // Handed over but not among the rows: the rest cannot simply be added.
  BrowseGroup notListed = c;
  notListed.checkpoints.clear();
  notListed.handedOver = true;
  QCOMPARE(model.listedPrefix({a, b, notListed}), std::nullopt);
  // Listed anew instead: the places take their checkpoints back from the rows.
  std::vector<BrowseGroup> result{place, a, c};
  restoreHandedOver(result, model.groups());
  QVERIFY(!result[0].handedOver);
  QVERIFY(result[0].checkpoints == b.checkpoints);
  QVERIFY(result[1].checkpoints == a.checkpoints);
  QVERIFY(result[2].checkpoints == c.checkpoints);
}

QTEST_MAIN(TestBrowserScan)
#include "tst_browser_scan.moc"
