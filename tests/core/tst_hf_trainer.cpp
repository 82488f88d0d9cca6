// A Hugging Face Trainer output folder (make_hf_trainer.py writes it as the
// Trainer does) is one run of checkpoint-<step> folders, its curves are what
// a Python reader of the newest trainer_state.json finds, runs come in
// natural order, and a run without checkpoints is listed.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include <cmath>
#include <filesystem>

#include "ckpt/index/hf_trainer.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/natural_order.h"
#include "ckpt/index/prune.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/scanner.h"
#include "cli_json.h"
#include "copy_tree.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::copyTree;
using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

const QString kDir = QStringLiteral(CKPT_FIXTURE_DIR "/hf_trainer");
const QString kOut = kDir + "/hf/out";

json cliJson(const QStringList& args) {
  return ckpt::test::cliJson(QStringLiteral(CKPT_CLI), args);
}

// Every regular file directly in `dir`, by size: what deleting it frees.
uint64_t folderBytes(const QString& dir) {
  uint64_t sum = 0;
  for (const QFileInfo& f : QDir(dir).entryInfoList(QDir::Files)) sum += uint64_t(f.size());
  return sum;
}

}  // namespace

class TstHfTrainer : public QObject {
  Q_OBJECT

 private slots:
  void naturalOrder_data() {
    QTest::addColumn<QString>("a");
    QTest::addColumn<QString>("b");
    QTest::newRow("seed") << "seed2"
                          << "seed10";
    QTest::newRow("checkpoint") << "checkpoint-500"
                                << "checkpoint-1000";
    QTest::newRow("inner") << "lr3e-4_seed9"
                           << "lr3e-4_seed11";
    QTest::newRow("text first") << "a10"
                                << "b2";
    QTest::newRow("prefix") << "run"
                            << "run2";
    QTest::newRow("zeros") << "a7"
                           << "a07";
    QTest::newRow("long") << "x99999999999999999999999"
                          << "x100000000000000000000000";
  }
  void naturalOrder() {
    QFETCH(QString, a);
    QFETCH(QString, b);
    QVERIFY(ckpt::naturalLess(a.toStdString(), b.toStdString()));
    QVERIFY(!ckpt::naturalLess(b.toStdString(), a.toStdString()));
    QCOMPARE(ckpt::naturalCompare(a.toStdString(), a.toStdString()), 0);
  }

  // One run, its checkpoint-<step> folders one checkpoint each, in step
  // order, the best one marked, the final model last.
  void lsListsOneRun() {
    const json j = cliJson({"ls", "--json", kOut});
    QCOMPARE(j["runs"].size(), size_t(1));
    const json& run = j["runs"][0];
    QCOMPARE(run["name"].get<std::string>(), std::string("out"));
    QCOMPARE(run["trainer"].get<std::string>(), std::string("hf-trainer"));
    const json& cks = run["checkpoints"];
    QCOMPARE(cks.size(), size_t(4));
    const std::vector<std::string> files{"checkpoint-500", "checkpoint-1000", "checkpoint-1500",
                                         "model.safetensors"};
    const std::vector<int64_t> steps{500, 1000, 1500, 1500};
    const std::vector<std::string> kinds{"step", "step", "step", "final"};
    const std::vector<bool> best{false, true, false, false};
    for (size_t i = 0; i < cks.size(); ++i) {
      QCOMPARE(cks[i]["file"].get<std::string>(), files[i]);
      QCOMPARE(cks[i]["step"].get<int64_t>(), steps[i]);
      QCOMPARE(cks[i]["kind"].get<std::string>(), kinds[i]);
      QCOMPARE(cks[i]["best"].get<bool>(), bool(best[i]));
      QVERIFY2(cks[i]["error"].is_null(), cks[i]["error"].dump().c_str());
      QCOMPARE(cks[i]["trainer"].get<std::string>(), std::string("hf-trainer"));
    }
    // The files beside the weights, by role.
    for (size_t i = 0; i < 3; ++i) {
      std::map<std::string, std::string> roles;
      for (const json& p : cks[i]["parts"])
        roles[p["file"].get<std::string>()] = p["role"].get<std::string>();
      const std::map<std::string, std::string> want{{"config.json", "config"},
                                                    {"optimizer.pt", "optimizer"},
                                                    {"rng_state.pth", "rng"},
                                                    {"scheduler.pt", "scheduler"},
                                                    {"trainer_state.json", "trainer_state"},
                                                    {"training_args.bin", "training_args"}};
      QVERIFY2(roles == want, cks[i]["parts"].dump().c_str());
    }
    QCOMPARE(cks[2]["sharded"]["layout"].get<std::string>(), std::string("hf-index"));
  }

  // What Inspect opens is the weights; the size is the whole folder's.
  void scanOpensTheWeights() {
    const ckpt::ScanResult scan = ckpt::scanDirectory(kOut.toStdString());
    QCOMPARE(scan.runs.size(), size_t(1));
    const auto& cks = scan.runs[0].checkpoints;
    QCOMPARE(cks.size(), size_t(4));
    const QStringList weights{"checkpoint-500/model.safetensors",
                              "checkpoint-1000/pytorch_model.bin",
                              "checkpoint-1500/model.safetensors.index.json", "model.safetensors"};
    for (size_t i = 0; i < cks.size(); ++i) {
      QCOMPARE(QDir::cleanPath(QString::fromStdString(cks[i].path)),
               QDir::cleanPath(kOut + "/" + weights[int(i)]));
      // training_args.bin names TrainingArguments, which the HF Trainer
      // profile allows where trainer_state.json sits beside it.
      QCOMPARE(cks[i].verdict, std::string("safe"));
    }
    for (int i = 0; i < 3; ++i)
      QCOMPARE(cks[size_t(i)].size,
               folderBytes(kOut + "/checkpoint-" + QString::number((i + 1) * 500)));
    // The watcher's view of the folder is the same run; a checkpoint folder is no run.
    const ckpt::RunEntry again = ckpt::scanRunDirectory(kOut.toStdString(), kOut.toStdString());
    QCOMPARE(again.checkpoints.size(), size_t(4));
    QVERIFY(again.checkpoints[1].best);
    QVERIFY(ckpt::scanRunDirectory(kOut.toStdString(), (kOut + "/checkpoint-500").toStdString())
                .checkpoints.empty());
  }

  // A checkpoint folder opened on its own: that checkpoint, in its run.
  void checkpointFolderAlone() {
    const json j = cliJson({"ls", "--json", kOut + "/checkpoint-1000"});
    QCOMPARE(j["runs"].size(), size_t(1));
    QCOMPARE(j["runs"][0]["name"].get<std::string>(), std::string("out"));
    QCOMPARE(j["runs"][0]["checkpoints"].size(), size_t(1));
    const json& c = j["runs"][0]["checkpoints"][0];
    QCOMPARE(c["step"].get<int64_t>(), int64_t(1000));
    QCOMPARE(c["file"].get<std::string>(), std::string("checkpoint-1000"));
    QVERIFY(c["best"].get<bool>());
  }

  // Curves: exactly the points the Python reader finds in the newest state.
  // A checkpoint folder's optimizer.pt (a bare optimizer state_dict):
  // `info` shows its state and hyperparameters, its parameters numbered,
  // none mapped (the file holds no names), and says why.
  void infoOfOptimizerFile() {
    std::ifstream in((kDir + "/hf/expected_optimizers.json").toStdString());
    const json want = json::parse(in);
    QCOMPARE(want.size(), size_t(3));
    for (const auto& [rel, w] : want.items()) {
      const QString path = kOut + "/" + QString::fromStdString(rel);
      const json got = cliJson({"info", path, "--json"});
      QVERIFY2(got.contains("optimizer"), rel.c_str());
      QCOMPARE(got["optimizer"]["with_state"].get<size_t>(), w["with_state"].get<size_t>());
      QCOMPARE(got["optimizer"]["params"].get<size_t>(), w["with_state"].get<size_t>());
      QCOMPARE(got["optimizer"]["groups"].get<size_t>(), w["groups"].get<size_t>());
      QCOMPARE(got["optimizer"]["mapped"].get<size_t>(), size_t(0));
      const ckpt::test::ProcessResult text = ckpt::test::runProcess(CKPT_CLI, {"info", path});
      QCOMPARE(text.exitCode, 0);
      // The Trainer's two param groups (weight decay, then none).
      const QByteArray line = "optimizer   " + QByteArray::number(w["with_state"].get<int>()) +
                              " parameters with state, " +
                              QByteArray::number(w["groups"].get<int>()) + " groups (lr ";
      QVERIFY2(text.out.contains(line), text.out.constData());
      QVERIFY2(text.out.contains("; 0 of " + QByteArray::number(w["with_state"].get<int>()) +
                                 " mapped to parameters\n"),
               text.out.constData());
      QVERIFY2(text.out.contains("an optimizer state without its model"), text.out.constData());

      // The checkpoint folder itself: its weights, as Inspect opens them,
      // with that optimizer.pt's state.
      const QString folder = QFileInfo(path).path();
      const json whole = cliJson({"info", folder, "--json"});
      QVERIFY2(whole["format"] != "", whole.dump().c_str());
      QVERIFY2(!whole["tensors"].empty(), rel.c_str());
      QCOMPARE(whole["optimizer"]["with_state"].get<size_t>(), w["with_state"].get<size_t>());
      QCOMPARE(whole["optimizer"]["file"].get<std::string>(), path.toStdString());
      // Named from the weights where they keep the model's order (a
      // pytorch_model.bin) by the Trainer's two groups; numbered, and said
      // why, where they do not (safetensors, a shard index).
      const size_t named = w["names"].is_null() ? 0 : w["names"].size();
      QCOMPARE(whole["optimizer"]["mapped"].get<size_t>(), named);
      const ckpt::test::ProcessResult folderText =
          ckpt::test::runProcess(CKPT_CLI, {"info", folder});
      QCOMPARE(folderText.exitCode, 0);
      const QByteArray mapped = ", " + QByteArray::number(w["groups"].get<int>()) + " groups (lr ";
      QVERIFY2(folderText.out.contains(mapped), folderText.out.constData());
      QVERIFY2(folderText.out.contains("; " + QByteArray::number(qulonglong(named)) + " of " +
                                       QByteArray::number(w["with_state"].get<int>()) +
                                       " mapped to parameters (from optimizer.pt)\n") &&
                   folderText.out.contains("\nparameters  "),
               folderText.out.constData());
      QCOMPARE(folderText.out.contains("stay numbered"), named == 0);
    }
  }

  // `ls` lists a checkpoint folder as one checkpoint, so diff takes two of
  // them: their weights, each tensor's change as torch computes it
  // (make_hf_trainer.py), across formats (safetensors, a torch.save'd
  // pytorch_model.bin, a shard index).
  void diffOfTwoFolders() {
    const json want = ckpt::test::readJsonFile((kDir + "/hf/expected_diffs.json").toStdString());
    QCOMPARE(want.size(), size_t(2));
    for (const auto& [pair, tensors] : want.items()) {
      const QStringList ab = QString::fromStdString(pair).split(' ');
      const json got = cliJson({"diff", kOut + "/" + ab[0], kOut + "/" + ab[1], "--json"});
      QCOMPARE(got["tensors"].size(), tensors.size());
      for (const json& t : got["tensors"]) {
        const std::string name = t["name"].get<std::string>();
        QVERIFY2(tensors.contains(name), name.c_str());
        for (const char* key : {"rel_l2", "cosine"}) {
          const double w = tensors[name][key].get<double>(), g = t[key].get<double>();
          QVERIFY2(std::abs(g - w) <= 1e-9 * std::max(1.0, std::abs(w)),
                   (pair + " " + name + " " + key + ": " + std::to_string(g) + ", torch " +
                    std::to_string(w))
                       .c_str());
        }
      }
    }
  }

  // A peft (LoRA) run with fp16: each checkpoint-<step>/ holds the adapter's
  // weights (adapter_model.safetensors) and a GradScaler's scaler.pt. ls
  // lists one checkpoint per folder with the adapter as its weights and the
  // scaler among its parts; info reads the adapter's tensors; diff of the
  // two folders gives torch's rel_l2 (make_hf_trainer.py, expected_peft.json).
  void peftAdapterWithScaler() {
    const QString out = kDir + "/hf_peft/out";
    const json want =
        ckpt::test::readJsonFile((kDir + "/hf_peft/expected_peft.json").toStdString());
    const json ls = cliJson({"ls", "--json", out});
    QCOMPARE(ls["runs"].size(), size_t(1));
    const json& run = ls["runs"][0];
    QCOMPARE(run["trainer"].get<std::string>(), std::string("hf-trainer"));
    QCOMPARE(run["checkpoints"].size(), size_t(2));
    int64_t step = 100;
    for (const json& c : run["checkpoints"]) {
      QCOMPARE(c["step"].get<int64_t>(), step);
      QCOMPARE(c["file"].get<std::string>(), "checkpoint-" + std::to_string(step));
      QVERIFY2(c["error"].is_null(), c.dump().c_str());
      std::map<std::string, std::string> roles;
      for (const json& p : c["parts"])
        roles[p["file"].get<std::string>()] = p["role"].get<std::string>();
      QCOMPARE(roles["scaler.pt"], std::string("scaler"));
      QCOMPARE(roles["adapter_config.json"], std::string("config"));
      QCOMPARE(roles["optimizer.pt"], std::string("optimizer"));
      step += 100;
    }
    const json info = cliJson({"info", "--json", out + "/checkpoint-100"});
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const json& t : info["tensors"])
      shapes[t["name"].is_string() ? t["name"].get<std::string>() : t["path"].dump()] =
          t["shape"].get<std::vector<int64_t>>();
    std::map<std::string, std::vector<int64_t>> wantShapes;
    for (const auto& [name, shape] : want["tensors"].items())
      wantShapes[name] = shape.get<std::vector<int64_t>>();
    QCOMPARE(shapes, wantShapes);
    const json d = cliJson({"diff", out + "/checkpoint-100", out + "/checkpoint-200", "--json"});
    QCOMPARE(d["tensors"].size(), want["rel_l2"].size());
    for (const json& t : d["tensors"]) {
      const std::string name = t["name"].get<std::string>();
      QVERIFY2(want["rel_l2"].contains(name), name.c_str());
      const double w = want["rel_l2"][name].get<double>();
      QVERIFY2(std::abs(t["rel_l2"].get<double>() - w) <= 1e-9 * std::max(1.0, w), name.c_str());
    }
  }

  // verify of a checkpoint folder checks every file a resume loads; a
  // damaged optimizer.pt fails it, naming that file.
  void verifyFolder() {
    const ckpt::test::ProcessResult ok =
        ckpt::test::runProcess(CKPT_CLI, {"verify", kOut + "/checkpoint-1000"});
    QCOMPARE(ok.exitCode, 0);
    for (const char* f : {"pytorch_model.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth",
                          "training_args.bin"})
      QVERIFY2(ok.out.contains(QByteArray("checkpoint-1000/") + f + ": OK ("), ok.out.constData());
    QVERIFY2(ok.out.contains("checkpoint-1000: OK (5 files)"), ok.out.constData());

    QTemporaryDir tmp;
    const QString copy = tmp.path() + "/checkpoint-1000";
    QVERIFY(copyTree(kOut + "/checkpoint-1000", copy));
    QFile opt(copy + "/optimizer.pt");
    QVERIFY(opt.open(QIODevice::ReadWrite));
    const qint64 at = opt.size() / 2;  // inside a record, before the central directory
    QVERIFY(opt.seek(at));
    char byte = 0;
    QVERIFY(opt.getChar(&byte));
    QVERIFY(opt.seek(at));
    QVERIFY(opt.putChar(char(byte ^ 0x55)));
    opt.close();
    const ckpt::test::ProcessResult bad = ckpt::test::runProcess(CKPT_CLI, {"verify", copy});
    QVERIFY2(bad.exitCode != 0, bad.out.constData());
    QVERIFY2(bad.out.contains("BROKEN  ") && bad.out.contains("optimizer.pt"), bad.out.constData());
    QVERIFY2(!bad.out.contains("OK (5 files)"), bad.out.constData());
  }

  void metricsEqualPythonReader() {
    const json expected =
        ckpt::test::readJsonFile((kDir + "/hf/expected_metrics.json").toStdString());
    const json j = cliJson({"metrics", "--json", kOut});
    QCOMPARE(j["runs"].size(), size_t(1));
    const json& run = j["runs"][0];
    QVERIFY2(run["problems"].empty(), run["problems"].dump().c_str());
    QCOMPARE(run["series"].size(), expected["series"].size());
    const std::string file = (kDir + "/" + QString::fromStdString(expected["file"])).toStdString();
    for (const json& s : run["series"]) {
      const std::string metric = s["metric"];
      QVERIFY2(expected["series"].contains(metric), metric.c_str());
      QCOMPARE(s["source"].get<std::string>(), std::string("trainer_state.json"));
      QCOMPARE(s["files"].size(), size_t(1));
      QCOMPARE(fs::path(s["files"][0].get<std::string>()).lexically_normal(),
               fs::path(file).lexically_normal());
      const std::string diff =
          ckpt::test::compareJson(expected["series"][metric], s["points"], metric);
      QVERIFY2(diff.empty(), diff.c_str());
    }
    QVERIFY(expected["series"].contains("val_loss"));
    const std::string diff =
        ckpt::test::compareJson(expected["summary"], run["summary"], "summary");
    QVERIFY2(diff.empty(), diff.c_str());
    QVERIFY(!run["summary"].empty());
  }

  // seed2 before seed10; seed3 has only a metrics.jsonl and is a run.
  // The run's hyperparameters, as `runs` shows them beside the sweep's
  // runs: every field of training_args.bin (read as a pickle, never run; an
  // enum field as its member's name) and config.json's keys, equal to what
  // make_hf_trainer.py pickled and wrote (expected_hparams.json); the other
  // runs have none of them. Was {} for the Trainer's run.
  void hyperparametersFromArgsAndConfig() {
    const json want = ckpt::test::readJsonFile((kDir + "/hf/expected_hparams.json").toStdString());
    const json got = cliJson({"runs", kDir, "--json"});
    QVERIFY2(got["problems"].empty(), got["problems"].dump().c_str());
    const json* hf = nullptr;
    for (const json& r : got["rows"])
      if (r["name"] == "hf/out") hf = &r;
    QVERIFY(hf);
    const json& h = (*hf)["hparams"];
    QCOMPARE(h.size(), want.size());
    for (const auto& [key, value] : want.items()) {
      QVERIFY2(h.contains(key), key.c_str());
      const json& v = h[key];
      if (value.is_boolean())
        QCOMPARE(v.get<std::string>(), std::string(value.get<bool>() ? "true" : "false"));
      else if (value.is_number())
        QCOMPARE(v.get<double>(), value.get<double>());
      else if (value.is_string())
        QCOMPARE(v.get<std::string>(), value.get<std::string>());
      else
        QCOMPARE(json::parse(v.get<std::string>()), value);  // a list: its JSON text
    }
    // The peft run pickled the same TrainingArguments (it has no config.json).
    for (const json& r : got["rows"])
      if (r["name"] == "hf_peft/out")
        QCOMPARE(r["hparams"]["learning_rate"].get<double>(), want["learning_rate"].get<double>());
    for (const json& r : got["rows"])
      if (&r != hf && r["name"] != "hf_peft/out")
        for (const auto& [key, value] : r["hparams"].items())
          QVERIFY2(value.is_null(), (r["name"].get<std::string>() + "." + key).c_str());
  }

  void naturalOrderOfRunsAndMetricsOnlyRun() {
    const json j = cliJson({"ls", "--json", kDir + "/sweep"});
    std::vector<std::string> names;
    for (const json& r : j["runs"]) names.push_back(r["name"]);
    QCOMPARE(names, (std::vector<std::string>{"seed1", "seed2", "seed3", "seed10"}));
    const json& seed3 = j["runs"][2];
    QVERIFY(seed3["checkpoints"].empty());
    QCOMPARE(seed3["metrics"].size(), size_t(1));
    QCOMPARE(fs::path(seed3["metrics"][0].get<std::string>()).filename().string(),
             std::string("metrics.jsonl"));

    const json m = cliJson({"metrics", "--json", kDir + "/sweep"});
    names.clear();
    for (const json& r : m["runs"]) names.push_back(r["name"]);
    QCOMPARE(names, (std::vector<std::string>{"seed1", "seed2", "seed3", "seed10"}));
    const json& loss = m["runs"][2]["series"][0];
    QCOMPARE(loss["metric"].get<std::string>(), std::string("loss"));
    QCOMPARE(loss["points"].size(), size_t(3));
  }

  // Rows that are not what the Trainer writes are skipped and said; Python's
  // bare NaN / Infinity (json.dumps writes them) are read as those numbers.
  void oddRows() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString path = tmp.path() + "/trainer_state.json";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"global_step": 3, "best_model_checkpoint": "/abs/out/checkpoint-2",
      "log_history": [1, {"loss": NaN, "step": 1}, {"loss": 2.5}, {"loss": Infinity, "step": 2,
      "note": "NaN", "nested": {"loss": 9}}, {"eval_loss": -Infinity, "step": 3}],
      "trial_params": null})");
    f.close();
    std::vector<std::string> problems;
    const ckpt::TrainerStateLog state = ckpt::readTrainerState(path.toStdString(), &problems);
    QCOMPARE(state.globalStep, std::optional<int64_t>(3));
    QCOMPARE(state.bestModelCheckpoint, std::optional<std::string>("/abs/out/checkpoint-2"));
    QCOMPARE(problems.size(), size_t(2));
    QVERIFY2(problems[0].find("log_history[0] is not an object") != std::string::npos,
             problems[0].c_str());
    QVERIFY2(problems[1].find("log_history[2] has no integer step") != std::string::npos,
             problems[1].c_str());
    QCOMPARE(state.series.size(), size_t(2));
    const ckpt::FileSeries& loss = state.series[0];
    QCOMPARE(loss.metric, std::string("loss"));
    QCOMPARE(loss.points.size(), size_t(2));
    QVERIFY(std::isnan(loss.points[0].value));
    QVERIFY(std::isinf(loss.points[1].value) && loss.points[1].value > 0);
    QCOMPARE(state.series[1].metric, std::string("val_loss"));
    QVERIFY(std::isinf(state.series[1].points[0].value) && state.series[1].points[0].value < 0);
  }

  // Pruning keeps the trainer's best and moves a checkpoint folder to the
  // trash whole (not only its weights: optimizer.pt is most of its bytes).
  void pruneMovesWholeFolders() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString run = tmp.path() + "/out";
    QVERIFY(copyTree(kOut, run));
    ckpt::PruneRules rules;
    rules.keepLast = 1;
    const ckpt::PrunePlan plan = ckpt::planPrune(run.toStdString(), rules);
    QCOMPARE(plan.remove.size(), size_t(1));
    QCOMPARE(plan.remove[0].name, std::string("checkpoint-500"));
    QCOMPARE(plan.remove[0].size, folderBytes(run + "/checkpoint-500"));
    std::vector<std::string> kept;
    for (const ckpt::PruneFile& f : plan.keep) kept.push_back(f.name);
    QCOMPARE(kept,
             (std::vector<std::string>{"checkpoint-1000", "checkpoint-1500", "model.safetensors"}));
    QVERIFY(std::find(plan.keep[0].reasons.begin(), plan.keep[0].reasons.end(),
                      "best by trainer_state.json") != plan.keep[0].reasons.end());

    const QByteArray xdg = qgetenv("XDG_DATA_HOME");
    qputenv("XDG_DATA_HOME", (tmp.path() + "/xdg").toUtf8());
    const auto trashed = ckpt::trashFiles(plan.runDir, {plan.remove[0].path});
    qputenv("XDG_DATA_HOME", xdg);
    QCOMPARE(trashed.size(), size_t(1));
    QVERIFY(!QFileInfo::exists(run + "/checkpoint-500"));
    QCOMPARE(QDir(QString::fromStdString(trashed[0].to)).entryList(QDir::Files).size(), 7);
    QCOMPARE(ckpt::scanDirectory(run.toStdString()).runs[0].checkpoints.size(), size_t(3));
  }

  // A damaged trainer_state.json: the checkpoints are still listed, the
  // curves say which file and byte, nothing crashes.
  void damagedTrainerState() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString run = tmp.path() + "/out";
    QVERIFY(QDir().mkpath(run + "/checkpoint-5"));
    QVERIFY(QFile::copy(kOut + "/checkpoint-500/model.safetensors",
                        run + "/checkpoint-5/model.safetensors"));
    QFile state(run + "/checkpoint-5/trainer_state.json");
    QVERIFY(state.open(QIODevice::WriteOnly));
    state.write("{\"global_step\": 5, \"log_history\": [{\"loss\": 1.0, \"step\": 5}, {\"loss\": ");
    state.close();
    // A folder with an optimizer but no weights (a save that died): listed, with why.
    QVERIFY(QDir().mkpath(run + "/checkpoint-7"));
    QVERIFY(QFile::copy(kOut + "/checkpoint-500/optimizer.pt", run + "/checkpoint-7/optimizer.pt"));
    const json ls = cliJson({"ls", "--json", run});
    QCOMPARE(ls["runs"].size(), size_t(1));
    QCOMPARE(ls["runs"][0]["checkpoints"].size(), size_t(2));
    QCOMPARE(ls["runs"][0]["checkpoints"][0]["step"].get<int64_t>(), int64_t(5));
    const json& dead = ls["runs"][0]["checkpoints"][1];
    QCOMPARE(dead["step"].get<int64_t>(), int64_t(7));
    QVERIFY2(dead["error"].get<std::string>().starts_with("no weights in the folder"),
             dead.dump().c_str());
    const json m = cliJson({"metrics", "--json", run});
    const json& problems = m["runs"][0]["problems"];
    QCOMPARE(problems.size(), size_t(1));
    const std::string p = problems[0];
    QVERIFY2(p.find("checkpoint-5/trainer_state.json: not JSON (byte ") != std::string::npos,
             p.c_str());
    QVERIFY(m["runs"][0]["series"].empty());
  }
};

QTEST_GUILESS_MAIN(TstHfTrainer)
#include "tst_hf_trainer.moc"
