// ckptscope-cli's training subcommands as a user runs them: ckptscope-cli
// hands them to ckptscope-train; output formats, exit codes, one-line errors.
#include <QtTest>
#include <map>

#include <filesystem>
#include <fstream>

#include "../core/json_compare.h"
#include "../core/run_outputs.h"
#include "../core/run_process.h"
#include "ckpt/config/config_schema.h"
#include "ckpt/config/run_config.h"
#include "run_files.h"

using ckpt::test::json;

namespace {

using Run = ckpt::test::ProcessResult;

Run cli(const QStringList& args, const QString& cwd) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, cwd);
}

}  // namespace

class TestTrainCli : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

 private slots:
  void initTestCase() {
    std::ofstream corpus(m_dir.filePath("corpus.txt").toStdString());
    for (int i = 0; i < 60; ++i)
      corpus << "Sing, O goddess, the anger of Achilles son of Peleus, line " << i << ".\n";
    std::ofstream(m_dir.filePath("run.json").toStdString()) << R"({
      "model": {"vocab_size": 256, "d_model": 32, "n_layers": 1, "n_heads": 4, "ffn_hidden_size": 80, "max_seq_len": 32},
      "training": {"run_name": "cli", "batch_size": 2, "micro_batch_size": 2, "seq_len": 32, "learning_rate": 0.003,
                   "max_steps": 6, "eval_every": 3, "save_every": 3, "log_every": 2, "mixed_precision": "fp32"},
      "data": {"path": "corpus.txt"}})";
  }

  // train --help (and --help after any trainer command): the usage, then
  // every RUN.json field from the config's tables with its type, default,
  // bound and help; exit 0. The usage names the remote forms.
  void trainHelpListsEveryField() {
    for (const QStringList& args :
         {QStringList{"train", "--help"}, QStringList{"train", "--config", "x.json", "-h"},
          QStringList{"resume", "--help"}, QStringList{"finetune", "x.pt", "-h"},
          QStringList{"score", "--help"}, QStringList{"generate", "--help"}}) {
      const Run r = cli(args, m_dir.path());
      QCOMPARE(r.exitCode, 0);
      QVERIFY2(r.out.startsWith("usage:\n  ckptscope-cli train --config RUN.json"),
               qPrintable(args.join(' ') + ": " + r.err));
      QVERIFY(r.out.contains("ckptscope-cli resume ssh://HOST/CKPT --help"));
      QVERIFY(r.out.endsWith(QByteArray::fromStdString(ckpt::runConfigHelp())));
      int listed = 0;
      for (const ckpt::ConfigSection* s :
           {&ckpt::modelConfigSection(), &ckpt::trainingConfigSection(),
            &ckpt::dataConfigSection()}) {
        for (const ckpt::ConfigField& f : s->fields) {
          const QByteArray line =
              QByteArray::fromStdString("\n  " + f.name + ": " + f.typeText() + ", ");
          QVERIFY2(r.out.contains(line), line.constData());
          QVERIFY2(r.out.contains(QByteArray::fromStdString(f.help)), f.help.c_str());
          ++listed;
        }
      }
      // 21 model + 29 training (allreduce_overlap the newest) + 4 data, as tst_config counts.
      QCOMPARE(listed, 54);
      QVERIFY(r.out.contains("\n  max_steps: int, default 1000, > 0\n      Optimizer steps\n"));
      QVERIFY(r.err.isEmpty());
    }
    // A remote checkpoint's options, before anything connects (port 9: nothing there).
    for (const char* command : {"resume", "finetune"}) {
      const Run r =
          cli({command, "ssh://127.0.0.1:9/runs/tiny/step_100.pt", "--help"}, m_dir.path());
      QCOMPARE(r.exitCode, 0);
      QVERIFY2(r.out.startsWith("usage (a checkpoint on another machine"), r.out.constData());
      QVERIFY(r.out.contains("--sbatch [--print-script | --script FILE]"));
      QVERIFY(r.err.isEmpty());
    }
  }

  void trainResumeFinetuneScoreGenerate() {
    const QString d = m_dir.path();
    Run r = cli({"train", "--config", "run.json", "--out", "runs/cli", "max_steps=4"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    // Not a terminal: the reference library's log lines.
    QVERIFY(r.out.contains("step=2 loss="));
    QVERIFY(r.out.contains("step=4 loss="));
    QVERIFY(!r.out.contains("step=6 loss="));  // the key=value override won
    QVERIFY(r.out.contains("finished at step 4: runs/cli/cli_final.pt"));
    QVERIFY(QFile::exists(d + "/runs/cli/cli_step3.pt"));

    r = cli({"resume", "runs/cli/cli_final.pt", "--max-steps", "6"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(r.out.contains("step=6 loss="));
    QVERIFY(r.err.contains("from step 4 to 6"));

    r = cli({"finetune", "runs/cli/cli_final.pt", "--data", "corpus.txt", "--max-steps", "2",
             "--stage", "dpo"},
            d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(QFile::exists(d + "/runs/cli-dpo/cli-dpo_final.pt"));

    r = cli({"score", "runs/cli/cli_final.pt", "--data", "corpus.txt", "--seq-len", "16", "--json"},
            d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const json s = json::parse(r.out.toStdString());
    const qint64 bytes = QFileInfo(d + "/corpus.txt").size();
    QCOMPARE(s["windows"].get<qint64>(), bytes / 16);  // byte tokens, last partial window dropped
    QCOMPARE(s["tokens"].get<qint64>(), (bytes / 16) * 16);
    QVERIFY(s["loss"].get<double>() > 0 && s["loss"].get<double>() < 6.0);

    const QStringList gen{"generate",         "runs/cli/cli_final.pt",
                          "--prompt",         "Sing",
                          "--max-new-tokens", "12",
                          "--seed",           "3",
                          "--top-k",          "8"};
    const Run g1 = cli(gen, d), g2 = cli(gen, d);
    QVERIFY2(g1.exitCode == 0, g1.err.constData());
    QVERIFY(g1.out.startsWith("Sing"));
    QCOMPARE(g1.out, g2.out);  // seeded
  }

  // A run in a folder whose name is not UTF-8 (Latin-1 "exp\xe9"), as
  // a user's shell names it: train, then resume an earlier checkpoint, which
  // branches. The branch is made (its lineage.json: nlohmann's dump() threw,
  // exit 1 after the folder was made) and its curve, as `metrics --json`
  // gives it and Python reads it, starts with the parent's history.
  void branchInAFolderNamedInLatin1() {
    const QString script = QStringLiteral(
        "set -e; cd \"$1\"; cli=\"$2\"; dir=$(printf 'exp\\351')\n"
        "\"$cli\" train --config run.json --out \"$dir/cli\" max_steps=4 log_every=1 >/dev/null\n"
        "\"$cli\" resume \"$dir/cli/cli_step3.pt\" --max-steps 5 >/dev/null\n"
        "test -f \"$dir/cli@3/lineage.json\"\n"
        "\"$cli\" metrics \"$dir/cli@3\" --json | \"$3\" -c '\n"
        "import json, sys\n"
        "for s in json.load(sys.stdin)[\"runs\"][0][\"series\"]:\n"
        "    if s[\"metric\"] == \"loss\":\n"
        "        print(\" \".join(\"%d:%r\" % (p[0], p[1]) for p in s[\"points\"]))'\n");
    const Run r = ckpt::test::runProcess(
        QStringLiteral("/bin/sh"), {"-c", script, "sh", m_dir.path(), QStringLiteral(CKPT_CLI),
                                    QStringLiteral(CKPT_TORCH_PYTHON)});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    // The truth: the parent's steps 1-3 from its metrics.jsonl, then the branch's 4-5.
    const std::string root = m_dir.path().toStdString() + "/exp\xe9/";
    auto losses = [](const std::string& file) {
      std::vector<std::pair<int64_t, double>> out;
      std::ifstream in(file);
      for (std::string line; std::getline(in, line);) {
        const json j = json::parse(line);
        if (j.contains("loss")) out.emplace_back(j["step"].get<int64_t>(), j["loss"].get<double>());
      }
      return out;
    };
    const auto parent = losses(root + "cli/metrics.jsonl");
    const auto own = losses(root + "cli@3/metrics.jsonl");
    QCOMPARE(parent.size(), size_t(4));
    QCOMPARE(own.size(), size_t(2));
    QString want;
    for (const auto& [step, loss] : {parent[0], parent[1], parent[2], own[0], own[1]}) {
      char b[64];
      std::snprintf(b, sizeof b, "%lld:%.17g ", static_cast<long long>(step), loss);
      want += QString::fromLatin1(b);
    }
    // Python's repr is the shortest text that reads back; compare as numbers.
    const QStringList got = QString::fromUtf8(r.out).trimmed().split(' ');
    const QStringList wanted = want.trimmed().split(' ');
    QCOMPARE(got.size(), wanted.size());
    for (qsizetype i = 0; i < got.size(); ++i) {
      const QStringList g = got[i].split(':'), w = wanted[i].split(':');
      QCOMPARE(g[0], w[0]);
      QCOMPARE(g[1].toDouble(), w[1].toDouble());
    }
    std::filesystem::remove_all(root);  // QTemporaryDir names files by QString: not these
  }

  // A run named with an underscore stage ("cli_pretrain") fine-tuned to sft
  // gives "cli-sft", and `ls` puts the two in one family, in training order.
  void finetunedRunJoinsItsFamily() {
    const QString d = m_dir.path();
    Run r = cli({"train", "--config", "run.json", "--out", "fam/cli_pretrain", "max_steps=2",
                 "run_name=cli_pretrain"},
                d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    r = cli({"finetune", "fam/cli_pretrain/cli_pretrain_final.pt", "--data", "corpus.txt",
             "--max-steps", "1"},
            d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(QFile::exists(d + "/fam/cli-sft/cli-sft_final.pt"));
    r = cli({"ls", "fam", "--json"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const json runs = json::parse(r.out.toStdString())["runs"];
    QCOMPARE(runs.size(), size_t(2));
    std::map<std::string, std::pair<json, json>> place;
    for (const json& run : runs)
      place[run["name"].get<std::string>()] = {run["family"], run["stage"]};
    QCOMPARE(place["cli_pretrain"].first, json("cli"));
    QCOMPARE(place["cli_pretrain"].second, json("pretrain"));
    QCOMPARE(place["cli-sft"].first, json("cli"));
    QCOMPARE(place["cli-sft"].second, json("sft"));
    r = cli({"ls", "fam"}, d);
    QVERIFY2(r.out.contains("cli-sft  (1 checkpoint)  [family cli, stage sft]"), r.out.constData());
  }

  // A second train into the same directory refuses and changes nothing;
  // --overwrite moves the earlier files to a dated .trash/ folder.
  void secondTrainRefusesThenOverwriteMovesToTrash() {
    const QString d = m_dir.path();
    const std::string out = (d + "/runs/dup").toStdString();
    Run r = cli({"train", "--config", "run.json", "--out", "runs/dup", "max_steps=3"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto before = ckpt::test::fileDigests(out);
    QCOMPARE(before.size(), size_t(3));  // best_checkpoint.pt, cli_final.pt, metrics.jsonl
    r = cli({"train", "--config", "run.json", "--out", "runs/dup", "max_steps=3"}, d);
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY2(r.err.startsWith("ckptscope-cli: runs/dup already holds run 'cli' ("),
             r.err.constData());
    QVERIFY2(r.err.contains("ckptscope-cli resume runs/dup") && r.err.contains("--out") &&
                 r.err.contains("--overwrite"),
             r.err.constData());
    QVERIFY(before == ckpt::test::fileDigests(out));

    r = cli({"train", "--config", "run.json", "--out", "runs/dup", "max_steps=3", "--overwrite"},
            d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY2(r.err.contains("--overwrite"), r.err.constData());
    const QStringList trash =
        QDir(d + "/runs/dup/.trash").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(trash.size(), 1);
    QVERIFY(QRegularExpression("^\\d{8}-\\d{6}$").match(trash[0]).hasMatch());
    // The old files, byte for byte, in the trash; a new run with one history.
    const auto moved = ckpt::test::fileDigests(out + "/.trash/" + trash[0].toStdString());
    QVERIFY(moved == before);
    const auto lines = ckpt::test::metricsLines(out);
    QCOMPARE(lines.size(), size_t(3));
    for (size_t i = 0; i < lines.size(); ++i)
      QCOMPARE(lines[i]["step"].get<int64_t>(), int64_t(i + 1));
    QVERIFY(QFile::exists(d + "/runs/dup/cli_final.pt"));
  }

  // resume DIR: the newest checkpoint is truncated, the next has a flipped
  // byte inside a tensor record; it resumes from the third, naming both.
  void resumeDirFallsBackPastDamage() {
    const QString d = m_dir.path();
    const std::string out = (d + "/runs/fb").toStdString();
    Run r = cli({"train", "--config", "run.json", "--out", "runs/fb", "max_steps=6", "save_every=1",
                 "eval_every=0"},
                d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto finalWeights = ckpt::test::weightBytes(out + "/cli_final.pt");
    {
      std::string bytes = ckpt::test::fileContents(out + "/cli_final.pt");
      std::ofstream(out + "/cli_final.pt", std::ios::binary | std::ios::trunc)
          << bytes.substr(0, bytes.size() * 6 / 10);
      bytes = ckpt::test::fileContents(out + "/cli_step5.pt");
      const size_t at = bytes.find("data/0");
      QVERIFY(at != std::string::npos);
      const size_t inside = ((at + 6 + 4 + 63) / 64) * 64 + 64;
      bytes[inside] = char(bytes[inside] ^ 0x01);
      std::ofstream(out + "/cli_step5.pt", std::ios::binary | std::ios::trunc) << bytes;
    }
    const auto damaged = ckpt::test::fileDigests(out);

    r = cli({"resume", "runs/fb"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY2(r.err.contains("skipped cli_final.pt: truncated"), r.err.constData());
    QVERIFY2(r.err.contains("skipped cli_step5.pt: ") && r.err.contains("CRC mismatch"),
             r.err.constData());
    QVERIFY2(r.err.contains("resuming runs/fb/cli_step4.pt"), r.err.constData());
    QVERIFY2(r.err.contains("from step 4 to 6"), r.err.constData());
    // Not the newest: a branch beside it; the damaged files stay as they were.
    QVERIFY2(r.out.contains("finished at step 6: " + QByteArray::fromStdString(d.toStdString()) +
                            "/runs/cli@4/cli@4_final.pt"),
             r.out.constData());
    QVERIFY(damaged == ckpt::test::fileDigests(out));
    QVERIFY(ckpt::test::weightBytes((d + "/runs/cli@4/cli@4_final.pt").toStdString()) ==
            finalWeights);

    // --in-place: the damaged later files go to .trash/, the run ends where it is.
    r = cli({"resume", "runs/fb", "--in-place"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY2(r.out.contains("finished at step 6: runs/fb/cli_final.pt"), r.out.constData());
    QVERIFY(ckpt::test::weightBytes(out + "/cli_final.pt") == finalWeights);
    const QStringList trash =
        QDir(d + "/runs/fb/.trash").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QCOMPARE(trash.size(), 1);
    const auto moved = ckpt::test::fileDigests(out + "/.trash/" + trash[0].toStdString());
    QCOMPARE(moved.size(), size_t(2));
    QCOMPARE(moved.at("cli_final.pt"), damaged.at("cli_final.pt"));
    QCOMPARE(moved.at("cli_step5.pt"), damaged.at("cli_step5.pt"));
    const auto lines = ckpt::test::metricsLines(out);
    QCOMPARE(lines.size(), size_t(6));
    for (size_t i = 0; i < lines.size(); ++i)
      QCOMPARE(lines[i]["step"].get<int64_t>(), int64_t(i + 1));

    // Nothing intact: exit 1, and it says so.
    QDir().mkpath(d + "/runs/none");
    std::ofstream(d.toStdString() + "/runs/none/cli_step1.pt", std::ios::binary)
        << ckpt::test::fileContents(out + "/cli_step1.pt").substr(0, 300);
    r = cli({"resume", "runs/none"}, d);
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("skipped cli_step1.pt: "), r.err.constData());
    QVERIFY2(r.err.contains("ckptscope-cli: runs/none: no intact checkpoint to resume"),
             r.err.constData());
  }

  void wrappedCheckpoints() {
    // The checkpoint of step 3 re-saved by python3-torch as a DDP-wrapped
    // (and compiled) model would have saved it: score gives the same loss,
    // and resuming it gives bit for bit the weights that resuming the plain
    // file gives.
    const QString d = m_dir.path();
    QDir(d).mkpath("runs/plain");
    QFile::copy(d + "/runs/cli/cli_step3.pt", d + "/runs/plain/cli_step3.pt");
    const QString script = QStringLiteral(CKPT_SOURCE_DIR "/tests/python/wrap_state_dict.py");
    for (const char* prefix : {"module.", "module._orig_mod."}) {
      const QString dir = QString("runs/wrapped-%1").arg(QString(prefix).count('.'));
      QDir(d).mkpath(dir);
      const auto py = ckpt::test::runProcess(
          QStringLiteral(CKPT_TORCH_PYTHON),
          {script, d + "/runs/cli/cli_step3.pt", d + "/" + dir + "/cli_step3.pt", prefix});
      QVERIFY2(py.exitCode == 0, py.err.constData());

      const QStringList score{"--data", "corpus.txt", "--seq-len", "16", "--json"};
      const Run plain = cli(QStringList{"score", "runs/plain/cli_step3.pt"} + score, d);
      const Run wrapped = cli(QStringList{"score", dir + "/cli_step3.pt"} + score, d);
      QVERIFY2(plain.exitCode == 0, plain.err.constData());
      QVERIFY2(wrapped.exitCode == 0, wrapped.err.constData());
      QCOMPARE(json::parse(wrapped.out.toStdString())["loss"].get<double>(),
               json::parse(plain.out.toStdString())["loss"].get<double>());

      const Run r = cli({"resume", dir + "/cli_step3.pt", "--max-steps", "5"}, d);
      QVERIFY2(r.exitCode == 0, r.err.constData());
    }
    const Run r = cli({"resume", "runs/plain/cli_step3.pt", "--max-steps", "5"}, d);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto want = ckpt::test::weightBytes((d + "/runs/plain/cli_final.pt").toStdString());
    QVERIFY(!want.empty());
    for (const char* dir : {"runs/wrapped-1", "runs/wrapped-2"})
      QVERIFY2(ckpt::test::weightBytes((d + "/" + dir + "/cli_final.pt").toStdString()) == want,
               dir);
  }

  void errors() {
    const QString d = m_dir.path();
    Run r = cli({"train", "--config", "run.json", "ffn_hidden_size=32"}, d);
    QCOMPARE(r.exitCode, 1);
    QCOMPARE(QString::fromUtf8(r.err),
             "ckptscope-cli: ffn_hidden_size (32) must exceed d_model (32)\n");
    r = cli({"train", "--config", "missing.json"}, d);
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.startsWith("ckptscope-cli: missing.json: cannot open"));
    r = cli({"train"}, d);
    QCOMPARE(r.exitCode, 2);
    r = cli({"score", "x.pt", "--bogus"}, d);
    QCOMPARE(r.exitCode, 2);
    r = cli({"resume", "nothere.pt"}, d);
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.startsWith("ckptscope-cli: nothere.pt: cannot open"));
    QCOMPARE(r.err.count('\n'), 1);
  }
};

QTEST_GUILESS_MAIN(TestTrainCli)
#include "tst_train_cli.moc"
