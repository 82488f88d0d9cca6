// Checkpoint > Export... in the window, driven by input events: a
// checkpoint row clicked, Ctrl+Shift+E, the dialog read as a person sees it
// (prefilled from the checkpoint), the format and type picked with the
// keyboard, a taken name refused, the destination chosen in the file dialog,
// Export clicked; then the written file is checked against python3-torch
// (tests/python/export_check.py: every model tensor equal after the same
// conversion in torch) and the browser lists and selects it. Escape and
// Cancel write nothing.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>
#include <set>

#include "../core/run_process.h"
#include "browser/browserpanel.h"
#include "browser/checkpointlistmodel.h"
#include "export/exportdialog.h"
#include "gestures.h"
#include "mainwindow.h"

using namespace ckpt;

namespace {

std::set<QString> filesIn(const QString& dir) {
  std::set<QString> out;
  for (const QString& f : QDir(dir).entryList(QDir::Files | QDir::Hidden)) out.insert(f);
  return out;
}

void click(QWidget* w) {
  QTest::mouseClick(w, Qt::LeftButton, {}, w->rect().center());
}

}  // namespace

class TestExportDialog : public QObject {
  Q_OBJECT

  void clickRow(MainWindow& w, const QString& path) {
    QTreeView* view = w.checkpointView();
    const QModelIndex row =
        w.browserPanel()->proxy()->mapFromSource(w.checkpointModel()->indexOfPath(path));
    QVERIFY(row.isValid());
    view->scrollTo(row);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(row).center());
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    const QString fixture = QStringLiteral(CKPT_FIXTURE_DIR "/export/trained.pt");
    QVERIFY2(QFile::exists(fixture), "no export fixtures: run ctest (make_export_fixtures)");
    m_run = m_tmp.path() + "/experiments/tiny";
    QVERIFY(QDir().mkpath(m_run));
    QVERIFY(QDir().mkpath(m_tmp.path() + "/exports"));
    m_source = m_run + "/tiny_step250.pt";
    QVERIFY(QFile::copy(fixture, m_source));
  }

  void exportThroughTheDialog() {
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.activateWindow();
    QSignalSpy loaded(&w, &MainWindow::loaded);
    w.openPaths({m_tmp.path() + "/experiments"});
    QVERIFY(loaded.wait(kTimeoutMs));
    const std::set<QString> before = filesIn(m_run);
    clickRow(w, m_source);

    // Escape, then Cancel: nothing written.
    bool seen = false;
    onModalDialog<ExportDialog>([&seen](ExportDialog* d) {
      seen = true;
      QTest::keyClick(d, Qt::Key_Escape);
    });
    QTest::keyClick(&w, Qt::Key_E, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY_WITH_TIMEOUT(seen, 10'000);
    seen = false;
    onModalDialog<ExportDialog>([&seen](ExportDialog* d) {
      seen = true;
      click(d->cancelButton());
    });
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    // Through the menu this time: Checkpoint > Export...
    clickMenu(w, "Checkpoint", "Export...");
    QTRY_VERIFY_WITH_TIMEOUT(seen, 10'000);
    QCOMPARE(filesIn(m_run), before);

    // Prefilled from the checkpoint; a taken name refused; then a new one
    // chosen in the file dialog and written.
    const QString target = m_tmp.path() + "/exports/tiny_bf16.safetensors";
    QString prefilled, prefilledFormat, refusal, movedTo;
    bool refusedDisabled = false, done = false;
    onModalDialog<ExportDialog>([&](ExportDialog* d) {
      prefilled = d->destinationEdit()->text();
      prefilledFormat = d->formatBox()->currentText();
      QVERIFY(d->exportButton()->isEnabled());
      // The format with the keyboard: the destination's extension follows.
      d->formatBox()->setFocus();
      QTest::keyClick(d->formatBox(), Qt::Key_Down);
      movedTo = d->destinationEdit()->text();
      d->dtypeBox()->setFocus();
      QTest::keyClick(d->dtypeBox(), Qt::Key_Down);  // as stored -> bf16
      // The checkpoint itself typed as the destination: refused.
      QLineEdit* edit = d->destinationEdit();
      click(edit);
      QTest::keyClick(edit, Qt::Key_A, Qt::ControlModifier);
      QTest::keyClicks(edit, m_source);
      refusal = d->statusLabel()->text();
      refusedDisabled = !d->exportButton()->isEnabled();
      // Choose... and the file dialog.
      answerFileDialog(target);
      click(d->chooseButton());
      QTRY_COMPARE_WITH_TIMEOUT(d->destinationEdit()->text(), target, 10'000);
      QVERIFY(d->exportButton()->isEnabled());
      click(d->exportButton());
      done = true;
    });
    loaded.clear();
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTest::keyClick(&w, Qt::Key_E, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY_WITH_TIMEOUT(done, 10'000);

    QCOMPARE(prefilled, m_run + "/tiny_step250_slim.pt");
    QVERIFY2(prefilledFormat.startsWith("PyTorch"), qPrintable(prefilledFormat));
    QCOMPARE(movedTo, m_run + "/tiny_step250_slim.safetensors");
    QVERIFY2(refusal.contains("exists") && refusal.contains("never overwritten"),
             qPrintable(refusal));
    QVERIFY(refusedDisabled);

    // Written and loaded by python3-torch with every tensor equal.
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(target), kTimeoutMs);
    QVERIFY(loaded.count() > 0 || loaded.wait(kTimeoutMs));
    QCOMPARE(filesIn(m_tmp.path() + "/exports"), std::set<QString>{"tiny_bf16.safetensors"});
    QCOMPARE(filesIn(m_run), before);
    const test::ProcessResult c =
        test::runProcess(QStringLiteral(CKPT_TORCH_PYTHON),
                         {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/export_check.py"), "check",
                          m_source, target, "--dtype", "bf16"},
                         {}, 120000);
    QVERIFY2(c.exitCode == 0 && c.out.startsWith("OK "), (c.out + c.err).constData());

    // The browser lists the new file, selected.
    const QModelIndex row = w.checkpointModel()->indexOfPath(target);
    QVERIFY(row.isValid());
    QTRY_COMPARE(w.browserPanel()
                     ->proxy()
                     ->mapToSource(w.checkpointView()->currentIndex())
                     .siblingAtColumn(0),
                 row.siblingAtColumn(0));
    QVERIFY(w.openedPaths().contains(target));
  }

 private:
  QTemporaryDir m_tmp;
  QString m_run;
  QString m_source;
};

QTEST_MAIN(TestExportDialog)
#include "tst_exportdialog.moc"
