// TensorBoard event files: `ckptscope-cli metrics --json` against an
// independent Python reader of files written byte by byte as TensorBoard's
// writers write them (tests/python/make_tfevents_fixtures.py,
// tfevents_reader.py); a file followed while it grows; hostile framing.
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "ckpt/index/tfevents.h"
#include "crc32c.h"  // core/index/src: the checksum both ways (instruction and table)
#include "json_compare.h"
#include "run_process.h"

using namespace ckpt;
using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

const std::string kFixtures = std::string(CKPT_FIXTURE_DIR) + "/tfevents";
const std::string kRoot = kFixtures + "/tb";
const std::string kJob = kRoot + "/job";

ckpt::test::ProcessResult run(const QString& program, const QStringList& args) {
  return ckpt::test::runProcess(program, args, {}, 120000);
}

// What the independent reader finds under kRoot.
const json& expected() {
  static const json doc = [] {
    const auto r = run(QStringLiteral(CKPT_TORCH_PYTHON),
                       {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/tfevents_reader.py"),
                        QString::fromStdString(kRoot)});
    if (r.exitCode != 0) qFatal("tfevents_reader.py failed: %s", r.err.constData());
    return json::parse(r.out.toStdString());
  }();
  return doc;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeAll(const std::string& path, std::string_view bytes, bool append = false) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// One TFRecord around `data`, checksums as TensorBoard's record_writer.
std::string frame(std::string_view data) {
  std::string out(12, '\0');
  const uint64_t n = data.size();
  std::memcpy(out.data(), &n, 8);
  const uint32_t h =
      detail::maskCrc32c(detail::crc32c(reinterpret_cast<const uint8_t*>(out.data()), 8));
  std::memcpy(out.data() + 8, &h, 4);
  out.append(data);
  const uint32_t d = detail::maskCrc32c(
      detail::crc32c(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  out.append(reinterpret_cast<const char*>(&d), 4);
  return out;
}

using Points = std::vector<std::pair<std::string, MetricPoint>>;

bool samePoints(const Points& a, const Points& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const MetricPoint &p = a[i].second, &q = b[i].second;
    if (a[i].first != b[i].first || p.step != q.step || p.wallTime != q.wallTime ||
        !(p.value == q.value || (std::isnan(p.value) && std::isnan(q.value))))
      return false;
  }
  return true;
}

}  // namespace

class TestTfEvents : public QObject {
  Q_OBJECT

 private slots:
  void crcKnownAnswer() {
    // CRC-32C's check value (RFC 3720 / iSCSI) and TFRecord's masking.
    const std::string nine = "123456789";
    QCOMPARE(detail::crc32c(reinterpret_cast<const uint8_t*>(nine.data()), nine.size()),
             0xe3069283u);
    QCOMPARE(detail::crc32c(nullptr, 0), 0u);
    // 32 bytes of zeros: RFC 3720 B.4.
    const std::vector<uint8_t> zeros(32, 0);
    QCOMPARE(detail::crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
    QCOMPARE(detail::maskCrc32c(0), 0xa282ead8u);
    QCOMPARE(detail::crc32cPortable(reinterpret_cast<const uint8_t*>(nine.data()), nine.size()),
             0xe3069283u);
    QCOMPARE(detail::crc32cPortable(zeros.data(), zeros.size()), 0x8a9136aau);
    // The instruction and the table agree at every length and alignment.
    std::mt19937 rng(3);
    std::vector<uint8_t> bytes(4096);
    for (uint8_t& b : bytes) b = uint8_t(rng());
    for (size_t start = 0; start < 9; ++start)
      for (size_t n = 0; n + start <= bytes.size(); n += 1 + n / 3)
        QCOMPARE(detail::crc32c(bytes.data() + start, n),
                 detail::crc32cPortable(bytes.data() + start, n));
    // Taken in two parts, cut anywhere: RFC 3720's check value, and the
    // whole buffer's CRC (the listing cache writes its records as parts).
    for (size_t cut = 0; cut <= nine.size(); ++cut) {
      const auto* p = reinterpret_cast<const uint8_t*>(nine.data());
      QCOMPARE(detail::crc32cExtend(detail::crc32c(p, cut), p + cut, nine.size() - cut),
               0xe3069283u);
    }
    for (size_t cut = 0; cut <= bytes.size(); cut += 97)
      QCOMPARE(detail::crc32cExtend(detail::crc32c(bytes.data(), cut), bytes.data() + cut,
                                    bytes.size() - cut),
               detail::crc32c(bytes.data(), bytes.size()));
  }

  void metricsJsonEqualsPythonReader() {
    // Every run, tag, point and restart as the independent reader finds them.
    const json& want = expected();
    const auto r =
        run(QStringLiteral(CKPT_CLI), {"metrics", QString::fromStdString(kRoot), "--json"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), r.err.constData());
    const json got = json::parse(r.out.toStdString());
    std::set<std::string> names;
    for (const json& run : got["runs"]) names.insert(run["name"].get<std::string>());
    std::set<std::string> wantNames;
    for (const auto& [name, tags] : want["runs"].items()) wantNames.insert(name);
    QCOMPARE(names, wantNames);
    QVERIFY(names.count("job") && names.count("keras/train") && names.count("keras/validation"));
    size_t points = 0;
    for (const json& run : got["runs"]) {
      const std::string name = run["name"].get<std::string>();
      QCOMPARE(run["path"].get<std::string>(), kRoot + "/" + name);
      const json& tags = want["runs"][name];
      std::set<std::string> metrics, wantMetrics;
      for (const json& s : run["series"]) metrics.insert(s["metric"].get<std::string>());
      for (const auto& [tag, s] : tags.items()) wantMetrics.insert(tag);
      QCOMPARE(metrics, wantMetrics);
      for (const json& s : run["series"]) {
        const std::string tag = s["metric"].get<std::string>();
        QCOMPARE(s["source"].get<std::string>(), std::string("tensorboard"));
        const std::string d =
            ckpt::test::compareJson(tags[tag]["points"], s["points"], name + " " + tag);
        QVERIFY2(d.empty(), d.c_str());
        QCOMPARE(s["restarts"], tags[tag]["restarts"]);
        points += s["points"].size();
      }
    }
    QVERIFY(points > 300);
    // The SessionLog.START at 40 and the loss going back at 70 are restarts;
    // the tags written as tensors (float32, double, half, int, int64) are
    // there; the histogram, text, image and the corrupt record's tag are not.
    const json& job = want["runs"]["job"];
    QCOMPARE(job["loss"]["restarts"], json::parse("[40, 70]"));
    for (const char* tag : {"eval/accuracy", "metrics/double", "metrics/half", "metrics/int",
                            "metrics/int64", "legacy/node", "train/lr"})
      QVERIFY2(job.contains(tag), tag);
    for (const char* tag : {"weights/hist", "notes", "samples", "old_hist", "corrupt/only"})
      QVERIFY2(!job.contains(tag), tag);
  }

  void damageIsCountedAndNamed() {
    // The writer's record of what it damaged, the reader's, and the CLI's
    // problems agree: each damaged file named with the first damaged byte.
    const json writer = ckpt::test::readJsonFile(kFixtures + "/tb_damage.json");
    const json& reader = expected()["damage"];
    QCOMPARE(reader.size(), writer.size());
    for (const auto& [file, kinds] : writer.items()) QCOMPARE(reader[file], kinds);
    const auto r =
        run(QStringLiteral(CKPT_CLI), {"metrics", QString::fromStdString(kRoot), "--json"});
    const json got = json::parse(r.out.toStdString());
    std::vector<std::string> problems;
    for (const json& run : got["runs"])
      for (const json& p : run["problems"]) problems.push_back(p.get<std::string>());
    for (const auto& [file, kinds] : writer.items())
      for (const auto& [kind, offsets] : kinds.items()) {
        const std::string prefix = file + ": byte " + std::to_string(offsets[0].get<uint64_t>());
        const char* word = kind == "length" ? "length's checksum"
                           : kind == "data" ? "data checksum"
                                            : "not a whole record";
        const bool found = std::any_of(problems.begin(), problems.end(), [&](const std::string& p) {
          return p.rfind(prefix, 0) == 0 && p.find(word) != std::string::npos &&
                 (offsets.size() == 1 ||
                  p.find(std::to_string(offsets.size() - 1) + " more") != std::string::npos);
        });
        QVERIFY2(found, (prefix + " " + word).c_str());
      }
    QCOMPARE(problems.size(), size_t(3));
  }

  void oneEventFileNamesItsFolder() {
    // `metrics FILE` with an event file: the run of its folder, every file of it.
    const auto files = tfEventFilesIn(kJob);
    QCOMPARE(files.size(), size_t(2));
    QVERIFY(files[0] < files[1]);
    const auto r =
        run(QStringLiteral(CKPT_CLI), {"metrics", QString::fromStdString(files[1]), "--json"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    QCOMPARE(got["runs"].size(), size_t(1));
    const json& want = expected()["runs"]["job"];
    QCOMPARE(got["runs"][0]["series"].size(), want.size());
    for (const json& s : got["runs"][0]["series"]) {
      const std::string d =
          ckpt::test::compareJson(want[s["metric"].get<std::string>()]["points"], s["points"]);
      QVERIFY2(d.empty(), d.c_str());
    }
  }

  void hfTrainerLoggingDirsBelongToTheRun() {
    // <run>/runs/<date>_<host>/ (one folder per launch) are the run's curves,
    // not runs of their own; the launches follow each other by the times in
    // the files' names, not by the folders' names (Nov28 sorts after Dec03).
    const std::string hf = kFixtures + "/hf";
    const auto py = run(QStringLiteral(CKPT_TORCH_PYTHON),
                        {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/tfevents_reader.py"),
                         QString::fromStdString(hf)});
    QCOMPARE(py.exitCode, 0);
    const json folders = json::parse(py.out.toStdString())["runs"];
    QCOMPARE(folders.size(), size_t(2));
    const json& first = folders["hfrun/runs/Nov28_10-00-00_node5"];
    const json& second = folders["hfrun/runs/Dec03_08-00-00_node5"];
    const auto r = run(QStringLiteral(CKPT_CLI), {"metrics", QString::fromStdString(hf), "--json"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    QCOMPARE(got["runs"].size(), size_t(1));
    QCOMPARE(got["runs"][0]["name"].get<std::string>(), std::string("hfrun"));
    QCOMPARE(got["runs"][0]["series"].size(), size_t(2));
    for (const json& s : got["runs"][0]["series"]) {
      const std::string tag = s["metric"].get<std::string>();
      QCOMPARE(s["source"].get<std::string>(), std::string("tensorboard"));
      json want = first[tag]["points"];
      for (const json& p : second[tag]["points"]) want.push_back(p);
      QCOMPARE(want.size(), size_t(60));
      const std::string d = ckpt::test::compareJson(want, s["points"], tag);
      QVERIFY2(d.empty(), d.c_str());
      QCOMPARE(s["files"].size(), size_t(2));
      QCOMPARE(s["restarts"], json::array());
    }
  }

  void lsListsEventFoldersAsRuns() {
    // A folder of event files and nothing else is a run (0 checkpoints,
    // written by TensorBoard's writers), the folders the Python reader reads
    // as runs; a Trainer's runs/<launch>/ folders are its run's, not runs.
    const auto r =
        run(QStringLiteral(CKPT_CLI), {"ls", QString::fromStdString(kFixtures), "--json"});
    QCOMPARE(r.exitCode, 0);
    const json got = json::parse(r.out.toStdString());
    std::set<std::string> want{"hf/hfrun", "tb_live"};
    for (const auto& [name, series] : expected()["runs"].items()) want.insert("tb/" + name);
    std::set<std::string> names;
    for (const json& run : got["runs"]) {
      const std::string name = run["name"].get<std::string>();
      names.insert(name);
      // The files it is listed for: the event files its folders hold.
      std::set<std::string> events;
      for (const std::string& folder : {std::string(), std::string("/runs")}) {
        std::error_code ec;
        for (fs::recursive_directory_iterator it(kFixtures + "/" + name + folder, ec), end;
             !ec && it != end; it.increment(ec))
          if (it->path().filename().string().starts_with("events.out.tfevents.") &&
              (folder.empty() ? it->path().parent_path() == fs::path(kFixtures + "/" + name)
                              : true))
            events.insert(fs::canonical(it->path()).string());
      }
      std::set<std::string> listed;
      for (const json& f : run["metrics"])
        listed.insert(fs::canonical(f.get<std::string>()).string());
      QVERIFY2(listed == events, name.c_str());
      if (name == "hf/hfrun") {
        QCOMPARE(run["checkpoints"].size(), size_t(1));
        QCOMPARE(events.size(), size_t(2));
        continue;
      }
      QCOMPARE(run["checkpoints"].size(), size_t(0));
      QCOMPARE(run["trainer"].get<std::string>(), std::string("tensorboard"));
    }
    QCOMPARE(names, want);
  }

  void followsAGrowingFile() {
    // A writer appends in pieces that cut records anywhere: each read stops
    // after the last whole record and the next goes on from there; together
    // they give what one read of the whole file gives.
    const std::string whole = readAll(tfEventFilesIn(kJob)[0]);
    QVERIFY(whole.size() > 10000);
    QTemporaryDir tmp;
    const std::string path = tmp.filePath("events.out.tfevents.1.grow").toStdString();
    std::vector<std::string> problems;
    const Points all = readTfEventsPoints(tfEventFilesIn(kJob)[0], 0, nullptr, &problems);
    QCOMPARE(problems.size(), size_t(1));  // the corrupt records, once
    std::mt19937 rng(7);
    Points followed;
    uint64_t offset = 0;
    size_t written = 0, reads = 0;
    writeAll(path, "");
    while (written < whole.size()) {
      const size_t n = std::min(whole.size() - written, size_t(1 + rng() % 700));
      writeAll(path, std::string_view(whole).substr(written, n), /*append=*/true);
      written += n;
      uint64_t end = 0;
      Points more = readTfEventsPoints(path, offset, &end);
      QVERIFY(end >= offset && end <= written);
      offset = end;
      followed.insert(followed.end(), more.begin(), more.end());
      ++reads;
    }
    QCOMPARE(offset, uint64_t(whole.size()));
    QVERIFY(reads > 20);
    QVERIFY(samePoints(followed, all));
    QVERIFY(all.size() > 300);
  }

  void sessionStartInLivePoints() {
    // The restarted job's file: its START comes through as kTfSessionStart.
    const Points points = readTfEventsPoints(tfEventFilesIn(kJob)[1]);
    QVERIFY(!points.empty());
    QCOMPARE(points.front().first, std::string(kTfSessionStart));
    QCOMPARE(points.front().second.step, int64_t(40));
  }

  void everyFlippedByteCostsOneRecord() {
    // Any one byte of a file changed: its record is skipped (a checksum
    // fails; after a length's, the next header that checks out is found),
    // every other record is read as before, and one problem names the byte.
    const std::string file = tfEventFilesIn(kJob)[1];  // no damage of its own
    const std::string whole = readAll(file);
    const Points all = readTfEventsPoints(file);
    QVERIFY(all.size() > 80);
    QTemporaryDir tmp;
    const std::string path = tmp.filePath("events.out.tfevents.3.flip").toStdString();
    writeAll(path, whole);
    std::mt19937 rng(11);
    for (int i = 0; i < 3000; ++i) {
      std::string bytes = whole;
      const size_t at = i < int(whole.size()) ? size_t(i) : rng() % whole.size();
      bytes[at] = char(bytes[at] ^ char(1 + rng() % 255));
      {
        // In place, the same size: a truncating rewrite makes ext4 flush every time.
        std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
        out.write(bytes.data(), std::streamsize(bytes.size()));
      }
      std::vector<std::string> problems;
      uint64_t end = 0;
      const Points got = readTfEventsPoints(path, 0, &end, &problems);
      const std::string where = "byte " + std::to_string(at);
      QVERIFY2(problems.size() == 1, (where + ": " + std::to_string(problems.size())).c_str());
      QVERIFY2(end == whole.size(), where.c_str());
      // `got` is `all` with at most one record's points (here at most 1) left out.
      size_t k = 0;
      while (k < got.size() && samePoints({got[k]}, {all[k]})) ++k;
      const size_t missing = all.size() - got.size();
      QVERIFY2(missing <= 1, where.c_str());
      QVERIFY2(samePoints(Points(got.begin() + long(k), got.end()),
                          Points(all.begin() + long(k + missing), all.end())),
               where.c_str());
    }
  }

  void hostileFraming() {
    QTemporaryDir tmp;
    const std::string path = tmp.filePath("events.out.tfevents.2.bad").toStdString();
    std::vector<std::string> problems;
    // A header that checks out but claims 2^60 bytes: nothing allocated, nothing read.
    {
      std::string header(12, '\0');
      const uint64_t n = uint64_t(1) << 60;
      std::memcpy(header.data(), &n, 8);
      const uint32_t h =
          detail::maskCrc32c(detail::crc32c(reinterpret_cast<const uint8_t*>(header.data()), 8));
      std::memcpy(header.data() + 8, &h, 4);
      writeAll(path, header + std::string(100, 'x'));
      uint64_t end = 99;
      QVERIFY(readTfEventsPoints(path, 0, &end, &problems).empty());
      QCOMPARE(end, uint64_t(0));
    }
    // Noise: every header fails; no point, one problem naming the file at byte 0.
    {
      std::mt19937 rng(1);
      std::string noise(1 << 20, '\0');
      for (char& c : noise) c = char(rng());
      writeAll(path, noise);
      problems.clear();
      QVERIFY(readTfEventsPoints(path, 0, nullptr, &problems).empty());
      QCOMPARE(problems.size(), size_t(1));
      QVERIFY2(problems[0].rfind(path + ": byte 0: ", 0) == 0, problems[0].c_str());
    }
    // Checksums right, the data no Event (a field key of 0), then a good record.
    {
      const std::string good =
          frame(std::string("\x09\0\0\0\0\0\0\xf0\x3f\x10\x05", 11) +           // wall 1.0, step 5
                std::string("\x2a\x0a\x0a\x08\x0a\x01x\x15\0\0\x80\x3f", 12));  // x = 1.0
      writeAll(path, frame(std::string("\x00\x01", 2)) + good);
      problems.clear();
      const Points p = readTfEventsPoints(path, 0, nullptr, &problems);
      QCOMPARE(p.size(), size_t(1));
      QCOMPARE(p[0].first, std::string("x"));
      QCOMPARE(p[0].second.step, int64_t(5));
      QCOMPARE(p[0].second.value, 1.0);
      QCOMPARE(problems.size(), size_t(1));
      QVERIFY2(problems[0].find("no TensorBoard Event") != std::string::npos, problems[0].c_str());
      // A length past its message, inside a valid record: the same, never a read past it.
      writeAll(path, frame(std::string("\x2a\x7f\x0a", 3)) + good);
      problems.clear();
      QCOMPARE(readTfEventsPoints(path, 0, nullptr, &problems).size(), size_t(1));
      QCOMPARE(problems.size(), size_t(1));
    }
    // A file that is not there: one line naming it.
    problems.clear();
    QVERIFY(readTfEventsPoints(path + ".missing", 0, nullptr, &problems).empty());
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY(problems[0].rfind(path + ".missing: cannot open", 0) == 0);
  }
};

QTEST_GUILESS_MAIN(TestTfEvents)
#include "tst_tfevents.moc"
