#pragma once
// Runs grouped into one line each: by a hyperparameter, by every
// hyperparameter but one (the seeds of one setting), or by the run name with
// a number taken out ("lr3e-4_seed*"); and a group's line: the mean or median
// of its runs with a band (min-max, +-1 std, a percentile range) at every
// step. For the Curves tab, the runs table and `ckptscope-cli runs`. No Qt.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/hparams.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/natural_order.h"

namespace ckpt {

// How runs are grouped, as a user types it (--group-by, the toolbar):
//   KEY        runs with the same value of KEY ("lr" and "learning_rate" alike)
//   all-but:KEY  runs that agree in every hyperparameter but KEY
//   all-but    the same with KEY = seed
//   name       runs whose names agree but for their last number
//              ("lr3e-4_seed7" -> "lr3e-4_seed*")
//   name:WORD  ... but for the number after WORD ("name:seed")
struct GroupSpec {
  enum class By { None, Key, AllBut, NamePattern };
  By by = By::None;
  std::string key;  // Key, AllBut: the hyperparameter; NamePattern: the WORD ("" = last number)
};
// Throws std::invalid_argument with a message naming what is wrong.
GroupSpec parseGroupSpec(std::string_view text);

// A run as grouping sees it.
struct GroupableRun {
  std::string name;
  Hparams hparams;
};

struct RunGroup {
  std::string label;         // "learning_rate=0.0003", "lr3e-4_seed*", ...
  std::vector<size_t> runs;  // indices into the runs grouped, in their order
};

// The groups in natural order of their labels; a run lacking the key (or a
// name without the number) is a group of its own value "(none)" or name.
std::vector<RunGroup> groupRuns(std::span<const GroupableRun> runs, const GroupSpec& spec);

// True when grouping by every hyperparameter but `key` puts runs with two
// different values of `key` together: the seeds of one setting, which the
// Curves tab groups by default. A run and a branch resumed from it (one
// config, one seed) are not replicates, nor are runs without the key.
bool hasReplicates(std::span<const GroupableRun> runs, const std::string& key = "seed");

// "lr3e-4_seed7" -> "lr3e-4_seed*" (the last number, or the one right after
// `word`); the name itself when it has no such number.
std::string namePattern(std::string_view name, std::string_view word = {});

// Names are compared as people read them: naturalLess (natural_order.h),
// the one order of runs everywhere.

// ------------------------------------------------------------ statistics

// A group's line at each step. Alignment: the steps are every step any run
// of the group logged; at a step, a run contributes its value there, or,
// between two of its logged steps, the straight line between them (runs
// logged every 10 steps at different offsets still make one smooth band);
// a run contributes nothing before its first or after its last logged step
// (no invented values: `runs` drops when a run has ended). Non-finite values
// (a diverged run's NaN) are left out like a step not logged.
// std is the population std of the contributing values (numpy's default,
// ddof=0: defined for one run); percentiles interpolate linearly between
// the sorted values (numpy's default method).
struct GroupStats {
  std::vector<int64_t> steps;
  std::vector<int> runs;  // how many runs contribute at each step
  std::vector<double> mean, stdev, min, max, median;
  std::vector<double> low, high;  // the percentiles asked for (default 25 and 75)
};
// `origins` (empty, or one per series) is subtracted from each series'
// steps before aligning: runs that start at different steps (a fine-tune
// from step 5,000) aligned on their first step; `steps` are then relative.
GroupStats groupStatistics(std::span<const SeriesPoints* const> series, double lowPercentile = 25,
                           double highPercentile = 75, std::span<const int64_t> origins = {});

// What to compute, and where. `steps`, `runs` and `mean` always are; a
// statistic not asked for is left empty (a chart drawing the mean with a
// min-max band needs no sort of each step's values: median and percentiles
// are the costly ones). The steps are cut into blocks of at least
// `blockSteps` steps, each computed on its own (each run's place in a block
// found by a binary search): `forEach(n, work)` runs work(0 .. n-1), in any
// order, on any threads, and returns when all are done (the Curves tab
// passes Qt's thread pool); without it the blocks run here, one by one.
struct GroupStatsOptions {
  bool stdev = true, minMax = true, median = true, percentiles = true;
  size_t blockSteps = 2048;
  std::function<void(size_t, const std::function<void(size_t)>&)> forEach;
};
GroupStats groupStatistics(std::span<const SeriesPoints* const> series, double lowPercentile,
                           double highPercentile, std::span<const int64_t> origins,
                           const GroupStatsOptions& options);

// The q-th percentile (0..100) of sorted values, numpy's linear method.
double percentileOfSorted(std::span<const double> sorted, double q);

}  // namespace ckpt
