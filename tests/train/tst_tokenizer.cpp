// Tokenizers: the byte tokenizer, the GPT-2 pre-tokenizer and Unicode classes,
// BPE on tiny vocabularies built here (ids worked out by hand in comments),
// and GPT-2 itself: ids pinned from independent sources (OpenAI's tiktoken
// tests, widely published examples) and a cross-check against the JavaScript
// encoder of the npm package gpt-3-encoder, run with node.
//
// The GPT-2 files come from packaging/fetch_gpt2_vocab.sh; they are looked
// for in $CKPT_GPT2_VOCAB_DIR, else in <source>/build/deps/gpt2. Without them
// the GPT-2 cases skip.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <chrono>
#include <fstream>

#include "ckpt/format/utf8.h"
#include "ckpt/tokenize/tokenizer.h"

using namespace ckpt;
using Ids = std::vector<int32_t>;

namespace {

std::string gpt2Dir() {
  const QByteArray env = qgetenv("CKPT_GPT2_VOCAB_DIR");
  if (!env.isEmpty()) return env.toStdString();
  return std::string(CKPT_SOURCE_DIR) + "/build/deps/gpt2";
}

bool haveGpt2Files() {
  const QString dir = QString::fromStdString(gpt2Dir());
  return QFile::exists(dir + "/encoder.json") && QFile::exists(dir + "/vocab.bpe");
}

#define REQUIRE_GPT2()                                                                        \
  do {                                                                                        \
    if (!haveGpt2Files())                                                                     \
      QSKIP(qPrintable("GPT-2 vocabulary not found in " + QString::fromStdString(gpt2Dir()) + \
                       ": run packaging/fetch_gpt2_vocab.sh " +                               \
                       QString::fromStdString(gpt2Dir()) + " (or set CKPT_GPT2_VOCAB_DIR)")); \
  } while (0)

const Tokenizer& gpt2() {
  static std::unique_ptr<Tokenizer> tok = loadTokenizer(gpt2Dir());
  return *tok;
}

void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
  QCOMPARE(f.write(bytes), bytes.size());
}

QByteArray readFile(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return {};
}

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (auto p : gpt2PreTokenize(text)) out.emplace_back(p);
  return out;
}

QString show(const Ids& ids) {
  QStringList parts;
  for (int32_t id : ids) parts << QString::number(id);
  return "[" + parts.join(", ") + "]";
}

#define COMPARE_IDS(actual, expected)                                             \
  do {                                                                            \
    const Ids a_ = (actual);                                                      \
    const Ids e_ = (expected);                                                    \
    QVERIFY2(a_ == e_, qPrintable("got " + show(a_) + ", expected " + show(e_))); \
  } while (0)

// The tiny BPE vocabulary of the hand-built tokenizers. Byte-level strings:
// "Ġ" (U+0120) is the space byte, "Ċ" (U+010A) the newline byte.
//   h 0, e 1, l 2, o 3, Ġ 4, w 5, r 6, d 7, he 8, ll 9, llo 10, hello 11,
//   Ġw 12, <unk> 13, <|eos|> 14 (added), ! 15, Ċ 16
// Merges by rank: 0 "h e", 1 "l l", 2 "ll o", 3 "he llo", 4 "Ġ w".
QJsonObject tinyVocab() {
  QJsonObject v;
  const char* tokens[] = {"h",         "e",     "l",       "o",  "\xC4\xA0", "w",
                          "r",         "d",     "he",      "ll", "llo",      "hello",
                          "\xC4\xA0w", "<unk>", "<|eos|>", "!",  "\xC4\x8A"};
  for (int i = 0; i < int(std::size(tokens)); ++i) v.insert(QString::fromUtf8(tokens[i]), i);
  return v;
}

const char* kTinyMerges[] = {"h e", "l l", "ll o", "he llo", "\xC4\xA0 w"};

QByteArray tinyTokenizerJson(bool pairMerges, const QString& modelType = "BPE",
                             const QStringList& extraMerges = {}) {
  QJsonArray merges;
  QStringList all;
  for (const char* m : kTinyMerges) all << QString::fromUtf8(m);
  all << extraMerges;
  for (const QString& m : all) {
    if (pairMerges) {
      const QStringList parts = m.split(' ');
      merges.append(QJsonArray{parts[0], parts[1]});
    } else {
      merges.append(m);
    }
  }
  QJsonObject model{{"type", modelType},
                    {"dropout", QJsonValue()},
                    {"unk_token", "<unk>"},
                    {"continuing_subword_prefix", QJsonValue()},
                    {"end_of_word_suffix", QJsonValue()},
                    {"fuse_unk", false},
                    {"vocab", tinyVocab()},
                    {"merges", merges}};
  QJsonObject eos{{"id", 14},        {"content", "<|eos|>"}, {"single_word", false},
                  {"lstrip", false}, {"rstrip", false},      {"normalized", false},
                  {"special", true}};
  QJsonObject root{{"version", "1.0"},
                   {"truncation", QJsonValue()},
                   {"padding", QJsonValue()},
                   {"added_tokens", QJsonArray{eos}},
                   {"normalizer", QJsonValue()},
                   {"pre_tokenizer", QJsonObject{{"type", "ByteLevel"},
                                                 {"add_prefix_space", false},
                                                 {"trim_offsets", true},
                                                 {"use_regex", true}}},
                   {"post_processor", QJsonValue()},
                   {"decoder", QJsonObject{{"type", "ByteLevel"}}},
                   {"model", model}};
  return QJsonDocument(root).toJson();
}

// The GPT-2 cross-check strings: English with punctuation, numbers,
// contractions, whitespace runs, newlines, accented Latin, emoji, CJK and
// other scripts, code, long pieces (over 64 bytes: the heap-based merge
// path), and seeded random mixtures. No ",," (the JS encoder keys merge
// pairs by "a,b" strings, ambiguous for tokens holding commas) and none of
// U+FEFF, U+0085, U+001C..U+001F (where JavaScript's \s differs from Python's).
QStringList crossCheckStrings() {
  QStringList s = {
      "Hello world",
      " Hello world",
      "hello world",
      "Hello, world! How are you doing today?",
      "The quick brown fox jumps over the lazy dog.",
      "I'm sure they'll say it's fine; we've done what we'd planned, haven't we?",
      "'s 't 're 've 'm 'll 'd 'S 'RE 'Ll don't",
      "Numbers: 3.14159, 42, 1,000,000 and 2024-05-17T12:34:56Z or 0x1F and 1e-10",
      "    indented code\n\tif (x) {\n\t\treturn y;\n\t}\n",
      "trailing spaces   \n\n\nmultiple newlines\r\nwindows line\r\n",
      "   leading and trailing   ",
      "a  b   c    d     e",
      "x \t y\t\t z \n w",
      "$$$ !!! ??? ... --- *** ### @@@ ((( ))) <<< >>>",
      "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
      "https://example.com/path/to/page?query=value&other=1#fragment",
      "def f(x):\n    return x ** 2  # square\n\nprint(f(3))\n",
      "Café naïve résumé façade jalapeño Ångström Œuvre ß straße Ærøskøbing",
      "ÀÉÎÕÜ àéîõü ñÑ çÇ ÿ Ð ð Þ þ × ÷ ¡¿ «guillemets» ª º µ ¹²³ ¼½¾",
      "Emoji: 😀👍🏽 🇫🇷 ❤️ family 👨‍👩‍👧‍👦 done 🎉🎉🎉",
      "中文分词测试，日本語のテキスト、한국어 텍스트입니다。",
      "Ελληνικά Русский текст العربية עברית हिन्दी ไทย ქართული",
      "Mixed123abc 456def ½ ² Ⅻ ٣٤ ५६ x²",
      "nbsp\u00a0here em\u2003space ideographic\u3000space line\u2028sep",
      "",
      " ",
      "\n",
      "\n\n\n",
      "  ",
      "a",
      "!",
      "<|endoftext",
      "0",
      "00000000000000000",
  };
  s << QString("Pneumonoultramicroscopicsilicovolcanoconiosis").repeated(3);
  s << QString("0123456789").repeated(10);
  s << QString("=").repeated(100);
  s << QString("-").repeated(80) + "\n" + QString("=").repeated(70) + "\n";
  s << QString(" ").repeated(100) + "x";
  s << QString("ab").repeated(60);
  s << QString::fromUtf8("漢字仮名交じり文中国語繁體字简体字").repeated(3);
  s << QString::fromUtf8("Ññ").repeated(40);
  s << QString::fromUtf8("👍").repeated(20);
  s << QString(
           "Supercalifragilisticexpialidocious antidisestablishmentarianism "
           "floccinaucinihilipilification honorificabilitudinitatibus ")
           .repeated(4);
  s << QString::fromUtf8(
      "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
      "the age of foolishness... In 1859, Dickens wrote: \"It is a far, far better thing that I "
      "do, than I have ever done.\"\n\nChapter 2 — The Mail. Price: £3.50 (€4,10) or $4.25!");

  // Seeded random strings over a mixed pool (no commas, see above).
  const QStringList pool = {"a",        "b",  "e",      "t",   "Z",   "Q",    "é",    "ñ",  "ß",
                            "中",       "語", "한",     "ж",   "Ω",   "0",    "7",    "٣",  "½",
                            " ",        " ",  " ",      "  ",  "\n",  "\t",   "'",    "'s", "'ll",
                            "!",        "?",  ".",      "-",   "_",   "(",    ")",    "\"", "😀",
                            "👍🏽", "$",  "\u00a0", "the", "ing", " the", "tion", "123"};
  uint64_t state = 0x2545F4914F6CDD1Dull;
  auto nextRandom = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(state >> 33);
  };
  for (int i = 0; i < 100; ++i) {
    const int len = 1 + int(nextRandom() % 40);
    QString str;
    for (int k = 0; k < len; ++k) str += pool[int(nextRandom() % uint32_t(pool.size()))];
    s << str;
  }
  return s;
}

}  // namespace

class TestTokenizer : public QObject {
  Q_OBJECT

 private slots:
  // -------------------------------------------------------------------- bytes
  void byteTokenizer() {
    auto tok = loadTokenizer("bytes");
    QCOMPARE(tok->name(), std::string("bytes"));
    QCOMPARE(tok->vocabSize(), int64_t(256));
    const std::string withNul("Hi \xC3\xA9\xE4\xB8\xAD!\n\x00\xFF", 12);  // "Hi é中!\n" NUL 0xFF
    const Ids ids = tok->encode(withNul);
    QCOMPARE(ids.size(), size_t(12));
    for (size_t i = 0; i < ids.size(); ++i)
      QCOMPARE(ids[i], int32_t(static_cast<unsigned char>(withNul[i])));
    COMPARE_IDS(tok->encode("Hi"), (Ids{72, 105}));
    QCOMPARE(tok->decode(ids), withNul);
    QVERIFY(tok->encode("").empty());
    QVERIFY(!tok->specialTokenId("<|endoftext|>"));
    const std::string err = errorOf([&] { (void)tok->decode({65, 256}); });
    QVERIFY2(err.find("256") != std::string::npos && err.find("position 1") != std::string::npos,
             err.c_str());
  }

  // ---------------------------------------------------------- Unicode classes
  void unicodeClassesLatin1() {
    // Exact over U+0000..U+00FF: every code point's class by hand.
    for (char32_t c = 0; c < 256; ++c) {
      const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == 0xAA ||
                          c == 0xB5 || c == 0xBA || (c >= 0xC0 && c <= 0xD6) ||
                          (c >= 0xD8 && c <= 0xF6) || (c >= 0xF8 && c <= 0xFF);
      const bool number =
          (c >= '0' && c <= '9') || c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0xBC && c <= 0xBE);
      const bool space = (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0;
      QVERIFY2(isUnicodeLetter(c) == letter, qPrintable(QString::number(c, 16)));
      QVERIFY2(isUnicodeNumber(c) == number, qPrintable(QString::number(c, 16)));
      QVERIFY2(isUnicodeWhitespace(c) == space, qPrintable(QString::number(c, 16)));
    }
  }

  void unicodeClassesOtherScripts() {
    for (char32_t c : {U'α', U'Ω', U'Ж', U'я', U'中', U'語', U'한', U'ع', U'א', U'क', U'ก', U'ა',
                       U'ぁ', U'カ', U'ǅ', U'ʰ', U'𝐀', U'𠀀'})
      QVERIFY2(isUnicodeLetter(c), qPrintable(QString::number(c, 16)));
    for (char32_t c : {U'٣', U'५', U'Ⅻ', U'①', U'𝟘', U'〇', U'²'})
      QVERIFY2(isUnicodeNumber(c) && !isUnicodeLetter(c), qPrintable(QString::number(c, 16)));
    // Combining marks, symbols, emoji, joiners: neither.
    for (char32_t c : {char32_t(0x0301), char32_t(0x093F), U'😀', U'❤', U'€', U'—', U'。',
                       char32_t(0x200D), char32_t(0xFE0F), char32_t(0xFEFF), char32_t(0x200B)})
      QVERIFY2(!isUnicodeLetter(c) && !isUnicodeNumber(c) && !isUnicodeWhitespace(c),
               qPrintable(QString::number(c, 16)));
    for (char32_t c : {char32_t(0x1680), char32_t(0x2000), char32_t(0x200A), char32_t(0x2028),
                       char32_t(0x2029), char32_t(0x202F), char32_t(0x205F), char32_t(0x3000)})
      QVERIFY2(isUnicodeWhitespace(c), qPrintable(QString::number(c, 16)));
    QVERIFY(!isUnicodeLetter(0xD800) && !isUnicodeLetter(0x110000));
  }

  // The pre-tokenizer looks classes up in its own table (a two-stage table
  // made from the same ranges): for every code point, the piece it joins
  // says which class the pre-tokenizer gave it, and that must be the class
  // the predicates above give (\s before \p{L} before \p{N}).
  void preTokenizerClassOfEveryCodePoint() {
    const char* probes[4] = {"a", "1", "\t", "!"};  // a letter, a number, a space, other
    size_t checked = 0;
    for (char32_t c = 0; c <= 0x10FFFF; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      const int want = isUnicodeWhitespace(c) ? 2
                       : isUnicodeLetter(c)   ? 0
                       : isUnicodeNumber(c)   ? 1
                                              : 3;
      std::string ch;
      utf8::append(ch, c);
      for (int k = 0; k < 4; ++k) {
        // "\t" followed by a space is one whitespace run; any other probe
        // joins c only when c has the probe's class.
        const size_t n = gpt2PreTokenize(probes[k] + ch).size();
        if ((n == 1) != (k == want)) {
          QFAIL(qPrintable(QStringLiteral("U+%1 after '%2': %3 piece(s)")
                               .arg(uint(c), 4, 16, QLatin1Char('0'))
                               .arg(probes[k])
                               .arg(n)));
        }
      }
      ++checked;
    }
    QCOMPARE(checked, size_t(0x110000 - 0x800));
  }

  // ------------------------------------------------------------ pre-tokenizer
  void preTokenizer_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QStringList>("expected");
    // What the pattern's findall gives (worked through the alternatives).
    QTest::newRow("words") << QByteArray("Hello world") << QStringList{"Hello", " world"};
    QTest::newRow("contractions") << QByteArray("I'm here, aren't you?")
                                  << QStringList{"I",     "'m", " here", ",",
                                                 " aren", "'t", " you",  "?"};
    QTest::newRow("contraction first")
        << QByteArray("'sup 'LL") << QStringList{"'s", "up", " '", "LL"};
    QTest::newRow("quotes") << QByteArray("''") << QStringList{"''"};
    QTest::newRow("space runs") << QByteArray("a   b") << QStringList{"a", "  ", " b"};
    QTest::newRow("newlines") << QByteArray("x\n\ny") << QStringList{"x", "\n", "\n", "y"};
    QTest::newRow("tab then space") << QByteArray("x \t y") << QStringList{"x", " \t", " y"};
    QTest::newRow("trailing") << QByteArray("end  ") << QStringList{"end", "  "};
    QTest::newRow("leading") << QByteArray("  hi") << QStringList{" ", " hi"};
    QTest::newRow("numbers") << QByteArray("123abc 456 7.5")
                             << QStringList{"123", "abc", " 456", " 7", ".", "5"};
    QTest::newRow("punctuation") << QByteArray("$$$ !!") << QStringList{"$$$", " !!"};
    QTest::newRow("punct then letters") << QByteArray("!'s") << QStringList{"!'", "s"};
    QTest::newRow("accents") << QByteArray("caf\xC3\xA9 na\xC3\xAFve")
                             << QStringList{"café", " naïve"};
    QTest::newRow("nbsp is space, not ' '") << QByteArray(
                                                   "a\xC2\xA0"
                                                   "b")
                                            << QStringList{"a", "\u00a0", "b"};
    QTest::newRow("CJK and emoji")
        << QByteArray("\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!") << QStringList{"中文", " 😀!"};
    QTest::newRow("single space") << QByteArray(" ") << QStringList{" "};
    QTest::newRow("empty") << QByteArray("") << QStringList{};
  }

  void preTokenizer() {
    QFETCH(QByteArray, text);
    QFETCH(QStringList, expected);
    QStringList got;
    for (const std::string& p : pieces(text.toStdString())) got << QString::fromStdString(p);
    QCOMPARE(got, expected);
  }

  void preTokenizerInvalidUtf8() {
    // Invalid bytes are single "other" symbols; pieces always cover the input.
    QCOMPARE(pieces("\xFF\xFE"), (std::vector<std::string>{"\xFF\xFE"}));
    QCOMPARE(pieces("a\xFF"
                    "b"),
             (std::vector<std::string>{"a", "\xFF", "b"}));
    QCOMPARE(pieces(" \xC3"), (std::vector<std::string>{" \xC3"}));
    const std::string mixed = "ok \xE4\xB8 broken \xED\xA0\x80 surrogate \xC0\xAF overlong";
    std::string joined;
    for (const std::string& p : pieces(mixed)) joined += p;
    QCOMPARE(joined, mixed);
  }

  // ------------------------------------------------------- tiny BPE vocabularies
  void tokenizerJson_data() {
    QTest::addColumn<bool>("pairMerges");
    QTest::newRow("merges as \"a b\"") << false;
    QTest::newRow("merges as [a, b]") << true;
  }

  void tokenizerJson() {
    QFETCH(bool, pairMerges);
    QTemporaryDir dir;
    const QString path = dir.filePath("tokenizer.json");
    writeFile(path, tinyTokenizerJson(pairMerges));
    auto tok = loadTokenizer(path.toStdString());
    QCOMPARE(tok->vocabSize(), int64_t(17));
    QCOMPARE(tok->name(), "bpe:" + path.toStdString());
    // "hello": h e l l o -> "h e"(0) -> he l l o -> "l l"(1) -> he ll o
    //   -> "ll o"(2) -> he llo -> "he llo"(3) -> hello = 11.
    // " world": Ġ w o r l d -> "Ġ w"(4) -> Ġw o r l d = 12 3 6 2 7.
    COMPARE_IDS(tok->encode("hello world"), (Ids{11, 12, 3, 6, 2, 7}));
    // "hell": he l l -> he ll; no merge "he ll": 8 9.
    COMPARE_IDS(tok->encode("hell"), (Ids{8, 9}));
    // "lll": "l l" merges left to right: ll l = 9 2.
    COMPARE_IDS(tok->encode("lll"), (Ids{9, 2}));
    COMPARE_IDS(tok->encode("llo"), (Ids{10}));
    // Added token cut out of the text: hello <|eos|> hello.
    COMPARE_IDS(tok->encode("hello<|eos|>hello"), (Ids{11, 14, 11}));
    COMPARE_IDS(tok->encode("<|eos|><|eos|>"), (Ids{14, 14}));
    // "hello!\n": pieces "hello", "!", "\n" -> 11 15 16.
    COMPARE_IDS(tok->encode("hello!\n"), (Ids{11, 15, 16}));
    // "hez": z has no token -> unk_token <unk> = 13; h e -> he = 8.
    COMPARE_IDS(tok->encode("hez"), (Ids{8, 13}));
    QCOMPARE(tok->decode({11, 12, 3, 6, 2, 7}), std::string("hello world"));
    QCOMPARE(tok->decode({11, 14, 16}), std::string("hello<|eos|>\n"));
    QCOMPARE(tok->specialTokenId("<|eos|>"), std::optional<int32_t>(14));
    const std::string err = errorOf([&] { (void)tok->decode({3, 17}); });
    QVERIFY2(err.find(path.toStdString()) != std::string::npos &&
                 err.find("id 17") != std::string::npos && err.find("size 17") != std::string::npos,
             err.c_str());
  }

  void vocabJsonAndMergesTxt() {
    QTemporaryDir dir;
    // The tiny vocabulary without <unk>, <|eos|>: ids 0..12 as above, ! 13,
    // Ċ 14, and <|endoftext|> 15 (recognised in text like GPT-2's).
    QJsonObject v;
    const char* tokens[] = {
        "h",  "e",  "l",   "o",     "\xC4\xA0",  "w", "r",        "d",
        "he", "ll", "llo", "hello", "\xC4\xA0w", "!", "\xC4\x8A", "<|endoftext|>"};
    for (int i = 0; i < int(std::size(tokens)); ++i) v.insert(QString::fromUtf8(tokens[i]), i);
    writeFile(dir.filePath("vocab.json"), QJsonDocument(v).toJson());
    QByteArray merges = "#version: 0.2\n";
    for (const char* m : kTinyMerges) merges += QByteArray(m) + "\n";
    writeFile(dir.filePath("merges.txt"), merges);

    auto tok = loadTokenizer(dir.path().toStdString());
    QCOMPARE(tok->vocabSize(), int64_t(16));
    QCOMPARE(tok->name(), "bpe:" + dir.path().toStdString());
    COMPARE_IDS(tok->encode("hello world<|endoftext|>"), (Ids{11, 12, 3, 6, 2, 7, 15}));
    // "hello  hello": "hello", " " (space run before a word keeps its last
    // space for the word), " hello" -> Ġ h e l l o: Ġ h has no merge,
    // h e l l o -> hello: 11, 4, 4 11.
    COMPARE_IDS(tok->encode("hello  hello"), (Ids{11, 4, 4, 11}));
    QCOMPARE(tok->decode({11, 4, 4, 11, 15}), std::string("hello  hello<|endoftext|>"));
    QCOMPARE(tok->specialTokenId("<|endoftext|>"), std::optional<int32_t>(15));
    // name() loads the same tokenizer again.
    COMPARE_IDS(loadTokenizer(tok->name())->encode("hello world"), (Ids{11, 12, 3, 6, 2, 7}));
    // No unk_token: a byte without a token is an error naming the byte.
    const std::string err = errorOf([&] { (void)tok->encode("hez"); });
    QVERIFY2(err.find("0x7A") != std::string::npos &&
                 err.find(dir.path().toStdString()) != std::string::npos,
             err.c_str());

    // OpenAI's names for the same two files.
    QTemporaryDir openai;
    QVERIFY(QFile::copy(dir.filePath("vocab.json"), openai.filePath("encoder.json")));
    QVERIFY(QFile::copy(dir.filePath("merges.txt"), openai.filePath("vocab.bpe")));
    COMPARE_IDS(loadTokenizer(openai.path().toStdString())->encode("hello world"),
                (Ids{11, 12, 3, 6, 2, 7}));
  }

  void longWordsAgree() {
    // Pieces over 64 bytes take the heap-based merge loop; it must agree with
    // the short loop on every prefix of a long word and on repeats.
    QTemporaryDir dir;
    writeFile(dir.filePath("tokenizer.json"), tinyTokenizerJson(false));
    auto tok = loadTokenizer(dir.filePath("tokenizer.json").toStdString());
    const std::string word = "hellollohehellolllolhello";
    std::string longWord;
    Ids expected;
    for (int i = 0; i < 8; ++i) {  // 200 letters, one piece
      longWord += word;
      const Ids part = tok->encode(word);  // 25 letters: short loop
      expected.insert(expected.end(), part.begin(), part.end());
    }
    // Each copy of `word` ends in "hello" and starts with "hello", so no merge
    // crosses the seams: the long piece's ids are the short ones repeated.
    COMPARE_IDS(tok->encode(longWord), expected);
    COMPARE_IDS(tok->encode(std::string(101, 'l')), [] {
      Ids ids(50, 9);
      ids.push_back(2);
      return ids;
    }());
  }

  void bpeErrors() {
    QTemporaryDir dir;
    const QString path = dir.filePath("tokenizer.json");
    writeFile(path, tinyTokenizerJson(false, "WordPiece"));
    std::string err = errorOf([&] { loadTokenizer(path.toStdString()); });
    QVERIFY2(err.find(path.toStdString()) != std::string::npos &&
                 err.find("WordPiece") != std::string::npos,
             err.c_str());

    writeFile(path, tinyTokenizerJson(false, "BPE", {"w o"}));  // "wo" is not in the vocabulary
    err = errorOf([&] { loadTokenizer(path.toStdString()); });
    QVERIFY2(err.find(path.toStdString()) != std::string::npos &&
                 err.find("merge 5") != std::string::npos && err.find("w o") != std::string::npos,
             err.c_str());

    writeFile(path, "{ not json");
    err = errorOf([&] { loadTokenizer(path.toStdString()); });
    QVERIFY2(err.find("not valid JSON") != std::string::npos, err.c_str());

    writeFile(dir.filePath("vocab.json"), QJsonDocument(tinyVocab()).toJson());
    writeFile(dir.filePath("merges.txt"), "#version: 0.2\nh e\nl l\nbroken\n");
    err = errorOf([&] {
      BpeTokenizer::fromVocabAndMerges(dir.filePath("vocab.json").toStdString(),
                                       dir.filePath("merges.txt").toStdString());
    });
    QVERIFY2(err.find("merges.txt line 4") != std::string::npos, err.c_str());

    err = errorOf([&] { loadTokenizer(dir.filePath("missing").toStdString()); });
    QVERIFY2(
        err.find("missing") != std::string::npos && err.find("no such file") != std::string::npos,
        err.c_str());
    QTemporaryDir empty;
    err = errorOf([&] { loadTokenizer(empty.path().toStdString()); });
    QVERIFY2(err.find("holds no tokenizer files") != std::string::npos, err.c_str());
  }

  // -------------------------------------------------------------------- GPT-2
  void gpt2Pinned_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QList<int>>("ids");
    // The brief's anchors (widely published GPT-2 ids).
    QTest::newRow("Hello world") << "Hello world" << QList<int>{15496, 995};
    QTest::newRow(" Hello world") << " Hello world" << QList<int>{18435, 995};
    QTest::newRow("<|endoftext|>") << "<|endoftext|>" << QList<int>{50256};
    // openai/tiktoken tests/test_encoding.py (test_simple, test_simple_repeated),
    // encoding "gpt2".
    QTest::newRow("hello world") << "hello world" << QList<int>{31373, 995};
    QTest::newRow("hello <|endoftext|>") << "hello <|endoftext|>" << QList<int>{31373, 220, 50256};
    const QList<QList<int>> zeros = {
        {15},          {405},         {830},         {2388},      {20483},           {10535},
        {24598},       {8269},        {10535, 830},  {8269, 405}, {8269, 830},       {8269, 2388},
        {8269, 20483}, {8269, 10535}, {8269, 24598}, {25645},     {8269, 10535, 830}};
    for (int n = 1; n <= zeros.size(); ++n)
      QTest::newRow(qPrintable(QString("%1 zeros").arg(n)))
          << QString("0").repeated(n) << zeros[n - 1];
    // "Hello, world!" -> [15496, 11, 995, 0]: the GPT-2 example printed in many
    // tiktoken tutorials (and "!" is id 0, the first byte-level token).
    QTest::newRow("Hello, world!") << "Hello, world!" << QList<int>{15496, 11, 995, 0};
  }

  void gpt2Pinned() {
    REQUIRE_GPT2();
    QFETCH(QString, text);
    QFETCH(QList<int>, ids);
    const std::string utf8 = text.toStdString();
    const Ids expected(ids.begin(), ids.end());
    COMPARE_IDS(gpt2().encode(utf8), expected);
    QCOMPARE(gpt2().decode(expected), utf8);
  }

  void gpt2Vocabulary() {
    REQUIRE_GPT2();
    QCOMPARE(gpt2().vocabSize(), int64_t(50257));
    QCOMPARE(gpt2().specialTokenId("<|endoftext|>"), std::optional<int32_t>(50256));
    auto* bpe = dynamic_cast<const BpeTokenizer*>(&gpt2());
    QVERIFY(bpe);
    QCOMPARE(bpe->mergeCount(), int64_t(50000));
    QCOMPARE(bpe->tokenId("\xC4\xA0the"), std::optional<int32_t>(262));  // "Ġthe"
    QCOMPARE(gpt2().name(), "bpe:" + gpt2Dir());
  }

  void gpt2AllFormatsAgree() {
    // The same vocabulary as vocab.json + merges.txt and as a tokenizer.json
    // built here gives the same ids as encoder.json + vocab.bpe.
    REQUIRE_GPT2();
    const QString src = QString::fromStdString(gpt2Dir());
    QTemporaryDir hf;
    QVERIFY(QFile::copy(src + "/encoder.json", hf.filePath("vocab.json")));
    QVERIFY(QFile::copy(src + "/vocab.bpe", hf.filePath("merges.txt")));
    auto fromHf = loadTokenizer(hf.path().toStdString());

    QTemporaryDir tj;
    const QJsonObject vocab = QJsonDocument::fromJson(readFile(src + "/encoder.json")).object();
    QCOMPARE(vocab.size(), 50257);
    QJsonArray merges;
    const QList<QByteArray> lines = readFile(src + "/vocab.bpe").split('\n');
    for (int i = 1; i < lines.size(); ++i)
      if (!lines[i].isEmpty()) merges.append(QString::fromUtf8(lines[i]));
    QCOMPARE(merges.size(), 50000);
    QJsonObject eot{
        {"id", 50256},     {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false},
        {"rstrip", false}, {"normalized", true},         {"special", true}};
    QJsonObject root{{"version", "1.0"},
                     {"added_tokens", QJsonArray{eot}},
                     {"normalizer", QJsonValue()},
                     {"pre_tokenizer", QJsonObject{{"type", "ByteLevel"},
                                                   {"add_prefix_space", false},
                                                   {"trim_offsets", true},
                                                   {"use_regex", true}}},
                     {"model", QJsonObject{{"type", "BPE"},
                                           {"dropout", QJsonValue()},
                                           {"unk_token", QJsonValue()},
                                           {"continuing_subword_prefix", ""},
                                           {"end_of_word_suffix", ""},
                                           {"fuse_unk", false},
                                           {"vocab", vocab},
                                           {"merges", merges}}}};
    writeFile(tj.filePath("tokenizer.json"), QJsonDocument(root).toJson(QJsonDocument::Compact));
    auto fromJson = loadTokenizer(tj.filePath("tokenizer.json").toStdString());

    QStringList texts = crossCheckStrings();
    texts << "a<|endoftext|>b <|endoftext|> <|endoftext|><|endoftext|>";
    for (const QString& t : texts) {
      const std::string utf8 = t.toStdString();
      const Ids ours = gpt2().encode(utf8);
      COMPARE_IDS(fromHf->encode(utf8), ours);
      COMPARE_IDS(fromJson->encode(utf8), ours);
    }
  }

  void gpt2RoundTrip() {
    REQUIRE_GPT2();
    for (const QString& t : crossCheckStrings()) {
      const std::string utf8 = t.toStdString();
      QCOMPARE(gpt2().decode(gpt2().encode(utf8)), utf8);
    }
    // Not UTF-8 at all: byte-level BPE still round-trips the bytes.
    const std::string bytes("\xFF\xFE\x00\x80 abc \xC3", 11);
    QCOMPARE(gpt2().decode(gpt2().encode(bytes)), bytes);
  }

  void gpt2MatchesNodeEncoder() {
    REQUIRE_GPT2();
    const QString node = QStandardPaths::findExecutable("node");
    const QString encoderJs = QString::fromStdString(gpt2Dir()) + "/Encoder.js";
    if (node.isEmpty()) QSKIP("node is not installed: cannot run the JavaScript GPT-2 encoder");
    if (!QFile::exists(encoderJs))
      QSKIP(qPrintable(encoderJs + " is missing: rerun packaging/fetch_gpt2_vocab.sh " +
                       QString::fromStdString(gpt2Dir())));

    const QStringList texts = crossCheckStrings();
    QJsonArray input;
    for (const QString& t : texts) input.append(t);

    const char* script =
        "const enc = require(process.argv[1]);"
        "let data = '';"
        "process.stdin.setEncoding('utf8');"
        "process.stdin.on('data', c => data += c);"
        "process.stdin.on('end', () => {"
        "  const texts = JSON.parse(data);"
        "  process.stdout.write(JSON.stringify(texts.map(t => enc.encode(t))));"
        "});";
    QProcess proc;
    proc.start(node, {"-e", script, encoderJs});
    QVERIFY2(proc.waitForStarted(10000), qPrintable(proc.errorString()));
    proc.write(QJsonDocument(input).toJson(QJsonDocument::Compact));
    proc.closeWriteChannel();
    QVERIFY2(proc.waitForFinished(120000), "node did not finish");
    QVERIFY2(proc.exitStatus() == QProcess::NormalExit && proc.exitCode() == 0,
             proc.readAllStandardError().constData());
    QJsonParseError perr;
    const QJsonDocument out = QJsonDocument::fromJson(proc.readAllStandardOutput(), &perr);
    QVERIFY2(perr.error == QJsonParseError::NoError, qPrintable(perr.errorString()));
    const QJsonArray results = out.array();
    QCOMPARE(results.size(), texts.size());

    int64_t tokens = 0;
    for (int i = 0; i < texts.size(); ++i) {
      Ids theirs;
      for (const QJsonValue& v : results[i].toArray()) theirs.push_back(v.toInt());
      const Ids ours = gpt2().encode(texts[i].toStdString());
      QVERIFY2(ours == theirs, qPrintable(QString("string %1 \"%2\": ours %3, node %4")
                                              .arg(i)
                                              .arg(texts[i].left(80))
                                              .arg(show(ours), show(theirs))));
      tokens += int64_t(ours.size());
    }
    qInfo("node cross-check: %d strings, %lld tokens, all identical", int(texts.size()),
          static_cast<long long>(tokens));
  }

  void gpt2Throughput() {
    // Not a benchmark gate: a cold-cache pass over ~1 MB must finish quickly.
    REQUIRE_GPT2();
    auto tok = loadTokenizer(gpt2Dir());  // fresh piece cache
    std::string text;
    const QStringList texts = crossCheckStrings();
    while (text.size() < (1u << 20))
      for (const QString& t : texts) text += t.toStdString() + "\n";
    const auto t0 = std::chrono::steady_clock::now();
    const Ids ids = tok->encode(text);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    qInfo("GPT-2 encode: %zu bytes -> %zu tokens in %.3f s", text.size(), ids.size(), s);
    QVERIFY(s < 30.0);
    QCOMPARE(tok->decode(ids), text);
  }
};

QTEST_GUILESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
