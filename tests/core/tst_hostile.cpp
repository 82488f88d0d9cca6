// Hostile and damaged input: every case ends in an error or a tree, never a
// crash, a hang, a giant allocation, or code from the file being run.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <random>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/zip_archive.h"
#include "json_compare.h"

using namespace ckpt;
using ckpt::test::json;

namespace {

const std::string kFixtures = CKPT_FIXTURE_DIR;
const std::string kHostile = std::string(CKPT_FIXTURE_DIR) + "/hostile";

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

struct Outcome {
  bool opened = false;
  std::string openError;
  std::vector<std::string> dataErrors;  // tensorData failures and verify() problems
  json tree;
};

// Everything a user could make the app do with a file: open it, show its
// tree and view, read every tensor, verify it.
Outcome exercise(const std::string& path) {
  Outcome o;
  // The directory scanner's metadata-only read must survive the same input.
  try {
    ReadOptions metadataOnly;
    metadataOnly.metadataOnly = true;
    const auto f = CheckpointFile::open(path, metadataOnly);
    const CheckpointView view(*f);
    (void)view.step();
    (void)toJson(*f, 200000);
  } catch (const FormatError&) {
  }
  std::unique_ptr<CheckpointFile> f;
  try {
    f = CheckpointFile::open(path);
  } catch (const FormatError& e) {
    o.openError = e.what();
    return o;
  }
  o.opened = true;
  o.tree = toJson(*f, 200000);
  const CheckpointView view(*f);
  (void)view.entries();
  (void)view.optimizerParams();
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    try {
      const TensorData d = f->tensorData(i);
      double sum = 0;
      d.forEach([&sum](uint64_t, double v) { sum += v; });
      (void)sum;
    } catch (const FormatError& e) {
      o.dataErrors.push_back(e.what());
    }
  }
  for (const auto& p : f->verify()) o.dataErrors.push_back(p);
  return o;
}

}  // namespace

class TestHostile : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { std::filesystem::remove(kHostile + "/PWNED"); }

  void hostileFiles_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("expect");
    QTest::addColumn<QString>("object");
    const json list = ckpt::test::readJsonFile(kHostile + "/hostile.json");
    QVERIFY(list.size() >= 30);
    for (const json& h : list)
      QTest::newRow(h["file"].get<std::string>().c_str())
          << QString::fromStdString(h["file"].get<std::string>())
          << QString::fromStdString(h["expect"].get<std::string>())
          << QString::fromStdString(h.value("object", std::string()));
  }
  void hostileFiles() {
    QFETCH(QString, file);
    QFETCH(QString, expect);
    QFETCH(QString, object);
    const std::string path = kHostile + "/" + file.toStdString();
    const Outcome o = exercise(path);
    if (!o.opened)
      QVERIFY2(o.openError.rfind(path + ": ", 0) == 0,
               ("error must name the file: " + o.openError).c_str());
    if (expect == "error") {
      // Rejected outright, or opened with the damage reported per tensor/record.
      QVERIFY2(!o.opened || !o.dataErrors.empty(), "expected an error");
    } else if (expect == "error_on_data") {
      QVERIFY2(!o.opened || !o.dataErrors.empty(), "expected reading the data to fail");
    } else if (expect == "tree") {
      QVERIFY2(o.opened, o.openError.c_str());
      if (!object.isEmpty()) {
        const std::string dump = dumpJson(o.tree);
        QVERIFY2(dump.find("\"$object\":\"" + object.toStdString() + "\"") != std::string::npos,
                 ("opaque object " + object.toStdString() + " not shown").c_str());
      }
    }
    QVERIFY2(!std::filesystem::exists(kHostile + "/PWNED"), "a payload ran");
  }

  void cleanupTestCase() {
    QVERIFY2(!std::filesystem::exists(kHostile + "/PWNED"), "a payload ran");
  }

  // Truncation at many offsets of files in every format.
  void truncation_data() {
    QTest::addColumn<QString>("file");
    for (const char* f : {"dtypes.pt", "runs/tiny/tiny_step100.pt", "legacy_state.pt",
                          "runs/st/model.safetensors", "dtypes_deflated.pt", "nested_proto4.pt"})
      QTest::newRow(f) << f;
  }
  void truncation() {
    QFETCH(QString, file);
    const std::string bytes = readBytes(kFixtures + "/" + file.toStdString());
    QVERIFY(bytes.size() > 100);
    QTemporaryDir dir;
    std::vector<size_t> cuts;
    for (size_t i = 0; i < 64; ++i) cuts.push_back(bytes.size() * i / 64);
    for (size_t back = 1; back <= 40; ++back) cuts.push_back(bytes.size() - back);
    size_t rejected = 0;
    for (size_t cut : cuts) {
      const std::string path = dir.filePath("cut.pt").toStdString();
      writeBytes(path, bytes.substr(0, cut));
      const Outcome o = exercise(path);
      if (!o.opened) {
        ++rejected;
        QVERIFY2(o.openError.rfind(path + ": ", 0) == 0, o.openError.c_str());
      } else {
        // Whatever opened must report the damage, not read past the end.
        QVERIFY2(!o.dataErrors.empty(),
                 ("truncated at " + std::to_string(cut) + " but nothing reported").c_str());
      }
    }
    QVERIFY(rejected > 0);
  }

  // Random bytes, some behind a plausible magic number.
  void randomBytes() {
    std::mt19937_64 rng(1234);
    QTemporaryDir dir;
    const std::string prefixes[] = {
        "", "PK\x03\x04",
        std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14),
        std::string("\x10\x00\x00\x00\x00\x00\x00\x00{", 9), "\x80\x02"};
    for (int i = 0; i < 300; ++i) {
      std::string bytes = prefixes[i % 5];
      const size_t n = rng() % 4096;
      for (size_t k = 0; k < n; ++k) bytes += char(rng());
      const std::string path = dir.filePath("random.pt").toStdString();
      writeBytes(path, bytes);
      (void)exercise(path);  // must return, whatever it says
    }
  }

  // Bit flips in the pickle, the zip directory and the tensor data.
  void bitFlips() {
    const std::string src = kFixtures + "/runs/tiny/tiny_step100.pt";
    const std::string bytes = readBytes(src);
    uint64_t pklStart = 0, pklSize = 0, cdStart = bytes.size() - 22;
    std::vector<std::pair<uint64_t, uint64_t>> dataRecords;
    {
      InputFile in(src);
      ZipArchive zip(in);
      for (const ZipEntry& e : zip.entries()) {
        if (e.name.size() > 8 && e.name.substr(e.name.size() - 8) == "data.pkl") {
          pklStart = zip.dataOffset(e);
          pklSize = e.size;
        } else if (e.name.find("/data/") != std::string::npos && e.size > 0) {
          dataRecords.emplace_back(zip.dataOffset(e), e.size);
        }
        cdStart = std::min<uint64_t>(cdStart, bytes.size());
      }
      // The central directory starts after the last record's data.
      uint64_t maxEnd = 0;
      for (const ZipEntry& e : zip.entries())
        maxEnd = std::max(maxEnd, zip.dataOffset(e) + e.compressedSize);
      cdStart = maxEnd;
    }
    QVERIFY(pklSize > 0 && !dataRecords.empty());
    std::mt19937_64 rng(99);
    QTemporaryDir dir;
    const std::string path = dir.filePath("flip.pt").toStdString();
    for (int i = 0; i < 600; ++i) {
      std::string b = bytes;
      uint64_t at = 0;
      const int region = i % 3;
      if (region == 0)
        at = pklStart + rng() % pklSize;
      else if (region == 1)
        at = cdStart + rng() % (bytes.size() - cdStart);
      else {
        const auto& r = dataRecords[rng() % dataRecords.size()];
        at = r.first + rng() % r.second;
      }
      b[at] = char(uint8_t(b[at]) ^ uint8_t(1u << (rng() % 8)));
      writeBytes(path, b);
      const Outcome o = exercise(path);
      if (region == 2) {
        // A flipped tensor byte still parses, and verify names the record.
        QVERIFY2(o.opened, o.openError.c_str());
        bool crc = false;
        for (const auto& e : o.dataErrors) crc |= e.find("CRC mismatch") != std::string::npos;
        QVERIFY2(crc, ("flip at " + std::to_string(at) + " not caught by the CRC check").c_str());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestHostile)
#include "tst_hostile.moc"
