#include "ckpt/index/runs_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>

#include "ckpt/index/run_filter.h"

namespace ckpt {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The names a filter or a sort may use besides hyperparameters and metrics.
const std::set<std::string>& rowFields() {
  static const std::set<std::string> fields = {
      "name", "path", "last", "last_step", "best", "best_step", "points", "checkpoint", "runs"};
  return fields;
}

std::optional<HparamValue> rowField(const RunsTableRow& row, std::string_view name) {
  auto number = [](auto v) -> std::optional<HparamValue> {
    if (!v) return std::nullopt;
    return numberHparam(double(*v));
  };
  if (name == "name") return textHparam(row.name);
  if (name == "path") return textHparam(row.path);
  if (name == "last") return number(row.last);
  if (name == "last_step") return number(row.lastStep);
  if (name == "best") return number(row.best);
  if (name == "best_step") return number(row.bestStep);
  if (name == "points") return numberHparam(double(row.points));
  if (name == "runs") return numberHparam(double(row.runs.empty() ? 1 : row.runs.size()));
  if (name == "checkpoint")
    return row.checkpoint.empty() ? std::nullopt : std::optional(textHparam(row.checkpoint));
  const auto it = row.hparams.find(canonicalHparamKey(name));
  if (it != row.hparams.end()) return it->second;
  return std::nullopt;
}

std::optional<size_t> lastFinite(const SeriesPoints& points) {
  for (size_t i = points.size(); i-- > 0;)
    if (std::isfinite(points.value(i))) return i;
  return std::nullopt;
}

// The marker nearest `step`; the later one on a tie.
const CheckpointMarker* nearestCheckpoint(const std::vector<CheckpointMarker>& markers,
                                          int64_t step) {
  const CheckpointMarker* best = nullptr;
  for (const CheckpointMarker& m : markers) {
    const auto d = std::llabs(m.step - step);
    if (!best || d < std::llabs(best->step - step) ||
        (d == std::llabs(best->step - step) && m.step > best->step))
      best = &m;
  }
  return best;
}

RunsTableRow runRow(const RunSummary& run, const std::string& metric, MetricGoal goal) {
  RunsTableRow row;
  row.name = run.name;
  row.path = run.path;
  row.hparams = run.hparams;
  const auto it = run.metrics.find(metric);
  if (it == run.metrics.end()) return row;
  const MetricSummary& m = it->second;
  row.points = m.points;
  row.last = m.last;
  row.lastStep = m.lastStep;
  row.best = goal == MetricGoal::Min ? m.min : m.max;
  row.bestStep = goal == MetricGoal::Min ? m.minStep : m.maxStep;
  if (row.bestStep) {
    if (const CheckpointMarker* c = nearestCheckpoint(run.markers, *row.bestStep)) {
      row.checkpoint = c->path;
      row.checkpointStep = c->step;
    }
    row.bestRun = run.name;
  }
  return row;
}

bool better(double a, double b, MetricGoal goal) {
  return goal == MetricGoal::Min ? a < b : a > b;
}

RunsTableRow groupRow(const RunGroup& group, std::span<const RunsTableRow> runRows,
                      std::span<const RunSummary> runs, const std::vector<size_t>& shown,
                      const std::string& metric, MetricGoal goal, const GroupStats* known) {
  RunsTableRow row;
  row.name = group.label;
  std::vector<const SeriesPoints*> series;
  std::set<std::string> keys;
  for (size_t k : group.runs) {
    const RunsTableRow& r = runRows[k];
    row.runs.push_back(r.name);
    for (const auto& [key, v] : r.hparams) keys.insert(key);
    const RunSummary& run = runs[shown[k]];
    if (const auto c = run.curves.find(metric); c != run.curves.end())
      series.push_back(&c->second);
    else if (run.metrics.count(metric))
      throw std::logic_error("runs table: the points of " + metric + " of " + run.name +
                             " were not kept for its group");
    if (r.best && (!row.best || better(*r.best, *row.best, goal))) {
      row.best = r.best;  // replaced by the mean line's below; kept to pick bestRun
      row.bestRun = r.name;
      row.checkpoint = r.checkpoint;
      row.checkpointStep = r.checkpointStep;
    }
  }
  std::sort(row.runs.begin(), row.runs.end(),
            [](const std::string& a, const std::string& b) { return naturalLess(a, b); });
  for (const std::string& key : keys) {
    const auto first = runRows[group.runs.front()].hparams.find(key);
    bool shared = first != runRows[group.runs.front()].hparams.end();
    for (size_t k : group.runs) {
      const auto it = runRows[k].hparams.find(key);
      shared = shared && it != runRows[k].hparams.end() && it->second == first->second;
    }
    row.hparams[key] = shared ? first->second : textHparam("(varies)");
  }
  row.best.reset();
  GroupStats computed;
  // The mean line alone is what the row needs.
  if (!known) {
    GroupStatsOptions meanOnly;
    meanOnly.stdev = meanOnly.minMax = meanOnly.median = meanOnly.percentiles = false;
    computed = groupStatistics(series, 25, 75, {}, meanOnly);
  }
  const GroupStats& g = known ? *known : computed;
  row.points = g.steps.size();
  SeriesPoints line;
  for (size_t i = 0; i < g.steps.size(); ++i)
    if (g.runs[i] > 0) line.push(g.steps[i], g.mean[i]);
  if (const auto i = lastFinite(line)) {
    row.last = line.value(*i);
    row.lastStep = line.step(*i);
  }
  if (const auto i = bestPoint(line, goal)) {
    row.best = line.value(*i);
    row.bestStep = line.step(*i);
  }
  return row;
}

void sortRows(std::vector<RunsTableRow>& rows, const std::string& sort) {
  const bool descending = !sort.empty() && sort.front() == '-';
  const std::string key = sort.empty() ? "name" : sort.substr(descending ? 1 : 0);
  std::stable_sort(rows.begin(), rows.end(), [&](const RunsTableRow& a, const RunsTableRow& b) {
    const auto va = rowField(a, key), vb = rowField(b, key);
    if (!va || !vb) return va.has_value() && !vb.has_value();  // missing values last
    bool less = false, greater = false;
    if (va->isNumber && vb->isNumber) {
      less = va->number < vb->number;
      greater = vb->number < va->number;
    } else {
      less = naturalLess(va->text, vb->text);
      greater = naturalLess(vb->text, va->text);
    }
    if (!less && !greater) return naturalLess(a.name, b.name);
    return descending ? greater : less;
  });
}

}  // namespace

MetricGoal metricGoal(std::string_view metric) {
  const std::string m = lower(metric);
  for (const char* word :
       {"acc", "reward", "score", "f1", "bleu", "rouge", "auc", "precision", "recall", "win_rate",
        "exact_match", "throughput", "tokens_per_sec", "mfu"})
    if (m.find(word) != std::string::npos) return MetricGoal::Max;
  return MetricGoal::Min;
}

std::string_view metricGoalName(MetricGoal g) {
  return g == MetricGoal::Min ? "min" : "max";
}

void sortRunsTable(RunsTable& table, const std::string& sort) {
  sortRows(table.rows, sort);
}

std::optional<size_t> bestPoint(const SeriesPoints& points, MetricGoal goal) {
  std::optional<size_t> best;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!std::isfinite(points.value(i))) continue;
    if (!best || better(points.value(i), points.value(*best), goal)) best = i;
  }
  return best;
}

MetricSummary summarizeMetric(const SeriesPoints& points) {
  MetricSummary m;
  m.points = points.size();
  // One pass (every run of a sweep is summarized as it is read: three
  // passes through a point's columns cost half a second at 1,000 x 20,000).
  // Strict comparisons: the earliest step on a tie.
  const double* values = points.valueData();
  std::optional<size_t> last, lo, hi;
  double loV = 0, hiV = 0;
  const size_t n = points.size();
  bool found = false;
  // A column that is a progression (a constant or linear schedule: lr) with
  // finite ends is finite and monotone between them (first + stride * i
  // rounds monotonically): its smallest and largest are its ends' values,
  // first reached where a binary search finds them.
  if (!values && n > 0 && std::isfinite(points.value(0)) && std::isfinite(points.value(n - 1))) {
    const double a = points.value(0), b = points.value(n - 1);
    const auto firstReaching = [&](double target, bool rising) {
      size_t low = 0, high = n - 1;  // value(high) == target
      while (low < high) {
        const size_t mid = low + (high - low) / 2;
        const double v = points.value(mid);
        if (rising ? v >= target : v <= target)
          high = mid;
        else
          low = mid + 1;
      }
      return low;
    };
    found = true;
    last = n - 1;
    lo = b < a ? firstReaching(b, false) : 0;
    hi = b > a ? firstReaching(b, true) : 0;
    loV = points.value(*lo);
    hiV = points.value(*hi);
  }
  for (size_t i = 0; i < n && !found; ++i) {
    const double v = values ? values[i] : points.value(i);
    if (!std::isfinite(v)) continue;
    last = i;
    if (!lo || v < loV) {
      lo = i;
      loV = v;
    }
    if (!hi || v > hiV) {
      hi = i;
      hiV = v;
    }
  }
  if (last) {
    m.last = points.value(*last);
    m.lastStep = points.step(*last);
  }
  if (lo) {
    m.min = loV;
    m.minStep = points.step(*lo);
  }
  if (hi) {
    m.max = hiV;
    m.maxStep = points.step(*hi);
  }
  return m;
}

RunSummary summarizeRun(const RunMetrics& run, Hparams hparams,
                        const std::set<std::string>& keepCurves) {
  RunSummary s;
  s.name = run.run;
  s.path = run.path;
  s.hparams = std::move(hparams);
  s.markers = run.markers;
  for (const MetricSeries& series : run.series) {
    s.metrics[series.metric] = summarizeMetric(series.points);
    if (keepCurves.count(series.metric)) s.curves[series.metric] = series.points;
  }
  return s;
}

std::string defaultTableMetric(const std::set<std::string>& metrics) {
  if (metrics.empty()) return "loss";
  // The words of a name ("eval/loss" -> eval, loss), lower case.
  auto words = [](const std::string& name) {
    std::vector<std::string> out(1);
    for (const char c : name) {
      if (c == '/' || c == '.' || c == '_' || c == '-' || c == ' ')
        out.emplace_back();
      else
        out.back() += char(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
  };
  // val_loss, then loss, then another trainer's validation loss (eval_loss,
  // val/loss), then its training loss (train_loss), then any loss; a run
  // that logs none the first name (not "epoch", the alphabetical first of
  // a Lightning run: its "best" is no best).
  int best = 5;
  std::string chosen;
  for (const std::string& name : metrics) {
    const std::vector<std::string> w = words(name);
    auto has = [&w](std::initializer_list<const char*> any) {
      for (const char* a : any)
        if (std::find(w.begin(), w.end(), a) != w.end()) return true;
      return false;
    };
    int rank = 5;
    if (name == "val_loss")
      rank = 0;
    else if (name == "loss")
      rank = 1;
    else if (has({"loss"}) && has({"val", "valid", "validation", "eval"}))
      rank = 2;
    else if (has({"loss"}) && has({"train", "training"}))
      rank = 3;
    else if (has({"loss"}))
      rank = 4;
    if (rank < best) {
      best = rank;
      chosen = name;
    }
  }
  if (!chosen.empty()) return chosen;
  for (const std::string& name : metrics)
    if (name != "epoch" && name != "step") return name;
  return *metrics.begin();
}

RunsTable buildRunsTable(std::span<const RunMetrics> metrics, std::span<const Hparams> hparams,
                         const RunsTableOptions& options) {
  if (metrics.size() != hparams.size())
    throw std::invalid_argument("runs table: " + std::to_string(metrics.size()) + " runs but " +
                                std::to_string(hparams.size()) + " sets of hyperparameters");
  std::set<std::string> names;
  for (const RunMetrics& r : metrics)
    for (const MetricSeries& s : r.series) names.insert(s.metric);
  const std::string metric = options.metric.empty() ? defaultTableMetric(names) : options.metric;
  std::vector<RunSummary> runs;
  runs.reserve(metrics.size());
  for (size_t i = 0; i < metrics.size(); ++i)
    runs.push_back(summarizeRun(metrics[i], hparams[i], {metric}));
  return buildRunsTable(runs, options);
}

RunsTable buildRunsTable(std::span<const RunSummary> runs, const RunsTableOptions& options) {
  std::set<std::string> metricNames, hparamNames;
  for (const RunSummary& r : runs) {
    for (const auto& [m, summary] : r.metrics) metricNames.insert(m);
    for (const auto& [k, v] : r.hparams) hparamNames.insert(k);
  }

  RunsTable table;
  table.metric = options.metric;
  if (table.metric.empty())
    table.metric = defaultTableMetric(metricNames);
  else if (!metricNames.empty() && !metricNames.count(table.metric)) {
    std::string known;
    for (const std::string& m : metricNames) known += (known.empty() ? "" : ", ") + m;
    throw std::invalid_argument("no run has the metric '" + table.metric + "' (they have " + known +
                                ")");
  }
  table.goal = options.goal.value_or(metricGoal(table.metric));
  table.runsTotal = runs.size();

  const RunFilter filter = RunFilter::parse(options.filter);
  for (const RunFilter::Name& n : filter.names()) {
    const std::string key = canonicalHparamKey(n.name);
    if (!rowFields().count(n.name) && !hparamNames.count(key) && !metricNames.count(n.name))
      throw FilterError("filter: no run has '" + n.name +
                            "' (a hyperparameter, a metric, or one of name, path, last, "
                            "last_step, best, best_step, points, checkpoint)",
                        n.position);
  }

  std::vector<size_t> shown;
  std::vector<RunsTableRow> runRows;
  for (size_t i = 0; i < runs.size(); ++i) {
    RunsTableRow row = runRow(runs[i], table.metric, table.goal);
    const RunSummary& run = runs[i];
    const auto lookup = [&](std::string_view name) -> std::optional<HparamValue> {
      if (auto v = rowField(row, name)) return v;
      // Another metric: its last finite value.
      const auto m = run.metrics.find(std::string(name));
      if (m != run.metrics.end() && m->second.last) return numberHparam(*m->second.last);
      return std::nullopt;
    };
    if (!filter.matches(lookup)) continue;
    shown.push_back(i);
    runRows.push_back(std::move(row));
  }
  table.runsShown = shown.size();

  if (options.group.by == GroupSpec::By::None) {
    table.rows = std::move(runRows);
  } else {
    std::vector<GroupableRun> groupable;
    for (const RunsTableRow& r : runRows) groupable.push_back({r.name, r.hparams});
    for (const RunGroup& g : groupRuns(groupable, options.group)) {
      const auto known = options.groupStats.find(g.label);
      table.rows.push_back(groupRow(g, runRows, runs, shown, table.metric, table.goal,
                                    known == options.groupStats.end() ? nullptr : &known->second));
    }
  }

  if (!options.sort.empty()) {
    const std::string key = options.sort.substr(options.sort.front() == '-' ? 1 : 0);
    if (!rowFields().count(key) && !hparamNames.count(canonicalHparamKey(key)))
      throw std::invalid_argument("cannot sort by '" + key +
                                  "': not a hyperparameter nor one of name, path, last, "
                                  "last_step, best, best_step, points, checkpoint, runs");
  }
  sortRows(table.rows, options.sort);

  std::vector<const Hparams*> rowHparams;
  for (const RunsTableRow& r : table.rows) rowHparams.push_back(&r.hparams);
  table.columns = differingKeys(rowHparams);
  return table;
}

}  // namespace ckpt
