// Token datasets: text directories (token counts computed here from the raw
// bytes, independently of the tokenizer code), .bin files written here
// (uint16 / uint32 little-endian), the validation split, the seeded window
// sampler (determinism, resume, bounds, the specified generator) and every
// error with its message.
#include <QtTest>

#include <QDir>
#include <QTemporaryDir>

#include <set>

#include "ckpt/tokenize/dataset.h"

using namespace ckpt;
using Ids = std::vector<int32_t>;

namespace {

void writeFile(const QString& path, const QByteArray& bytes) {
  QDir().mkpath(QFileInfo(path).path());
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
  QCOMPARE(f.write(bytes), bytes.size());
}

QByteArray littleEndian(const std::vector<uint32_t>& ids, int width) {
  QByteArray out;
  for (uint32_t id : ids)
    for (int b = 0; b < width; ++b) out += char((id >> (8 * b)) & 0xFF);
  return out;
}

// A tokenizer with a given vocabulary size (for .bin validation); encodes
// bytes like the byte tokenizer.
class SizedTokenizer final : public Tokenizer {
 public:
  explicit SizedTokenizer(int64_t size) : m_size(size) {}
  std::vector<int32_t> encode(std::string_view text) const override {
    return ByteTokenizer().encode(text);
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    return ByteTokenizer().decode(ids);
  }
  int64_t vocabSize() const override { return m_size; }
  std::string name() const override { return "sized"; }

 private:
  int64_t m_size;
};

template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return {};
}

#define VERIFY_ERROR(call, ...)                                                          \
  do {                                                                                   \
    const std::string err_ = errorOf([&] { call; });                                     \
    QVERIFY2(!err_.empty(), "no DataError from " #call);                                 \
    for (const std::string& part_ : std::vector<std::string>{__VA_ARGS__})               \
      QVERIFY2(err_.find(part_) != std::string::npos,                                    \
               qPrintable(QString::fromStdString("\"" + part_ + "\" not in: " + err_))); \
  } while (0)

Ids iota(int n, int first = 0) {
  Ids ids(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) ids[size_t(i)] = first + i;
  return ids;
}

}  // namespace

class TestDataset : public QObject {
  Q_OBJECT

 private slots:
  void textDirectory() {
    QTemporaryDir dir;
    // Three documents (one in a subdirectory), and files that must be ignored.
    const QByteArray a = "First document.\nWith two lines.\n";
    const QByteArray b = "# Second\n\nCaf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80\n";
    const QByteArray c = "third";
    writeFile(dir.filePath("b.md"), b);
    writeFile(dir.filePath("a.txt"), a);
    writeFile(dir.filePath("sub/c.text"), c);
    writeFile(dir.filePath("notes.json"), "{\"ignored\": true}");
    writeFile(dir.filePath(".hidden.txt"), "hidden");
    writeFile(dir.filePath(".git/x.txt"), "hidden too");
    writeFile(dir.filePath("empty.txt"), "");  // skipped inside a directory

    ByteTokenizer bytes;
    DatasetOptions opt;
    opt.valFraction = 0;
    opt.separator = 10;  // "\n" as document separator
    TokenDataset data({dir.path().toStdString()}, bytes, opt);
    // Byte tokenizer: one token per byte, plus one separator per document;
    // documents in sorted relative-path order a.txt, b.md, sub/c.text.
    const QByteArray stream = a + '\n' + b + '\n' + c + '\n';
    QCOMPARE(data.size(), int64_t(a.size() + b.size() + c.size() + 3));
    QCOMPARE(data.size(), int64_t(stream.size()));
    QCOMPARE(data.documentCount(), int64_t(3));
    QCOMPARE(data.files().size(), size_t(3));
    QVERIFY(QString::fromStdString(data.files()[0]).endsWith("a.txt"));
    QVERIFY(QString::fromStdString(data.files()[1]).endsWith("b.md"));
    QVERIFY(QString::fromStdString(data.files()[2]).endsWith("sub/c.text"));
    const Ids all = data.read(Split::Train, 0, data.size());
    for (int i = 0; i < stream.size(); ++i)
      QCOMPARE(all[size_t(i)], int32_t(static_cast<unsigned char>(stream[i])));
    QCOMPARE(data.vocabSize(), int64_t(256));

    // Without a separator: just the bytes.
    TokenDataset plain({dir.path().toStdString()}, bytes, DatasetOptions{0.0, {}, false});
    QCOMPARE(plain.size(), int64_t(a.size() + b.size() + c.size()));

    // A single text file, with a byte-order mark (dropped).
    writeFile(dir.filePath("bom.txt"), "\xEF\xBB\xBFhello");
    TokenDataset bom({dir.filePath("bom.txt").toStdString()}, bytes,
                     DatasetOptions{0.0, {}, false});
    QCOMPARE(bom.read(Split::Train, 0, bom.size()), (Ids{'h', 'e', 'l', 'l', 'o'}));
  }

  void binRoundTrip_data() {
    QTest::addColumn<bool>("uint32");
    QTest::newRow("uint16") << false;
    QTest::newRow("uint32") << true;
  }

  void binRoundTrip() {
    QFETCH(bool, uint32);
    QTemporaryDir dir;
    const int width = uint32 ? 4 : 2;
    const uint32_t vocab = uint32 ? 200000 : 50257;
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < 5000; ++i) ids.push_back((i * 7919u + 13u) % vocab);
    ids.push_back(vocab - 1);
    ids.push_back(0);
    const QString path = dir.filePath("tokens.bin");
    writeFile(path, littleEndian(ids, width));
    SizedTokenizer tok(vocab);
    DatasetOptions opt;
    opt.valFraction = 0;
    opt.binUint32 = uint32;
    TokenDataset data({path.toStdString()}, tok, opt);
    QCOMPARE(data.size(), int64_t(ids.size()));
    const Ids back = data.read(Split::Train, 0, data.size());
    for (size_t i = 0; i < ids.size(); ++i) QCOMPARE(uint32_t(back[i]), ids[i]);
    // Reads across the middle, and a second file concatenated after the first.
    QCOMPARE(data.read(Split::Train, 1234, 3),
             (Ids{int32_t(ids[1234]), int32_t(ids[1235]), int32_t(ids[1236])}));
    const QString second = dir.filePath("more.bin");
    writeFile(second, littleEndian({1, 2, 3}, width));
    TokenDataset two({path.toStdString(), second.toStdString()}, tok, opt);
    QCOMPARE(two.size(), int64_t(ids.size() + 3));
    QCOMPARE(two.read(Split::Train, int64_t(ids.size()) - 1, 4), (Ids{0, 1, 2, 3}));
  }

  void binBadId() {
    QTemporaryDir dir;
    const QString path = dir.filePath("bad.bin");
    // uint16 ids 1, 2, 3, 60000, 5: the fourth (byte offset 6) is >= 50257.
    writeFile(path, littleEndian({1, 2, 3, 60000, 5}, 2));
    SizedTokenizer tok(50257);
    VERIFY_ERROR(TokenDataset({path.toStdString()}, tok), path.toStdString(), "token id 60000",
                 "byte offset 6", "vocabulary size 50257");
    // uint32: id 70000 at byte offset 8 with a vocabulary of 65536.
    writeFile(path, littleEndian({1, 2, 70000}, 4));
    SizedTokenizer tok32(65536);
    VERIFY_ERROR(TokenDataset({path.toStdString()}, tok32, DatasetOptions{0.1, {}, true}),
                 path.toStdString(), "token id 70000", "byte offset 8");
  }

  void binBadSize() {
    QTemporaryDir dir;
    const QString path = dir.filePath("odd.bin");
    writeFile(path, QByteArray(5, '\0'));
    SizedTokenizer tok(50257);
    VERIFY_ERROR(TokenDataset({path.toStdString()}, tok), path.toStdString(), "size 5 bytes",
                 "2-byte uint16");
    writeFile(path, QByteArray(6, '\0'));
    VERIFY_ERROR(TokenDataset({path.toStdString()}, tok, DatasetOptions{0.1, {}, true}),
                 path.toStdString(), "size 6 bytes", "4-byte uint32");
    writeFile(path, QByteArray());
    VERIFY_ERROR(TokenDataset({path.toStdString()}, tok), path.toStdString(), "is empty");
  }

  void mixedSources() {
    QTemporaryDir dir;
    writeFile(dir.filePath("t.txt"), "ab");
    writeFile(dir.filePath("x.bin"), littleEndian({300, 301}, 2));
    writeFile(dir.filePath("u.txt"), "c");
    SizedTokenizer tok(1000);
    DatasetOptions opt;
    opt.valFraction = 0;
    opt.separator = 999;
    TokenDataset data({dir.filePath("t.txt").toStdString(), dir.filePath("x.bin").toStdString(),
                       dir.filePath("u.txt").toStdString()},
                      tok, opt);
    // Separators follow text documents only.
    QCOMPARE(data.read(Split::Train, 0, data.size()), (Ids{'a', 'b', 999, 300, 301, 'c', 999}));
  }

  void splits() {
    TokenDataset data(iota(1000), 1000);  // default valFraction 0.1
    QCOMPARE(data.splitSize(Split::Train), int64_t(900));
    QCOMPARE(data.splitSize(Split::Val), int64_t(100));
    QCOMPARE(data.splitBegin(Split::Val), int64_t(900));
    QCOMPARE(data.read(Split::Val, 0, 3), (Ids{900, 901, 902}));
    QCOMPARE(data.read(Split::Val, 97, 3), (Ids{997, 998, 999}));
    QCOMPARE(data.read(Split::Train, 897, 3), (Ids{897, 898, 899}));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, data.read(Split::Train, 898, 3));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, data.read(Split::Val, -1, 1));

    // floor(10 * 0.25) = 2.
    TokenDataset small(iota(10), 10, DatasetOptions{0.25, {}, false});
    QCOMPARE(small.splitSize(Split::Train), int64_t(8));
    QCOMPARE(small.splitSize(Split::Val), int64_t(2));
    TokenDataset none(iota(10), 10, DatasetOptions{0.0, {}, false});
    QCOMPARE(none.splitSize(Split::Val), int64_t(0));
    QCOMPARE(none.splitSize(Split::Train), int64_t(10));
    VERIFY_ERROR(TokenDataset(iota(10), 10, DatasetOptions{1.0, {}, false}),
                 "valFraction 1 is not in [0, 1)");
    VERIFY_ERROR(TokenDataset(iota(10), 10, DatasetOptions{-0.1, {}, false}), "valFraction");
  }

  void generatorIsSplitmix64() {
    // Vigna's splitmix64 seeded with 0: the published first outputs.
    QCOMPARE(splitmix64At(0, 0), uint64_t(0xE220A8397B1DCDAFull));
    QCOMPARE(splitmix64At(0, 1), uint64_t(0x6E789E6AA1B965F4ull));
    QCOMPARE(splitmix64At(0, 2), uint64_t(0x06C45D188009454Full));
    // Window starts from the formula in dataset.h, computed independently in
    // Python: [(splitmix64(42, k) * 91) >> 64 for k in range(8)]
    // (100 tokens, seqLen 10 -> 91 possible starts).
    TokenDataset data(iota(100), 100, DatasetOptions{0.0, {}, false});
    WindowSampler s(data, Split::Train, 10, 42);
    QCOMPARE(s.startCount(), int64_t(91));
    const std::vector<int64_t> expected = {67, 14, 25, 31, 3, 79, 19, 72};
    for (size_t k = 0; k < expected.size(); ++k) QCOMPARE(s.windowStart(k), expected[k]);
    Ids batch(20);
    s.next(batch.data(), 2);
    QCOMPARE(batch[0], 67);
    QCOMPARE(batch[9], 76);
    QCOMPARE(batch[10], 14);
    QCOMPARE(s.position(), uint64_t(2));
  }

  void samplerDeterminism() {
    TokenDataset data(iota(5000), 5000);
    const int64_t T = 32, B = 8;
    auto draw = [&](uint64_t seed) {
      WindowSampler s(data, Split::Train, T, seed);
      Ids out(size_t(T * B * 5));
      for (int i = 0; i < 5; ++i) s.next(out.data() + i * T * B, B);
      return out;
    };
    QCOMPARE(draw(1234), draw(1234));
    QVERIFY(draw(1234) != draw(1235));
    QVERIFY(draw(0) != draw(1));
  }

  void samplerResume() {
    TokenDataset data(iota(3000), 3000);
    const int64_t T = 16, B = 4;
    WindowSampler a(data, Split::Train, T, 7);
    std::vector<Ids> batches;
    uint64_t after4 = 0;
    for (int i = 0; i < 10; ++i) {
      Ids out(size_t(T * B));
      a.next(out.data(), B);
      batches.push_back(out);
      if (i == 3) after4 = a.position();
    }
    QCOMPARE(after4, uint64_t(4 * B));
    QCOMPARE(a.position(), uint64_t(10 * B));

    WindowSampler b(data, Split::Train, T, 7);
    b.restore(after4);
    for (int i = 4; i < 10; ++i) {
      Ids out(size_t(T * B));
      b.next(out.data(), B);
      QCOMPARE(out, batches[size_t(i)]);
    }
    QCOMPARE(b.position(), a.position());
    // Restoring backwards replays too.
    b.restore(0);
    Ids first(size_t(T * B));
    b.next(first.data(), B);
    QCOMPARE(first, batches[0]);
  }

  void samplerBounds() {
    // Token i has id i, so a window's content reveals where it came from.
    const int n = 1000;
    TokenDataset data(iota(n), n, DatasetOptions{0.2, {}, false});  // train 800, val 200
    const int64_t T = 50;
    for (Split split : {Split::Train, Split::Val}) {
      WindowSampler s(data, split, T, 99);
      const int64_t begin = data.splitBegin(split);
      const int64_t size = data.splitSize(split);
      std::set<int32_t> starts;
      Ids out(size_t(T * 64));
      for (int round = 0; round < 20; ++round) {
        s.next(out.data(), 64);
        for (int b = 0; b < 64; ++b) {
          const int32_t first = out[size_t(b * T)];
          QVERIFY(first >= begin && first + T <= begin + size);
          for (int t = 1; t < T; ++t) QCOMPARE(out[size_t(b * T + t)], first + t);
          starts.insert(first);
        }
      }
      // 1280 draws over 751 (train) or 151 (validation) starts cover many of them.
      QVERIFY2(int64_t(starts.size()) > std::min<int64_t>(s.startCount(), 300) / 2,
               qPrintable(QString::number(starts.size())));
    }
    // A window exactly the split's size has one start.
    WindowSampler exact(data, Split::Val, 200, 5);
    QCOMPARE(exact.startCount(), int64_t(1));
    Ids out(200);
    exact.next(out.data(), 1);
    QCOMPARE(out.front(), 800);
    QCOMPARE(out.back(), 999);
  }

  void consecutive() {
    using W = std::vector<std::pair<int64_t, int64_t>>;
    QCOMPARE(consecutiveWindows(10, 3), (W{{0, 3}, {3, 6}, {6, 9}}));
    QCOMPARE(consecutiveWindows(9, 3), (W{{0, 3}, {3, 6}, {6, 9}}));
    QCOMPARE(consecutiveWindows(3, 3), (W{{0, 3}}));
    QCOMPARE(consecutiveWindows(2, 3), W{});
    QCOMPARE(consecutiveWindows(0, 3), W{});
    QCOMPARE(consecutiveWindows(1000, 128).size(), size_t(7));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, consecutiveWindows(10, 0));
  }

  void errors() {
    QTemporaryDir dir;
    ByteTokenizer bytes;
    const std::string missing = dir.filePath("nope.txt").toStdString();
    VERIFY_ERROR(TokenDataset({missing}, bytes), missing, "no such file or directory");

    const QString emptyFile = dir.filePath("empty.txt");
    writeFile(emptyFile, "");
    VERIFY_ERROR(TokenDataset({emptyFile.toStdString()}, bytes), emptyFile.toStdString(),
                 "is empty");

    const QString emptyDir = dir.filePath("emptydir");
    QDir().mkpath(emptyDir);
    writeFile(emptyDir + "/data.json", "{}");
    VERIFY_ERROR(TokenDataset({emptyDir.toStdString()}, bytes), emptyDir.toStdString(),
                 "has no text", "*.txt");

    const QString blankDir = dir.filePath("blank");
    writeFile(blankDir + "/a.txt", "");
    writeFile(blankDir + "/b.md", "");
    VERIFY_ERROR(TokenDataset({blankDir.toStdString()}, bytes), blankDir.toStdString(),
                 "2 text file(s) are all empty");

    const QString latin1 = dir.filePath("latin1.txt");
    writeFile(latin1, "caf\xE9 au lait");  // é in Latin-1, not UTF-8
    VERIFY_ERROR(TokenDataset({latin1.toStdString()}, bytes), latin1.toStdString(),
                 "not valid UTF-8 at byte offset 3");

    VERIFY_ERROR(TokenDataset({}, bytes), "no data paths");
    const QString ok = dir.filePath("ok.txt");
    writeFile(ok, "0123456789");
    VERIFY_ERROR(TokenDataset({ok.toStdString()}, bytes, DatasetOptions{0.1, 256, false}),
                 "separator id 256", "size 256");

    // Too short for one window: 10 tokens, 1 held out (floor(10 * 0.1)),
    // train has 9; seqLen 16 needs 16 tokens in the split.
    TokenDataset tiny({ok.toStdString()}, bytes);
    QCOMPARE(tiny.splitSize(Split::Train), int64_t(9));
    VERIFY_ERROR(WindowSampler(tiny, Split::Train, 16, 0), ok.toStdString(),
                 "train split has 9 tokens", "(of 10, 1 held out", "window of 16 tokens");
    VERIFY_ERROR(WindowSampler(tiny, Split::Val, 2, 0), ok.toStdString(),
                 "validation split has 1 tokens", "(the last 10% of 10)", "window of 2 tokens");
    VERIFY_ERROR(WindowSampler(tiny, Split::Train, 1, 0), "sequence length 1");
    // Exactly seqLen tokens is enough: one window.
    WindowSampler nine(tiny, Split::Train, 9, 0);
    QCOMPARE(nine.startCount(), int64_t(1));
    tiny.requireWindow(Split::Train, 9);
  }

  void moveKeepsMapping() {
    // A moved dataset still reads its mapped file.
    QTemporaryDir dir;
    const QString path = dir.filePath("m.bin");
    writeFile(path, littleEndian({5, 6, 7, 8}, 2));
    SizedTokenizer tok(10);
    DatasetOptions opt;
    opt.valFraction = 0;
    TokenDataset a({path.toStdString()}, tok, opt);
    TokenDataset b(std::move(a));
    QCOMPARE(b.read(Split::Train, 0, 4), (Ids{5, 6, 7, 8}));
  }
};

QTEST_GUILESS_MAIN(TestDataset)
#include "tst_dataset.moc"
