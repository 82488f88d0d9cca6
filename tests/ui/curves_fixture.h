#pragma once
// What the Curves tests share: a JSON file written by a fixture script read
// whole, and a folder's runs read into a CurvesView until it has drawn them.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QString>

#include "ckpt/index/scanner.h"
#include "curves/curvesview.h"
#include "textformat.h"

namespace curves_fixture {

constexpr int kLoadTimeoutMs = 120'000;

// The object in `path`; an empty one when the file is missing or not JSON.
inline QJsonObject readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// The runs the scanner finds in `dir`, read and plotted (curvesReady).
inline bool load(ckpt::CurvesView& view, const QString& dir) {
  QSignalSpy ready(&view, &ckpt::CurvesView::curvesReady);
  view.setRuns(ckpt::scanDirectory(ckpt::pathToStd(dir)).runs);
  return ready.wait(kLoadTimeoutMs) && !view.isLoading();
}

}  // namespace curves_fixture
