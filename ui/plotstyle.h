#pragma once

#include <QColor>
#include <QPalette>

#include <QStringList>
#include <functional>

class QCPColorGradient;
class QCPColorMap;
class QCustomPlot;

namespace ckpt {

// QCustomPlot draws black on white whatever the desktop's colours are; this
// gives a plot the widget palette's: background, axes, tick labels, grid and
// legend text, colour scales. Call it when the plot is set up and on every PaletteChange,
// so charts follow a light or dark system palette like the other widgets.
void applyPalette(QCustomPlot* plot, const QPalette& palette);

// The n-th colour of a qualitative palette (matplotlib's tab10): distinct
// hues that stay readable as thin lines on white; series take them in order.
[[nodiscard]] QColor seriesColour(size_t index);

// Viridis (matplotlib's default): ordered in lightness, readable on light
// and dark backgrounds and for colour-blind eyes; NaN cells (nothing there)
// get `empty`, not the lowest colour.
[[nodiscard]] QCPColorGradient sequentialGradient(const QColor& empty);

// Replaces what `plot` shows with a grid of labelled cells (columns along
// x, rows down from the top) and a colour scale titled `scaleLabel` on the
// right, in the sequential gradient. Every cell starts as NaN (drawn as
// empty); the caller sets the cells it has (setGridCell), then calls
// rescaleDataRange(true) and replot().
QCPColorMap* makeGridMap(QCustomPlot* plot, const QStringList& columns, const QStringList& rows,
                         const QString& rowTitle, const QString& scaleLabel,
                         double columnLabelRotation = 0);

// Sets one cell of a map made by makeGridMap (use this, not data()->setCell:
// a map of one row or one column is stored twice as wide, since QCustomPlot
// draws a single cell with no width).
void setGridCell(QCPColorMap* map, int column, int row, double value);

// Leaves `plot` (one made by makeGridMap) empty: no cells, no colour scale.
void clearGridMap(QCustomPlot* plot);

// A tooltip that follows the mouse over `plot`'s axis rect: `text(key,
// value)` at the mouse's coordinates ("" for none). Set again to replace;
// makeGridMap sets one naming the cell's row, column and value.
void setHoverReadout(QCustomPlot* plot, std::function<QString(double key, double value)> text);

// The colour between the background and the text at `amount` (0..1): grid
// lines (faint) and secondary text (half way) that read on light and dark.
[[nodiscard]] QColor paletteMix(const QPalette& palette, double amount);

}  // namespace ckpt
