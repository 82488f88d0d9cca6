#pragma once

#include <QFutureWatcher>
#include <QTimer>
#include <QWidget>
#include <map>
#include <memory>
#include <vector>

#include "curves/curverun.h"

class QCPAbstractLegendItem;
class QCPAbstractPlottable;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPLegend;
class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QSlider;

namespace ckpt {

class RunFollower;

// Training curves of every run, overlaid as TensorBoard draws scalars: one
// metric at a time, a debiased-EMA smoothed line over the faint raw one,
// checkpoints marked on the line. Runs are read on the thread pool
// (collectRunMetrics); afterwards their metrics.jsonl and logs are followed
// and new lines appended to the graphs as the run trains.
class CurvesView : public QWidget {
  Q_OBJECT

 public:
  explicit CurvesView(QWidget* parent = nullptr);
  ~CurvesView() override;

  // Reads `runs` in the background and shows them; curvesReady() follows
  // once they are plotted. Replaces whatever was shown.
  void setRuns(std::vector<RunEntry> runs, std::vector<std::string> extraLogs = {});
  // Shows nothing (and `message` in the middle of the plot).
  void clear(const QString& message = {});

  [[nodiscard]] bool isLoading() const { return m_loader.isRunning(); }
  [[nodiscard]] const std::vector<CurveRun>& runs() const { return m_runs; }
  // Every metric any run has, sorted; the one shown.
  [[nodiscard]] QStringList metrics() const;
  [[nodiscard]] QString metric() const { return m_metric; }
  void setMetric(const QString& metric);
  [[nodiscard]] double smoothing() const { return m_smoothing; }
  void setSmoothing(double weight);  // 0 .. 0.99, the slider's steps
  [[nodiscard]] CurveAxis xAxis() const { return m_axis; }
  void setXAxis(CurveAxis axis);
  [[nodiscard]] bool logScale() const { return m_logY; }
  void setLogScale(bool on);
  // Hides or shows a run (as clicking its legend entry does).
  void setRunVisible(const QString& run, bool visible);
  // Fits the axes to the data and follows new points again after a zoom or pan.
  void fitToData();

  // The graphs of a run for the metric shown; nullptr when the run lacks it.
  [[nodiscard]] QCPGraph* rawGraph(const QString& run) const;
  [[nodiscard]] QCPGraph* smoothedGraph(const QString& run) const;
  [[nodiscard]] QCPGraph* markerGraph(const QString& run) const;
  // Checkpoints that record no value of the metric shown (hollow, on the x axis).
  [[nodiscard]] QCPGraph* bareMarkerGraph(const QString& run) const;
  // The checkpoint marker (valued or bare) within a few pixels of `pos`
  // (widget coordinates of the plot), as a click or the tooltip finds it.
  [[nodiscard]] QString markerFileAt(const QPointF& pos, QString* description = nullptr) const;
  // The smoothing applied to the metric shown: none for a schedule (lr).
  [[nodiscard]] double effectiveSmoothing() const;
  [[nodiscard]] QCustomPlot* plot() const { return m_plot; }
  [[nodiscard]] QString statusText() const;
  // What the tooltip says with the mouse at `key` on the x axis (plain text:
  // the x position, then one line per visible run with its nearest point).
  [[nodiscard]] QString valuesAt(double key) const;
  // The checkpoint file behind a marker; empty when `index` is not one.
  [[nodiscard]] QString markerFile(const QString& run, int index) const;

  // The shown metric of every run, one row per point: run, metric, step,
  // value, smoothed (at the current smoothing).
  bool exportCsv(const QString& fileName, QString* error = nullptr) const;
  bool exportPng(const QString& fileName, QString* error = nullptr);
  bool exportPdf(const QString& fileName, QString* error = nullptr);
  // How often the runs' files are checked for new lines when the file
  // system watcher says nothing (it misses changes on some file systems).
  void setPollInterval(int ms);

 signals:
  // The runs of setRuns() are read and plotted.
  void curvesReady();
  // A checkpoint marker was clicked; `path` is the checkpoint file.
  void checkpointActivated(const QString& path);

 private:
  // The QCustomPlot layer the checkpoint markers are drawn on, above the curves.
  static constexpr const char* kMarkerLayer = "markers";
  // The graphs of one run for the metric shown. Graph data and `steps` are
  // parallel: the graph's i-th point is the series point at steps[i].
  struct RunPlot {
    QCPGraph* raw = nullptr;
    QCPGraph* smoothed = nullptr;
    QCPGraph* markers = nullptr;  // checkpoints at the value they record (or logged at their step)
    QCPGraph* bare = nullptr;     // checkpoints without a value: hollow, on the x axis
    std::vector<int64_t> steps;
    std::vector<QString> markerFiles;  // parallel to the marker graph's data
    std::vector<int64_t> markerSteps;  // parallel to the marker graph's data
    std::vector<bool> markerRecorded;  // the checkpoint's own value (else the logged one)
    std::vector<QString> bareFiles;    // parallel to the bare graph's data
    std::vector<int64_t> bareSteps;
    size_t skipped = 0;  // points without the x axis' coordinate
    bool visible = true;
    // The smoothed series, parallel to the metric's points, and the EMA's
    // state after its last value: new points are smoothed alone.
    std::vector<double> smoothedValues;
    EmaSmoother ema{0.0};
  };

  void buildControls();
  void setUpPlot();
  // Takes the runs read so far, in order, and plots them.
  void takeLoadedRuns();
  void onLoadFinished();
  void rebuildGraphs();
  void fillRun(size_t index);
  // Checkpoint markers sit at the value the checkpoint records, else at the
  // value logged at its step; a checkpoint with neither is drawn hollow on
  // the x axis (never at a made-up height).
  void fillMarkers(size_t index);
  void placeBareMarkers();
  void appendPoints(size_t index, size_t firstNew);
  // Refills the metric box; true when the metric shown changed.
  bool updateMetricChoices();
  void applyAxisTypes();
  void updateStatus();
  void showPlotMessage(const QString& text);
  void scheduleReplot();
  void readLiveUpdates();
  void onPlotRelease(QMouseEvent* event);
  void onLegendClick(QCPLegend* legend, QCPAbstractLegendItem* item, QMouseEvent* event);
  void onMouseMove(QMouseEvent* event);
  void chooseExport(const QString& format);
  [[nodiscard]] int runIndex(const QString& run) const;
  // Smooths the series into rp.smoothedValues from scratch.
  void smoothAll(RunPlot& rp, const MetricSeries& series) const;
  bool eventFilter(QObject* watched, QEvent* event) override;
  void changeEvent(QEvent* event) override;
  // The plot, cursor, message and markers in the palette's colours.
  void applyColours();

  QComboBox* m_metricBox = nullptr;
  QSlider* m_smoothSlider = nullptr;
  QLabel* m_smoothLabel = nullptr;
  QComboBox* m_axisBox = nullptr;
  QCheckBox* m_logBox = nullptr;
  QCustomPlot* m_plot = nullptr;
  QLabel* m_status = nullptr;
  QCPItemStraightLine* m_cursor = nullptr;
  QCPItemText* m_message = nullptr;

  std::vector<CurveRun> m_runs;  // in the order setRuns() gave them (colours follow it)
  std::vector<RunPlot> m_plots;  // parallel to m_runs
  QString m_metric;
  bool m_metricChosen = false;  // by the user (setMetric); until then "loss" is preferred
  double m_smoothing = 0.6;     // TensorBoard's default
  CurveAxis m_axis = CurveAxis::Step;
  bool m_logY = false;
  bool m_followData = true;  // fit the axes to new points until the user zooms or pans
  QPointF m_pressPos;        // where the last button press was (a click, or a drag)
  QString m_exportDir;

  // Shared pointers: a result is moved out, not copied (a copy of a
  // million-point series on the GUI thread would also lose its spare capacity).
  QFutureWatcher<std::shared_ptr<CurveRun>> m_loader;
  bool m_loadPending = false;  // setRuns() is reading; curvesReady() not yet emitted
  size_t m_expectedRuns = 0;
  RunFollower* m_follower = nullptr;
  QTimer m_replotTimer;
};

}  // namespace ckpt
