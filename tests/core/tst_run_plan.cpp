// The rules of "never lose a run" without LibTorch (ckpt/index/run_plan.h):
// what a new run would clash with, the trash, a killed writer's temporary
// files, metrics cut back for a resume in place, lineage, where a resume
// goes and which intact checkpoint `resume DIR` takes. Checked against bytes
// on disk and the Python-written fixtures.
#include <QtTest>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "ckpt/index/metrics.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/scanner.h"
#include "run_process.h"

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

const std::string kRuns = CKPT_FIXTURE_DIR "/runs";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Flips one bit well inside the payload of the first tensor record.
void flipTensorByte(const fs::path& p) {
  std::string bytes = slurp(p);
  const size_t at = bytes.find("data/0");
  QVERIFY(at != std::string::npos);
  const size_t dataStart = ((at + 6 + 4 + 63) / 64) * 64 + 64;
  QVERIFY(dataStart < bytes.size());
  bytes[dataStart] = char(bytes[dataStart] ^ 0x01);
  spit(p, bytes);
}

std::vector<std::string> namesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

class TestRunPlan : public QObject {
  Q_OBJECT
  QTemporaryDir m_tmp;

  fs::path dir(const std::string& name) const {
    const fs::path p = fs::path(m_tmp.path().toStdString()) / name;
    fs::create_directories(p);
    return p;
  }

 private slots:
  void existingFilesAndTheRefusal() {
    const fs::path d = dir("clash");
    for (const char* f : {"tiny_step2.pt", "tiny_final.pt", "tiny_final_step4.pt",
                          "best_checkpoint.pt", "metrics.jsonl", "other_step2.pt", "tinyx_step2.pt",
                          "tiny_stepx.pt", "notes.txt", "lineage.json"})
      spit(d / f, "x");
    QCOMPARE(existingRunFiles(d.string(), "tiny"),
             (std::vector<std::string>{"best_checkpoint.pt", "lineage.json", "metrics.jsonl",
                                       "tiny_final.pt", "tiny_final_step4.pt", "tiny_step2.pt"}));
    // A run name with regex characters is taken literally.
    spit(d / "a.b+_step1.pt", "x");
    QCOMPARE(existingRunFiles(d.string(), "a.b+").size(), size_t(4));  // + best, lineage, metrics
    QVERIFY(existingRunFiles((d / "nothere").string(), "tiny").empty());
    const std::string m = clashMessage(d.string(), "tiny", existingRunFiles(d.string(), "tiny"));
    QVERIFY2(m.find(d.string() + " already holds run 'tiny' (best_checkpoint.pt, lineage.json, "
                                 "metrics.jsonl and 3 more)") == 0,
             m.c_str());
    QVERIFY(m.find("ckptscope-cli resume " + d.string()) != std::string::npos);
    QVERIFY(m.find("--out") != std::string::npos && m.find("--overwrite") != std::string::npos);
    QVERIFY(m.find('\n') == std::string::npos);
  }

  void trashMovesNeverDeletes() {
    const fs::path d = dir("trash");
    spit(d / "a.pt", "first file");
    spit(d / "metrics.jsonl", "{\"step\": 1}\n");
    spit(d / "keep.pt", "stays");
    const std::string folder = moveToTrash(d.string(), {(d / "a.pt").string(), "metrics.jsonl"});
    QVERIFY2(std::regex_match(fs::path(folder).filename().string(), std::regex(R"(\d{8}-\d{6})")),
             folder.c_str());
    QCOMPARE(fs::path(folder).parent_path(), d / ".trash");
    QCOMPARE(slurp(fs::path(folder) / "a.pt"), std::string("first file"));
    QCOMPARE(slurp(fs::path(folder) / "metrics.jsonl"), std::string("{\"step\": 1}\n"));
    QCOMPARE(namesIn(d), (std::vector<std::string>{".trash", "keep.pt"}));
    // A second move in the same second gets its own folder.
    spit(d / "a.pt", "second file");
    const std::string again = moveToTrash(d.string(), {"a.pt"});
    QVERIFY(again != folder);
    QCOMPARE(slurp(fs::path(again) / "a.pt"), std::string("second file"));
    QCOMPARE(slurp(fs::path(folder) / "a.pt"), std::string("first file"));
    // A file that is not there: the error names it.
    try {
      moveToTrash(d.string(), {"gone.pt"});
      QFAIL("expected an error");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find((d / "gone.pt").string() + ": cannot move") == 0,
               e.what());
    }
  }

  void staleTempFiles() {
    QVERIFY(isTempFileName(".tiny_step2.pt.tmp-1234-0badf00d"));
    QVERIFY(isTempFileName(".metrics.jsonl.tmp-7-00000000"));
    QVERIFY(!isTempFileName("tiny_step2.pt"));
    QVERIFY(!isTempFileName(".tiny_step2.pt.tmp-1234-xyz"));
    QVERIFY(!isTempFileName("tiny_step2.pt.tmp-1234-0badf00d"));  // not hidden: not ours

    // A process that has ended: its pid is free.
    QProcess q;
    q.start("sh", {"-c", "exit 0"});
    QVERIFY(q.waitForStarted());
    const qint64 gone = q.processId();
    QVERIFY(q.waitForFinished());

    const fs::path d = dir("temps");
    const std::string mine = ".a.pt.tmp-" + std::to_string(::getpid()) + "-0000abcd";
    const std::string init = ".b.pt.tmp-1-0000abcd";  // pid 1 runs
    const std::string stale = ".c.pt.tmp-" + std::to_string(gone) + "-deadbeef";
    const std::string odd = ".d.pt.tmp-x-deadbeef";
    for (const std::string& f : {mine, init, stale, odd}) spit(d / f, "partial");
    fs::copy_file(kRuns + "/tiny/tiny_step100.pt", d / ".tiny_step100.pt.tmp-1-0badf00d");
    fs::copy_file(kRuns + "/tiny/tiny_step100.pt", d / "tiny_step100.pt");
    const auto removed = removeStaleTempFiles(d.string());
    QCOMPARE(removed, std::vector<std::string>{stale});
    QVERIFY(!fs::exists(d / stale));
    QVERIFY(fs::exists(d / mine) && fs::exists(d / init) && fs::exists(d / odd));

    // The browser never lists a writer's temporary file, whatever it holds.
    const RunEntry run = scanRunDirectory(d.string(), d.string());
    QCOMPARE(run.checkpoints.size(), size_t(1));
    QCOMPARE(run.checkpoints[0].file, std::string("tiny_step100.pt"));
    const ScanResult all = scanDirectory(d.string());
    QCOMPARE(all.runs.size(), size_t(1));
    QCOMPARE(all.runs[0].checkpoints.size(), size_t(1));
  }

  void metricsCutBack() {
    const fs::path d = dir("metrics");
    QCOMPARE(trimMetrics(d.string(), 3).kept, size_t(0));  // no file: nothing to do
    QVERIFY(!fs::exists(d / "metrics.jsonl"));
    const std::string l1 = R"({"step":1,"loss":3.5})", l2a = R"({"step":2,"loss":3.25})",
                      l3a = R"({"step":3,"loss":3.0})", l2b = R"({"step":2,"loss":3.2})",
                      l3b = R"({"step":3,"loss":2.9})", l4 = R"({"step":4,"loss":2.5})",
                      torn = "{\"step\":5,\"lo";  // cut by a kill mid-line
    spit(d / "metrics.jsonl",
         l1 + "\n" + l2a + "\n" + l3a + "\n" + l2b + "\n" + l3b + "\n" + l4 + "\n" + torn);
    spit(d / "metrics.superseded.jsonl", "{\"step\":9}\n");
    const MetricsTrim t = trimMetrics(d.string(), 3);
    QCOMPARE(t.kept, size_t(3));
    QCOMPARE(t.superseded, size_t(4));
    // The last line of each step up to 3, in file order; the rest appended.
    QCOMPARE(slurp(d / "metrics.jsonl"), l1 + "\n" + l2b + "\n" + l3b + "\n");
    QCOMPARE(slurp(d / "metrics.superseded.jsonl"),
             "{\"step\":9}\n" + l2a + "\n" + l3a + "\n" + l4 + "\n" + torn + "\n");
    // Again: nothing to cut, nothing rewritten, no temporary file left.
    const MetricsTrim again = trimMetrics(d.string(), 3);
    QCOMPARE(again.superseded, size_t(0));
    QCOMPARE(namesIn(d), (std::vector<std::string>{"metrics.jsonl", "metrics.superseded.jsonl"}));
    QCOMPARE(trimMetrics(d.string(), 0).kept, size_t(0));
    QCOMPARE(slurp(d / "metrics.jsonl"), std::string());
  }

  // A job logged steps 1-6, was restarted from step 2 and died at 4: the
  // checkpoint at step 6 is the first job's, so its history is 1-6 of the
  // first job and the restart is superseded; step 4's is the second job's.
  // What stays is what Curves reads (collectRunMetrics), in step order.
  void metricsCutBackAfterARestart() {
    const auto line = [](int step, double loss) {
      return "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(loss) + "}\n";
    };
    std::string first, second;
    for (int s = 1; s <= 6; ++s) first += line(s, 10 - s);
    for (int s = 3; s <= 4; ++s) second += line(s, 20 - s);
    for (const auto& [step, kept, superseded] :
         {std::tuple{6, first, second},
          std::tuple{4, line(1, 9) + line(2, 8) + second,
                     line(3, 7) + line(4, 6) + line(5, 5) + line(6, 4)},
          std::tuple{5, first.substr(0, first.size() - line(6, 4).size()), line(6, 4) + second}}) {
      const fs::path d = dir("metrics-restart-" + std::to_string(step));
      spit(d / "metrics.jsonl", first + second);
      const MetricsTrim t = trimMetrics(d.string(), step);
      QCOMPARE(slurp(d / "metrics.jsonl"), kept);
      QCOMPARE(slurp(d / "metrics.superseded.jsonl"), superseded);
      QCOMPARE(t.kept + t.superseded, size_t(8));
      // Curves draws the same points from the cut file.
      RunEntry run;
      run.name = "tiny";
      run.path = d.string();
      const RunMetrics metrics = collectRunMetrics(run);
      const MetricSeries* loss = metrics.find("loss");
      QVERIFY(loss);
      QVERIFY(!loss->restarted());
      std::string drawn;
      for (const MetricPoint& p : loss->points) drawn += line(int(p.step), p.value);
      QCOMPARE(drawn, kept);
    }
  }

  void lineageRoundTrip() {
    const fs::path d = dir("lineage");
    QVERIFY(!readLineage(d.string()));
    writeLineage(d.string(), Lineage{"tiny@2", "tiny", "/x/tiny", "/x/tiny/tiny_step2.pt", 2,
                                     "2026-01-02T03:04:05Z"});
    const auto l = readLineage(d.string());
    QVERIFY(l);
    QCOMPARE(l->run, std::string("tiny@2"));
    QCOMPARE(l->parentRun, std::string("tiny"));
    QCOMPARE(l->parentDir, std::string("/x/tiny"));
    QCOMPARE(l->parentCheckpoint, std::string("/x/tiny/tiny_step2.pt"));
    QCOMPARE(l->parentStep, int64_t(2));
    QCOMPARE(l->created, std::string("2026-01-02T03:04:05Z"));
    spit(d / "lineage.json", R"({"run": "x"})");
    try {
      readLineage(d.string());
      QFAIL("expected an error");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find((d / "lineage.json").string()) == 0, e.what());
    }
  }

  // Folder and run names are bytes. A branch of a run in a folder whose
  // name is not UTF-8 (Latin-1 "exp\xe9", a stray 0xff): lineage.json is
  // written (nlohmann's dump() threw), each byte as \udcXY; Python's
  // json.load + surrogateescape gives the bytes back, so does readLineage,
  // and the branch's curve starts with the parent's history there.
  void lineageOfNamesThatAreNotUtf8() {
    const fs::path root = dir(std::string("latin\xe9"));
    const fs::path a = root / "tiny\xff", b = root / "tiny\xff@2";
    fs::create_directories(a);
    fs::create_directories(b);
    spit(a / "metrics.jsonl", "{\"step\":1,\"loss\":4.0}\n{\"step\":2,\"loss\":3.5}\n");
    spit(b / "metrics.jsonl", "{\"step\":3,\"loss\":2.75}\n");
    const Lineage written{
        "tiny\xff@2",          "tiny\xff", a.string(), (a / "tiny\xff_step2.pt").string(), 2,
        "2026-01-02T03:04:05Z"};
    writeLineage(b.string(), written);
    const auto l = readLineage(b.string());
    QVERIFY(l);
    QCOMPARE(l->run, written.run);
    QCOMPARE(l->parentRun, written.parentRun);
    QCOMPARE(l->parentDir, written.parentDir);
    QCOMPARE(l->parentCheckpoint, written.parentCheckpoint);
    // Python reads the file: every string's bytes, by surrogateescape.
    const ckpt::test::ProcessResult py = ckpt::test::runProcess(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {"-c",
         "import json,sys\n"
         "d = json.load(open(bytes.fromhex(sys.argv[1]), encoding='utf-8'))\n"
         "for k in ('run', 'parent_run', 'parent_dir', 'parent_checkpoint'):\n"
         "    sys.stdout.buffer.write(d[k].encode('utf-8', 'surrogateescape') + b'\\n')\n",
         // The path's bytes as hex: a QString argument would not carry 0xe9, 0xff.
         QByteArray::fromStdString((b / "lineage.json").string()).toHex()});
    QVERIFY2(py.exitCode == 0, py.err.constData());
    QCOMPARE(py.out.toStdString(), written.run + "\n" + written.parentRun + "\n" +
                                       written.parentDir + "\n" + written.parentCheckpoint + "\n");
    RunEntry run;
    run.name = b.filename().string();
    run.path = b.string();
    const RunMetrics m = collectRunMetrics(run);
    const MetricSeries* loss = m.find("loss");
    QVERIFY(loss);
    std::vector<std::pair<int64_t, double>> got;
    for (const MetricPoint& p : loss->points) got.emplace_back(p.step, p.value);
    QCOMPARE(got, (std::vector<std::pair<int64_t, double>>{{1, 4.0}, {2, 3.5}, {3, 2.75}}));
    fs::remove_all(root);  // QTemporaryDir names files by QString: it cannot remove these
  }

  // A branch's curve: the parent's history up to the branch step, then its own.
  void branchCurvesStartWithTheParent() {
    const fs::path a = dir("curves/tiny"), b = dir("curves/tiny@2"), c = dir("curves/tiny@2@3");
    spit(a / "metrics.jsonl",
         "{\"step\":1,\"loss\":4.0}\n{\"step\":2,\"loss\":3.5}\n{\"step\":3,\"loss\":3.0}\n");
    spit(b / "metrics.jsonl", "{\"step\":3,\"loss\":2.75}\n{\"step\":4,\"loss\":2.5}\n");
    spit(c / "metrics.jsonl", "{\"step\":4,\"loss\":2.25}\n");
    writeLineage(b.string(),
                 Lineage{"tiny@2", "tiny", a.string(), (a / "tiny_step2.pt").string(), 2, {}});
    writeLineage(
        c.string(),
        Lineage{"tiny@2@3", "tiny@2", b.string(), (b / "tiny@2_step3.pt").string(), 3, {}});
    auto loss = [](const fs::path& d) {
      RunEntry run;
      run.name = d.filename().string();
      run.path = d.string();
      const RunMetrics m = collectRunMetrics(run);
      std::vector<std::pair<int64_t, double>> out;
      if (const MetricSeries* s = m.find("loss"))
        for (const MetricPoint& p : s->points) out.emplace_back(p.step, p.value);
      return out;
    };
    using Curve = std::vector<std::pair<int64_t, double>>;
    QCOMPARE(loss(a), (Curve{{1, 4.0}, {2, 3.5}, {3, 3.0}}));
    QCOMPARE(loss(b), (Curve{{1, 4.0}, {2, 3.5}, {3, 2.75}, {4, 2.5}}));
    QCOMPARE(loss(c), (Curve{{1, 4.0}, {2, 3.5}, {3, 2.75}, {4, 2.25}}));
  }

  void whereAResumeGoes() {
    const fs::path root = dir("plan"), d = dir("plan/tiny");
    for (const char* f : {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt", "weights.bin",
                          "broken_step400.pt"})
      fs::copy_file(kRuns + "/tiny/" + f, d / f);
    ResumePlan p = planResume((d / "tiny_step100.pt").string());
    QCOMPARE(p.checkpoint, (d / "tiny_step100.pt").string());
    QCOMPARE(p.step, int64_t(100));
    QCOMPARE(p.runName, std::string("tiny"));
    QCOMPARE(p.runDir, d.string());
    QVERIFY(!p.isNewest);
    // Newest first; weights.bin (a bare state dict, no step) is not the run's.
    QCOMPARE(p.laterFiles, (std::vector<std::string>{(d / "broken_step400.pt").string(),
                                                     (d / "tiny_final.pt").string(),
                                                     (d / "tiny_step200.pt").string()}));
    QCOMPARE(p.branchRunName, std::string("tiny@100"));
    QCOMPARE(p.branchDir, (root / "tiny@100").string());
    // That branch exists already: the next name.
    fs::create_directories(root / "tiny@100");
    spit(root / "tiny@100" / "metrics.jsonl", "{}\n");
    p = planResume((d / "tiny_step100.pt").string());
    QCOMPARE(p.branchRunName, std::string("tiny@100-2"));
    QCOMPARE(p.branchDir, (root / "tiny@100-2").string());

    // The newest: continues in place, nothing later.
    fs::remove(d / "broken_step400.pt");
    p = planResume((d / "tiny_final.pt").string());
    QCOMPARE(p.step, int64_t(300));
    QVERIFY(p.isNewest);
    QVERIFY(p.laterFiles.empty() && p.branchDir.empty());

    // A hand-written loop's latest_checkpoint.pt: no run name, the directory's.
    const fs::path h = dir("plan/handloop");
    fs::copy_file(kRuns + "/handloop/latest_checkpoint.pt", h / "latest_checkpoint.pt");
    p = planResume((h / "latest_checkpoint.pt").string());
    QCOMPARE(p.runName, std::string("handloop"));
    QCOMPARE(p.step, int64_t(120));
    QVERIFY(p.isNewest);

    // Unreadable: the error names the file as given.
    fs::copy_file(kRuns + "/tiny/broken_step400.pt", d / "broken_step400.pt");
    try {
      planResume((d / "broken_step400.pt").string());
      QFAIL("expected an error");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find((d / "broken_step400.pt").string() + ": truncated") == 0,
               e.what());
    }
  }

  void newestIntact() {
    const fs::path d = dir("intact/tiny");
    for (const char* f :
         {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt", "broken_step400.pt"})
      fs::copy_file(kRuns + "/tiny/" + f, d / f);
    IntactCheckpoint pick = newestIntactCheckpoint(d.string());
    QCOMPARE(pick.checkpoint, (d / "tiny_final.pt").string());
    QCOMPARE(pick.skipped.size(), size_t(1));
    QCOMPARE(pick.skipped[0].file, std::string("broken_step400.pt"));
    QVERIFY2(pick.skipped[0].reason.rfind("truncated", 0) == 0, pick.skipped[0].reason.c_str());

    // A flipped byte inside a tensor record: the CRC says so, the next one down.
    flipTensorByte(d / "tiny_final.pt");
    pick = newestIntactCheckpoint(d.string());
    QCOMPARE(pick.checkpoint, (d / "tiny_step200.pt").string());
    QCOMPARE(pick.skipped.size(), size_t(2));
    QCOMPARE(pick.skipped[1].file, std::string("tiny_final.pt"));
    QVERIFY2(pick.skipped[1].reason.find("CRC mismatch") != std::string::npos,
             pick.skipped[1].reason.c_str());

    // A damaged end-of-run file has no readable step: still the newest, and named.
    const fs::path t = dir("intact/truncated-final");
    fs::copy_file(kRuns + "/tiny/tiny_step100.pt", t / "tiny_step100.pt");
    fs::copy_file(kRuns + "/tiny/tiny_step200.pt", t / "tiny_step200.pt");
    const std::string whole = slurp(kRuns + "/tiny/tiny_final.pt");
    spit(t / "tiny_final.pt", whole.substr(0, whole.size() / 2));
    pick = newestIntactCheckpoint(t.string());
    QCOMPARE(pick.checkpoint, (t / "tiny_step200.pt").string());
    QCOMPARE(pick.skipped.size(), size_t(1));
    QCOMPARE(pick.skipped[0].file, std::string("tiny_final.pt"));
    QVERIFY2(pick.skipped[0].reason.rfind("truncated", 0) == 0, pick.skipped[0].reason.c_str());
    // ... and later than any step for planResume: a resume of step 200 branches.
    const ResumePlan p = planResume((t / "tiny_step200.pt").string());
    QVERIFY(!p.isNewest);
    QCOMPARE(p.laterFiles, std::vector<std::string>{(t / "tiny_final.pt").string()});

    // latest_checkpoint.pt style: the newest of a hand-written loop.
    const fs::path h = dir("intact/handloop");
    for (const char* f :
         {"checkpoint_50.pt", "checkpoint_100.pt", "best_checkpoint.pt", "latest_checkpoint.pt"})
      fs::copy_file(kRuns + "/handloop/" + f, h / f);
    pick = newestIntactCheckpoint(h.string());
    QCOMPARE(pick.checkpoint, (h / "latest_checkpoint.pt").string());
    QVERIFY(pick.skipped.empty());

    // None intact; nothing at all.
    const fs::path b = dir("intact/broken");
    fs::copy_file(kRuns + "/tiny/broken_step400.pt", b / "broken_step400.pt");
    pick = newestIntactCheckpoint(b.string());
    QVERIFY(pick.checkpoint.empty());
    QCOMPARE(pick.skipped.size(), size_t(1));
    const fs::path e = dir("intact/empty");
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, newestIntactCheckpoint(e.string()));
  }
};

QTEST_GUILESS_MAIN(TestRunPlan)
#include "tst_run_plan.moc"
