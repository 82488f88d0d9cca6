// One pass: the safety verdict of a file the reader opens comes from the
// reader's own walk of its pickles (CheckpointFile::safety()), and is the
// scan's (scanFile / scanCheckpoint, the verdict `scan` gives) for every
// file the fixture scripts write: the safety samples of make_safety.py,
// the hostile and legacy files, the sharded and Hugging Face layouts. And
// the pickle that is read is walked once, not once by the reader and once
// more by the scan.
#include <QtTest>

#include <filesystem>
#include <map>
#include <set>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/pickle_reader.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/sharded.h"
#include "ckpt/index/scanner.h"
#include "json_compare.h"
#include "run_process.h"

namespace fs = std::filesystem;
using namespace ckpt;
using ckpt::test::json;

namespace {

const std::string kFixtures = CKPT_FIXTURE_DIR;
// The folders whose files are compared (each written by its fixture script).
const char* const kFolders[] = {"safety", "hostile", "legacy", "sharded", "hf_trainer"};

// Every regular file of the fixture folders, and the top-level reader fixtures.
std::vector<std::string> fixtureFiles() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(kFixtures, ec))
    if (e.is_regular_file()) out.push_back(e.path().string());
  for (const char* folder : kFolders)
    for (const fs::directory_entry& e :
         fs::recursive_directory_iterator(kFixtures + "/" + folder, ec))
      if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string describe(const GlobalUse& g) {
  return g.module + "." + g.name + " [" + g.record + " @ " + std::to_string(g.offset) + "] " +
         std::string(safetyLevelName(g.level)) + " (" + g.why + ")" +
         (g.reaches.empty() ? "" : " reaches " + g.reaches) +
         (g.via.empty() ? "" : " via " + g.via);
}

// What differs between two reports of one file ("" when nothing).
std::string difference(const SafetyReport& walked, const SafetyReport& scanned) {
  if (walked.verdict != scanned.verdict)
    return "verdict " + std::string(verdictName(walked.verdict)) + " vs the scan's " +
           std::string(verdictName(scanned.verdict));
  if (walked.summary() != scanned.summary())
    return "summary '" + walked.summary() + "' vs the scan's '" + scanned.summary() + "'";
  if (walked.error != scanned.error)
    return "error '" + walked.error + "' vs '" + scanned.error + "'";
  if (walked.pickles != scanned.pickles)
    return std::to_string(walked.pickles) + " pickles vs the scan's " +
           std::to_string(scanned.pickles);
  if (walked.leftOut != scanned.leftOut) return "globals left out differ";
  std::multiset<std::string> a, b;
  for (const GlobalUse& g : walked.globals) a.insert(describe(g));
  for (const GlobalUse& g : scanned.globals) b.insert(describe(g));
  if (a != b) {
    std::string s = "globals differ:";
    for (const std::string& g : a)
      if (!b.count(g)) s += "\n    walk only: " + g;
    for (const std::string& g : b)
      if (!a.count(g)) s += "\n    scan only: " + g;
    return s;
  }
  return {};
}

// Opens `path` as `ls` does (the tensor table, else the metadata) with the
// one-pass verdict asked for.
std::unique_ptr<CheckpointFile> openJudged(const std::string& path, SafetyProfile profile) {
  ReadOptions options;
  options.safety = true;
  options.safetyProfile = profile;
  try {
    return CheckpointFile::open(path, options);
  } catch (const std::exception&) {
  }
  options.metadataOnly = true;
  try {
    return CheckpointFile::open(path, options);
  } catch (const std::exception&) {
  }
  return nullptr;
}

std::string canonical(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p : c.string();
}

// Walks of each pickle while the hook is set, by record name.
struct WalkCount {
  std::map<std::string, int> byRecord;
  static void note(const std::string& record, uint64_t, void* self) {
    ++static_cast<WalkCount*>(self)->byRecord[record];
  }
};

}  // namespace

class TestOnePass : public QObject {
  Q_OBJECT

 private slots:
  // The report the reader's walk gives is the scan's, global by global
  // (module, name, level, why, record, offset), for every file the reader
  // opens; the files it cannot open or judge are left to the scan.
  void walkedReportIsTheScans() {
    const std::vector<std::string> files = fixtureFiles();
    QVERIFY2(files.size() > 100, "the fixture scripts wrote fewer files than expected");
    std::vector<std::string> problems;
    size_t judged = 0;
    std::map<Verdict, size_t> verdicts;
    for (const std::string& path : files) {
      if (probeSharded(path)) continue;
      const std::optional<SafetyProfile> profile = singleFileProfile(path);
      if (!profile) continue;  // a .distcp part: the archives .metadata places in it
      const CheckpointSafety scanned = scanCheckpoint(path);
      QCOMPARE(scanned.files.size(), size_t(1));
      const std::unique_ptr<CheckpointFile> file = openJudged(path, *profile);
      if (!file || !file->safety()) continue;
      ++judged;
      ++verdicts[file->safety()->verdict];
      const std::string diff = difference(*file->safety(), scanned.files[0].report);
      if (!diff.empty()) problems.push_back(path + ": " + diff);
      // What `ls` and `scan` print from the two.
      const CheckpointSafety one = singleFileSafety(path, *file->safety());
      if (one.summary() != scanned.summary() || one.offenders() != scanned.offenders())
        problems.push_back(path + ": checkpoint summary '" + one.summary() + "' vs '" +
                           scanned.summary() + "'");
    }
    std::string all;
    for (const std::string& p : problems) all += "\n  " + p;
    QVERIFY2(problems.empty(), all.c_str());
    // Not vacuous: most files are judged on the walk, and every verdict occurs.
    qInfo("%zu of %zu files judged on the reader's walk", judged, files.size());
    QVERIFY2(judged * 2 > files.size(), "fewer than half the files were judged on the walk");
    for (const Verdict v : {Verdict::Safe, Verdict::Suspicious, Verdict::Dangerous})
      QVERIFY2(verdicts[v] > 0, verdictName(v).data());
  }

  // `ls --json` and `scan --json` give every checkpoint the same verdict.
  void lsJsonVerdictsAreScanJsons() {
    size_t compared = 0;
    for (const char* folder : kFolders) {
      const QString dir = QString::fromStdString(kFixtures + "/" + folder);
      const test::ProcessResult ls = test::runProcess(CKPT_CLI, {"ls", "--json", dir});
      QVERIFY2(ls.exitCode == 0, ls.err.constData());
      const test::ProcessResult scan =
          test::runProcess(CKPT_CLI, {"scan", "--json", "--recursive", dir});
      QVERIFY2(scan.exitCode >= 0, scan.err.constData());  // 3 when something is dangerous
      const json l = json::parse(ls.out.toStdString());
      const json s = json::parse(scan.out.toStdString());
      std::map<std::string, std::string> scanVerdict;
      for (const json& f : s["files"]) scanVerdict[canonical(f["file"])] = f["verdict"];
      for (const json& c : s["checkpoints"]) scanVerdict[canonical(c["path"])] = c["verdict"];
      const std::string root = l["root"];
      for (const json& run : l["runs"])
        for (const json& c : run["checkpoints"]) {
          if (c["verdict"].is_null()) continue;
          const std::string path = canonical(root + "/" + std::string(c["file"]));
          const auto it = scanVerdict.find(path);
          // A Trainer's checkpoint-N folder and a shard index are listed by
          // `ls` as one checkpoint (its worst file); `scan` lists the files.
          if (it == scanVerdict.end() && (fs::is_directory(path) || path.ends_with(".json")))
            continue;
          QVERIFY2(it != scanVerdict.end(), ("scan --json does not list " + path).c_str());
          QVERIFY2(
              it->second == c["verdict"],
              (path + ": ls says " + std::string(c["verdict"]) + ", scan " + it->second).c_str());
          ++compared;
        }
    }
    qInfo("%zu checkpoints compared", compared);
    QVERIFY(compared > 50);
  }

  // The pickle the reader reads is walked once while a checkpoint is
  // listed: by the reader, which judges it as it goes.
  void readPickleIsWalkedOnce() {
    size_t checked = 0, refusedMagic = 0;
    for (const std::string& path : fixtureFiles()) {
      if (probeSharded(path) || !isCandidateName(fs::path(path).filename().string())) continue;
      // A file whose tensor table cannot be built is read twice by `ls`
      // (the table, then the metadata) whatever the verdict: only files the
      // reader opens whole count.
      const bool magicSlot = fs::path(path).filename().string().ends_with("_legacy_magic.pt");
      try {
        (void)CheckpointFile::open(path);
      } catch (const std::exception& e) {
        // A legacy file with a pickle in its magic number's slot is refused
        // as damaged, never read as a plain pickle (and walked twice).
        if (magicSlot) {
          QVERIFY2(std::string(e.what()).find("damaged torch legacy file") != std::string::npos,
                   (path + ": " + e.what()).c_str());
          ++refusedMagic;
        }
        continue;
      }
      QVERIFY2(!magicSlot, (path + ": opened as a plain pickle").c_str());
      WalkCount walks;
      detail::setPickleWalkHook(&WalkCount::note, &walks);
      const CheckpointEntry e = describeCheckpoint(path, fs::path(path).filename().string());
      detail::setPickleWalkHook(nullptr, nullptr);
      if (!e.error.empty() || e.format == "safetensors" || e.format.empty()) continue;
      int main = 0;
      std::string seen;
      for (const auto& [record, n] : walks.byRecord) {
        seen += " " + record + " x" + std::to_string(n);
        if (record.ends_with("data.pkl") || record == "legacy main pickle" || record == "pickle" ||
            record == "pickle 1")
          main += n;
      }
      QVERIFY2(main == 1,
               (path + ": the main pickle was walked " + std::to_string(main) + " times:" + seen)
                   .c_str());
      ++checked;
    }
    qInfo("%zu files checked, %zu with a pickle in the magic slot refused", checked, refusedMagic);
    QVERIFY(checked > 30);
    QVERIFY(refusedMagic > 10);
  }
};

QTEST_GUILESS_MAIN(TestOnePass)
#include "tst_onepass.moc"
