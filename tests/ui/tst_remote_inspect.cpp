// Inspect of a checkpoint on another machine: a real OpenSSH server on
// loopback (tests/core/ssh_server.h) and the real agent behind it. A click
// on a checkpoint's row must show the Summary, Parameters and Metadata of
// the same file opened here, a click on a tensor its statistics and values
// as computed here (a checkpoint file opened by its location too); Cancel
// while the host is slow to answer stops the request (the agent is sent
// `cancel` with its id) and shows no error.
#include <qcustomplot.h>
#include <QApplication>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include "../core/copy_tree.h"
#include "../core/ssh_server.h"
#include "browser/checkpointlistmodel.h"
#include "inspector/inspectorwidget.h"
#include "inspector/metadatamodel.h"
#include "inspector/optimizermodel.h"
#include "inspector/parametermodel.h"
#include "inspector/summarywidget.h"
#include "inspector/tensorview.h"
#include "inspector/valuetablemodel.h"
#include "mainwindow.h"
#include "window_driver.h"

using ckpt::MainWindow;

namespace {

// Every row of a tree model with its columns' texts, depth first.
QStringList treeRows(const QAbstractItemModel* m, const QModelIndex& parent = {}, int depth = 0) {
  QStringList out;
  for (int r = 0; r < m->rowCount(parent); ++r) {
    QStringList cells{QString::number(depth)};
    for (int c = 0; c < m->columnCount(parent); ++c)
      cells << m->index(r, c, parent).data().toString();
    out << cells.join('|');
    out << treeRows(m, m->index(r, 0, parent), depth + 1);
  }
  return out;
}

// The first checkpoint row that is not the current one (opening a folder
// selects one: a click there would change nothing).
QModelIndex firstCheckpoint(QTreeView* view) {
  const QAbstractItemModel* m = view->model();
  const QModelIndex current = view->currentIndex().siblingAtColumn(0);
  std::function<QModelIndex(const QModelIndex&)> find = [&](const QModelIndex& parent) {
    for (int r = 0; r < m->rowCount(parent); ++r) {
      const QModelIndex i = m->index(r, 0, parent);
      if (m->rowCount(i) == 0 && parent.isValid() && i != current) return i;
      if (const QModelIndex below = find(i); below.isValid()) return below;
    }
    return QModelIndex();
  };
  return find({});
}

// Clicks `index` where it is drawn, as a person does.
bool clickRow(QAbstractItemView* view, const QModelIndex& index) {
  view->scrollTo(index);
  const QRect rect = view->visualRect(index);
  if (!rect.isValid()) return false;
  QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, rect.center());
  return true;
}

// What the Inspect tab shows once a checkpoint row is clicked.
struct Shown {
  QString summary;
  QStringList parameters, metadata, tensors;
};

}  // namespace

class TestRemoteInspect : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_dir;

  [[nodiscard]] QString host() const { return QString("ssh://127.0.0.1:%1").arg(m_server.port()); }

  // Clicks the first checkpoint's row and waits for its Summary.
  static bool showFirstCheckpoint(MainWindow& w, QString* path) {
    QSignalSpy shown(&w, &MainWindow::summaryShown);
    const QModelIndex row = firstCheckpoint(w.checkpointView());
    if (!row.isValid() || !clickRow(w.checkpointView(), row)) return false;
    if (!shown.wait(60000)) return false;
    *path = shown.last().at(0).toString();
    return true;
  }

  static Shown shownOf(MainWindow& w) {
    ckpt::InspectorWidget* in = w.inspector();
    Shown s;
    s.summary = in->text();
    s.parameters = treeRows(in->parameterModel());
    s.metadata = treeRows(in->metadataModel());
    s.tensors = treeRows(in->summaryWidget()->tensorView()->model());
    return s;
  }

  // Clicks the tensor table's row `row` and waits for its statistics.
  static bool showTensor(MainWindow& w, int row) {
    QTableView* table = w.inspector()->summaryWidget()->tensorView();
    QSignalSpy ready(w.inspector()->tensorView(), &ckpt::TensorView::statsReady);
    if (!clickRow(table, table->model()->index(row, 0))) return false;
    return ready.count() > 0 || ready.wait(60000);
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_dir = m_tmp.path() + "/exp";
    QVERIFY(ckpt::test::copyTree(QStringLiteral(CKPT_FIXTURE_DIR) + "/experiment", m_dir));
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
  }

  void remoteInspectEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    MainWindow local;
    local.resize(1200, 800);
    local.show();
    QVERIFY(QTest::qWaitForWindowExposed(&local));
    QVERIFY(ckpt::test::openAndWait(local, {m_dir}, 60000));
    QString localPath;
    QVERIFY(showFirstCheckpoint(local, &localPath));
    const Shown here = shownOf(local);
    QVERIFY2(here.summary.contains("Parameters"), qPrintable(here.summary));
    QVERIFY(here.parameters.size() > 5);
    QVERIFY(here.tensors.size() > 2);

    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(ckpt::test::openAndWait(w, {host() + m_dir}, 60000));
    QVERIFY(w.isRemote());
    QString remotePath;
    QVERIFY(showFirstCheckpoint(w, &remotePath));
    QCOMPARE(remotePath, host() + localPath);
    QVERIFY(!w.findChild<QMessageBox*>());
    Shown there = shownOf(w);
    // The Summary is of the file where it is: ssh://127.0.0.1:PORT/path.
    QCOMPARE(w.inspector()->shownPath(), host() + localPath);
    QVERIFY2(there.summary.contains("\n" + host() + localPath + "\n"), qPrintable(there.summary));
    there.summary.replace(host() + localPath, localPath);
    QCOMPARE(there.summary, here.summary);
    QCOMPARE(there.parameters, here.parameters);
    QCOMPARE(there.metadata, here.metadata);
    QCOMPARE(there.tensors, here.tensors);

    // A tensor: its statistics computed on the host, its values read from there.
    // A matrix (its values are rows and columns), not a vector of ones.
    int row = -1;
    for (int r = 0; r < here.tensors.size() && row < 0; ++r)
      if (QRegularExpression("\\[\\d+, \\d+\\]").match(here.tensors[r]).hasMatch()) row = r;
    QVERIFY2(row >= 0, qPrintable(here.tensors.join('\n')));
    QVERIFY(showTensor(local, row));
    QVERIFY2(showTensor(w, row), qPrintable(w.inspector()->tensorView()->statsText() + " / " +
                                            w.statusBar()->currentMessage()));
    ckpt::TensorView* tl = local.inspector()->tensorView();
    ckpt::TensorView* tr = w.inspector()->tensorView();
    QVERIFY(!tl->statsText().isEmpty());
    // The same numbers; the subtitle says where the tensor is.
    QString remoteStats = tr->statsText();
    QVERIFY2(remoteStats.contains(", on " + host() + localPath), qPrintable(remoteStats));
    remoteStats.replace(", on " + host() + localPath, QString());
    QCOMPARE(remoteStats, tl->statsText());
    ckpt::ValueTableModel* vl = tl->valueModel();
    ckpt::ValueTableModel* vr = tr->valueModel();
    QCOMPARE(vr->totalRows(), vl->totalRows());
    QCOMPARE(vr->columnCount(), vl->columnCount());
    (void)vl->index(0, 0).data();  // asks for the first block
    (void)vr->index(0, 0).data();
    QTRY_VERIFY_WITH_TIMEOUT(
        vl->index(0, 0).data(int(ckpt::ValueTableModel::Role::Value)).isValid(), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(
        vr->index(0, 0).data(int(ckpt::ValueTableModel::Role::Value)).isValid(), 30000);
    const int rows = std::min(vl->rowCount(), 20);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < vl->columnCount(); ++c)
        QCOMPARE(vr->index(r, c).data().toString(), vl->index(r, c).data().toString());
    // The histogram and heat map, computed on the host, drawn as the local ones.
    QVERIFY(!tr->histogramPlot()->isHidden() && !tr->heatMapPlot()->isHidden());
    QVERIFY(!tl->histogramPlot()->isHidden() && !tl->heatMapPlot()->isHidden());
    QVERIFY(tr->analysis() && tl->analysis());
    const ckpt::Histogram& hr = tr->analysis()->histogram;
    QCOMPARE(hr.counts, tl->analysis()->histogram.counts);
    QCOMPARE(hr.lo, tl->analysis()->histogram.lo);
    QCOMPARE(hr.hi, tl->analysis()->histogram.hi);
    const ckpt::HeatMap& mr = tr->analysis()->heatMap;
    QVERIFY(mr.rows > 0);
    QCOMPARE(mr.rows, tl->analysis()->heatMap.rows);
    QCOMPARE(mr.cols, tl->analysis()->heatMap.cols);
    QCOMPARE(mr.values, tl->analysis()->heatMap.values);
    QVERIFY(tr->histogramPlot()->plottable(0)->interface1D()->dataCount() == int(hr.counts.size()));
    // torch.histc over [min, max] of the same tensor (stats_reference.py, run now).
    const QString ref = m_tmp.path() + "/torch_stats.json";
    QProcess py;
    py.start(QStringLiteral(CKPT_TORCH_PYTHON),
             {QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/stats_reference.py", "checkpoint",
              localPath, ref, QString::number(ckpt::TensorView::kBins)});
    QVERIFY(py.waitForFinished(60000));
    QVERIFY2(py.exitCode() == 0, py.readAllStandardError().constData());
    QFile refFile(ref);
    QVERIFY(refFile.open(QIODevice::ReadOnly));
    const QJsonObject torchTensors =
        QJsonDocument::fromJson(refFile.readAll()).object().value("tensors").toObject();
    QString name = here.tensors[row].section('|', 1, 1);
    if (name.startsWith("model_state.")) name = name.mid(int(strlen("model_state.")));
    const QJsonObject hist = torchTensors.value(name).toObject().value("hist").toObject();
    QVERIFY2(!hist.isEmpty(), qPrintable(name + " not in torch's reference"));
    const QJsonArray counts = hist.value("counts").toArray();
    QCOMPARE(int(hr.counts.size()), counts.size());
    for (int i = 0; i < counts.size(); ++i)
      QCOMPARE(hr.counts[size_t(i)], uint64_t(counts[i].toInteger()));
    QVERIFY(!w.findChild<QMessageBox*>());
  }

  // One checkpoint file on the host opened by its location (ssh://host/
  // run/file.pt, as a person pastes it): listed as files opened here are,
  // under the host's "Files", and its Summary and tensors are those of the
  // same file opened here. No message box.
  void oneRemoteFileOpens() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QString file;
    QDirIterator it(m_dir, {"*.pt"}, QDir::Files, QDirIterator::Subdirectories);
    if (it.hasNext()) file = it.next();
    QVERIFY(!file.isEmpty());
    auto open = [](MainWindow& w, const QString& path, Shown* shown) {
      w.resize(1000, 700);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QSignalSpy summary(&w, &MainWindow::summaryShown);
      QVERIFY(ckpt::test::openAndWait(w, {path}, 60000));
      QVERIFY(summary.count() > 0 || summary.wait(60000));
      QCOMPARE(summary.last().at(0).toString(), path);
      *shown = shownOf(w);
    };
    MainWindow local;
    Shown here;
    open(local, file, &here);
    QVERIFY2(here.summary.contains("Parameters"), qPrintable(here.summary));

    MainWindow w;
    Shown there;
    open(w, host() + file, &there);
    QVERIFY(w.isRemote());
    QVERIFY(!w.findChild<QMessageBox*>());
    const QAbstractItemModel* m = w.checkpointView()->model();
    QCOMPARE(m->rowCount(), 1);
    QCOMPARE(m->index(0, 0).data().toString(), QString("127.0.0.1:Files"));
    QCOMPARE(m->rowCount(m->index(0, 0)), 1);
    QCOMPARE(m->index(0, 0, m->index(0, 0)).data().toString(), QFileInfo(file).fileName());
    there.summary.replace(host() + file, file);
    QCOMPARE(there.summary, here.summary);
    QCOMPARE(there.tensors, here.tensors);
    QCOMPARE(there.metadata, here.metadata);
  }

  // The Optimizer tab of a checkpoint with Adam state on the host: the
  // exp_avg / exp_avg_sq statistics computed there (a `stats` each), every
  // cell the one the same file shows here.
  void optimizerStatsOnHost() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString dir = m_tmp.path() + "/opt/tiny";
    QVERIFY(ckpt::test::copyTree(QStringLiteral(CKPT_FIXTURE_DIR) + "/runs/tiny", dir));
    auto optimizerRows = [](MainWindow& w, const QString& where, QStringList* rows) {
      w.resize(1200, 800);
      w.show();
      if (!QTest::qWaitForWindowExposed(&w) || !ckpt::test::openAndWait(w, {where}, 60000))
        return false;
      QString path;
      if (!showFirstCheckpoint(w, &path)) return false;
      ckpt::InspectorWidget* in = w.inspector();
      QSignalSpy ready(in, &ckpt::InspectorWidget::optimizerStatsReady);
      QTabBar* bar = in->tabs()->tabBar();
      const int tab = int(ckpt::InspectorWidget::Tab::Optimizer);
      QTest::mouseClick(bar, Qt::LeftButton, {}, bar->tabRect(tab).center());
      if (in->tabs()->currentIndex() != tab || !(ready.count() > 0 || ready.wait(60000)))
        return false;
      *rows = treeRows(in->optimizerModel());
      return true;
    };
    MainWindow local;
    QStringList here;
    QVERIFY(optimizerRows(local, m_tmp.path() + "/opt", &here));
    QVERIFY2(here.size() >= 3, qPrintable(here.join('\n')));
    // The statistics' columns are filled.
    const auto avgNorm = [](MainWindow& w) {
      const ckpt::OptimizerModel* m = w.inspector()->optimizerModel();
      return m->index(0, int(ckpt::OptimizerModel::Column::AvgNorm)).data().toString();
    };
    QVERIFY2(!avgNorm(local).isEmpty(), qPrintable(here.join('\n')));
    MainWindow w;
    QStringList there;
    QVERIFY2(optimizerRows(w, host() + m_tmp.path() + "/opt", &there),
             qPrintable(w.inspector()->tabs()->currentWidget()->objectName() + " " +
                        w.statusBar()->currentMessage()));
    QCOMPARE(there, here);
    QVERIFY(!w.findChild<QMessageBox*>());
  }

  // The host answers slowly: Cancel in the status bar stops the request,
  // the agent is sent `cancel` with its id, and nothing shows an error.
  void cancelWhileSlow() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    const QString log = m_tmp.path() + "/requests.jsonl";
    const QString wrapper = m_tmp.path() + "/slow-cli";
    {
      QFile f(wrapper);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QString("#!/bin/sh\nexec /usr/bin/python3 '%1' '%2' '%3' describe 5 \"$@\"\n")
                  .arg(QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/slow_agent.py",
                       QStringLiteral(CKPT_CLI), log)
                  .toUtf8());
      f.close();
      QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    }
    qputenv("CKPTSCOPE_REMOTE_CLI", wrapper.toUtf8());
    MainWindow w;
    w.resize(1000, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(ckpt::test::openAndWait(w, {host() + m_dir}, 60000));
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);

    const QModelIndex row = firstCheckpoint(w.checkpointView());
    QVERIFY(clickRow(w.checkpointView(), row));
    QPushButton* cancel = w.remoteCancelButton();
    QTRY_VERIFY(cancel->isVisible());
    QVERIFY(w.statusBar()->currentMessage().contains("on the host"));
    QTest::qWait(300);  // the request is with the agent
    QTest::mouseClick(cancel, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(w.statusBar()->currentMessage().startsWith("Stopped"), 10000);
    QVERIFY(!cancel->isVisible());
    // The held-back answer comes in later: dropped, never an error.
    QTest::qWait(6000);
    QVERIFY(!w.findChild<QMessageBox*>());
    QVERIFY2(!w.inspector()->text().contains("cannot", Qt::CaseInsensitive),
             qPrintable(w.inspector()->text()));

    // The agent was told: a cancel naming the describe's id.
    QFile f(log);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QJsonValue describeId;
    bool cancelled = false;
    for (const QByteArray& line : f.readAll().split('\n')) {
      const QJsonObject msg = QJsonDocument::fromJson(line).object();
      if (msg.value("method") == "describe") describeId = msg.value("id");
      if (msg.value("method") == "cancel" && !describeId.isUndefined() &&
          msg.value("params").toObject().value("id") == describeId)
        cancelled = true;
    }
    QVERIFY2(!describeId.isUndefined(), "the app never asked the host to describe the checkpoint");
    QVERIFY2(cancelled, "the app did not send cancel for the describe request");
  }
};

QTEST_MAIN(TestRemoteInspect)
#include "tst_remote_inspect.moc"
