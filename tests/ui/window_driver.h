#pragma once
// What the browser tests do with a main window: open folders and wait for
// the listing, read the names of the browser's top rows.
#include <QAbstractItemModel>
#include <QSignalSpy>
#include <QStringList>

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

}  // namespace ckpt::test
