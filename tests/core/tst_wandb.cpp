// W&B run folders as the wandb SDK leaves them (make_wandb.py writes them
// byte by byte as wandb's datastore and handler do): each run folder is one
// run named as W&B names it, its .wandb history the curves an independent
// Python reader (wandb_reader.py) and the fixture's own record of what it
// logged both find, its config.yaml the hyperparameters, its
// wandb-summary.json the summary, its output.log its console; a damaged
// chunk is skipped and counted, a truncated tail read up to the last whole
// record and followed from there.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "ckpt/index/hparams.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/scanner.h"
#include "ckpt/index/wandb.h"
#include "cli_json.h"
#include "json_compare.h"

using ckpt::test::json;
using ckpt::test::runJson;

namespace {

const QString kRoot = QStringLiteral(CKPT_FIXTURE_DIR "/wandb");
const std::string kWandbDir = CKPT_FIXTURE_DIR "/wandb/proj/wandb";
const std::string kOnline = kWandbDir + "/run-20240101_120000-abc123";
const std::string kOffline = kWandbDir + "/offline-run-20240102_090000-def456";
const std::string kFuture = kWandbDir + "/run-20240103_080000-ghi789";
// Run folders as wandb before 0.10 wrote them (make_wandb.py write_legacy).
const QString kLegacyRoot = QStringLiteral(CKPT_FIXTURE_DIR "/wandb_legacy");
const std::string kLegacyDir = CKPT_FIXTURE_DIR "/wandb_legacy/proj/wandb";
const std::string kLegacy = kLegacyDir + "/run-20200301_101500-old111";
const std::string kDryrun = kLegacyDir + "/dryrun-20200302_090000-old222";
const std::string kBoth = kLegacyDir + "/run-20210104_080000-both33";

json cliJson(const QStringList& args) {
  return runJson(QStringLiteral(CKPT_CLI), args);
}

json expected() {
  std::ifstream in(CKPT_FIXTURE_DIR "/wandb/expected.json");
  return json::parse(in);
}

json legacyExpected() {
  std::ifstream in(CKPT_FIXTURE_DIR "/wandb_legacy/expected.json");
  return json::parse(in);
}

// A number of expected.json: non-finite ones are written as Python's json
// writes them bare ("NaN", "Infinity", "-Infinity"), in strings.
double number(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    return s == "NaN" ? NAN : s == "Infinity" ? INFINITY : -INFINITY;
  }
  return v.get<double>();
}

const json* findRun(const json& runs, const std::string& name) {
  for (const json& r : runs)
    if (r["name"] == name) return &r;
  return nullptr;
}

const json* findSeries(const json& run, const std::string& metric) {
  for (const json& s : run["series"])
    if (s["metric"] == metric) return &s;
  return nullptr;
}

}  // namespace

class TstWandb : public QObject {
  Q_OBJECT

 private slots:
  void folderNames_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("run");
    QTest::newRow("online") << "run-20240101_120000-abc123" << true;
    QTest::newRow("offline") << "offline-run-20240102_090000-def456" << true;
    QTest::newRow("dryrun (before 0.10)") << "dryrun-20200302_090000-old222" << true;
    QTest::newRow("dryrun no id") << "dryrun-20200302_090000-" << false;
    QTest::newRow("no id") << "run-20240101_120000-" << false;
    QTest::newRow("short date") << "run-2024010_120000-abc" << false;
    QTest::newRow("latest") << "latest-run" << false;
    QTest::newRow("other") << "runs" << false;
  }
  void folderNames() {
    QFETCH(QString, name);
    QFETCH(bool, run);
    QCOMPARE(ckpt::isWandbRunFolderName(name.toStdString()), run);
  }

  // ls --json: one run per run folder (wandb/latest-run is not a second
  // one), named by the RunRecord's display name, else the folder; trainer
  // "wandb"; a checkpoint saved into files/ is the run's.
  void runsListed() {
    const json ls = cliJson({"ls", kRoot, "--json"});
    std::vector<std::string> names;
    for (const json& r : ls["runs"]) {
      names.push_back(r["name"].get<std::string>());
      QCOMPARE(r["trainer"].get<std::string>(), std::string("wandb"));
    }
    QCOMPARE(names,
             (std::vector<std::string>{"baseline-lr3e-4", "offline-run-20240102_090000-def456",
                                       "run-20240103_080000-ghi789"}));
    const json& online = *findRun(ls["runs"], "baseline-lr3e-4");
    QCOMPARE(online["path"].get<std::string>(), kOnline);
    QCOMPARE(online["checkpoints"].size(), size_t(1));
    const json& c = online["checkpoints"][0];
    QCOMPARE(c["step"].get<int64_t>(), int64_t(20));
    QCOMPARE(c["trainer"].get<std::string>(), std::string("wandb"));
    QVERIFY2(c["error"].is_null(), c.dump().c_str());
    const json& offline = *findRun(ls["runs"], "offline-run-20240102_090000-def456");
    QCOMPARE(offline["checkpoints"].size(), size_t(0));
    QCOMPARE(offline["metrics"],
             json({kOffline + "/files/output.log", kOffline + "/files/wandb-summary.json",
                   kOffline + "/run-def456.wandb"}));
    // metrics on the .wandb file itself: the run of its folder.
    const json one = cliJson(
        {"metrics", QString::fromStdString(kOffline + "/run-def456.wandb"), "--json"})["runs"];
    QCOMPARE(one.size(), size_t(1));
    QCOMPARE(one[0]["name"].get<std::string>(), std::string("offline-run-20240102_090000-def456"));
    QVERIFY(findSeries(one[0], "val.loss"));
    // Opened through the link, the run is the one it links to.
    const json latest =
        cliJson({"ls", QString::fromStdString(kWandbDir + "/latest-run"), "--json"});
    QCOMPARE(latest["runs"].size(), size_t(1));
    QCOMPARE(latest["runs"][0]["name"].get<std::string>(),
             std::string("offline-run-20240102_090000-def456"));
  }

  // metrics --json: every history series the Python reader finds, point
  // for point (step, value, _timestamp as wall time), source "wandb"; and
  // no wandb series the reader does not have.
  void historyMatchesReader() {
    const json want =
        runJson(QStringLiteral(CKPT_TORCH_PYTHON),
                {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/wandb_reader.py"), kRoot})["runs"];
    const json got = cliJson({"metrics", kRoot, "--json"})["runs"];
    QCOMPARE(got.size(), size_t(3));
    for (const auto& [name, run] : want.items()) {
      const json* g = findRun(got, name);
      QVERIFY2(g, name.c_str());
      size_t wandbSeries = 0;
      for (const json& s : (*g)["series"]) wandbSeries += s["source"] == "wandb" ? 1 : 0;
      QCOMPARE(wandbSeries, run["series"].size());
      for (const auto& [metric, points] : run["series"].items()) {
        const json* s = findSeries(*g, metric);
        QVERIFY2(s, (name + ": no series " + metric).c_str());
        QCOMPARE((*s)["source"].get<std::string>(), std::string("wandb"));
        const std::string d = ckpt::test::compareJson(points, (*s)["points"], name + "." + metric);
        QVERIFY2(d.empty(), d.c_str());
      }
      const std::string d = ckpt::test::compareJson(run["summary"], (*g)["summary"], name);
      QVERIFY2(d.empty(), d.c_str());
    }
    QVERIFY(findSeries(*findRun(got, "baseline-lr3e-4"), "layers.2199.grad_norm"));
  }

  // The same curves against what the fixture logged (its own record): each
  // row's numbers (nested dicts flattened with '.', media, strings and
  // booleans left out) at its _step, wall time its _timestamp; the damaged
  // row and the truncated one are not there.
  void historyMatchesWhatWasLogged() {
    const json exp = expected();
    const std::vector<ckpt::RunEntry> runs = ckpt::findMetricRuns(kRoot.toStdString());
    const std::vector<ckpt::RunMetrics> metrics = ckpt::collectMetrics(runs);
    for (const std::string& folder : {kOnline, kOffline}) {
      const json& e = exp["runs"][std::filesystem::path(folder).filename().string()];
      const ckpt::RunMetrics* m = nullptr;
      for (const ckpt::RunMetrics& r : metrics)
        if (r.path == folder) m = &r;
      QVERIFY(m);
      QCOMPARE(m->run, e["name"].get<std::string>());
      std::map<std::string, std::vector<std::pair<int64_t, double>>> want;
      std::map<int64_t, double> wall;
      for (const json& row : e["rows"]) {
        wall[row["step"].get<int64_t>()] = row["wall_time"].get<double>();
        for (const auto& [k, v] : row["values"].items())
          want[k].emplace_back(row["step"].get<int64_t>(), number(v));
      }
      size_t wandbSeries = 0;
      for (const ckpt::MetricSeries& s : m->series)
        wandbSeries += s.source == ckpt::MetricSource::Wandb ? 1 : 0;
      QCOMPARE(wandbSeries, want.size());
      for (const auto& [metric, points] : want) {
        const ckpt::MetricSeries* s = m->find(metric);
        QVERIFY2(s, metric.c_str());
        QCOMPARE(s->points.size(), points.size());
        for (size_t i = 0; i < points.size(); ++i) {
          QCOMPARE(s->points.step(i), points[i].first);
          const double v = s->points.value(i);
          QVERIFY2(v == points[i].second || (std::isnan(v) && std::isnan(points[i].second)),
                   (metric + " at " + std::to_string(points[i].first)).c_str());
          QCOMPARE(*s->points.wallTime(i), wall[points[i].first]);
        }
      }
    }
    // The damaged row's step is missing from every series of the online run.
    const int64_t damagedStep = exp["runs"]["run-20240101_120000-abc123"]["damaged_step"];
    for (const ckpt::RunMetrics& r : metrics)
      if (r.path == kOnline)
        if (const ckpt::MetricSeries* loss = r.find("loss"))
          for (size_t i = 0; i < loss->points.size(); ++i)
            QVERIFY(loss->points.step(i) != damagedStep);
  }

  // The fixture wrote what the reader is tested on: a record over three
  // blocks (FIRST, MIDDLE, LAST), an empty FIRST chunk (7 bytes left), a
  // zero-padded block tail.
  void fixtureShapes() {
    const json exp = expected();
    const json& online = exp["runs"]["run-20240101_120000-abc123"]["chunks"];
    QCOMPARE(online["2"].get<int>(), 1);
    QVERIFY(online["3"].get<int>() >= 1);
    QCOMPARE(online["4"].get<int>(), 1);
    const json& offline = exp["runs"]["offline-run-20240102_090000-def456"];
    QCOMPARE(offline["empty_first"].get<int>(), 1);
    QCOMPARE(offline["padded"].get<int>(), 1);
  }

  // The chunk damaged on disk: skipped and counted, named by its byte; the
  // records after it read.
  void damagedChunkCounted() {
    const json e = expected()["runs"]["run-20240101_120000-abc123"];
    std::vector<std::string> problems;
    std::vector<uint64_t> at;
    const ckpt::WandbStoreRead r = ckpt::readWandbStore(
        kOnline + "/run-abc123.wandb", 0, [&](std::string_view, uint64_t o) { at.push_back(o); },
        &problems);
    QCOMPARE(r.damaged, uint64_t(1));
    QVERIFY(!r.unreadable);
    QCOMPARE(r.end, e["end"].get<uint64_t>());
    QCOMPARE(problems.size(), size_t(1));
    const std::string byte = "byte " + std::to_string(e["damaged_at"].get<uint64_t>()) + ":";
    QVERIFY2(problems[0].find(byte) != std::string::npos, problems[0].c_str());
    QVERIFY(std::find(at.begin(), at.end(), e["damaged_at"].get<uint64_t>()) == at.end());
    const json got = cliJson({"metrics", kRoot, "--json"})["runs"];
    const json& run = *findRun(got, "baseline-lr3e-4");
    QCOMPARE(run["problems"].size(), size_t(1));
    QVERIFY(run["problems"][0].get<std::string>().find("CRC") != std::string::npos);
  }

  // A live run: read to the last whole record (the truncated one is no
  // damage); what the run appends next is read from there, nothing twice.
  void truncatedTailFollowed() {
    const json e = expected()["runs"]["offline-run-20240102_090000-def456"];
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string copy = dir.filePath("run-def456.wandb").toStdString();
    std::filesystem::copy_file(kOffline + "/run-def456.wandb", copy);
    std::vector<std::string> problems;
    uint64_t end = 0, damaged = 0;
    const auto first = ckpt::readWandbPoints(copy, 0, &end, &problems, &damaged);
    QCOMPARE(end, e["end"].get<uint64_t>());
    QCOMPARE(damaged, uint64_t(0));
    QVERIFY2(problems.empty(), problems.empty() ? "" : problems[0].c_str());
    QCOMPARE(first.size(), e["rows"].size() * 3);  // train/loss, val.loss, lr per row
    // Read again from `end` before anything is appended: nothing.
    uint64_t again = 0;
    QVERIFY(ckpt::readWandbPoints(copy, end, &again).empty());
    QCOMPARE(again, end);
    {
      std::ifstream rest(CKPT_FIXTURE_DIR "/wandb/live_rest.bin", std::ios::binary);
      std::ofstream out(copy, std::ios::binary | std::ios::app);
      out << rest.rdbuf();
    }
    uint64_t end2 = 0;
    const auto next = ckpt::readWandbPoints(copy, end, &end2, &problems, &damaged);
    QCOMPARE(end2, uint64_t(std::filesystem::file_size(copy)));
    QCOMPARE(damaged, uint64_t(0));
    const json& live = e["live_rows"];
    QCOMPARE(next.size(), live.size());
    for (size_t i = 0; i < next.size(); ++i) {
      QCOMPARE(next[i].first, std::string("train/loss"));
      QCOMPARE(next[i].second.step, live[i]["step"].get<int64_t>());
      QCOMPARE(next[i].second.value, live[i]["values"]["train/loss"].get<double>());
      QCOMPARE(*next[i].second.wallTime, live[i]["wall_time"].get<double>());
    }
  }

  // files/config.yaml, both as the Python SDK (PyYAML, desc/value) and as
  // wandb-core (yaml.v3, value only) write it: each key's value, `_wandb`
  // left out; the hyperparameters the runs table shows.
  void config() {
    const json exp = expected();
    for (const std::string& folder : {kOnline, kOffline, kFuture}) {
      std::vector<std::string> problems;
      const nlohmann::json got = ckpt::readWandbConfig(folder, &problems);
      QVERIFY2(problems.empty(), problems.empty() ? "" : problems[0].c_str());
      const nlohmann::json want = nlohmann::json::parse(
          exp["runs"][std::filesystem::path(folder).filename().string()]["config"].dump());
      QVERIFY2(got == want, (got.dump() + " vs " + want.dump()).c_str());
    }
    ckpt::RunEntry run;
    run.path = kOnline;
    const ckpt::Hparams h = ckpt::readHparams(run);
    QCOMPARE(h.at("lr").number, 0.0003);
    QCOMPARE(h.at("batch_size").number, 32.0);
    QCOMPARE(h.at("weight_decay").number, 1e-05);
    QCOMPARE(h.at("optimizer.name").text, std::string("adamw"));
    QCOMPARE(h.at("optimizer.betas").text, std::string("[0.9,0.95]"));
    QCOMPARE(h.at("model").text, std::string("gpt2-small"));
    for (const auto& [key, value] : h)
      QVERIFY2(key.find("_wandb") == std::string::npos && key != "cli_version", key.c_str());
  }

  // A store version this reader does not know: no history, a problem that
  // says `wandb sync`; the summary and config still read.
  void unknownVersion() {
    const json got = cliJson({"metrics", kRoot, "--json"})["runs"];
    const json& run = *findRun(got, "run-20240103_080000-ghi789");
    QCOMPARE(run["series"].size(), size_t(0));
    QCOMPARE(run["problems"].size(), size_t(1));
    QVERIFY(run["problems"][0].get<std::string>().find("wandb sync") != std::string::npos);
    QCOMPARE(run["summary"], json({{"loss", 1.0}}));
    // Followed live: said once, not again on every later read.
    const std::string store = kFuture + "/run-ghi789.wandb";
    std::vector<std::string> problems;
    uint64_t end = 0;
    QVERIFY(ckpt::readWandbPoints(store, 0, &end, &problems).empty());
    QCOMPARE(problems.size(), size_t(1));
    QCOMPARE(end, uint64_t(std::filesystem::file_size(store)));
    QVERIFY(ckpt::readWandbPoints(store, end, &end, &problems).empty());
    QCOMPARE(problems.size(), size_t(1));
  }

  // files/output.log is the run's console: a metric only it logs is a
  // curve from it; the SDK's own logs/ are not read.
  void consoleAndSdkLogs() {
    const json got = cliJson({"metrics", kRoot, "--json"})["runs"];
    const json& online = *findRun(got, "baseline-lr3e-4");
    const json* mfu = findSeries(online, "mfu");
    QVERIFY(mfu);
    QCOMPARE((*mfu)["source"].get<std::string>(), std::string("log"));
    QCOMPARE((*mfu)["files"], json({kOnline + "/files/output.log"}));
    QCOMPARE((*mfu)["points"].size(), size_t(4));
    QVERIFY(!findSeries(online, "sdk_metric"));
    // Where a metric is in both, the history wins.
    QCOMPARE((*findSeries(online, "loss"))["source"].get<std::string>(), std::string("wandb"));
    const json* tps =
        findSeries(*findRun(got, "offline-run-20240102_090000-def456"), "tokens_per_sec");
    QVERIFY(tps);
    QCOMPARE((*tps)["points"], json::parse("[[0, 5000.0, null, null], [100, 5100.0, null, null]]"));
  }

  // A config.yaml nested deeper than any config: named, read up to there,
  // never a crash; a line that is no `key: value` is named by its number.
  void hostileConfig() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string run = dir.filePath("run-20240101_000000-x1").toStdString();
    std::filesystem::create_directories(run + "/files");
    std::string deep = "lr:\n  value: 0.1\nnest:\n";
    for (int i = 1; i < 200; ++i) deep += std::string(size_t(2 * i), ' ') + "a:\n";
    std::ofstream(run + "/files/config.yaml") << deep;
    std::vector<std::string> problems;
    nlohmann::json got = ckpt::readWandbConfig(run, &problems);
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY2(problems[0].find("nested deeper than") != std::string::npos, problems[0].c_str());
    QCOMPARE(got["lr"].get<double>(), 0.1);
    std::ofstream(run + "/files/config.yaml") << "lr:\n  value: 0.1\njust some words\n";
    problems.clear();
    got = ckpt::readWandbConfig(run, &problems);
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY2(problems[0].find("line 3:") != std::string::npos, problems[0].c_str());
    QCOMPARE(got["lr"].get<double>(), 0.1);
  }

  // A run resumed twice (three folders of one run id, the last offline and
  // rewound to step 80): one run, at its newest folder, named as W&B names
  // it; its curves the folders' histories joined as the Python reader joins
  // them (the rewound attempt replaces steps 80-95: a restart at 80); its
  // summary and config the newest attempt's.
  void resumedRunIsOne() {
    const QString root = QStringLiteral(CKPT_FIXTURE_DIR "/wandb_resumed");
    std::ifstream in(CKPT_FIXTURE_DIR "/wandb_resumed/expected.json");
    const json exp = json::parse(in);
    QCOMPARE(exp["folders"].size(), size_t(3));
    const std::string newest = exp["folders"].back().get<std::string>();

    const json ls = cliJson({"ls", root, "--json"})["runs"];
    QCOMPARE(ls.size(), size_t(1));
    QCOMPARE(ls[0]["name"], exp["name"]);
    QCOMPARE(ls[0]["path"].get<std::string>(), newest);
    QCOMPARE(ls[0]["trainer"].get<std::string>(), std::string("wandb"));
    std::vector<std::string> stores;
    for (const json& f : ls[0]["metrics"])
      if (f.get<std::string>().ends_with(".wandb")) stores.push_back(f.get<std::string>());
    QCOMPARE(stores.size(), size_t(3));
    for (const json& folder : exp["folders"])
      QVERIFY2(std::any_of(stores.begin(), stores.end(),
                           [&](const std::string& f) {
                             return f.starts_with(folder.get<std::string>() + "/");
                           }),
               folder.dump().c_str());

    const json got = cliJson({"metrics", root, "--json"})["runs"];
    QCOMPARE(got.size(), size_t(1));
    const json want =
        runJson(QStringLiteral(CKPT_TORCH_PYTHON),
                {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/wandb_reader.py"), root})["runs"];
    QCOMPARE(want.size(), size_t(1));
    const json& w = want[exp["name"].get<std::string>()];
    QCOMPARE(got[0]["name"], exp["name"]);
    for (const auto& [metric, points] : w["series"].items()) {
      const json* s = findSeries(got[0], metric);
      QVERIFY2(s, metric.c_str());
      const std::string d = ckpt::test::compareJson(points, (*s)["points"], metric);
      QVERIFY2(d.empty(), d.c_str());
      const json restarts = w["restarts"].contains(metric) ? w["restarts"][metric] : json::array();
      QVERIFY2((*s)["restarts"] == restarts,
               ((*s)["restarts"].dump() + " vs " + restarts.dump()).c_str());
    }
    // Against what was logged: 10 + 6 + 9 rows of loss, the rewind at 80.
    const json* loss = findSeries(got[0], "loss");
    QVERIFY(loss);
    QCOMPARE((*loss)["points"].size(), exp["rows"].size());
    for (size_t i = 0; i < exp["rows"].size(); ++i) {
      QCOMPARE((*loss)["points"][i][0], exp["rows"][i]["step"]);
      QCOMPARE((*loss)["points"][i][1].get<double>(),
               exp["rows"][i]["values"]["loss"].get<double>());
    }
    QCOMPARE((*loss)["points"].back()[0].get<int64_t>(), int64_t(120));
    QCOMPARE((*loss)["restarts"], exp["restarts"]);
    QCOMPARE(exp["restarts"], json({80}));
    const std::string d = ckpt::test::compareJson(exp["summary"], got[0]["summary"], "summary");
    QVERIFY2(d.empty(), d.c_str());

    ckpt::RunEntry run;
    run.path = newest;
    const ckpt::Hparams h = ckpt::readHparams(run);
    QCOMPARE(h.at("attempt").number, exp["config"]["attempt"].get<double>());
    QCOMPARE(h.at("attempt").number, 3.0);
  }

  // wandb before 0.10: no .wandb file, no files/; the run's files in its
  // folder. ls --json: one run per folder (a resumed run once, at its newest
  // folder), named by wandb-metadata.json's `name`, else the folder (a
  // dryrun); its history, console and summary its metrics files; a
  // checkpoint saved into the run folder is the run's, at its step.
  void legacyRunsListed() {
    const json exp = legacyExpected();
    const json ls = cliJson({"ls", kLegacyRoot, "--json"})["runs"];
    std::vector<std::string> names;
    for (const json& r : ls) {
      names.push_back(r["name"].get<std::string>());
      QCOMPARE(r["trainer"].get<std::string>(), std::string("wandb"));
    }
    QCOMPARE(names, (std::vector<std::string>{"dryrun-20200302_090000-old222", "legacy-baseline",
                                              "resumed-legacy", "store-and-jsonl"}));
    const json& base = *findRun(ls, "legacy-baseline");
    QCOMPARE(base["path"].get<std::string>(), kLegacy);
    QCOMPARE(base["metrics"], json({kLegacy + "/output.log", kLegacy + "/wandb-history.jsonl",
                                    kLegacy + "/wandb-summary.json"}));
    QCOMPARE(base["checkpoints"].size(), size_t(1));
    QCOMPARE(base["checkpoints"][0]["step"].get<int64_t>(), int64_t(20));
    QCOMPARE(base["checkpoints"][0]["trainer"].get<std::string>(), std::string("wandb"));
    QVERIFY(base["checkpoints"][0]["error"].is_null());
    const json& resumed = *findRun(ls, "resumed-legacy");
    const json& folders = exp["runs"]["resumed"]["folders"];
    QCOMPARE(resumed["path"], folders.back());
    QCOMPARE(resumed["metrics"], json({folders[0].get<std::string>() + "/wandb-history.jsonl",
                                       folders[0].get<std::string>() + "/wandb-summary.json",
                                       folders[1].get<std::string>() + "/wandb-history.jsonl",
                                       folders[1].get<std::string>() + "/wandb-summary.json"}));
    // A folder with a .wandb file and a wandb-history.jsonl: the .wandb
    // file is its history, the other not read.
    QCOMPARE((*findRun(ls, "store-and-jsonl"))["metrics"], json({kBoth + "/run-both33.wandb"}));
    // metrics on the history file itself: the run of its folder.
    const json one = cliJson(
        {"metrics", QString::fromStdString(kLegacy + "/wandb-history.jsonl"), "--json"})["runs"];
    QCOMPARE(one.size(), size_t(1));
    QCOMPARE(one[0]["name"].get<std::string>(), std::string("legacy-baseline"));
    QVERIFY(findSeries(one[0], "eval.ppl.wiki"));
  }

  // metrics --json: every series the Python reader finds in the
  // wandb-history.jsonl files, point for point, source "wandb", and no
  // other wandb series; the summary the reader's.
  void legacyHistoryMatchesReader() {
    const json want = runJson(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/wandb_reader.py"), kLegacyRoot})["runs"];
    const json got = cliJson({"metrics", kLegacyRoot, "--json"})["runs"];
    QCOMPARE(got.size(), size_t(4));
    QCOMPARE(want.size(), size_t(4));
    for (const auto& [name, run] : want.items()) {
      const json* g = findRun(got, name);
      QVERIFY2(g, name.c_str());
      size_t wandbSeries = 0;
      for (const json& s : (*g)["series"]) wandbSeries += s["source"] == "wandb" ? 1 : 0;
      QCOMPARE(wandbSeries, run["series"].size());
      for (const auto& [metric, points] : run["series"].items()) {
        const json* s = findSeries(*g, metric);
        QVERIFY2(s, (name + ": no series " + metric).c_str());
        QCOMPARE((*s)["source"].get<std::string>(), std::string("wandb"));
        const std::string d = ckpt::test::compareJson(points, (*s)["points"], name + "." + metric);
        QVERIFY2(d.empty(), d.c_str());
        const json restarts = run.contains("restarts") && run["restarts"].contains(metric)
                                  ? run["restarts"][metric]
                                  : json::array();
        QCOMPARE((*s)["restarts"], restarts);
      }
      const std::string d = ckpt::test::compareJson(run["summary"], (*g)["summary"], name);
      QVERIFY2(d.empty(), d.c_str());
    }
    QCOMPARE(want["legacy-baseline"]["damaged"].get<int>(), 2);
  }

  // The same curves against what the fixture logged: each row's numbers
  // (a nested dict's parts joined with '.'; the image-file media dict, the
  // string and the boolean left out; NaN and Infinity kept) at its `_step`,
  // wall time its `_timestamp`; the rows lost to the bad line, the stream
  // row and the cut last row not there. A resumed run's second folder
  // repeats the first's tail: one point a step, no restart.
  void legacyHistoryMatchesWhatWasLogged() {
    const json exp = legacyExpected();
    const std::vector<ckpt::RunMetrics> metrics =
        ckpt::collectMetrics(ckpt::findMetricRuns(kLegacyRoot.toStdString()));
    for (const std::string key : {"run-20200301_101500-old111", "dryrun-20200302_090000-old222",
                                  "resumed", "run-20210104_080000-both33"}) {
      const json& e = exp["runs"][key];
      const ckpt::RunMetrics* m = nullptr;
      for (const ckpt::RunMetrics& r : metrics)
        if (r.run == e["name"].get<std::string>()) m = &r;
      QVERIFY2(m, key.c_str());
      std::map<std::string, std::vector<std::pair<int64_t, double>>> want;
      std::map<int64_t, double> wall;
      for (const json& row : e["rows"]) {
        wall[row["step"].get<int64_t>()] = row["wall_time"].get<double>();
        for (const auto& [k, v] : row["values"].items())
          want[k].emplace_back(row["step"].get<int64_t>(), number(v));
      }
      size_t wandbSeries = 0;
      for (const ckpt::MetricSeries& s : m->series)
        wandbSeries += s.source == ckpt::MetricSource::Wandb ? 1 : 0;
      QCOMPARE(wandbSeries, want.size());
      for (const auto& [metric, points] : want) {
        const ckpt::MetricSeries* s = m->find(metric);
        QVERIFY2(s, (key + ": " + metric).c_str());
        QVERIFY2(s->restarts.empty(), metric.c_str());
        QCOMPARE(s->points.size(), points.size());
        for (size_t i = 0; i < points.size(); ++i) {
          QCOMPARE(s->points.step(i), points[i].first);
          const double v = s->points.value(i);
          QVERIFY2(v == points[i].second || (std::isnan(v) && std::isnan(points[i].second)),
                   (metric + " at " + std::to_string(points[i].first)).c_str());
          QCOMPARE(*s->points.wallTime(i), wall[points[i].first]);
        }
      }
    }
    const json& base = exp["runs"]["run-20200301_101500-old111"];
    QCOMPARE(base["rows"].size(), size_t(28));  // 30 logged, 2 lost on one bad line
    for (const ckpt::RunMetrics& r : metrics) {
      if (r.run != "legacy-baseline") continue;
      // The NaN row is a point; media, strings, booleans, the stream row and
      // the system metrics of wandb-events.jsonl are no series.
      QVERIFY(std::isnan(r.find("loss")->points.value(6)));
      for (const char* none : {"examples", "examples.width", "phase", "is_best", "gradients",
                               "system.cpu", "sdk_metric", "_runtime"})
        QVERIFY2(!r.find(none), none);
      // output.log in the run folder is its console.
      const ckpt::MetricSeries* mfu = r.find("mfu");
      QVERIFY(mfu);
      QCOMPARE(int(mfu->source), int(ckpt::MetricSource::ConsoleLog));
      QCOMPARE(mfu->files, std::vector<std::string>{kLegacy + "/output.log"});
      QCOMPARE(r.summaryFile, kLegacy + "/wandb-summary.json");
    }
  }

  // A line that is no JSON (a row cut by a crash, the next appended to it)
  // and a last line without a newline: each skipped, counted and named by
  // its line and byte, never fatal; the run followed from the byte before
  // the cut line takes that row once it is whole, nothing twice.
  void legacyDamagedLines() {
    const json e = legacyExpected()["runs"]["run-20200301_101500-old111"];
    std::vector<std::string> problems;
    uint64_t end = 0, damaged = 0;
    const auto points =
        ckpt::readWandbHistoryJsonl(kLegacy + "/wandb-history.jsonl", 0, &end, &problems, &damaged);
    QCOMPARE(damaged, e["damaged"].get<uint64_t>());
    QCOMPARE(end, e["cut"].get<uint64_t>());
    QCOMPARE(problems.size(), size_t(2));
    const std::string bad = kLegacy + "/wandb-history.jsonl: byte " +
                            std::to_string(e["bad_byte"].get<uint64_t>()) + " (line " +
                            std::to_string(e["bad_line"].get<int>()) + "): not JSON";
    QVERIFY2(problems[0].starts_with(bad), problems[0].c_str());
    QVERIFY2(problems[1].find("byte " + std::to_string(end) + " ") != std::string::npos &&
                 problems[1].find("without a newline") != std::string::npos,
             problems[1].c_str());
    // The run's problems say the same (metrics --json).
    const json got = cliJson({"metrics", kLegacyRoot, "--json"})["runs"];
    const json& run = *findRun(got, "legacy-baseline");
    QCOMPARE(run["problems"].size(), size_t(2));
    QVERIFY2(run["problems"][0].get<std::string>().starts_with(bad), run.dump().c_str());

    // Followed: nothing new before the line is finished, then that row alone.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string copy = dir.filePath("wandb-history.jsonl").toStdString();
    std::filesystem::copy_file(kLegacy + "/wandb-history.jsonl", copy);
    uint64_t again = 0, more = 0;
    std::vector<std::string> later;
    QVERIFY(ckpt::readWandbHistoryJsonl(copy, end, &again, &later, &more).empty());
    QCOMPARE(again, end);
    QCOMPARE(more, uint64_t(0));
    QVERIFY(later.empty());
    {
      std::ifstream rest(CKPT_FIXTURE_DIR "/wandb_legacy/legacy_rest.txt", std::ios::binary);
      std::ofstream out(copy, std::ios::binary | std::ios::app);
      out << rest.rdbuf();
    }
    uint64_t end2 = 0;
    const auto next = ckpt::readWandbPoints(copy, end, &end2, &later, &more);
    QCOMPARE(end2, uint64_t(std::filesystem::file_size(copy)));
    QCOMPARE(more, uint64_t(0));
    QVERIFY(later.empty());
    const json& row = e["rest_row"];
    QCOMPARE(next.size(), row["values"].size());
    for (const auto& [metric, p] : next) {
      QCOMPARE(p.step, row["step"].get<int64_t>());
      QCOMPARE(p.value, row["values"][metric].get<double>());
      QCOMPARE(*p.wallTime, row["wall_time"].get<double>());
    }
  }

  // config.yaml in the run folder (0.9's {desc, value} per key, sorted by
  // PyYAML): each key's value, `_wandb` and `wandb_version` left out; the
  // runs table's hyperparameters; the summary the run folder's
  // wandb-summary.json's numbers.
  void legacyConfigAndSummary() {
    const json exp = legacyExpected();
    for (const std::string& folder : {kLegacy, kDryrun}) {
      std::vector<std::string> problems;
      const nlohmann::json got = ckpt::readWandbConfig(folder, &problems);
      QVERIFY2(problems.empty(), problems.empty() ? "" : problems[0].c_str());
      const nlohmann::json want = nlohmann::json::parse(
          exp["runs"][std::filesystem::path(folder).filename().string()]["config"].dump());
      QVERIFY2(got == want, (got.dump() + " vs " + want.dump()).c_str());
    }
    ckpt::RunEntry run;
    run.path = kLegacy;
    const ckpt::Hparams h = ckpt::readHparams(run);
    QCOMPARE(h.at("lr").number, 0.001);
    QCOMPARE(h.at("batch_size").number, 64.0);
    QCOMPARE(h.at("optimizer.name").text, std::string("sgd"));
    QCOMPARE(h.at("arch").text, std::string("lenet"));
    QVERIFY(h.find("cli_version") == h.end() && h.find("_wandb.cli_version") == h.end());
    QCOMPARE(ckpt::hparamFiles(run), std::vector<std::string>{kLegacy + "/config.yaml"});
    // The resumed run: the newest folder's config.
    run.path = exp["runs"]["resumed"]["folders"].back().get<std::string>();
    QCOMPARE(ckpt::readHparams(run).at("resumed").text, std::string("true"));

    const json got = cliJson({"metrics", kLegacyRoot, "--json"})["runs"];
    for (const auto& [key, name] :
         {std::pair<std::string, std::string>{"run-20200301_101500-old111", "legacy-baseline"},
          {"dryrun-20200302_090000-old222", "dryrun-20200302_090000-old222"},
          {"resumed", "resumed-legacy"}}) {
      json want = exp["runs"][key]["summary"];
      for (auto& [k, v] : want.items())
        if (v.is_string()) v = nullptr;  // Infinity: null in JSON
      const std::string d = ckpt::test::compareJson(want, (*findRun(got, name))["summary"], name);
      QVERIFY2(d.empty(), d.c_str());
    }
  }

  // A .wandb file and a wandb-history.jsonl in one folder: the .wandb
  // file's rows, once; the other file's own key and later rows not read.
  void legacyStoreWins() {
    const json e = legacyExpected()["runs"]["run-20210104_080000-both33"];
    QCOMPARE(ckpt::wandbHistoryFile(kBoth), kBoth + "/run-both33.wandb");
    const json got = cliJson({"metrics", kLegacyRoot, "--json"})["runs"];
    const json& run = *findRun(got, "store-and-jsonl");
    QCOMPARE(run["series"].size(), size_t(1));
    const json& loss = *findSeries(run, "loss");
    QCOMPARE(loss["points"].size(), e["rows"].size());
    QCOMPARE(loss["points"].back()[0].get<int64_t>(), int64_t(9));
    QCOMPARE(loss["files"], json({kBoth + "/run-both33.wandb"}));
  }

  // Bytes that are not records after a good header: counted as damage,
  // never a crash or a hang.
  void garbageAfterHeader() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("run-x.wandb").toStdString();
    std::string bytes = std::string(":W&B\xe1\xbe\x00", 7);
    uint32_t x = 12345;
    for (int i = 0; i < 100000; ++i) {
      x = x * 1103515245u + 12345u;
      bytes += char(x >> 24);
    }
    std::ofstream(path, std::ios::binary) << bytes;
    std::vector<std::string> problems;
    uint64_t records = 0;
    const ckpt::WandbStoreRead r = ckpt::readWandbStore(
        path, 0, [&](std::string_view, uint64_t) { ++records; }, &problems);
    QVERIFY(r.damaged > 0);
    QVERIFY(!problems.empty());
    QVERIFY(r.end <= bytes.size());
  }
};

QTEST_GUILESS_MAIN(TstWandb)
#include "tst_wandb.moc"
