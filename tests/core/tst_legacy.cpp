// Legacy (non-zip) torch files in every pickle protocol torch writes: info,
// verify and consolidate agree with torch tensor by tensor; a damaged magic
// number is "damaged" with its byte offset, never a plain pickle; a cut copy
// never passes. The truth is tests/python/make_legacy.py's legacy.json (what
// torch saved, and read back) and tests/python/legacy_check.py (torch
// loading what consolidate wrote).
#include <QtTest>

#include <zlib.h>

#include <fstream>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "json_compare.h"
#include "run_process.h"

using namespace ckpt;
using ckpt::test::json;

namespace {

using Run = ckpt::test::ProcessResult;

const std::string kDir = CKPT_FIXTURE_DIR "/legacy";

Run cli(const QStringList& args) {
  return ckpt::test::runProcess(QStringLiteral(CKPT_CLI), args, {}, 60000);
}

QStringList args(std::initializer_list<std::string> a) {
  QStringList out;
  for (const std::string& s : a) out << QString::fromStdString(s);
  return out;
}

const json& manifest() {
  static const json m = ckpt::test::readJsonFile(kDir + "/legacy.json");
  return m;
}

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// The error a failed run printed: exactly one line, or a description of
// what it printed instead.
std::string oneLine(const Run& r) {
  const QByteArray err = r.err.trimmed();
  if (err.isEmpty()) return "(nothing on stderr)";
  if (err.contains('\n')) return "(more than one line) " + err.toStdString();
  return err.toStdString();
}

// crc32 of tensor i's bytes, row-major and little-endian, read as the app
// reads them.
uint32_t crcOf(const CheckpointFile& f, size_t i) {
  const TensorData d = f.tensorData(i);
  const size_t es = size_t(dtypeSize(d.info().dtype));
  std::vector<uint8_t> buf(size_t(d.numel()) * es);
  uLong crc = crc32(0L, Z_NULL, 0);
  if (!buf.empty()) {
    if (d.readRaw(0, size_t(d.numel()), buf.data()) != size_t(d.numel())) return 0;
    crc = crc32(crc, buf.data(), uInt(buf.size()));
  }
  return uint32_t(crc);
}

}  // namespace

class TestLegacy : public QObject {
  Q_OBJECT

 private slots:
  void protocols_data() {
    QTest::addColumn<int>("protocol");
    for (int p = 1; p <= 5; ++p) QTest::addRow("protocol %d", p) << p;
  }
  void protocols() {
    QFETCH(int, protocol);
    const std::string name = "legacy_p" + std::to_string(protocol) + ".pt";
    const std::string path = kDir + "/" + name;
    QVERIFY(manifest()["files"][name]["torch_loads"].get<bool>());
    const json& want = manifest()["tensors"];
    QVERIFY(want.size() >= 20);

    // info: every tensor by name, dtype, shape and size, in torch's order.
    const Run info = cli(args({"info", "--json", path}));
    QVERIFY2(info.exitCode == 0, info.err.constData());
    const json doc = json::parse(info.out.toStdString());
    QCOMPARE(doc["format"].get<std::string>(), std::string("torch-legacy"));
    QCOMPARE(doc["tensors"].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const json& t = doc["tensors"][i];
      const std::string where = want[i]["path"].dump();
      QVERIFY2(t["path"] == want[i]["path"], (t["path"].dump() + " vs " + where).c_str());
      QVERIFY2(t["dtype"] == want[i]["dtype"], where.c_str());
      QVERIFY2(t["shape"] == want[i]["shape"], where.c_str());
      QVERIFY2(t["nbytes"] == want[i]["nbytes"], where.c_str());
      QVERIFY2(!t.contains("error"), where.c_str());
    }

    // verify: OK, every tensor.
    const Run verify = cli(args({"verify", path}));
    QVERIFY2(verify.exitCode == 0, verify.err.constData());
    QVERIFY2(verify.out.contains("OK (torch-legacy") &&
                 verify.out.contains(QByteArray::number(qsizetype(want.size())) + " tensors"),
             verify.out.constData());

    // The bytes, as the app reads them.
    const auto f = CheckpointFile::open(path);
    QCOMPARE(f->tensors().size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      QVERIFY2(crcOf(*f, i) == want[i]["crc32"].get<uint32_t>(), want[i]["path"].dump().c_str());

    // consolidate: a torch zip that torch loads with the same tensors.
    QTemporaryDir dir;
    const QString out = dir.filePath("whole.pt");
    const Run copy = cli(args({"consolidate", path, out.toStdString()}));
    QVERIFY2(copy.exitCode == 0, copy.err.constData());
    QVERIFY2(copy.out.contains(QByteArray::number(qsizetype(want.size())) + " tensors"),
             copy.out.constData());
    const Run check =
        ckpt::test::runProcess(QStringLiteral(CKPT_TORCH_PYTHON),
                               {QStringLiteral(CKPT_SOURCE_DIR "/tests/python/legacy_check.py"),
                                out, QString::fromStdString(kDir + "/legacy.json")});
    QVERIFY2(check.exitCode == 0, (check.out + check.err).constData());
  }

  // torch.save writes protocol 0 with storage ids as text, and torch.load
  // cannot read that back: neither can we, saying why.
  void protocolZero() {
    QVERIFY(!manifest()["files"]["legacy_p0.pt"]["torch_loads"].get<bool>());
    const Run r = cli(args({"info", kDir + "/legacy_p0.pt"}));
    QCOMPARE(r.exitCode, 1);
    const std::string line = oneLine(r);
    QVERIFY2(line.find("pickle protocol 0") != std::string::npos, line.c_str());
  }

  // Every bit of every byte of the magic number flipped, and the pickle's
  // first byte: "damaged torch legacy file", naming the flipped byte.
  void damagedMagic_data() {
    QTest::addColumn<int>("protocol");
    for (int p = 0; p <= 5; ++p) QTest::addRow("protocol %d", p) << p;
  }
  void damagedMagic() {
    QFETCH(int, protocol);
    const std::string name = "legacy_p" + std::to_string(protocol) + ".pt";
    const json& layout = manifest()["files"][name];
    const std::string bytes = readBytes(kDir + "/" + name);
    std::vector<size_t> offsets{0};
    for (size_t i = layout["magic"][0]; i < layout["magic"][1].get<size_t>(); ++i)
      offsets.push_back(i);
    if (protocol >= 4) offsets.push_back(3);  // the frame's length
    QTemporaryDir dir;
    const std::string path = dir.filePath("flip.pt").toStdString();
    for (const size_t at : offsets) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string b = bytes;
        b[at] = char(uint8_t(b[at]) ^ uint8_t(1u << bit));
        writeBytes(path, b);
        const std::string where = "byte " + std::to_string(at) + " bit " + std::to_string(bit);
        std::string error;
        try {
          (void)CheckpointFile::open(path);
        } catch (const FormatError& e) {
          error = e.what();
        }
        QVERIFY2(error.find("damaged torch legacy file") != std::string::npos,
                 (where + ": " + (error.empty() ? "opened" : error)).c_str());
        QVERIFY2(error.find("at byte " + std::to_string(at) + ":") != std::string::npos,
                 (where + ": " + error).c_str());
        // The sniff still says legacy (the safety scan and the directory
        // listing go by it).
        QVERIFY2(sniffFile(InputFile(path)) == Sniff::TorchLegacy, where.c_str());
      }
    }
    // As a user sees it: one line, exit 1.
    std::string b = bytes;
    const size_t at = layout["magic"][0].get<size_t>() + 3;
    b[at] = char(uint8_t(b[at]) ^ 0x10);
    writeBytes(path, b);
    for (const char* command : {"info", "verify"}) {
      const Run r = cli(args({command, path}));
      QCOMPARE(r.exitCode, 1);
      const std::string line = oneLine(r);
      QVERIFY2(line.find("damaged torch legacy file") != std::string::npos &&
                   line.find("at byte " + std::to_string(at) + ":") != std::string::npos,
               line.c_str());
    }
  }

  // Another pickle in the magic number's slot (an int; a 700-byte string,
  // longer than the sniff reads), torch's protocol version and sys_info
  // after it: torch.load refuses it, and so do we, as a damaged legacy
  // file, never as a plain pickle of one int or string.
  void otherPickleInMagicSlot_data() {
    QTest::addColumn<QByteArray>("slot");
    QTest::addRow("int") << QByteArray("\x80\x02K\x05.", 5);
    QByteArray text(700, 'a');
    QByteArray str("\x80\x02X", 3);
    for (int i = 0; i < 4; ++i) str += char((text.size() >> (8 * i)) & 0xff);
    QTest::addRow("700-byte string") << str + text + ".";
  }
  void otherPickleInMagicSlot() {
    QFETCH(QByteArray, slot);
    const std::string bytes = readBytes(kDir + "/legacy_p2.pt");
    const size_t magicEnd = manifest()["files"]["legacy_p2.pt"]["magic_pickle_end"];
    QTemporaryDir dir;
    const std::string path = dir.filePath("slot.pt").toStdString();
    writeBytes(path, slot.toStdString() + bytes.substr(magicEnd));

    std::string error;
    try {
      (void)CheckpointFile::open(path);
    } catch (const FormatError& e) {
      error = e.what();
    }
    QVERIFY2(error.find("damaged torch legacy file") != std::string::npos &&
                 error.find("not torch's magic number") != std::string::npos,
             (error.empty() ? std::string("opened") : error).c_str());
    for (const char* command : {"info", "verify"}) {
      const Run r = cli(args({command, path}));
      QCOMPARE(r.exitCode, 1);
      const std::string line = oneLine(r);
      QVERIFY2(line.find("damaged torch legacy file") != std::string::npos, line.c_str());
    }
    // The independent truth: torch.load says the same.
    const Run torch = ckpt::test::runProcess(
        QStringLiteral(CKPT_TORCH_PYTHON),
        {QStringLiteral("-c"), QStringLiteral("import sys, torch; torch.load(sys.argv[1])"),
         QString::fromStdString(path)});
    QVERIFY(torch.exitCode != 0);
    QVERIFY2(torch.err.contains("magic number"), torch.err.constData());
  }

  // The rule sees a legacy file by its three small pickles, and nothing
  // else: without the magic number pickle it is still a (damaged) legacy
  // file; from its main pickle on it is none.
  void legacyHeadRule() {
    const std::string bytes = readBytes(kDir + "/legacy_p2.pt");
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    const LegacyHead whole = readLegacyHead(data, 512, bytes.size());
    QVERIFY(whole.verdict == LegacyHead::Verdict::Legacy);
    QVERIFY(whole.littleEndian);
    const size_t magicEnd = manifest()["files"]["legacy_p2.pt"]["magic_pickle_end"];
    QVERIFY(whole.mainOffset > magicEnd + 6);  // after the protocol version and sys_info

    const size_t rest = bytes.size() - magicEnd;
    const LegacyHead noMagic = readLegacyHead(data + magicEnd, rest, rest);
    QVERIFY(noMagic.verdict == LegacyHead::Verdict::Damaged);
    QVERIFY2(noMagic.damage.find("no magic number") != std::string::npos, noMagic.damage.c_str());

    const size_t main = bytes.size() - whole.mainOffset;
    const LegacyHead mainOnly = readLegacyHead(data + whole.mainOffset, main, main);
    QVERIFY(mainOnly.verdict == LegacyHead::Verdict::NotLegacy);

    // The first 20 bytes of the file (the sniff's read of a file that
    // short): the magic number decides, damage is not guessed.
    const LegacyHead shortRead = readLegacyHead(data, 20, bytes.size());
    QVERIFY(shortRead.verdict == LegacyHead::Verdict::Legacy);
  }

  // A protocol-4 file cut anywhere: never "OK".
  void truncated() {
    const std::string bytes = readBytes(kDir + "/legacy_p4.pt");
    std::vector<size_t> cuts;
    for (size_t i = 1; i < 48; ++i) cuts.push_back(bytes.size() * i / 48);
    for (size_t back = 1; back <= 24; ++back) cuts.push_back(bytes.size() - back);
    QTemporaryDir dir;
    const std::string path = dir.filePath("cut.pt").toStdString();
    for (const size_t cut : cuts) {
      writeBytes(path, bytes.substr(0, cut));
      for (const char* command : {"info", "verify"}) {
        const Run r = cli(args({command, path}));
        const std::string where = std::string(command) + " cut at " + std::to_string(cut);
        QVERIFY2(r.exitCode == 1, (where + ": exit " + std::to_string(r.exitCode)).c_str());
        QVERIFY2(!r.out.contains(": OK ("), where.c_str());
        const std::string line = oneLine(r);
        QVERIFY2(line.rfind("ckptscope-cli: " + path + ": ", 0) == 0,
                 (where + ": " + line).c_str());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestLegacy)
#include "tst_legacy.moc"
