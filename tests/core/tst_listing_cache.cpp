// The listing cache (listing_cache.h) against what torch.save wrote
// (tests/python/listing_cache_fixture.py prints it) and against listings
// without the cache: a second listing takes every unchanged file from the
// cache (an unreadable file is read again) and gives the same entries and
// the same `ls --json` bytes; a file rewritten in place by torch.save, same
// path, inode and size, is read again, a safe file turned dangerous
// included; a file changed just before the listing is not kept; a damaged
// cache file is rejected and rewritten; nothing is written under the
// folder listed; `ls --no-cache` and CKPTSCOPE_NO_CACHE read every file; a
// cache file the CLI wrote serves another program built from the same tree.
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include <sys/stat.h>

#include "ckpt/format/input_file.h"
#include "ckpt/index/listing_cache.h"
#include "ckpt/index/metrics_cache.h"
#include "ckpt/index/scanner.h"
#include "run_process.h"

using namespace ckpt;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json python(const QStringList& args) {
  const ckpt::test::ProcessResult r = ckpt::test::runProcess(
      QStringLiteral(CKPT_TORCH_PYTHON),
      QStringList{QStringLiteral(CKPT_SOURCE_DIR "/tests/python/listing_cache_fixture.py")} + args);
  if (r.exitCode != 0) throw std::runtime_error("fixture script failed: " + r.err.toStdString());
  return json::parse(r.out.toStdString());
}

// Listed files and their entries, by path relative to the root.
std::map<std::string, CheckpointEntry> listing(const std::string& root) {
  std::map<std::string, CheckpointEntry> out;
  for (RunEntry& run : scanDirectory(root).runs)
    for (CheckpointEntry& c : run.checkpoints) out[c.file] = std::move(c);
  return out;
}

std::set<std::string> filesUnder(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) out.insert(e.path().string());
  return out;
}

// Timestamps are coarse: a file changed within the last two seconds is not
// kept. Waiting this long makes everything written before it keepable.
void letSettle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
}

}  // namespace

class TestListingCache : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  std::string m_root, m_cache;
  json m_truth;

  void checkAgainstTruth(const std::map<std::string, CheckpointEntry>& entries) {
    QCOMPARE(entries.size(), m_truth.size());
    for (const auto& [rel, want] : m_truth.items()) {
      const auto it = entries.find(rel);
      QVERIFY2(it != entries.end(), rel.c_str());
      const CheckpointEntry& e = it->second;
      QCOMPARE(e.path, (fs::path(m_root) / rel).string());
      QCOMPARE(e.step.value_or(-1), want["step"].get<int64_t>());
      if (want["loss"].is_null())
        QVERIFY2(!e.loss && !e.error.empty(), rel.c_str());
      else
        QCOMPARE(e.loss.value_or(-1), want["loss"].get<double>());
      QCOMPARE(e.verdict, want["verdict"].get<std::string>());
    }
  }

  ckpt::test::ProcessResult cli(const QStringList& args, bool noCacheEnv = false) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("CKPTSCOPE_CACHE_DIR"), QString::fromStdString(m_cache));
    if (noCacheEnv) env.insert(QStringLiteral("CKPTSCOPE_NO_CACHE"), QStringLiteral("1"));
    return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, env);
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_root = m_tmp.filePath(QStringLiteral("sweep")).toStdString();
    m_cache = m_tmp.filePath(QStringLiteral("cache")).toStdString();
    qputenv("CKPTSCOPE_CACHE_DIR", QByteArray::fromStdString(m_cache));
    qunsetenv("CKPTSCOPE_NO_CACHE");
    m_truth = python({QStringLiteral("write"), QString::fromStdString(m_root)});
    QCOMPARE(m_truth.size(), size_t(11));
    letSettle();
  }

  // The first listing reads every file and keeps the readable ones; the
  // second reads only the file that is not a checkpoint. Both are what
  // torch.save wrote, and nothing appears under the folder listed.
  void secondListingFromCache() {
    const std::set<std::string> before = filesUnder(m_root);
    resetListingCacheStats();
    checkAgainstTruth(listing(m_root));
    ListingCacheStats s = listingCacheStats();
    QCOMPARE(s.hits, uint64_t(0));
    QCOMPARE(s.misses, uint64_t(11));
    QCOMPARE(s.writes, uint64_t(1));
    QVERIFY(fs::is_regular_file(listingCacheFile(m_root)));
    QVERIFY(listingCacheFile(m_root).starts_with(m_cache + "/listings/"));

    resetListingCacheStats();
    checkAgainstTruth(listing(m_root));
    s = listingCacheStats();
    QCOMPARE(s.hits, uint64_t(10));
    QCOMPARE(s.misses, uint64_t(1));  // step_500.pt: unreadable, never kept
    QCOMPARE(s.rejected, uint64_t(0));
    QCOMPARE(s.writes, uint64_t(0));  // nothing changed
    QCOMPARE(filesUnder(m_root), before);
  }

  // A file read for the first time is recorded under the stamp its open
  // took (no stat of it before): that stamp is what stat(2) says of it.
  void stampIsTheOpensStat() {
    int compared = 0;
    for (const std::string& path : filesUnder(m_root)) {
      if (!path.ends_with(".pt")) continue;
      const std::string rel = fs::path(path).lexically_relative(m_root).string();
      struct stat st {};
      QCOMPARE(::stat(path.c_str(), &st), 0);
      const FileStamp truth{uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size),
                            int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                            int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
      const InputFile file(path);
      QVERIFY(file.stamp().has_value());
      QVERIFY(*file.stamp() == truth);
      std::optional<FileStamp> stamp;
      const CheckpointEntry e = describeCheckpoint(path, rel, &stamp);
      // An unreadable file may or may not have been opened; a read one was.
      if (e.error.empty()) {
        QVERIFY2(stamp && *stamp == truth, rel.c_str());
        ++compared;
      }
    }
    QVERIFY(compared >= 10);
    // Bytes in memory have no stamp; nor does a folder (not opened as a file).
    const InputFile memory("bytes", ByteRegion{});
    QVERIFY(!memory.stamp());
    QVERIFY(!InputFile::openUnlessDirectory(m_root));
  }

  // What the command prints from the cache is what it prints reading every file.
  void cliOutputUnchanged() {
    const QStringList ls = {QStringLiteral("ls"), QStringLiteral("--json"),
                            QString::fromStdString(m_root)};
    const auto reference = cli(ls, /*noCacheEnv=*/true);
    QCOMPARE(reference.exitCode, 0);
    const auto first = cli(ls), second = cli(ls);
    QCOMPARE(first.exitCode, 0);
    QCOMPARE(second.exitCode, 0);
    QCOMPARE(first.out, reference.out);
    QCOMPARE(second.out, reference.out);
    const auto text = cli({QStringLiteral("ls"), QString::fromStdString(m_root)});
    const auto textReference =
        cli({QStringLiteral("ls"), QStringLiteral("--no-cache"), QString::fromStdString(m_root)});
    QCOMPARE(text.exitCode, 0);
    QCOMPARE(text.out, textReference.out);
    QVERIFY(text.out.contains("lr3e-4_seed0/step_400.pt"));
    // The cache file the command wrote serves this program too (the app and
    // the CLI built from one tree share it: neither rewrites the other's).
    QVERIFY(fs::remove(listingCacheFile(m_root)));
    QCOMPARE(cli(ls).exitCode, 0);
    resetListingCacheStats();
    checkAgainstTruth(listing(m_root));
    QCOMPARE(listingCacheStats().rejected, uint64_t(0));
    QCOMPARE(listingCacheStats().hits, uint64_t(10));
    QCOMPARE(listingCacheStats().writes, uint64_t(0));
  }

  // --no-cache and CKPTSCOPE_NO_CACHE: every file read, no cache file written.
  void noCache() {
    QTemporaryDir other;
    const std::string cache = m_cache;
    m_cache = other.filePath(QStringLiteral("c")).toStdString();
    const QString root = QString::fromStdString(m_root);
    QCOMPARE(cli({QStringLiteral("ls"), QStringLiteral("--no-cache"), root}).exitCode, 0);
    QCOMPARE(cli({QStringLiteral("ls"), root}, /*noCacheEnv=*/true).exitCode, 0);
    QVERIFY(!fs::exists(m_cache));
    QCOMPARE(cli({QStringLiteral("ls"), root}).exitCode, 0);
    QVERIFY(fs::exists(fs::path(m_cache) / "listings"));
    m_cache = cache;
  }

  // torch.save over a cached file (same path and inode; here the same size
  // too): read again. A safe file turned into one that would run code says so.
  void rewrittenInPlace() {
    checkAgainstTruth(listing(m_root));  // all cached
    const std::string rel = "lr1e-3_seed1/step_200.pt";
    const std::string path = (fs::path(m_root) / rel).string();
    const auto sizeBefore = fs::file_size(path);
    const json now = python({QStringLiteral("rewrite"), QString::fromStdString(path),
                             QStringLiteral("250"), QStringLiteral("0.125")});
    QCOMPARE(now["size"].get<uint64_t>(), uint64_t(sizeBefore));
    m_truth[rel] = {{"step", 250}, {"loss", 0.125}, {"verdict", "safe"}};
    resetListingCacheStats();
    checkAgainstTruth(listing(m_root));
    QCOMPARE(listingCacheStats().misses, uint64_t(2));  // it, and the unreadable file

    python({QStringLiteral("rewrite"), QString::fromStdString(path), QStringLiteral("260"),
            QStringLiteral("0.25"), QStringLiteral("dangerous")});
    m_truth[rel] = {{"step", 260}, {"loss", 0.25}, {"verdict", "dangerous"}};
    checkAgainstTruth(listing(m_root));
    const auto entries = listing(m_root);
    QVERIFY(entries.at(rel).isDangerous());

    // Once it has settled, it is kept again and its verdict comes back.
    letSettle();
    listing(m_root);
    resetListingCacheStats();
    checkAgainstTruth(listing(m_root));
    QCOMPARE(listingCacheStats().hits, uint64_t(10));
  }

  // A file written just before the listing is read, and not kept: the next
  // listing reads it again (its times could not tell a second rewrite).
  void recentFileNotKept() {
    const std::string rel = "lr1e-3_seed0/step_400.pt";
    python({QStringLiteral("rewrite"), QString::fromStdString(m_root + "/lr1e-3_seed0/step_300.pt"),
            QStringLiteral("300"), QStringLiteral("2.82")});
    fs::copy_file(fs::path(m_root) / "lr1e-3_seed0/step_300.pt", fs::path(m_root) / rel);
    m_truth["lr1e-3_seed0/step_300.pt"]["loss"] = 2.82;
    m_truth[rel] = {{"step", 300}, {"loss", 2.82}, {"verdict", "safe"}};
    resetListingCacheStats();
    checkAgainstTruth(listing(m_root));
    checkAgainstTruth(listing(m_root));
    // Each listing: the two new files and the unreadable one.
    QCOMPARE(listingCacheStats().misses, uint64_t(6));
    fs::remove(fs::path(m_root) / rel);
    m_truth.erase(rel);
    letSettle();
  }

  // A damaged cache file: ignored (every file read, the right entries),
  // rewritten, trusted again after.
  void damagedCacheRejected() {
    listing(m_root);
    const std::string file = listingCacheFile(m_root);
    std::string bytes;
    {
      std::ifstream in(file, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    QVERIFY(bytes.size() > 200);
    for (const size_t at : {size_t(3), bytes.size() / 2, bytes.size() - 2}) {
      std::string damaged = bytes;
      damaged[at] = char(damaged[at] ^ 0x5a);
      std::ofstream(file, std::ios::binary | std::ios::trunc) << damaged;
      resetListingCacheStats();
      checkAgainstTruth(listing(m_root));
      const ListingCacheStats s = listingCacheStats();
      QCOMPARE(s.rejected, uint64_t(1));
      QCOMPARE(s.hits, uint64_t(0));
      QCOMPARE(s.writes, uint64_t(1));
      resetListingCacheStats();
      checkAgainstTruth(listing(m_root));
      QCOMPARE(listingCacheStats().hits, uint64_t(10));
    }
    // Cut short, and empty.
    for (const size_t keep : {bytes.size() - 9, size_t(0)}) {
      fs::resize_file(file, keep);
      resetListingCacheStats();
      checkAgainstTruth(listing(m_root));
      QCOMPARE(listingCacheStats().hits, uint64_t(0));
      QCOMPARE(listingCacheStats().writes, uint64_t(1));
    }
  }

  // A file gone since the last listing is dropped from the cache; the rest stay.
  void removedFileDropped() {
    listing(m_root);
    const std::string rel = "lr1e-3_seed0/step_100.pt";
    fs::remove(fs::path(m_root) / rel);
    m_truth.erase(rel);
    resetListingCacheStats();
    checkAgainstTruth(listing(m_root));
    QCOMPARE(listingCacheStats().hits, uint64_t(9));
    QCOMPARE(listingCacheStats().writes, uint64_t(1));
  }
};

QTEST_GUILESS_MAIN(TestListingCache)
#include "tst_listing_cache.moc"
