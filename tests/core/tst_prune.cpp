// Pruning a run: the plan on fixture runs written by torch.save (best by
// val_loss, last N, every K, stage finals, the newest, files that are not
// step checkpoints), checked file by file with the sizes Python's os.stat
// gave; the desktop trash as the freedesktop.org spec lays it out; and
// ckptscope-cli prune, dry run and --apply.
#include <sys/stat.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "ckpt/index/prune.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/scanner.h"

namespace fs = std::filesystem;
using namespace ckpt;

namespace {

const fs::path kFixtures = fs::path(CKPT_FIXTURE_DIR) / "prune";

std::set<std::string> names(const std::vector<PruneFile>& files) {
  std::set<std::string> out;
  for (const PruneFile& f : files) out.insert(f.name);
  return out;
}

std::set<std::string> listDir(const fs::path& d) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(d)) out.insert(e.path().filename().string());
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const PruneFile* find(const std::vector<PruneFile>& files, const std::string& name) {
  for (const PruneFile& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

// A figure the fixture script recorded per file: "sizes" (os.stat),
// "tensor_bytes", "optimizer_bytes" (storages as torch.load sees them);
// nullopt when it recorded none for the file.
std::optional<uint64_t> pythonFigure(const char* figure, const std::string& rel) {
  QFile f(QString::fromStdString((kFixtures / "expected.json").string()));
  if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
  const QJsonValue v = QJsonDocument::fromJson(f.readAll())
                           .object()[QLatin1String(figure)]
                           .toObject()[QString::fromStdString(rel)];
  if (!v.isDouble()) return std::nullopt;
  return uint64_t(v.toInteger());
}

uint64_t pythonSize(const std::string& rel) {
  return pythonFigure("sizes", rel).value_or(0);
}

}  // namespace

class TestPrune : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;

  // A fresh copy of a fixture run (the trash tests move its files).
  fs::path copyRun(const std::string& fixture, const std::string& as) {
    const fs::path to = fs::path(m_tmp.path().toStdString()) / as;
    fs::remove_all(to);
    fs::create_directories(to.parent_path());
    fs::copy(kFixtures / fixture, to, fs::copy_options::recursive);
    return to;
  }

 private slots:
  void initTestCase() {
    QVERIFY2(fs::exists(kFixtures / "run" / "tiny_step300.pt"),
             "run the make_prune_fixtures test first");
    qputenv("XDG_DATA_HOME",
            QByteArray::fromStdString((fs::path(m_tmp.path().toStdString()) / "xdg").string()));
  }

  // Disk use: each file's tensor bytes and the optimizer's share, from the
  // tensor table alone, equal to what torch.load's storages add up to.
  void scannerCountsOptimizerBytes() {
    const ScanResult scan = scanDirectory(kFixtures.string());
    size_t files = 0, readable = 0;
    for (const RunEntry& run : scan.runs)
      for (const CheckpointEntry& e : run.checkpoints) {
        ++files;
        const std::string rel = fs::relative(e.path, kFixtures).string();
        QCOMPARE(e.size, pythonSize(rel));
        const auto tensors = pythonFigure("tensor_bytes", rel);
        const auto optimizer = pythonFigure("optimizer_bytes", rel);
        if (!tensors) {  // the truncated file
          QVERIFY2(!e.error.empty(), rel.c_str());
          QCOMPARE(e.optimizerBytes, uint64_t(0));
          continue;
        }
        ++readable;
        QCOMPARE(e.tensorBytes, *tensors);
        QCOMPARE(e.optimizerBytes, optimizer.value_or(0));
        QVERIFY(e.optimizerBytes > 0 && e.optimizerBytes < e.tensorBytes);
      }
    QCOMPARE(files, size_t(16));
    QCOMPARE(readable, size_t(15));
  }

  void bestLastEveryAndFinals() {
    PruneRules rules;
    rules.keepBest = "val_loss";
    rules.keepLast = 3;
    rules.every = 500;
    const PrunePlan plan = planPrune((kFixtures / "run").string(), rules);
    // By hand: val_loss is lowest (1.1) at 300; the last three steps are
    // 800, 900, 1000; 500 and 1000 are multiples of 500 and the finals of
    // the stages pretrain (<= 500) and sft; final, best and the truncated
    // step 1100 are not step checkpoints that can be judged.
    QCOMPARE(names(plan.remove),
             (std::set<std::string>{"tiny_step100.pt", "tiny_step200.pt", "tiny_step400.pt",
                                    "tiny_step600.pt", "tiny_step700.pt"}));
    QCOMPARE(names(plan.keep),
             (std::set<std::string>{"tiny_step300.pt", "tiny_step500.pt", "tiny_step800.pt",
                                    "tiny_step900.pt", "tiny_step1000.pt", "tiny_final.pt",
                                    "best_checkpoint.pt", "tiny_step1100.pt"}));
    QCOMPARE(plan.bestFile, std::string("tiny_step300.pt"));
    QCOMPARE(*plan.bestValue, 1.1);
    using R = std::vector<std::string>;
    QCOMPARE(find(plan.keep, "tiny_step300.pt")->reasons, (R{"best val_loss 1.1000"}));
    QCOMPARE(find(plan.keep, "tiny_step500.pt")->reasons,
             (R{"every 500", "final of stage pretrain"}));
    QCOMPARE(find(plan.keep, "tiny_step800.pt")->reasons, (R{"last 3"}));
    QCOMPARE(find(plan.keep, "tiny_step1000.pt")->reasons,
             (R{"last 3", "every 500", "final of stage sft", "newest"}));
    QCOMPARE(find(plan.keep, "tiny_final.pt")->reasons, (R{"final checkpoint"}));
    QCOMPARE(find(plan.keep, "best_checkpoint.pt")->reasons, (R{"best checkpoint"}));
    QCOMPARE(find(plan.keep, "tiny_step1100.pt")->reasons, (R{"unreadable"}));
    for (const PruneFile& f : plan.remove) QVERIFY2(f.reasons.empty(), f.name.c_str());
    // What is freed: the sizes Python saw.
    uint64_t freed = 0, kept = 0;
    for (const PruneFile& f : plan.remove) {
      QCOMPARE(f.size, pythonSize("run/" + f.name));
      freed += pythonSize("run/" + f.name);
    }
    for (const PruneFile& f : plan.keep) kept += pythonSize("run/" + f.name);
    QVERIFY(freed > 0);
    QCOMPARE(plan.freedBytes, freed);
    QCOMPARE(plan.keptBytes, kept);
    QCOMPARE(find(plan.remove, "tiny_step400.pt")->step, std::optional<int64_t>(400));
  }

  void lastOneKeepsStageFinalsAndNewest() {
    PruneRules rules;
    rules.keepLast = 1;
    const PrunePlan plan = planPrune((kFixtures / "run").string(), rules);
    QCOMPARE(names(plan.remove),
             (std::set<std::string>{"tiny_step100.pt", "tiny_step200.pt", "tiny_step300.pt",
                                    "tiny_step400.pt", "tiny_step600.pt", "tiny_step700.pt",
                                    "tiny_step800.pt", "tiny_step900.pt"}));
    QCOMPARE(find(plan.keep, "tiny_step500.pt")->reasons,
             (std::vector<std::string>{"final of stage pretrain"}));
    // Every 300: 300, 600, 900, with the stage finals and the newest.
    PruneRules every;
    every.every = 300;
    QCOMPARE(names(planPrune((kFixtures / "run").string(), every).remove),
             (std::set<std::string>{"tiny_step100.pt", "tiny_step200.pt", "tiny_step400.pt",
                                    "tiny_step700.pt", "tiny_step800.pt"}));
  }

  void bestByLossWithoutStages() {
    PruneRules rules;
    rules.keepBest = "loss";  // 1/step: lowest at 30, also the newest
    const PrunePlan plan = planPrune((kFixtures / "noval").string(), rules);
    QCOMPARE(names(plan.remove), (std::set<std::string>{"plain_step10.pt", "plain_step20.pt"}));
    QCOMPARE(find(plan.keep, "plain_step30.pt")->reasons,
             (std::vector<std::string>{"best loss 0.0333", "newest"}));
  }

  // best.pt a link to plain_step10.pt (as Lightning's save_last="link" and
  // mmcv's latest.pth are): keeping the link keeps the file it names, and
  // trashing a link frees nothing. Before, --keep-last 1 kept best.pt and
  // trashed plain_step10.pt, leaving the link naming nothing.
  void linkKeepsItsTarget() {
    const fs::path run = copyRun("noval", "linked");
    fs::create_symlink("plain_step10.pt", run / "best.pt");
    fs::create_symlink("plain_step30.pt", run / "newest.pt");  // "newest" says no kind
    PruneRules rules;
    rules.keepLast = 1;
    const PrunePlan plan = planPrune(run.string(), rules);
    QCOMPARE(names(plan.remove), (std::set<std::string>{"plain_step20.pt", "newest.pt"}));
    QCOMPARE(find(plan.keep, "plain_step10.pt")->reasons,
             (std::vector<std::string>{"linked to by best.pt"}));
    // What trashing them frees: plain_step20.pt's bytes, the link's none.
    QCOMPARE(plan.freedBytes, uint64_t(fs::file_size(run / "plain_step20.pt")));
  }

  void badRules() {
    PruneRules rules;
    rules.keepBest = "val_loss";
    try {
      planPrune((kFixtures / "noval").string(), rules);
      QFAIL("expected an error");
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find("no checkpoint records val_loss (they record loss)") !=
                   std::string::npos,
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             planPrune((kFixtures / "noval").string(), PruneRules{}));
    PruneRules negative;
    negative.keepLast = -1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             planPrune((kFixtures / "noval").string(), negative));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                             planPrune((kFixtures / "no-such-run").string(), rules));
  }

  void desktopTrashAsTheSpecSays() {
    const fs::path run = copyRun("run", "my runs/tiny run");  // spaces: percent-encoded in Path=
    const fs::path trash = fs::path(m_tmp.path().toStdString()) / "xdg" / "Trash";
    QCOMPARE(fs::path(desktopTrashDir()), trash);
    const std::string bytes = slurp(run / "tiny_step100.pt");
    const std::vector<TrashedFile> moved =
        trashFiles(run.string(), {"tiny_step100.pt", (run / "tiny_step200.pt").string()});
    QCOMPARE(moved.size(), size_t(2));
    QCOMPARE(moved[0].from, (run / "tiny_step100.pt").string());
    QCOMPARE(moved[0].to, (trash / "files" / "tiny_step100.pt").string());
    QCOMPARE(moved[0].trashInfo, (trash / "info" / "tiny_step100.pt.trashinfo").string());
    QVERIFY(!fs::exists(run / "tiny_step100.pt"));
    QCOMPARE(slurp(trash / "files" / "tiny_step100.pt"), bytes);
    const std::string info = slurp(trash / "info" / "tiny_step100.pt.trashinfo");
    std::string encoded = (run / "tiny_step100.pt").string();
    encoded = std::regex_replace(encoded, std::regex(" "), "%20");
    const std::regex form(
        "\\[Trash Info\\]\nPath=" +
        std::regex_replace(encoded, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
        "\nDeletionDate=\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\n");
    QVERIFY2(std::regex_match(info, form), info.c_str());
    QVERIFY(fs::exists(trash / "files" / "tiny_step200.pt"));
    // The same name again: a new name in the trash, the first one untouched.
    const fs::path again = copyRun("run", "again");
    const std::vector<TrashedFile> second = trashFiles(again.string(), {"tiny_step100.pt"});
    QCOMPARE(second[0].to, (trash / "files" / "tiny_step100.2.pt").string());
    QVERIFY(fs::exists(trash / "info" / "tiny_step100.2.pt.trashinfo"));
    QCOMPARE(slurp(trash / "files" / "tiny_step100.pt"), bytes);
    QVERIFY(
        slurp(trash / "info" / "tiny_step100.2.pt.trashinfo").find("/again/tiny_step100.pt\n") !=
        std::string::npos);
    // A file that is not there: named, nothing written for it.
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, trashFiles(again.string(), {"gone.pt"}));
    QVERIFY(!fs::exists(trash / "info" / "gone.pt.trashinfo"));
  }

  void otherFilesystemGoesToRunTrash() {
    // /dev/shm is a tmpfs: another filesystem than the temporary folder's trash.
    struct stat shm {
    }, tmp{};
    if (::stat("/dev/shm", &shm) != 0 ||
        ::stat(m_tmp.path().toLocal8Bit().constData(), &tmp) != 0 || shm.st_dev == tmp.st_dev ||
        ::access("/dev/shm", W_OK) != 0)
      QSKIP("no writable /dev/shm on another filesystem than the temporary folder");
    QTemporaryDir shmDir("/dev/shm/tst_prune-XXXXXX");
    QVERIFY(shmDir.isValid());
    const fs::path run = fs::path(shmDir.path().toStdString()) / "run";
    fs::copy(kFixtures / "run", run);
    const std::vector<TrashedFile> moved = trashFiles(run.string(), {"tiny_step100.pt"});
    QCOMPARE(moved[0].trashInfo, std::string());
    QCOMPARE(fs::path(moved[0].to).parent_path().parent_path(), run / ".trash");
    QVERIFY(fs::exists(moved[0].to));
    QVERIFY(!fs::exists(run / "tiny_step100.pt"));
  }

  void cliDryRunThenApply() {
    const fs::path run = copyRun("run", "cli/run");
    const std::set<std::string> before = listDir(run);
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    const fs::path xdg = fs::path(m_tmp.path().toStdString()) / "cli-xdg";
    env.insert("XDG_DATA_HOME", QString::fromStdString(xdg.string()));
    p.setProcessEnvironment(env);
    const QStringList rules{"prune",       QString::fromStdString(run.string()),
                            "--keep-best", "val_loss",
                            "--keep-last", "3",
                            "--every",     "500"};
    p.start(CKPT_CLI, rules);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QString out = p.readAllStandardOutput();
    QCOMPARE(listDir(run), before);  // a dry run by default
    QVERIFY2(out.contains(QRegularExpression(R"(^trash\s+\S+ \S+\s+tiny_step400\.pt$)",
                                             QRegularExpression::MultilineOption)),
             qPrintable(out));
    QVERIFY2(out.contains(QRegularExpression(
                 R"(^keep\s+\S+ \S+\s+tiny_step300\.pt  \(best val_loss 1\.1000\)$)",
                 QRegularExpression::MultilineOption)),
             qPrintable(out));
    QVERIFY2(out.contains("5 of 13 checkpoints to the trash"), qPrintable(out));
    QVERIFY2(out.contains("dry run: nothing moved"), qPrintable(out));

    p.start(CKPT_CLI, rules + QStringList{"--apply", "--json"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QJsonObject o = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(o["applied"].toBool(), true);
    QCOMPARE(o["trash"].toArray().size(), 5);
    QCOMPARE(o["moved"].toArray().size(), 5);
    std::set<std::string> after = before;
    for (const char* gone : {"tiny_step100.pt", "tiny_step200.pt", "tiny_step400.pt",
                             "tiny_step600.pt", "tiny_step700.pt"}) {
      after.erase(gone);
      QVERIFY2(fs::exists(xdg / "Trash" / "files" / gone), gone);
      QVERIFY2(fs::exists(xdg / "Trash" / "info" / (std::string(gone) + ".trashinfo")), gone);
    }
    QCOMPARE(listDir(run), after);

    // Usage errors: no rule, a bad number, both --apply and --dry-run.
    for (const QStringList& bad :
         {QStringList{"prune", QString::fromStdString(run.string())},
          QStringList{"prune", QString::fromStdString(run.string()), "--keep-last", "x"},
          QStringList{"prune", QString::fromStdString(run.string()), "--every", "2", "--apply",
                      "--dry-run"}}) {
      p.start(CKPT_CLI, bad);
      QVERIFY(p.waitForFinished(60000));
      QCOMPARE(p.exitCode(), 2);
    }
    QCOMPARE(listDir(run), after);
  }
};

QTEST_GUILESS_MAIN(TestPrune)
#include "tst_prune.moc"
