#include "plotstyle.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace ckpt {

QColor paletteMix(const QPalette& palette, double amount) {
  const QColor bg = palette.color(QPalette::Base);
  const QColor fg = palette.color(QPalette::Text);
  auto mix = [amount](int a, int b) { return int(a + (b - a) * amount + 0.5); };
  return {mix(bg.red(), fg.red()), mix(bg.green(), fg.green()), mix(bg.blue(), fg.blue())};
}

QCPColorGradient sequentialGradient(const QColor& empty) {
  QCPColorGradient g;
  g.setColorStopAt(0.0, QColor(0x44, 0x01, 0x54));
  g.setColorStopAt(0.25, QColor(0x3b, 0x52, 0x8b));
  g.setColorStopAt(0.5, QColor(0x21, 0x91, 0x8c));
  g.setColorStopAt(0.75, QColor(0x5e, 0xc9, 0x62));
  g.setColorStopAt(1.0, QColor(0xfd, 0xe7, 0x25));
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(empty);
  return g;
}

QCPColorMap* makeGridMap(QCustomPlot* plot, const QStringList& columns, const QStringList& rows,
                         const QString& rowTitle, const QString& scaleLabel, double columnLabelRotation) {
  plot->clearPlottables();
  plot->plotLayout()->clear();
  auto* rect = new QCPAxisRect(plot);
  plot->plotLayout()->addElement(0, 0, rect);
  const int nx = std::max<int>(int(columns.size()), 1), ny = std::max<int>(int(rows.size()), 1);
  auto* map = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  map->data()->setSize(nx, ny);
  map->data()->setRange(QCPRange(0, nx - 1), QCPRange(0, ny - 1));
  for (int x = 0; x < nx; ++x)
    for (int y = 0; y < ny; ++y) map->data()->setCell(x, y, std::nan(""));
  map->setInterpolate(false);
  auto xTicks = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < columns.size(); ++i) xTicks->addTick(i, columns[i]);
  auto yTicks = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < rows.size(); ++i) yTicks->addTick(i, rows[i]);
  QCPAxis* x = rect->axis(QCPAxis::atBottom);
  QCPAxis* y = rect->axis(QCPAxis::atLeft);
  x->setTicker(xTicks);
  x->setTickLabelRotation(columnLabelRotation);
  x->setRange(-0.5, nx - 0.5);
  y->setTicker(yTicks);
  y->setLabel(rowTitle);
  y->setRangeReversed(true);  // the first row on top, as a table reads
  y->setRange(-0.5, ny - 0.5);
  auto* scale = new QCPColorScale(plot);
  plot->plotLayout()->addElement(0, 1, scale);
  scale->setLabel(scaleLabel);
  map->setColorScale(scale);  // the scale's gradient wins: set it after
  scale->setGradient(sequentialGradient(paletteMix(plot->palette(), 0.07)));
  auto* group = new QCPMarginGroup(plot);
  rect->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  return map;
}

void applyPalette(QCustomPlot* plot, const QPalette& palette) {
  const QColor text = palette.color(QPalette::Text);
  plot->setBackground(palette.brush(QPalette::Base));
  auto style = [&](QCPAxis* axis) {
    axis->setBasePen(QPen(text, 0));
    axis->setTickPen(QPen(text, 0));
    axis->setSubTickPen(QPen(text, 0));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(paletteMix(palette, 0.12), 1));
    axis->grid()->setZeroLinePen(Qt::NoPen);
  };
  for (QCPAxisRect* rect : plot->axisRects())
    for (QCPAxis* axis : rect->axes()) style(axis);
  for (QCPLayoutElement* e : plot->plotLayout()->elements(false))
    if (auto* scale = qobject_cast<QCPColorScale*>(e)) style(scale->axis());
  if (plot->legend) {
    plot->legend->setTextColor(text);
    for (int i = 0; i < plot->legend->itemCount(); ++i)
      if (QCPAbstractLegendItem* item = plot->legend->item(i)) item->setTextColor(text);
  }
}

}  // namespace ckpt
