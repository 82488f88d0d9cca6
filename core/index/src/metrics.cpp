// Where a run's curves come from and how its sources merge into series.
#include "ckpt/index/metrics.h"
#include "ckpt/index/metrics_cache.h"
#include "ckpt/index/metrics_each.h"

#include "ckpt/format/sharded.h"
#include "ckpt/index/folder_listing.h"
#include "ckpt/index/hf_trainer.h"
#include "ckpt/index/lightning.h"
#include "ckpt/index/mlflow.h"
#include "ckpt/index/natural_order.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/tfevents.h"
#include "ckpt/index/trainers.h"
#include "ckpt/index/wandb.h"
#include "clean_path.h"
#include "metric_files.h"
#include "metric_text.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using detail::cleanPath;
using detail::expandExtra;
using detail::fileKey;
using detail::isJsonlFile;

using Points = std::vector<std::pair<std::string, MetricPoint>>;

// Which of a step's files a marker selects: a numbered step file before
// final, before best / latest copies of the same weights.
int kindRank(CheckpointKind k) {
  switch (k) {
    case CheckpointKind::Step:
      return 0;
    case CheckpointKind::Final:
      return 1;
    case CheckpointKind::Unknown:
      return 2;
    case CheckpointKind::Best:
      return 3;
    case CheckpointKind::Latest:
      return 4;
  }
  return 5;
}

using detail::canonicalMetric;

// One metric of one file while it is read: points sorted by step, the last
// segment of a restarted job kept.
struct Accumulator {
  SeriesPoints points;
  std::vector<std::string> files;
  std::vector<int64_t> restarts;
  fs::file_time_type mtime{};
  size_t order = 0;  // the file's place in the source list

  void add(const MetricPoint& p) { addInFileOrder(points, restarts, p); }
};

// One source kind's points of a run: per metric, one Accumulator per file.
struct SourcePoints {
  std::map<std::string, std::vector<Accumulator>> byMetric;
  size_t files = 0;

  // Starts a file: its points go to fresh accumulators.
  std::map<std::string, Accumulator>& begin() {
    m_current.clear();
    return m_current;
  }
  void end(const std::string& path) {
    std::error_code ec;
    const fs::file_time_type mtime =
        path.empty() ? fs::file_time_type{} : fs::last_write_time(path, ec);
    for (auto& [metric, a] : m_current) {
      if (a.points.empty()) continue;
      if (!path.empty()) a.files = {path};
      a.mtime = mtime;
      a.order = files;
      byMetric[metric].push_back(std::move(a));
    }
    ++files;
    m_current.clear();
  }

 private:
  std::map<std::string, Accumulator> m_current;
};

// Files read once for all runs (one log feeds many runs). Runs are
// collected on several threads: the first to ask reads the log, the others
// wait for it (an unordered_map's elements stay where they are).
struct FileCache {
  struct Log {
    std::vector<LoggedPoint> lines;
    uint64_t end = 0;  // where reading stopped
  };
  std::unordered_map<std::string, Log> logs;
  std::mutex mutex;
  const Log& log(const std::string& path) {
    const std::lock_guard lock(mutex);
    auto it = logs.find(path);
    if (it == logs.end()) {
      Log l;
      l.lines = readConsoleLogLines(path, 0, &l.end);
      it = logs.emplace(path, std::move(l)).first;
    }
    return it->second;
  }
};

// One file's series, read whole.
void addFileSeries(SourcePoints& into, const std::string& path, std::vector<FileSeries> series) {
  auto& acc = into.begin();
  for (FileSeries& s : series) {
    Accumulator& a = acc[s.metric];
    a.points = std::move(s.points);
    a.restarts = std::move(s.restarts);
  }
  into.end(path);
}

// Returns where reading stopped.
uint64_t addJsonl(SourcePoints& into, const std::string& path, std::vector<std::string>& problems) {
  uint64_t end = 0;
  addFileSeries(into, path, readMetricsJsonlCached(path, &end, &problems));
  return end;
}

// A Trainer's trainer_state.json (hf_trainer.h): its log_history, and the
// row that ends a training as the run's summary. Returns the file's size:
// it is rewritten whole, never appended to, so nothing is left to follow.
uint64_t addTrainerState(SourcePoints& into, const std::string& path, RunMetrics& m) {
  try {
    TrainerStateLog state = readTrainerState(path, &m.problems);
    addFileSeries(into, path, std::move(state.series));
    if (!state.summary.empty()) {
      m.summary = std::move(state.summary);
      m.summaryFile = path;
    }
  } catch (const std::exception& e) {
    m.problems.push_back(e.what());
  }
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : uint64_t(size);
}

// A Lightning CSVLogger's metrics.csv (lightning.h). Returns the file's
// size: the logger rewrites it whole when a new key appears, so it is read
// whole, not followed.
uint64_t addLightningCsv(SourcePoints& into, const std::string& path, RunMetrics& m) {
  try {
    addFileSeries(into, path, readLightningMetricsCsv(path, &m.problems));
  } catch (const std::exception& e) {
    m.problems.push_back(e.what());
  }
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : uint64_t(size);
}

// An MLflow run's metrics/<key> file (mlflow.h). Returns where reading stopped.
uint64_t addMlflow(SourcePoints& into, const std::string& path, const std::string& runDir,
                   RunMetrics& m) {
  uint64_t end = 0;
  try {
    std::vector<FileSeries> one;
    one.push_back(readMlflowMetric(path, mlflowMetricName(runDir, path), &end, &m.problems));
    addFileSeries(into, path, std::move(one));
  } catch (const std::exception& e) {
    m.problems.push_back(e.what());
  }
  return end;
}

// A W&B run's .wandb history (wandb.h). Returns where reading stopped.
uint64_t addWandb(SourcePoints& into, const std::string& path, RunMetrics& m) {
  uint64_t end = 0;
  addFileSeries(into, path, readWandbHistoryCached(path, &end, &m.problems));
  return end;
}

// Returns where reading stopped.
template <typename Accepts>
uint64_t addLog(SourcePoints& into, const std::string& path, FileCache& cache, Accepts accepts) {
  auto& acc = into.begin();
  const FileCache::Log& log = cache.log(path);
  for (const LoggedPoint& p : log.lines)
    if (accepts(p)) acc[p.metric].add(p.point);
  into.end(path);
  return log.end;
}

// Several files with one metric: by their first step (then time, then
// place), each later file replacing what the earlier ones logged from its
// first step on. A file that repeats those points exactly (the same lines
// logged to two files) is no restart.
Accumulator mergeFiles(std::vector<Accumulator>& parts) {
  if (parts.size() == 1) return std::move(parts.front());
  std::stable_sort(parts.begin(), parts.end(), [](const Accumulator& a, const Accumulator& b) {
    if (a.points.front().step != b.points.front().step)
      return a.points.front().step < b.points.front().step;
    if (a.mtime != b.mtime) return a.mtime < b.mtime;
    return a.order < b.order;
  });
  Accumulator out;
  for (Accumulator& part : parts) {
    out.restarts.insert(out.restarts.end(), part.restarts.begin(), part.restarts.end());
    for (std::string& f : part.files)
      if (std::find(out.files.begin(), out.files.end(), f) == out.files.end())
        out.files.push_back(std::move(f));
    const int64_t first = part.points.front().step;
    if (!out.points.empty() && first <= out.points.back().step) {
      const size_t from = out.points.lowerBound(first);
      bool repeated = true;
      for (size_t i = from; i < out.points.size() && repeated; ++i) {
        const size_t q = part.points.lowerBound(out.points.step(i));
        repeated = q != part.points.size() && part.points.step(q) == out.points.step(i) &&
                   (part.points.value(q) == out.points.value(i) ||
                    (std::isnan(part.points.value(q)) && std::isnan(out.points.value(i))));
      }
      out.points.truncate(from);
      if (!repeated) out.restarts.push_back(first);
    }
    out.points.append(part.points);
  }
  return out;
}

MetricSeries toSeries(const std::string& metric, MetricSource source, Accumulator&& a) {
  MetricSeries s;
  s.metric = metric;
  s.source = source;
  s.points = std::move(a.points);
  s.files = std::move(a.files);
  s.restarts = std::move(a.restarts);
  return s;
}

// Per source kind (indexed by MetricSource, the order of preference).
using BySource = SourcePoints[kMetricSourceCount];

// One series per metric, from the most detailed source that has it.
void finishSeries(RunMetrics& m, BySource& bySource) {
  for (int s = 0; s < kMetricSourceCount; ++s)
    for (auto& [metric, parts] : bySource[s].byMetric) {
      if (parts.empty() || m.find(metric)) continue;
      m.series.push_back(toSeries(metric, MetricSource(s), mergeFiles(parts)));
    }
  std::sort(m.series.begin(), m.series.end(),
            [](const MetricSeries& a, const MetricSeries& b) { return a.metric < b.metric; });
}

void addCheckpoints(RunMetrics& m, const RunEntry& run, SourcePoints& into) {
  std::map<int64_t, CheckpointMarker> markers;
  std::map<std::string, std::map<int64_t, MetricPoint>> points;
  for (const CheckpointEntry& c : run.checkpoints) {
    if (!c.error.empty() || !c.step) continue;
    auto [it, added] = markers.try_emplace(*c.step);
    CheckpointMarker& marker = it->second;
    if (added || kindRank(c.kind) < kindRank(marker.kind)) {
      marker.step = *c.step;
      marker.path = c.path;
      marker.kind = c.kind;
    }
    for (const auto& [key, value] : c.scalars) {
      if (key == "tokens_seen") continue;
      MetricPoint p;
      p.step = *c.step;
      p.value = value;
      if (const auto t = c.scalars.find("tokens_seen");
          t != c.scalars.end() && std::isfinite(t->second))
        p.tokens = int64_t(t->second);
      const std::string metric = canonicalMetric(key);
      points[metric][*c.step] = p;
      marker.recorded[metric] = value;
    }
  }
  auto& acc = into.begin();
  for (auto& [metric, bySteps] : points) {
    Accumulator& a = acc[metric];
    for (const auto& [step, p] : bySteps) a.add(p);
  }
  into.end({});
  for (auto& [step, marker] : markers) {
    m.checkpointSteps.push_back(step);
    m.markers.push_back(std::move(marker));
  }
}

// A branch (lineage.json, run_plan.h): its history before the branch point
// is its parent's metrics.jsonl up to parent_step, and so on up the chain.
void addLineage(SourcePoints& into, const std::string& runDir, std::vector<std::string>& problems) {
  try {
    std::optional<Lineage> lineage = readLineage(runDir);
    int64_t limit = lineage ? lineage->parentStep : 0;
    for (int depth = 0; lineage && depth < 16; ++depth) {
      const fs::path parentJsonl = fs::path(lineage->parentDir) / "metrics.jsonl";
      std::error_code ec;
      if (fs::is_regular_file(parentJsonl, ec)) {
        auto& acc = into.begin();
        readMetricsJsonl(
            parentJsonl.string(),
            [&](std::string_view metric, const MetricPoint& p) {
              if (p.step <= limit) acc[std::string(metric)].add(p);
            },
            0, nullptr, &problems);
        into.end(parentJsonl.string());
      }
      lineage = readLineage(lineage->parentDir);
      if (lineage) limit = std::min(limit, lineage->parentStep);
    }
  } catch (const std::exception& e) {
    problems.push_back(e.what());
  }
}

// A folder's event files, read as one stream (TensorBoard's restart rule
// spans them): one part per tag.
void addTfEvents(SourcePoints& into, const std::vector<std::string>& files, RunMetrics& m) {
  for (TfSeries& t : readTfEventsFolder(files, &m.readEnds, &m.problems)) {
    Accumulator a;
    a.points = std::move(t.points);
    a.restarts = std::move(t.restarts);
    a.files = std::move(t.files);
    a.order = into.files;
    into.byMetric[t.tag].push_back(std::move(a));
  }
  ++into.files;
}

RunMetrics collectOne(const RunEntry& run, const std::vector<MetricSourceFile>& sources,
                      FileCache& cache) {
  RunMetrics m;
  m.run = run.name;
  m.path = run.path;
  BySource bySource;
  auto& jsonl = bySource[int(MetricSource::MetricsJsonl)];
  addLineage(jsonl, run.path, m.problems);
  std::vector<std::string> tfFolder;  // consecutive event files of one folder
  auto endTfFolder = [&] {
    if (!tfFolder.empty()) addTfEvents(bySource[int(MetricSource::TensorBoard)], tfFolder, m);
    tfFolder.clear();
  };
  for (const MetricSourceFile& s : sources) {
    if (s.kind == MetricSource::TensorBoard) {
      if (!tfFolder.empty() &&
          fs::path(tfFolder.back()).parent_path() != fs::path(s.path).parent_path())
        endTfFolder();
      tfFolder.push_back(s.path);
      continue;
    }
    m.readEnds[s.path] =
        s.kind == MetricSource::MetricsJsonl ? addJsonl(jsonl, s.path, m.problems)
        : s.kind == MetricSource::TrainerState
            ? addTrainerState(bySource[int(MetricSource::TrainerState)], s.path, m)
        : s.kind == MetricSource::LightningCsv
            ? addLightningCsv(bySource[int(MetricSource::LightningCsv)], s.path, m)
        : s.kind == MetricSource::Mlflow
            ? addMlflow(bySource[int(MetricSource::Mlflow)], s.path, run.path, m)
        : s.kind == MetricSource::Wandb
            ? addWandb(bySource[int(MetricSource::Wandb)], s.path, m)
            : addLog(bySource[int(MetricSource::ConsoleLog)], s.path, cache,
                     [&s](const LoggedPoint& p) { return s.filter.accepts(p.run); });
  }
  endTfFolder();
  // A W&B run's summary: what wandb-summary.json holds when no trainer gave one.
  if (m.summary.empty() && isWandbRunFolder(run.path))
    if (const std::string f = wandbRunFile(run.path, "wandb-summary.json"); !f.empty()) {
      m.summary = readWandbSummary(f, &m.problems);
      if (!m.summary.empty()) m.summaryFile = f;
    }
  addCheckpoints(m, run, bySource[int(MetricSource::Checkpoint)]);
  finishSeries(m, bySource);
  return m;
}

}  // namespace

size_t addInFileOrder(SeriesPoints& points, std::vector<int64_t>& restarts, const MetricPoint& p) {
  const size_t n = points.size();
  if (n == 0 || p.step > points.step(n - 1)) {
    points.push_back(p);
    return n;
  }
  if (p.step == points.step(n - 1)) {
    points.pop_back();  // logged twice: the last one read wins
    points.push_back(p);
    return n - 1;
  }
  // The job restarted from an earlier step: what it logged before from
  // there on is replaced by what it logs now.
  const size_t index = points.lowerBound(p.step);
  points.truncate(index);
  points.push_back(p);
  restarts.push_back(p.step);
  return index;
}

std::string_view metricSourceName(MetricSource s) {
  switch (s) {
    case MetricSource::MetricsJsonl:
      return "metrics.jsonl";
    case MetricSource::TrainerState:
      return "trainer_state.json";
    case MetricSource::LightningCsv:
      return "metrics.csv";
    case MetricSource::Mlflow:
      return "mlflow";
    case MetricSource::Wandb:
      return "wandb";
    case MetricSource::TensorBoard:
      return "tensorboard";
    case MetricSource::ConsoleLog:
      return "log";
    case MetricSource::Checkpoint:
      return "checkpoint";
  }
  return "";
}

const MetricSeries* RunMetrics::find(const std::string& metric) const {
  for (const MetricSeries& s : series)
    if (s.metric == metric) return &s;
  return nullptr;
}

std::optional<double> RunMetrics::markerValue(const CheckpointMarker& marker,
                                              const std::string& metric) const {
  if (const auto it = marker.recorded.find(metric); it != marker.recorded.end()) return it->second;
  if (metric == "loss")
    if (const auto it = marker.recorded.find("train_loss"); it != marker.recorded.end())
      return it->second;
  if (const MetricSeries* s = find(metric)) {
    const size_t i = s->points.lowerBound(marker.step);
    if (i < s->points.size() && s->points.step(i) == marker.step) return s->points.value(i);
  }
  return std::nullopt;
}

namespace {

// work(i) for i in [0, n) on metricThreads() threads, each taking the next
// index (a sweep's runs: a thousand small files parse no faster one at a
// time on two cores than one big one on two). Inside, metricThreads() is 1:
// a file is not split again among threads already busy. The first
// exception is rethrown once all have stopped.
template <typename Work>
void forEachOnThreads(size_t n, const Work& work) {
  const unsigned threads = unsigned(std::min<size_t>(n, metricThreads()));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) work(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto loop = [&] {
    const SingleThreadedMetrics single;
    for (size_t i = next++; i < n; i = next++) {
      try {
        work(i);
      } catch (...) {
        const std::lock_guard lock(failureMutex);
        if (!failure) failure = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < threads; ++t) workers.emplace_back(loop);
  loop();
  for (std::thread& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

std::vector<RunMetrics> collectMetrics(const std::vector<RunEntry>& runs,
                                       const std::vector<std::string>& extraLogs) {
  std::vector<RunMetrics> out;
  out.reserve(runs.size());
  collectMetrics(runs, extraLogs, [&out](RunMetrics&& run) { out.push_back(std::move(run)); });
  return out;
}

void collectMetrics(const std::vector<RunEntry>& runs, const std::vector<std::string>& extraLogs,
                    const RunMetricsFn& each) {
  FileCache cache;
  // Per extra file, the filters of the runs that read it: what none takes
  // makes log-only runs.
  std::map<std::string, std::vector<LogFilter>> claimed;
  std::set<std::string> extraKeys;
  for (const fs::path& p : expandExtra(extraLogs)) extraKeys.insert(fileKey(p));
  std::vector<std::vector<MetricSourceFile>> sources;
  FolderListings listings;  // the runs' parent and its logs/ listed once for all
  for (const RunEntry& run : runs) {
    sources.push_back(findMetricSources(run, extraLogs, listings));
    for (const MetricSourceFile& s : sources.back()) {
      if (extraKeys.empty()) break;
      const std::string key = fileKey(s.path);
      if (extraKeys.count(key))
        claimed[key].push_back(s.kind == MetricSource::MetricsJsonl ? LogFilter{{}, true}
                                                                    : s.filter);
    }
  }
  // A run read waits here until those before it are handed over. Once
  // `each` has thrown, no run is handed over again.
  std::vector<std::optional<RunMetrics>> read(runs.size());
  size_t handed = 0;
  bool stopped = false;
  std::mutex handing;
  forEachOnThreads(runs.size(), [&](size_t i) {
    RunMetrics run = collectOne(runs[i], sources[i], cache);
    const std::lock_guard lock(handing);
    read[i] = std::move(run);
    for (; !stopped && handed < read.size() && read[handed]; ++handed) {
      try {
        each(std::move(*read[handed]));
      } catch (...) {
        stopped = true;
        throw;
      }
      read[handed].reset();
    }
  });

  // Log-only runs, from the extra files in the order given.
  struct ExtraRun {
    RunMetrics first;
    BySource second;
  };
  std::map<std::string, size_t> logOnly;  // run name -> index into extraRuns
  std::vector<ExtraRun> extraRuns;
  auto runFor = [&](const std::string& name, const fs::path& file) -> ExtraRun& {
    auto [it, added] = logOnly.try_emplace(name, extraRuns.size());
    if (added) {
      extraRuns.emplace_back();
      extraRuns.back().first.run = name;
      extraRuns.back().first.path = file.string();
    }
    return extraRuns[it->second];
  };
  std::set<std::string> done;
  for (const fs::path& p : expandExtra(extraLogs)) {
    const std::string key = fileKey(p);
    if (!done.insert(key).second) continue;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      RunMetrics bad;
      bad.run = p.filename().string();
      bad.path = p.string();
      bad.problems.push_back(p.string() + ": " +
                             (fs::exists(p, ec) ? "not a regular file" : "no such file"));
      each(std::move(bad));
      continue;
    }
    const auto& filters = claimed[key];
    if (isJsonlFile(p)) {
      if (!filters.empty()) continue;
      auto& r = runFor(p.parent_path().filename().string(), p);
      addJsonl(r.second[int(MetricSource::MetricsJsonl)], p.string(), r.first.problems);
      continue;
    }
    // Lines no run takes, by the run their logger names (or the log's own name).
    std::vector<std::string> owners;
    for (const LoggedPoint& lp : cache.log(p.string()).lines) {
      if (std::any_of(filters.begin(), filters.end(),
                      [&](const LogFilter& f) { return f.accepts(lp.run); }))
        continue;
      const std::string owner = lp.run.empty() ? p.stem().string() : lp.run;
      if (std::find(owners.begin(), owners.end(), owner) == owners.end()) owners.push_back(owner);
    }
    for (const std::string& owner : owners) {
      auto& r = runFor(owner, p);
      addLog(r.second[int(MetricSource::ConsoleLog)], p.string(), cache,
             [&](const LoggedPoint& lp) {
               if (std::any_of(filters.begin(), filters.end(),
                               [&](const LogFilter& f) { return f.accepts(lp.run); }))
                 return false;
               return (lp.run.empty() ? p.stem().string() : lp.run) == owner;
             });
    }
  }
  for (ExtraRun& r : extraRuns) {
    finishSeries(r.first, r.second);
    each(std::move(r.first));
  }
}

RunMetrics collectRunMetrics(const RunEntry& run, const std::vector<std::string>& extraLogs) {
  FileCache cache;
  return collectOne(run, findMetricSources(run, extraLogs), cache);
}

RunMetrics collectRunMetrics(const RunEntry& run, const std::vector<MetricSourceFile>& sources) {
  FileCache cache;
  return collectOne(run, sources, cache);
}

std::vector<RunEntry> findMetricRuns(const std::string& path) {
  std::error_code ec;
  // The scanner's runs are those without checkpoints too: metrics files,
  // event-file folders (scanner.h).
  if (fs::is_directory(path, ec)) return scanDirectory(path).runs;
  if (!fs::is_regular_file(path, ec))
    throw std::runtime_error(
        path + ": " + (fs::exists(path, ec) ? "not a regular file" : "no such file or directory"));
  const fs::path p(path);
  const std::string name = p.filename().string();
  // (A sharded checkpoint's index or .metadata names its folder's run too.)
  if (name != "metrics.jsonl" && !isTfEventsFileName(name) && p.extension() != ".wandb" &&
      !isWandbHistoryJsonl(path) && !isCandidateName(name) && !isShardDescriptionName(path))
    throw std::runtime_error(path +
                             ": neither a checkpoint, a metrics.jsonl nor a directory, nor a "
                             "TensorBoard event file or a W&B .wandb or wandb-history.jsonl");
  std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  if (const std::optional<std::string> run = wandbRunOf(path)) dir = *run;  // in its files/
  return {scanRunDirectory(dir, dir)};
}

}  // namespace ckpt
