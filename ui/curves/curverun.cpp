#include "curves/curverun.h"

#include <QFileInfo>
#include <algorithm>
#include <cmath>
#include <exception>

#include "ckpt/index/tfevents.h"
#include "ckpt/index/wandb.h"
#include "curves/curvetrace.h"
#include "textformat.h"

namespace ckpt {
namespace {

// Problems kept per run: a log full of bad lines should not fill memory.
constexpr qsizetype kMaxProblems = 200;

void addProblems(QStringList& into, const std::vector<std::string>& problems) {
  for (const std::string& p : problems) {
    if (into.size() >= kMaxProblems) return;
    into << fromStd(p);
  }
}

// A SessionLog.START read live from `file`: the orphans of the earlier job
// go from every series of that folder's event files, as readTfEventsFolder
// drops them on a reload.
void dropTfOrphans(CurveRun& run, const std::string& file, int64_t step,
                   std::map<std::string, SeriesChange>& changes) {
  const QString folder = QFileInfo(pathFromStd(file)).absolutePath();
  for (auto& [metric, s] : run.series) {
    if (s.source != MetricSource::TensorBoard) continue;
    const bool ours = std::any_of(s.files.begin(), s.files.end(), [&](const std::string& f) {
      return QFileInfo(pathFromStd(f)).absolutePath() == folder;
    });
    if (!ours || !dropFromStep(s.points, s.restarts, step)) continue;
    changes[metric].rewritten = true;
    run.restartNotes[metric] = restartNote(s);
  }
}

}  // namespace

const MetricSeries* CurveRun::find(const std::string& metric) const {
  const auto it = series.find(metric);
  return it == series.end() ? nullptr : &it->second;
}

std::optional<double> CurveRun::recordedValue(int64_t step, const std::string& metric) const {
  const auto it = checkpointValues.find(step);
  if (it == checkpointValues.end()) return std::nullopt;
  auto value = [&](const std::string& key) -> std::optional<double> {
    const auto v = it->second.find(key);
    if (v == it->second.end() || !std::isfinite(v->second)) return std::nullopt;
    return v->second;
  };
  if (auto v = value(metric)) return v;
  if (metric == "lr") return value("learning_rate");
  if (metric == "learning_rate") return value("lr");
  if (metric == "loss") return value("train_loss");
  if (metric == "train_loss") return value("loss");
  return std::nullopt;
}

bool isScheduleMetric(const std::string& metric) {
  // lr, learning_rate, lr_head, head_lr, ...; weight decay and momentum schedules too.
  if (metric == "lr" || metric == "learning_rate" || metric == "weight_decay" ||
      metric == "momentum")
    return true;
  return metric.rfind("lr_", 0) == 0 ||
         (metric.size() > 3 && metric.compare(metric.size() - 3, 3, "_lr") == 0) ||
         metric.find("learning_rate") != std::string::npos;
}

void CurveRun::noteOrigin(const MetricPoint& p) {
  if (!firstStep || p.step < *firstStep) firstStep = p.step;
  if (p.wallTime && std::isfinite(*p.wallTime) && (!wallStart || *p.wallTime < *wallStart))
    wallStart = *p.wallTime;
}

std::optional<double> CurveRun::stepX(int64_t step, CurveAxis axis) const {
  if (axis == CurveAxis::Step) return double(step);
  if (axis == CurveAxis::RelativeStep) return double(step - firstStep.value_or(0));
  return std::nullopt;
}

std::optional<double> CurveRun::x(const MetricPoint& p, CurveAxis axis) const {
  switch (axis) {
    case CurveAxis::Step:
    case CurveAxis::RelativeStep:
      return stepX(p.step, axis);
    case CurveAxis::Tokens:
      if (!p.tokens) return std::nullopt;
      return double(*p.tokens);
    case CurveAxis::WallTime:
      // As logged: Unix times (time.time(), TensorBoard, W&B, MLflow) are
      // drawn on a clock (curveaxes.cpp).
      if (!p.wallTime || !std::isfinite(*p.wallTime)) return std::nullopt;
      return *p.wallTime;
    case CurveAxis::RelativeTime:
      if (!p.wallTime || !std::isfinite(*p.wallTime) || !wallStart) return std::nullopt;
      return *p.wallTime - *wallStart;
  }
  return std::nullopt;
}

namespace {

std::vector<LiveSource> liveSourcesOf(const std::vector<MetricSourceFile>& found) {
  std::vector<LiveSource> sources;
  for (const MetricSourceFile& f : found)
    sources.push_back({pathFromStd(f.path), f.kind, 0, 0, f.filter});
  return sources;
}

}  // namespace

std::vector<LiveSource> findLiveSources(const RunEntry& run,
                                        const std::vector<std::string>& extraLogs) {
  return liveSourcesOf(findMetricSources(run, extraLogs));
}

std::vector<LiveSource> findLiveSources(const QString& dir) {
  RunEntry run;
  run.path = pathToStd(dir);
  return findLiveSources(run);
}

QString restartNote(const MetricSeries& series) {
  if (!series.restarted()) return {};
  QStringList steps;
  for (int64_t s : series.restarts) steps << QString::number(s);
  return QObject::tr("restarted at step %1: the later job's points are shown")
      .arg(steps.join(QStringLiteral(", ")));
}

CurveRun loadCurveRun(const RunEntry& entry, const std::vector<std::string>& extraLogs,
                      FolderListings* listings) {
  // Looked for once: read, then followed.
  const std::vector<MetricSourceFile> found = traceWorker(CurveWorkerPhase::Sources, [&] {
    return listings ? findMetricSources(entry, extraLogs, *listings)
                    : findMetricSources(entry, extraLogs);
  });
  std::vector<LiveSource> sources = liveSourcesOf(found);
  RunMetrics metrics;
  QString problem;
  try {
    metrics =
        traceWorker(CurveWorkerPhase::Metrics, [&] { return collectRunMetrics(entry, found); });
  } catch (const std::exception& e) {
    problem = QObject::tr("%1: cannot read its metrics: %2")
                  .arg(pathFromStd(entry.path), fromStd(e.what()));
  }
  // Following the run continues where collectRunMetrics stopped reading
  // (lines written meanwhile are read once, in order); a file it did not
  // read (new since) is read from its start.
  for (LiveSource& s : sources) {
    const auto end = metrics.readEnds.find(pathToStd(s.path));
    s.offset = s.size = end == metrics.readEnds.end() ? 0 : end->second;
  }
  CurveRun run =
      curveRunFromMetrics(pathFromStd(entry.name), pathFromStd(entry.path), std::move(metrics));
  run.sources = std::move(sources);
  if (!problem.isEmpty()) run.problems.prepend(problem);
  return run;
}

CurveRun curveRunFromMetrics(QString name, QString path, RunMetrics metrics) {
  CurveRun run;
  run.name = std::move(name);
  run.path = std::move(path);
  for (MetricSeries& s : metrics.series) {
    // The origins from the step and wall time columns alone (a whole
    // MetricPoint per point cost a tenth of a warm sweep's open).
    const SeriesPoints& pts = s.points;
    if (const std::optional<int64_t> first = pts.minStep();
        first && (!run.firstStep || *first < *run.firstStep))
      run.firstStep = first;
    if (const std::optional<double> w = pts.minWallTime();
        w && std::isfinite(*w) && (!run.wallStart || *w < *run.wallStart))
      run.wallStart = w;
    // Room to grow, reserved here on the loading thread: a live run's
    // points are appended on the GUI thread, where moving a million of them
    // into a bigger vector stalled the window (72 ms measured).
    s.points.reserve(s.points.size() + s.points.size() / 2 + 4096);
    const std::string metric = s.metric;
    run.series.emplace(metric, std::move(s));
  }
  run.checkpointSteps = std::move(metrics.checkpointSteps);
  // A checkpoint saved before the first logged step (an initial one) is
  // where the run starts on the relative step axis.
  if (!run.checkpointSteps.empty() &&
      (!run.firstStep || run.checkpointSteps.front() < *run.firstStep))
    run.firstStep = run.checkpointSteps.front();
  addProblems(run.problems, metrics.problems);

  // The index picks each step's file and says what it records (one home:
  // core/index collectRunMetrics).
  for (CheckpointMarker& m : metrics.markers) {
    run.checkpointFiles[m.step] = pathFromStd(m.path);
    run.checkpointValues[m.step] = std::move(m.recorded);
  }
  for (const auto& [metric, series] : run.series)
    if (series.restarted()) run.restartNotes[metric] = restartNote(series);
  return run;
}

MetricPoints readNewPoints(LiveSource& source, QStringList* problems, bool* rewritten) {
  if (rewritten) *rewritten = QFileInfo(source.path).size() < qint64(source.offset);
  uint64_t end = source.offset;
  std::vector<std::string> bad;
  MetricPoints points;
  try {
    const std::string path = pathToStd(source.path);
    points = source.kind == MetricSource::MetricsJsonl
                 ? readMetricsJsonl(path, source.offset, &end, &bad)
             : source.kind == MetricSource::TensorBoard
                 ? readTfEventsPoints(path, source.offset, &end, &bad)
             // A W&B run's .wandb log is appended to record by record.
             : source.kind == MetricSource::Wandb ? readWandbPoints(path, source.offset, &end, &bad)
             // trainer_state.json is rewritten whole at each save, and
             // Lightning's metrics.csv whenever a new key appears: a reload
             // reads them again (not followed live; MLflow's metric files,
             // one per key, are not followed yet either).
             : source.kind == MetricSource::TrainerState ||
                     source.kind == MetricSource::LightningCsv ||
                     source.kind == MetricSource::Mlflow
                 ? MetricPoints{}
                 : readConsoleLog(path, source.filter, source.offset, &end);
  } catch (const std::exception& e) {
    bad.push_back(pathToStd(source.path) + ": " + e.what());
  }
  source.offset = end;
  if (problems) addProblems(*problems, bad);
  return points;
}

std::map<std::string, SeriesChange> mergeLivePoints(CurveRun& run, const LiveSource& source,
                                                    const MetricPoints& points, bool rewritten) {
  const std::string file = pathToStd(source.path);
  std::map<std::string, SeriesChange> changes;
  for (const auto& [metric, p] : points) {
    if (source.kind == MetricSource::TensorBoard && metric == kTfSessionStart) {
      dropTfOrphans(run, file, p.step, changes);
      continue;
    }
    auto it = run.series.find(metric);
    auto change = changes.find(metric);
    if (change == changes.end()) {
      // First point of this metric in this batch: decide what happens to the series.
      SeriesChange c;
      if (it == run.series.end()) {
        MetricSeries s;
        s.metric = metric;
        s.source = source.kind;
        it = run.series.emplace(metric, std::move(s)).first;
      } else if (int(source.kind) > int(it->second.source)) {
        continue;  // shown from a preferred source; collectRunMetrics would ignore these too
      } else if (int(source.kind) < int(it->second.source) ||
                 (rewritten && it->second.files == std::vector<std::string>{file})) {
        // A preferred source appeared, or the one file of the series was
        // rewritten: it starts over from what is read now.
        it->second.source = source.kind;
        it->second.points.clear();
        it->second.restarts.clear();
        it->second.files.clear();
        c.rewritten = true;
      } else {
        c.firstNew = it->second.points.size();
      }
      MetricSeries& s = it->second;
      if (std::find(s.files.begin(), s.files.end(), file) == s.files.end()) s.files.push_back(file);
      change = changes.emplace(metric, c).first;
    } else if (it == run.series.end() || it->second.source != source.kind) {
      continue;
    }

    run.noteOrigin(p);
    MetricSeries& s = it->second;
    const size_t restartsBefore = s.restarts.size();
    const size_t changed = addInFileOrder(s.points, s.restarts, p);
    SeriesChange& c = change->second;
    if (changed < c.firstNew) c.rewritten = true;
    if (s.restarts.size() != restartsBefore) run.restartNotes[metric] = restartNote(s);
  }
  for (const auto& [metric, c] : changes)
    if (c.rewritten)
      if (const auto it = run.series.find(metric);
          it != run.series.end() && !it->second.restarted())
        run.restartNotes.erase(metric);
  return changes;
}

}  // namespace ckpt
