#pragma once
// What the GUI tests do with a main window: open folders and wait for the
// listing, read the names of the browser's top rows, go to the Curves tab.
#include <QAbstractItemModel>
#include <QKeySequence>
#include <QSignalSpy>
#include <QSize>
#include <QStringList>
#include <QTabWidget>
#include <QTest>

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

}  // namespace ckpt::test
