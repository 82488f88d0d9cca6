#pragma once
// The runs table: one row per run (or per group of runs), the
// hyperparameters that differ between the rows shown as columns, and for one
// metric its last value, its best, the step of the best and the checkpoint
// nearest that step. The Curves tab's table and `ckptscope-cli runs` both
// build it here. No Qt.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/hparams.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/run_groups.h"

namespace ckpt {

// Whether lower or higher is better. The rule, on the metric's name in lower
// case: a name holding acc, reward, score, f1, bleu, rouge, auc, precision,
// recall, win_rate, exact_match, throughput, tokens_per_sec or mfu is
// better high; anything else (loss, perplexity / ppl, error, wer, cer, nll,
// mse, and names the rule does not know) is better low. The table says which
// it used.
enum class MetricGoal { Min, Max };
MetricGoal metricGoal(std::string_view metric);
std::string_view metricGoalName(MetricGoal g);  // "min", "max"

struct RunsTableOptions {
  // "" : val_loss when any run has it, else loss, else the first metric
  // (alphabetically) any run has.
  std::string metric;
  std::optional<MetricGoal> goal;  // overrides metricGoal(metric)
  GroupSpec group;
  std::string filter;  // RunFilter's syntax; applied to runs, before grouping
  // A column ("name", "best", "learning_rate", ...); '-' first: descending.
  // "" : by name (natural order). Rows without the value go last.
  std::string sort;
  // A group's statistics already computed from the same runs (the Curves
  // tab's chart has them), by group label: its row is taken from their
  // steps, runs and mean instead of its runs' points being read again (for
  // 1,000 runs x 20,000 points that took 2 s).
  std::map<std::string, GroupStats> groupStats;
};

struct RunsTableRow {
  std::string name;               // the run, or the group's label
  std::string path;               // the run's directory ("" for a group)
  std::vector<std::string> runs;  // a group's runs (natural order); empty for a run
  Hparams hparams;                // a group: the values its runs share, "(varies)" otherwise
  size_t points = 0;              // points of the metric (a group: steps of its mean line)
  std::optional<double> last;     // the metric's last finite value (a group: its mean line's)
  std::optional<int64_t> lastStep;
  std::optional<double> best;  // lowest or highest finite value, the earliest step on a tie
  std::optional<int64_t> bestStep;
  // The checkpoint nearest bestStep (a tie: the later one); a group: that of
  // its run with the best best (bestRun).
  std::string checkpoint;
  std::optional<int64_t> checkpointStep;
  std::string bestRun;
};

struct RunsTable {
  std::string metric;
  MetricGoal goal = MetricGoal::Min;
  std::vector<std::string> columns;  // hyperparameters that differ between the rows, sorted
  std::vector<RunsTableRow> rows;
  size_t runsShown = 0, runsTotal = 0;  // after and before the filter
};

// What the table needs of one metric of a run: a few numbers, not its
// points (a sweep of 1,000 runs x 20,000 points is summarized run by run).
struct MetricSummary {
  size_t points = 0;
  std::optional<double> last;  // the last finite value
  std::optional<int64_t> lastStep;
  std::optional<double> min, max;  // finite; the earliest step on a tie
  std::optional<int64_t> minStep, maxStep;
};
MetricSummary summarizeMetric(const SeriesPoints& points);

// One run as the table sees it.
struct RunSummary {
  std::string name, path;
  Hparams hparams;
  std::map<std::string, MetricSummary> metrics;  // every metric of the run
  std::vector<CheckpointMarker> markers;         // its checkpoints (step, path)
  // The points of the metrics a group's line is drawn from (summarizeRun's
  // keepCurves); grouping by a metric whose points were not kept throws.
  std::map<std::string, SeriesPoints> curves;
};
RunSummary summarizeRun(const RunMetrics& run, Hparams hparams,
                        const std::set<std::string>& keepCurves);

// The metric a table shows when none is asked for: val_loss when a run has
// it, else loss, else another trainer's validation loss (eval_loss,
// val/loss), its training loss (train_loss), any loss, else the first name
// that is not epoch or step ("loss" when there is none).
std::string defaultTableMetric(const std::set<std::string>& metrics);

// Throws FilterError for a bad filter (or one naming what no run has,
// "unknown name") and std::invalid_argument for an unknown sort column or
// metric.
RunsTable buildRunsTable(std::span<const RunSummary> runs, const RunsTableOptions& options);

// The same from runs read whole: `metrics[i]` and `hparams[i]` describe one run. Throws FilterError
// for a bad filter (or one naming what no run has, "unknown name") and std::invalid_argument for an
// unknown sort column or metric.
RunsTable buildRunsTable(std::span<const RunMetrics> metrics, std::span<const Hparams> hparams,
                         const RunsTableOptions& options);

// Sorts the rows as RunsTableOptions::sort says, as buildRunsTable does (a
// column no row has: by name). The Curves tab sorts a table it has built
// without building it again (a group's row costs its runs' points).
void sortRunsTable(RunsTable& table, const std::string& sort);

// The best of a series' finite points by `goal` (the earliest on a tie), as
// an index into points; nothing when none is finite.
std::optional<size_t> bestPoint(const SeriesPoints& points, MetricGoal goal);

}  // namespace ckpt
