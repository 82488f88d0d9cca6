// A listing's small files read in batches through io_uring
// (core/index/src/read_ahead.h) give what reading them one by one gives:
// against what torch.save wrote (tests/python/read_ahead_fixture.py prints
// it: steps, losses, sizes, safety verdicts), against the same listing with
// CKPTSCOPE_READ_AHEAD=0, byte for byte in `ls --json`, and in the listing
// cache's stamps (a cache written by one serves the other). Every small
// regular file is taken from the batch (counted); the one larger than
// 64 KiB, and what is not a checkpoint, are read as before. Opened again,
// the files the cache knows are stat'ed in batches too (counted).
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "ckpt/format/input_file.h"
#include "ckpt/format/offered_file.h"
#include "ckpt/index/listing_cache.h"
#include "ckpt/index/scanner.h"
#include "read_ahead.h"
#include "run_process.h"

using namespace ckpt;
using json = nlohmann::json;

namespace {

// Listed files and their entries, by path relative to the root.
std::map<std::string, CheckpointEntry> listing(const std::string& root) {
  std::map<std::string, CheckpointEntry> out;
  for (RunEntry& run : scanDirectory(root).runs)
    for (CheckpointEntry& c : run.checkpoints) out[c.file] = std::move(c);
  return out;
}

void setReadAhead(bool on) {
  if (on)
    qunsetenv("CKPTSCOPE_READ_AHEAD");
  else
    qputenv("CKPTSCOPE_READ_AHEAD", "0");
}

}  // namespace

class TestReadAhead : public QObject {
  Q_OBJECT

  QTemporaryDir m_tmp;
  std::string m_root;
  json m_truth;

  ckpt::test::ProcessResult ls(bool readAhead) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("CKPTSCOPE_NO_CACHE"), QStringLiteral("1"));
    if (readAhead)
      env.remove(QStringLiteral("CKPTSCOPE_READ_AHEAD"));
    else
      env.insert(QStringLiteral("CKPTSCOPE_READ_AHEAD"), QStringLiteral("0"));
    return ckpt::test::runProcess(
        QStringLiteral(CKPT_CLI),
        {QStringLiteral("ls"), QStringLiteral("--json"), QString::fromStdString(m_root)}, env);
  }

 private slots:
  void initTestCase() {
    QVERIFY(m_tmp.isValid());
    m_root = m_tmp.filePath(QStringLiteral("sweep")).toStdString();
    const ckpt::test::ProcessResult r = ckpt::test::runProcess(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/read_ahead_fixture.py"),
         QStringLiteral("write"), QString::fromStdString(m_root)});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    m_truth = json::parse(r.out.toStdString());
    QCOMPARE(m_truth.size(), size_t(38));
    // Everything written before now may be kept by a listing cache (a file
    // changed in its last two seconds is not).
    std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  }

  void init() {
    qputenv("CKPTSCOPE_NO_CACHE", "1");
    setReadAhead(true);
  }
  void cleanupTestCase() {
    qunsetenv("CKPTSCOPE_NO_CACHE");
    qunsetenv("CKPTSCOPE_READ_AHEAD");
  }

  // What torch.save wrote, listed with the files read in batches.
  void entriesAsWritten() {
    const uint64_t before = offeredFilesTaken();
    const std::map<std::string, CheckpointEntry> listed = listing(m_root);
    const uint64_t taken = offeredFilesTaken() - before;
    QCOMPARE(listed.size(), m_truth.size());
    size_t small = 0;
    for (const auto& [rel, want] : m_truth.items()) {
      QVERIFY2(listed.count(rel), rel.c_str());
      const CheckpointEntry& e = listed.at(rel);
      QCOMPARE(e.size, want["size"].get<uint64_t>());
      QCOMPARE(e.verdict, want["verdict"].get<std::string>());
      QCOMPARE(e.step, std::optional<int64_t>(want["step"].get<int64_t>()));
      if (want["loss"].is_null())
        QVERIFY2(!e.error.empty(), rel.c_str());
      else
        QCOMPARE(e.loss, std::optional<double>(want["loss"].get<double>()));
      if (want["size"].get<uint64_t>() <= InputFile::kReadWholeBytes) ++small;
    }
    QCOMPARE(small, size_t(37));
    if (!detail::ReadAhead().on())
      QSKIP(
          "io_uring is not available here (kernel, seccomp or kernel.io_uring_disabled): "
          "every file was read one by one");
    // Each small file came from a batch; the large one was opened as before.
    QCOMPARE(taken, uint64_t(small));
  }

  // The same listing read one by one: the same entries, the same bytes.
  void sameAsOneByOne() {
    setReadAhead(false);
    const uint64_t before = offeredFilesTaken();
    const std::map<std::string, CheckpointEntry> one = listing(m_root);
    QCOMPARE(offeredFilesTaken(), before);  // nothing read ahead
    setReadAhead(true);
    const std::map<std::string, CheckpointEntry> batch = listing(m_root);
    QCOMPARE(batch.size(), one.size());
    for (const auto& [rel, a] : one) {
      const CheckpointEntry& b = batch.at(rel);
      QCOMPARE(b.path, a.path);
      QCOMPARE(b.format, a.format);
      QCOMPARE(b.size, a.size);
      QCOMPARE(b.mtime, a.mtime);
      QCOMPARE(b.tensorBytes, a.tensorBytes);
      QCOMPARE(b.optimizerBytes, a.optimizerBytes);
      QCOMPARE(b.error, a.error);
      QCOMPARE(b.safety, a.safety);
      QCOMPARE(b.offenders, a.offenders);
    }
    const ckpt::test::ProcessResult off = ls(false), on = ls(true);
    QCOMPARE(off.exitCode, 0);
    QCOMPARE(on.exitCode, 0);
    QVERIFY(off.out.size() > 1000);
    QCOMPARE(on.out, off.out);
  }

  // The stamps a batch takes (statx) are the ones an open's fstat takes: a
  // listing cache written by one serves the other, every kept file a hit.
  void cacheStampsAgree() {
    qunsetenv("CKPTSCOPE_NO_CACHE");
    const auto hitsOfSecond = [this](bool firstAhead, bool secondAhead, const QString& name) {
      qputenv("CKPTSCOPE_CACHE_DIR", m_tmp.filePath(name).toUtf8());
      setReadAhead(firstAhead);
      (void)listing(m_root);
      setReadAhead(secondAhead);
      resetListingCacheStats();
      (void)listing(m_root);
      return listingCacheStats();
    };
    const ListingCacheStats oneByOne = hitsOfSecond(false, false, QStringLiteral("cache-a"));
    // The readable files are kept; the two that are not checkpoints are read again.
    QCOMPARE(oneByOne.hits, uint64_t(36));
    QCOMPARE(oneByOne.misses, uint64_t(2));
    setReadAhead(true);
    const bool ring = detail::ReadAhead().on();
    for (const auto& [first, second, name] : {std::tuple{true, false, QStringLiteral("cache-b")},
                                              std::tuple{false, true, QStringLiteral("cache-c")},
                                              std::tuple{true, true, QStringLiteral("cache-d")}}) {
      const ListingCacheStats s = hitsOfSecond(first, second, name);
      QCOMPARE(s.hits, oneByOne.hits);
      QCOMPARE(s.misses, oneByOne.misses);
      // Each kept file's stamp came from a batch's statx, or each from its own stat.
      QCOMPARE(s.stamped, second && ring ? oneByOne.hits : uint64_t(0));
    }
    QCOMPARE(oneByOne.stamped, uint64_t(0));
    if (!ring) QSKIP("io_uring is not available here: every file was stat'ed one by one");
  }
};

QTEST_GUILESS_MAIN(TestReadAhead)
#include "tst_read_ahead.moc"
