#pragma once
// The curves view's data: one run's metric series as ckpt::collectRunMetrics
// gives them, plus what it takes to follow the run while it trains (the files
// that grow and how far each has been read). No widgets here; the loading
// half runs on a worker thread.

#include <QString>
#include <QStringList>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/index/folder_listing.h"
#include "ckpt/index/hparams.h"
#include "ckpt/index/metrics.h"

namespace ckpt {

// Wall times from here on are Unix times (September 2001), not seconds
// since a start: the Wall time axis draws them on a clock.
inline constexpr double kUnixTimeFloor = 1e9;

// What a curve is drawn against. The relative axes start every run at 0: a
// fine-tune or a resumed branch that starts at step 5,000 (or hours after
// another run) is drawn from the origin, beside the run it is compared with.
enum class CurveAxis { Step, RelativeStep, Tokens, WallTime, RelativeTime };

// A metrics.jsonl, event file or console log of a run, and the byte just
// after the last complete line or record read from it (where the next read
// starts).
struct LiveSource {
  QString path;
  MetricSource kind = MetricSource::MetricsJsonl;  // MetricsJsonl, TensorBoard or ConsoleLog
  uint64_t offset = 0;
  uint64_t size = 0;  // the file's size when last looked at (it may end in a partial line)
  LogFilter filter;   // console logs: the lines of this run (ckpt::findMetricSources)
};

using MetricPoints = std::vector<std::pair<std::string, MetricPoint>>;

// One run of the curves view. `series` holds every metric the run has, one
// source each (collectRunMetrics' preference), points sorted by step.
struct CurveRun {
  QString name;
  QString path;
  // "ssh://[user@]host[:port]" for a run on another machine (ui/remote: its
  // points come from the agent, never from a local file of the same path,
  // and the follower leaves it alone); empty for a local run.
  QString remote;
  std::map<std::string, MetricSeries> series;  // by metric
  std::vector<int64_t> checkpointSteps;        // markers, sorted
  std::map<int64_t, QString> checkpointFiles;  // step -> the file a marker selects
  // step -> the numbers that file records (loss, val_loss, lr, ...)
  std::map<int64_t, std::map<std::string, double>> checkpointValues;
  // metric -> what a tooltip says of a job that restarted ("restarted at step 200: ...")
  std::map<std::string, QString> restartNotes;
  std::vector<LiveSource> sources;
  Hparams hparams;  // ckpt::readHparams: for grouping (read with the metrics)
  QStringList problems;
  // The run's first wall time and first step, over all its metrics (and,
  // for the step, its checkpoints): the origins of the relative axes, so a
  // metric logged later than another starts where it did in the run.
  std::optional<double> wallStart;
  std::optional<int64_t> firstStep;

  [[nodiscard]] const MetricSeries* find(const std::string& metric) const;
  // What the checkpoint at `step` records for `metric` ("lr" is stored as
  // learning_rate, "loss" also as train_loss); nothing when it records none.
  [[nodiscard]] std::optional<double> recordedValue(int64_t step, const std::string& metric) const;
  // Where `p` sits on `axis`; nothing when the point lacks that coordinate.
  [[nodiscard]] std::optional<double> x(const MetricPoint& p, CurveAxis axis) const;
  // Where `step` sits on a step axis (Step, RelativeStep); nothing on the others.
  [[nodiscard]] std::optional<double> stepX(int64_t step, CurveAxis axis) const;
  // Its wall times are Unix times (else seconds since some start).
  [[nodiscard]] bool clockTimes() const { return wallStart && *wallStart >= kUnixTimeFloor; }
  // Notes a point's step and wall time in the origins (firstStep, wallStart).
  void noteOrigin(const MetricPoint& p);
};

// Learning rates and other schedules: drawn as they are, never smoothed
// (an EMA turns a linear warmup into an exponential).
[[nodiscard]] bool isScheduleMetric(const std::string& metric);

// What merging live points did to one metric's series.
struct SeriesChange {
  size_t firstNew = 0;     // points from here on are new and come after the old ones
  bool rewritten = false;  // an old point changed or a point landed among them: redraw it whole
};

// Reads a run (worker thread): collectRunMetrics (with the log files /
// folders the user added), and where it stopped reading each growing file.
// Never throws; failures end up in `problems`.
// `listings` (when given): the folders listed for the other runs of the
// same open (folder_listing.h), shared.
[[nodiscard]] CurveRun loadCurveRun(const RunEntry& run,
                                    const std::vector<std::string>& extraLogs = {},
                                    FolderListings* listings = nullptr);

// The run of the curves view made of what collectRunMetrics (here or on a
// host: ui/remote) read for it; `sources` are left empty.
[[nodiscard]] CurveRun curveRunFromMetrics(QString name, QString path, RunMetrics metrics);

// The files collectRunMetrics reads for the run that can grow
// (ckpt::findMetricSources; for a bare `dir`: the run of that directory,
// its checkpoints' run names and the opened root unknown). Offsets are 0.
[[nodiscard]] std::vector<LiveSource> findLiveSources(
    const RunEntry& run, const std::vector<std::string>& extraLogs = {});
[[nodiscard]] std::vector<LiveSource> findLiveSources(const QString& dir);

// Reads what `source` gained since its offset, moves the offset on and
// returns the points (bad lines are added to `problems`). `*rewritten` (when
// given) says the file shrank below the offset: it was rewritten and is read
// again from its start.
[[nodiscard]] MetricPoints readNewPoints(LiveSource& source, QStringList* problems,
                                         bool* rewritten = nullptr);

// Folds points read live from `source` into `run`, as collectRunMetrics
// would have merged them: a metric shown from a preferred source ignores
// them, one from a less preferred source is replaced, and within a source
// the points go through ckpt::addInFileOrder (a restarted job keeps its last
// segment, and the series' tooltip note says so). An event file's
// SessionLog.START (kTfSessionStart) drops the points at and after its step
// from every series of its folder's event files (ckpt::dropFromStep). `rewritten`: the file was
// read again from its start, so the series it alone fed start over. Returns
// what changed per metric.
std::map<std::string, SeriesChange> mergeLivePoints(CurveRun& run, const LiveSource& source,
                                                    const MetricPoints& points,
                                                    bool rewritten = false);

// What the series' tooltip says of a job that restarted: "restarted at step
// 200: the later job's points are shown" (empty when it did not).
[[nodiscard]] QString restartNote(const MetricSeries& series);

}  // namespace ckpt
