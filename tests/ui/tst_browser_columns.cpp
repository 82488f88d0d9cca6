// The browser's columns are as wide as their widest text, in every row: a
// run of 1,100 checkpoints whose last file has the longest name (beyond the
// 1,000 rows Qt's ResizeToContents measured), a run with a long name, a
// column the user drags narrower that rows then widen again. Checked as a
// person sees it: each cell's text, in its font, plus the indentation, the
// icon and the margins the style gives it, fits the width of its column.
// And the tree opens as runs are listed: families and runs alike.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStyle>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>

#include <unistd.h>

#include "browser/browserpanel.h"
#include "gestures.h"
#include "mainwindow.h"

using namespace ckpt;

namespace {

struct Cut {
  QString text;
  int column = 0;
  int needed = 0;
  int width = 0;
};

// The first cell (in tree order) whose text does not fit its column.
std::optional<Cut> firstCutCell(QTreeView* view, const QModelIndex& parent = {}, int depth = 0) {
  const QAbstractItemModel* m = view->model();
  QStyle* style = view->style();
  const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view) + 1;
  for (int r = 0; r < m->rowCount(parent); ++r) {
    for (int c = 0; c < m->columnCount(parent); ++c) {
      const QModelIndex i = m->index(r, c, parent);
      const QString text = i.data(Qt::DisplayRole).toString();
      if (text.isEmpty()) continue;
      QFont font = view->font();
      if (const QVariant f = i.data(Qt::FontRole); f.isValid()) font = f.value<QFont>();
      int needed = QFontMetrics(font).horizontalAdvance(text) + 2 * margin;
      if (!i.data(Qt::DecorationRole).isNull()) needed += view->iconSize().width() + 2 * margin;
      if (c == 0) needed += view->indentation() * (depth + (view->rootIsDecorated() ? 1 : 0));
      const int width = view->header()->sectionSize(c);
      if (needed > width) return Cut{text, c, needed, width};
    }
    if (const QModelIndex child = m->index(r, 0, parent); m->rowCount(child) > 0)
      if (auto cut = firstCutCell(view, child, depth + 1)) return cut;
  }
  return std::nullopt;
}

QString describe(const std::optional<Cut>& cut) {
  return cut ? QString("column %1: \"%2\" needs %3 px, the column is %4 px")
                   .arg(cut->column)
                   .arg(cut->text)
                   .arg(cut->needed)
                   .arg(cut->width)
             : QString();
}

}  // namespace

class TestBrowserColumns : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    m_checkpoint = QStringLiteral(CKPT_FIXTURE_DIR) + "/runs/tiny/tiny_step100.pt";
    QVERIFY2(QFileInfo::exists(m_checkpoint), "no fixtures: run ctest (make_fixtures)");
    QCoreApplication::setOrganizationName("CkptScopeTest");
    QCoreApplication::setApplicationName("tst_browser_columns");
    QSettings().clear();
  }

  void noTextIsCut() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // One run of 1,100 checkpoints (hard links of one file written by
    // torch.save), the last with the longest name; a run with a long name.
    const QString many = dir.path() + "/alpha";
    QVERIFY(QDir().mkpath(many));
    const QString longFile = "step_1100_saved_after_the_learning_rate_was_lowered_again.pt";
    for (int step = 1; step <= 1100; ++step) {
      const QString name = step == 1100 ? longFile : QString("step_%1.pt").arg(step);
      QVERIFY(::link(QFile::encodeName(m_checkpoint).constData(),
                     QFile::encodeName(many + "/" + name).constData()) == 0);
    }
    const QString longRun = "zeta_a_run_whose_name_is_longer_than_any_file_in_the_other_run";
    QVERIFY(QDir().mkpath(dir.path() + "/" + longRun));
    QVERIFY(QFile::copy(m_checkpoint, dir.path() + "/" + longRun + "/step_1.pt"));

    MainWindow w;
    QVERIFY(openWindow(w, {dir.path()}, {1000, 700}));
    QTreeView* view = w.browserPanel()->view();
    QCOMPARE(view->model()->rowCount(), 2);
    // The long file name is listed, at the end of its run.
    const QModelIndex alpha = view->model()->index(0, 0);
    QCOMPARE(view->model()->rowCount(alpha), 1100);
    QVERIFY(view->model()->index(1099, 0, alpha).data().toString().contains("lowered_again"));
    std::optional<Cut> cut = firstCutCell(view);
    QVERIFY2(!cut, qPrintable(describe(cut)));

    // The user drags the name column narrow; it stays so (nothing new) until
    // a new checkpoint with a long name is listed, which widens it again.
    QHeaderView* header = view->header();
    const int wide = header->sectionSize(0);
    const int y = header->height() / 2;
    const QPoint edge(header->sectionViewportPosition(0) + wide - 1, y);
    QTest::mousePress(header->viewport(), Qt::LeftButton, {}, edge);
    QTest::mouseMove(header->viewport(), edge - QPoint(wide / 2, 0));
    QTest::mouseRelease(header->viewport(), Qt::LeftButton, {}, edge - QPoint(wide / 2, 0));
    QTRY_VERIFY(header->sectionSize(0) < wide);
    const int narrow = header->sectionSize(0);
    QTest::qWait(300);
    QCOMPARE(header->sectionSize(0), narrow);
    QVERIFY(firstCutCell(view));  // the long names are cut now: the user asked for it
    QSignalSpy changed(&w, &MainWindow::checkpointsChanged);
    QVERIFY(QFile::copy(m_checkpoint, many + "/" + "step_2000_" + longFile));
    QTRY_VERIFY_WITH_TIMEOUT(view->model()->rowCount(view->model()->index(0, 0)) == 1101,
                             kTimeoutMs);
    QTRY_VERIFY(header->sectionSize(0) >= wide);
    cut = firstCutCell(view);
    QVERIFY2(!cut, qPrintable(describe(cut)));
  }

  // Runs listed while the folder is still scanned, and at its end, open
  // as they come (rows added: each run opens); a stage family among them
  // (the tree is grouped anew) opens with its stages.
  void everyRunOpens_data() {
    QTest::addColumn<bool>("family");
    QTest::newRow("runs added") << false;
    QTest::newRow("a family among them") << true;
  }

  void everyRunOpens() {
    QFETCH(bool, family);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QStringList runs;
    for (int r = 0; r < 40; ++r) runs << QString("run_%1").arg(r, 2, 10, QChar('0'));
    if (family)
      runs << "tiny"
           << "tiny-sft";  // pretraining, then SFT
    for (const QString& run : runs) {
      QVERIFY(QDir().mkpath(dir.path() + "/" + run));
      for (int step = 1; step <= 3; ++step)
        QVERIFY(::link(QFile::encodeName(m_checkpoint).constData(),
                       QFile::encodeName(dir.path() + "/" + run + QString("/step_%1.pt").arg(step))
                           .constData()) == 0);
    }
    MainWindow w;
    QVERIFY(openWindow(w, {dir.path()}, {1000, 700}));
    QTreeView* view = w.browserPanel()->view();
    const QAbstractItemModel* m = view->model();
    QCOMPARE(m->rowCount(), 40 + (family ? 1 : 0));
    int families = 0, opened = 0;
    for (int r = 0; r < m->rowCount(); ++r) {
      const QModelIndex top = m->index(r, 0);
      QVERIFY2(view->isExpanded(top), qPrintable(top.data().toString()));
      if (m->rowCount(m->index(0, 0, top)) > 0) {  // a family: its stages are runs
        ++families;
        QCOMPARE(m->rowCount(top), 2);
        for (int s = 0; s < 2; ++s) {
          QVERIFY2(view->isExpanded(m->index(s, 0, top)), qPrintable(top.data().toString()));
          QCOMPARE(m->rowCount(m->index(s, 0, top)), 3);
          ++opened;
        }
      } else {
        QCOMPARE(m->rowCount(top), 3);
        ++opened;
      }
    }
    QCOMPARE(families, family ? 1 : 0);
    QCOMPARE(opened, int(runs.size()));
  }

  // A run that grows while it is shown (the watcher adds its new file): its
  // own row then says "10 files", and that is not cut either.
  void grownRunRowIsNotCut() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString run = dir.path() + "/a";
    QVERIFY(QDir().mkpath(run));
    for (int step = 1; step <= 9; ++step)
      QVERIFY(::link(QFile::encodeName(m_checkpoint).constData(),
                     QFile::encodeName(run + QString("/s%1.pt").arg(step)).constData()) == 0);
    MainWindow w;
    QVERIFY(openWindow(w, {dir.path()}, {1000, 700}));
    QTreeView* view = w.browserPanel()->view();
    const QModelIndex row = view->model()->index(0, 0);
    auto rowText = [&] {
      QStringList cells;
      for (int c = 0; c < view->model()->columnCount(); ++c)
        cells << view->model()->index(0, c).data().toString();
      return cells.join(" | ");
    };
    QVERIFY2(rowText().contains("9 files"), qPrintable(rowText()));
    QVERIFY(QFile::copy(m_checkpoint, run + "/s10.pt"));
    QTRY_COMPARE_WITH_TIMEOUT(view->model()->rowCount(row), 10, kTimeoutMs);
    QVERIFY2(rowText().contains("10 files"), qPrintable(rowText()));
    const std::optional<Cut> cut = firstCutCell(view);
    QVERIFY2(!cut, qPrintable(describe(cut)));
  }

 private:
  QString m_checkpoint;
};

QTEST_MAIN(TestBrowserColumns)
#include "tst_browser_columns.moc"
