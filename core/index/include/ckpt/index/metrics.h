#pragma once
// Training curves from everything a run leaves behind: checkpoint metadata,
// our trainer's metrics.jsonl, TensorBoard event files (tfevents.h), and
// console logs (the reference library's
// `2025-12-02 10:01:10 - trainer.<run> - INFO - step=100 loss=1.9034
// lr=6.060e-05` in *.log / *.out / *.err files). The rules of where a run's
// curves come from live here and nowhere else: the Curves tab and
// `ckptscope-cli metrics` both call collectMetrics / collectRunMetrics.
// No Qt, no LibTorch.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/scanner.h"
#include "ckpt/index/series_points.h"

namespace ckpt {

// Where a series came from, in order of preference when several give the
// same metric: metrics.jsonl, then a Hugging Face Trainer's
// trainer_state.json (hf_trainer.h), then a Lightning CSVLogger's
// metrics.csv (lightning.h), then an MLflow run's metrics/ files
// (mlflow.h), then a W&B run's .wandb history (wandb.h), then TensorBoard
// event files (full precision, tagged by the trainer), then console logs,
// then checkpoints.
enum class MetricSource {
  MetricsJsonl,
  TrainerState,
  LightningCsv,
  Mlflow,
  Wandb,
  TensorBoard,
  ConsoleLog,
  Checkpoint
};
// "metrics.jsonl", "trainer_state.json", "metrics.csv", "mlflow", "wandb", "tensorboard",
// "log", "checkpoint"
std::string_view metricSourceName(MetricSource s);
inline constexpr int kMetricSourceCount = 8;

struct MetricSeries {
  std::string metric;  // "loss", "val_loss", "lr", "tokens_per_sec", "accuracy", ...
  MetricSource source = MetricSource::MetricsJsonl;
  SeriesPoints points;  // sorted by step, one point per step (columns: series_points.h)
  // The files the points were read from (empty for checkpoint metadata).
  std::vector<std::string> files;
  // A restarted job logs steps again (in the same file, or in a new log
  // whose first step is at or before the last one logged): the series keeps
  // the last segment (every earlier point at or after the step it restarted
  // from is dropped). One entry per restart: the step the later segment
  // began at. For a tooltip: "restarted at step 200: the later job's points
  // are shown".
  std::vector<int64_t> restarts;
  [[nodiscard]] bool restarted() const { return !restarts.empty(); }
};

// A checkpoint on a run's curves.
struct CheckpointMarker {
  int64_t step = 0;
  std::string
      path;  // the file the marker selects: a step file before final, before best / latest copies
  CheckpointKind kind = CheckpointKind::Unknown;
  // What the checkpoints at this step record (metric names as the series
  // use them: "loss", "train_loss", "val_loss", "lr", "accuracy").
  std::map<std::string, double> recorded;
};

struct RunMetrics {
  std::string run;                        // RunEntry::name
  std::string path;                       // the run's directory (a log-only run: the log file)
  std::vector<MetricSeries> series;       // one per metric (the preferred source), sorted by metric
  std::vector<int64_t> checkpointSteps;   // steps that have a checkpoint file (markers), sorted
  std::vector<CheckpointMarker> markers;  // the same steps, with what the checkpoints record
  std::vector<std::string> problems;      // unreadable lines/files, named with file and line
  // Per file read (findMetricSources' paths): the byte just after the last
  // complete line read, where what the file gains later is read from (the
  // Curves tab follows a run from there: nothing is read twice).
  std::map<std::string, uint64_t> readEnds;
  // What the run logged once when it ended, not per step (a Trainer's
  // train_runtime, train_loss, total_flos, ...), and the file it came from.
  std::map<std::string, double> summary;
  std::string summaryFile;
  [[nodiscard]] const MetricSeries* find(const std::string& metric) const;
  // Where a marker sits on `metric`'s curve: the value its checkpoint
  // records (for "loss" also "train_loss"), else the point of that series
  // logged at exactly its step; nothing when neither exists (draw it on the
  // axis, hollow: "no recorded loss").
  [[nodiscard]] std::optional<double> markerValue(const CheckpointMarker& marker,
                                                  const std::string& metric) const;
};

// ---------------------------------------------------------------- reading

// metrics.jsonl: one JSON object per line with "step" and numbers ("loss",
// "lr", "tokens", "tokens_per_sec", "wall_time", "val_loss", ...; Python's
// NaN / Infinity accepted). Reading starts at byte `offset` and stops at the
// last complete line; `*end` gets the offset to continue from (live updates
// append). Bad lines are skipped and reported in `problems` as
// "file: line N (byte B): why" (N counted from `offset`).
std::vector<std::pair<std::string, MetricPoint>> readMetricsJsonl(
    const std::string& path, uint64_t offset = 0, uint64_t* end = nullptr,
    std::vector<std::string>* problems = nullptr);

// The same, point by point, without a list of them all (the file is read
// in blocks): `sink(metric, point)` in file order.
using MetricSink = std::function<void(std::string_view metric, const MetricPoint& point)>;
void readMetricsJsonl(const std::string& path, const MetricSink& sink, uint64_t offset = 0,
                      uint64_t* end = nullptr, std::vector<std::string>* problems = nullptr);

// A metrics.jsonl read whole, per metric: its points in file order through
// addInFileOrder (a restarted job keeps its last segment). The same points,
// `*end` and `problems` as readMetricsJsonl from offset 0, without a call
// per point: the lines are parsed on several threads, each into its own
// per-metric lists, joined in file order. A file that cannot be opened
// gives nothing.
struct FileSeries {
  std::string metric;
  SeriesPoints points;
  std::vector<int64_t> restarts;
};
std::vector<FileSeries> readMetricsJsonlSeries(const std::string& path, uint64_t* end = nullptr,
                                               std::vector<std::string>* problems = nullptr);

// Threads that reading or writing a million points is split among: the
// cores, 1 to 8; 1 on a thread that a SingleThreadedMetrics marks (one of
// collectMetrics' threads, each reading its own runs).
unsigned metricThreads();
class SingleThreadedMetrics {
 public:
  SingleThreadedMetrics();
  ~SingleThreadedMetrics();
  SingleThreadedMetrics(const SingleThreadedMetrics&) = delete;
  SingleThreadedMetrics& operator=(const SingleThreadedMetrics&) = delete;

 private:
  bool m_was = false;
};

// One console-log line's metric, with the run its logger names.
struct LoggedPoint {
  std::string run;  // from a `trainer.<run>` logger; "" when the line names none
  std::string metric;
  MetricPoint point;
};

// Console logs. A physical line is split at '\r' (tqdm redraws its bar with
// '\r'); each piece that holds `step=N` and `key=value` pairs (`loss=1.9`,
// `lr=6.060e-05`, `accuracy=55.2%`, `ppl=...`) gives points, the rest
// (progress bars, dataset messages) is ignored. Python logging records
// (`<asctime> - <logger> - <LEVEL> - <message>`, also basicConfig's
// `LEVEL:<logger>:<message>`) give the logger and a wall time (the asctime
// read as UTC: differences are right, the zone is unknown). A message that
// starts with `eval` / `val` / `validation` is an evaluation: its keys
// become `val_<key>` (`eval step=200 loss=2.1 ppl=8.2` -> val_loss,
// val_ppl). `tokens=N` sets the point's tokens rather than a metric.
std::vector<LoggedPoint> readConsoleLogLines(const std::string& path, uint64_t offset = 0,
                                             uint64_t* end = nullptr);

// Which lines of a console log belong to a run.
struct LogFilter {
  std::vector<std::string> names;  // `trainer.<name>` loggers that name this run
  bool unnamedLines = true;        // lines naming no run: the run whose directory holds the log
  [[nodiscard]] bool accepts(const std::string& loggedRun) const;
};

// The points of the lines `filter` accepts.
std::vector<std::pair<std::string, MetricPoint>> readConsoleLog(const std::string& path,
                                                                const LogFilter& filter,
                                                                uint64_t offset = 0,
                                                                uint64_t* end = nullptr);
// Every line's points, whatever run it names.
std::vector<std::pair<std::string, MetricPoint>> readConsoleLog(const std::string& path,
                                                                uint64_t offset = 0,
                                                                uint64_t* end = nullptr);

// ------------------------------------------------------------- discovery

// A file a run's curves are read from.
struct MetricSourceFile {
  std::string path;
  MetricSource kind =
      MetricSource::ConsoleLog;  // MetricsJsonl, TrainerState, TensorBoard or ConsoleLog
  LogFilter filter;              // console logs: the lines this run takes
};

// The names a run's lines are logged under: its directory's name and the
// run_name its checkpoints record (`trainer.<name>`).
std::vector<std::string> runLogNames(const RunEntry& run);

// The files a run's curves come from (console logs by modification time,
// then path). Several files with one metric merge by their first step: each
// replaces what the earlier ones logged from its first step on (a job
// restarted into a new log), without calling it a restart when it repeats
// those points exactly (one logger writing two files). The files:
//  * <run>/metrics.jsonl;
//  * a Hugging Face Trainer run's newest trainer_state.json (hf_trainer.h:
//    its log_history; read whole, not followed as it grows);
//  * <run>/metrics.csv, a Lightning CSVLogger's (lightning.h; read whole:
//    the logger rewrites it when a new key appears);
//  * an MLflow run folder's metrics/<key> files (mlflow.h; one metric each,
//    named by its path under metrics/);
//  * a W&B run folder's run-<id>.wandb history and files/output.log (its
//    console output, read as a log of the run; wandb.h). Its logs/ folder
//    holds the SDK's own logs and is not read;
//  * *.log / *.out / *.err in the run's directory and in its parent;
//  * the same in a `logs/` folder of the run's directory, of its parent,
//    and of every ancestor up to run.root (the cluster layout
//    `logs/<job-name>_<job-id>.out|.err`); with run.root empty, of the
//    grandparent too (<experiment>/logs beside <experiment>/checkpoints/<run>);
//  * `extraLogs`: files or folders the user added (a folder's log files, not
//    below it; a *.jsonl file is read as metrics.jsonl);
//  * TensorBoard event files (events.out.tfevents.*) in the run's directory,
//    in tfEventFilesIn's order (tfevents.h): the folder is one TensorBoard
//    run, its files read as one stream (a tag is its series' name); then
//    those of its runs/*/ folders (a Hugging Face Trainer's logging_dir, one
//    per launch), each folder a stream, merged as files are (above).
// Lines that name no run are taken from a log in the run's directory (or its
// `logs/` folder) or whose name starts with the run directory's name; from
// any other log only lines whose logger names the run. Files that cannot be
// listed are skipped; nothing here throws.
std::vector<MetricSourceFile> findMetricSources(const RunEntry& run,
                                                const std::vector<std::string>& extraLogs = {});
// The same with folders listed through `listings`: the runs of one open
// share them (a sweep's runs their parent folder).
class FolderListings;
std::vector<MetricSourceFile> findMetricSources(const RunEntry& run,
                                                const std::vector<std::string>& extraLogs,
                                                FolderListings& listings);

// ------------------------------------------------------------- collecting

// The rule for a restarted job, for a metric's points in the order one file
// gives them: a later step is appended; the last step logged again replaces
// it (no restart); an earlier step means the job restarted there: every point
// from that step on is dropped, `p` appended and the step noted in
// `restarts` (the series keeps the last segment). collectRunMetrics reads
// every file through this, and the Curves tab adds what a followed file
// appends through it, so a live curve is what a reload draws. Returns the
// index of the first point that changed (points before it are as they were).
size_t addInFileOrder(SeriesPoints& points, std::vector<int64_t>& restarts, const MetricPoint& p);

// All series of one run from findMetricSources(run, extraLogs) and its
// checkpoints' loss / train_loss / val_loss / learning_rate. A branch run
// (lineage.json in its directory) starts with its parent's metrics.jsonl up
// to the branch step, and so on up the chain.
RunMetrics collectRunMetrics(const RunEntry& run, const std::vector<std::string>& extraLogs = {});
// The same from `sources`, as findMetricSources(run, extraLogs) found them:
// a caller that needs the sources too (the Curves tab follows them) looks
// for them once (the look lists the run's folder, its parent and theirs).
RunMetrics collectRunMetrics(const RunEntry& run, const std::vector<MetricSourceFile>& sources);

// The same for many runs, reading each file once (one log feeds many runs:
// a pipeline's job log holds `trainer.<run>-pretrain`, `-sft` and `-dpo`).
// Lines of an `extraLogs` file that belong to none of `runs` make runs of
// their own (named by their logger, or after the log file; path = the log),
// appended after the others.
std::vector<RunMetrics> collectMetrics(const std::vector<RunEntry>& runs,
                                       const std::vector<std::string>& extraLogs = {});

// The runs under `path` for curves: a directory's runs (scanDirectory, runs
// without checkpoints included) and its directories that hold TensorBoard
// event files but no checkpoint (event files another run reads, in its
// runs/*/, are that run's); a checkpoint, metrics.jsonl, event file or W&B
// .wandb file: the run of its directory. Throws std::runtime_error naming
// the path when it cannot be read.
std::vector<RunEntry> findMetricRuns(const std::string& path);

// ------------------------------------------------------------- smoothing

// TensorBoard's smoothing: debiased exponential moving average with weight
// `smoothing` in [0, 1) (0: the raw values).
std::vector<double> smoothEma(const std::vector<double>& values, double smoothing);

// The same one value at a time, for a curve that grows: next() gives what
// smoothEma would give for the value appended (NaN and infinities pass
// through and do not count).
class EmaSmoother {
 public:
  explicit EmaSmoother(double smoothing = 0);
  double next(double x);

 private:
  double m_w = 0;
  double m_last = 0;
  int64_t m_count = 0;
  bool m_debiasing = false;
};

}  // namespace ckpt
