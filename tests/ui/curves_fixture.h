#pragma once
// What the Curves tests share: a JSON file written by a fixture script read
// whole, a folder's runs read into a CurvesView until it has drawn them, and
// a graph's points as (step, value) pairs to compare with a reader's.
#include <qcustomplot.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QString>
#include <QStringList>
#include <vector>

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

// A drawn point: its step (the graph's key) and value.
struct Point {
  qint64 step;
  double value;
  bool operator==(const Point& o) const { return step == o.step && value == o.value; }
};
using Series = std::vector<Point>;

// The points `g` holds (none for no graph).
inline Series graphPoints(const QCPGraph* g) {
  Series out;
  if (!g) return out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    out.push_back({qint64(it->key), it->value});
  return out;
}

// "N points [step:value ...]", values to 17 digits: for a failure message.
inline QString describe(const Series& s) {
  QStringList parts;
  for (const Point& p : s) parts << QString("%1:%2").arg(p.step).arg(p.value, 0, 'g', 17);
  return QString("%1 points [%2]").arg(s.size()).arg(parts.join(' '));
}

}  // namespace curves_fixture
