#include "ckpt/index/run_groups.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>

namespace ckpt {
namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// Where the numbers of a name are: [begin, end) of each, a number being
// digits with an optional fraction and exponent ("3e-4", "0.1", "7").
std::vector<std::pair<size_t, size_t>> numbersIn(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = 0;
  while (i < s.size()) {
    if (!isDigit(s[i])) {
      ++i;
      continue;
    }
    const size_t begin = i;
    while (i < s.size() && isDigit(s[i])) ++i;
    if (i + 1 < s.size() && s[i] == '.' && isDigit(s[i + 1])) {
      ++i;
      while (i < s.size() && isDigit(s[i])) ++i;
    }
    if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      size_t j = i + 1;
      if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
      if (j < s.size() && isDigit(s[j])) {
        i = j;
        while (i < s.size() && isDigit(s[i])) ++i;
      }
    }
    out.emplace_back(begin, i);
  }
  return out;
}

std::string valueLabel(const Hparams& h, const std::string& key) {
  const auto it = h.find(key);
  return key + "=" + (it == h.end() ? std::string("(none)") : it->second.text);
}

}  // namespace

GroupSpec parseGroupSpec(std::string_view text) {
  GroupSpec spec;
  if (text.empty() || text == "none") return spec;
  if (text == "name" || text.starts_with("name:")) {
    spec.by = GroupSpec::By::NamePattern;
    if (text.size() > 5) spec.key = std::string(text.substr(5));
    return spec;
  }
  if (text == "all-but" || text.starts_with("all-but:")) {
    spec.by = GroupSpec::By::AllBut;
    spec.key = text.size() > 8 ? canonicalHparamKey(text.substr(8)) : "seed";
    return spec;
  }
  for (const char c : text)
    if (std::isspace(static_cast<unsigned char>(c)) || c == ':')
      throw std::invalid_argument("group by '" + std::string(text) +
                                  "': a hyperparameter name, all-but[:KEY], name[:WORD] or none");
  spec.by = GroupSpec::By::Key;
  spec.key = canonicalHparamKey(text);
  return spec;
}

std::string namePattern(std::string_view name, std::string_view word) {
  const auto numbers = numbersIn(name);
  for (auto it = numbers.rbegin(); it != numbers.rend(); ++it) {
    const auto [begin, end] = *it;
    if (!word.empty() &&
        (begin < word.size() || name.substr(begin - word.size(), word.size()) != word))
      continue;
    return std::string(name.substr(0, begin)) + "*" + std::string(name.substr(end));
  }
  return std::string(name);
}

std::vector<RunGroup> groupRuns(std::span<const GroupableRun> runs, const GroupSpec& spec) {
  std::vector<std::string> labels(runs.size());
  if (spec.by == GroupSpec::By::None) {
    for (size_t i = 0; i < runs.size(); ++i) labels[i] = runs[i].name;
  } else if (spec.by == GroupSpec::By::Key) {
    for (size_t i = 0; i < runs.size(); ++i) labels[i] = valueLabel(runs[i].hparams, spec.key);
  } else if (spec.by == GroupSpec::By::NamePattern) {
    for (size_t i = 0; i < runs.size(); ++i) labels[i] = namePattern(runs[i].name, spec.key);
  } else {
    // Every key that differs among the runs, but the one left out.
    std::vector<const Hparams*> all;
    for (const GroupableRun& r : runs) all.push_back(&r.hparams);
    std::vector<std::string> keys = differingKeys(all);
    std::erase(keys, spec.key);
    for (size_t i = 0; i < runs.size(); ++i) {
      std::string label;
      for (const std::string& k : keys) {
        if (!label.empty()) label += ", ";
        label += valueLabel(runs[i].hparams, k);
      }
      labels[i] = label.empty() ? "(all runs)" : label;
    }
  }
  std::map<std::string, size_t> index;
  std::vector<RunGroup> groups;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto [it, added] = index.emplace(labels[i], groups.size());
    if (added) groups.push_back(RunGroup{labels[i], {}});
    groups[it->second].runs.push_back(i);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const RunGroup& a, const RunGroup& b) {
    return naturalLess(a.label, b.label);
  });
  return groups;
}

bool hasReplicates(std::span<const GroupableRun> runs, const std::string& key) {
  const std::string canonical = canonicalHparamKey(key);
  for (const RunGroup& g : groupRuns(runs, GroupSpec{GroupSpec::By::AllBut, canonical})) {
    const HparamValue* first = nullptr;
    for (size_t i : g.runs) {
      const auto it = runs[i].hparams.find(canonical);
      if (it == runs[i].hparams.end()) continue;
      if (!first)
        first = &it->second;
      else if (!(it->second == *first))
        return true;
    }
  }
  return false;
}

double percentileOfSorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return std::nan("");
  const double pos = std::clamp(q, 0.0, 100.0) / 100.0 * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  const double t = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * t;
}

namespace {

// A run's steps and values read in a loop without a call per point: from
// the columns' memory, or an integer progression's formula (the steps of a
// run logged every N steps), or (a double progression: a constant or linear
// value column, rare) through value(i), whose formula stays in one place.
struct FastSeries {
  const SeriesPoints* pts = nullptr;
  const int64_t* steps = nullptr;
  const double* values = nullptr;
  int64_t first = 0, stride = 0;
  explicit FastSeries(const SeriesPoints& p)
      : pts(&p),
        steps(p.stepData()),
        values(p.valueData()),
        first(p.stepColumn().first()),
        stride(p.stepColumn().stride()) {}
  int64_t step(size_t i) const {
    return steps ? steps[i] : int64_t(uint64_t(first) + uint64_t(stride) * uint64_t(i));
  }
  double value(size_t i) const { return values ? values[i] : pts->value(i); }
};

}  // namespace

GroupStats groupStatistics(std::span<const SeriesPoints* const> series, double lowPercentile,
                           double highPercentile, std::span<const int64_t> origins) {
  return groupStatistics(series, lowPercentile, highPercentile, origins, GroupStatsOptions{});
}

GroupStats groupStatistics(std::span<const SeriesPoints* const> series, double lowPercentile,
                           double highPercentile, std::span<const int64_t> origins,
                           const GroupStatsOptions& options) {
  if (!origins.empty() && origins.size() != series.size())
    throw std::invalid_argument("group statistics: " + std::to_string(origins.size()) +
                                " origins for " + std::to_string(series.size()) + " runs");
  const size_t runCount = series.size();
  const auto originOf = [&](size_t r) { return origins.empty() ? int64_t(0) : origins[r]; };
  // A run whose values are all finite is read straight from its columns; one
  // with a NaN or an infinity (a diverged run) through the indices of its
  // finite points, which only such a run costs memory for.
  std::vector<std::vector<size_t>> finite(runCount);
  std::vector<char> sparse(runCount, 0);
  // Every step any run logged (with a finite value). Each run's steps are
  // ascending: the union is merged run by run (runs of a sweep mostly share
  // their steps, so it stays one run long) rather than sorted whole.
  std::vector<FastSeries> fast;
  fast.reserve(runCount);
  for (const SeriesPoints* p : series) fast.emplace_back(*p);
  std::vector<int64_t> steps, runSteps, merged;
  for (size_t r = 0; r < runCount; ++r) {
    runSteps.clear();
    const FastSeries& pts = fast[r];
    const size_t size = series[r]->size();
    const int64_t origin = originOf(r);
    // A sweep's run: every value finite, logged at the steps already found
    // (those are strictly ascending, so its steps are in order too).
    if (size == steps.size() && size > 0) {
      bool same = true;
      if (pts.values) {
        for (size_t i = 0; i < size && same; ++i) same = std::isfinite(pts.values[i]);
      } else {
        same = std::isfinite(pts.value(0)) && std::isfinite(pts.value(size - 1));
      }
      if (pts.steps) {
        for (size_t i = 0; i < size && same; ++i) same = pts.steps[i] - origin == steps[i];
      } else {
        for (size_t i = 0; i < size && same; ++i) same = pts.step(i) - origin == steps[i];
      }
      if (same) continue;
    }
    bool havePrev = false;
    int64_t prev = 0;
    for (size_t i = 0; i < size; ++i) {
      const double v = pts.value(i);
      if (!std::isfinite(v)) {
        sparse[r] = 1;
        continue;
      }
      const int64_t step = pts.step(i);
      if (havePrev && step <= prev)
        throw std::invalid_argument("group statistics: run " + std::to_string(r) +
                                    " has its steps out of order at point " + std::to_string(i));
      havePrev = true;
      prev = step;
      runSteps.push_back(step - origin);
    }
    if (sparse[r])
      for (size_t i = 0; i < size; ++i)
        if (std::isfinite(pts.value(i))) finite[r].push_back(i);
    if (runSteps == steps) continue;  // a sweep's runs: the same steps
    merged.clear();
    std::set_union(steps.begin(), steps.end(), runSteps.begin(), runSteps.end(),
                   std::back_inserter(merged));
    steps.swap(merged);
  }

  GroupStats g;
  const size_t n = steps.size();
  g.steps = steps;
  g.runs.assign(n, 0);
  const double nan = std::nan("");
  g.mean.assign(n, nan);
  if (options.stdev) g.stdev.assign(n, nan);
  if (options.minMax) {
    g.min.assign(n, nan);
    g.max.assign(n, nan);
  }
  if (options.median) g.median.assign(n, nan);
  if (options.percentiles) {
    g.low.assign(n, nan);
    g.high.assign(n, nan);
  }
  const bool sorted = options.median || options.percentiles;

  // Run r's k-th usable point (k counts the finite ones of a sparse run):
  // its step relative to the origin, and its value.
  const auto count = [&](size_t r) { return sparse[r] ? finite[r].size() : series[r]->size(); };
  const auto index = [&](size_t r, size_t k) { return sparse[r] ? finite[r][k] : k; };
  // A run with a finite value at every step of the union (a sweep's runs,
  // logged at the same steps): its k-th point is at the k-th step, read
  // without searching or comparing steps. Its steps are ascending and all
  // in the union, so as many as the union are the union's.
  std::vector<char> aligned(runCount, 0);
  for (size_t r = 0; r < runCount; ++r) aligned[r] = !sparse[r] && series[r]->size() == n;

  // The steps [from, to): run by run, each run's value at every step it
  // covers (logged there, or on the line between its two points either
  // side) into the block's sums, or into its table of values when they are
  // sorted (median, percentiles).
  const auto block = [&](size_t from, size_t to) {
    if (from >= to) return;
    const size_t len = to - from;
    std::vector<double> sum(len, 0.0), lo, hi, table;
    std::vector<int> runs(len, 0);
    if (options.minMax && !sorted) {
      lo.assign(len, std::numeric_limits<double>::infinity());
      hi.assign(len, -std::numeric_limits<double>::infinity());
    }
    if (sorted) table.resize(len * runCount);
    // Each run's contribution, walked once per pass.
    const auto walk = [&](size_t r, const auto& add) {
      const FastSeries& pts = fast[r];
      if (aligned[r]) {
        if (pts.values)
          for (size_t s = from; s < to; ++s) add(s - from, pts.values[s]);
        else
          for (size_t s = from; s < to; ++s) add(s - from, pts.value(s));
        return;
      }
      const int64_t origin = originOf(r);
      const size_t m = count(r);
      if (m == 0) return;
      // The run's first usable point at or after the block's first step.
      size_t lowK = 0, highK = m;
      while (lowK < highK) {
        const size_t mid = lowK + (highK - lowK) / 2;
        if (pts.step(index(r, mid)) - origin < steps[from])
          lowK = mid + 1;
        else
          highK = mid;
      }
      size_t c = lowK;
      for (size_t s = from; s < to && c < m; ++s) {
        const int64_t step = steps[s];
        int64_t nextStep = pts.step(index(r, c)) - origin;
        while (nextStep < step) {
          if (++c == m) return;  // the run has ended
          nextStep = pts.step(index(r, c)) - origin;
        }
        const double nextValue = pts.value(index(r, c));
        if (nextStep == step) {
          add(s - from, nextValue);
        } else if (c > 0) {
          const int64_t prevStep = pts.step(index(r, c - 1)) - origin;
          const double prevValue = pts.value(index(r, c - 1));
          const double t = double(step - prevStep) / double(nextStep - prevStep);
          add(s - from, prevValue + (nextValue - prevValue) * t);
        }  // else: before the run's first step
      }
    };
    for (size_t r = 0; r < runCount; ++r)
      walk(r, [&](size_t i, double v) {
        if (sorted) table[i * runCount + size_t(runs[i])] = v;
        sum[i] += v;
        ++runs[i];
        if (!lo.empty()) {
          lo[i] = std::min(lo[i], v);
          hi[i] = std::max(hi[i], v);
        }
      });
    std::vector<double> sq;
    if (options.stdev) {
      // Deviations from the mean: a second pass (the sum of squares less the
      // squared sum loses the digits numpy keeps).
      sq.assign(len, 0.0);
      if (sorted) {
        for (size_t i = 0; i < len; ++i) {
          const double mean = sum[i] / double(runs[i]);
          for (int k = 0; k < runs[i]; ++k) {
            const double d = table[i * runCount + size_t(k)] - mean;
            sq[i] += d * d;
          }
        }
      } else {
        for (size_t r = 0; r < runCount; ++r)
          walk(r, [&](size_t i, double v) {
            const double d = v - sum[i] / double(runs[i]);
            sq[i] += d * d;
          });
      }
    }
    for (size_t i = 0; i < len; ++i) {
      if (runs[i] == 0) continue;
      const size_t s = from + i;
      const double k = double(runs[i]);
      g.runs[s] = runs[i];
      g.mean[s] = sum[i] / k;
      if (options.stdev) g.stdev[s] = std::sqrt(sq[i] / k);
      if (sorted) {
        const std::span<double> values(table.data() + i * runCount, size_t(runs[i]));
        std::sort(values.begin(), values.end());
        if (options.minMax) {
          g.min[s] = values.front();
          g.max[s] = values.back();
        }
        if (options.median) g.median[s] = percentileOfSorted(values, 50);
        if (options.percentiles) {
          g.low[s] = percentileOfSorted(values, lowPercentile);
          g.high[s] = percentileOfSorted(values, highPercentile);
        }
      } else if (options.minMax) {
        g.min[s] = lo[i];
        g.max[s] = hi[i];
      }
    }
  };
  const size_t size = std::max<size_t>(options.blockSteps, 1);
  const size_t blocks = std::max<size_t>(1, (n + size - 1) / size);
  const auto work = [&](size_t b) { block(n * b / blocks, n * (b + 1) / blocks); };
  if (options.forEach && blocks > 1)
    options.forEach(blocks, work);
  else
    for (size_t b = 0; b < blocks; ++b) work(b);
  return g;
}

}  // namespace ckpt
