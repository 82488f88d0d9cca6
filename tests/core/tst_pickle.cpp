// The pickle interpreter opcode by opcode, on hand-assembled pickles whose
// values are worked out by hand (Python's pickletools documents each opcode).
#include <QtTest>

#include <cmath>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/pickle_reader.h"

using namespace ckpt;
using K = Value::Kind;

namespace {

struct Parsed {
  ValueArena arena;
  const Value* root = nullptr;
};

std::unique_ptr<Parsed> parse(const std::string& bytes, PickleLimits limits = {}) {
  auto p = std::make_unique<Parsed>();
  PickleReader reader(p->arena, "test.pkl", limits);
  p->root = reader.parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).root;
  return p;
}

std::string errorOf(const std::string& bytes, PickleLimits limits = {}) {
  try {
    parse(bytes, limits);
  } catch (const FormatError& e) {
    return e.what();
  }
  return {};
}

std::string s(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out += char(b);
  return out;
}

}  // namespace

class TestPickle : public QObject {
  Q_OBJECT

 private slots:
  void long1_data() {
    QTest::addColumn<QString>("bytes");  // hex of LONG1's payload
    QTest::addColumn<QString>("expected");
    QTest::newRow("zero-length") << ""
                                 << "0";
    QTest::newRow("-1") << "ff"
                        << "-1";
    QTest::newRow("255") << "ff00"
                         << "255";
    QTest::newRow("2^31") << "0000008000"
                          << "2147483648";
    QTest::newRow("int64 max") << "ffffffffffffff7f"
                               << "9223372036854775807";
    QTest::newRow("int64 min") << "0000000000000080"
                               << "-9223372036854775808";
    QTest::newRow("2^63") << "000000000000008000"
                          << "9223372036854775808";
    QTest::newRow("2^64") << "000000000000000001"
                          << "18446744073709551616";
    QTest::newRow("-2^64") << "0000000000000000ff"
                           << "-18446744073709551616";
    QTest::newRow("2^70") << "00000000000000004000"
                          << "1180591620717411303424";
    QTest::newRow("-2^63-1") << "ffffffffffffff7fff"
                             << "-9223372036854775809";
    QTest::newRow("sign-extended -5 in 9 bytes") << "fbffffffffffffffff"
                                                 << "-5";
  }
  void long1() {
    QFETCH(QString, bytes);
    QFETCH(QString, expected);
    const QByteArray raw = QByteArray::fromHex(bytes.toLatin1());
    const std::string pkl = s({0x80, 2, 0x8a, int(raw.size())}) + raw.toStdString() + ".";
    const auto p = parse(pkl);
    const std::string got =
        p->root->kind == K::Int ? std::to_string(p->root->integer) : p->root->str();
    QCOMPARE(QString::fromStdString(got), expected);
    // Values that fit in int64 are Int, the rest exact BigInt digits.
    const bool fits = expected.toLongLong() != 0 || expected == "0";
    QCOMPARE(p->root->kind == K::Int, fits);
  }

  void scalars() {
    // (BININT2 0xffff, BININT -1, BININT1 7, BINFLOAT 1.5, NEWTRUE, NONE)
    const auto p =
        parse(s({0x80, 2,    '(',  'M', 0xff, 0xff, 'J', 0xff, 0xff, 0xff, 0xff, 'K', 7,
                 'G',  0x3f, 0xf8, 0,   0,    0,    0,   0,    0,    0x88, 'N',  't', '.'}));
    QCOMPARE(p->root->kind, K::Tuple);
    QCOMPARE(p->root->items.size(), size_t(6));
    QCOMPARE(p->root->items[0]->integer, int64_t(65535));
    QCOMPARE(p->root->items[1]->integer, int64_t(-1));
    QCOMPARE(p->root->items[2]->integer, int64_t(7));
    QCOMPARE(p->root->items[3]->real, 1.5);
    QCOMPARE(p->root->items[4]->boolean, true);
    QCOMPARE(p->root->items[5]->kind, K::None);
  }

  void protocol0Text() {
    // (I42, I01 (True), L...L big, F0.25, S'a\n', V\u00e9) as a list.
    const std::string pkl =
        "(lp0\nI42\naI01\naL123456789012345678901234567890L\naF0.25\naS'a\\n'\naV\\u00e9\na.";
    const auto p = parse(pkl);
    QCOMPARE(p->root->kind, K::List);
    QCOMPARE(p->root->items.size(), size_t(6));
    QCOMPARE(p->root->items[0]->integer, int64_t(42));
    QCOMPARE(p->root->items[1]->kind, K::Bool);
    QCOMPARE(p->root->items[2]->str(), std::string("123456789012345678901234567890"));
    QCOMPARE(p->root->items[3]->real, 0.25);
    QCOMPARE(p->root->items[4]->str(), std::string("a\n"));
    QCOMPARE(p->root->items[5]->str(), std::string("\xc3\xa9"));
  }

  void orderedDictMetadataIsAnAttribute() {
    // OrderedDict() with one item, then BUILD {'_metadata': {}}.
    static const char raw[] =
        "\x80\x02"
        "ccollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00"
        "aK\x01s}q\x02X\t\x00\x00\x00_metadata}sb.";
    const auto p = parse(std::string(raw, sizeof raw - 1));
    QCOMPARE(p->root->kind, K::Dict);
    QCOMPARE(p->root->entries.size(), size_t(1));
    QVERIFY(p->root->get("a"));
    QVERIFY(!p->root->get("_metadata"));
    QVERIFY(p->root->state && p->root->state->get("_metadata"));
  }

  void codecsEncodeIsBytes() {
    // _codecs.encode('\xff\x00', 'latin1') -> b'\xff\x00' (the str is UTF-8 c3 bf 00).
    const std::string pkl = s({0x80, 2, 'c'}) + "_codecs\nencode\n" +
                            s({'X', 3, 0, 0, 0, 0xc3, 0xbf, 0}) + s({'X', 6, 0, 0, 0}) + "latin1" +
                            s({0x86, 'R', '.'});
    const auto p = parse(pkl);
    QCOMPARE(p->root->kind, K::Bytes);
    QCOMPARE(p->root->str(), std::string("\xff\x00", 2));
  }

  void unknownGlobalIsOpaqueAndNotRun() {
    // posix.system('touch /tmp/x') -> an Object that records the call.
    const std::string pkl = s({0x80, 2, 'c'}) + "posix\nsystem\n" + s({'X', 12, 0, 0, 0}) +
                            "touch /tmp/x" + s({0x85, 'R', '.'});
    const auto p = parse(pkl);
    QCOMPARE(p->root->kind, K::Object);
    QCOMPARE(p->root->str(), std::string("posix.system"));
    QCOMPARE(p->root->items.size(), size_t(1));
    QCOMPARE(p->root->items[0]->str(), std::string("touch /tmp/x"));
    const auto j = valueToJson(p->root);
    QCOMPARE(j["$object"].get<std::string>(), std::string("posix.system"));
  }

  void memoSharingAndCycles() {
    // L = []; L.append(L); (L, L)
    const auto p = parse(s({0x80, 2, ']', 'q', 0, 'h', 0, 'a', 'h', 0, 0x86, '.'}));
    QCOMPARE(p->root->kind, K::Tuple);
    QCOMPARE(p->root->items[0], p->root->items[1]);            // one node, shared
    QCOMPARE(p->root->items[0]->items[0], p->root->items[0]);  // the cycle
    const auto j = valueToJson(p->root);
    QCOMPARE(j["$tuple"][0][0]["$cycle"].get<bool>(), true);
    QVERIFY(shortRepr(p->root).find("<cycle>") != std::string::npos);
    int tensors = 0;
    walkTensors(p->root, [&](const Value*, const TensorPath&) { ++tensors; });
    QCOMPARE(tensors, 0);
  }

  void sharedDagDoesNotExplode() {
    // L0 = []; L(n) = [L(n-1), L(n-1)] for 64 levels: 2^64 leaves if expanded.
    std::string pkl = s({0x80, 2, ']', 'q', 0});
    for (int i = 1; i <= 64; ++i) pkl += s({'(', 'h', i - 1, 'h', i - 1, 'l', 'q', i});
    pkl += ".";
    const auto p = parse(pkl);
    const auto j = valueToJson(p->root, 100000);
    walkTensors(p->root, [](const Value*, const TensorPath&) {});
    (void)shortRepr(p->root, 200);
    // Bounded by the budget: 100,000 values, each a few bytes of text.
    std::string text;
    appendValueJson(text, p->root, 100000);
    QVERIFY(text.size() < 100000 * 24);
    QVERIFY(text.find("$truncated") != std::string::npos);
    QCOMPARE(dumpJson(j), text);
  }

  void repeatedKeysAsPythonsDict() {
    // {"a": 1, "b": 2, "a": 3} as SETITEMS writes it: Python's dict keeps
    // "a" first with the value 3, and has two keys.
    const std::string pkl = s({0x80, 2, '}', '(', 'X', 1,   0, 0, 0, 'a', 'K', 1,   'X', 1,   0,
                               0,    0, 'b', 'K', 2,   'X', 1, 0, 0, 0,   'a', 'K', 3,   'u', '.'});
    const auto p = parse(pkl);
    QCOMPARE(p->root->entries.size(), size_t(3));
    const std::string want = R"({"a":3,"b":2})";
    std::string text;
    appendValueJson(text, p->root);
    QCOMPARE(text, want);
    QCOMPARE(dumpJson(valueToJson(p->root)), want);
  }

  void popMarkDropsWhatIsAboveTheMark() {
    // POP_MARK discards the topmost MARK and every item above it
    // (pickletools: "Pop all the stack objects at and above the topmost
    // markobject"). Python's pickle.loads gives, for these bytes:
    //   7 MARK 1 2 POP_MARK STOP                 -> 7
    //   [] MARK 1 MARK 2 POP_MARK 3 APPENDS STOP -> [1, 3]
    //   MARK 1 MARK POP_MARK 2 TUPLE STOP        -> (1, 2)
    const auto top = parse(s({0x80, 2, 'K', 7, '(', 'K', 1, 'K', 2, '1', '.'}));
    QCOMPARE(top->root->kind, K::Int);
    QCOMPARE(top->root->integer, int64_t(7));

    const auto list =
        parse(s({0x80, 2, ']', 'q', 0, '(', 'K', 1, '(', 'K', 2, '1', 'K', 3, 'e', '.'}));
    QCOMPARE(list->root->kind, K::List);
    QCOMPARE(list->root->items.size(), size_t(2));
    QCOMPARE(list->root->items[0]->integer, int64_t(1));
    QCOMPARE(list->root->items[1]->integer, int64_t(3));

    const auto tuple = parse(s({0x80, 2, '(', 'K', 1, '(', '1', 'K', 2, 't', '.'}));
    QCOMPARE(tuple->root->kind, K::Tuple);
    QCOMPARE(tuple->root->items.size(), size_t(2));
    QCOMPARE(tuple->root->items[0]->integer, int64_t(1));
    QCOMPARE(tuple->root->items[1]->integer, int64_t(2));

    // POP_MARK with no MARK is an error, as in Python ("could not find MARK").
    QVERIFY(errorOf(s({0x80, 2, 'K', 1, '1', '.'})).find("MARK") != std::string::npos);
  }

  void cycleAsText() {
    // L = []; L.append(L); (L, L): each L is written, the inner one cut.
    const auto p = parse(s({0x80, 2, ']', 'q', 0, 'h', 0, 'a', 'h', 0, 0x86, '.'}));
    std::string text;
    appendValueJson(text, p->root);
    QCOMPARE(text, std::string(R"({"$tuple":[[{"$cycle":true}],[{"$cycle":true}]]})"));
  }

  void limits_data() {
    QTest::addColumn<QByteArray>("pickle");
    QTest::addColumn<QString>("message");
    std::string deep = s({0x80, 2});
    for (int i = 0; i < 5000; ++i) deep += ']';
    for (int i = 0; i < 4999; ++i) deep += 'a';
    deep += '.';
    QTest::newRow("deep nesting") << QByteArray::fromStdString(deep) << "nesting deeper than 1000";
    QTest::newRow("string bomb") << QByteArray::fromStdString(
                                        s({0x80, 4, 0x8d, 0, 0, 0, 0, 0, 1, 0, 0, 'x'}))
                                 << "over the limit";
    QTest::newRow("string past end")
        << QByteArray::fromStdString(s({0x80, 2, 'X', 0xff, 0xff, 0, 0, 'a'})) << "truncated";
    QTest::newRow("undefined memo")
        << QByteArray::fromStdString(s({0x80, 2, 'j', 0xf0, 0xff, 0xff, 0xff, '.'}))
        << "memo key 4294967280 is not defined";
    QTest::newRow("no STOP") << QByteArray::fromStdString(s({0x80, 2, 'K', 1})) << "truncated";
    QTest::newRow("stack underflow")
        << QByteArray::fromStdString(s({0x80, 2, 'a', '.'})) << "stack underflow";
    QTest::newRow("unknown opcode")
        << QByteArray::fromStdString(s({0x80, 2, 0xff, '.'})) << "unknown opcode 0xff";
    QTest::newRow("huge LONG4") << QByteArray::fromStdString(s({0x80, 2, 0x8b, 0, 0, 0, 0x40}))
                                << "too large";
    QTest::newRow("protocol 6") << QByteArray::fromStdString(s({0x80, 6, 'N', '.'}))
                                << "unsupported pickle protocol 6";
    QTest::newRow("BUILD on a list")
        << QByteArray::fromStdString(s({0x80, 2, ']', '}', 'b', '.'})) << "BUILD on a list";
    QTest::newRow("persistent id without loader")
        << QByteArray::fromStdString(s({0x80, 2, 'N', 'Q', '.'})) << "persistent id";
  }
  void limits() {
    QFETCH(QByteArray, pickle);
    QFETCH(QString, message);
    const std::string err = errorOf(pickle.toStdString());
    QVERIFY2(!err.empty(), "expected an error");
    QVERIFY2(err.find(message.toStdString()) != std::string::npos, err.c_str());
    QVERIFY2(err.find("test.pkl") == 0, err.c_str());  // names the buffer
  }

  void pythonFloatRepr_data() {
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("repr");  // what Python's repr() prints
    QTest::newRow("10000.0") << 10000.0 << "10000.0";
    QTest::newRow("1e15") << 1e15 << "1000000000000000.0";
    QTest::newRow("1e16") << 1e16 << "1e+16";
    QTest::newRow("0.0001") << 0.0001 << "0.0001";
    QTest::newRow("1e-05") << 1e-05 << "1e-05";
    QTest::newRow("0.1") << 0.1 << "0.1";
    QTest::newRow("-2.5") << -2.5 << "-2.5";
    QTest::newRow("1/3") << 1.0 / 3 << "0.3333333333333333";
    QTest::newRow("6e-05") << 6e-05 << "6e-05";
    QTest::newRow("1.5e300") << 1.5e300 << "1.5e+300";
    QTest::newRow("123.456") << 123.456 << "123.456";
    QTest::newRow("-0.0") << -0.0 << "-0.0";
  }
  void pythonFloatRepr() {
    QFETCH(double, value);
    QFETCH(QString, repr);
    QCOMPARE(QString::fromStdString(formatPythonFloat(value)), repr);
  }

  void memoKeysAreSparse() {
    // LONG_BINPUT at 0xfffffff0 must not pre-size anything.
    const auto p = parse(
        s({0x80, 2, 'K', 5, 'r', 0xf0, 0xff, 0xff, 0xff, '0', 'j', 0xf0, 0xff, 0xff, 0xff, '.'}));
    QCOMPARE(p->root->integer, int64_t(5));
  }

  void nodeLimit() {
    PickleLimits limits;
    limits.maxNodes = 100;
    std::string pkl = s({0x80, 2, '('});
    // 65536 + i: a new value each time (equal ints may share one node).
    for (int i = 0; i < 1000; ++i) pkl += s({'J', i & 0xff, (i >> 8) & 0xff, 1, 0});
    pkl += "l.";
    const std::string err = errorOf(pkl, limits);
    QVERIFY2(err.find("more than 100 values") != std::string::npos, err.c_str());
  }

  // TensorInfo::shape / stride keep a few dimensions inline; they must still
  // read, copy and compare like the std::vector<int64_t> they replace.
  void dimsBehaveLikeAVector() {
    Dims d{2, 3};
    QCOMPARE(d.size(), size_t(2));
    QVERIFY(d == std::vector<int64_t>({2, 3}));
    for (int64_t i = 0; i < 10; ++i) d.push_back(i);  // past the inline capacity
    QCOMPARE(d.size(), size_t(12));
    QCOMPARE(d[0], int64_t(2));
    QCOMPARE(d[11], int64_t(9));
    Dims copy = d;
    QVERIFY(copy == d);
    Dims moved = std::move(copy);
    QVERIFY(moved == d);
    const std::vector<int64_t> v = d;
    QCOMPARE(v.size(), size_t(12));
    QVERIFY(v == d);
    QVERIFY(Dims({1, 2}) < Dims({1, 3}));
    QVERIFY(Dims({1, 2}) != Dims({1, 2, 1}));
    d = {4};
    QCOMPARE(d.size(), size_t(1));
    moved = Dims{5, 6};  // heap block replaced by inline elements
    QVERIFY(moved == std::vector<int64_t>({5, 6}));
    QVERIFY(contiguousStrides(Dims{2, 3, 4}) == std::vector<int64_t>({12, 4, 1}));
  }

  // The same for TensorInfo::path.
  void tensorPathBehavesLikeAVector() {
    const std::string longKey = "blocks.11.attn.q_proj.weight (longer than a short string)";
    TensorPath p{std::string("optimizer"), std::string("state"), int64_t(3), longKey};
    QCOMPARE(p.size(), size_t(4));
    p.push_back(p[0]);  // an element of itself, just as the path outgrows its inline room
    p.push_back(int64_t(7));
    QCOMPARE(p.size(), size_t(6));
    QCOMPARE(joinPath(p), "optimizer.state.3." + longKey + ".optimizer.7");
    QCOMPARE(joinPath(p, 4), std::string("optimizer.7"));
    TensorPath copy = p;
    QVERIFY(copy == p);
    TensorPath moved = std::move(copy);
    QVERIFY(moved == p);
    const std::vector<PathElement> v = p;
    QVERIFY(TensorPath(v) == p);
    p.pop_back();
    QVERIFY(!(p == moved));
    TensorPath small{std::string("model_state"), longKey};
    TensorPath movedSmall = std::move(small);
    QCOMPARE(joinPath(movedSmall), "model_state." + longKey);
    moved = std::move(movedSmall);  // heap elements replaced by inline ones
    QCOMPARE(moved.size(), size_t(2));
    QCOMPARE(joinPath(TensorPath{std::string(""), int64_t(1), std::string(""), std::string("b")}),
             std::string("1..b"));
    QCOMPARE(joinPath(TensorPath{std::string(300, 'x'), int64_t(-2)}),
             std::string(300, 'x') + ".-2");
  }

  // The name is kept whole, elements are spans of it: check the spans, the
  // kinds and the growth past the inline room against elements built apart.
  void tensorPathKeepsItsNameAndElements() {
    TensorPath p;
    std::vector<PathElement> want;
    std::string name;
    for (int i = 0; i < 40; ++i) {  // past 4 inline elements and 64 inline bytes
      PathElement e = i % 3 == 1 ? PathElement(int64_t(i * 1000 - 7000))
                                 : PathElement(std::string(size_t(i % 5), char('a' + i % 26)));
      p.push_back(e);
      want.push_back(e);
      const std::string text = std::holds_alternative<int64_t>(e)
                                   ? std::to_string(std::get<int64_t>(e))
                                   : std::get<std::string>(e);
      if (!name.empty()) name += '.';
      name += text;
      QCOMPARE(p.name(), std::string_view(name));
      QCOMPARE(p.size(), want.size());
    }
    QVERIFY(p.vec() == want);
    {  // copies of a path past the inline elements, into empty and short paths
      const TensorPath copied = p;
      QVERIFY(copied == p);
      TensorPath assigned{std::string("short")};
      assigned = p;
      QVERIFY(assigned == p);
      QCOMPARE(assigned.name(), p.name());
    }
    for (size_t i = 0; i < want.size(); ++i) {
      QCOMPARE(p.isIndex(i), std::holds_alternative<int64_t>(want[i]));
      QVERIFY(p[i] == want[i]);
      if (p.isIndex(i)) QCOMPARE(p.index(i), std::get<int64_t>(want[i]));
    }
    // Popping back to a prefix gives the prefix's name.
    while (p.size() > 3) {
      p.pop_back();
      want.pop_back();
      QCOMPARE(joinPath(p), joinPath(TensorPath(want)));
    }
    // A key taken from the path itself while the text moves to the heap.
    TensorPath self{std::string(60, 'k')};
    self.pushKey(self.key(0));
    QCOMPARE(self.name(), std::string_view(std::string(60, 'k') + "." + std::string(60, 'k')));
    // "3" the key and 3 the index print alike but are different paths.
    QVERIFY(!(TensorPath{std::string("a"), std::string("3")} ==
              TensorPath{std::string("a"), int64_t(3)}));
    QVERIFY((TensorPath{std::string("a"), int64_t(3)} == TensorPath{std::string("a"), int64_t(3)}));
    // Spans, not only text: "a.b" + "c" differs from "a" + "b.c".
    QVERIFY(!(TensorPath{std::string("a.b"), std::string("c")} ==
              TensorPath{std::string("a"), std::string("b.c")}));
    // Leading empty keys leave no dot; popping them restores an empty name.
    TensorPath empties{std::string(""), std::string(""), std::string("x")};
    QCOMPARE(empties.name(), std::string_view("x"));
    empties.pop_back();
    QCOMPARE(empties.name(), std::string_view(""));
    empties.pushIndex(INT64_MIN);
    QCOMPARE(empties.index(2), INT64_MIN);
    // Copy-assigning a short path over a long one, and a long over a short.
    TensorPath a{std::string(200, 'z'), int64_t(1)};
    TensorPath b{std::string("m")};
    TensorPath c = a;
    c = b;
    QVERIFY(c == b);
    b = a;
    QVERIFY(b == a);
    QCOMPARE(joinPath(b, 1), std::string("1"));
  }
};

QTEST_GUILESS_MAIN(TestPickle)
#include "tst_pickle.moc"
