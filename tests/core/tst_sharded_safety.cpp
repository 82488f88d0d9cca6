// The safety verdict of checkpoints of many files (make_sharded.py's
// layouts): every file a layout names scanned, the worst file's verdict
// named, and each file judged under its layout's profile where it sits
// (DCP's .metadata, FSDP's and DeepSpeed's rank files) and only there.
#include <QRegularExpression>
#include <QtTest>

#include <filesystem>

#include "ckpt/format/checkpoint_safety.h"
#include "json_compare.h"
#include "run_process.h"

using ckpt::test::json;

namespace {

using Run = ckpt::test::ProcessResult;

const QString kDir = QStringLiteral(CKPT_FIXTURE_DIR "/sharded");

Run cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, {}, 60000);
}

json manifest() {
  return ckpt::test::readJsonFile(kDir.toStdString() + "/manifest.json");
}

// A fixture file copied to a folder of its own under the build tree, as
// `name`: the same bytes where no layout names them.
std::string copyElsewhere(const QString& file, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(CKPT_BINARY_DIR) / "tst_sharded_plain";
  std::filesystem::create_directories(dir);
  const std::filesystem::path to = dir / name;
  std::filesystem::copy_file((kDir + "/" + file).toStdString(), to,
                             std::filesystem::copy_options::overwrite_existing);
  return to.string();
}
}  // namespace

class TestShardedSafety : public QObject {
  Q_OBJECT

 private slots:
  // The safety scan of an FSDP rank file where it sits in its layout: the
  // sharded tensors' classes are torch's own, which the FSDP profile
  // vouches for (and protocol 2's getattr of the nested ProcessGroupState,
  // Python 3.11's of an enum member): safe, every global innocuous, the
  // profile said. The same bytes anywhere else: judged by the general
  // tables, never safe, the writer's classes not innocuous.
  void fsdpSafety_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("ShardedTensor") << "fsdp_ws2/model_rank1.pt";
    QTest::newRow("DTensor") << "fsdp_dtensor_ws2/model_rank1.pt";
    QTest::newRow("LOCAL_STATE_DICT") << "fsdp_local_ws2/model_rank0.pt";
  }
  void fsdpSafety() {
    QFETCH(QString, file);
    Run r = cli({"scan", kDir + "/" + file, "--json"});
    QCOMPARE(r.exitCode, 0);
    json got = json::parse(r.out.toStdString())["files"][0];
    QCOMPARE(got["verdict"].get<std::string>(), std::string("safe"));
    QCOMPARE(got["profile"].get<std::string>(), std::string("an FSDP rank file"));
    bool anyDistributed = false;
    for (const json& g : got["globals"]) {
      QVERIFY2(g["level"] == "innocuous", g.dump().c_str());
      anyDistributed |= g["module"].get<std::string>().rfind("torch.distributed.", 0) == 0;
    }
    QVERIFY(anyDistributed);
    r = cli({"scan", kDir + "/" + file});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("(safe for an FSDP rank file)"), r.out.constData());

    const std::string plain = copyElsewhere(file, "model.pt");
    r = cli({"scan", "--json", QString::fromStdString(plain)});
    got = json::parse(r.out.toStdString())["files"][0];
    QVERIFY2(got["verdict"] != "safe", r.out.constData());
    QVERIFY(!got.contains("profile"));
    QCOMPARE(r.exitCode, got["verdict"] == "dangerous" ? 3 : 0);
    for (const json& g : got["globals"])
      if (g["module"].get<std::string>().rfind("torch.distributed.", 0) == 0)
        QVERIFY2(g["level"] != "innocuous", g.dump().c_str());
  }

  // DCP's .metadata and DeepSpeed's files: safe where their layout names
  // them (the profile shown), not safe as plain files elsewhere, in text
  // and JSON with their exit statuses.
  void layoutProfilesOnlyThere_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("profile");
    QTest::newRow("DCP .metadata") << "dcp_ws3/.metadata"
                                   << "a DCP checkpoint's metadata";
    QTest::newRow("DCP .metadata with StorageMeta") << "dcp_ws2_storage_meta/.metadata"
                                                    << "a DCP checkpoint's metadata";
    QTest::newRow("DCP .metadata, older writer") << "dcp_ws2_old/.metadata"
                                                 << "a DCP checkpoint's metadata";
    QTest::newRow("DeepSpeed ZeRO-3 optimizer states")
        << "ds_z3_ws2/global_step1000/zero_pp_rank_1_mp_rank_00_optim_states.pt"
        << "a DeepSpeed checkpoint";
    QTest::newRow("DeepSpeed ZeRO-2 model states")
        << "ds_z2_ws1/global_step1000/mp_rank_00_model_states.pt"
        << "a DeepSpeed checkpoint";
  }
  void layoutProfilesOnlyThere() {
    QFETCH(QString, file);
    QFETCH(QString, profile);
    const ckpt::CheckpointSafety c = ckpt::scanCheckpoint((kDir + "/" + file).toStdString());
    // (.metadata names its whole checkpoint, whose first file it is.)
    const ckpt::FileSafety& f = c.files.at(0);
    QCOMPARE(f.report.verdict, ckpt::Verdict::Safe);
    QCOMPARE(QString::fromStdString(f.report.summary()), "safe for " + profile);
    for (const ckpt::GlobalUse& g : f.report.globals)
      QVERIFY2(g.level == ckpt::SafetyLevel::Innocuous, (g.module + "." + g.name).c_str());
    Run r = cli({"scan", kDir + "/" + file});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains(("(safe for " + profile + ")").toUtf8()), r.out.constData());
    r = cli({"scan", "--json", kDir + "/" + file});
    QCOMPARE(r.exitCode, 0);
    const json doc = json::parse(r.out.toStdString());
    QCOMPARE(doc["files"][0]["verdict"].get<std::string>(), std::string("safe"));
    QCOMPARE(QString::fromStdString(doc["files"][0]["profile"].get<std::string>()), profile);

    // Elsewhere, as a plain .pt: the writer's classes are not innocuous.
    const std::string plain = copyElsewhere(file, "plain.pt");
    const ckpt::CheckpointSafety e = ckpt::scanCheckpoint(plain);
    QVERIFY(!e.sharded());
    QCOMPARE(e.files.at(0).report.profile, ckpt::SafetyProfile::None);
    QVERIFY2(e.verdict != ckpt::Verdict::Safe, e.summary().c_str());
    size_t writers = 0;
    for (const ckpt::GlobalUse& g : e.files[0].report.globals)
      if (g.module.rfind("torch.distributed.", 0) == 0 || g.module.rfind("deepspeed.", 0) == 0 ||
          (g.module == "__builtin__" && g.name == "set")) {
        ++writers;
        QVERIFY2(g.level != ckpt::SafetyLevel::Innocuous, (g.module + "." + g.name).c_str());
      }
    QVERIFY(writers > 0);
    r = cli({"scan", "--json", QString::fromStdString(plain)});
    const json p = json::parse(r.out.toStdString())["files"][0];
    QCOMPARE(p["verdict"].get<std::string>(), std::string(ckpt::verdictName(e.verdict)));
    QVERIFY(!p.contains("profile"));
    QCOMPARE(r.exitCode, e.verdict == ckpt::Verdict::Dangerous ? 3 : 0);
  }

  // The safety of a whole sharded checkpoint: every file its layout names
  // scanned (a .distcp part archive by archive, where .metadata places
  // them), the verdict the worst file's, that file named. The fixtures plant
  // one os.system call in one file (manifest "safety"); the other files are
  // the plain fixtures' and say nothing dangerous.
  void safetyWholeCheckpoint_data() {
    QTest::addColumn<QString>("layout");
    const json safety = manifest()["safety"];
    for (const auto& [name, spec] : safety.items())
      QTest::newRow(name.c_str()) << QString::fromStdString(name);
  }
  void safetyWholeCheckpoint() {
    QFETCH(QString, layout);
    const json want = manifest()["safety"][layout.toStdString()];
    const std::string evil = want["file"].get<std::string>();
    const std::string global = want["dangerous"].get<std::string>();
    const ckpt::CheckpointSafety c = ckpt::scanCheckpoint((kDir + "/" + layout).toStdString());
    QCOMPARE(c.verdict, ckpt::Verdict::Dangerous);
    QVERIFY(c.sharded());
    QVERIFY(c.worstFile());
    QCOMPARE(c.worstFile()->file, evil);
    QCOMPARE(c.filesWithVerdict(), size_t(1));
    QCOMPARE(c.offenders(ckpt::SafetyLevel::Dangerous), std::vector<std::string>{global});
    for (const ckpt::FileSafety& f : c.files)
      if (f.file != evil) QVERIFY2(f.report.verdict != ckpt::Verdict::Dangerous, f.file.c_str());
    QCOMPARE(QString::fromStdString(c.summary()),
             QString::fromStdString("dangerous: " + evil + " would run code: " + global));
    if (evil == ".metadata") {
      // No Metadata at all: the files it would name are unknown.
      QVERIFY(!c.error.empty());
      QCOMPARE(c.files.size(), size_t(1));
    } else {
      QVERIFY2(c.error.empty(), c.error.c_str());
      // Every rank file the layout names (DCP: and .metadata) was scanned.
      const int ranks = want["ranks"].get<int>();
      QCOMPARE(c.files.size(), size_t(ranks ? ranks : 3) + (c.layout == "DCP" ? 1 : 0));
    }
    // The distcp part's globals name the archive they are in.
    if (evil.find(".distcp") != std::string::npos)
      for (const ckpt::GlobalUse& g : c.worstFile()->report.globals)
        if (g.level == ckpt::SafetyLevel::Dangerous)
          QVERIFY2(g.record.rfind("'extra_state' at byte 0: ", 0) == 0, g.record.c_str());

    // ckptscope-cli scan of the folder: each file a line, then the
    // checkpoint's; exit 3 (dangerous).
    const Run r = cli({"scan", kDir + "/" + layout});
    QCOMPARE(r.exitCode, 3);
    const QString out = QString::fromUtf8(r.out);
    QVERIFY2(out.contains(QRegularExpression(
                 "^dangerous\\s+\\S+/" + QRegularExpression::escape(QString::fromStdString(evil)) +
                     "\\s",
                 QRegularExpression::MultilineOption)),
             r.out.constData());
    QVERIFY2(out.contains(QString::fromStdString("[sharded: " + c.layout + "] " + evil +
                                                 " would run code: " + global)),
             r.out.constData());
    QVERIFY2(out.contains("1 sharded checkpoint: 0 safe, 0 suspicious, 1 dangerous, 0 unreadable"),
             r.out.constData());
    const Run js = cli({"scan", "--json", kDir + "/" + layout});
    QCOMPARE(js.exitCode, 3);
    const json doc = json::parse(js.out.toStdString());
    QCOMPARE(doc["checkpoints"].size(), size_t(1));
    QCOMPARE(doc["checkpoints"][0]["verdict"].get<std::string>(), std::string("dangerous"));
    QCOMPARE(doc["checkpoints"][0]["file"].get<std::string>(), evil);
    QVERIFY(!QFileInfo::exists(kDir + "/hostile/PWNED"));
  }

  // The same checkpoints named by their index or a part: an index (or
  // .metadata) is the checkpoint; a .distcp part alone is scanned where its
  // folder's .metadata places its archives (a zip reader sees only the last).
  void safetyIndexAndPart() {
    const json s = manifest()["safety"];
    const QString hf = kDir + "/hostile/hf_evil/pytorch_model.bin.index.json";
    Run r = cli({"scan", hf});
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.out.contains(QByteArray::fromStdString(
                 "[sharded: Hugging Face] " + s["hostile/hf_evil"]["file"].get<std::string>() +
                 " would run code")),
             r.out.constData());
    const QString part = kDir + "/hostile/dcp_evil/__2_0.distcp";
    const ckpt::CheckpointSafety alone = ckpt::scanCheckpoint(part.toStdString());
    QVERIFY(!alone.sharded());
    QCOMPARE(alone.verdict, ckpt::Verdict::Dangerous);
    r = cli({"scan", part});
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.out.startsWith("dangerous"), r.out.constData());
    // The other parts of that checkpoint hold tensors and an int: safe.
    for (const char* clean : {"__0_0.distcp", "__1_0.distcp"}) {
      r = cli({"scan", kDir + "/hostile/dcp_evil/" + clean});
      QCOMPARE(r.exitCode, 0);
      QVERIFY2(r.out.startsWith("safe"), r.out.constData());
    }
  }

  // Checkpoints with no payload: safetensors shards and torch.save shards of
  // tensors are safe; DCP's .metadata, FSDP's and DeepSpeed's rank files
  // name the writers' own classes, which their layout's profile vouches for
  // there (said in the summary); a missing rank file is said, not scanned.
  void safetyCleanCheckpoints() {
    struct Case {
      const char* layout;
      ckpt::Verdict verdict;
      size_t files;
      const char* summary;
    };
    const Case cases[] = {
        {"hf_st", ckpt::Verdict::Safe, 2, "safe: 2 shard files, only tensors and plain data"},
        {"hf_bin", ckpt::Verdict::Safe, 3, "safe: 3 shard files, only tensors and plain data"},
        {"dcp_ws3", ckpt::Verdict::Safe, 4,
         "safe: 3 rank files and .metadata, only tensors and plain data (.metadata: safe for a "
         "DCP checkpoint's metadata)"},
        {"dcp_ws2_storage_meta", ckpt::Verdict::Safe, 3,
         "safe: 2 rank files and .metadata, only tensors and plain data (.metadata: safe for a "
         "DCP checkpoint's metadata)"},
        {"fsdp_ws3", ckpt::Verdict::Safe, 3,
         "safe: 3 rank files, only tensors and plain data (safe for an FSDP rank file)"},
        {"fsdp_dtensor_ws3", ckpt::Verdict::Safe, 3,
         "safe: 3 rank files, only tensors and plain data (safe for an FSDP rank file)"},
        {"ds_z2_ws2/global_step1000", ckpt::Verdict::Safe, 3,
         "safe: 3 files, only tensors and plain data (safe for a DeepSpeed checkpoint)"},
        {"ds_z3_ws3/global_step1000", ckpt::Verdict::Safe, 6,
         "safe: 6 files, only tensors and plain data (safe for a DeepSpeed checkpoint)"},
        {"hostile/dcp_missing", ckpt::Verdict::Safe, 3,
         "safe: 2 rank files and .metadata, only tensors and plain data (.metadata: safe for a "
         "DCP checkpoint's metadata), 1 missing file not scanned"},
    };
    for (const Case& k : cases) {
      const ckpt::CheckpointSafety c = ckpt::scanCheckpoint((kDir + "/" + k.layout).toStdString());
      QVERIFY2(c.verdict == k.verdict, (k.layout + (": " + c.summary())).c_str());
      QCOMPARE(c.files.size(), k.files);
      QCOMPARE(c.summary(), std::string(k.summary));
      // The rank files of DCP hold tensors and plain values only.
      if (c.layout == "DCP")
        for (const ckpt::FileSafety& f : c.files)
          if (f.file != ".metadata")
            QVERIFY2(f.report.verdict == ckpt::Verdict::Safe,
                     (f.file + ": " + f.report.summary()).c_str());
    }
    const ckpt::CheckpointSafety gone =
        ckpt::scanCheckpoint((kDir + "/hostile/dcp_missing").toStdString());
    QCOMPARE(gone.missing, size_t(1));
    QVERIFY2(QString::fromStdString(gone.summary()).endsWith(", 1 missing file not scanned"),
             gone.summary().c_str());
  }
};

QTEST_GUILESS_MAIN(TestShardedSafety)
#include "tst_sharded_safety.moc"
