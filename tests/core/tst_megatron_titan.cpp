// Runs as Megatron-LM and torchtitan leave them (make_megatron_titan.py
// writes them with the names, folder shapes and dict keys of those
// trainers' checkpointing code): a Megatron save folder is one run, each
// iter_<N>/ one checkpoint at step N made of its ranks' files, the tracker
// file marking the newest, its argparse `args` the run's hyperparameters;
// a torchtitan dump folder is one run, its checkpoint/step-<N>/ DCP folders
// its checkpoints, its tb/<time>/ event files its curves as the independent
// Python reader (tfevents_reader.py) reads them.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "ckpt/index/hparams.h"
#include "ckpt/index/megatron.h"
#include "ckpt/index/scanner.h"
#include "cli_json.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;
using ckpt::test::runJson;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = CKPT_FIXTURE_DIR "/megatron_titan";

json cli(const QStringList& args) {
  return runJson(QStringLiteral(CKPT_CLI), args);
}

const json& expected() {
  static const json doc = [] {
    std::ifstream in(kRoot + "/expected.json");
    return json::parse(in);
  }();
  return doc;
}

const json* findRun(const json& runs, const std::string& name) {
  for (const json& r : runs)
    if (r["name"] == name) return &r;
  return nullptr;
}

}  // namespace

class TestMegatronTitan : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(kRoot + "/expected.json"), "no fixtures: run ctest (make_megatron_titan)");
  }

  void names() {
    QCOMPARE(ckpt::megatronIterationOf("iter_0000100"), std::optional<int64_t>(100));
    QCOMPARE(ckpt::megatronIterationOf("iter_12345678"), std::optional<int64_t>(12345678));
    QVERIFY(!ckpt::megatronIterationOf("iter_100"));
    QVERIFY(!ckpt::megatronIterationOf("iter_00001x0"));
    QVERIFY(ckpt::isMegatronRankName("mp_rank_00"));
    QVERIFY(ckpt::isMegatronRankName("mp_rank_01_003"));
    QVERIFY(ckpt::isMegatronRankName("mp_rank_01_003_002"));
    QVERIFY(!ckpt::isMegatronRankName("mp_rank_0"));
    QVERIFY(!ckpt::isMegatronRankName("mp_rank_00_03"));
    QVERIFY(!ckpt::isMegatronRankName("mp_rank_00_000_000_000"));
  }

  // A save of the legacy model (before mcore) nests its model's dicts
  // (model.language_model.embedding.word_embeddings.weight): `diff` of two
  // saves compares each tensor by its path below `model`, as torch does,
  // not none at all with exit 0.
  void legacyMegatronSavesAreCompared() {
    const std::string save = kRoot + "/mg_legacy/gpt";
    const json d = cli(
        {"diff", QString::fromStdString(save + "/iter_0000010/mp_rank_00/model_optim_rng.pt"),
         QString::fromStdString(save + "/iter_0000020/mp_rank_00/model_optim_rng.pt"), "--json"});
    const json& want = expected()["megatron_legacy"]["rel_l2"];
    QCOMPARE(d["tensors"].size(), want.size());
    QVERIFY(d["added"].empty() && d["removed"].empty());
    for (const json& t : d["tensors"]) {
      const std::string name = t["name"].get<std::string>();
      QVERIFY2(want.contains(name), name.c_str());
      QVERIFY2(std::abs(t["rel_l2"].get<double>() - want[name].get<double>()) <=
                   1e-6 * want[name].get<double>(),
               (name + ": " + t["rel_l2"].dump() + ", torch " + want[name].dump()).c_str());
    }
  }

  // torchtitan's state dict with the model's keys at its top (beside
  // optimizer, lr_scheduler, train_state): diff compares the model's four
  // tensors, as torch does, not the optimizer's moments and the step too.
  void flattenedTorchtitanModelIsCompared() {
    const std::string dump = kRoot + "/titan_flat/outputs/checkpoint";
    const json d = cli({"diff", QString::fromStdString(dump + "/step-10"),
                        QString::fromStdString(dump + "/step-20"), "--json"});
    const json& want = expected()["torchtitan_flat"]["rel_l2"];
    QCOMPARE(d["tensors"].size(), want.size());
    for (const json& t : d["tensors"]) {
      const std::string name = t["name"].get<std::string>();
      QVERIFY2(want.contains(name), name.c_str());
      QVERIFY2(std::abs(t["rel_l2"].get<double>() - want[name].get<double>()) <=
                   1e-6 * want[name].get<double>(),
               name.c_str());
    }
    const json info = cli({"info", QString::fromStdString(dump + "/step-10"), "--json"});
    QCOMPARE(info["model_state"]["names"].size(), want.size());
  }

  void megatronSaveFolderIsOneRun() {
    const json got = cli({"ls", QString::fromStdString(kRoot + "/mg"), "--json"});
    const json& want = expected()["megatron"];
    QCOMPARE(got["runs"].size(), want.size());
    for (const auto& [name, w] : want.items()) {
      const json* run = findRun(got["runs"], name);
      QVERIFY2(run, name.c_str());
      QCOMPARE((*run)["trainer"].get<std::string>(), std::string("megatron"));
      const json& cks = (*run)["checkpoints"];
      const bool release = w["latest"] == "release";
      QCOMPARE(cks.size(), release ? size_t(1) : w["iterations"].size());
      for (size_t i = 0; i < cks.size(); ++i) {
        const json& c = cks[i];
        QVERIFY2(c["error"].is_null(), c.dump().c_str());
        QCOMPARE(c["trainer"].get<std::string>(), std::string("megatron"));
        std::string folder, key;
        if (release) {
          folder = "release";
          key = "release";
          QVERIFY(c["step"].is_null());
          QCOMPARE(c["kind"].get<std::string>(), std::string("final"));
          QVERIFY(c["latest"].get<bool>());
        } else {
          const int64_t it = w["iterations"][i].get<int64_t>();
          char b[32];
          std::snprintf(b, sizeof b, "iter_%07lld", static_cast<long long>(it));
          folder = b;
          key = std::to_string(it);
          QCOMPARE(c["step"].get<int64_t>(), it);
          QCOMPARE(c["kind"].get<std::string>(), std::string("step"));
          QCOMPARE(c["latest"].get<bool>(), it == w["latest"].get<int64_t>());
        }
        QCOMPARE(c["file"].get<std::string>(), name + "/" + folder);
        // The other ranks' files and every distributed-optimizer file are its parts.
        std::vector<std::string> parts, wantParts;
        // ls --json leaves `parts` out when there are none (a one-rank release).
        for (const json& p : c.value("parts", json::array()))
          parts.push_back(p["file"].get<std::string>());
        const json& ranks = w["ranks"][key];
        for (size_t r = 0; r < ranks.size(); ++r) {
          const std::string rank = ranks[r].get<std::string>();
          if (r > 0) wantParts.push_back(rank + "/model_optim_rng.pt");
          for (const json& d : w["distrib_optim"])
            if (d == rank) wantParts.push_back(rank + "/distrib_optim.pt");
        }
        QCOMPARE(parts, wantParts);
        // Its size: every file it is made of.
        uint64_t size = 0;
        for (const auto& f : fs::recursive_directory_iterator(kRoot + "/mg/" + name + "/" + folder))
          if (f.is_regular_file()) size += f.file_size();
        QCOMPARE(c["size"].get<uint64_t>(), size);
      }
    }
  }

  void megatronArgsAreHyperparameters() {
    // The argparse.Namespace in the pickle, its attributes as saved.
    const json got = cli({"runs", QString::fromStdString(kRoot + "/mg"), "--json"});
    const json& want = expected()["megatron"];
    QVERIFY(!got["columns"].empty());
    for (const json& row : got["rows"]) {
      const std::string name = row["name"].get<std::string>();
      QVERIFY2(want.contains(name), name.c_str());
      const json& args = want[name]["args"];
      for (const auto& [key, value] : row["hparams"].items()) {
        QVERIFY2(args.contains(key), key.c_str());
        // A hyperparameter that is no number is shown as text: True as "true".
        const json& a = args[key];
        const bool same =
            value == a || (a.is_boolean() && value == json(a.get<bool>() ? "true" : "false"));
        QVERIFY2(same, (name + " " + key + ": " + value.dump() + " != " + a.dump()).c_str());
      }
      for (const char* key : {"lr", "tensor_model_parallel_size"})
        QVERIFY2(row["hparams"].contains(key), (name + " lacks " + key).c_str());
    }
    QCOMPARE(got["rows"].size(), want.size());
  }

  // A rank file names argparse.Namespace, Megatron's enums (by getattr, as
  // Python 3.11 pickles enum members), _io.BytesIO: safe where Megatron
  // writes it (its profile), not safe as a loose file; a call to os.system
  // in args is dangerous in the folder as anywhere.
  void megatronRankFilesAreJudgedUnderTheirProfile() {
    const json& want = expected()["megatron_safety"];
    auto scan = [](const std::string& path) {
      const ckpt::test::ProcessResult r =
          ckpt::test::runProcess(CKPT_CLI, {"scan", "--json", QString::fromStdString(path)});
      // 0 safe, 1 suspicious / unreadable, 3 dangerous: the verdict says which.
      if (r.exitCode < 0) throw std::runtime_error(r.err.toStdString());
      return json::parse(r.out.toStdString())["files"][0];
    };
    const json good = scan(want["safe"]);
    QCOMPARE(good["verdict"].get<std::string>(), std::string("safe"));
    QCOMPARE(good["profile"].get<std::string>(), std::string("a Megatron-LM checkpoint file"));
    std::set<std::string> named;
    for (const json& g : good["globals"])
      named.insert(g["module"].get<std::string>() + "." + g["name"].get<std::string>());
    for (const char* g : {"argparse.Namespace", "megatron.core.enums.ModelType",
                          "megatron.core.transformer.enums.AttnBackend",
                          "megatron.core.rerun_state_machine.RerunState", "_io.BytesIO"})
      QVERIFY2(named.count(g), (std::string("the scan does not list ") + g).c_str());

    const json loose = scan(want["loose"]);
    QVERIFY2(loose["verdict"] != "safe", loose.dump().c_str());
    QVERIFY(!loose.contains("profile"));

    const json bad = scan(want["dangerous"]);
    QCOMPARE(bad["verdict"].get<std::string>(), std::string("dangerous"));
    bool system = false;
    for (const json& g : bad["globals"])
      system |= g["name"] == "system" && g["level"] == "dangerous";
    QVERIFY2(system, bad.dump().c_str());

    // ls shows the same verdicts for the two saves (one pass: the reader's walk).
    const fs::path save =
        fs::path(want["safe"].get<std::string>()).parent_path().parent_path().parent_path();
    const json ls = cli({"ls", "--json", QString::fromStdString(save.string())});
    QCOMPARE(ls["runs"].size(), size_t(1));
    std::map<std::string, std::string> verdicts;
    for (const json& c : ls["runs"][0]["checkpoints"])
      for (const fs::path& part : fs::path(c["file"].get<std::string>()))
        if (part.string().starts_with("iter_")) verdicts[part.string()] = c["verdict"];
    QCOMPARE(verdicts["iter_0000010"], std::string("safe"));
    QCOMPARE(verdicts["iter_0000020"], std::string("dangerous"));
  }

  // A save folder in the torch_dist format: one run, each iter_N/ ONE
  // checkpoint at common.pt's iteration (its DCP tensors; common.pt and
  // metadata.json its parts, common.pt never a checkpoint of its own), the
  // tracker's newest marked, args the hyperparameters, common.pt safe there.
  void megatronTorchDistSaveIsOneRun() {
    const std::string root = kRoot + "/mg_dist";
    const json& want = expected()["megatron_dist"]["gpt"];
    const json got = cli({"ls", QString::fromStdString(root), "--json"});
    QVERIFY2(got["runs"].size() == 1, got.dump().c_str());
    const json& run = got["runs"][0];
    QCOMPARE(run["name"].get<std::string>(), std::string("gpt"));
    QCOMPARE(run["trainer"].get<std::string>(), std::string("megatron"));
    QCOMPARE(run["checkpoints"].size(), want["iterations"].size());
    for (size_t i = 0; i < want["iterations"].size(); ++i) {
      const json& c = run["checkpoints"][i];
      const int64_t it = want["iterations"][i].get<int64_t>();
      char folder[32];
      std::snprintf(folder, sizeof folder, "iter_%07lld", static_cast<long long>(it));
      QVERIFY2(c["error"].is_null(), c.dump().c_str());
      QCOMPARE(c["file"].get<std::string>(), "gpt/" + std::string(folder));
      QCOMPARE(c["step"].get<int64_t>(), it);
      QCOMPARE(c["kind"].get<std::string>(), std::string("step"));
      QCOMPARE(c["trainer"].get<std::string>(), std::string("megatron"));
      QCOMPARE(c["latest"].get<bool>(), it == want["latest"].get<int64_t>());
      QCOMPARE(c["sharded"]["layout"].get<std::string>(), std::string("dcp"));
      QCOMPARE(c["verdict"].get<std::string>(), std::string("safe"));
      std::set<std::string> parts;
      for (const json& p : c.value("parts", json::array())) parts.insert(p["file"]);
      QCOMPARE(parts, (std::set<std::string>{"common.pt", "metadata.json"}));
      uint64_t size = 0;
      for (const auto& f : fs::directory_iterator(root + "/gpt/" + folder))
        if (f.is_regular_file()) size += f.file_size();
      QCOMPARE(c["size"].get<uint64_t>(), size);
    }
    // Its tensors: the sharded keys with their global shapes.
    const json info = cli({"info", QString::fromStdString(root + "/gpt/iter_0000200"), "--json"});
    std::map<std::string, std::vector<int64_t>> shapes, wantShapes;
    for (const json& t : info["tensors"]) {
      std::string name;  // a DCP key is one component: "decoder.layers.mlp.linear_fc1.weight"
      for (const json& part : t["path"])
        name += (name.empty() ? "" : ".") + part.get<std::string>();
      shapes[name] = t["shape"].get<std::vector<int64_t>>();
    }
    for (const auto& [name, shape] : want["tensors"].items())
      wantShapes[name] = shape.get<std::vector<int64_t>>();
    QCOMPARE(shapes, wantShapes);
    // The Summary's "N of N mapped to parameters", from the same count.
    QCOMPARE(info["optimizer"]["mapped"].get<size_t>(), want["optimizer_mapped"].get<size_t>());
    QCOMPARE(info["optimizer"]["params"].get<size_t>(), want["model"].size());
    QCOMPARE(info["optimizer"]["groups"].get<size_t>(), size_t(2));
    {
      const ckpt::test::ProcessResult text = ckpt::test::runProcess(
          CKPT_CLI, {"info", QString::fromStdString(root + "/gpt/iter_0000200")});
      const std::string n = std::to_string(want["optimizer_mapped"].get<size_t>());
      QVERIFY2(text.out.contains(QByteArray::fromStdString("; " + n + " of " +
                                                           std::to_string(want["model"].size()) +
                                                           " mapped to parameters\n")),
               text.out.constData());
    }
    // common.pt's args: the hyperparameters (`runs` shows those that differ
    // between runs; here the run's own, as the index reads them).
    const ckpt::ScanResult scanned = ckpt::scanDirectory(root);
    QCOMPARE(scanned.runs.size(), size_t(1));
    std::vector<std::string> problems;
    const ckpt::Hparams hp = ckpt::readHparams(scanned.runs[0], &problems);
    QVERIFY2(problems.empty(), problems.empty() ? "" : problems.front().c_str());
    size_t compared = 0;
    for (const auto& [key, a] : want["args"].items()) {
      if (!a.is_number() && !a.is_string()) continue;
      const auto it = hp.find(key);
      QVERIFY2(it != hp.end(), (key + " is not a hyperparameter").c_str());
      const bool same = a.is_number() ? it->second.isNumber && it->second.number == a.get<double>()
                                      : it->second.text == a.get<std::string>();
      QVERIFY2(same, (key + ": " + it->second.text + " != " + a.dump()).c_str());
      ++compared;
    }
    QVERIFY(compared > 10);
    QCOMPARE(hp.at("ckpt_format").text, std::string("torch_dist"));
    // common.pt names argparse.Namespace: safe where Megatron writes it only.
    const fs::path loose = fs::path(CKPT_BINARY_DIR) / "mg_dist_loose_common.pt";
    fs::copy_file(root + "/gpt/iter_0000200/common.pt", loose,
                  fs::copy_options::overwrite_existing);
    const json inPlace =
        cli({"scan", "--json", QString::fromStdString(root + "/gpt/iter_0000200/common.pt")});
    QCOMPARE(inPlace["files"][0]["verdict"].get<std::string>(), std::string("safe"));
    QCOMPARE(inPlace["files"][0]["profile"].get<std::string>(),
             std::string("a Megatron-LM checkpoint file"));
    const ckpt::test::ProcessResult r = ckpt::test::runProcess(
        CKPT_CLI, {"scan", "--json", QString::fromStdString(loose.string())});
    const json away = json::parse(r.out.toStdString());
    QVERIFY2(away["files"][0]["verdict"] != "safe", away.dump().c_str());
  }

  void torchtitanDumpFolderIsOneRun() {
    const std::string titan = kRoot + "/titan";
    const json got = cli({"ls", QString::fromStdString(titan), "--json"});
    const json& want = expected()["torchtitan"];
    QCOMPARE(got["runs"].size(), size_t(1));
    const json& run = got["runs"][0];
    QCOMPARE(run["name"].get<std::string>(), want["run"].get<std::string>());
    QCOMPARE(run["trainer"].get<std::string>(), std::string("torchtitan"));
    QCOMPARE(run["checkpoints"].size(), want["steps"].size());
    for (size_t i = 0; i < want["steps"].size(); ++i) {
      const json& c = run["checkpoints"][i];
      QVERIFY2(c["error"].is_null(), c.dump().c_str());
      QCOMPARE(c["step"].get<int64_t>(), want["steps"][i].get<int64_t>());
      QCOMPARE(c["kind"].get<std::string>(), std::string("step"));
      QCOMPARE(c["sharded"]["layout"].get<std::string>(), std::string("dcp"));
      QCOMPARE(c["trainer"].get<std::string>(), std::string("torchtitan"));
    }
    // Its tb/<time>/ event files: the run's curves, as the Python reader reads them.
    const json py = runJson(QStringLiteral(CKPT_TORCH_PYTHON),
                            {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/tfevents_reader.py"),
                             QString::fromStdString(titan + "/outputs/tb")});
    const json& tags = py["runs"]["20250101-1200"];
    QVERIFY(!tags.empty());
    const json m = cli({"metrics", QString::fromStdString(titan), "--json"});
    QCOMPARE(m["runs"].size(), size_t(1));
    QCOMPARE(m["runs"][0]["series"].size(), tags.size());
    for (const json& s : m["runs"][0]["series"]) {
      const std::string tag = s["metric"].get<std::string>();
      QVERIFY2(tags.contains(tag), tag.c_str());
      QCOMPARE(s["source"].get<std::string>(), std::string("tensorboard"));
      const std::string d = ckpt::test::compareJson(tags[tag]["points"], s["points"], tag);
      QVERIFY2(d.empty(), d.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestMegatronTitan)
#include "tst_megatron_titan.moc"
