#include "plotstyle.h"

#include <qcustomplot.h>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace ckpt {

QColor seriesColour(size_t index) {
  static const QColor palette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                   QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                   QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                   QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
                                   QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
  return palette[index % std::size(palette)];
}

namespace {

// One per plot (a child found by its name): the text function of the readout.
class HoverReadout : public QObject {
 public:
  HoverReadout(QCustomPlot* plot) : QObject(plot), m_plot(plot) {
    setObjectName(QStringLiteral("ckptHoverReadout"));
    plot->setMouseTracking(true);
    connect(plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
      QCPAxisRect* rect = m_plot->axisRectCount() ? m_plot->axisRect() : nullptr;
      const QPointF pos = event->position();
      QString text;
      if (rect && m_text && rect->rect().contains(pos.toPoint()) &&
          !(event->buttons() & Qt::LeftButton))
        text = m_text(rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x()),
                      rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y()));
      if (text.isEmpty())
        QToolTip::hideText();
      else
        QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
    });
  }
  std::function<QString(double, double)> m_text;

 private:
  QCustomPlot* m_plot;
};

}  // namespace

void setHoverReadout(QCustomPlot* plot, std::function<QString(double key, double value)> text) {
  auto* readout = plot->findChild<HoverReadout*>(QStringLiteral("ckptHoverReadout"),
                                                 Qt::FindDirectChildrenOnly);
  if (!readout) readout = new HoverReadout(plot);
  readout->m_text = std::move(text);
}

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
                         const QString& rowTitle, const QString& scaleLabel,
                         double columnLabelRotation) {
  plot->clearPlottables();
  plot->plotLayout()->clear();
  auto* rect = new QCPAxisRect(plot);
  plot->plotLayout()->addElement(0, 0, rect);
  const int nx = std::max<int>(int(columns.size()), 1), ny = std::max<int>(int(rows.size()), 1);
  auto* map = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  // QCustomPlot spreads cells between the first and last cell's centre: a
  // single column (or row) would have no width. Such a map holds two cells
  // side by side, centred a quarter either side, that setGridCell fills alike.
  const bool oneColumn = nx == 1, oneRow = ny == 1;
  map->setProperty("ckptOneColumn", oneColumn);
  map->setProperty("ckptOneRow", oneRow);
  map->data()->setSize(oneColumn ? 2 : nx, oneRow ? 2 : ny);
  map->data()->setRange(oneColumn ? QCPRange(-0.25, 0.25) : QCPRange(0, nx - 1),
                        oneRow ? QCPRange(-0.25, 0.25) : QCPRange(0, ny - 1));
  for (int x = 0; x < map->data()->keySize(); ++x)
    for (int y = 0; y < map->data()->valueSize(); ++y) map->data()->setCell(x, y, std::nan(""));
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
  // Hovering names the cell: its row, its column and its value.
  QPointer<QCPColorMap> guard(map);
  setHoverReadout(
      plot, [guard, columns, rows, rowTitle, scaleLabel](double key, double value) -> QString {
        if (!guard) return {};
        const int col = int(std::lround(key)), row = int(std::lround(value));
        if (col < 0 || row < 0 || col >= std::max<int>(1, int(columns.size())) ||
            row >= std::max<int>(1, int(rows.size())))
          return {};
        const double v = guard->data()->cell(guard->property("ckptOneColumn").toBool() ? 0 : col,
                                             guard->property("ckptOneRow").toBool() ? 0 : row);
        const QString rowName = row < rows.size() ? rows[row] : QString();
        const QString colName = col < columns.size() ? columns[col] : QString();
        return QObject::tr("%1 %2 · %3\n%4: %5")
            .arg(rowTitle, rowName, colName, scaleLabel,
                 std::isfinite(v) ? QString::number(v, 'g', 4) : QObject::tr("none"));
      });
  return map;
}

void setGridCell(QCPColorMap* map, int column, int row, double value) {
  const bool oneColumn = map->property("ckptOneColumn").toBool(),
             oneRow = map->property("ckptOneRow").toBool();
  for (int dx = 0; dx <= (oneColumn ? 1 : 0); ++dx)
    for (int dy = 0; dy <= (oneRow ? 1 : 0); ++dy)
      map->data()->setCell(column + dx, row + dy, value);
}

void clearGridMap(QCustomPlot* plot) {
  plot->clearPlottables();
  plot->plotLayout()->clear();
  auto* rect = new QCPAxisRect(plot);
  for (QCPAxis* axis : rect->axes()) axis->setVisible(false);
  plot->plotLayout()->addElement(0, 0, rect);
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
