#pragma once

#include <QList>
#include <QWidget>

#include "ckpt/trainapi/job_types.h"

class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCustomPlot;

namespace ckpt {

// The running job's loss (train, and validation when it evaluates) and
// learning rate against the step, appended to as reports arrive: each batch
// adds its points to the graphs and asks for one queued replot, so a long
// run never redraws from scratch per point. Reads StepReports, never the
// trainer. Tall, loss and learning rate are two charts; short, one chart
// with the learning rate on its right axis.
class LiveCurves : public QWidget {
  Q_OBJECT

 public:
  explicit LiveCurves(QWidget* parent = nullptr);

  void clear();
  void append(const QList<StepReport>& steps);
  // Points read from the run's files (a resumed run's history, as the
  // Curves tab reads them): per graph its steps and values in step order,
  // merged with what the job reports, whichever comes first.
  struct History {
    QVector<double> lossSteps, loss;
    QVector<double> valLossSteps, valLoss;
    QVector<double> lrSteps, lr;
    [[nodiscard]] qsizetype size() const { return lossSteps.size(); }
  };
  void addHistory(const History& history);
  // The job's steps: from `from` to max_steps `to` (`to` <= `from`: not
  // known), until clear(). The step axis follows the data from `from`, with
  // headroom, and reaches `to` only as the run nears it: a run at step 300
  // of 1,000,000 is not squeezed against the left edge. While max_steps is
  // past the right edge the axis title says it ("step (of 1,000,000)");
  // once in view a dashed line marks it.
  void setStepRange(double from, double to);
  // The step axis's end now (what rescale() chose), and whether the
  // max_steps line is drawn.
  [[nodiscard]] double stepAxisEnd() const;
  [[nodiscard]] bool maxStepsShown() const;

  [[nodiscard]] QCPGraph* lossGraph() const { return m_loss; }
  [[nodiscard]] QCPGraph* valLossGraph() const { return m_valLoss; }
  [[nodiscard]] QCPGraph* lrGraph() const { return m_lr; }
  [[nodiscard]] QCustomPlot* lossPlot() const { return m_lossPlot; }
  [[nodiscard]] QCustomPlot* lrPlot() const { return m_lrPlot; }
  // Short: one chart, the learning rate on its right axis.
  [[nodiscard]] bool isCompact() const { return m_compact; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void rescale();
  void setCompact(bool compact);

  QCustomPlot* m_lossPlot = nullptr;
  QCustomPlot* m_lrPlot = nullptr;
  QCPGraph* m_loss = nullptr;
  QCPGraph* m_valLoss = nullptr;
  QCPGraph* m_lr = nullptr;
  QCPGraph* m_lrTwin = nullptr;  // m_lr's points on the loss chart's right axis
  bool m_compact = false;
  double m_from = 0, m_to = 1;
  bool m_toKnown = false;                  // setStepRange gave max_steps
  QCPItemStraightLine* m_maxLine[2] = {};  // on the loss and learning-rate charts
  QCPItemText* m_maxLabel[2] = {};         // "max_steps N" beside each line
};

}  // namespace ckpt
