// The first window: scanning, the checkpoint list, the summary, screenshots.
// Expectations come from the fixtures' manifest.json (written by Python with
// torch), never from numbers typed in here.
#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <map>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "inspector/inspectorwidget.h"
#include "inspector/tensortablemodel.h"
#include "mainwindow.h"
#include "screenshot.h"

using namespace ckpt;

namespace {

constexpr int kLoadTimeoutMs = 60'000;

QString cleanAbsolute(const QString& p) {
  return QDir::cleanPath(QFileInfo(p).absoluteFilePath());
}

// Distinct colours over a grid of sample points: a blank or single-colour
// image has one or two; a rendered window with text has dozens.
int distinctColours(const QImage& image) {
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
  return int(colours.size());
}

using Role = CheckpointListModel::Role;

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void listsRunsFromManifest();
  void summaryShowsStepAndLoss_data();
  void summaryShowsStepAndLoss();
  void unreadableFileShowsError();
  void filesGroupAndMissingPaths();
  void emptyDirectory();
  void screenshotInProcess();
  void screenshotCommand();
  void screenshotUnwritable();

 private:
  // Opens `paths` in `w` and waits until the first summary is shown.
  static bool openAndWait(MainWindow& w, const QStringList& paths);
  [[nodiscard]] QString fixture(const QString& rel) const { return m_root + "/" + rel; }

  QString m_root;      // CKPT_FIXTURE_DIR
  QString m_runsDir;   // CKPT_FIXTURE_DIR/runs
  QJsonObject m_runs;  // manifest "runs": relative path -> {run, step, kind, loss, error}
  std::map<QString, int> m_tensorCounts;  // manifest "fixtures": relative path -> number of tensors
};

void TestMainWindow::initTestCase() {
  m_root = QStringLiteral(CKPT_FIXTURE_DIR);
  m_runsDir = m_root + "/runs";
  QFile manifest(m_root + "/manifest.json");
  QVERIFY2(manifest.open(QIODevice::ReadOnly),
           qPrintable("no fixtures in " + m_root + ": run ctest (make_fixtures sets them up)"));
  const QJsonObject doc = QJsonDocument::fromJson(manifest.readAll()).object();
  m_runs = doc.value("runs").toObject();
  QVERIFY(!m_runs.isEmpty());
  for (const QJsonValue& f : doc.value("fixtures").toArray()) {
    const QJsonObject o = f.toObject();
    m_tensorCounts[o.value("file").toString()] = int(o.value("tensors").toArray().size());
  }
}

bool TestMainWindow::openAndWait(MainWindow& w, const QStringList& paths) {
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths(paths);
  return loaded.count() == 1 || loaded.wait(kLoadTimeoutMs);
}

void TestMainWindow::listsRunsFromManifest() {
  MainWindow w;
  CheckpointListModel* model = w.checkpointModel();
  QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QSignalSpy scanned(&w, &MainWindow::scanFinished);
  QVERIFY(openAndWait(w, {m_runsDir}));
  QCOMPARE(scanned.count(), 1);
  QVERIFY(!w.isScanning());
  QVERIFY(w.windowTitle().startsWith(QString::fromUtf8("CkptScope — ")));
  QVERIFY(w.windowTitle().endsWith(cleanAbsolute(m_runsDir)));

  // The manifest grouped the way the browser groups: by directory under runs/.
  std::map<QString, std::vector<QString>> expected;
  for (auto it = m_runs.begin(); it != m_runs.end(); ++it)
    expected[QFileInfo(it.key()).path().mid(int(qstrlen("runs/")))].push_back(it.key());

  // Runs sit at the top or, for stage families (fam-pretrain, fam-sft, ...), one level down.
  QList<QModelIndex> runs;
  for (int g = 0; g < model->rowCount(); ++g) {
    const QModelIndex top = model->index(g, 0);
    if (!top.data(int(Role::IsFamily)).toBool()) {
      runs << top;
      continue;
    }
    QVERIFY(model->rowCount(top) >= 2);
    for (int r = 0; r < model->rowCount(top); ++r) runs << model->index(r, 0, top);
  }
  QCOMPARE(runs.size(), int(expected.size()));
  QCOMPARE(model->groupCount(), expected.size());
  for (const QModelIndex& group : runs) {
    const QString name = model->group(group)->name;
    QVERIFY2(expected.count(name), qPrintable("unexpected run " + name));
    QVERIFY(group.data(int(Role::IsGroup)).toBool());
    const auto& files = expected[name];
    QCOMPARE(model->rowCount(group), int(files.size()));
    for (int r = 0; r < model->rowCount(group); ++r) {
      const QModelIndex row = model->index(r, 0, group);
      const QString rel = QDir(m_root).relativeFilePath(row.data(int(Role::Path)).toString());
      QVERIFY2(m_runs.contains(rel), qPrintable("listed but not in the manifest: " + rel));
      const QJsonObject e = m_runs.value(rel).toObject();
      QCOMPARE(e.value("run").toString(), name);
      const QVariant step = row.data(int(Role::Step));
      if (e.value("step").isNull()) {
        QVERIFY2(!step.isValid(), qPrintable(rel));
      } else {
        QCOMPARE(step.toLongLong(), qint64(e.value("step").toDouble()));
        QCOMPARE(model->index(r, int(CheckpointListModel::Column::Step), group).data().toString(),
                 QString::number(step.toLongLong()));
      }
      const QVariant loss = row.data(int(Role::Loss));
      if (e.value("loss").isNull())
        QVERIFY2(!loss.isValid(), qPrintable(rel));
      else
        QCOMPARE(loss.toDouble(), e.value("loss").toDouble());
      QCOMPARE(row.data(int(Role::Kind)).toString(), e.value("kind").toString());  // null -> ""
      QCOMPARE(!row.data(int(Role::Error)).toString().isEmpty(), e.value("error").toBool());
    }
  }
  QCOMPARE(model->checkpointCount(), size_t(m_runs.size()));

  // Something is selected and shown from the start.
  // The tree shows the filter proxy's rows.
  const QModelIndex current =
      w.browserPanel()->proxy()->mapToSource(w.checkpointView()->currentIndex());
  QVERIFY(model->checkpoint(current));
  QCOMPARE(w.inspector()->shownPath(), current.data(int(Role::Path)).toString());
  QVERIFY(!w.inspector()->text().isEmpty());
}

void TestMainWindow::summaryShowsStepAndLoss_data() {
  QTest::addColumn<QString>("rel");
  int rows = 0;
  for (auto it = m_runs.begin(); it != m_runs.end(); ++it) {
    const QJsonObject e = it.value().toObject();
    if (!e.value("error").toBool() && !e.value("step").isNull() && !e.value("loss").isNull()) {
      QTest::newRow(qPrintable(it.key())) << it.key();
      ++rows;
    }
  }
  QVERIFY(rows >= 3);
}

void TestMainWindow::summaryShowsStepAndLoss() {
  QFETCH(QString, rel);
  const QJsonObject e = m_runs.value(rel).toObject();
  MainWindow w;
  QAbstractItemModelTester tester(w.inspector()->tensorModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  QVERIFY(openAndWait(w, {m_runsDir}));

  const QString path = fixture(rel);
  QSignalSpy shown(&w, &MainWindow::summaryShown);
  QVERIFY(w.selectPath(path));
  QTRY_VERIFY_WITH_TIMEOUT(cleanAbsolute(w.inspector()->shownPath()) == cleanAbsolute(path),
                           kLoadTimeoutMs);
  QVERIFY(shown.count() >= 1);

  const QString text = w.inspector()->text();
  const QString step = QString::number(qint64(e.value("step").toDouble()));
  // Four decimals, as the browser and the curves show a loss (the exact
  // value, Python's shortest round-trip digits, is in the Metadata tab).
  const QString loss = QString::number(e.value("loss").toDouble(), 'f', 4);
  QVERIFY2(text.contains(QRegularExpression("Step\\s+" + step + "\\b")), qPrintable(text));
  QVERIFY2(text.contains(QRegularExpression("Loss\\s+" + QRegularExpression::escape(loss) + "\\b")),
           qPrintable(loss + " not in:\n" + text));
  QVERIFY(!text.contains("Cannot read"));
  if (m_tensorCounts.count(rel))
    QCOMPARE(w.inspector()->tensorModel()->rowCount(), m_tensorCounts[rel]);
  QVERIFY(w.inspector()->tensorModel()->rowCount() > 0);
}

void TestMainWindow::unreadableFileShowsError() {
  const QString rel = QStringLiteral("runs/tiny/broken_step400.pt");
  QVERIFY(m_runs.value(rel).toObject().value("error").toBool());
  MainWindow w;
  QVERIFY(openAndWait(w, {m_runsDir}));
  const QModelIndex row = w.checkpointModel()->indexOfPath(fixture(rel));
  QVERIFY(row.isValid());
  QVERIFY(!row.data(int(Role::Error)).toString().isEmpty());

  QVERIFY(w.selectPath(fixture(rel)));
  QTRY_VERIFY_WITH_TIMEOUT(cleanAbsolute(w.inspector()->shownPath()) == cleanAbsolute(fixture(rel)),
                           kLoadTimeoutMs);
  const QString text = w.inspector()->text();
  QVERIFY2(text.contains("Cannot read this file"), qPrintable(text));
  QCOMPARE(w.inspector()->tensorModel()->rowCount(), 0);

  // And the window still works: another file after the broken one.
  QVERIFY(w.selectPath(fixture("runs/tiny/tiny_step100.pt")));
  QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->shownPath().endsWith("tiny_step100.pt"), kLoadTimeoutMs);
  QVERIFY(!w.inspector()->text().contains("Cannot read"));
}

void TestMainWindow::filesGroupAndMissingPaths() {
  MainWindow w;
  QAbstractItemModelTester tester(w.checkpointModel(),
                                  QAbstractItemModelTester::FailureReportingMode::QtTest);
  const QStringList files = {fixture("runs/tiny/tiny_step100.pt"),
                             fixture("runs/tiny/broken_step400.pt"), m_root + "/does/not/exist.pt"};
  QVERIFY(openAndWait(w, files));
  CheckpointListModel* model = w.checkpointModel();
  QCOMPARE(model->rowCount(), 1);
  const QModelIndex group = model->index(0, 0);
  QCOMPARE(group.data().toString(), QStringLiteral("Files"));
  QCOMPARE(model->rowCount(group), 3);
  for (int r = 0; r < 3; ++r) {
    const QModelIndex row = model->index(r, 0, group);
    QCOMPARE(cleanAbsolute(row.data(int(Role::Path)).toString()), cleanAbsolute(files[r]));
    QCOMPARE(row.data(int(Role::Error)).toString().isEmpty(), r == 0);
  }
  QCOMPARE(cleanAbsolute(w.inspector()->shownPath()), cleanAbsolute(files[0]));

  // The missing file, selected: its error in the summary.
  QVERIFY(w.selectPath(files[2]));
  QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->shownPath().endsWith("exist.pt"), kLoadTimeoutMs);
  QVERIFY(w.inspector()->text().contains("Cannot read this file"));
}

void TestMainWindow::emptyDirectory() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  MainWindow w;
  QVERIFY(openAndWait(w, {dir.path()}));
  QCOMPARE(w.checkpointModel()->rowCount(), 0);
  QVERIFY(w.inspector()->text().contains("No checkpoints found"));
}

void TestMainWindow::screenshotInProcess() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  MainWindow w;
  w.setAttribute(Qt::WA_DontShowOnScreen);
  w.resize(kScreenshotSize);
  w.show();
  QVERIFY(openAndWait(w, {m_runsDir}));
  const QString out = dir.filePath("sub/dir/window.png");  // parent directories are created
  QString error;
  QVERIFY2(saveScreenshot(&w, out, &error), qPrintable(error));
  const QImage image(out);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), kScreenshotSize);
  QVERIFY2(distinctColours(image) > 8, qPrintable(QString::number(distinctColours(image))));
}

void TestMainWindow::screenshotCommand() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString out = dir.filePath("demo.png");
  QProcess p;
  p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  p.start(QStringLiteral(CKPT_GUI_EXE), {"--screenshot", out, m_runsDir});
  QVERIFY2(p.waitForFinished(2 * kLoadTimeoutMs), "ckptscope --screenshot did not finish");
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), 0);
  const QImage image(out);
  QVERIFY2(!image.isNull(), qPrintable(out + " missing or not an image"));
  QCOMPARE(image.size(), kScreenshotSize);
  QVERIFY2(distinctColours(image) > 8, qPrintable(QString::number(distinctColours(image))));
}

void TestMainWindow::screenshotUnwritable() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  QFile blocker(dir.filePath("a-file"));
  QVERIFY(blocker.open(QIODevice::WriteOnly));
  blocker.close();
  const QString out = dir.filePath("a-file/shot.png");  // its "directory" is a file
  QProcess p;
  p.start(QStringLiteral(CKPT_GUI_EXE),
          {"--screenshot", out, fixture("runs/tiny/tiny_step100.pt")});
  QVERIFY(p.waitForFinished(2 * kLoadTimeoutMs));
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), 1);
  const QString err = QString::fromLocal8Bit(p.readAllStandardError());
  QVERIFY2(err.contains("cannot write") && err.contains(out), qPrintable(err));
  QVERIFY(!QFileInfo::exists(out));
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
