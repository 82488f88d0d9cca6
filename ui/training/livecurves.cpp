#include "training/livecurves.h"

#include <cmath>

#include <qcustomplot.h>
#include <QLocale>
#include <QResizeEvent>
#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>

namespace ckpt {
namespace {

// Below this height the two charts become one: loss on the left axis, the
// learning rate on the right (two charts of half the height would each be
// too short to read).
constexpr int kTwoChartsHeight = 300;
// Value ticks at least this far apart (a label's height and some air).
constexpr int kTickSpacing = 36;
// The step axis's room past the last point: half the steps shown, at least
// this many (a young run's first points are not pressed to the right edge).
constexpr double kMinStepHeadroom = 10.0;

// 1,000,000 whatever the system's locale: the C locale with its separators.
QString grouped(double steps) {
  QLocale c = QLocale::c();
  c.setNumberOptions({});
  return c.toString(qint64(steps));
}

QCustomPlot* makePlot(QWidget* parent, const QString& yLabel) {
  auto* plot = new QCustomPlot(parent);
  plot->setMinimumHeight(110);
  plot->xAxis->setLabel(LiveCurves::tr("step"));
  plot->yAxis->setLabel(yLabel);
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->axisRect()->setRangeZoom(Qt::Horizontal);
  plot->axisRect()->setRangeDrag(Qt::Horizontal);
  plot->setNoAntialiasingOnDrag(true);
  // Steps are whole numbers: ticks at multiples of 1 (1, 2, 5, 10, 20, ...).
  QSharedPointer<QCPAxisTickerFixed> steps(new QCPAxisTickerFixed);
  steps->setTickStep(1.0);
  steps->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  plot->xAxis->setTicker(steps);
  return plot;
}

}  // namespace

LiveCurves::LiveCurves(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* split = new QSplitter(Qt::Vertical, this);
  layout->addWidget(split);

  m_lossPlot = makePlot(split, tr("loss"));
  m_loss = m_lossPlot->addGraph();
  m_loss->setName(tr("train loss"));
  m_loss->setPen(QPen(QColor(31, 119, 180), 1.5));
  m_valLoss = m_lossPlot->addGraph();
  m_valLoss->setName(tr("val loss"));
  m_valLoss->setPen(QPen(QColor(214, 39, 40), 1.5));
  m_valLoss->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
  // The legend in a row of its own above the plot: inside, it would hide
  // whatever part of a young run's curve it sits on.
  m_lossPlot->legend->setVisible(true);
  m_lossPlot->legend->setFont(font());
  m_lossPlot->axisRect()->insetLayout()->take(m_lossPlot->legend);
  m_lossPlot->plotLayout()->insertRow(0);
  m_lossPlot->plotLayout()->addElement(0, 0, m_lossPlot->legend);
  m_lossPlot->plotLayout()->setRowStretchFactor(0, 0.001);
  m_lossPlot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  m_lossPlot->legend->setBorderPen(Qt::NoPen);
  m_lossPlot->legend->setMargins(QMargins(0, 2, 0, 0));

  m_lrPlot = makePlot(split, tr("learning rate"));
  m_lr = m_lrPlot->addGraph();
  m_lr->setName(tr("learning rate"));
  m_lr->setPen(QPen(QColor(44, 160, 44), 1.5));
  m_lrPlot->yAxis->setNumberFormat(QStringLiteral("gb"));
  m_lrPlot->yAxis->setNumberPrecision(2);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);

  // The learning rate on the loss chart's right axis, for short panels: the
  // same points (one shared container), shown only there.
  m_lossPlot->yAxis2->setLabel(tr("learning rate"));
  m_lossPlot->yAxis2->setNumberFormat(QStringLiteral("gb"));
  m_lossPlot->yAxis2->setNumberPrecision(2);
  m_lrTwin = m_lossPlot->addGraph(m_lossPlot->xAxis, m_lossPlot->yAxis2);
  m_lrTwin->setName(tr("learning rate"));
  m_lrTwin->setPen(m_lr->pen());
  m_lrTwin->setData(m_lr->data());
  // max_steps, where the run ends, once the axis reaches it.
  QCustomPlot* plots[2] = {m_lossPlot, m_lrPlot};
  for (int i = 0; i < 2; ++i) {
    auto* line = new QCPItemStraightLine(plots[i]);
    line->setPen(QPen(QColor(120, 120, 120), 1, Qt::DashLine));
    line->setSelectable(false);
    line->setVisible(false);
    m_maxLine[i] = line;
    auto* label = new QCPItemText(plots[i]);
    label->position->setTypeX(QCPItemPosition::ptPlotCoords);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    label->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    label->setPadding(QMargins(0, 2, 4, 0));
    label->setColor(QColor(110, 110, 110));
    label->setSelectable(false);
    label->setVisible(false);
    m_maxLabel[i] = label;
  }
  setCompact(false);
  clear();
}

void LiveCurves::setCompact(bool compact) {
  m_compact = compact;
  m_lrPlot->setVisible(!compact);
  m_lossPlot->yAxis2->setVisible(compact);
  m_lrTwin->setVisible(compact);
  if (compact)
    m_lrTwin->addToLegend();
  else
    m_lrTwin->removeFromLegend();
}

void LiveCurves::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const bool compact = height() < kTwoChartsHeight;
  if (compact != m_compact) setCompact(compact);
  rescale();
}

void LiveCurves::clear() {
  m_loss->data()->clear();
  m_valLoss->data()->clear();
  m_lr->data()->clear();
  m_from = 0;
  m_to = 1;
  m_toKnown = false;
  rescale();
}

void LiveCurves::setStepRange(double from, double to) {
  m_from = from;
  m_toKnown = to > from;
  m_to = m_toKnown ? to : from + 1;
  rescale();
}

double LiveCurves::stepAxisEnd() const {
  return m_lossPlot->xAxis->range().upper;
}

bool LiveCurves::maxStepsShown() const {
  return m_maxLine[0]->visible();
}

void LiveCurves::append(const QList<StepReport>& steps) {
  for (const StepReport& r : steps) {
    const double x = double(r.step);
    m_loss->addData(x, r.loss);
    if (r.valLoss) m_valLoss->addData(x, *r.valLoss);
    m_lr->addData(x, r.learningRate);
  }
  if (!steps.isEmpty()) rescale();
}

void LiveCurves::addHistory(const History& h) {
  m_loss->addData(h.lossSteps, h.loss, /*alreadySorted=*/true);
  m_valLoss->addData(h.valLossSteps, h.valLoss, /*alreadySorted=*/true);
  m_lr->addData(h.lrSteps, h.lr, /*alreadySorted=*/true);
  rescale();
}

namespace {

// Enough digits that an axis's ticks read apart: a learning rate that
// barely moves (a cosine over 1,000,000 steps, seen 30 steps in) printed
// "1e-05" at every tick with two.
void fitPrecision(QCPAxis* axis) {
  const QCPRange r = axis->range();
  const double step = r.size() / std::max(2, axis->ticker()->tickCount());
  const double top = std::max(std::abs(r.lower), std::abs(r.upper));
  if (!(step > 0) || !(top > 0)) return;
  const int digits = int(std::floor(std::log10(top))) - int(std::floor(std::log10(step))) + 1;
  axis->setNumberPrecision(std::clamp(digits, 2, 6));
}

}  // namespace

void LiveCurves::rescale() {
  // As many value ticks as the chart's height holds apart.
  // (The axis rect is the plot less about 60 pixels of legend, tick labels
  // and axis title; its own height is only known after the next replot.)
  for (QCPAxis* axis : {m_lossPlot->yAxis, m_lossPlot->yAxis2, m_lrPlot->yAxis})
    axis->ticker()->setTickCount(std::max(2, (axis->parentPlot()->height() - 60) / kTickSpacing));
  // The step axis follows the data, never past max_steps: the last point
  // two thirds of the way along (or further), the axis reaching max_steps
  // as the run nears it.
  double last = m_from;
  for (QCPGraph* g : {m_loss, m_valLoss, m_lr}) {
    bool found = false;
    const QCPRange keys = g->getKeyRange(found);
    if (found) last = std::max(last, keys.upper);
  }
  const double follow = last + std::max((last - m_from) * 0.5, kMinStepHeadroom);
  const double end = m_toKnown ? std::min(m_to, follow) : follow;
  const bool maxInView = m_toKnown && end >= m_to;
  for (QCustomPlot* plot : {m_lossPlot, m_lrPlot}) {
    // A little room on the right: the last point (often an evaluation) is not cut in half.
    plot->xAxis->setRange(m_from, end + (end - m_from) * 0.02);
    plot->xAxis->setLabel(m_toKnown && !maxInView ? tr("step (of %1)").arg(grouped(m_to))
                                                  : tr("step"));
    QCPItemStraightLine* line = m_maxLine[plot == m_lossPlot ? 0 : 1];
    line->setVisible(maxInView);
    line->point1->setCoords(m_to, 0);
    line->point2->setCoords(m_to, 1);
    QCPItemText* label = m_maxLabel[plot == m_lossPlot ? 0 : 1];
    label->setVisible(maxInView);
    label->setText(tr("max_steps %1").arg(grouped(m_to)));
    label->position->setCoords(m_to, 0);
    bool found = false;
    QCPRange y;
    for (int i = 0; i < plot->graphCount(); ++i) {
      if (plot->graph(i) == m_lrTwin) continue;  // its own axis, below
      bool ok = false;
      const QCPRange r = plot->graph(i)->getValueRange(ok);
      if (!ok) continue;
      y = found ? QCPRange(qMin(y.lower, r.lower), qMax(y.upper, r.upper)) : r;
      found = true;
    }
    if (found) {
      const double pad = qMax(y.size() * 0.08, qAbs(y.upper) * 1e-3 + 1e-12);
      plot->yAxis->setRange(plot == m_lrPlot ? qMax(0.0, y.lower - pad) : y.lower - pad,
                            y.upper + pad);
    } else {
      plot->yAxis->setRange(0, 1);
    }
    if (plot == m_lrPlot) {
      m_lossPlot->yAxis2->setRange(plot->yAxis->range());
      fitPrecision(plot->yAxis);
      fitPrecision(m_lossPlot->yAxis2);
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
  m_lossPlot->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace ckpt
