// ckptscope-cli runs DIR... [--json|--csv] [--metric NAME] [--group-by KEY]
//                   [--filter EXPR] [--sort [-]COLUMN] [--goal min|max]
//
// The runs table (core/index runs_table.h) as the Curves tab shows it: one
// row per run or group, the hyperparameters that differ as columns, and the
// metric's last, best, step of the best and the checkpoint nearest it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "ckpt/index/hparams.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/metrics_cache.h"
#include "ckpt/index/run_filter.h"
#include "ckpt/index/runs_table.h"
#include "common.h"
#include "remote_commands.h"

namespace ckpt::cli {
namespace {

nlohmann::ordered_json jsonValue(const HparamValue& v) {
  if (v.isNumber) return std::isfinite(v.number) ? nlohmann::ordered_json(v.number) : nullptr;
  return v.text;
}

template <typename T>
nlohmann::ordered_json optional(const std::optional<T>& v) {
  if (!v) return nullptr;
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(*v)) return nullptr;
  return *v;
}

nlohmann::ordered_json tableJson(const RunsTable& t, const std::string& groupBy,
                                 const std::vector<std::string>& problems) {
  nlohmann::ordered_json j;
  j["metric"] = t.metric;
  j["goal"] = std::string(metricGoalName(t.goal));
  j["group_by"] =
      groupBy.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(groupBy);
  j["runs_shown"] = t.runsShown;
  j["runs_total"] = t.runsTotal;
  j["columns"] = t.columns;
  auto& rows = j["rows"] = nlohmann::ordered_json::array();
  for (const RunsTableRow& r : t.rows) {
    nlohmann::ordered_json row;
    row["name"] = r.name;
    if (!groupBy.empty())
      row["runs"] = r.runs;
    else
      row["path"] = r.path;
    auto& h = row["hparams"] = nlohmann::ordered_json::object();
    for (const std::string& c : t.columns) {
      const auto it = r.hparams.find(c);
      h[c] = it == r.hparams.end() ? nlohmann::ordered_json(nullptr) : jsonValue(it->second);
    }
    row["points"] = r.points;
    row["last"] = optional(r.last);
    row["last_step"] = optional(r.lastStep);
    row["best"] = optional(r.best);
    row["best_step"] = optional(r.bestStep);
    if (!groupBy.empty()) row["best_run"] = r.bestRun;
    row["checkpoint"] = r.checkpoint.empty() ? nlohmann::ordered_json(nullptr)
                                             : nlohmann::ordered_json(r.checkpoint);
    row["checkpoint_step"] = optional(r.checkpointStep);
    rows.push_back(std::move(row));
  }
  j["problems"] = problems;
  return j;
}

std::string numberText(const std::optional<double>& v) {
  if (!v) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", *v);
  return b;
}

std::string integerText(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "";
}

// The table's cells as text, header first.
std::vector<std::vector<std::string>> cells(const RunsTable& t, bool grouped) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> head = {grouped ? "group" : "run"};
  if (grouped) head.push_back("runs");
  head.insert(head.end(), t.columns.begin(), t.columns.end());
  for (const char* c : {"points", "last", "best", "best_step", "checkpoint"}) head.push_back(c);
  out.push_back(head);
  for (const RunsTableRow& r : t.rows) {
    std::vector<std::string> row = {r.name};
    if (grouped) row.push_back(std::to_string(r.runs.size()));
    for (const std::string& c : t.columns) {
      const auto it = r.hparams.find(c);
      row.push_back(it == r.hparams.end() ? "" : it->second.text);
    }
    row.push_back(std::to_string(r.points));
    row.push_back(numberText(r.last));
    row.push_back(numberText(r.best));
    row.push_back(integerText(r.bestStep));
    row.push_back(r.checkpoint);
    out.push_back(std::move(row));
  }
  return out;
}

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

void printCsv(const RunsTable& t, bool grouped) {
  for (const auto& row : cells(t, grouped)) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += (i ? "," : "") + csvField(row[i]);
    std::printf("%s\n", line.c_str());
  }
}

void printText(const RunsTable& t, bool grouped, const std::vector<std::string>& problems) {
  std::printf("%s (best: %s), %zu of %zu runs%s\n", t.metric.c_str(),
              std::string(metricGoalName(t.goal)).c_str(), t.runsShown, t.runsTotal,
              grouped ? (", " + std::to_string(t.rows.size()) + " groups").c_str() : "");
  const auto table = cells(t, grouped);
  std::vector<size_t> width(table.front().size(), 0);
  for (const auto& row : table)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
  for (const std::string& p : problems) std::printf("problem: %s\n", p.c_str());
}

// The table of `summaries` as --json, --csv or text; 2 for a bad --filter
// (the expression shown with a caret where it went wrong).
int printTable(const std::vector<RunSummary>& summaries, const RunsTableOptions& options,
               bool grouped, const std::string& groupBy, const std::string& filter,
               const std::vector<std::string>& problems, bool json, bool csv);

}  // namespace

int runRuns(int argc, char** argv) {
  std::vector<std::string> paths;
  std::string metric, groupBy, filter, sort, goal;
  bool json = false, csv = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--csv") {
      csv = true;
    } else if (a == "--no-cache") {
      setMetricsCacheEnabled(false);
    } else if (a == "--metric" || a == "--group-by" || a == "--filter" || a == "--sort" ||
               a == "--goal") {
      if (i + 1 >= argc) return usageError(a + " needs a value", "runs");
      std::string& target = a == "--metric"     ? metric
                            : a == "--group-by" ? groupBy
                            : a == "--filter"   ? filter
                            : a == "--sort"     ? sort
                                                : goal;
      target = argv[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option " + a, "runs");
    } else {
      paths.push_back(a);
    }
  }
  if (json && csv) return usageError("--json and --csv exclude each other", "runs");
  if (paths.empty()) return usageError("runs takes at least one DIR", "runs");
  RunsTableOptions options;
  options.metric = metric;
  options.filter = filter;
  options.sort = sort;
  if (!goal.empty()) {
    if (goal != "min" && goal != "max") return usageError("--goal takes min or max", "runs");
    options.goal = goal == "min" ? MetricGoal::Min : MetricGoal::Max;
  }
  try {
    options.group = parseGroupSpec(groupBy);
  } catch (const std::invalid_argument& e) {
    return usageError(e.what(), "runs");
  }

  const bool grouped = options.group.by != GroupSpec::By::None;
  std::vector<std::string> problems;
  std::vector<RunSummary> summaries;
  bool remote = false;
  try {
    for (const std::string& p : paths) remote = remote || remote::parseRemotePath(p).has_value();
  } catch (const std::invalid_argument& e) {
    return usageError(e.what(), "runs");
  }
  if (remote) {
    // Some runs are on a host: its agent reads their curves and
    // hyperparameters there; the table is made here as for runs here.
    RunsRead read;
    try {
      read = readRunsAcrossMachines(paths);
    } catch (const std::exception& e) {
      return failWith(e.what());
    }
    std::set<std::string> keep;
    if (grouped && !metric.empty()) keep = {metric};
    if (grouped && metric.empty()) {
      std::set<std::string> names;
      for (const RunMetrics& m : read.metrics)
        for (const MetricSeries& s : m.series) names.insert(s.metric);
      keep = {defaultTableMetric(names)};
    }
    for (size_t i = 0; i < read.metrics.size(); ++i) {
      for (const std::string& p : read.metrics[i].problems)
        problems.push_back(read.metrics[i].run + ": " + p);
      for (std::string& p : read.hparamProblems[i]) problems.push_back(std::move(p));
      summaries.push_back(summarizeRun(read.metrics[i], std::move(read.hparams[i]), keep));
    }
    return printTable(summaries, options, grouped, groupBy, filter, problems, json, csv);
  }

  std::vector<RunEntry> runs;
  try {
    for (const std::string& p : paths)
      for (RunEntry& r : findMetricRuns(p)) runs.push_back(std::move(r));
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
  // Runs are read a batch at a time and kept as summaries (a few numbers per
  // metric): a sweep of 1,000 runs x 20,000 points never sits in memory
  // whole. A group's line needs its metric's points: those alone are kept.
  std::set<std::string> keep;
  if (grouped)
    keep =
        metric.empty() ? std::set<std::string>{"val_loss", "loss"} : std::set<std::string>{metric};
  summaries.reserve(runs.size());
  constexpr size_t kBatch = 32;  // a shared console log is read once per batch
  const auto readBatches = [&](const std::set<std::string>& curves, bool first) {
    for (size_t from = 0; from < runs.size(); from += kBatch) {
      const std::vector<RunEntry> batch(runs.begin() + long(from),
                                        runs.begin() + long(std::min(runs.size(), from + kBatch)));
      std::vector<RunMetrics> metrics = collectMetrics(batch);
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!first) {
          RunSummary again = summarizeRun(metrics[i], {}, curves);
          summaries[from + i].curves = std::move(again.curves);
          continue;
        }
        for (const std::string& p : metrics[i].problems)
          problems.push_back(metrics[i].run + ": " + p);
        summaries.push_back(summarizeRun(metrics[i], readHparams(batch[i], &problems), curves));
      }
    }
  };
  readBatches(keep, /*first=*/true);
  if (grouped && metric.empty()) {
    // The default metric is neither val_loss nor loss: its points, read again.
    std::set<std::string> names;
    for (const RunSummary& r : summaries)
      for (const auto& [m, summary] : r.metrics) names.insert(m);
    const std::string chosen = defaultTableMetric(names);
    if (!keep.count(chosen)) readBatches({chosen}, /*first=*/false);
  }
  return printTable(summaries, options, grouped, groupBy, filter, problems, json, csv);
}

namespace {

int printTable(const std::vector<RunSummary>& summaries, const RunsTableOptions& options,
               bool grouped, const std::string& groupBy, const std::string& filter,
               const std::vector<std::string>& problems, bool json, bool csv) {
  RunsTable table;
  try {
    table = buildRunsTable(summaries, options);
  } catch (const FilterError& e) {
    // The expression with a caret under where it went wrong.
    std::fprintf(stderr, "ckptscope-cli: %s\n  %s\n  %s^\n", e.what(), filter.c_str(),
                 std::string(e.position() - 1, ' ').c_str());
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    return usageError(e.what(), "runs");
  }
  if (json)
    printJson(tableJson(table, grouped ? groupBy : "", problems));
  else if (csv)
    printCsv(table, grouped);
  else
    printText(table, grouped, problems);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

}  // namespace ckpt::cli
