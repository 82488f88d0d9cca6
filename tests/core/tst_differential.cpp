// Every checkpoint file the suite's fixture scripts write (hostile and
// damaged ones included), read by ckptscope-cli info and by torch
// (weights_only=True: tests/python/differential.py): where torch reads a file
// and we exit 0, the same tensors with the same bytes; where we refuse, one
// line on stderr; never exit 0 with fewer tensors than torch sees.
#include <QtTest>

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "json_compare.h"
#include "run_process.h"

using namespace ckpt;
using ckpt::test::json;
namespace fs = std::filesystem;

namespace {

using Run = ckpt::test::ProcessResult;

// Files the fixture scripts write that are no checkpoint (expectations,
// logs, metrics): neither side is asked about them.
bool isCheckpointCandidate(const fs::path& p) {
  static const std::set<std::string> text = {".json", ".jsonl", ".txt",  ".out", ".err", ".log",
                                             ".csv",  ".md",    ".yaml", ".yml", ".py"};
  const std::string ext = p.extension().string();
  return !text.count(ext) && p.filename() != "latest" && p.filename() != "PWNED";
}

// Written by a fixture script from plain objects, so Python may unpickle
// it in full where 1.13's restricted unpickler lacks an opcode: not the
// hostile generators' files (make_hostile.py, make_safety.py), which are
// built to run code, nor anything mutated here.
// Trusted: written by a fixture script from plain objects, in a folder
// named here (an allow-list, so that a new fixture folder of hostile files,
// json_names' builtins.eval pickle among them, is never loaded in full).
bool isTrusted(const std::string& file) {
  const std::string root = std::string(CKPT_FIXTURE_DIR) + "/";
  if (file.compare(0, root.size(), root) != 0) return false;
  if (file.find("/hostile/") != std::string::npos || file.find("/safety/") != std::string::npos)
    return false;
  const std::string rel = file.substr(root.size());
  const size_t slash = rel.find('/');
  if (slash == std::string::npos) return true;  // the reader fixtures at the top
  static const std::set<std::string> plain{"diff",  "experiment", "export", "legacy",
                                           "prune", "runs",       "sharded"};
  return plain.count(rel.substr(0, slash)) != 0;
}

// crc32 of tensor i's bytes, row-major and little-endian, as the app reads
// them; nullopt with the reason when they cannot be read.
std::optional<uint32_t> crcOf(const CheckpointFile& f, size_t i, std::string& why) {
  try {
    const TensorData d = f.tensorData(i);
    const size_t es = size_t(dtypeSize(d.info().dtype));
    std::vector<uint8_t> buf(size_t(d.numel()) * es);
    uLong crc = crc32(0L, Z_NULL, 0);
    if (!buf.empty() && d.readRaw(0, size_t(d.numel()), buf.data()) == size_t(d.numel()))
      crc = crc32(crc, buf.data(), uInt(buf.size()));
    return uint32_t(crc);
  } catch (const FormatError& e) {
    why = e.what();
    return std::nullopt;
  }
}

// What ckptscope-cli info says of `file`, as differential.py reads it:
// exit status, stderr and, when it exits 0, every tensor with a crc32 of
// its bytes (read in process: info prints no bytes). QVERIFY inside: check
// QTest::currentTestFailed() after.
json ourAnswer(const std::string& file, bool trusted) {
  const Run r = ckpt::test::runProcess(QStringLiteral(CKPT_CLI),
                                       {"info", "--json", QString::fromStdString(file)}, {}, 60000);
  json entry = {
      {"file", file}, {"exit", r.exitCode}, {"stderr", r.err.toStdString()}, {"trusted", trusted}};
  [&] {
    QVERIFY2(r.exitCode >= 0, (file + ": crashed or hung").c_str());
    if (r.exitCode != 0) return;
    const json doc = json::parse(r.out.toStdString());
    const auto f = CheckpointFile::open(file);
    QCOMPARE(f->tensors().size(), doc["tensors"].size());
    json tensors = json::array();
    for (size_t i = 0; i < doc["tensors"].size(); ++i) {
      const json& t = doc["tensors"][i];
      json mine = {{"path", t["path"]},
                   {"dtype", t["dtype"]},
                   {"shape", t["shape"]},
                   {"nbytes", t["nbytes"]},
                   {"crc32", nullptr}};
      // Meta tensors have no bytes, sub-byte quantized types none per
      // element to compare (tensor_walk.py leaves them out too).
      if (!f->tensors()[i].isMeta && dtypeElementsPerByte(f->tensors()[i].dtype) == 1) {
        std::string why;
        const auto crc = crcOf(*f, i, why);
        // info exits 0 only when every tensor's bytes are there.
        QVERIFY2(crc, (file + ": info exits 0, but " + why).c_str());
        mine["crc32"] = *crc;
      }
      tensors.push_back(std::move(mine));
    }
    entry["tensors"] = std::move(tensors);
  }();
  return entry;
}

// differential.py's report on `ours` (see its docstring); problems fail
// the test, the rest is logged.
json compareWithTorch(const json& ours) {
  QTemporaryDir dir;
  const std::string oursPath = dir.filePath("ours.json").toStdString();
  const std::string reportPath = dir.filePath("report.json").toStdString();
  std::ofstream(oursPath) << ours.dump();
  const Run check =
      ckpt::test::runProcess(QStringLiteral(CKPT_TORCH_PYTHON),
                             {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/differential.py"),
                              QString::fromStdString(oursPath), QString::fromStdString(reportPath)},
                             {}, 600000);
  if (check.exitCode != 0) return {{"error", (check.out + check.err).toStdString()}};
  qInfo("%s", check.out.trimmed().constData());
  json report = ckpt::test::readJsonFile(reportPath);
  for (const json& r : report["torch_refused"])
    qInfo("read where torch (weights_only) refuses: %s (%d tensors; torch: %s)",
          r[0].get<std::string>().c_str(), r[2].get<int>(), r[1].get<std::string>().c_str());
  for (const json& r : report["we_refused"])
    if (r[2] == "torch reads it")
      qInfo("refused where torch reads it: %s", r[1].get<std::string>().c_str());
  for (const json& p : report["problems"]) qWarning("%s", p.get<std::string>().c_str());
  return report;
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

class TestDifferential : public QObject {
  Q_OBJECT

 private slots:
  void againstTorch() {
    std::vector<std::string> files;
    // json_names/ holds names that are not UTF-8 on purpose: our JSON gives
    // them as \udcXY, which nlohmann's parser here refuses (tst_json_names
    // checks them through Python's json.loads).
    const std::string jsonNames = std::string(CKPT_FIXTURE_DIR) + "/json_names/";
    for (const auto& e : fs::recursive_directory_iterator(CKPT_FIXTURE_DIR))
      if (e.is_regular_file() && isCheckpointCandidate(e.path()) &&
          e.path().string().compare(0, jsonNames.size(), jsonNames) != 0)
        files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    QVERIFY2(files.size() >= 300, std::to_string(files.size()).c_str());

    json ours = json::array();
    for (const std::string& file : files) {
      ours.push_back(ourAnswer(file, isTrusted(file)));
      if (QTest::currentTestFailed()) return;
    }
    const json report = compareWithTorch(ours);
    QVERIFY2(!report.contains("error"), report.dump().c_str());
    QCOMPARE(report["problems"].size(), size_t(0));
    // Not vacuous: torch and we read the same tensors from many files (93
    // when this was written), the legacy ones of every protocol among them.
    QVERIFY2(report["agreed"].get<int>() >= 80,
             std::to_string(report["agreed"].get<int>()).c_str());
    const std::set<std::string> agreed = report["agreed_files"];
    for (int p = 1; p <= 5; ++p) {
      const std::string legacy =
          std::string(CKPT_FIXTURE_DIR) + "/legacy/legacy_p" + std::to_string(p) + ".pt";
      QVERIFY2(agreed.count(legacy), legacy.c_str());
    }
  }

  // Cut and bit-flipped copies of files torch's restricted unpickler reads
  // (a legacy file, two zips): wherever torch still reads a copy and we
  // exit 0, the same tensors and bytes; never exit 0 with fewer.
  void mutatedCopies() {
    std::mt19937_64 rng(24);
    QTemporaryDir dir;
    json ours = json::array();
    for (const char* name : {"legacy_state.pt", "runs/tiny/weights.bin", "views.pt"}) {
      const std::string bytes = readBytes(std::string(CKPT_FIXTURE_DIR) + "/" + name);
      QVERIFY(bytes.size() > 200);
      std::vector<std::string> copies;
      for (size_t i = 1; i < 16; ++i) copies.push_back(bytes.substr(0, bytes.size() * i / 16));
      for (int i = 0; i < 24; ++i) {
        std::string b = bytes;
        const size_t at = size_t(rng() % b.size());
        b[at] = char(uint8_t(b[at]) ^ uint8_t(1u << (rng() % 8)));
        copies.push_back(std::move(b));
      }
      for (size_t i = 0; i < copies.size(); ++i) {
        const std::string path = dir.filePath(QString::number(ours.size()) + ".pt").toStdString();
        std::ofstream(path, std::ios::binary) << copies[i];
        ours.push_back(ourAnswer(path, /*trusted=*/false));
        if (QTest::currentTestFailed()) return;
      }
    }
    const json report = compareWithTorch(ours);
    QVERIFY2(!report.contains("error"), report.dump().c_str());
    QCOMPARE(report["problems"].size(), size_t(0));
  }
};

QTEST_GUILESS_MAIN(TestDifferential)
#include "tst_differential.moc"
