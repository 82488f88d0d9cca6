#include "curves/curverun.h"

#include <QFile>
#include <QFileInfo>
#include <algorithm>
#include <cmath>
#include <exception>

#include "textformat.h"

namespace ckpt {
namespace {

// Wall times from here on are Unix times (September 2001), not seconds since a start.
constexpr double kUnixTimeFloor = 1e9;
// Problems kept per run: a log full of bad lines should not fill memory.
constexpr qsizetype kMaxProblems = 200;

bool samePoint(const MetricPoint& a, const MetricPoint& b) {
  const bool sameValue = a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
  return a.step == b.step && sameValue && a.wallTime == b.wallTime && a.tokens == b.tokens;
}

void noteWallTime(CurveRun& run, const MetricPoint& p) {
  if (!p.wallTime || *p.wallTime < kUnixTimeFloor) return;
  if (!run.wallStart || *p.wallTime < *run.wallStart) run.wallStart = *p.wallTime;
}

void addProblems(QStringList& into, const std::vector<std::string>& problems) {
  for (const std::string& p : problems) {
    if (into.size() >= kMaxProblems) return;
    into << fromStd(p);
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
  if (metric == "lr" || metric == "learning_rate" || metric == "weight_decay" || metric == "momentum") return true;
  return metric.rfind("lr_", 0) == 0 || (metric.size() > 3 && metric.compare(metric.size() - 3, 3, "_lr") == 0) ||
         metric.find("learning_rate") != std::string::npos;
}

std::optional<double> CurveRun::x(const MetricPoint& p, CurveAxis axis) const {
  switch (axis) {
    case CurveAxis::Step:
      return double(p.step);
    case CurveAxis::WallTime:
      if (!p.wallTime) return std::nullopt;
      return *p.wallTime >= kUnixTimeFloor && wallStart ? *p.wallTime - *wallStart : *p.wallTime;
    case CurveAxis::Tokens:
      if (!p.tokens) return std::nullopt;
      return double(*p.tokens);
  }
  return std::nullopt;
}

std::vector<LiveSource> findLiveSources(const RunEntry& run, const std::vector<std::string>& extraLogs) {
  std::vector<LiveSource> sources;
  for (MetricSourceFile& f : findMetricSources(run, extraLogs))
    sources.push_back({pathFromStd(f.path), f.kind, 0, 0, std::move(f.filter)});
  return sources;
}

std::vector<LiveSource> findLiveSources(const QString& dir) {
  RunEntry run;
  run.path = pathToStd(dir);
  return findLiveSources(run);
}

uint64_t completeLinesEnd(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return 0;
  constexpr qint64 kChunk = 64 * 1024;
  qint64 end = file.size();
  while (end > 0) {
    const qint64 start = std::max<qint64>(0, end - kChunk);
    if (!file.seek(start)) return 0;
    const QByteArray bytes = file.read(end - start);
    const qsizetype nl = bytes.lastIndexOf('\n');
    if (nl >= 0) return uint64_t(start + nl + 1);
    end = start;
  }
  return 0;
}

CurveRun loadCurveRun(const RunEntry& entry, const std::vector<std::string>& extraLogs) {
  CurveRun run;
  run.name = pathFromStd(entry.name);
  run.path = pathFromStd(entry.path);
  // Where the growing files end *before* they are read: lines written in
  // between are read again later, and a step read twice keeps its last value.
  run.sources = findLiveSources(entry, extraLogs);
  for (LiveSource& s : run.sources) s.offset = s.size = completeLinesEnd(s.path);

  RunMetrics metrics;
  try {
    metrics = collectRunMetrics(entry, extraLogs);
  } catch (const std::exception& e) {
    run.problems << QObject::tr("%1: cannot read its metrics: %2").arg(run.path, fromStd(e.what()));
  }
  for (MetricSeries& s : metrics.series) {
    for (const MetricPoint& p : s.points) noteWallTime(run, p);
    // Room to grow, reserved here on the loading thread: a live run's
    // points are appended on the GUI thread, where moving a million of them
    // into a bigger vector stalled the window (72 ms measured).
    s.points.reserve(s.points.size() + s.points.size() / 2 + 4096);
    const std::string name = s.metric;
    run.series.emplace(name, std::move(s));
  }
  run.checkpointSteps = std::move(metrics.checkpointSteps);
  addProblems(run.problems, metrics.problems);

  // The index picks each step's file and says what it records (one home:
  // core/index collectRunMetrics).
  for (CheckpointMarker& m : metrics.markers) {
    run.checkpointFiles[m.step] = pathFromStd(m.path);
    run.checkpointValues[m.step] = std::move(m.recorded);
  }
  for (const auto& [metric, series] : run.series)
    if (series.restarted()) {
      QStringList steps;
      for (int64_t s : series.restarts) steps << QString::number(s);
      run.restartNotes[metric] =
          QObject::tr("restarted at step %1: the later job's points are shown").arg(steps.join(QStringLiteral(", ")));
    }
  return run;
}

MetricPoints readNewPoints(LiveSource& source, QStringList* problems) {
  uint64_t end = source.offset;
  std::vector<std::string> bad;
  MetricPoints points;
  try {
    const std::string path = pathToStd(source.path);
    points = source.kind == MetricSource::MetricsJsonl
                 ? readMetricsJsonl(path, source.offset, &end, &bad)
                 : readConsoleLog(path, source.filter, source.offset, &end);
  } catch (const std::exception& e) {
    bad.push_back(pathToStd(source.path) + ": " + e.what());
  }
  source.offset = end;
  if (problems) addProblems(*problems, bad);
  return points;
}

std::map<std::string, SeriesChange> mergeLivePoints(CurveRun& run, MetricSource source,
                                                    const MetricPoints& points) {
  std::map<std::string, SeriesChange> changes;
  for (const auto& [metric, p] : points) {
    auto it = run.series.find(metric);
    auto change = changes.find(metric);
    if (change == changes.end()) {
      // First point of this metric in this batch: decide what happens to the series.
      SeriesChange c;
      if (it == run.series.end()) {
        MetricSeries s;
        s.metric = metric;
        s.source = source;
        it = run.series.emplace(metric, std::move(s)).first;
      } else if (int(source) > int(it->second.source)) {
        continue;  // shown from a preferred source; collectRunMetrics would ignore these too
      } else if (int(source) < int(it->second.source)) {
        it->second.source = source;  // a preferred source appeared: it replaces the series
        it->second.points.clear();
        c.rewritten = true;
      } else {
        c.firstNew = it->second.points.size();
      }
      change = changes.emplace(metric, c).first;
    } else if (it == run.series.end() || it->second.source != source) {
      continue;
    }

    noteWallTime(run, p);
    std::vector<MetricPoint>& v = it->second.points;
    SeriesChange& c = change->second;
    if (v.empty() || p.step > v.back().step) {
      v.push_back(p);
      continue;
    }
    const auto pos =
        std::lower_bound(v.begin(), v.end(), p.step,
                         [](const MetricPoint& a, int64_t step) { return a.step < step; });
    const size_t index = size_t(pos - v.begin());
    if (pos != v.end() && pos->step == p.step) {
      if (samePoint(*pos, p)) continue;  // read again after the load: nothing new
      *pos = p;                          // the last one read wins (a resumed run rewrites steps)
    } else {
      v.insert(pos, p);
    }
    if (index < c.firstNew) c.rewritten = true;
  }
  return changes;
}

}  // namespace ckpt
