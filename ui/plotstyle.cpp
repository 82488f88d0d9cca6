#include "plotstyle.h"

#include <qcustomplot.h>

namespace ckpt {

QColor paletteMix(const QPalette& palette, double amount) {
  const QColor bg = palette.color(QPalette::Base);
  const QColor fg = palette.color(QPalette::Text);
  auto mix = [amount](int a, int b) { return int(a + (b - a) * amount + 0.5); };
  return {mix(bg.red(), fg.red()), mix(bg.green(), fg.green()), mix(bg.blue(), fg.blue())};
}

void applyPalette(QCustomPlot* plot, const QPalette& palette) {
  const QColor text = palette.color(QPalette::Text);
  plot->setBackground(palette.brush(QPalette::Base));
  for (QCPAxisRect* rect : plot->axisRects()) {
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(text, 0));
      axis->setTickPen(QPen(text, 0));
      axis->setSubTickPen(QPen(text, 0));
      axis->setTickLabelColor(text);
      axis->setLabelColor(text);
      axis->grid()->setPen(QPen(paletteMix(palette, 0.12), 1));
      axis->grid()->setZeroLinePen(Qt::NoPen);
    }
  }
  if (plot->legend) {
    plot->legend->setTextColor(text);
    for (int i = 0; i < plot->legend->itemCount(); ++i)
      if (QCPAbstractLegendItem* item = plot->legend->item(i)) item->setTextColor(text);
  }
}

}  // namespace ckpt
