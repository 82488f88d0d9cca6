// A Megatron-LM save opened as one checkpoint, as Inspect and `info` show it.
// make_megatron_titan.py writes the saves with Megatron's keys and folder
// shapes (its docstring says from which of Megatron's functions) and says
// in expected.json, from torch's own tensors, what was written.
// - torch_dist (iter_N/ a DCP folder beside common.pt): the model is the
//   tensors that are not the optimizer's, each optimizer.state.<state>.<key>
//   maps to the parameter <key> (the first element of each, as read through
//   the mapping, is torch's), the step is common.pt's iteration and says so.
// - torch format, several model-parallel ranks (iter_N/mp_rank_*/): the
//   folder opens as one model whose tensors are the ranks' slices joined;
//   each joined tensor's bytes equal torch.cat of the slices as
//   megatron_tp_join.py (PyTorch, Megatron's converter's rules) joins them,
//   and the whole tensor make_megatron_titan.py cut the slices from; each
//   says how it was joined; a name no rule knows, slices whose shapes
//   disagree and a replicated norm that differs are said, per tensor.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/index/megatron.h"
#include "ckpt/index/scanner.h"
#include "cli_json.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = CKPT_FIXTURE_DIR "/megatron_titan";

const json& expected() {
  static const json doc = [] {
    std::ifstream in(kRoot + "/expected.json");
    return json::parse(in);
  }();
  return doc;
}

uint64_t numel(const json& shape) {
  uint64_t n = 1;
  for (const json& d : shape) n *= d.get<uint64_t>();
  return n;
}

// A tensor's bytes as hex, read through our reader (its chunks, joined).
std::string hexOf(const ckpt::CheckpointFile& file, size_t i) {
  const ckpt::TensorData data = file.tensorData(i);
  std::vector<uint8_t> bytes(ckpt::dtypeBytesFor(data.info().dtype, data.numel()));
  if (data.readRaw(0, data.numel(), bytes.data()) != data.numel()) return "(short read)";
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

// The model state's tensor index by state-dict name.
std::map<std::string, int> byName(const ckpt::CheckpointView& view) {
  std::map<std::string, int> out;
  for (const ckpt::StateEntry& e : view.entries()) out[e.name] = e.tensor;
  return out;
}

}  // namespace

class TestMegatronInspect : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(kRoot + "/expected.json"), "no fixtures: run ctest (make_megatron_titan)");
  }

  void torchDistModelAndOptimizer() {
    const json& want = expected()["megatron_dist"]["gpt"];
    const auto file = ckpt::CheckpointFile::open(kRoot + "/mg_dist/gpt/iter_0000200");
    const ckpt::CheckpointView view(*file);

    QCOMPARE(view.step(), std::optional<int64_t>(200));
    QCOMPARE(view.stepSource(), std::string("common.pt"));
    QVERIFY(view.megatronCommon());

    // The model: exactly the parameters Python wrote, with their shapes.
    QVERIFY(view.modelState());
    std::map<std::string, std::vector<int64_t>> got, wantModel;
    for (const ckpt::StateEntry& e : view.entries())
      got[e.name] = file->tensors()[size_t(e.tensor)].shape.vec();
    uint64_t wantCount = 0;
    for (const auto& [name, shape] : want["model"].items()) {
      wantModel[name] = shape.get<std::vector<int64_t>>();
      wantCount += numel(shape);
    }
    QCOMPARE(got, wantModel);
    QCOMPARE(view.parameterCount(), wantCount);

    // The optimizer: one entry per parameter, each state under its name,
    // holding what torch wrote for that parameter.
    QVERIFY(view.optimizer());
    const json& firsts = want["optimizer_firsts"];
    QCOMPARE(view.optimizerParams().size(), firsts.size());
    std::set<std::string> mapped;
    for (const ckpt::OptimizerParam& p : view.optimizerParams()) {
      QVERIFY2(p.problem.empty(), p.problem.c_str());
      QVERIFY2(firsts.contains(p.name), p.name.c_str());
      mapped.insert(p.name);
      const json& w = firsts[p.name];
      const std::vector<int64_t>& shape = wantModel[p.name];
      for (const auto& [moment, tensor] :
           {std::pair{"exp_avg", p.expAvg}, {"exp_avg_sq", p.expAvgSq}, {"fp32_param", p.master}}) {
        QVERIFY2(tensor >= 0, (p.name + " has no " + moment).c_str());
        QCOMPARE(file->tensors()[size_t(tensor)].shape.vec(), shape);
        QCOMPARE(file->tensorData(size_t(tensor)).at(0), w[moment].get<double>());
      }
    }
    QCOMPARE(mapped.size(), firsts.size());
    // common.pt's param_groups are the optimizer's hyperparameters.
    const ckpt::Value* groups = view.optimizer()->get("param_groups");
    QVERIFY(groups && groups->isSequence() && groups->items.size() == 2);
    QCOMPARE(groups->items[0]->get("lr")->number(), want["lr"].get<double>());
    // common.pt is the metadata: args, iteration, ...
    QVERIFY(view.metadata() && view.metadata()->get("args"));
    QVERIFY(view.notes().empty());
  }

  // `info` says the same in words.
  void torchDistInfo() {
    const json& want = expected()["megatron_dist"]["gpt"];
    const ckpt::test::ProcessResult r = ckpt::test::runProcess(
        QStringLiteral(CKPT_CLI),
        {"info", QString::fromStdString(kRoot + "/mg_dist/gpt/iter_0000200")}, {}, 60000);
    QCOMPARE(r.exitCode, 0);
    uint64_t count = 0;
    for (const auto& [name, shape] : want["model"].items()) count += numel(shape);
    std::string grouped = std::to_string(count);
    for (int i = int(grouped.size()) - 3; i > 0; i -= 3) grouped.insert(size_t(i), ",");
    const QString out = r.out;
    QVERIFY2(out.contains("step        200 (from common.pt)\n"), qPrintable(out));
    QVERIFY2(
        out.contains(QString::fromStdString("parameters  " + grouped + " in " +
                                            std::to_string(want["model"].size()) + " tensors\n")),
        qPrintable(out));
    QVERIFY2(out.contains(QString::fromStdString(
                 "optimizer   " + std::to_string(want["model"].size()) + " parameters with state")),
             qPrintable(out));
    QVERIFY2(out.contains("  iteration = 200\n"), qPrintable(out));
  }

  void tensorParallelSlicesJoined() {
    const json& want = expected()["megatron_join"]["good"];
    const std::string folder = want["folder"].get<std::string>();
    const json torchCat =
        ckpt::test::runJson(QStringLiteral(CKPT_TORCH_PYTHON),
                            {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/megatron_tp_join.py"),
                             QString::fromStdString(folder)});
    const auto file = ckpt::CheckpointFile::open(folder);
    QVERIFY(file->shards());
    QCOMPARE(file->shards()->layout(), ckpt::ShardLayout::Megatron);
    QCOMPARE(file->shards()->ranks(), 4);
    const ckpt::CheckpointView view(*file);
    QCOMPARE(view.step(), std::optional<int64_t>(300));
    QCOMPARE(view.modelStateKey(), std::string("model"));
    const std::map<std::string, int> tensors = byName(view);
    QCOMPARE(tensors.size(), torchCat.size());
    QCOMPARE(tensors.size(), want["whole"].size());
    uint64_t count = 0;
    for (const auto& [name, ref] : torchCat.items()) {
      const auto it = tensors.find(name);
      QVERIFY2(it != tensors.end(), ("no tensor " + name).c_str());
      const ckpt::TensorInfo& t = file->tensors()[size_t(it->second)];
      QVERIFY2(t.error.empty(), (name + ": " + t.error).c_str());
      QCOMPARE(t.shape.vec(), ref["shape"].get<std::vector<int64_t>>());
      const std::string hex = hexOf(*file, size_t(it->second));
      QVERIFY2(hex == ref["hex"].get<std::string>(), (name + ": not torch.cat's bytes").c_str());
      QVERIFY2(hex == want["whole"][name]["hex"].get<std::string>(),
               (name + ": not the whole tensor's bytes").c_str());
      count += t.numel();
      // How it was joined, in its note (the rule Megatron's converter uses).
      const std::string& note = file->shards()->tensors()[size_t(t.storage)].note;
      const auto says = [&](const std::string& words) {
        return note.find(words) != std::string::npos;
      };
      const auto endsWith = [&](const std::string& tail) {
        return name.size() >= tail.size() &&
               name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (endsWith("linear_qkv.weight") || endsWith("linear_qkv.bias") ||
          endsWith("word_embeddings.weight") || name == "output_layer.weight")
        QVERIFY2(says("joined along dim 0 from 2 tensor-parallel ranks"),
                 (name + ": " + note).c_str());
      else if (endsWith("linear_proj.weight") || endsWith("linear_fc2.weight"))
        QVERIFY2(says("joined along dim 1 from 2 tensor-parallel ranks"),
                 (name + ": " + note).c_str());
      else if (endsWith("linear_fc1.weight") || endsWith("linear_fc1.bias"))
        QVERIFY2(says("SwiGLU"), (name + ": " + note).c_str());
      else
        QVERIFY2(says("replicated on 2 tensor-parallel ranks") && says("the copies equal"),
                 (name + ": " + note).c_str());
    }
    QCOMPARE(view.parameterCount(), count);
    // Four layers over two stages: stage 1's layers 0 and 1 are layers 2 and 3.
    QVERIFY(tensors.count("decoder.layers.3.mlp.linear_fc2.weight"));
    QVERIFY(!tensors.count("decoder.layers.4.mlp.linear_fc2.weight"));
  }

  // Each rank's optimizer state (Float16OptimizerWithFloat16Params: Adam's
  // moments numbered group after group, the fp32 masters per group) joined
  // per parameter by its parameter's rule: the Optimizer tab's and info's
  // moments by name, byte-equal to torch.cat of the ranks' slices as
  // megatron_tp_join.py --optimizer names them by Megatron's numbering.
  void tensorParallelOptimizerJoined() {
    const json& want = expected()["megatron_join"]["good"];
    const std::string folder = want["folder"].get<std::string>();
    const json torchCat =
        ckpt::test::runJson(QStringLiteral(CKPT_TORCH_PYTHON),
                            {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/megatron_tp_join.py"),
                             QString::fromStdString(folder), QStringLiteral("--optimizer")});
    const auto file = ckpt::CheckpointFile::open(folder);
    const ckpt::CheckpointView view(*file);
    QCOMPARE(view.optimizerParams().size(), torchCat.size());
    QCOMPARE(view.optimizerParams().size(), want["whole"].size());
    std::set<std::string> seen;
    for (const ckpt::OptimizerParam& p : view.optimizerParams()) {
      QVERIFY2(p.problem.empty(), p.problem.c_str());
      QVERIFY2(torchCat.contains(p.name), ("not a parameter: " + p.name).c_str());
      seen.insert(p.name);
      const json& ref = torchCat[p.name];
      for (const auto& [moment, tensor] :
           {std::pair{"exp_avg", p.expAvg}, {"exp_avg_sq", p.expAvgSq}, {"fp32_param", p.master}}) {
        QVERIFY2(tensor >= 0, (p.name + ": no " + moment).c_str());
        const ckpt::TensorInfo& t = file->tensors()[size_t(tensor)];
        QVERIFY2(t.error.empty(), (p.name + " " + moment + ": " + t.error).c_str());
        QCOMPARE(t.shape.vec(), ref[moment]["shape"].get<std::vector<int64_t>>());
        QVERIFY2(hexOf(*file, size_t(tensor)) == ref[moment]["hex"].get<std::string>(),
                 (p.name + " " + moment + ": not torch.cat's bytes").c_str());
      }
    }
    QCOMPARE(seen.size(), torchCat.size());
    // info says so, from the same count.
    const json info =
        ckpt::test::runJson(QStringLiteral(CKPT_CLI),
                            {"info", QString::fromStdString(folder), QStringLiteral("--json")});
    QCOMPARE(info["optimizer"]["mapped"].get<size_t>(), torchCat.size());
    QCOMPARE(info["optimizer"]["groups"].get<size_t>(), size_t(2));
  }

  // Each rank's rng state is its own: shown per rank (rng_state.<rank
  // folder>...), its tensors the rank file's bytes, its Python state as is.
  void rngStatePerRank() {
    const json& want = expected()["megatron_join"]["good"];
    const auto file = ckpt::CheckpointFile::open(want["folder"].get<std::string>());
    std::map<std::string, size_t> byName;
    for (size_t i = 0; i < file->tensors().size(); ++i)
      byName[std::string(file->tensors()[i].name())] = i;
    const ckpt::Value* rng = file->root()->get("rng_state");
    QVERIFY(rng && rng->isDict());
    QCOMPARE(rng->entries.size(), want["rng"].size());
    // Seeded per rank as Megatron seeds them: every tracker state differs.
    std::set<std::string> trackers;
    for (const auto& [dir, r] : want["rng"].items())
      trackers.insert(r["tracker"].get<std::string>());
    QCOMPARE(trackers.size(), want["rng"].size());
    for (const auto& [dir, r] : want["rng"].items()) {
      const std::string name = "rng_state." + dir + ".0.torch_rng_state";
      QVERIFY2(byName.count(name), name.c_str());
      QCOMPARE(hexOf(*file, byName.at(name)), r["torch_rng_state"].get<std::string>());
      const std::string tracker = "rng_state." + dir + ".0.rng_tracker_states.model-parallel-rng";
      QVERIFY2(byName.count(tracker), tracker.c_str());
      QCOMPARE(hexOf(*file, byName.at(tracker)), r["tracker"].get<std::string>());
      const ckpt::Value* mine = rng->get(dir);
      QVERIFY2(mine, dir.c_str());
      const ckpt::Value* first = mine->get(0);
      QVERIFY(first);
      const ckpt::Value* random = first->get("random_rng_state");
      QVERIFY(random && random->kind == ckpt::Value::Kind::Tuple && random->items.size() == 3);
      QCOMPARE(random->items[0]->integer, r["random_version"].get<int64_t>());
      QCOMPARE(random->items[1]->items[0]->integer, r["random_first"].get<int64_t>());
    }
  }

  // The distributed optimizer's distrib_optim.pt beside each rank's file:
  // a part of the checkpoint, its flat buffers shown with their sizes and a
  // note saying they are stored flat, not mapped to parameters.
  void distributedOptimizerShownFlat() {
    const json& want = expected()["megatron"]["pp"];
    const std::string folder = kRoot + "/mg/pp/iter_0000050";
    const auto file = ckpt::CheckpointFile::open(folder);
    QVERIFY(file->shards());
    std::set<std::string> parts;
    for (const ckpt::ShardPart& p : file->shards()->parts()) parts.insert(p.file);
    for (const auto& [rank, counts] : want["distrib_flat"].items()) {
      QVERIFY2(parts.count(rank + "/distrib_optim.pt"), rank.c_str());
      std::map<std::string, uint64_t> shown;
      for (const ckpt::LogicalTensor& t : file->shards()->tensors()) {
        if (t.path.size() < 3 || t.path[0] != ckpt::PathElement(std::string("distrib_optim")) ||
            t.path[1] != ckpt::PathElement(rank))
          continue;
        QVERIFY(t.flat);
        QVERIFY2(t.error.empty(), t.error.c_str());
        uint64_t n = 1;
        for (const int64_t d : t.shape.vec()) n *= uint64_t(d);
        shown[std::get<std::string>(t.path.back())] += n;
      }
      std::map<std::string, uint64_t> wantCounts;
      std::string words;
      for (const auto& [name, n] : counts.items()) {
        wantCounts[name] = n.get<uint64_t>();
      }
      for (const auto& [name, n] : wantCounts)
        words += (words.empty() ? "" : ", ") + name + " " + std::to_string(n);
      QCOMPARE(shown, wantCounts);
      // info says so, with the sizes.
      const ckpt::test::ProcessResult text =
          ckpt::test::runProcess(CKPT_CLI, {"info", QString::fromStdString(folder)});
      QCOMPARE(text.exitCode, 0);
      const std::string line = rank +
                               "/distrib_optim.pt: the distributed optimizer's state, stored "
                               "flat";
      QVERIFY2(text.out.contains(QByteArray::fromStdString(line)), text.out.constData());
      QVERIFY2(text.out.contains(QByteArray::fromStdString(words + " elements")),
               text.out.constData());
    }
  }

  void tensorParallelSlicesNotGuessed() {
    const json& want = expected()["megatron_join"]["bad"];
    const std::string folder = want["folder"].get<std::string>();
    const auto file = ckpt::CheckpointFile::open(folder);
    const ckpt::CheckpointView view(*file);
    const std::map<std::string, int> tensors = byName(view);
    const auto tensor = [&](const json& name) -> const ckpt::TensorInfo& {
      return file->tensors()[size_t(tensors.at(name.get<std::string>()))];
    };
    const auto logical = [&](const json& name) -> const ckpt::LogicalTensor& {
      return file->shards()->tensors()[size_t(tensor(name).storage)];
    };
    for (const json& n : want["unknown"])
      QVERIFY2(tensor(n).error.find("no tensor-parallel rule is known for this name") !=
                   std::string::npos,
               tensor(n).error.c_str());
    for (const json& n : want["disagree"]) {
      QVERIFY2(
          tensor(n).error.find("their shapes disagree (mp_rank_00 [12, 8], mp_rank_01 [12, 9])") !=
              std::string::npos,
          tensor(n).error.c_str());
      QVERIFY_THROWS_EXCEPTION(ckpt::FormatError,
                               (void)file->tensorData(size_t(tensors.at(n.get<std::string>()))));
    }
    for (const json& n : want["differs"]) {
      QVERIFY(tensor(n).error.empty());
      QVERIFY2(
          logical(n).note.find("mp_rank_01's copy DIFFERS from mp_rank_00's") != std::string::npos,
          logical(n).note.c_str());
      QCOMPARE(hexOf(*file, size_t(tensors.at(n.get<std::string>()))),
               want["final_norm_rank0_hex"].get<std::string>());
    }
    // The rest is joined without a word of trouble.
    size_t broken = 0;
    for (const ckpt::TensorInfo& t : file->tensors()) broken += t.error.empty() ? 0 : 1;
    QCOMPARE(broken, want["unknown"].size() + want["disagree"].size());
    // info prints every tensor, then fails naming the first it could not join.
    const ckpt::test::ProcessResult r = ckpt::test::runProcess(
        QStringLiteral(CKPT_CLI), {"info", QString::fromStdString(folder)}, {}, 60000);
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(
        r.err.contains("self_attention.linear_qkv.weight: its slices cannot be joined along dim 0"),
        qPrintable(r.err));
    QVERIFY2(r.out.contains("ERROR: no tensor-parallel rule is known for this name"),
             qPrintable(r.out));
  }

  // The browser's entry for a save of several ranks opens as its folder
  // (joined); a one-rank save as its file.
  void inspectOpensTheFolder() {
    const ckpt::ScanResult scanned = ckpt::scanDirectory(kRoot + "/mg");
    size_t seen = 0;
    for (const ckpt::RunEntry& run : scanned.runs)
      for (const ckpt::CheckpointEntry& c : run.checkpoints) {
        ++seen;
        const std::string open = ckpt::inspectPathOf(c);
        if (c.ranks > 1)
          QCOMPARE(fs::path(open), fs::path(c.folder));
        else
          QCOMPARE(open, c.path);
      }
    QVERIFY(seen >= 4);
  }
};

QTEST_GUILESS_MAIN(TestMegatronInspect)
#include "tst_megatron_inspect.moc"
