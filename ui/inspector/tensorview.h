#pragma once

#include <QTimer>
#include <QWidget>
#include <memory>
#include <optional>

#include "backgroundjob.h"
#include "ckpt/analysis/tensor_stats.h"

class QCPBars;
class QCPColorMap;
class QCustomPlot;
class QLabel;
class QSpinBox;
class QTableView;

namespace ckpt {

class CheckpointFile;
struct RemoteTensors;
class TensorData;
struct TensorInfo;
class ValueTableModel;

// One tensor: its statistics, histogram, heat map (matrices) and values.
// Everything that touches tensor bytes runs on a pool thread; selecting
// another tensor cancels the running job (an atomic flag its progress
// callback reads) and a late result for an old selection is ignored.
class TensorView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kBins = 100;

  explicit TensorView(QWidget* parent = nullptr);
  ~TensorView() override;

  // The file tensors are read from; null clears the view.
  void setFile(std::shared_ptr<const CheckpointFile> file);
  // A checkpoint on another machine: statistics and values come from its
  // agent; no histogram or heat map (the panel says so). Null clears the view.
  void setRemote(std::shared_ptr<const RemoteTensors> remote);
  // Starts computing tensor `index` (of file->tensors()); `name` is its title.
  void showTensor(int index, const QString& name);
  // Stops the statistics being computed (on the host too, for a remote one).
  void cancel();

  [[nodiscard]] int tensorIndex() const { return m_tensor; }
  [[nodiscard]] bool busy() const { return m_job.isRunning(); }
  // The last finished analysis of tensorIndex().
  [[nodiscard]] const std::optional<TensorAnalysis>& analysis() const { return m_analysis; }
  [[nodiscard]] ValueTableModel* valueModel() const { return m_values; }
  [[nodiscard]] QTableView* valueView() const { return m_valueView; }
  // Scrolls the value table to tensor row `row` (the "Go to row" box).
  void goToRow(int64_t row);
  [[nodiscard]] QCustomPlot* histogramPlot() const { return m_histogram; }
  [[nodiscard]] QCustomPlot* heatMapPlot() const { return m_heat; }
  // The statistics panel as plain text.
  [[nodiscard]] QString statsText() const;

 signals:
  void statsReady(int tensor);
  void statsFailed(int tensor, const QString& message);
  // The heat map was computed again for a new plot size.
  void heatMapResampled(int tensor);
  // A remote tensor's statistics are being computed on its host (true), or no longer.
  void remoteBusy(bool busy);

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;  // the plots follow the palette

 private:
  struct Result {
    int tensor = -1;
    std::optional<TensorAnalysis> analysis;  // nullopt: cancelled or failed
    std::shared_ptr<const TensorData> data;
    QString error;
    bool plotted = true;  // a remote one: the host sent the histogram and heat map
  };
  static Result compute(const std::shared_ptr<const CheckpointFile>& file, int tensor,
                        const AnalysisOptions& options, JobProgress& progress);
  static Result computeRemote(const std::shared_ptr<const RemoteTensors>& remote, int tensor,
                              const AnalysisOptions& options, JobProgress& progress);
  void showRemoteTensor(int index, const QString& name);
  [[nodiscard]] AnalysisOptions optionsFor(const TensorInfo& t) const;
  [[nodiscard]] AnalysisOptions optionsFor(const std::vector<int64_t>& shape) const;
  void onFinished(Result r);
  void onHeatFinished(const Result& r);
  void resampleHeatMap();
  void clearPlots(const QString& why);
  void showStats(const TensorStats& s);
  void showHistogram(const Histogram& h);
  void showHeatMap(const HeatMap& h);

  std::shared_ptr<const CheckpointFile> m_file;
  std::shared_ptr<const RemoteTensors> m_remote;
  int m_tensor = -1;

  QTimer m_resizeTimer;
  std::optional<TensorAnalysis> m_analysis;

  QWidget* m_body = nullptr;   // the statistics, plots and values
  QWidget* m_empty = nullptr;  // in their place while no tensor is selected
  QLabel* m_title = nullptr;
  QLabel* m_subtitle = nullptr;
  QLabel* m_stats = nullptr;
  QCustomPlot* m_histogram = nullptr;
  QCPBars* m_bars = nullptr;
  QCustomPlot* m_heat = nullptr;
  QCPColorMap* m_colorMap = nullptr;
  QLabel* m_heatNote = nullptr;
  ValueTableModel* m_values = nullptr;
  QTableView* m_valueView = nullptr;
  QSpinBox* m_rowBox = nullptr;
  QLabel* m_rowTotal = nullptr;
  // Last: destroyed (cancelled and waited for) before the widgets they report to.
  BackgroundJob<Result> m_job{this};      // statistics, histogram, heat map of the tensor shown
  BackgroundJob<Result> m_heatJob{this};  // a heat map again, for a new size
};

}  // namespace ckpt
