// The experiment rules (ckpt/index/experiment.h) without a GUI: stage names,
// branch runs, families, stage order, a fine-tuned run's name, a run's
// checkpoint chain. Expected values are written by hand from the rules.
#include <QtTest>

#include "ckpt/index/experiment.h"

using namespace ckpt;

class TestExperiment : public QObject {
  Q_OBJECT

 private slots:
  void split_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("stage");
    QTest::addColumn<QString>("branch");
    QTest::newRow("pretrain") << "gpt-pretrain"
                              << "gpt"
                              << "pretrain"
                              << "";
    QTest::newRow("sft") << "gpt-sft"
                         << "gpt"
                         << "sft"
                         << "";
    QTest::newRow("dpo underscore") << "my_run_dpo"
                                    << "my_run"
                                    << "dpo"
                                    << "";
    QTest::newRow("underscore pretrain") << "tiny_pretrain"
                                         << "tiny"
                                         << "pretrain"
                                         << "";
    QTest::newRow("upper case") << "Run-SFT"
                                << "Run"
                                << "sft"
                                << "";
    QTest::newRow("rlhf") << "llm-rlhf"
                          << "llm"
                          << "rlhf"
                          << "";
    QTest::newRow("verifier") << "llm_verifier"
                              << "llm"
                              << "verifier"
                              << "";
    QTest::newRow("no suffix") << "baseline"
                               << "baseline"
                               << ""
                               << "";
    QTest::newRow("not a stage") << "gpt-small"
                                 << "gpt-small"
                                 << ""
                                 << "";
    QTest::newRow("suffix only") << "sft"
                                 << "sft"
                                 << ""
                                 << "";
    QTest::newRow("leading separator") << "-sft"
                                       << "-sft"
                                       << ""
                                       << "";
    QTest::newRow("inside the name") << "sft-run"
                                     << "sft-run"
                                     << ""
                                     << "";
    QTest::newRow("nested dir") << "exp/gpt-dpo"
                                << "exp/gpt"
                                << "dpo"
                                << "";
    QTest::newRow("separator in dir only") << "exp-1/sft"
                                           << "exp-1/sft"
                                           << ""
                                           << "";
    QTest::newRow("branch") << "tiny-pretrain@200"
                            << "tiny"
                            << "pretrain"
                            << "@200";
    QTest::newRow("second branch") << "tiny-pretrain@200-2"
                                   << "tiny"
                                   << "pretrain"
                                   << "@200-2";
    QTest::newRow("branch of a plain run") << "baseline@50"
                                           << "baseline"
                                           << ""
                                           << "@50";
    QTest::newRow("not a branch") << "run@home"
                                  << "run@home"
                                  << ""
                                  << "";
    QTest::newRow("not a branch either") << "run@12-x"
                                         << "run@12-x"
                                         << ""
                                         << "";
    // Past int64_t: a name, never a step to parse (sorting such a run threw).
    QTest::newRow("step too long") << "run@1234567890123456789012"
                                   << "run@1234567890123456789012"
                                   << ""
                                   << "";
  }
  void split() {
    QFETCH(QString, name);
    QFETCH(QString, family);
    QFETCH(QString, stage);
    QFETCH(QString, branch);
    const StageName s = splitStageName(name.toStdString());
    QCOMPARE(QString::fromStdString(s.family), family);
    QCOMPARE(QString::fromStdString(s.stage), stage);
    QCOMPARE(QString::fromStdString(s.branch), branch);
  }

  // The bug two stage parsers caused: fine-tuning "tiny_pretrain" named the
  // new run "tiny_pretrain-sft", which the browser put in another family.
  void fineTunedRunNames() {
    QCOMPARE(stageRunName("tiny_pretrain", "sft"), std::string("tiny-sft"));
    QCOMPARE(stageRunName("shakespeare-pretrain", "sft"), std::string("shakespeare-sft"));
    QCOMPARE(stageRunName("shakespeare-sft", "dpo"), std::string("shakespeare-dpo"));
    QCOMPARE(stageRunName("shakespeare", "sft"), std::string("shakespeare-sft"));
    QCOMPARE(stageRunName("tiny-pretrain@200", "sft"), std::string("tiny-sft"));
    QCOMPARE(stageRunName("Big_PRETRAIN", "rlhf"), std::string("Big-rlhf"));
    for (const char* parent : {"tiny_pretrain", "tiny-pretrain@200-2", "tiny"}) {
      const std::vector<std::string> f = familiesOf({parent, stageRunName(parent, "sft")});
      QCOMPARE(f[0], std::string("tiny"));
      QCOMPARE(f[1], std::string("tiny"));
    }
  }

  void families() {
    const std::vector<std::string> names = {
        "gpt",  "gpt-sft", "a-b",    "a-c",       "solo-dpo", "m-pretrain", "m-pretrain@100",
        "base", "base@40", "x_rlhf", "x_verifier"};
    const std::vector<std::string> expected = {"gpt", "gpt",  "",     "",  "", "m",
                                               "m",   "base", "base", "x", "x"};
    QCOMPARE(familiesOf(names), expected);
    QVERIFY(familiesOf({}).empty());
    // Two plain runs of one name never make a family (nothing marks a stage).
    QCOMPARE(familiesOf({"run", "run"}), (std::vector<std::string>{"", ""}));
  }

  void stageOrder() {
    std::vector<std::string> names = {
        "t-dpo",      "t-rlhf@30",        "t-sft",         "t",
        "t-rlhf",     "t-pretrain@200-2", "t-pretrain@50", "t-pretrain",
        "t-verifier", "t-pretrain@200"};
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return stageBefore(splitStageName(a), splitStageName(b));
    });
    const std::vector<std::string> expected = {
        "t",     "t-pretrain", "t-pretrain@50", "t-pretrain@200", "t-pretrain@200-2",
        "t-sft", "t-dpo",      "t-verifier",    "t-rlhf",         "t-rlhf@30"};
    QCOMPARE(names, expected);
    QVERIFY(stageRank("") < stageRank("pretrain"));
    QVERIFY(stageRank("SFT") == stageRank("sft"));
    QVERIFY(isStageWord("GRPO"));
    QVERIFY(!isStageWord("small"));
  }

  void chain() {
    auto entry = [](const char* file, std::optional<int64_t> step, CheckpointKind kind,
                    const char* error = "") {
      CheckpointEntry c;
      c.file = c.path = file;
      c.step = step;
      c.kind = kind;
      c.error = error;
      return c;
    };
    // In the scanner's order: steps, then the final, best and latest copies.
    const std::vector<CheckpointEntry> run = {
        entry("r_step100.pt", 100, CheckpointKind::Step),
        entry("r_step200.pt", 200, CheckpointKind::Step, "truncated"),
        entry("r_step300.pt", 300, CheckpointKind::Step),
        entry("r_final.pt", 400, CheckpointKind::Final),
        entry("best_checkpoint.pt", 300, CheckpointKind::Best),  // a copy of step 300
        entry("best_other.pt", 200,
              CheckpointKind::Best),  // step 200 is unreadable: this one stays
        entry("latest.pt", std::nullopt, CheckpointKind::Latest),
    };
    std::vector<std::string> files;
    for (const CheckpointEntry* c : checkpointChain(run)) files.push_back(c->file);
    QCOMPARE(files, (std::vector<std::string>{"r_step100.pt", "r_step300.pt", "r_final.pt",
                                              "best_other.pt", "latest.pt"}));
  }
};

QTEST_APPLESS_MAIN(TestExperiment)
#include "tst_experiment.moc"
