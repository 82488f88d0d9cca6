// The Shards tab of a checkpoint written by many ranks on another machine:
// a real OpenSSH server on loopback (tests/core/ssh_server.h) and the real
// agent behind it. Opened as ssh://127.0.0.1:PORT/..., a click on the
// sharded checkpoint's row shows the Shards tab, and every row and cell of
// it (tensors, and each tensor's chunks once its row is clicked), its
// heading and the split picture equal the same folder opened here; a row
// picked there shows that tensor's statistics computed on the host. A host
// whose `shards` answer lies (tests/python/lying_shards_agent.py) is refused
// with a message naming the host and the field, on the tab and in the
// Summary's notes.
#include <QLabel>
#include <QMessageBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "../core/ssh_server.h"
#include "gestures.h"
#include "inspector/inspectorwidget.h"
#include "inspector/shardview.h"
#include "inspector/tensorview.h"

using namespace ckpt;

namespace {

const QString kCli = QStringLiteral(CKPT_CLI);

bool copyTree(const QString& from, const QString& to) {
  if (!QDir().mkpath(to)) return false;
  for (const QFileInfo& f :
       QDir(from).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden)) {
    const QString target = to + "/" + f.fileName();
    if (f.isDir() ? !copyTree(f.filePath(), target) : !QFile::copy(f.filePath(), target))
      return false;
  }
  return true;
}

QStringList tableRows(const QAbstractItemModel* m) {
  QStringList out;
  for (int r = 0; r < m->rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < m->columnCount(); ++c) {
      const QModelIndex i = m->index(r, c);
      cells << i.data().toString();
      const QVariant swatch = i.data(Qt::DecorationRole);
      if (swatch.isValid()) cells << swatch.value<QColor>().name();
      cells << i.data(Qt::ToolTipRole).toString();
    }
    out << cells.join('|');
  }
  return out;
}

// Everything the Shards tab shows: the heading, every tensor row, and for
// each tensor (its row clicked) the detail line and every chunk row.
struct ShardsShown {
  QString heading;
  QStringList tensors;
  QStringList chunks;  // "tensor row: detail" then its chunk rows
};

ShardsShown shardsShown(ShardView* v) {
  ShardsShown s;
  s.heading = v->heading()->text();
  s.tensors = tableRows(v->tensorModel());
  QTableView* view = v->tensorView();
  for (int r = 0; r < v->tensorModel()->rowCount(); ++r) {
    const QModelIndex i = v->tensorModel()->index(r, 0);
    view->scrollTo(i);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(i).center());
    if (v->tensorIndex() != r) {
      s.chunks << QString("row %1 was clicked but %2 is shown").arg(r).arg(v->tensorIndex());
      continue;
    }
    s.chunks << QString::number(r) + ": " + v->detail()->text();
    s.chunks << tableRows(v->chunkModel());
  }
  return s;
}

}  // namespace

class TestRemoteShardView : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  ckpt::test::SshServer m_server;
  QString m_skip;
  QString m_dir;

  [[nodiscard]] QString host() const { return QString("ssh://127.0.0.1:%1").arg(m_server.port()); }

  // Clicks the row of `folder` and the Shards tab once its summary is shown.
  static void openShards(MainWindow& w, const QString& folder, const QString& shown) {
    clickRow(w, folder);
    QTRY_VERIFY2_WITH_TIMEOUT(w.inspector()->shownPath() == shown,
                              qPrintable(w.inspector()->shownPath()), 60000);
    QTabWidget* tabs = w.inspector()->tabs();
    QVERIFY(tabs->isTabVisible(int(InspectorWidget::Tab::Shards)));
    clickTab(tabs, "Shards");
    QCOMPARE(tabs->currentIndex(), int(InspectorWidget::Tab::Shards));
    QVERIFY(w.inspector()->shardView()->isVisible());
  }

  // `--remote-cli` for a host whose `shards` lies (lying_shards_agent.py MODE).
  QString lyingCli(const QString& mode) {
    const QString wrapper = m_tmp.path() + "/lying-" + mode;
    QFile f(wrapper);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(QString("#!/bin/sh\nexec /usr/bin/python3 '%1' '%2' %3 \"$@\"\n")
                .arg(QStringLiteral(CKPT_SOURCE_DIR) + "/tests/python/lying_shards_agent.py", kCli,
                     mode)
                .toUtf8());
    f.close();
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return wrapper;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_dir = m_tmp.path() + "/exp";
    const QString root = QStringLiteral(CKPT_FIXTURE_DIR) + "/sharded";
    QVERIFY(copyTree(root + "/dcp_ws3", m_dir + "/run/dcp_ws3"));
    QVERIFY(copyTree(root + "/hf_st", m_dir + "/run/hf_st"));
    QVERIFY(copyTree(root + "/fsdp_ws2", m_dir + "/run/fsdp_ws2"));
    QVERIFY(copyTree(root + "/hostile/dcp_missing", m_dir + "/run/dcp_missing"));
    QVERIFY(QFile::copy(root + "/reference.pt", m_dir + "/run/reference.pt"));
    m_skip = ckpt::test::SshServer::unavailable();
    if (!m_skip.isEmpty()) return;
    QString why;
    QVERIFY2(m_server.setUp(m_tmp.path() + "/sshd", &why), qPrintable(why));
    qputenv("CKPTSCOPE_SSH", m_server.sshCommand().toUtf8());
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
  }

  void cleanupTestCase() { m_server.stop(); }

  void remoteEqualsLocal_data() {
    QTest::addColumn<QString>("checkpoint");
    QTest::newRow("DCP, 3 ranks") << "dcp_ws3";
    QTest::newRow("Hugging Face index") << "hf_st/model.safetensors.index.json";
    QTest::newRow("FSDP rank files") << "fsdp_ws2";
    QTest::newRow("DCP, a rank missing") << "dcp_missing";
  }
  void remoteEqualsLocal() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(QString, checkpoint);
    const QString folder = m_dir + "/run/" + checkpoint;

    MainWindow local;
    QVERIFY(openWindow(local, {m_dir}, {1000, 700}));
    openShards(local, folder, folder);
    if (QTest::currentTestFailed()) return;
    const ShardsShown here = shardsShown(local.inspector()->shardView());
    QVERIFY2(here.heading.contains("sharded: "), qPrintable(here.heading));
    QVERIFY(here.tensors.size() > 3);

    MainWindow w;
    QVERIFY(openWindow(w, {host() + m_dir}, {1000, 700}));
    QVERIFY(w.isRemote());
    // A single file first: it has no Shards tab.
    clickRow(w, m_dir + "/run/reference.pt");
    QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->shownPath() == host() + m_dir + "/run/reference.pt",
                             60000);
    QVERIFY(!w.inspector()->tabs()->isTabVisible(int(InspectorWidget::Tab::Shards)));
    openShards(w, folder, host() + folder);
    if (QTest::currentTestFailed()) return;
    QVERIFY(!w.findChild<QMessageBox*>());
    ShardView* v = w.inspector()->shardView();
    const ShardsShown there = shardsShown(v);
    QCOMPARE(there.heading, here.heading);
    QCOMPARE(there.tensors, here.tensors);
    QCOMPARE(there.chunks, here.chunks);
    // The split picture of the tensor shown last, pixel for pixel.
    const QImage pr = v->picture()->grab().toImage();
    const QImage pl = local.inspector()->shardView()->picture()->grab().toImage();
    QCOMPARE(pr.size(), pl.size());
    QVERIFY(pr == pl);

    // A row picked there shows that tensor in the Tensor tab, its numbers
    // computed on the host as here (a complete tensor: the first row's).
    int row = -1;
    for (int r = 0; r < v->tensorModel()->rowCount() && row < 0; ++r)
      if (v->tensorModel()->index(r, int(ShardTensorModel::Column::Status)).data() == "complete")
        row = r;
    QVERIFY(row >= 0);
    for (MainWindow* win : {&local, &w}) {
      ShardView* sv = win->inspector()->shardView();
      QSignalSpy ready(win->inspector()->tensorView(), &TensorView::statsReady);
      const QModelIndex i = sv->tensorModel()->index(row, 0);
      QTest::mouseClick(sv->tensorView()->viewport(), Qt::LeftButton, {},
                        sv->tensorView()->visualRect(i).center());
      QVERIFY(ready.count() > 0 || ready.wait(60000));
    }
    QString remoteStats = w.inspector()->tensorView()->statsText();
    QVERIFY2(remoteStats.contains(", on " + host() + folder), qPrintable(remoteStats));
    remoteStats.replace(", on " + host() + folder, QString());
    QCOMPARE(remoteStats, local.inspector()->tensorView()->statsText());
  }

  // A host whose answer lies is refused: the tab says so, naming the host
  // and the field, and nothing of the lie is listed. An agent older than
  // `shards` is told apart (update it there).
  void lyingHostRefused_data() {
    QTest::addColumn<QString>("mode");
    QTest::addColumn<QString>("said");  // %1: the host as ssh reaches it
    QTest::addColumn<QString>("field");
    QTest::newRow("one tensor more counted") << "counts"
                                             << "%1 sent a wrong answer"
                                             << "shards.counts.tensors is 15 but 14";
    QTest::newRow("a 2^60-byte part") << "huge"
                                      << "%1 sent a wrong answer"
                                      << "shards.parts[0].size claims 1152921504606846976";
    QTest::newRow("a chunk of no part") << "part"
                                        << "%1 sent a wrong answer"
                                        << "chunks[0].part is 1000000, past the 3 parts";
    QTest::newRow("an agent older than shards") << "old"
                                                << "The agent on %1 is older than the Shards tab"
                                                << "update ckptscope-cli there";
  }
  void lyingHostRefused() {
    if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    QFETCH(QString, mode);
    QFETCH(QString, said);
    QFETCH(QString, field);
    const QString cli = lyingCli(mode);
    QVERIFY(!cli.isEmpty());
    qputenv("CKPTSCOPE_REMOTE_CLI", cli.toUtf8());
    MainWindow w;
    const bool opened = openWindow(w, {host() + m_dir}, {1000, 700});
    const QString folder = m_dir + "/run/dcp_ws3";
    if (opened) openShards(w, folder, host() + folder);
    qputenv("CKPTSCOPE_REMOTE_CLI", CKPT_CLI);
    QVERIFY(opened);
    if (QTest::currentTestFailed()) return;
    ShardView* v = w.inspector()->shardView();
    const QString endpoint = QString("127.0.0.1:%1").arg(m_server.port());
    const QString heading = v->heading()->toolTip();
    QVERIFY2(heading.contains(said.arg(endpoint)), qPrintable(heading));
    QVERIFY2(heading.contains(field), qPrintable(heading));
    QCOMPARE(v->tensorModel()->rowCount(), 0);
    QCOMPARE(v->chunkModel()->rowCount(), 0);
    QVERIFY2(w.inspector()->text().contains(field), qPrintable(w.inspector()->text()));
    QVERIFY(!w.findChild<QMessageBox*>());
  }
};

QTEST_MAIN(TestRemoteShardView)
#include "tst_remote_shardview.moc"
