#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QTimer>
#include <QWidget>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ckpt/index/run_groups.h"
#include "ckpt/index/runs_table.h"
#include "ckpt/index/smoothing.h"
#include "curves/curverun.h"
#include "curves/curveslegend.h"

class QCPAbstractLegendItem;
class QCPAbstractPlottable;
class QCPCurve;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPLegend;
class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QPushButton;
class QSlider;
class QSplitter;

namespace ckpt {

class RunFollower;
class RunsTablePanel;

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
  // Shows runs already read (a host's, ui/remote) as setRuns() shows what it reads.
  void setLoadedRuns(std::vector<CurveRun> runs);
  // Points the file `source` of the run whose directory is `runPath` gained
  // (a remote run's, from the agent's `metrics since`), merged and drawn as
  // the follower merges and draws a local run's. False when no such run is shown.
  bool addLivePoints(const QString& runPath, const LiveSource& source, const MetricPoints& points,
                     bool rewritten = false);
  // Shows nothing (and `message` in the middle of the plot).
  void clear(const QString& message = {});
  // Stops reading runs (the status line's Cancel): the runs read so far
  // are shown, and curvesReady() follows. Nothing when nothing is read.
  void cancelLoading();
  // The browser's scan before the runs are known: "Scanning: N of M files"
  // on the status line (the plot's message says "Scanning..."). A total of 0: not known yet.
  void showScanProgress(uint64_t done, uint64_t total);

  // True from setRuns() until curvesReady() is emitted: the reading thread
  // may be done while its last results still wait in the event queue.
  [[nodiscard]] bool isLoading() const { return m_loadPending; }
  [[nodiscard]] const std::vector<CurveRun>& runs() const { return m_runs; }
  // Every metric any run has, sorted; the one shown.
  [[nodiscard]] QStringList metrics() const;
  [[nodiscard]] QString metric() const { return m_metric; }
  void setMetric(const QString& metric);
  [[nodiscard]] double smoothing() const { return m_smoothing; }
  void setSmoothing(double weight);  // 0 .. 0.99, the slider's steps
  // Debiased EMA (the slider's weight per point), time-weighted EMA or a
  // centred moving average; the latter two on x distances: see smoothingSpan().
  [[nodiscard]] SmoothingMethod smoothingMethod() const { return m_smoothMethod; }
  void setSmoothingMethod(SmoothingMethod method);
  // What the curves are smoothed with: the time-weighted EMA's half-life is
  // the one that behaves as the slider's EMA weight does on points the
  // shown runs' median spacing apart (halfLifeForWeight); the moving
  // average's window is twice that. One span for every run, so a run
  // logged every step and one logged every 10 steps are smoothed alike.
  [[nodiscard]] Smoothing smoothingParameters() const;
  // Step, relative step (each run from its first step), tokens, wall time
  // (a clock) or relative time (each run from its first wall time). Runs
  // that lack the axis' coordinate are not drawn; the status line names them.
  [[nodiscard]] CurveAxis xAxis() const { return m_axis; }
  void setXAxis(CurveAxis axis);
  [[nodiscard]] bool logScale() const { return m_logY; }
  void setLogScale(bool on);
  // Hides or shows a run (as clicking its legend entry does).
  void setRunVisible(const QString& run, bool visible);

  // Groups (curvegroups.cpp). How runs are grouped, as parseGroupSpec reads
  // it: "none", "all-but" (every hyperparameter but seed: the default when
  // a run has a seed), "name" (the name with its last number removed) or a
  // hyperparameter key. Groups are aligned by step (on the relative step
  // axis by relative step): on a token or time axis the runs are drawn one
  // by one.
  [[nodiscard]] QString groupBy() const { return m_groupBy; }
  void setGroupBy(const QString& spec);
  enum class GroupLine { Mean, Median };
  enum class GroupBand { MinMax, Std, Percentiles };  // percentiles: 25th..75th
  void setGroupLine(GroupLine line);
  void setGroupBand(GroupBand band);
  // The groups drawn as one line with a band (two runs or more), by label.
  [[nodiscard]] QStringList groupLabels() const;
  [[nodiscard]] QCPGraph* groupLine(const QString& label) const;
  // The band's lower and upper edge (the upper one fills down to the lower).
  [[nodiscard]] std::pair<QCPGraph*, QCPGraph*> groupBandGraphs(const QString& label) const;
  // How many runs contribute at each step of a group's line.
  [[nodiscard]] std::vector<int> groupRunCounts(const QString& label) const;
  // A group shows its runs (as expanding its legend row does), or its line alone.
  void setGroupExpanded(const QString& label, bool expanded);
  [[nodiscard]] CurvesLegend* legend() const { return m_legend; }
  // The runs table below the chart (curvestable.cpp): a row per run, or per
  // group as the chart groups them, for the metric shown. The chart draws
  // the runs its filter keeps.
  [[nodiscard]] RunsTablePanel* runsTable() const { return m_runsTable; }
  // The run or group whose line is highlighted (hovered here or in the legend).
  [[nodiscard]] LegendKey highlighted() const { return m_highlight; }
  // Fits the axes to the data and follows new points again after a zoom or pan.
  void fitToData();

  // The graphs of a run for the metric shown; nullptr when the run lacks it.
  [[nodiscard]] QCPGraph* rawGraph(const QString& run) const;
  // Heap bytes the runs' drawn curves hold besides their series (x's,
  // smoothed and copied raw values, orders): what drawing runs apart costs.
  [[nodiscard]] size_t drawnBytes() const;
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
  // the x position, then one line per visible run with its nearest point;
  // past kTooltipLines runs, those nearest `y` when given, then how many more).
  [[nodiscard]] QString valuesAt(double key, std::optional<double> y = {}) const;
  static constexpr int kTooltipLines = 12;
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
  static constexpr int kSliderSteps = 99;  // smoothing 0 .. 0.99 in steps of 0.01
  // More runs than this drawn apart: their lines are 1 px, not 2 (applyVisibility).
  static constexpr size_t kThinLinesAbove = 50;
  // The QCustomPlot layer the checkpoint markers are drawn on, above the curves.
  static constexpr const char* kMarkerLayer = "markers";
  // The x range and width a curve's graphs were decimated for (M4 keeps
  // what those pixels show): drawn again when the view differs.
  struct DrawnView {
    double lower = 0, upper = 0;
    int pixels = 0;  // 0: never drawn
    bool operator==(const DrawnView&) const = default;
  };
  // The graphs of one run for the metric shown, and what they are drawn
  // from: 16 bytes a point (x and smoothed value) where every point has an
  // x and they come in order; the raw values are read in the series' own
  // column (1,000 runs drawn apart held 40 bytes a point: 1 GB).
  struct RunPlot {
    DrawnView drawn;
    QCPGraph* raw = nullptr;
    QCPGraph* smoothed = nullptr;
    QCPGraph* markers = nullptr;  // checkpoints at the value they record (or logged at their step)
    QCPGraph* bare = nullptr;     // checkpoints without a value: hollow, on the x axis
    // The drawn curve's i-th point is the series point order[i], or i when
    // `order` is empty (every point has an x, in order: nothing stored).
    std::vector<size_t> order;
    std::vector<double> xs, smoothYs;
    // The raw values parallel to xs: the series' value column itself when
    // it is one in memory and `order` is empty, else ownRawYs. Set again
    // whenever the series' points change (fillRun, appendPoints).
    std::span<const double> rawYs;
    std::vector<double> ownRawYs;
    std::vector<QString> markerFiles;  // parallel to the marker graph's data
    std::vector<int64_t> markerSteps;  // parallel to the marker graph's data
    std::vector<bool> markerRecorded;  // the checkpoint's own value (else the logged one)
    std::vector<QString> bareFiles;    // parallel to the bare graph's data
    std::vector<int64_t> bareSteps;
    size_t skipped = 0;  // points without the x axis' coordinate
    // The run's origin on a relative axis when it was filled: points
    // appended live after it moved (an earlier step, a rewritten file) refill it.
    std::optional<double> origin;
    bool visible = true;
    // The EMA over the metric's points in their order, and its state after
    // the last value: new points are smoothed alone. While `order` is empty
    // smoothYs is that series and this stays empty.
    std::vector<double> smoothedValues;
    EmaSmoother ema{0.0};
  };

  void buildControls();
  void setUpPlot();
  // The choices the person made on the tab before (smoothing and its method,
  // the x axis, log scale, the group line and band, the metric, the
  // grouping, the splitters' sizes), which the controls remember as they
  // are changed (curvescontrols.cpp). A missing or unreadable one keeps its
  // default; a metric or grouping the runs shown do not have too.
  void restoreChartSettings();
  // Takes the runs read so far, in order (nothing is drawn before all are
  // read: drawing each as it came cost seconds for 1,000 runs).
  void takeLoadedRuns();
  void onLoadFinished();
  // Draws what merging live points changed, per run and metric.
  void showLiveChanges(const std::vector<std::map<std::string, SeriesChange>>& changes);
  void rebuildGraphs();
  void fillRun(size_t index);
  // Checkpoint markers sit at the value the checkpoint records, else at the
  // value logged at its step; a checkpoint with neither is drawn hollow on
  // the x axis (never at a made-up height).
  void fillMarkers(size_t index);
  void placeBareMarkers();
  void appendPoints(size_t index, size_t firstNew);
  // The smoothed line of a run's sorted points (xs, rawYs -> smoothYs).
  void smoothRun(RunPlot& rp, const MetricSeries& series);
  // rp.rawYs for the series' points now (its column, or ownRawYs from
  // `fromIndex` of the drawn points on, those before kept).
  static void setRawValues(RunPlot& rp, const MetricSeries& series, size_t fromIndex = 0);
  // Decimates a run's curves for the view now shown (curvedrawing.h).
  void drawRun(RunPlot& rp);
  // Redraws each shown curve decimated for another x range or width than
  // the view's now (on zoom, pan, resize, before the replot paints; a run or
  // group shown again after a zoom while it was hidden).
  void redrawIfViewChanged();
  // The pixel columns curves are decimated for: the axis rect's width.
  [[nodiscard]] int drawnPixels() const;
  [[nodiscard]] DrawnView viewNow() const;
  // The median x spacing of the shown runs' points; true when it changed.
  bool updateSpacing();
  // Refills the metric box; true when the metric shown changed.
  bool updateMetricChoices();
  void applyAxisTypes();
  void updateStatus();
  void showPlotMessage(const QString& text);
  void scheduleReplot();
  void readLiveUpdates();
  void onPlotRelease(QMouseEvent* event);
  // Groups (curvegroups.cpp).
  struct GroupPlot {
    DrawnView drawn;
    QString label;
    std::vector<size_t> runs;  // indices into m_runs, in natural order of their names
    bool expanded = false;
    bool visible = true;
    QCPGraph* line = nullptr;
    QCPGraph* low = nullptr;
    QCPGraph* high = nullptr;
    std::vector<int64_t> steps;
    std::vector<int> counts;
    std::vector<double> xs, lineYs, lowYs, highYs;  // smoothed as the runs are
    std::vector<double> rawLine;                    // before smoothing (the tooltip's raw)
    std::vector<double> mean;  // the mean line before smoothing (the runs table's)
  };
  [[nodiscard]] bool groupingActive() const;
  // The run is drawn only as part of its group's line and band (a group of
  // two runs or more, not expanded): it has no graphs of its own.
  [[nodiscard]] bool foldedInGroup(size_t run) const;
  // Removes a run's graphs and the drawn data kept for them.
  void dropRunPlot(size_t index);
  // Step or relative step: the axes groups align on and unlogged checkpoints sit on.
  [[nodiscard]] bool stepAxis() const {
    return m_axis == CurveAxis::Step || m_axis == CurveAxis::RelativeStep;
  }
  // Where run's x = 0 is on the axis shown: its first step or wall time on
  // a relative axis, nothing on the others.
  [[nodiscard]] std::optional<double> axisOrigin(const CurveRun& run) const;
  // Where `p` of `run` sits on the axis shown (CurveRun::x), except that on
  // a Wall time axis that is a clock (some run logs Unix times) a run that
  // logs seconds since its start has no place: it is not drawn at 1970.
  [[nodiscard]] std::optional<double> xOf(const CurveRun& run, const MetricPoint& p) const;
  // Whether some run logs Unix times (m_clockAxis); true when that changed.
  bool updateClockAxis();
  // The groups of the runs loaded (m_groups, m_groupOf); graphs not yet made.
  void computeGroups();
  // The line and band of each group of two runs or more, for the metric shown.
  void fillGroups();
  void drawGroup(GroupPlot& gp);
  // The groups' lines again (smoothing changed, points arrived); runs stay.
  void refillGroups();
  // Which graphs show: hidden runs and groups, a group's runs only when expanded.
  void applyVisibility();
  void updateGroupChoices();
  void rebuildLegend();
  [[nodiscard]] QColor runColour(size_t index) const;
  [[nodiscard]] int groupIndex(const QString& label) const;
  void setHighlight(const LegendKey& key);
  void refreshHighlight();  // its data again after a redraw
  // The visible run or group line nearest `pos` within a few pixels.
  [[nodiscard]] LegendKey curveAt(const QPointF& pos) const;
  void onLegendToggled(const LegendKey& key, bool visible);
  void onLegendExpanded(const LegendKey& key, bool expanded);
  void onMouseMove(QMouseEvent* event);
  void chooseExport(const QString& format);
  // The runs table (curvestable.cpp). Built again from the runs' summaries
  // when the metric, the grouping, the filter or the sort changes, and at
  // most once a second while runs train.
  void updateRunsTable();
  [[nodiscard]] bool keptByFilter(size_t run) const;
  [[nodiscard]] LegendKey keyOfTableRow(int row) const;
  [[nodiscard]] int tableRowOf(const LegendKey& key) const;
  [[nodiscard]] int runIndex(const QString& run) const;
  // Smooths the series with the EMA into `into` from scratch (rp.ema keeps its state).
  void smoothAll(RunPlot& rp, const MetricSeries& series, std::vector<double>& into) const;
  bool eventFilter(QObject* watched, QEvent* event) override;
  void changeEvent(QEvent* event) override;
  // The plot, cursor, message and markers in the palette's colours.
  void applyColours();

  QComboBox* m_metricBox = nullptr;
  QSlider* m_smoothSlider = nullptr;
  QLabel* m_smoothLabel = nullptr;
  QComboBox* m_smoothMethodBox = nullptr;
  QComboBox* m_axisBox = nullptr;
  QCheckBox* m_logBox = nullptr;
  QCustomPlot* m_plot = nullptr;
  QLabel* m_status = nullptr;
  QCPItemStraightLine* m_cursor = nullptr;
  QCPItemText* m_message = nullptr;
  QComboBox* m_groupBox = nullptr;
  QComboBox* m_groupLineBox = nullptr;
  QComboBox* m_groupBandBox = nullptr;
  CurvesLegend* m_legend = nullptr;
  QSplitter* m_splitter = nullptr;
  QCPCurve* m_highlightCurve = nullptr;  // the hovered curve drawn again, wide, on top
                                         // (not a graph: clearGraphs() leaves it)
  LegendKey m_highlight;

  std::vector<CurveRun> m_runs;  // in the order setRuns() gave them (colours follow it)
  std::vector<RunPlot> m_plots;  // parallel to m_runs
  QString m_metric;
  bool m_metricChosen = false;  // by the user (setMetric); until then "loss" is preferred
  double m_smoothing = 0.6;     // TensorBoard's default
  SmoothingMethod m_smoothMethod = SmoothingMethod::DebiasedEma;
  double m_spacing = 1;  // updateSpacing()
  CurveAxis m_axis = CurveAxis::Step;
  bool m_clockAxis = false;  // updateClockAxis()
  bool m_logY = false;
  bool m_followData = true;  // fit the axes to new points until the user zooms or pans
  QPointF m_pressPos;        // where the last button press was (a click, or a drag)
  QString m_exportDir;
  QString m_groupBy = QStringLiteral("none");
  bool m_groupChosen = false;  // by the user; until then all-but-seed when runs have a seed
  // The grouping chosen at an earlier start (restoreChartSettings): used
  // instead of the default when the runs offer it.
  QString m_savedGroupBy;
  GroupLine m_groupLine = GroupLine::Mean;
  GroupBand m_groupBand = GroupBand::MinMax;
  std::vector<GroupPlot> m_groups;
  std::vector<size_t> m_groupOf;  // run index -> its group (kNoGroup: filtered out)
  static constexpr size_t kNoGroup = size_t(-1);

  RunsTablePanel* m_runsTable = nullptr;
  QSplitter* m_tableSplitter = nullptr;  // the chart and legend above, the table below
  std::vector<RunSummary> m_summaries;   // parallel to m_runs: what the table needs of each
  std::vector<bool> m_kept;  // parallel to m_runs: kept by the table's filter; empty: all
  bool m_updatingTable = false;
  QTimer m_tableTimer;  // live points: the table again, at most once a second

  // A run as the loader gives it: read, and summarized for the runs table,
  // both on the worker.
  struct LoadedRun {
    CurveRun run;
    RunSummary summary;
  };
  // Runs are read on the thread pool, several at once (QtConcurrent::mapped:
  // results by index, taken in order). Shared pointers: a result is moved
  // out, not copied (a copy of a million-point series on the GUI thread
  // would also lose its spare capacity).
  QFutureWatcher<std::shared_ptr<LoadedRun>> m_loader;
  bool m_loadPending = false;             // setRuns() is reading; curvesReady() not yet emitted
  bool m_loadCancelled = false;           // cancelLoading(): show what was read
  QPushButton* m_cancelButton = nullptr;  // beside the status line while runs are read
  size_t m_cancelledOf = 0;  // the runs asked for when reading was cancelled; 0: not cancelled
  size_t m_expectedRuns = 0;
  QElapsedTimer m_openClock;  // since setRuns() (CKPTSCOPE_TRACE_CURVES)
  RunFollower* m_follower = nullptr;
  QTimer m_replotTimer;
};

}  // namespace ckpt
