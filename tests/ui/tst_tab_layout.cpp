// Every tab's layout at the sizes people use (1000x700, 1280x800,
// 1920x1080, and 1280x800 made smaller by hand): no tab pushes the window
// past its size, nothing lies outside its page or is squeezed below its
// minimum, charts keep a plotting area and readable value labels, and the
// Train form scrolls down, never sideways. Split from tst_gestures.cpp.
#include <qcustomplot.h>

#include <QFontMetrics>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTest>
#include <cmath>

#include "gestures.h"
#include "mainwindow.h"

using namespace ckpt;

class TestTabLayout : public QObject {
  Q_OBJECT

 private slots:
  void everyTabFits_data();
  void everyTabFits();
};

void TestTabLayout::everyTabFits_data() {
  QTest::addColumn<QSize>("size");
  QTest::newRow("1000x700") << QSize(1000, 700);
  QTest::newRow("1280x800") << QSize(1280, 800);
  QTest::newRow("1920x1080") << QSize(1920, 1080);
  // Opened at 1280x800, then made smaller by hand: the dock keeps its width.
  QTest::newRow("1280x800 shrunk to 1000x700") << QSize(1000, 700);
}

void TestTabLayout::everyTabFits() {
  QFETCH(QSize, size);
  MainWindow w;
  const bool shrunk = QString(QTest::currentDataTag()).contains("shrunk");
  QVERIFY(
      openWindow(w, {QStringLiteral(CKPT_FIXTURE_DIR "/runs")}, shrunk ? QSize(1280, 800) : size));
  if (shrunk) {
    // Every tab seen at the larger size first (each fits itself to it), then smaller.
    for (int t = 0; t < w.tabs()->count(); ++t) {
      clickTab(w.tabs(), w.tabs()->tabText(t).remove('&'));
      QTest::qWait(20);
    }
    w.resize(size);
    QTest::qWait(50);
  }
  if (w.size() != size) {
    // Say who asks for more room than the window has.
    for (int t = 0; t < w.tabs()->count(); ++t)
      qWarning() << w.tabs()->tabText(t) << "minimum" << w.tabs()->widget(t)->minimumSizeHint();
    qWarning() << "dock" << w.browserPanel()->minimumSizeHint();
    // CKPT_DEBUG_LAYOUT: each row of each tab's own layout, and wide children.
    if (qEnvironmentVariableIsSet("CKPT_DEBUG_LAYOUT"))
      for (int t = 0; t < w.tabs()->count(); ++t) {
        QWidget* page = w.tabs()->widget(t);
        if (QLayout* l = page->layout())
          for (int i = 0; i < l->count(); ++i)
            qWarning() << w.tabs()->tabText(t) << "row" << i << l->itemAt(i)->minimumSize();
        for (QWidget* c : page->findChildren<QWidget*>())
          if (c->minimumSizeHint().width() > 150)
            qWarning() << "  " << c->metaObject()->className() << c->objectName()
                       << c->minimumSizeHint();
      }
  }
  QCOMPARE(w.size(), size);
  const QString shots = qEnvironmentVariable("CKPT_KEEP_SCREENSHOTS");
  QTabBar* bar = w.tabs()->tabBar();
  for (int t = 0; t < bar->count(); ++t) {
    const QString name = bar->tabText(t).remove('&');
    clickTab(w.tabs(), name);
    QTest::qWait(50);
    QWidget* page = w.tabs()->currentWidget();
    if (!shots.isEmpty())
      w.grab().save(
          QStringLiteral("%1/%2-%3x%4.png").arg(shots, name).arg(size.width()).arg(size.height()));
    if (qEnvironmentVariableIsSet("CKPT_DEBUG_LAYOUT") && w.size() != size)
      for (QWidget* c : page->findChildren<QWidget*>())
        if (c->isVisible() && c->minimumSizeHint().width() > 250)
          qWarning() << c->metaObject()->className() << c->objectName() << c->minimumSizeHint()
                     << c->minimumWidth() << c->width();
    // No tab pushes the window past its size.
    QVERIFY2(w.size() == size, qPrintable(QStringLiteral("%1 made the window %2x%3 (minimum %4x%5)")
                                              .arg(name)
                                              .arg(w.width())
                                              .arg(w.height())
                                              .arg(page->minimumSizeHint().width())
                                              .arg(page->minimumSizeHint().height())));
    const QRect area = page->rect();
    for (QWidget* c : visibleChildren(page)) {
      const QRect r(c->mapTo(page, QPoint(0, 0)), c->size());
      const QString what = QStringLiteral("%1 at %2: %3 '%4' %5x%6+%7+%8 outside %9x%10")
                               .arg(name)
                               .arg(QTest::currentDataTag())
                               .arg(c->metaObject()->className(), c->objectName())
                               .arg(r.width())
                               .arg(r.height())
                               .arg(r.x())
                               .arg(r.y())
                               .arg(area.width())
                               .arg(area.height());
      QVERIFY2(r.left() >= -1 && r.top() >= -1 && r.right() <= area.right() + 1 &&
                   r.bottom() <= area.bottom() + 1,
               qPrintable(what));
      const QSize hint = c->minimumSizeHint();
      if (hint.isValid() && c->minimumWidth() == 0 && !qobject_cast<QScrollBar*>(c))
        QVERIFY2(
            c->width() >= hint.width() - 1,
            qPrintable(what + QStringLiteral(": narrower than its minimum %1").arg(hint.width())));
    }
    // Every chart readable: a plotting area of some size, and value labels
    // that do not run into each other.
    for (QCustomPlot* plot : page->findChildren<QCustomPlot*>()) {
      if (!plot->isVisible() || plot->visibleRegion().isEmpty()) continue;
      plot->replot();
      const QRect inner = plot->axisRect()->rect();
      const QString what =
          QStringLiteral("%1 at %2: chart '%3' (%4)")
              .arg(name, QTest::currentDataTag(), plot->objectName(), plot->yAxis->label());
      QVERIFY2(
          inner.height() >= 60 && inner.width() >= 120,
          qPrintable(what +
                     QStringLiteral(" plots in %1x%2").arg(inner.width()).arg(inner.height())));
      for (QCPAxis* axis : {plot->yAxis, plot->yAxis2}) {
        if (!axis->visible() || !axis->tickLabels()) continue;
        const int gap = QFontMetrics(axis->tickLabelFont()).height();
        const QVector<double> ticks = axis->tickVector();
        for (int i = 1; i < ticks.size(); ++i) {
          const double a = axis->coordToPixel(ticks[i - 1]), b = axis->coordToPixel(ticks[i]);
          if (!inner.contains(inner.center().x(), int(a)) ||
              !inner.contains(inner.center().x(), int(b)))
            continue;
          QVERIFY2(std::abs(a - b) >= gap,
                   qPrintable(what + QStringLiteral(": %1 labels %2 px apart")
                                         .arg(axis->label())
                                         .arg(std::abs(a - b))));
        }
      }
    }
    // The Train form scrolls down, never sideways.
    for (QScrollArea* s : page->findChildren<QScrollArea*>())
      if (s->isVisible())
        QVERIFY2(!s->horizontalScrollBar()->isVisible(), qPrintable(name + ": sideways scrolling"));
  }
}

QTEST_MAIN(TestTabLayout)
#include "tst_tab_layout.moc"
