// The trainer end to end on the CPU: checkpoints that Python loads back (its
// reference model and torch.optim.AdamW), exact resume, stop and resume,
// fine-tune lineage, checkpoint policies, and every bad input a user meets.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "../core/json_compare.h"
#include "../core/run_outputs.h"
#include "../core/run_process.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/train/trainer.h"
#include "run_files.h"

using namespace ckpt;
using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

using ckpt::test::kText;

struct Python {
  int exitCode = -1;
  QString err;
};

Python python(const QStringList& args) {
  const auto r = ckpt::test::runProcess(
      QStringLiteral(CKPT_TORCH_PYTHON),
      QStringList{QStringLiteral(CKPT_SOURCE_DIR "/tests/python/train_interop.py")} + args);
  return {r.exitCode, QString::fromUtf8(r.err)};
}

json readJson(const std::string& path) {
  return ckpt::test::readJsonFile(path);
}

using ckpt::test::metricsLines;
using ckpt::test::weightBytes;

}  // namespace

class TestTrainer : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  std::string m_data;

  std::string dir(const std::string& name) const {
    return (fs::path(m_tmp.path().toStdString()) / name).string();
  }

  RunConfig tiny(const std::string& out, int64_t steps) const {
    RunConfig c = RunConfig::fromJson(json::parse(R"({
      "model": {"vocab_size": 256, "d_model": 32, "n_layers": 2, "n_heads": 4, "ffn_hidden_size": 80,
                "max_seq_len": 32},
      "training": {"run_name": "tiny", "batch_size": 4, "micro_batch_size": 2, "seq_len": 16,
                   "learning_rate": 0.003, "warmup_steps": 2, "eval_every": 2, "eval_batches": 2,
                   "save_every": 2, "log_every": 1, "seed": 7, "mixed_precision": "fp32", "device": "cpu"},
      "data": {"tokenizer": "bytes", "val_fraction": 0.1}
    })"));
    c.training.outputDir = out;
    c.training.maxSteps = steps;
    c.data.path = m_data;
    return c;
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_data = dir("corpus.txt");
    std::ofstream out(m_data);
    for (int i = 0; i < 12; ++i) out << "Chapter " << i << ". " << kText;
  }

  void trainWritesWhatPythonLoads() {
    const std::string out = dir("run1");
    Trainer trainer = Trainer::newRun(tiny(out, 4));
    std::vector<StepReport> reports;
    const RunResult r = trainer.run([&](const StepReport& s) {
      reports.push_back(s);
      return true;
    });
    QCOMPARE(int(r.outcome), int(RunOutcome::Finished));
    QCOMPARE(r.step, int64_t(4));
    QCOMPARE(reports.size(), size_t(4));
    QVERIFY(reports[1].valLoss && reports[3].valLoss);
    QVERIFY(fs::exists(out + "/tiny_step2.pt"));
    QVERIFY(fs::exists(out + "/tiny_final.pt"));
    QVERIFY(fs::exists(out + "/best_checkpoint.pt"));
    QCOMPARE(r.lastCheckpoint, out + "/tiny_final.pt");
    const auto lines = metricsLines(out);
    QCOMPARE(lines.size(), size_t(4));
    for (size_t i = 0; i < lines.size(); ++i) {
      QCOMPARE(lines[i]["step"].get<int64_t>(), int64_t(i + 1));
      QCOMPARE(lines[i]["loss"].get<double>(), reports[i].loss);
      QVERIFY(lines[i].contains("lr") && lines[i].contains("tokens") &&
              lines[i].contains("tokens_per_sec") && lines[i].contains("wall_time"));
    }
    // The loss falls on this repetitive text.
    QVERIFY(reports.back().loss < reports.front().loss);

    // Python: layout, tie, metadata, strict load, AdamW load + step.
    const std::string found = dir("check1.json");
    const Python check = python(
        {"check", QString::fromStdString(out + "/tiny_final.pt"), QString::fromStdString(found)});
    QVERIFY2(check.exitCode == 0, qPrintable(check.err));
    const json f = readJson(found);
    QCOMPARE(f["step"].get<int64_t>(), int64_t(4));
    QCOMPARE(f["optimizer_state_entries"].get<int64_t>(), f["param_count"].get<int64_t>());

    // Our score equals the reference model's on the same windows.
    const ScoreResult ours = scoreCheckpoint(out + "/tiny_final.pt", m_data, 16, {}, "cpu");
    const Python sc =
        python({"score", QString::fromStdString(out + "/tiny_final.pt"),
                QString::fromStdString(m_data), "16", QString::fromStdString(dir("score1.json"))});
    QVERIFY2(sc.exitCode == 0, qPrintable(sc.err));
    const json theirs = readJson(dir("score1.json"));
    QCOMPARE(ours.windows, theirs["windows"].get<int64_t>());
    QCOMPARE(ours.tokens, theirs["tokens"].get<int64_t>());
    QVERIFY2(
        std::fabs(ours.loss - theirs["loss"].get<double>()) < 1e-5,
        qPrintable(
            QString("ours %1, reference %2").arg(ours.loss).arg(theirs["loss"].get<double>())));
  }

  void exactResume() {
    // 6 steps straight against 3 steps, resume, 3 more.
    const std::string a = dir("straight"), b = dir("halves");
    Trainer::newRun(tiny(a, 6)).run();
    Trainer::newRun(tiny(b, 3)).run();
    const std::string finalAt3 = ckpt::test::fileContents(b + "/tiny_final.pt");
    Trainer resumed = Trainer::resume(b + "/tiny_final.pt", 6, {}, "cpu");
    QCOMPARE(resumed.startStep(), int64_t(3));
    QVERIFY2(resumed.notes().find("fresh optimizer") == std::string::npos, resumed.notes().c_str());
    resumed.run();
    const auto la = metricsLines(a), lb = metricsLines(b);
    QCOMPARE(la.size(), size_t(6));
    QCOMPARE(lb.size(), size_t(6));
    for (size_t i = 0; i < 6; ++i)
      QCOMPARE(lb[i]["loss"].get<double>(), la[i]["loss"].get<double>());
    QVERIFY(weightBytes(a + "/tiny_final.pt") == weightBytes(b + "/tiny_final.pt"));
    // The end of the first 3 steps was not replaced: it is kept beside the new final.
    QCOMPARE(ckpt::test::fileContents(b + "/tiny_final_step3.pt"), finalAt3);
  }

  void stopAndResume() {
    const std::string out = dir("stopped");
    Trainer trainer = Trainer::newRun(tiny(out, 6));
    const RunResult r = trainer.run([](const StepReport& s) { return s.step < 3; });
    QCOMPARE(int(r.outcome), int(RunOutcome::Stopped));
    QCOMPARE(r.step, int64_t(3));
    QCOMPARE(r.lastCheckpoint, out + "/tiny_step3.pt");
    QVERIFY(fs::exists(r.lastCheckpoint));
    QVERIFY(!fs::exists(out + "/tiny_final.pt"));
    Trainer again = Trainer::resume(r.lastCheckpoint, {}, {}, "cpu");
    QCOMPARE(again.startStep(), int64_t(3));
    const RunResult done = again.run();
    QCOMPARE(int(done.outcome), int(RunOutcome::Finished));
    QCOMPARE(done.step, int64_t(6));
    // Stopping changed nothing: the same weights as a run never stopped.
    const std::string straight = dir("straight");
    QVERIFY(weightBytes(straight + "/tiny_final.pt") == weightBytes(out + "/tiny_final.pt"));
  }

  // A stop on a step that saves, evaluates and improves (step 2 here) writes
  // tiny_step2.pt and then best_checkpoint.pt: the run still reports the
  // step's own checkpoint as the one to resume from.
  void stopOnASaveAndBestStep() {
    const std::string out = dir("stopped-at-best");
    Trainer trainer = Trainer::newRun(tiny(out, 6));
    std::vector<StepReport> reports;
    const RunResult r = trainer.run([&](const StepReport& s) {
      reports.push_back(s);
      return s.step < 2;
    });
    QCOMPARE(int(r.outcome), int(RunOutcome::Stopped));
    QCOMPARE(r.step, int64_t(2));
    QVERIFY(reports.back().valLoss);
    QVERIFY(fs::exists(out + "/best_checkpoint.pt"));
    QCOMPARE(r.lastCheckpoint, out + "/tiny_step2.pt");
    QCOMPARE(CheckpointView(*CheckpointFile::open(r.lastCheckpoint)).step(),
             std::optional<int64_t>(2));
  }

  void finetuneLineage() {
    const std::string parent = dir("straight") + "/tiny_final.pt";
    FinetuneOptions o;
    o.dataPath = m_data;
    o.maxSteps = 2;
    o.device = "cpu";
    Trainer ft = Trainer::finetune(parent, o);
    QCOMPARE(ft.startStep(), int64_t(0));
    QCOMPARE(ft.config().training.runName, std::string("tiny-sft"));
    QCOMPARE(ft.config().training.learningRate, 1e-5);
    const RunResult r = ft.run();
    const std::string out = (fs::path(m_tmp.path().toStdString()) / "tiny-sft").string();
    QCOMPARE(r.lastCheckpoint, out + "/tiny-sft_final.pt");
    const auto f = CheckpointFile::open(r.lastCheckpoint);
    const CheckpointView view(*f);
    QCOMPARE(view.step(), std::optional<int64_t>(2));
    QCOMPARE(view.stage(), std::optional<std::string>("sft"));
    QCOMPARE(view.run(), std::optional<std::string>("tiny-sft"));
    const Value* lineage = view.lookup("parent");
    QVERIFY(lineage && lineage->isStr());
    QCOMPARE(lineage->str(), fs::absolute(parent).lexically_normal().string());
  }

  // A second fine-tune into the same stage directory refuses too; with
  // overwrite it only says what it will move, and moves nothing yet.
  void finetuneRefusesAnExistingStage() {
    const std::string stage = dir("tiny-sft");
    const auto before = ckpt::test::fileDigests(stage);
    QVERIFY(!before.empty());
    FinetuneOptions o;
    o.dataPath = m_data;
    o.maxSteps = 2;
    o.device = "cpu";
    std::string error;
    try {
      Trainer::finetune(dir("straight") + "/tiny_final.pt", o);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    QVERIFY2(error.rfind(stage + " already holds run 'tiny-sft'", 0) == 0, error.c_str());
    o.overwrite = true;
    Trainer again = Trainer::finetune(dir("straight") + "/tiny_final.pt", o);
    QVERIFY2(again.notes().find("--overwrite") != std::string::npos, again.notes().c_str());
    QVERIFY(before == ckpt::test::fileDigests(stage));
  }

  // A second new run into a directory of the run refuses before touching
  // anything; --overwrite moves the old files to .trash/ when it starts.
  void newRunRefusesADirectoryOfTheRun() {
    const std::string out = dir("straight");
    const auto before = ckpt::test::fileDigests(out);
    std::string error;
    try {
      Trainer::newRun(tiny(out, 6));
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    QVERIFY2(error.rfind(out + " already holds run 'tiny' (best_checkpoint.pt, metrics.jsonl, "
                               "tiny_final.pt and 2 more)",
                         0) == 0,
             error.c_str());
    QVERIFY(before == ckpt::test::fileDigests(out));
    // Another run name in the same directory still clashes on the shared files.
    RunConfig other = tiny(out, 6);
    other.training.runName = "other";
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, Trainer::newRun(other));
    QVERIFY(before == ckpt::test::fileDigests(out));
  }

  // Resuming a middle checkpoint: a new run tiny@2 beside the parent, whose
  // files stay byte-identical; the branch's end equals a straight run from
  // that checkpoint.
  void resumeFromTheMiddleBranches() {
    const std::string parent = dir("straight");
    const auto before = ckpt::test::fileDigests(parent);
    const auto parentLines = metricsLines(parent);
    Trainer branch = Trainer::resume(parent + "/tiny_step2.pt", {}, {}, "cpu");
    const std::string branchDir = dir("tiny@2");
    QCOMPARE(branch.startStep(), int64_t(2));
    QCOMPARE(branch.config().training.runName, std::string("tiny@2"));
    QCOMPARE(branch.config().training.outputDir, branchDir);
    QVERIFY2(branch.notes().find("not the newest checkpoint of run 'tiny'") != std::string::npos,
             branch.notes().c_str());
    QVERIFY(!fs::exists(branchDir + "/lineage.json"));  // nothing is written before run()
    QVERIFY(!fs::exists(branchDir + "/metrics.jsonl"));
    const RunResult r = branch.run();
    QCOMPARE(r.lastCheckpoint, branchDir + "/tiny@2_final.pt");
    QVERIFY(before == ckpt::test::fileDigests(parent));

    // The straight run from the same checkpoint: a copy resumed where it is the newest.
    const std::string copy = dir("copy-of-step2");
    fs::create_directories(copy);
    fs::copy_file(parent + "/tiny_step2.pt", copy + "/tiny_step2.pt");
    Trainer straight = Trainer::resume(copy + "/tiny_step2.pt", {}, {}, "cpu");
    QCOMPARE(straight.config().training.outputDir, copy);
    straight.run();
    QVERIFY(weightBytes(copy + "/tiny_final.pt") == weightBytes(r.lastCheckpoint));
    QVERIFY(weightBytes(parent + "/tiny_final.pt") == weightBytes(r.lastCheckpoint));

    // Its own history from step 3 on, equal to the parent's there.
    const auto lines = metricsLines(branchDir);
    QCOMPARE(lines.size(), size_t(4));
    for (size_t i = 0; i < lines.size(); ++i) {
      QCOMPARE(lines[i]["step"].get<int64_t>(), int64_t(i + 3));
      QCOMPARE(lines[i]["loss"].get<double>(), parentLines[i + 2]["loss"].get<double>());
    }
    // Lineage in the directory and in every checkpoint.
    const auto lineage = readLineage(branchDir);
    QVERIFY(lineage);
    QCOMPARE(lineage->run, std::string("tiny@2"));
    QCOMPARE(lineage->parentRun, std::string("tiny"));
    QCOMPARE(lineage->parentDir, parent);
    QCOMPARE(lineage->parentCheckpoint, parent + "/tiny_step2.pt");
    QCOMPARE(lineage->parentStep, int64_t(2));
    int checked = 0;
    for (const auto& e : fs::directory_iterator(branchDir)) {
      if (e.path().extension() != ".pt") continue;
      const auto f = CheckpointFile::open(e.path().string());
      const CheckpointView view(*f);
      QCOMPARE(view.run(), std::optional<std::string>("tiny@2"));
      QCOMPARE(view.lookup("parent")->str(), parent + "/tiny_step2.pt");
      QCOMPARE(view.lookup("parent_step")->number(), 2.0);
      ++checked;
    }
    QVERIFY(checked >= 2);  // tiny@2_step4.pt, tiny@2_final.pt (and best)
    const Python check = python({"check", QString::fromStdString(r.lastCheckpoint),
                                 QString::fromStdString(dir("check-branch.json"))});
    QVERIFY2(check.exitCode == 0, qPrintable(check.err));
    const json seen = readJson(dir("check-branch.json"));
    QCOMPARE(seen["step"].get<int64_t>(), int64_t(6));
    QCOMPARE(seen["run_name"].get<std::string>(), std::string("tiny@2"));
    QCOMPARE(seen["parent"].get<std::string>(), parent + "/tiny_step2.pt");
    QCOMPARE(seen["parent_step"].get<int64_t>(), int64_t(2));

    // A second branch from the same step gets its own directory.
    Trainer second = Trainer::resume(parent + "/tiny_step2.pt", 3, {}, "cpu");
    QCOMPARE(second.config().training.runName, std::string("tiny@2-2"));
  }

  // Stop, resume in place from an older checkpoint, stop, resume in place
  // again: metrics.jsonl holds each step once, equal to the uninterrupted
  // run's; the later files are in .trash/, the superseded lines kept.
  void resumeInPlaceKeepsOneHistory() {
    const std::string out = dir("history");
    Trainer first = Trainer::newRun(tiny(out, 6));
    QCOMPARE(first.run([](const StepReport& s) { return s.step < 5; }).step, int64_t(5));
    QVERIFY(fs::exists(out + "/tiny_step5.pt"));

    Trainer again = Trainer::resume(out + "/tiny_step4.pt", {}, {}, "cpu", /*inPlace=*/true);
    QCOMPARE(again.config().training.outputDir, out);
    QVERIFY2(again.notes().find("--in-place") != std::string::npos, again.notes().c_str());
    QVERIFY(fs::exists(out + "/tiny_step5.pt"));  // moved only when it runs
    const std::string step5 = ckpt::test::fileContents(out + "/tiny_step5.pt");
    QCOMPARE(again.run([](const StepReport& s) { return s.step < 5; }).step, int64_t(5));

    // A killed writer's temporary file: the next save removes it.
    const std::string stale =
        out + "/.tiny_step4.pt.tmp-" + std::to_string(ckpt::test::endedPid()) + "-deadbeef";
    std::ofstream(stale) << "partial";
    Trainer third = Trainer::resume(out + "/tiny_step2.pt", {}, {}, "cpu", /*inPlace=*/true);
    QCOMPARE(third.startStep(), int64_t(2));
    QCOMPARE(third.run().step, int64_t(6));
    QVERIFY(!fs::exists(stale));

    const auto straight = metricsLines(dir("straight")), lines = metricsLines(out);
    QCOMPARE(lines.size(), size_t(6));
    for (size_t i = 0; i < 6; ++i) {
      QCOMPARE(lines[i]["step"].get<int64_t>(), int64_t(i + 1));
      for (const char* key : {"loss", "lr", "tokens", "val_loss"}) {
        QCOMPARE(lines[i].contains(key), straight[i].contains(key));
        if (lines[i].contains(key)) QCOMPARE(lines[i][key].dump(), straight[i][key].dump());
      }
    }
    QVERIFY(weightBytes(out + "/tiny_final.pt") == weightBytes(dir("straight") + "/tiny_final.pt"));
    // Superseded: step 5 (first resume), then 3, 4, 5 (the second).
    std::vector<int64_t> superseded;
    std::ifstream in(out + "/metrics.superseded.jsonl");
    for (std::string line; std::getline(in, line);)
      superseded.push_back(json::parse(line)["step"].get<int64_t>());
    QCOMPARE(superseded, (std::vector<int64_t>{5, 3, 4, 5}));
    // Two trash folders: the first stop's step 5; then steps 4, 5 and the best of step 4.
    std::vector<std::vector<std::string>> trash;
    std::vector<fs::path> folders;
    for (const auto& e : fs::directory_iterator(out + "/.trash")) folders.push_back(e.path());
    std::sort(folders.begin(), folders.end());
    for (const fs::path& f : folders) {
      std::vector<std::string> names;
      for (const auto& e : fs::directory_iterator(f)) names.push_back(e.path().filename().string());
      std::sort(names.begin(), names.end());
      trash.push_back(names);
    }
    QCOMPARE(trash,
             (std::vector<std::vector<std::string>>{
                 {"tiny_step5.pt"}, {"best_checkpoint.pt", "tiny_step4.pt", "tiny_step5.pt"}}));
    QCOMPARE(ckpt::test::fileContents(folders[0] / "tiny_step5.pt"), step5);
  }

  void keepLastK() {
    RunConfig c = tiny(dir("keep"), 5);
    c.training.saveEvery = 1;
    c.training.keepLast = 2;
    c.training.evalEvery = 0;
    Trainer::newRun(c).run();
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir("keep")))
      if (e.path().extension() == ".pt") files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    QCOMPARE(files, (std::vector<std::string>{"tiny_final.pt", "tiny_step3.pt", "tiny_step4.pt"}));
  }

  void resumeFromPython() {
    const std::string out = dir("pyrun");
    fs::create_directories(out);
    const std::string config = dir("pyconfig.json");
    std::ofstream(config) << R"({"vocab_size": 256, "d_model": 32, "n_layers": 2, "n_heads": 4,
                                 "ffn_hidden_size": 80, "max_seq_len": 32})";
    const Python w = python({"write", QString::fromStdString(out + "/pyrun_step2.pt"),
                             QString::fromStdString(config), QString::fromStdString(m_data), "2"});
    QVERIFY2(w.exitCode == 0, qPrintable(w.err));
    Trainer t = Trainer::resume(out + "/pyrun_step2.pt", 4, m_data, "cpu");
    QCOMPARE(t.startStep(), int64_t(2));
    QVERIFY2(t.notes().find("fresh optimizer") == std::string::npos, t.notes().c_str());
    QVERIFY2(t.notes().find("data position") != std::string::npos, t.notes().c_str());
    const RunResult r = t.run();
    QCOMPARE(r.step, int64_t(4));
    QCOMPARE(r.lastCheckpoint, out + "/pyrun_final.pt");
    const Python check = python({"check", QString::fromStdString(r.lastCheckpoint),
                                 QString::fromStdString(dir("check2.json"))});
    QVERIFY2(check.exitCode == 0, qPrintable(check.err));
  }

  void resumeWithoutOptimizer() {
    const std::string out = dir("pynoopt");
    fs::create_directories(out);
    const std::string config = dir("pyconfig-noopt.json");
    std::ofstream(config) << R"({"vocab_size": 256, "d_model": 32, "n_layers": 2, "n_heads": 4,
                                 "ffn_hidden_size": 80, "max_seq_len": 32})";
    const Python w = python({"write-noopt", QString::fromStdString(out + "/pyrun_step2.pt"),
                             QString::fromStdString(config), QString::fromStdString(m_data), "2"});
    QVERIFY2(w.exitCode == 0, qPrintable(w.err));
    Trainer t = Trainer::resume(out + "/pyrun_step2.pt", 3, m_data, "cpu");
    QVERIFY2(
        t.notes().find("no optimizer state: resuming with a fresh optimizer") != std::string::npos,
        t.notes().c_str());
    QCOMPARE(t.run().step, int64_t(3));
  }

  void flatReferenceConfig() {
    // The reference library's flat pipeline config: model fields at the top
    // level, pretrain_* for the run.
    const RunConfig c = RunConfig::fromJson(json::parse(R"({
      "vocab_size": 50257, "d_model": 768, "n_layers": 12, "n_heads": 12, "ffn_hidden_size": 3072,
      "max_seq_len": 1024, "use_gqa": true, "gqa_groups": 4, "newer_library_field": 1,
      "pretrain_max_steps": 7, "pretrain_lr": 0.0006, "pretrain_batch_size": 32,
      "pretrain_micro_batch_size": 8, "pretrain_warmup_steps": 3, "output_dir": "out/x",
      "run_name": "flat", "seed": 3, "save_every": 5, "sft_lr": 1e-5})"));
    QCOMPARE(c.model.dModel, int64_t(768));
    QCOMPARE(c.model.kvHeads(), int64_t(4));
    QCOMPARE(c.training.maxSteps, int64_t(7));
    QCOMPARE(c.training.learningRate, 0.0006);
    QCOMPARE(c.training.batchSize, int64_t(32));
    QCOMPARE(c.training.microBatchSize, int64_t(8));
    QCOMPARE(c.training.gradientAccumulationSteps, int64_t(4));
    QCOMPARE(c.training.warmupSteps, int64_t(3));
    QCOMPARE(c.training.outputDir, std::string("out/x"));
    QCOMPARE(c.training.runName, std::string("flat"));
    QCOMPARE(c.training.seed, uint64_t(3));
    QCOMPARE(c.training.saveEvery, int64_t(5));
  }

  void badInput_data() {
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("message");
    QTest::newRow("invalid config") << "config"
                                    << "ffn_hidden_size (32) must exceed d_model (32)";
    QTest::newRow("missing data") << "missing"
                                  << "no/such/corpus.txt";
    QTest::newRow("empty data") << "empty"
                                << "empty.txt";
    QTest::newRow("data too short") << "short"
                                    << "fewer than one window of 16 tokens";
    QTest::newRow("batch sizes disagree") << "batch"
                                          << "batch_size";
    QTest::newRow("NaN loss") << "nan"
                              << "the loss is";
    QTest::newRow("unwritable output") << "unwritable"
                                       << "corpus.txt";
  }
  void badInput() {
    QFETCH(QString, what);
    QFETCH(QString, message);
    std::string error;
    try {
      RunConfig c = tiny(dir("bad-" + what.toStdString()), 3);
      if (what == "config") {
        json m = c.model.toJson();
        m["ffn_hidden_size"] = 32;
        c.model = ModelConfig::fromJson(m);
      } else if (what == "missing") {
        c.data.path = dir("no/such/corpus.txt");
      } else if (what == "empty") {
        c.data.path = dir("empty.txt");
        std::ofstream(c.data.path).close();
      } else if (what == "short") {
        c.data.path = dir("short.txt");
        std::ofstream(c.data.path) << "tiny";
      } else if (what == "batch") {
        RunConfig::fromJson(
            json::parse(R"({"model": {"vocab_size": 256, "d_model": 32, "n_layers": 1,
          "n_heads": 4, "ffn_hidden_size": 80, "max_seq_len": 32},
          "training": {"batch_size": 5, "micro_batch_size": 2}})"));
      } else if (what == "nan") {
        c.training.learningRate = 1e30;
        c.training.maxSteps = 50;
        c.training.maxGradNorm = 0;
      } else if (what == "unwritable") {
        c.training.outputDir = m_data + "/out";  // a directory below a regular file
      }
      Trainer::newRun(c).run();
    } catch (const std::exception& e) {
      error = e.what();
    }
    QVERIFY2(!error.empty(), "expected an error");
    QVERIFY2(error.find(message.toStdString()) != std::string::npos, error.c_str());
  }

  void checkpointThatDoesNotFit() {
    // model_state lacks final_norm.weight and holds an extra key: both named.
    const std::string config = dir("pyconfig-misfit.json");
    std::ofstream(config) << R"({"vocab_size": 256, "d_model": 32, "n_layers": 2, "n_heads": 4,
                                 "ffn_hidden_size": 80, "max_seq_len": 32})";
    const std::string bad = dir("misfit.pt");
    const Python w = python({"write-misfit", QString::fromStdString(bad),
                             QString::fromStdString(config), QString::fromStdString(m_data), "1"});
    QVERIFY2(w.exitCode == 0, qPrintable(w.err));
    std::string error;
    try {
      Trainer::resume(bad, 3, m_data, "cpu").run();
    } catch (const std::exception& e) {
      error = e.what();
    }
    QVERIFY2(error.find("missing keys (1): final_norm.weight") != std::string::npos, error.c_str());
    QVERIFY2(error.find("unexpected keys (1): extra.weight") != std::string::npos, error.c_str());
  }
};

QTEST_GUILESS_MAIN(TestTrainer)
#include "tst_trainer.moc"
