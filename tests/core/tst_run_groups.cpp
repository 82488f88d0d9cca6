// Groups of runs and the runs table on a generated sweep (3 learning rates x
// 5 seeds, runs of unequal length whose steps do not line up, a NaN, some
// runs with checkpoints: tests/python/sweep_fixtures.py): a group's mean,
// std, min, max, median and percentiles at each step against numpy; the
// grouping modes; the table's columns (exactly the hyperparameters that
// differ between the runs shown), best and step of the best against numpy;
// filter expressions, bad ones with the position they name; hyperparameters
// from a checkpoint's config; and `ckptscope-cli runs --json` checked by
// Python.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "ckpt/index/hparams.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/natural_order.h"
#include "ckpt/index/run_filter.h"
#include "ckpt/index/run_groups.h"
#include "ckpt/index/runs_table.h"
#include "run_process.h"

namespace fs = std::filesystem;
using namespace ckpt;

namespace {

const fs::path kFixtures = fs::path(CKPT_FIXTURE_DIR) / "sweep";

struct Sweep {
  std::vector<RunEntry> runs;
  std::vector<RunMetrics> metrics;
  std::vector<Hparams> hparams;
  nlohmann::json reference;
};

const Sweep& sweep() {
  static const Sweep s = [] {
    Sweep s;
    s.runs = findMetricRuns((kFixtures / "sweep").string());
    s.metrics = collectMetrics(s.runs);
    for (const RunEntry& r : s.runs) s.hparams.push_back(readHparams(r));
    std::ifstream in(kFixtures / "sweep_reference.json");
    s.reference = nlohmann::json::parse(in);
    return s;
  }();
  return s;
}

bool close(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
}

std::set<std::string> shownRuns(const std::string& filter) {
  RunsTableOptions o;
  o.metric = "loss";
  o.filter = filter;
  std::set<std::string> out;
  for (const RunsTableRow& r : buildRunsTable(sweep().metrics, sweep().hparams, o).rows)
    out.insert(r.name);
  return out;
}

// Runs whose hyperparameters / values satisfy `pred`, from the truth.
template <typename Pred>
std::set<std::string> truthRuns(Pred pred) {
  std::set<std::string> out;
  for (const auto& [name, hp] : sweep().reference["hparams"].items())
    if (pred(name, hp, sweep().reference["runs"][name])) out.insert(name);
  return out;
}

}  // namespace

class TestRunGroups : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(kFixtures / "sweep_reference.json"), "run make_sweep_fixtures first");
    QCOMPARE(sweep().runs.size(), size_t(15));
  }

  void groupStatisticsAgainstNumpy() {
    const Sweep& s = sweep();
    std::vector<GroupableRun> groupable;
    for (size_t i = 0; i < s.runs.size(); ++i)
      groupable.push_back({s.metrics[i].run, s.hparams[i]});
    const auto groups = groupRuns(groupable, parseGroupSpec("lr"));
    QCOMPARE(groups.size(), size_t(3));
    size_t compared = 0;
    for (const auto& [lrText, want] : s.reference["groups"].items()) {
      const double lr = std::stod(lrText);
      const RunGroup* group = nullptr;
      for (const RunGroup& g : groups)
        if (s.hparams[g.runs.front()].at("learning_rate").number == lr) group = &g;
      QVERIFY2(group, qPrintable(QString::fromStdString("no group for lr " + lrText)));
      QCOMPARE(group->runs.size(), size_t(5));
      std::vector<const SeriesPoints*> series;
      for (size_t i : group->runs) series.push_back(&s.metrics[i].find("loss")->points);
      GroupStats g = groupStatistics(series, 25, 75);
      // The Curves tab's way: blocks of 3 steps, run on threads of their
      // own, each statistic alone (what is not asked for stays empty); the
      // same numbers numpy gives, checked below for each.
      const auto onThreads = [](size_t n, const std::function<void(size_t)>& work) {
        std::vector<std::thread> threads;
        for (size_t b = 0; b < n; ++b) threads.emplace_back(work, b);
        for (std::thread& t : threads) t.join();
      };
      GroupStatsOptions none;
      none.stdev = none.minMax = none.median = none.percentiles = false;
      none.blockSteps = 3;
      none.forEach = onThreads;
      const GroupStats meanOnly = groupStatistics(series, 25, 75, {}, none);
      QVERIFY(meanOnly.stdev.empty() && meanOnly.min.empty() && meanOnly.median.empty() &&
              meanOnly.low.empty());
      QCOMPARE(meanOnly.steps, g.steps);
      QCOMPARE(meanOnly.runs, g.runs);
      GroupStats blocked;
      blocked.steps = meanOnly.steps;
      blocked.runs = meanOnly.runs;
      blocked.mean = meanOnly.mean;
      for (int which = 0; which < 4; ++which) {
        GroupStatsOptions one = none;
        (which == 0   ? one.stdev
         : which == 1 ? one.minMax
         : which == 2 ? one.median
                      : one.percentiles) = true;
        GroupStats part = groupStatistics(series, 25, 75, {}, one);
        if (which == 0) blocked.stdev = std::move(part.stdev);
        if (which == 1) blocked.min = std::move(part.min), blocked.max = std::move(part.max);
        if (which == 2) blocked.median = std::move(part.median);
        if (which == 3) blocked.low = std::move(part.low), blocked.high = std::move(part.high);
      }
      for (const GroupStats* stats : {&g, &blocked}) {
        const GroupStats& g = *stats;
        QCOMPARE(g.runs, want["runs"].get<std::vector<int>>());
        const std::pair<const std::vector<double>*, const char*> columns[] = {
            {&g.mean, "mean"},     {&g.stdev, "std"}, {&g.min, "min"}, {&g.max, "max"},
            {&g.median, "median"}, {&g.low, "p25"},   {&g.high, "p75"}};
        for (const auto& [got, key] : columns) {
          const auto truth = want[key].get<std::vector<double>>();
          QCOMPARE(got->size(), truth.size());
          for (size_t i = 0; i < truth.size(); ++i)
            QVERIFY2(close((*got)[i], truth[i]), qPrintable(QString("%1 at step %2: %3, numpy %4")
                                                                .arg(key)
                                                                .arg(g.steps[i])
                                                                .arg((*got)[i], 0, 'g', 17)
                                                                .arg(truth[i], 0, 'g', 17)));
          ++compared;
        }
      }
      // Runs of unequal length: the count drops where runs have ended.
      QVERIFY(*std::min_element(g.runs.begin(), g.runs.end()) < 5);
    }
    QCOMPARE(compared, size_t(42));
  }

  // A sweep's runs logged at the same steps (read straight from their
  // columns, no search): run r's value at step s is r + s/10, or the
  // constant r (a progression of stride 0); steps a progression or
  // irregular; a run with a NaN at one step is left out there. By hand:
  // runs 0..4 give mean 2 + s/10, population std sqrt(2), min s/10, max
  // 4 + s/10, median 2 + s/10, p25 1 + s/10, p75 3 + s/10.
  void groupStatisticsOfRunsAtTheSameSteps_data() {
    QTest::addColumn<bool>("regularSteps");
    QTest::addColumn<bool>("constantValues");
    QTest::newRow("steps every 10, values rising") << true << false;
    QTest::newRow("irregular steps, values rising") << false << false;
    QTest::newRow("steps every 10, constant values") << true << true;
  }
  void groupStatisticsOfRunsAtTheSameSteps() {
    QFETCH(bool, regularSteps);
    QFETCH(bool, constantValues);
    const std::vector<int64_t> steps = regularSteps
                                           ? std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70}
                                           : std::vector<int64_t>{10, 11, 13, 20, 40, 41, 70};
    const auto valueAt = [&](int r, int64_t s) {
      return double(r) + (constantValues ? 0.0 : double(s) / 10.0);
    };
    std::vector<SeriesPoints> runs(6);
    for (int r = 0; r < 5; ++r)
      for (int64_t s : steps) runs[size_t(r)].push(s, valueAt(r, s));
    // Run 5: 100 everywhere but a NaN at the last step, where only runs
    // 0..4 count (a NaN between two values would be the line between them).
    const size_t nanAt = steps.size() - 1;
    for (size_t i = 0; i < steps.size(); ++i)
      runs[5].push(steps[i], i == nanAt ? std::nan("") : 100.0);
    QCOMPARE(runs[0].stepData() == nullptr, regularSteps);
    QCOMPARE(runs[0].valueData() == nullptr, constantValues || regularSteps);
    for (const bool withNan : {false, true}) {
      std::vector<const SeriesPoints*> series;
      for (int r = 0; r < (withNan ? 6 : 5); ++r) series.push_back(&runs[size_t(r)]);
      for (const size_t blockSteps : {size_t(2048), size_t(2)}) {
        GroupStatsOptions options;
        options.blockSteps = blockSteps;
        const GroupStats g = groupStatistics(series, 25, 75, {}, options);
        QCOMPARE(g.steps, steps);
        for (size_t i = 0; i < steps.size(); ++i) {
          const double base = valueAt(0, steps[i]);
          if (withNan && i != nanAt) {
            QCOMPARE(g.runs[i], 6);  // 100 joins runs 0..4: mean (5 base + 10 + 100) / 6
            QVERIFY(close(g.mean[i], (5 * base + 10 + 100) / 6));
            QVERIFY(close(g.max[i], 100));
            continue;
          }
          QCOMPARE(g.runs[i], 5);
          QVERIFY2(close(g.mean[i], base + 2), qPrintable(QString::number(g.mean[i])));
          QVERIFY(close(g.stdev[i], std::sqrt(2.0)));
          QVERIFY(close(g.min[i], base));
          QVERIFY(close(g.max[i], base + 4));
          QVERIFY(close(g.median[i], base + 2));
          QVERIFY(close(g.low[i], base + 1));
          QVERIFY(close(g.high[i], base + 3));
        }
      }
    }
  }

  // A metric column that is a progression (a constant or linear lr) is
  // summarized from its ends: the same last, min, max and the earliest step
  // of each as a loop over every value (written here) gives, including a
  // stride so small that the rounded values stay equal over stretches.
  void summaryOfAProgression_data() {
    QTest::addColumn<double>("first");
    QTest::addColumn<double>("stride");
    QTest::newRow("constant") << 3e-4 << 0.0;
    QTest::newRow("rising") << 0.5 << 0.25;
    QTest::newRow("falling") << 1.0 << -0.125;
    // From just below 2 (ulp 2^-52) past it (ulp 2^-51): every other value
    // is a tie rounded to even, so the last value is first reached one
    // point before the end; the same below -2, falling.
    const double u = std::ldexp(1.0, -52);
    QTest::newRow("rising in rounded steps") << 2.0 - 3 * u << u;
    QTest::newRow("falling in rounded steps") << -(2.0 - 3 * u) << -u;
  }
  void summaryOfAProgression() {
    QFETCH(double, first);
    QFETCH(double, stride);
    SeriesPoints p;
    for (int64_t i = 0; i < 1000; ++i) p.push(5 + 2 * i, first + stride * double(i));
    QCOMPARE(p.valueData(), nullptr);  // still a progression
    size_t lo = 0, hi = 0;
    for (size_t i = 1; i < p.size(); ++i) {
      if (p.value(i) < p.value(lo)) lo = i;
      if (p.value(i) > p.value(hi)) hi = i;
    }
    if (stride != 0 && std::abs(stride) < 1e-15) QCOMPARE(std::max(lo, hi), size_t(998));
    const MetricSummary m = summarizeMetric(p);
    QCOMPARE(m.points, size_t(1000));
    QCOMPARE(*m.last, p.value(999));
    QCOMPARE(*m.lastStep, p.step(999));
    QCOMPARE(*m.min, p.value(lo));
    QCOMPARE(*m.minStep, p.step(lo));
    QCOMPARE(*m.max, p.value(hi));
    QCOMPARE(*m.maxStep, p.step(hi));
  }

  // Runs aligned on their first step (the Curves tab's relative step axis):
  // a fine-tune from step 5,000 and one from 7,000, logged every 10 and every
  // 20 steps. Hand-computed: at relative step 10 the second run lies halfway
  // between its points at 0 (4.0) and 20 (2.0).
  void groupStatisticsWithOrigins() {
    SeriesPoints a, b;
    for (int64_t s : {5000, 5010, 5020}) a.push(s, double(s - 5000) / 10);  // 0, 1, 2
    b.push(7000, 4.0);
    b.push(7020, 2.0);
    const std::vector<const SeriesPoints*> series{&a, &b};
    const std::vector<int64_t> origins{5000, 7000};
    const GroupStats g = groupStatistics(series, 25, 75, origins);
    QCOMPARE(g.steps, (std::vector<int64_t>{0, 10, 20}));
    QCOMPARE(g.runs, (std::vector<int>{2, 2, 2}));
    QCOMPARE(g.mean, (std::vector<double>{2.0, 2.0, 2.0}));  // (0+4)/2, (1+3)/2, (2+2)/2
    QCOMPARE(g.min, (std::vector<double>{0.0, 1.0, 2.0}));
    // Without origins nothing overlaps: one run at each of the five steps.
    const GroupStats apart = groupStatistics(series, 25, 75);
    QCOMPARE(apart.steps, (std::vector<int64_t>{5000, 5010, 5020, 7000, 7020}));
    QCOMPARE(apart.runs, (std::vector<int>{1, 1, 1, 1, 1}));
    // One origin for two runs: a clear error, not a read past the end.
    const std::vector<int64_t> one{5000};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, groupStatistics(series, 25, 75, one));
  }

  void groupingModes() {
    const Sweep& s = sweep();
    std::vector<GroupableRun> groupable;
    for (size_t i = 0; i < s.runs.size(); ++i)
      groupable.push_back({s.metrics[i].run, s.hparams[i]});
    std::vector<std::string> labels;
    for (const RunGroup& g : groupRuns(groupable, parseGroupSpec("name"))) {
      labels.push_back(g.label);
      QCOMPARE(g.runs.size(), size_t(5));
    }
    QCOMPARE(labels, (std::vector<std::string>{"lr1e-3_seed*", "lr1e-4_seed*", "lr3e-4_seed*"}));
    // Every hyperparameter but the seed: lr1e-3_seed4 alone has warmup_steps.
    std::map<std::string, size_t> sizes;
    for (const RunGroup& g : groupRuns(groupable, parseGroupSpec("all-but")))
      sizes[g.label] = g.runs.size();
    QCOMPARE(sizes, (std::map<std::string, size_t>{{"learning_rate=0.0001, warmup_steps=(none)", 5},
                                                   {"learning_rate=0.0003, warmup_steps=(none)", 5},
                                                   {"learning_rate=0.001, warmup_steps=(none)", 4},
                                                   {"learning_rate=0.001, warmup_steps=100", 1}}));
    QCOMPARE(namePattern("lr3e-4_seed7"), std::string("lr3e-4_seed*"));
    QCOMPARE(namePattern("lr3e-4_seed7", "lr"), std::string("lr*_seed7"));
    QCOMPARE(namePattern("baseline"), std::string("baseline"));
    QCOMPARE(namePattern("run-0.5-x", "run-"), std::string("run-*-x"));
    QVERIFY(naturalLess("seed2", "seed10"));
    QVERIFY(!naturalLess("seed10", "seed2"));
    QVERIFY(naturalLess("a", "a1"));
    QVERIFY(naturalLess("seed02", "seed3") && naturalLess("seed2", "seed02"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseGroupSpec("learning rate"));
  }

  // The natural order (runs, checkpoints and paths are sorted by it) against
  // a reference written here another way: each string cut into runs of
  // digits and single other bytes, a pair of digit runs compared as numbers
  // (shorter without leading zeros first, then the digits), anything else by
  // the byte, and names equal as numbers told apart at the end by the first
  // pair of digit runs with different leading zeros (fewer first). Pairs that
  // share a long beginning, ending inside a run of digits or not, as paths
  // of one folder do.
  void naturalOrderAgainstReference() {
    auto tokens = [](const std::string& s) {
      std::vector<std::string> out;
      for (size_t i = 0; i < s.size();) {
        size_t e = i + 1;
        if (std::isdigit(static_cast<unsigned char>(s[i])))
          while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
        out.push_back(s.substr(i, e - i));
        i = e;
      }
      return out;
    };
    auto reference = [&](const std::string& a, const std::string& b) {
      const std::vector<std::string> ta = tokens(a), tb = tokens(b);
      int tie = 0;
      for (size_t k = 0; k < ta.size() && k < tb.size(); ++k) {
        const bool da = std::isdigit(static_cast<unsigned char>(ta[k][0])) != 0;
        const bool db = std::isdigit(static_cast<unsigned char>(tb[k][0])) != 0;
        if (da && db) {
          const std::string va = ta[k].substr(std::min(ta[k].find_first_not_of('0'), ta[k].size()));
          const std::string vb = tb[k].substr(std::min(tb[k].find_first_not_of('0'), tb[k].size()));
          if (va.size() != vb.size()) return va.size() < vb.size() ? -1 : 1;
          if (va != vb) return va < vb ? -1 : 1;
          if (tie == 0 && ta[k].size() != tb[k].size()) tie = ta[k].size() < tb[k].size() ? -1 : 1;
          continue;
        }
        const auto ca = static_cast<unsigned char>(ta[k][0]),
                   cb = static_cast<unsigned char>(tb[k][0]);
        if (ca != cb) return ca < cb ? -1 : 1;
      }
      if (ta.size() != tb.size()) return ta.size() < tb.size() ? -1 : 1;
      return tie;
    };
    QVERIFY(naturalLess("run12/step_9.pt", "run12/step_10.pt"));
    QVERIFY(naturalLess("run12/a", "run123/a"));      // shared "run12", then / vs 3
    QVERIFY(naturalLess("seed010/x", "seed0010/x"));  // equal values: more zeros after
    QVERIFY(naturalLess("seed0010/x", "seed010/y"));  // ... unless something differs
    QVERIFY(naturalLess("lr1e-3_seed9/s", "lr1e-3_seed10/s"));
    QVERIFY(naturalLess("a-b", "a/b"));
    std::mt19937 rng(26);
    const std::string alphabet = "0001239/_-.ab";
    auto randomText = [&](size_t maxLength) {
      std::string s(std::uniform_int_distribution<size_t>(0, maxLength)(rng), ' ');
      for (char& c : s)
        c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
      return s;
    };
    for (int n = 0; n < 200000; ++n) {
      const std::string shared = randomText(12);
      const std::string a = shared + randomText(6), b = shared + randomText(6);
      const int want = reference(a, b);
      auto sign = [](int c) { return (c > 0) - (c < 0); };
      if (sign(naturalCompare(a, b)) != want || sign(naturalCompare(b, a)) != -want)
        QFAIL(qPrintable(QString("naturalCompare(\"%1\", \"%2\") = %3, the reference says %4")
                             .arg(QString::fromStdString(a), QString::fromStdString(b))
                             .arg(naturalCompare(a, b))
                             .arg(want)));
    }
  }

  // The default grouping's question: are there seeds of one setting? The
  // sweep's 15 runs are; a run and the branch resumed from it (same config,
  // same seed) are not, nor runs without a seed, nor one seed per setting.
  void replicatesAreSeedsOfOneSetting() {
    const Sweep& s = sweep();
    std::vector<GroupableRun> sweepRuns;
    for (size_t i = 0; i < s.runs.size(); ++i)
      sweepRuns.push_back({s.metrics[i].run, s.hparams[i]});
    QVERIFY(hasReplicates(sweepRuns));
    auto run = [](std::string name, double lr, std::optional<double> seed) {
      GroupableRun r{std::move(name), {{"learning_rate", numberHparam(lr)}}};
      if (seed) r.hparams["seed"] = numberHparam(*seed);
      return r;
    };
    const std::vector<GroupableRun> branch{run("tiny", 3e-4, 1337), run("tiny@4", 3e-4, 1337)};
    QVERIFY(!hasReplicates(branch));
    const std::vector<GroupableRun> settings{run("a", 3e-4, 1), run("b", 1e-3, 2)};
    QVERIFY(!hasReplicates(settings));  // a seed each, but other learning rates
    const std::vector<GroupableRun> noSeed{run("a", 3e-4, {}), run("b", 3e-4, {})};
    QVERIFY(!hasReplicates(noSeed));
    const std::vector<GroupableRun> two{run("a", 3e-4, 1), run("a@4", 3e-4, 1), run("b", 3e-4, 2)};
    QVERIFY(hasReplicates(two));
    QVERIFY(!hasReplicates(two, "learning_rate"));
  }

  // By hand: a Lightning run that logs train_loss, epoch and val_acc is
  // ranked by its loss, not by "epoch" (the alphabetical first).
  void defaultMetricOfTheTable_data() {
    QTest::addColumn<QStringList>("metrics");
    QTest::addColumn<QString>("expected");
    QTest::newRow("ours") << QStringList{"loss", "lr", "val_loss"} << "val_loss";
    QTest::newRow("loss only") << QStringList{"accuracy", "loss"} << "loss";
    QTest::newRow("Trainer") << QStringList{"epoch",     "eval_accuracy", "eval_loss",
                                            "grad_norm", "learning_rate", "train_loss"}
                             << "eval_loss";
    QTest::newRow("TensorBoard") << QStringList{"lr", "train/loss", "val/loss"} << "val/loss";
    QTest::newRow("Lightning, no validation")
        << QStringList{"epoch", "train_loss", "val_acc"} << "train_loss";
    QTest::newRow("no loss") << QStringList{"epoch", "mfu", "step"} << "mfu";
    QTest::newRow("none") << QStringList{} << "loss";
  }
  void defaultMetricOfTheTable() {
    QFETCH(QStringList, metrics);
    QFETCH(QString, expected);
    std::set<std::string> names;
    for (const QString& m : metrics) names.insert(m.toStdString());
    QCOMPARE(QString::fromStdString(defaultTableMetric(names)), expected);
  }

  void columnsAreTheDifferingHyperparameters() {
    const Sweep& s = sweep();
    RunsTableOptions o;
    o.metric = "loss";
    QCOMPARE(buildRunsTable(s.metrics, s.hparams, o).columns,
             (std::vector<std::string>{"learning_rate", "seed", "warmup_steps"}));
    o.filter = "lr == 3e-4";
    QCOMPARE(buildRunsTable(s.metrics, s.hparams, o).columns, (std::vector<std::string>{"seed"}));
    o.filter = "seed == 4";
    QCOMPARE(buildRunsTable(s.metrics, s.hparams, o).columns,
             (std::vector<std::string>{"learning_rate", "warmup_steps"}));
    o.filter = "seed == 3 and learning_rate < 0.0005";
    QCOMPARE(buildRunsTable(s.metrics, s.hparams, o).columns,
             (std::vector<std::string>{"learning_rate"}));
  }

  void bestAndStepOfBestAgainstNumpy_data() {
    QTest::addColumn<QString>("metric");
    QTest::addColumn<QString>("goal");
    QTest::newRow("loss") << "loss"
                          << "min";
    QTest::newRow("val_loss") << "val_loss"
                              << "min";
    QTest::newRow("val_acc") << "val_acc"
                             << "max";
  }
  void bestAndStepOfBestAgainstNumpy() {
    QFETCH(QString, metric);
    QFETCH(QString, goal);
    RunsTableOptions o;
    o.metric = metric.toStdString();
    const RunsTable t = buildRunsTable(sweep().metrics, sweep().hparams, o);
    QCOMPARE(QString::fromStdString(std::string(metricGoalName(t.goal))), goal);
    QCOMPARE(t.rows.size(), size_t(15));
    for (const RunsTableRow& r : t.rows) {
      const auto& want = sweep().reference["runs"][r.name][o.metric];
      QVERIFY2(r.best && close(*r.best, want["best"].get<double>()), r.name.c_str());
      QCOMPARE(*r.bestStep, want["best_step"].get<int64_t>());
      QVERIFY(r.last && close(*r.last, want["last"].get<double>()));
      QCOMPARE(*r.lastStep, want["last_step"].get<int64_t>());
      const std::string ckpt =
          r.checkpoint.empty() ? "" : fs::path(r.checkpoint).filename().string();
      QCOMPARE(ckpt, want["checkpoint"].is_null() ? "" : want["checkpoint"].get<std::string>());
    }
    // Natural order: seed2 before seed10 would be; here lr1e-3 < lr1e-4 < lr3e-4.
    QCOMPARE(t.rows.front().name, std::string("lr1e-3_seed0"));
    QCOMPARE(t.rows.back().name, std::string("lr3e-4_seed4"));
  }

  // By hand: checkpoints at 300 and 600, the best at 450 (a tie: the later
  // one, it has trained through the best step), a NaN that is not the best.
  void checkpointNearestTheBest() {
    RunMetrics m;
    m.run = "r";
    MetricSeries s;
    s.metric = "val_acc";
    for (const auto& [step, v] : std::vector<std::pair<int64_t, double>>{
             {100, 0.1}, {450, 0.7}, {500, NAN}, {700, 0.7}, {800, 0.2}})
      s.points.push_back({step, v, {}, {}});
    m.series.push_back(s);
    for (int64_t step : {300, 600}) {
      CheckpointMarker c;
      c.step = step;
      c.path = "r_step" + std::to_string(step) + ".pt";
      m.markers.push_back(c);
    }
    RunsTableOptions o;
    const RunsTable t = buildRunsTable(std::span(&m, 1), std::vector<Hparams>(1), o);
    QCOMPARE(t.metric, std::string("val_acc"));  // the only metric there is
    QVERIFY(t.goal == MetricGoal::Max);
    const RunsTableRow& r = t.rows.at(0);
    QCOMPARE(*r.best, 0.7);
    QCOMPARE(*r.bestStep, int64_t(450));  // the earliest of two equal bests
    QCOMPARE(r.checkpoint, std::string("r_step600.pt"));
    QCOMPARE(*r.last, 0.2);
  }

  void filterExpressions() {
    using HP = const nlohmann::json&;
    auto lr = [](HP hp) { return hp["learning_rate"].get<double>(); };
    auto seed = [](HP hp) { return hp["seed"].get<int>(); };
    QCOMPARE(shownRuns("seed < 2 and lr == 1e-3"),
             truthRuns([&](auto&, HP hp, auto&) { return seed(hp) < 2 && lr(hp) == 1e-3; }));
    QCOMPARE(shownRuns("name ~ ^lr1e-4 or seed == 4"),
             truthRuns([&](const std::string& n, HP hp, auto&) {
               return n.starts_with("lr1e-4") || seed(hp) == 4;
             }));
    QCOMPARE(shownRuns("not (seed >= 1)"),
             truthRuns([&](auto&, HP hp, auto&) { return seed(hp) == 0; }));
    QCOMPARE(shownRuns("warmup_steps == 100").size(), size_t(1));
    QCOMPARE(shownRuns("not warmup_steps == 100").size(), size_t(14));
    QCOMPARE(shownRuns("learning_rate = 0.0003 || seed=0 && lr=1e-4").size(), size_t(6));
    // Another metric: its last value.
    QCOMPARE(shownRuns("val_loss < 2.5"), truthRuns([](auto&, auto&, HP runs) {
               return runs["val_loss"]["last"].template get<double>() < 2.5;
             }));
    QCOMPARE(shownRuns("best_step > 1200 and best < 3"), truthRuns([](auto&, auto&, HP runs) {
               return runs["loss"]["best_step"].template get<int>() > 1200 &&
                      runs["loss"]["best"].template get<double>() < 3;
             }));
    // Names in natural order: seed2 < seed10 would hold; here 3 and 4.
    QCOMPARE(shownRuns("name > lr1e-3_seed2 and name < 'lr1e-4_seed0'"),
             (std::set<std::string>{"lr1e-3_seed3", "lr1e-3_seed4"}));
    QCOMPARE(shownRuns("name !~ seed").size(), size_t(0));
    QCOMPARE(shownRuns("  ").size(), size_t(15));
  }

  void badFilters_data() {
    QTest::addColumn<QString>("filter");
    QTest::addColumn<int>("position");
    QTest::newRow("no value") << "lr ==" << 6;
    QTest::newRow("unclosed") << "(lr == 3" << 9;
    QTest::newRow("unknown name") << "seed < 2 and foo > 2" << 14;
    QTest::newRow("bad regex") << "name ~ '('" << 8;
    QTest::newRow("dangling or") << "seed < 2 or" << 12;
    QTest::newRow("no operator") << "seed 2" << 6;
    QTest::newRow("bad number") << "seed < 3e-" << 8;
    QTest::newRow("junk after") << "seed < 2 )" << 10;
    QTest::newRow("unclosed quote") << "name == 'abc" << 9;
    QTest::newRow("deep") << QString(1000, '(') << 101;
  }
  void badFilters() {
    QFETCH(QString, filter);
    QFETCH(int, position);
    RunsTableOptions o;
    o.filter = filter.toStdString();
    try {
      (void)buildRunsTable(sweep().metrics, sweep().hparams, o);
      QFAIL("no error");
    } catch (const FilterError& e) {
      QCOMPARE(int(e.position()), position);
      QVERIFY(std::string(e.what()).find("position " + std::to_string(position)) !=
              std::string::npos);
    }
  }

  void hparamsFromCheckpointConfig() {
    const auto runs = findMetricRuns((kFixtures / "ckptcfg").string());
    QCOMPARE(runs.size(), size_t(2));
    std::vector<std::string> problems;
    const Hparams a = readHparams(runs[0], &problems);
    QVERIFY(problems.empty());
    QCOMPARE(a.at("learning_rate").number, 1e-3);
    QCOMPARE(a.at("d_model").number, 32.0);
    QVERIFY(!a.count("run_name"));
    const Hparams b = readHparams(runs[1]);
    QCOMPARE(b.at("learning_rate").number, 2e-3);
    QCOMPARE(differingKeys({&a, &b}), std::vector<std::string>{"learning_rate"});
  }

  // A config nested 100,000 deep or not JSON at all: a problem named, no
  // crash (the deep one overflowed the stack before the parse kept it
  // shallow); one 40 deep is read: 16 levels of dotted key, the rest text.
  void hostileRunJson() {
    QTemporaryDir tmp;
    for (const auto& [name, text] : std::vector<std::pair<QString, QByteArray>>{
             {"deep", "{\"training\": " + QByteArray(100000, '[') + QByteArray(100000, ']') + "}"},
             {"nested", QByteArray(40, ' ').replace(" ", "{\"a\": ") + "1" + QByteArray(40, '}')},
             {"broken", "{\"training\": {\"lr\": "}}) {
      QVERIFY(QDir(tmp.path()).mkpath(name));
      QFile f(tmp.filePath(name + "/RUN.json"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text);
      f.close();
      RunEntry run;
      run.name = name.toStdString();
      run.path = tmp.filePath(name).toStdString();
      std::vector<std::string> problems;
      const Hparams h = readHparams(run, &problems);
      if (name == "deep") {
        QCOMPARE(problems.size(), size_t(1));
        QVERIFY(problems[0].find("nested deeper than 64 levels") != std::string::npos);
        QVERIFY(h.empty());
      }
      if (name == "broken") {
        QCOMPARE(problems.size(), size_t(1));
        QVERIFY(problems[0].find("RUN.json: not a JSON object") != std::string::npos);
      }
      if (name == "nested") {
        QVERIFY(problems.empty());
        QCOMPARE(h.size(), size_t(1));
        QCOMPARE(h.begin()->first, QString("a.").repeated(15).append("a").toStdString());
        QVERIFY(h.begin()->second.text.starts_with("{\"a\":{\"a\":"));
      }
    }
  }

  // The CLI's JSON, checked by Python against numpy.
  void cliRunsJson_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("kind");
    QTest::newRow("runs") << QStringList{"--metric", "loss"} << "runs";
    QTest::newRow("grouped") << QStringList{"--metric", "loss", "--group-by", "lr"} << "grouped";
    QTest::newRow("val_acc") << QStringList{"--metric", "val_acc"} << "val_acc";
  }
  void cliRunsJson() {
    QFETCH(QStringList, args);
    QFETCH(QString, kind);
    QTemporaryDir tmp;
    const QString dir = QString::fromStdString((kFixtures / "sweep").string());
    const auto r = test::runProcess(CKPT_CLI, QStringList{"runs", dir, "--json"} + args);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QFile out(tmp.filePath("runs.json"));
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(r.out);
    out.close();
    const auto check = test::runProcess(
        CKPT_TORCH_PYTHON, {QString(CKPT_SOURCE_DIR) + "/tests/python/sweep_fixtures.py", "check",
                            QString::fromStdString(kFixtures.string()), out.fileName(), kind});
    QVERIFY2(check.exitCode == 0, (check.out + check.err).constData());
  }

  // Grouped with the default metric neither val_loss nor loss: the CLI reads
  // the points of the one it chose (acc) again. By hand: at step 1 (0.1 +
  // 0.3) / 2, at 2 (0.5 + 0.25) / 2 (the second run between its steps 1 and
  // 3), at 3 the second run alone.
  void cliGroupOfAnotherMetric() {
    QTemporaryDir tmp;
    const std::pair<const char*, const char*> runs[] = {
        {"a_seed1", "{\"step\": 1, \"acc\": 0.1}\n{\"step\": 2, \"acc\": 0.5}\n"},
        {"a_seed2", "{\"step\": 1, \"acc\": 0.3}\n{\"step\": 3, \"acc\": 0.2}\n"}};
    for (const auto& [name, text] : runs) {
      QVERIFY(QDir(tmp.path()).mkpath(name));
      QFile f(tmp.filePath(QString(name) + "/metrics.jsonl"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text);
    }
    const auto r = test::runProcess(CKPT_CLI, {"runs", tmp.path(), "--group-by", "name", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["metric"].get<std::string>(), std::string("acc"));
    QCOMPARE(j["goal"].get<std::string>(), std::string("max"));
    const auto& row = j["rows"].at(0);
    QCOMPARE(row["name"].get<std::string>(), std::string("a_seed*"));
    QCOMPARE(row["best"].get<double>(), (0.5 + 0.25) / 2);
    QCOMPARE(row["best_step"].get<int>(), 2);
    QCOMPARE(row["last"].get<double>(), 0.2);
    QCOMPARE(row["points"].get<int>(), 3);
  }

  void cliBadInput() {
    const QString dir = QString::fromStdString((kFixtures / "sweep").string());
    auto r = test::runProcess(CKPT_CLI, {"runs", dir, "--filter", "lr == 3e-4 andd seed < 2"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("position 12"), r.err.constData());
    QVERIFY(r.out.isEmpty());
    r = test::runProcess(CKPT_CLI, {"runs", dir, "--group-by", "learning rate"});
    QCOMPARE(r.exitCode, 2);
    r = test::runProcess(CKPT_CLI, {"runs", dir, "--metric", "bleu"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains("no run has the metric 'bleu'"));
    r = test::runProcess(CKPT_CLI, {"runs", dir, "--sort", "colour"});
    QCOMPARE(r.exitCode, 2);
    r = test::runProcess(CKPT_CLI, {"runs", dir + "/nothing-here"});
    QCOMPARE(r.exitCode, 1);
  }
};

QTEST_GUILESS_MAIN(TestRunGroups)
#include "tst_run_groups.moc"
