#include "ckpt/index/run_groups.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
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

GroupStats groupStatistics(std::span<const SeriesPoints* const> series, double lowPercentile,
                           double highPercentile, std::span<const int64_t> origins) {
  if (!origins.empty() && origins.size() != series.size())
    throw std::invalid_argument("group statistics: " + std::to_string(origins.size()) +
                                " origins for " + std::to_string(series.size()) + " runs");
  // Run r's i-th step, relative to its origin when one is given.
  const auto stepOf = [&](size_t r, size_t i) {
    return series[r]->step(i) - (origins.empty() ? 0 : origins[r]);
  };
  // Each run's finite points (by index), and every step any of them logged.
  std::vector<std::vector<size_t>> finite(series.size());
  // Each run's steps are ascending: the union is merged run by run (runs of
  // a sweep mostly share their steps, so it stays one run long) rather than
  // sorted whole.
  std::vector<int64_t> steps, runSteps, merged;
  for (size_t r = 0; r < series.size(); ++r) {
    runSteps.clear();
    const SeriesPoints& pts = *series[r];
    for (size_t i = 0; i < pts.size(); ++i)
      if (std::isfinite(pts.value(i))) {
        if (!finite[r].empty() && pts.step(i) <= pts.step(finite[r].back()))
          throw std::invalid_argument("group statistics: run " + std::to_string(r) +
                                      " has its steps out of order at point " + std::to_string(i));
        finite[r].push_back(i);
        runSteps.push_back(stepOf(r, i));
      }
    merged.clear();
    std::set_union(steps.begin(), steps.end(), runSteps.begin(), runSteps.end(),
                   std::back_inserter(merged));
    steps.swap(merged);
  }

  GroupStats g;
  const size_t n = steps.size();
  g.steps = steps;
  g.runs.assign(n, 0);
  for (auto* v : {&g.mean, &g.stdev, &g.min, &g.max, &g.median, &g.low, &g.high})
    v->assign(n, std::nan(""));
  std::vector<size_t> cursor(series.size(), 0);
  std::vector<double> values;
  values.reserve(series.size());
  for (size_t s = 0; s < n; ++s) {
    const int64_t step = steps[s];
    values.clear();
    for (size_t r = 0; r < series.size(); ++r) {
      const auto& idx = finite[r];
      if (idx.empty()) continue;
      const SeriesPoints& pts = *series[r];
      size_t& c = cursor[r];
      while (c < idx.size() && stepOf(r, idx[c]) < step) ++c;
      if (c == idx.size()) continue;  // the run has ended
      const int64_t nextStep = stepOf(r, idx[c]);
      const double nextValue = pts.value(idx[c]);
      if (nextStep == step) {
        values.push_back(nextValue);
      } else if (c > 0) {
        const int64_t prevStep = stepOf(r, idx[c - 1]);
        const double prevValue = pts.value(idx[c - 1]);
        const double t = double(step - prevStep) / double(nextStep - prevStep);
        values.push_back(prevValue + (nextValue - prevValue) * t);
      }  // else: before the run's first step
    }
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    const double k = double(values.size());
    double sum = 0;
    for (double v : values) sum += v;
    const double mean = sum / k;
    double sq = 0;
    for (double v : values) sq += (v - mean) * (v - mean);
    g.runs[s] = int(values.size());
    g.mean[s] = mean;
    g.stdev[s] = std::sqrt(sq / k);
    g.min[s] = values.front();
    g.max[s] = values.back();
    g.median[s] = percentileOfSorted(values, 50);
    g.low[s] = percentileOfSorted(values, lowPercentile);
    g.high[s] = percentileOfSorted(values, highPercentile);
  }
  return g;
}

}  // namespace ckpt
