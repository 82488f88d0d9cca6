#pragma once

#include <QColor>
#include <QPalette>

class QCPColorGradient;
class QCustomPlot;

namespace ckpt {

// QCustomPlot draws black on white whatever the desktop's colours are; this
// gives a plot the widget palette's: background, axes, tick labels, grid and
// legend text, colour scales. Call it when the plot is set up and on every PaletteChange,
// so charts follow a light or dark system palette like the other widgets.
void applyPalette(QCustomPlot* plot, const QPalette& palette);

// Viridis (matplotlib's default): ordered in lightness, readable on light
// and dark backgrounds and for colour-blind eyes; NaN cells (nothing there)
// get `empty`, not the lowest colour.
[[nodiscard]] QCPColorGradient sequentialGradient(const QColor& empty);

// The colour between the background and the text at `amount` (0..1): grid
// lines (faint) and secondary text (half way) that read on light and dark.
[[nodiscard]] QColor paletteMix(const QPalette& palette, double amount);

}  // namespace ckpt
