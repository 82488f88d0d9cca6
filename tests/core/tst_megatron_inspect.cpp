// A Megatron-LM save opened as one checkpoint, as Inspect and `info` show it.
// make_megatron_titan.py writes the saves with Megatron's keys and folder
// shapes (its docstring says from which of Megatron's functions) and says
// in expected.json, from torch's own tensors, what was written.
// - torch_dist (iter_N/ a DCP folder beside common.pt): the model is the
//   tensors that are not the optimizer's, each optimizer.state.<state>.<key>
//   maps to the parameter <key> (the first element of each, as read through
//   the mapping, is torch's), the step is common.pt's iteration and says so.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/tensor_data.h"
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
};

QTEST_GUILESS_MAIN(TestMegatronInspect)
#include "tst_megatron_inspect.moc"
