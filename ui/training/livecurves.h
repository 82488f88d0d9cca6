#pragma once

#include <QList>
#include <QWidget>

#include "ckpt/trainapi/job_types.h"

class QCPGraph;
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
  // Fixes the step axis to [from, to] (the job's range) until clear().
  void setStepRange(double from, double to);

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
};

}  // namespace ckpt
