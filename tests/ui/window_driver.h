#pragma once
// What the GUI tests do with a main window: open folders and wait for the
// listing, read the names of the browser's top rows, go to the Curves tab,
// pick a metric with the keyboard, compare a drawn line with a reader's points.
#include <qcustomplot.h>
#include <QAbstractItemModel>
#include <QComboBox>
#include <QJsonArray>
#include <QKeySequence>
#include <QSignalSpy>
#include <QSize>
#include <QStringList>
#include <QTabWidget>
#include <QTest>
#include <cmath>

#include "curves/curvesview.h"
#include "mainwindow.h"

namespace ckpt::test {

// Opens `paths` as File > Open does and waits for the listing (true when it came).
inline bool openAndWait(MainWindow& w, const QStringList& paths, int timeoutMs) {
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths(paths);
  return loaded.count() == 1 || loaded.wait(timeoutMs);
}

// The first column's text of each top-level row of `m`.
inline QStringList topNames(const QAbstractItemModel* m) {
  QStringList out;
  for (int r = 0; r < m->rowCount(); ++r) out << m->index(r, 0).data().toString();
  return out;
}

// Shows `w` at `size`, opens `paths` and goes to the Curves tab with
// Ctrl+2 as a person does, then waits for its curves. nullptr, with `why`
// naming the step that did not happen within `timeoutMs`.
inline CurvesView* openOnCurvesTab(MainWindow& w, const QStringList& paths, QSize size,
                                   int timeoutMs, QString* why) {
  w.resize(size);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) {
    *why = QStringLiteral("the window was not shown");
    return nullptr;
  }
  w.activateWindow();
  if (!openAndWait(w, paths, timeoutMs)) {
    *why = QStringLiteral("the folder was not listed");
    return nullptr;
  }
  CurvesView* view = w.curvesView();
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));  // the Curves tab
  if (w.tabs()->currentWidget() != static_cast<QWidget*>(view)) {
    *why = QStringLiteral("Ctrl+2 did not show the Curves tab");
    return nullptr;
  }
  if (view->isLoading()) {
    QSignalSpy ready(view, &CurvesView::curvesReady);
    if (!ready.wait(timeoutMs)) {
      *why = QStringLiteral("the curves were not read");
      return nullptr;
    }
  }
  return view;
}

// The metric box walked with the arrow keys to `metric`, as a person picks it.
inline bool pickMetric(CurvesView* curves, const QString& metric) {
  auto* box = curves->findChild<QComboBox*>("metric");
  if (!box || !box->isVisible()) return false;
  box->setFocus();
  QTest::keyClick(box, Qt::Key_Home);
  for (int i = 0; i < box->count() && box->currentText() != metric; ++i)
    QTest::keyClick(box, Qt::Key_Down);
  return box->currentText() == metric && curves->metric() == metric;
}

// A drawn line against a reader's points ([[step, value|null, ...], ...]; a
// null value is a NaN on the chart): "" when they agree point for point,
// else the first difference.
inline QString differsFromPoints(const QCPGraph* graph, const QJsonArray& points) {
  if (!graph) return QStringLiteral("no line");
  if (graph->data()->size() != points.size())
    return QStringLiteral("%1 points drawn, %2 read").arg(graph->data()->size()).arg(points.size());
  for (int i = 0; i < points.size(); ++i) {
    const QJsonArray p = points[i].toArray();
    const double key = graph->data()->at(i)->key, value = graph->data()->at(i)->value;
    const bool same =
        key == p[0].toDouble() && (p[1].isNull() ? std::isnan(value) : value == p[1].toDouble());
    if (!same)
      return QStringLiteral("point %1: drawn (%2, %3), read (%4, %5)")
          .arg(i)
          .arg(key, 0, 'g', 17)
          .arg(value, 0, 'g', 17)
          .arg(p[0].toDouble(), 0, 'g', 17)
          .arg(p[1].isNull() ? QStringLiteral("null") : QString::number(p[1].toDouble(), 'g', 17));
  }
  return {};
}

}  // namespace ckpt::test
