#pragma once

#include <QFutureWatcher>
#include <QTimer>
#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>

#include "ckpt/analysis/tensor_stats.h"

class QCPBars;
class QCPColorMap;
class QCustomPlot;
class QLabel;
class QSpinBox;
class QTableView;

namespace ckpt {

class CheckpointFile;
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
  // Starts computing tensor `index` (of file->tensors()); `name` is its title.
  void showTensor(int index, const QString& name);

  [[nodiscard]] int tensorIndex() const { return m_tensor; }
  [[nodiscard]] bool busy() const { return m_running; }
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

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;  // the plots follow the palette

 private:
  struct Result {
    int tensor = -1;
    uint64_t generation = 0;
    std::optional<TensorAnalysis> analysis;  // nullopt: cancelled or failed
    std::shared_ptr<const TensorData> data;
    QString error;
  };
  static Result compute(std::shared_ptr<const CheckpointFile> file, int tensor, uint64_t generation,
                        AnalysisOptions options, std::shared_ptr<std::atomic<bool>> cancel,
                        std::shared_ptr<std::atomic<int>> permille);
  [[nodiscard]] AnalysisOptions optionsFor(const TensorInfo& t) const;
  void onFinished();
  void onHeatFinished();
  void resampleHeatMap();
  void clearPlots(const QString& why);
  void showStats(const TensorStats& s);
  void showHistogram(const Histogram& h);
  void showHeatMap(const HeatMap& h);

  std::shared_ptr<const CheckpointFile> m_file;
  int m_tensor = -1;
  uint64_t m_generation = 0;
  bool m_running = false;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  std::shared_ptr<std::atomic<int>> m_permille;  // progress of the running job
  QFutureWatcher<Result> m_watcher;
  QFutureWatcher<Result> m_heatWatcher;  // a heat map again, for a new size
  QTimer m_progressTimer;
  QTimer m_resizeTimer;
  std::optional<TensorAnalysis> m_analysis;

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
};

}  // namespace ckpt
