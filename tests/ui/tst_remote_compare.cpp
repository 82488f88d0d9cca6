// Compare of two checkpoints on another machine: a real OpenSSH server on
// loopback (tests/core/ssh_server.h) and the real agent behind it. Two
// remote checkpoints clicked in the browser (Ctrl+click) and Ctrl+D must
// show the rows the same two files show compared here, computed on the host
// (`diff` with full); one tensor's relative change equals torch's
// (diff_reference.py run now); a remote checkpoint compared with a file
// here (Checkpoint > Compare With...) is compared here with the host's
// bytes, only the tensors that differ fetched, and shows what the two
// files show compared here; its Cancel stops it.
// Drift through a remote run (Ctrl+Shift+D) compares each pair on the host
// and shows the steps the run shows here.
#include <qcustomplot.h>
#include <QDir>
#include <QFileDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QProcess>
#include <QScopeGuard>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "../core/copy_tree.h"
#include "../core/ssh_server.h"
#include "compare/compareview.h"
#include "compare/diffmodel.h"
#include "compare/driftview.h"
#include "gestures.h"
#include "inspector/inspectorwidget.h"

using ckpt::CompareView;
using ckpt::DiffModel;

namespace {

// Every row of the Compare table as shown (sorted and filtered as on screen).
QStringList shownRows(CompareView* view) {
  QStringList out;
  const QAbstractItemModel* m = view->proxy();
  for (int r = 0; r < m->rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < m->columnCount(); ++c) cells << m->index(r, c).data().toString();
    out << cells.join('|');
  }
  return out;
}

// The last two checkpoints of the run `run` in the browser (the paths as its rows hold them).
bool lastTwo(MainWindow& w, QString* a, QString* b, const QString& run = "pair") {
  for (const ckpt::BrowseGroup& g : w.checkpointModel()->groups()) {
    if (!g.path.endsWith("/" + run)) continue;
    std::vector<QString> readable;
    for (const ckpt::CheckpointEntry& c : g.checkpoints)
      if (c.error.empty()) readable.push_back(QString::fromStdString(c.path));
    if (readable.size() < 2) continue;
    *a = readable[readable.size() - 2];
    *b = readable.back();
    return true;
  }
  return false;
}

// Ctrl+click on `a` and `b` in the browser, Ctrl+D, and the comparison's end.
bool compareClicked(MainWindow& w, const QString& a, const QString& b, bool* ok) {
  clickRow(w, a);
  clickRow(w, b, Qt::ControlModifier);
  QSignalSpy done(w.compareView(), &CompareView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_D));
  if (!done.wait(kTimeoutMs)) return false;
  *ok = done.back().front().toBool();
  return true;
}

// An agent behind a recorder (tests/python/slow_agent.py, holding nothing
// back): the requests the app sends go to `log`. Returns the program to
// give as CKPTSCOPE_REMOTE_CLI, empty when it cannot be written.
QString recordingCli(const QString& dir, const QString& log) {
  const QString wrapper = dir + "/recording-cli";
  QFile f(wrapper);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(QString("#!/bin/sh\nexec /usr/bin/python3 '%1' '%2' '%3' none 0 \"$@\"\n")
              .arg(QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/slow_agent.py",
                   QStringLiteral(CKPT_CLI), log)
              .toUtf8());
  f.close();
  if (!f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner)) return {};
  return wrapper;
}

// How many `diff` requests with every field (`full`) for a -> b the log holds.
int fullDiffsAsked(const QString& log, const QString& a, const QString& b) {
  QFile requests(log);
  if (!requests.open(QIODevice::ReadOnly)) return -1;
  int diffs = 0;
  for (const QByteArray& line : requests.readAll().split('\n')) {
    const QJsonObject r = QJsonDocument::fromJson(line).object();
    const QJsonObject params = r.value("params").toObject();
    if (r.value("method").toString() == "diff" && params.value("a").toString() == a &&
        params.value("b").toString() == b && params.value("full").toBool())
      ++diffs;
  }
  return diffs;
}

// Drift through the run of the checkpoint `path` (a click on its row, then
// Ctrl+Shift+D); false when it did not finish or finished with nothing shown.
bool driftClicked(MainWindow& w, const QString& path) {
  clickRow(w, path);
  QSignalSpy done(w.driftView(), &ckpt::DriftView::finished);
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
  return (done.count() > 0 || done.wait(kTimeoutMs)) && done.back().front().toBool();
}

}  // namespace

class TestRemoteCompare : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_dir;

  [[nodiscard]] QString host() const { return QString("ssh://127.0.0.1:%1").arg(m_server.port()); }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_dir = m_tmp.path() + "/exp";
    QVERIFY(ckpt::test::copyTree(QStringLiteral(CKPT_FIXTURE_DIR) + "/experiment", m_dir));
    // A pair of one modern_llm model trained on (make_diff_fixtures.py): every
    // block and module, as tst_gestures picks it.
    QFile pairs(QStringLiteral(CKPT_FIXTURE_DIR) + "/diff/expected.json");
    QVERIFY2(pairs.open(QIODevice::ReadOnly), "no diff fixtures: run ctest (make_diff_fixtures)");
    for (const QJsonValue& p :
         QJsonDocument::fromJson(pairs.readAll()).object().value("pairs").toArray()) {
      const QJsonObject o = p.toObject();
      const QJsonObject e = o.value("expected").toObject();
      if (!e.value("added").toArray().isEmpty() || !e.value("removed").toArray().isEmpty() ||
          e.value("tensors").toObject().isEmpty() || o.value("name").toString() == "same")
        continue;
      const QString diff = QStringLiteral(CKPT_FIXTURE_DIR) + "/diff/";
      QVERIFY(copyTo(diff + o.value("a").toString(), m_dir + "/pair/pair_step100.pt"));
      QVERIFY(copyTo(diff + o.value("b").toString(), m_dir + "/pair/pair_step200.pt"));
      break;
    }
    QVERIFY(QFile::exists(m_dir + "/pair/pair_step200.pt"));
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
  }

  void remoteCompareEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    MainWindow local;
    QVERIFY(openWindow(local, {m_dir}, {1200, 800}));
    QString a, b;
    QVERIFY(lastTwo(local, &a, &b));
    bool ok = false;
    QVERIFY(compareClicked(local, a, b, &ok));
    QVERIFY2(ok, qPrintable(local.compareView()->statusText()));
    const QStringList here = shownRows(local.compareView());
    QVERIFY2(here.size() > 20, qPrintable(here.join('\n')));

    // The agent behind a recorder (tests/python/slow_agent.py, holding nothing
    // back): what the app asked the host for is in the log.
    const QString log = m_tmp.path() + "/requests.jsonl";
    const QString wrapper = recordingCli(m_tmp.path(), log);
    QVERIFY(!wrapper.isEmpty());
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    MainWindow w;
    QVERIFY(openWindow(w, {host() + m_dir}, {1200, 800}));
    QVERIFY(w.isRemote());
    QString ra, rb;
    QVERIFY(lastTwo(w, &ra, &rb));
    QCOMPARE(ra, a);  // the browser's rows of a remote folder: paths on the host
    QVERIFY(compareClicked(w, ra, rb, &ok));
    CompareView* view = w.compareView();
    QVERIFY2(ok, qPrintable(view->statusText()));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
    // Compared where the files are: the title names them there.
    QCOMPARE(view->pathA(), host() + a);
    QCOMPARE(view->pathB(), host() + b);
    QCOMPARE(shownRows(view), here);
    // Computed on the host: the agent was asked for the pair's diff with every field.
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
    QCOMPARE(fullDiffsAsked(log, a, b), 1);
    QCOMPARE(view->statusText(), local.compareView()->statusText());
    QCOMPARE(view->metadataTable()->rowCount(), local.compareView()->metadataTable()->rowCount());
    QCOMPARE(view->blockPlot()->plottableCount(),
             local.compareView()->blockPlot()->plottableCount());
    QVERIFY(view->heatMap());

    // torch's numbers for the same pair, computed now: every finite relative change.
    const QString out = m_tmp.path() + "/torch.json";
    QProcess py;
    py.start(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/diff_reference.py", a, b, "--out", out});
    QVERIFY(py.waitForFinished(kTimeoutMs));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject torch =
        QJsonDocument::fromJson(f.readAll()).object().value("tensors").toObject();
    DiffModel* m = view->model();
    int changed = 0;
    for (int r = 0; r < m->rowCount(); ++r) {
      const QString name = m->index(r, int(DiffModel::Column::Name)).data().toString();
      const QJsonValue want = torch.value(name).toObject().value("rel_l2");
      if (!want.isDouble()) continue;
      const double got =
          m->index(r, int(DiffModel::Column::RelL2)).data(int(DiffModel::Role::Value)).toDouble();
      QVERIFY2(std::abs(got - want.toDouble()) <= 1e-9 * std::max(1.0, std::abs(want.toDouble())),
               qPrintable(QString("%1: %2 against torch's %3")
                              .arg(name)
                              .arg(got, 0, 'g', 17)
                              .arg(want.toDouble(), 0, 'g', 17)));
      if (want.toDouble() > 0) ++changed;
    }
    QVERIFY2(changed > 0, "no changed tensor checked against torch");

    // Swap compares B with A on the host too.
    QSignalSpy done(view, &CompareView::finished);
    QTest::mouseClick(view->swapButton(), Qt::LeftButton);
    QVERIFY(done.wait(kTimeoutMs));
    QVERIFY(done.back().front().toBool());
    QCOMPARE(view->pathA(), host() + b);
    QVERIFY(m->rowCount() == int(here.size()));
  }

  // Drift through a run of the host: each pair compared there (`diff` with
  // every field, in the request log), the steps those of the run here.
  void remoteDriftEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    MainWindow local;
    QVERIFY(openWindow(local, {m_dir}, {1200, 800}));
    QString a, b;
    QVERIFY(lastTwo(local, &a, &b));
    QVERIFY2(driftClicked(local, b), qPrintable(local.driftView()->statusText()));
    const std::vector<ckpt::DriftView::Step> here = local.driftView()->steps();
    QCOMPARE(here.size(), size_t(1));
    QVERIFY(here[0].error.isEmpty() && here[0].total > 0 && !here[0].perBlock.empty());

    const QString log = m_tmp.path() + "/drift-requests.jsonl";
    const QString wrapper = recordingCli(m_tmp.path(), log);
    QVERIFY(!wrapper.isEmpty());
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    auto restore = qScopeGuard([] { qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI); });
    MainWindow w;
    QVERIFY(openWindow(w, {host() + m_dir}, {1000, 700}));
    QVERIFY(w.isRemote());
    QVERIFY2(driftClicked(w, b), qPrintable(w.driftView()->statusText()));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.driftView()));
    const std::vector<ckpt::DriftView::Step>& there = w.driftView()->steps();
    QCOMPARE(there.size(), here.size());
    for (size_t i = 0; i < there.size(); ++i) {
      QVERIFY2(there[i].error.isEmpty(), qPrintable(there[i].error));
      QCOMPARE(there[i].from, host() + here[i].from);
      QCOMPARE(there[i].to, host() + here[i].to);
      QCOMPARE(there[i].blocks, here[i].blocks);
      QCOMPARE(there[i].perBlock, here[i].perBlock);
      QCOMPARE(there[i].total, here[i].total);
      QCOMPARE(there[i].largest, here[i].largest);
    }
    QCOMPARE(w.driftView()->table()->rowCount(), local.driftView()->table()->rowCount());
    QCOMPARE(fullDiffsAsked(log, a, b), 1);
  }

  // The same pair compared here: a click on `a`, Checkpoint > Compare
  // With... `other` (the file dialog answered); the rows shown.
  bool compareWith(MainWindow& w, const QString& a, const QString& other, bool* ok) {
    clickRow(w, a);
    QSignalSpy done(w.compareView(), &CompareView::finished);
    answerFileDialog(other);
    clickMenu(w, "Checkpoint", "Compare With...");
    if (done.count() == 0 && !done.wait(kTimeoutMs)) return false;
    *ok = done.back().front().toBool();
    return true;
  }

  // How many requests of `method` the log holds.
  static int asked(const QString& log, const QString& method) {
    QFile requests(log);
    if (!requests.open(QIODevice::ReadOnly)) return -1;
    int n = 0;
    for (const QByteArray& line : requests.readAll().split('\n'))
      if (QJsonDocument::fromJson(line).object().value("method").toString() == method) ++n;
    return n;
  }

  // A checkpoint on the host and a file here (Compare With...): compared
  // here with the host's bytes, the rows, metadata and status those two
  // files show compared here; a file equal to the host's fetches no tensor.
  void mixedPairIsCompared() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QString a, b;
    {
      MainWindow probe;
      QVERIFY(openWindow(probe, {m_dir}, {1000, 700}));
      QVERIFY(lastTwo(probe, &a, &b));
    }
    const QString here = m_tmp.path() + "/here/copy.pt";
    const QString same = m_tmp.path() + "/here/same.pt";
    QVERIFY(copyTo(b, here));
    QVERIFY(copyTo(a, same));
    MainWindow local;
    QVERIFY(openWindow(local, {m_dir}, {1000, 700}));
    bool ok = false;
    QVERIFY(compareWith(local, a, here, &ok));
    QVERIFY2(ok, qPrintable(local.compareView()->statusText()));
    const QStringList rowsHere = shownRows(local.compareView());
    QVERIFY(rowsHere.size() > 20);

    const QString log = m_tmp.path() + "/mixed-requests.jsonl";
    const QString wrapper = recordingCli(m_tmp.path(), log);
    QVERIFY(!wrapper.isEmpty());
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    auto restore = qScopeGuard([] { qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI); });
    MainWindow w;
    QVERIFY(openWindow(w, {host() + m_dir}, {1000, 700}));
    QVERIFY(compareWith(w, a, here, &ok));
    CompareView* view = w.compareView();
    QVERIFY2(ok, qPrintable(view->statusText()));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
    QCOMPARE(view->pathA(), host() + a);
    QCOMPARE(view->pathB(), here);
    QCOMPARE(shownRows(view), rowsHere);
    QCOMPARE(view->statusText(), local.compareView()->statusText());
    QCOMPARE(view->metadataTable()->rowCount(), local.compareView()->metadataTable()->rowCount());
    // The host sent its file without the tensors, then the tensors that differ.
    QCOMPARE(asked(log, "skeleton"), 1);
    const int fetched = asked(log, "tensorBytes");
    QVERIFY2(fetched > 10, qPrintable(QString::number(fetched)));
    QCOMPARE(fullDiffsAsked(log, a, b), 0);

    // A file here equal to the host's: its tensors are not fetched.
    QVERIFY(compareWith(w, a, same, &ok));
    QVERIFY2(ok, qPrintable(view->statusText()));
    QCOMPARE(asked(log, "skeleton"), 2);
    QCOMPARE(asked(log, "tensorBytes"), fetched);
    QVERIFY(view->model()->rowCount() > 20);
  }

  // A checkpoint of many files on the host (Hugging Face shards: its row is
  // the index) compared with one here (Compare With..., its index picked):
  // the rows, metadata and status those two show compared here; the host
  // sent its files without their storages' bytes, then the 4 tensors that
  // differ (make_cross_diff.py's cross.json).
  void shardedOnHostIsCompared() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString cross = QStringLiteral(CKPT_FIXTURE_DIR) + "/cross";
    QFile expected(cross + "/cross.json");
    QVERIFY2(expected.open(QIODevice::ReadOnly),
             "no fixtures: run ctest (make_cross_diff_fixtures)");
    const int changed =
        int(QJsonDocument::fromJson(expected.readAll()).object().value("changed").toArray().size());
    const QString dir = m_tmp.path() + "/shards";
    QVERIFY(ckpt::test::copyTree(cross + "/sharded_base", dir + "/sharded_base"));
    QVERIFY(ckpt::test::copyTree(cross + "/sharded_changed",
                                 m_tmp.path() + "/here-shards/sharded_changed"));
    const QString a = dir + "/sharded_base/pytorch_model.bin.index.json";
    const QString here = m_tmp.path() + "/here-shards/sharded_changed/pytorch_model.bin.index.json";
    MainWindow local;
    QVERIFY(openWindow(local, {dir}, {1000, 700}));
    // The dialog shows an index among the checkpoints (its first filter).
    QStringList filters;
    QTimer grab;
    connect(&grab, &QTimer::timeout, [&filters] {
      for (QWidget* top : QApplication::topLevelWidgets())
        if (auto* d = qobject_cast<QFileDialog*>(top); d && d->isVisible())
          filters = d->nameFilters();
    });
    grab.start(20);
    bool ok = false;
    QVERIFY(compareWith(local, a, here, &ok));
    grab.stop();
    QVERIFY2(ok, qPrintable(local.compareView()->statusText()));
    QVERIFY2(filters.value(0).contains("*.index.json"), qPrintable(filters.join(";;")));
    const QStringList rowsHere = shownRows(local.compareView());
    QVERIFY(rowsHere.size() > 20);

    const QString log = m_tmp.path() + "/sharded-requests.jsonl";
    const QString wrapper = recordingCli(m_tmp.path(), log);
    QVERIFY(!wrapper.isEmpty());
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    auto restore = qScopeGuard([] { qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI); });
    MainWindow w;
    QVERIFY(openWindow(w, {host() + dir}, {1000, 700}));
    QVERIFY(compareWith(w, a, here, &ok));
    CompareView* view = w.compareView();
    QVERIFY2(ok, qPrintable(view->statusText()));
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
    QCOMPARE(view->pathA(), host() + a);
    QCOMPARE(shownRows(view), rowsHere);
    QCOMPARE(view->statusText(), local.compareView()->statusText());
    QCOMPARE(view->metadataTable()->rowCount(), local.compareView()->metadataTable()->rowCount());
    QCOMPARE(asked(log, "skeleton"), 1);
    QCOMPARE(asked(log, "tensorBytes"), changed);
  }

  // `ckptscope --view compare ssh://host/a.pt b.pt` (the view set as
  // main.cpp sets it, then the paths opened): the host's checkpoint
  // compared with the file here, the rows those two show compared here.
  // Without the compare view the window says, where it stays, that a
  // remote location opens on its own, and lists nothing.
  void commandLineCompareAcross() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QString a, b;
    {
      MainWindow probe;
      QVERIFY(openWindow(probe, {m_dir}, {1000, 700}));
      QVERIFY(lastTwo(probe, &a, &b));
    }
    const QString here = m_tmp.path() + "/here/command-line.pt";
    QVERIFY(copyTo(b, here));
    MainWindow local;
    QVERIFY(openWindow(local, {m_dir}, {1000, 700}));
    bool ok = false;
    QVERIFY(compareWith(local, a, here, &ok));
    QVERIFY2(ok, qPrintable(local.compareView()->statusText()));

    MainWindow w;
    w.setView(MainWindow::View::Compare);
    w.resize(1000, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy done(w.compareView(), &CompareView::finished);
    w.openPaths({host() + a, here});
    QVERIFY(done.wait(kTimeoutMs));
    QVERIFY2(done.back().front().toBool(), qPrintable(w.compareView()->statusText()));
    QVERIFY(w.isRemote());
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.compareView()));
    QCOMPARE(w.compareView()->pathA(), host() + a);
    QCOMPARE(w.compareView()->pathB(), here);
    QCOMPARE(shownRows(w.compareView()), shownRows(local.compareView()));
    QCOMPARE(w.compareView()->statusText(), local.compareView()->statusText());

    MainWindow mixed;
    mixed.resize(1000, 700);
    mixed.show();
    QVERIFY(QTest::qWaitForWindowExposed(&mixed));
    mixed.openPaths({host() + m_dir, here});
    QVERIFY2(mixed.inspector()->text().contains("opens on its own"),
             qPrintable(mixed.inspector()->text()));
    QCOMPARE(mixed.tabs()->currentWidget(), static_cast<QWidget*>(mixed.inspector()));
    QVERIFY(!mixed.isRemote());
    QCOMPARE(mixed.checkpointView()->model()->rowCount(), 0);
  }

  // The host slow to send a tensor: the Compare tab's Cancel stops the
  // comparison (the agent is sent `cancel`), and nothing of it is shown.
  void mixedPairCancel() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QString a, b;
    {
      MainWindow probe;
      QVERIFY(openWindow(probe, {m_dir}, {1000, 700}));
      QVERIFY(lastTwo(probe, &a, &b));
    }
    const QString here = m_tmp.path() + "/here/cancel.pt";
    QVERIFY(copyTo(b, here));
    const QString log = m_tmp.path() + "/cancel-requests.jsonl";
    const QString wrapper = m_tmp.path() + "/slow-tensor-cli";
    {
      QFile f(wrapper);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QString("#!/bin/sh\nexec /usr/bin/python3 '%1' '%2' '%3' tensorBytes 5 \"$@\"\n")
                  .arg(QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/slow_agent.py",
                       QStringLiteral(CKPT_CLI), log)
                  .toUtf8());
      f.close();
      QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    }
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    auto restore = qScopeGuard([] { qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI); });
    MainWindow w;
    QVERIFY(openWindow(w, {host() + m_dir}, {1000, 700}));
    CompareView* view = w.compareView();
    QSignalSpy done(view, &CompareView::finished);
    clickRow(w, a);
    answerFileDialog(here);
    clickMenu(w, "Checkpoint", "Compare With...");
    // Waiting for the first tensor's held-back answer.
    QTRY_VERIFY_WITH_TIMEOUT(asked(log, "tensorBytes") > 0, 30000);
    QVERIFY(view->cancelButton()->isVisible() && view->cancelButton()->isEnabled());
    QTest::mouseClick(view->cancelButton(), Qt::LeftButton);
    QVERIFY(done.count() == 1 || done.wait(kTimeoutMs));
    QCOMPARE(done.back().front().toBool(), false);
    QCOMPARE(view->model()->rowCount(), 0);
    QVERIFY2(view->statusText().contains("Cancelled"), qPrintable(view->statusText()));
    QVERIFY(!w.findChild<QMessageBox*>());
    QCOMPARE(asked(log, "cancel"), 1);
  }
};

QTEST_MAIN(TestRemoteCompare)
#include "tst_remote_compare.moc"
