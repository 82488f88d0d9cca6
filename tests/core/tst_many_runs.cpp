// Listing many runs of small checkpoints (issue #26): every run, step and
// loss as torch.load reads them back (tests/python/make_many_runs.py), the
// same whatever the number of threads that read the files, small files read
// whole and a larger one read in parts alike, and each run handed over as
// soon as its files are read while the rest are still being read. The root
// spelled several ways, and links in it.
#include <QtTest>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ckpt/format/input_file.h"
#include "ckpt/index/scanner.h"
#include "json_compare.h"

using namespace ckpt;
namespace fs = std::filesystem;
using ckpt::test::json;

namespace {

const std::string kOut = std::string(CKPT_FIXTURE_DIR) + "/many_runs";
const std::string kRoot = kOut + "/runs";

// What a listing says of a run, as text: compared across thread counts.
std::string describe(const RunEntry& run) {
  std::string s = run.name + " " + run.path + " " + run.trainer + "\n";
  for (const std::string& f : run.metricFiles) s += "  metrics " + f + "\n";
  for (const CheckpointEntry& c : run.checkpoints)
    s += "  " + c.file + " " + std::to_string(c.step.value_or(-1)) + " " +
         std::to_string(c.loss.value_or(-1)) + " " + std::to_string(c.size) + " " +
         std::to_string(c.mtime) + " " + c.format + " " + c.verdict + " " +
         std::to_string(c.tensorBytes) + " " + c.error + "\n";
  return s;
}

std::string describe(const ScanResult& r) {
  std::string s;
  for (const RunEntry& run : r.runs) s += describe(run);
  return s;
}

}  // namespace

class TestManyRuns : public QObject {
  Q_OBJECT

 private slots:
  void listsWhatTorchWrote() {
    const json expected = ckpt::test::readJsonFile(kOut + "/expected.json");
    const ScanResult scan = scanDirectory(kRoot);
    QCOMPARE(scan.runs.size(), expected["order"].size());
    for (size_t i = 0; i < scan.runs.size(); ++i) {
      const RunEntry& run = scan.runs[i];
      QCOMPARE(run.name, expected["order"][i].get<std::string>());  // seed2 before seed10
      const json& rows = expected["runs"][run.name];
      QCOMPARE(run.checkpoints.size(), rows.size());
      for (size_t k = 0; k < rows.size(); ++k) {
        const CheckpointEntry& c = run.checkpoints[k];
        QVERIFY2(c.error.empty(), c.error.c_str());
        QCOMPARE(c.file, run.name + "/" + rows[k][0].get<std::string>());
        QCOMPARE(c.step.value_or(-1), rows[k][1].get<int64_t>());
        QCOMPARE(c.loss.value_or(-1), rows[k][2].get<double>());
        QCOMPARE(c.verdict, std::string("safe"));
      }
      if (rows.empty()) QCOMPARE(run.metricFiles.size(), size_t(1));  // listed for its metrics
    }
  }

  // The fixture has both kinds of file: read whole at open, and read in parts.
  void smallAndLargeFiles() {
    const std::string small = kRoot + "/lr1e-3_seed3/step_100.pt";
    const std::string large = kRoot + "/lr1e-3_seed3/big_step_700.pt";
    QVERIFY(InputFile(small).size() <= InputFile::kReadWholeBytes);
    QVERIFY(InputFile(large).size() > InputFile::kReadWholeBytes);
    // A file that is a folder is still refused with the same words.
    try {
      InputFile folder(kRoot);
      QFAIL("a folder opened as a file");
    } catch (const std::exception& e) {
      QCOMPARE(std::string(e.what()), std::string("is a directory"));
    }
    QVERIFY(!InputFile::openUnlessDirectory(kRoot));
    QVERIFY(InputFile::openUnlessDirectory(small));
  }

  void threadsAgree() {
    ScanOptions one;
    one.threads = 1;
    const std::string alone = describe(scanDirectory(kRoot, one));
    for (unsigned threads : {2u, 3u, 8u}) {
      ScanOptions many;
      many.threads = threads;
      QCOMPARE(describe(scanDirectory(kRoot, many)), alone);
    }
  }

  // Each run arrives finished, as the result holds it, before the files of
  // the runs after it are read (one thread: the order is fixed).
  void runsArriveWhileTheRestAreRead() {
    ScanOptions options;
    options.threads = 1;
    size_t done = 0, total = 0;
    options.progress = [&](size_t d, size_t t) {
      done = d;
      total = t;
      return true;
    };
    std::vector<std::pair<std::string, size_t>> arrived;  // run, files read by then
    std::map<std::string, std::string> early;
    options.runDone = [&](const RunEntry& run) {
      arrived.emplace_back(run.name, done);
      early[run.name] = describe(run);
    };
    const ScanResult scan = scanDirectory(kRoot, options);
    QCOMPARE(arrived.size(), scan.runs.size());
    QCOMPARE(arrived.front().first, scan.runs.front().name);
    QCOMPARE(arrived.front().second, scan.runs.front().checkpoints.size());  // 6 of 211 read
    QVERIFY(arrived.front().second < total);
    for (size_t i = 1; i < arrived.size(); ++i) QVERIFY(arrived[i - 1].second <= arrived[i].second);
    for (const RunEntry& run : scan.runs) QCOMPARE(early[run.name], describe(run));
  }

  // What runDone takes out of a run (its checkpoints, moved: not copied) is
  // not in the result, which keeps the rest of the run in its place.
  void runDoneMayTakeTheRun() {
    std::map<std::string, std::vector<CheckpointEntry>> taken;
    ScanOptions options;
    options.runDone = [&](RunEntry& run) { taken[run.path] = std::move(run.checkpoints); };
    const ScanResult scan = scanDirectory(kRoot, options);
    const ScanResult whole = scanDirectory(kRoot);
    QCOMPARE(scan.runs.size(), whole.runs.size());
    for (size_t i = 0; i < scan.runs.size(); ++i) {
      QCOMPARE(scan.runs[i].name, whole.runs[i].name);
      QCOMPARE(scan.runs[i].path, whole.runs[i].path);
      QVERIFY2(scan.runs[i].checkpoints.empty(), scan.runs[i].name.c_str());
      QVERIFY(taken.at(whole.runs[i].path) == whole.runs[i].checkpoints);
    }
  }

  // Stopped by its progress callback: what was read is listed, a run none
  // of whose files were read is not (unless its metrics list it).
  void stopEarly() {
    ScanOptions options;
    options.threads = 1;
    options.progress = [](size_t done, size_t) { return done < 10; };
    const ScanResult scan = scanDirectory(kRoot, options);
    size_t listed = 0;
    for (const RunEntry& run : scan.runs) listed += run.checkpoints.size();
    QCOMPARE(listed, size_t(10));
    QCOMPARE(scan.runs.size(), size_t(3));  // seed0 (6), seed1 (4), seed11's metrics
  }

  // The same folder however it is spelled (a trailing slash, a detour
  // through its parent, relative to the working folder): the same runs,
  // each file named below the folder as expected.json names it.
  void rootSpellings() {
    const json expected = ckpt::test::readJsonFile(kOut + "/expected.json");
    const std::string relative = fs::relative(kRoot).string();
    for (const std::string& root :
         {kRoot + "/", kRoot + "/../runs", kRoot + "/./", relative, "./" + relative}) {
      const ScanResult scan = scanDirectory(root);
      QCOMPARE(scan.runs.size(), expected["order"].size());
      for (const RunEntry& run : scan.runs) {
        const json& rows = expected["runs"][run.name];
        QCOMPARE(run.checkpoints.size(), rows.size());
        for (size_t k = 0; k < rows.size(); ++k)
          QCOMPARE(run.checkpoints[k].file, run.name + "/" + rows[k][0].get<std::string>());
      }
    }
  }

  // Links: a file's is listed as the file it leads to; a folder's is not
  // walked (it may lead anywhere: here, to a run listed already); one that
  // leads nowhere is nothing.
  void links() {
    QTemporaryDir tmp;
    const fs::path root = fs::path(tmp.path().toStdString()) / "runs";
    const fs::path seed3 = fs::path(kRoot) / "lr1e-3_seed3";
    fs::create_directories(root / "a");
    fs::copy_file(seed3 / "step_100.pt", root / "a" / "step_100.pt");
    fs::create_symlink(seed3 / "step_200.pt", root / "a" / "step_200.pt");
    fs::create_symlink(root / "a" / "gone.pt", root / "a" / "step_300.pt");
    fs::create_directory_symlink(seed3, root / "b");
    fs::create_symlink(root / "nowhere", root / "c");
    const ScanResult scan = scanDirectory(root.string());
    QCOMPARE(scan.runs.size(), size_t(1));
    QCOMPARE(scan.runs[0].name, std::string("a"));
    std::vector<std::string> files;
    for (const CheckpointEntry& c : scan.runs[0].checkpoints) {
      QVERIFY2(c.error.empty(), c.error.c_str());
      files.push_back(c.file + " " + std::to_string(c.step.value_or(-1)));
    }
    QCOMPARE(files, (std::vector<std::string>{"a/step_100.pt 100", "a/step_200.pt 200"}));
  }
};

QTEST_GUILESS_MAIN(TestManyRuns)
#include "tst_many_runs.moc"
