// Prune... in the window, driven by input events: a run of the prune
// fixtures (torch.save) opened, a checkpoint row clicked, Ctrl+Shift+P, the
// rules typed into the dialog, the list read as a person sees it (which
// files go, how much is freed: the sizes Python's os.stat gave), "Move 5 to
// Trash" clicked; then the files are in the desktop trash with their
// .trashinfo and the browser no longer lists them. Escape moves nothing.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDirIterator>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>
#include <QUrl>
#include <QtTest>
#include <cmath>
#include <functional>
#include <set>

#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "browser/prunedialog.h"
#include "ckpt/index/prune.h"
#include "mainwindow.h"
#include "textformat.h"

using namespace ckpt;

namespace {

constexpr int kTimeoutMs = 60'000;

// Calls `act` once on the next PruneDialog shown (polled: exec() blocks).
void onPruneDialog(std::function<void(PruneDialog*)> act) {
  auto* timer = new QTimer(qApp);
  timer->setInterval(50);
  QObject::connect(timer, &QTimer::timeout, timer, [timer, act] {
    auto* dialog = qobject_cast<PruneDialog*>(QApplication::activeModalWidget());
    if (!dialog || !dialog->isVisible()) return;
    timer->stop();
    timer->deleteLater();
    act(dialog);
  });
  timer->start();
}

// Types `text` into a spin box as a person would: click, select all, type.
void typeInto(QSpinBox* box, const QString& text) {
  QLineEdit* edit = box->findChild<QLineEdit*>();
  QTest::mouseClick(edit, Qt::LeftButton, {}, edit->rect().center());
  QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(edit, text);
}

std::set<QString> rowsWithFate(QTreeWidget* list, const QString& fate) {
  std::set<QString> out;
  for (int i = 0; i < list->topLevelItemCount(); ++i)
    if (list->topLevelItem(i)->text(3) == fate) out.insert(list->topLevelItem(i)->text(0));
  return out;
}

std::set<QString> filesIn(const QString& dir) {
  std::set<QString> out;
  for (const QString& f : QDir(dir).entryList(QDir::Files)) out.insert(f);
  return out;
}

}  // namespace

class TestPruneDialog : public QObject {
  Q_OBJECT

  // The Size column of the run's row, as the browser shows it.
  QString runSizeShown(MainWindow& w) {
    const QModelIndex checkpoint = w.checkpointModel()->indexOfPath(m_run + "/tiny_step300.pt");
    const QModelIndex run = checkpoint.parent();
    return w.checkpointModel()
        ->index(run.row(), int(CheckpointListModel::Column::Size), run.parent())
        .data(Qt::DisplayRole)
        .toString();
  }

  // The run row's tooltip, as hovering it shows.
  QString runToolTip(MainWindow& w) {
    const QModelIndex run = w.checkpointModel()->indexOfPath(m_run + "/tiny_step300.pt").parent();
    return run.data(Qt::ToolTipRole).toString();
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    qputenv("XDG_DATA_HOME",
            (m_tmp.path() + "/xdg").toLocal8Bit());  // the desktop trash, inside the test's folder
    const QString fixtures = QStringLiteral(CKPT_FIXTURE_DIR) + "/prune";
    QFile expected(fixtures + "/expected.json");
    QVERIFY2(expected.open(QIODevice::ReadOnly),
             "no prune fixtures: run ctest (make_prune_fixtures)");
    const QJsonObject figures = QJsonDocument::fromJson(expected.readAll()).object();
    m_sizes = figures["sizes"].toObject();
    m_optimizer = figures["optimizer_bytes"].toObject();
    m_run = m_tmp.path() + "/experiments/run";
    QVERIFY(QDir().mkpath(m_run));
    for (const QString& f : QDir(fixtures + "/run").entryList(QDir::Files))
      QVERIFY(QFile::copy(fixtures + "/run/" + f, m_run + "/" + f));
  }

  void pruneThroughTheDialog() {
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.activateWindow();
    QSignalSpy loaded(&w, &MainWindow::loaded);
    w.openPaths({m_tmp.path() + "/experiments"});
    QVERIFY(loaded.wait(kTimeoutMs));
    const std::set<QString> before = filesIn(m_run);
    QCOMPARE(before.size(), size_t(13));
    // Disk use: the run's row and the line under the tree say what Python's
    // os.stat adds up to, and how much of it the optimizer state is (the
    // bytes of its storages as torch.load sees them).
    qint64 all = 0, optimizer = 0;
    for (const QString& f : before) {
      all += m_sizes["run/" + f].toInteger();
      optimizer += m_optimizer["run/" + f].toInteger();
    }
    QVERIFY(optimizer > 0);
    const QString share = QString("%1 optimizer state (%2%)")
                              .arg(sizeText(uint64_t(optimizer)))
                              .arg(std::lround(100.0 * double(optimizer) / double(all)));
    QCOMPARE(runSizeShown(w), sizeText(uint64_t(all)));
    QCOMPARE(w.browserPanel()->totalsLabel()->text(),
             "13 checkpoints in 1 run: " + sizeText(uint64_t(all)) + " on disk, " + share);
    QVERIFY2(
        runToolTip(w).contains(sizeText(uint64_t(all)) + " on disk, " + share + " in 13 files"),
        qPrintable(runToolTip(w)));
    QVERIFY(w.browserPanel()->totalsLabel()->isVisible());

    // A checkpoint row clicked: its run is the one pruned.
    QTreeView* view = w.checkpointView();
    const QModelIndex row = w.browserPanel()->proxy()->mapFromSource(
        w.checkpointModel()->indexOfPath(m_run + "/tiny_step300.pt"));
    QVERIFY(row.isValid());
    view->scrollTo(row);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(row).center());

    // Escape: nothing moves.
    bool seen = false;
    onPruneDialog([&seen](PruneDialog* d) {
      seen = true;
      QTest::keyClick(d, Qt::Key_Escape);
    });
    QTest::keyClick(&w, Qt::Key_P, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY_WITH_TIMEOUT(seen, 10'000);
    QCOMPARE(filesIn(m_run), before);

    // The rules typed in; the list read; Move clicked.
    std::set<QString> trashRows, keepRows;
    QString summary, button, why300;
    onPruneDialog([&](PruneDialog* d) {
      QCOMPARE(d->bestBox()->currentText(),
               QStringLiteral("val_loss"));  // the default: val_loss is recorded
      typeInto(d->lastBox(), "3");
      typeInto(d->everyBox(), "500");
      trashRows = rowsWithFate(d->fileList(), "trash");
      keepRows = rowsWithFate(d->fileList(), "keep");
      summary = d->summaryLabel()->text();
      button = d->trashButton()->text();
      for (int i = 0; i < d->fileList()->topLevelItemCount(); ++i)
        if (d->fileList()->topLevelItem(i)->text(0) == "tiny_step300.pt")
          why300 = d->fileList()->topLevelItem(i)->text(4);
      QTest::mouseClick(d->trashButton(), Qt::LeftButton, {}, d->trashButton()->rect().center());
    });
    loaded.clear();
    w.activateWindow();  // the closed dialog handed the focus back
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTest::keyClick(&w, Qt::Key_P, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY_WITH_TIMEOUT(!trashRows.empty(), 10'000);

    const std::set<QString> gone{"tiny_step100.pt", "tiny_step200.pt", "tiny_step400.pt",
                                 "tiny_step600.pt", "tiny_step700.pt"};
    QCOMPARE(trashRows, gone);
    QCOMPARE(keepRows.size(), size_t(8));
    QCOMPARE(why300, QStringLiteral("best val_loss 1.1000"));
    qint64 freed = 0;
    for (const QString& f : gone) freed += m_sizes["run/" + f].toInteger();
    const QString freedText = sizeText(uint64_t(freed));
    QVERIFY2(summary.startsWith("5 of 13 files go to the trash, " + freedText + " freed"),
             qPrintable(summary));
    QCOMPARE(button, QStringLiteral("Move 5 to Trash"));

    // On disk: exactly those five moved, each with its .trashinfo naming where it was.
    std::set<QString> after = before;
    for (const QString& f : gone) after.erase(f);
    QCOMPARE(filesIn(m_run), after);
    const QString trash = m_tmp.path() + "/xdg/Trash";
    for (const QString& f : gone) {
      QVERIFY2(QFile::exists(trash + "/files/" + f), qPrintable(f));
      QFile info(trash + "/info/" + f + ".trashinfo");
      QVERIFY2(info.open(QIODevice::ReadOnly), qPrintable(f));
      QVERIFY(info.readAll().contains("\nPath=" + QUrl::toPercentEncoding(m_run + "/" + f, "/") +
                                      "\n"));
    }
    // The window rescans: the browser lists what is left.
    QVERIFY(loaded.count() > 0 || loaded.wait(kTimeoutMs));
    QVERIFY(!w.checkpointModel()->indexOfPath(m_run + "/tiny_step400.pt").isValid());
    QVERIFY(w.checkpointModel()->indexOfPath(m_run + "/tiny_step300.pt").isValid());
    QCOMPARE(runSizeShown(w), sizeText(uint64_t(all - freed)));
    qint64 optimizerFreed = 0;
    for (const QString& f : gone) optimizerFreed += m_optimizer["run/" + f].toInteger();
    const qint64 left = all - freed, optimizerLeft = optimizer - optimizerFreed;
    QCOMPARE(w.browserPanel()->totalsLabel()->text(),
             QString("8 checkpoints in 1 run: %1 on disk, %2 optimizer state (%3%)")
                 .arg(sizeText(uint64_t(left)), sizeText(uint64_t(optimizerLeft)))
                 .arg(std::lround(100.0 * double(optimizerLeft) / double(left))));
  }

 private:
  QTemporaryDir m_tmp;
  QJsonObject m_sizes;
  QJsonObject m_optimizer;
  QString m_run;
};

QTEST_MAIN(TestPruneDialog)
#include "tst_prunedialog.moc"
