#pragma once

#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "backgroundjob.h"
#include "compare/compareview.h"

class QCPColorMap;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace ckpt {

// How much each step of a chain of checkpoints changed the model: the
// checkpoints of one run in step order (drift through training), or the
// stages of a family (pretrain -> sft -> dpo). Each consecutive pair is
// diffed in turn on the thread pool (one tensor at a time from mapped
// bytes); the result is a table of the steps, the change per block as
// curves over the steps, and a block x step heat map.
class DriftView : public QWidget {
  Q_OBJECT

 public:
  // One link of the chain: `from` -> `to`.
  struct Step {
    QString from, to;
    QString label;                 // what the x axis and the table call it: "step 300", "sft"
    double total = 0;              // relative change of all compared tensors together
    std::vector<int> blocks;       // block numbers (-1: outside the blocks), sorted
    std::vector<double> perBlock;  // relative change per block, parallel to `blocks`
    QString largest;               // the tensor with the largest relative change
    double largestRel = 0;
    QString error;           // why this pair could not be compared
    bool cancelled = false;  // stopped part way: the numbers cover what was compared
  };

  explicit DriftView(QWidget* parent = nullptr);
  ~DriftView() override;

  // Diffs checkpoints[i] -> checkpoints[i + 1]; `labels` name each
  // checkpoint (a step or a stage) for the axes. `title` heads the view.
  // Each pair is compared where its files are: here, or by `source` (two
  // checkpoints on a host: ui/remote/remotediff.h, the Compare tab's).
  void showChain(const QString& title, const QStringList& checkpoints, const QStringList& labels,
                 CompareView::Source source = {});
  void cancel();
  [[nodiscard]] bool isRunning() const { return m_job.isRunning(); }
  [[nodiscard]] QPushButton* cancelButton() const { return m_cancel; }
  [[nodiscard]] QString statusText() const;
  [[nodiscard]] const std::vector<Step>& steps() const { return m_steps; }
  [[nodiscard]] QTableWidget* table() const { return m_table; }
  [[nodiscard]] QCustomPlot* curvePlot() const { return m_curves; }
  [[nodiscard]] QCPColorMap* heatMap() const { return m_heatMap; }

 signals:
  void finished(bool ok);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void onFinished(JobOutcome outcome, std::optional<std::vector<Step>> steps, const QString& error);
  void showProgress(const JobProgress& progress);
  void plot();
  void restyle();

  QLabel* m_title = nullptr;
  QLabel* m_status = nullptr;
  QProgressBar* m_progress = nullptr;
  QPushButton* m_cancel = nullptr;
  QWidget* m_results = nullptr;  // the table and both charts, shown from the first chain on
  QTableWidget* m_table = nullptr;
  QCustomPlot* m_curves = nullptr;
  QCustomPlot* m_heat = nullptr;
  QCPColorMap* m_heatMap = nullptr;

  std::vector<Step> m_steps;
  BackgroundJob<std::vector<Step>> m_job{this};
};

}  // namespace ckpt
