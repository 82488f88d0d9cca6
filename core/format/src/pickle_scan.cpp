// The safety scan of one pickle: an opcode walk with a shadow stack that
// remembers only what a verdict needs (strings, for STACK_GLOBAL and
// __import__; globals, for REDUCE and getattr; short tuples of those) and
// calls everything else "a value". Nothing is decoded into a tree, nothing
// imported or called. What a global or a call counts for is the judge's
// (safety_judge.h), which the reader's walk shares.
#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "byte_cursor.h"
#include "ckpt/format/error.h"
#include "ckpt/format/pickle_reader.h"
#include "ckpt/format/pickle_safety.h"
#include "pickle_opcodes.h"
#include "safety_judge.h"

namespace ckpt {
namespace {

using namespace pickle_ops;  // the opcodes: pickle_opcodes.h

constexpr size_t kMaxLine = 4096;
constexpr size_t kMaxName = SafetyJudge::kMaxName;

// A stack or memo slot, 8 bytes (a pickle's memo can hold millions).
struct Item {
  // LongStr: a string too long (or too far into the file) to be remembered,
  // which Python would still take as a name.
  enum Kind : uint8_t { Empty, Other, Str, Global, Module, Tuple, LongStr };
  uint32_t at = 0;  // Str/Module: where the text starts in the pickle's bytes
  uint32_t kindAndN =
      uint32_t(Other)
      << 29;  // kind (3 bits); Str/Module: length, Global: symbol, Tuple: m_tuples index
  Item() = default;
  Item(Kind k, uint32_t n, uint32_t textAt = 0) : at(textAt), kindAndN(uint32_t(k) << 29 | n) {}
  [[nodiscard]] Kind kind() const { return Kind(kindAndN >> 29); }
  [[nodiscard]] uint32_t n() const { return kindAndN & ((1u << 29) - 1); }
};
static_assert(sizeof(Item) == 8);
constexpr uint32_t kMaxIndex = (1u << 29) - 1;

// The stack and the memo: std::vector's push_back is not inlined in a loop
// this big (it cost a fifth of the walk); these are, and grow out of line.
class ItemArray {
 public:
  ItemArray() = default;
  ItemArray(const ItemArray&) = delete;
  ItemArray& operator=(const ItemArray&) = delete;
  ~ItemArray() { delete[] m_data; }
  [[gnu::always_inline]] size_t size() const { return m_size; }
  [[gnu::always_inline]] bool empty() const { return m_size == 0; }
  [[gnu::always_inline]] Item* data() { return m_data; }
  [[gnu::always_inline]] Item& operator[](size_t i) { return m_data[i]; }
  [[gnu::always_inline]] const Item& back() const { return m_data[m_size - 1]; }
  [[gnu::always_inline]] void pop_back() { --m_size; }
  [[gnu::always_inline]] void push_back(const Item& v) {
    if (m_size == m_capacity) [[unlikely]]
      grow();
    m_data[m_size++] = v;
  }
  void reserve(size_t n) {
    if (n <= m_capacity) return;
    auto* p = new Item[n];
    if (m_size) std::memcpy(static_cast<void*>(p), m_data, m_size * sizeof(Item));
    delete[] m_data;
    m_data = p;
    m_capacity = n;
  }
  // Only ever shrinks (to a MARK's position).
  [[gnu::always_inline]] void resize(size_t n) { m_size = n; }

 private:
  [[gnu::noinline]] void grow() {
    const size_t cap = m_capacity ? m_capacity * 2 : 256;
    auto* p = new Item[cap];
    if (m_size) std::memcpy(static_cast<void*>(p), m_data, m_size * sizeof(Item));
    delete[] m_data;
    m_data = p;
    m_capacity = cap;
  }
  Item* m_data = nullptr;
  size_t m_size = 0;
  size_t m_capacity = 0;
};

class Scanner : ByteCursor<Scanner> {
 public:
  Scanner(const uint8_t* data, uint64_t size, const std::string& record, uint64_t base,
          SafetyReport& report, const ScanLimits& limits)
      : ByteCursor(data, size),
        m_record(record),
        m_base(base),
        m_limits(limits),
        m_judge(report, limits, record, base, /*throwAtBound=*/true) {
    // torch's pickles memoize about one value per 12 bytes: room for that
    // up front saves regrowing (and copying) the memo while walking.
    m_memo.reserve(size_t(std::min<uint64_t>(size / 12 + 64, 1u << 16)));
    m_stack.reserve(256);
  }

  uint64_t run() {
    for (;;) {
      m_opStart = m_pos;
      const uint8_t op = u8();
      switch (op) {
        case STOP:
          if (m_stack.empty()) error("STOP with an empty stack");
          return m_pos;
        case PROTO:
          if (u8() > 5) error("unsupported pickle protocol " + std::to_string(m_data[m_pos - 1]));
          break;
        case FRAME:
          skip(8);
          break;
        case MARK:
          if (m_stack.size() + m_marks.size() >= m_limits.maxStack) limit("too many MARKs");
          m_marks.push_back(m_stack.size());
          break;
        case POP:
          if (m_stack.size() > floor())
            m_stack.pop_back();
          else
            popMark();
          break;
        case POP_MARK:
          m_stack.resize(popMark());
          break;
        case DUP:
          push(top());
          break;
        case NONE:
        case NEWTRUE:
        case NEWFALSE:
        case EMPTY_TUPLE:
        case EMPTY_LIST:
        case EMPTY_DICT:
        case EMPTY_SET:
          pushOther();
          break;
        case INT:
        case LONG:
        case FLOAT:
          line();
          pushOther();
          break;
        case BININT:
          skip(4);
          pushOther();
          break;
        case BININT1:
          skip(1);
          pushOther();
          break;
        case BININT2:
          skip(2);
          pushOther();
          break;
        case LONG1:
          skip(u8());
          pushOther();
          break;
        case LONG4: {
          const int32_t n = int32_t(uint32_t(uintLE(4)));
          if (n < 0) error("LONG4 with negative length");
          skip(uint64_t(n));
          pushOther();
          break;
        }
        case BINFLOAT:
          skip(8);
          pushOther();
          break;
        case STRING: {  // 'text' or "text": the text between the quotes
          const auto [p, n] = line();
          if (n < 2 || (p[0] != '\'' && p[0] != '"') || p[n - 1] != p[0])
            error("bad STRING literal");
          pushStr(p + 1, n - 2);
          break;
        }
        case UNICODE: {
          const auto [p, n] = line();
          pushStr(p, n);
          break;
        }
        case BINSTRING: {
          const int32_t n = int32_t(uint32_t(uintLE(4)));
          if (n < 0) error("BINSTRING with negative length");
          pushStr(take(uint64_t(n)), uint64_t(n));
          break;
        }
        case SHORT_BINSTRING:
        case SHORT_BINUNICODE: {
          const uint64_t n = u8();
          pushStr(take(n), n);
          break;
        }
        case BINUNICODE:
        case BINUNICODE8: {
          const uint64_t n = uintLE(op == BINUNICODE ? 4 : 8);
          pushStr(take(n), n);
          break;
        }
        case BINBYTES:
        case BINBYTES8:
        case BYTEARRAY8:
          skip(uintLE(op == BINBYTES ? 4 : 8));
          pushOther();
          break;
        case SHORT_BINBYTES:
          skip(u8());
          pushOther();
          break;
        case NEXT_BUFFER:
          pushOther();
          break;
        case READONLY_BUFFER:
          (void)top();
          break;
        case TUPLE: {
          const size_t at = popMark();
          pushTuple(m_stack.data() + at, m_stack.size() - at, at);
          break;
        }
        case TUPLE1:
        case TUPLE2:
        case TUPLE3: {
          const size_t n = size_t(op - TUPLE1 + 1);
          if (m_stack.size() < floor() + n) underflow();
          const size_t at = m_stack.size() - n;
          pushTuple(m_stack.data() + at, n, at);
          break;
        }
        case LIST:
        case DICT:
        case FROZENSET:
          m_stack.resize(popMark());
          pushOther();
          break;
        case APPEND:
          pop();
          (void)top();
          break;
        case SETITEM:
          pop();
          pop();
          (void)top();
          break;
        case APPENDS:
        case SETITEMS:
        case ADDITEMS:
          m_stack.resize(popMark());
          (void)top();
          break;
        case GLOBAL: {
          const auto [mp, mn] = line();
          const auto [np, nn] = line();
          push(global(std::string(mp, mn), std::string(np, nn), m_opStart));
          break;
        }
        case STACK_GLOBAL: {
          const Item name = pop();
          const Item module = pop();
          if (name.kind() == Item::LongStr || module.kind() == Item::LongStr)
            limit("STACK_GLOBAL with a name longer than " + std::to_string(kMaxName) + " bytes");
          if (name.kind() != Item::Str || module.kind() != Item::Str)
            error("STACK_GLOBAL needs two strings");
          push(global(std::string(text(module)), std::string(text(name)), m_opStart));
          break;
        }
        case INST: {  // class from the lines, arguments from the mark: a call
          const uint64_t at = m_opStart;
          const auto [mp, mn] = line();
          const auto [np, nn] = line();
          const Item cls = global(std::string(mp, mn), std::string(np, nn), at);
          m_stack.resize(popMark());
          called(cls, "INST");
          pushOther();
          break;
        }
        case OBJ: {
          const size_t at = popMark();
          if (at == m_stack.size()) error("OBJ without a class");
          const Item cls = m_stack[at];
          m_stack.resize(at);
          called(cls, "OBJ");
          pushOther();
          break;
        }
        case REDUCE: {
          const Item args = pop();
          const Item callable = pop();
          push(reduce(callable, args));
          break;
        }
        case NEWOBJ:
          pop();
          pop();
          pushOther();
          break;
        case NEWOBJ_EX:
          pop();
          pop();
          pop();
          pushOther();
          break;
        case BUILD:
          pop();
          (void)top();
          break;
        case PERSID:
          line();
          pushOther();
          break;
        case BINPERSID:
          pop();
          pushOther();
          break;
        case EXT1:
        case EXT2:
        case EXT4: {
          // copyreg's extension registry: whatever the loading process registered.
          const uint64_t code = uintLE(op == EXT1 ? 1 : op == EXT2 ? 2 : 4);
          push(global("copyreg._extension_registry", std::to_string(code), m_opStart));
          break;
        }
        case GET:
          memoGet(decimal());
          break;
        case BINGET:
          memoGet(u8());
          break;
        case LONG_BINGET:
          memoGet(uintLE(4));
          break;
        case PUT:
          memoPut(decimal());
          break;
        case BINPUT:
          memoPut(u8());
          break;
        case LONG_BINPUT:
          memoPut(uintLE(4));
          break;
        case MEMOIZE:
          memoPut(m_memoCount);
          break;
        default: {
          char buf[8];
          std::snprintf(buf, sizeof buf, "0x%02x", op);
          error(std::string("unknown opcode ") + buf);
        }
      }
    }
  }

 private:
  // ---- errors and input -------------------------------------------------
  friend class ByteCursor<Scanner>;  // need, u8, uintLE, skip, textLine (byte_cursor.h)
  [[noreturn, gnu::noinline, gnu::cold]] void error(const std::string& msg) const {
    fail(m_record + ": byte " + std::to_string(m_base + m_opStart) + ": " + msg);
  }
  // Past one of the scan's own bounds, where Python would read on.
  [[noreturn, gnu::noinline, gnu::cold]] void limit(const std::string& msg) const {
    throw ScanLimitError(m_record + ": byte " + std::to_string(m_base + m_opStart) + ": " + msg +
                         "; the rest of this pickle was not examined");
  }
  [[noreturn, gnu::noinline, gnu::cold]] void truncated(uint64_t n) const {
    failTruncated(m_record + ": truncated: opcode at byte " + std::to_string(m_base + m_opStart) +
                  " needs " + std::to_string(n) + " bytes, " + std::to_string(m_size - m_pos) +
                  " left");
  }
  const char* take(uint64_t n) { return reinterpret_cast<const char*>(bytes(n)); }
  std::pair<const char*, size_t> line() {
    // Python reads a line of any length: a longer one is past our bound,
    // not a broken pickle (textLine would call it an error()).
    const uint64_t left = m_size - m_pos;
    if (left > kMaxLine + 1 && !std::memchr(m_data + m_pos, '\n', kMaxLine + 1))
      limit("text line longer than " + std::to_string(kMaxLine) + " bytes");
    return textLine(kMaxLine);
  }
  // A PUT / GET index. Python's int() takes more spellings than plain
  // digits (signs, spaces, underscores) and any size: those are past what
  // the scan follows.
  uint64_t decimal() {
    const auto [p, n] = line();
    if (n == 0 || n > 19) limit("a memo index the scan does not follow");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      if (p[i] < '0' || p[i] > '9') limit("a memo index the scan does not follow");
      v = v * 10 + uint64_t(p[i] - '0');
    }
    return v;
  }

  [[nodiscard]] std::string_view text(const Item& it) const {
    return {reinterpret_cast<const char*>(m_data + it.at), it.n()};
  }

  // ---- the shadow stack ---------------------------------------------------
  [[gnu::always_inline]] size_t floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
  [[noreturn, gnu::noinline, gnu::cold]] void underflow() const { error("stack underflow"); }
  [[noreturn, gnu::noinline, gnu::cold]] void tooDeep() const {
    limit("stack deeper than " + std::to_string(m_limits.maxStack));
  }
  [[gnu::always_inline]] void push(Item it) {
    if (m_stack.size() + m_marks.size() >= m_limits.maxStack) [[unlikely]]
      tooDeep();
    m_stack.push_back(it);
  }
  [[gnu::always_inline]] void pushOther() { push(Item{}); }
  [[gnu::always_inline]] void pushStr(const char* p, uint64_t n) {
    if (n > kMaxName) return push(Item(Item::LongStr, 0));  // too long to remember
    const uint64_t at = uint64_t(reinterpret_cast<const uint8_t*>(p) - m_data);
    if (at > UINT32_MAX) return push(Item(Item::LongStr, 0));  // past 4 GiB: not remembered
    push(Item(Item::Str, uint32_t(n), uint32_t(at)));
  }
  [[gnu::always_inline]] Item pop() {
    if (m_stack.size() <= floor()) underflow();
    const Item it = m_stack.back();
    m_stack.pop_back();
    return it;
  }
  [[gnu::always_inline]] Item top() const {
    if (m_stack.size() <= floor()) underflow();
    return m_stack.back();
  }
  size_t popMark() {
    if (m_marks.empty()) error("no MARK on the stack");
    const size_t at = m_marks.back();
    m_marks.pop_back();
    return at;
  }
  // Tuples are remembered only in the shapes getattr and __import__ take:
  // (str,) and (global-or-module, str).
  void pushTuple(const Item* items, size_t n, size_t at) {
    Item t;
    if (m_tuples.size() >= std::min<uint64_t>(m_limits.maxMemo + m_limits.maxStack, kMaxIndex)) {
      // Past the bound nothing more is remembered: a getattr or __import__
      // given such a tuple is judged as unresolved (dangerous).
    } else if ((n == 1 && items[0].kind() == Item::Str) ||
               (n == 2 && (items[0].kind() == Item::Global || items[0].kind() == Item::Module) &&
                items[1].kind() == Item::Str)) {
      t = Item(Item::Tuple, uint32_t(m_tuples.size()));
      m_tuples.push_back({items[0], n == 2 ? items[1] : Item{}});
    }
    m_stack.resize(at);
    push(t);
  }

  [[gnu::always_inline]] void memoPut(uint64_t idx) {
    const Item it = top();
    if (idx < m_memo.size()) {
      if (m_memo[idx].kind() == Item::Empty) ++m_memoCount;
      m_memo[idx] = it;
      return;
    }
    if (idx == m_memo.size()) {
      if (idx >= m_limits.maxMemo)
        limit("more than " + std::to_string(m_limits.maxMemo) + " memo entries");
      m_memo.push_back(it);
      ++m_memoCount;
      return;
    }
    auto [slot, inserted] = m_sparse.try_emplace(idx, it);
    if (!inserted) {
      slot->second = it;
      return;
    }
    ++m_memoCount;
    if (m_sparse.size() > m_limits.maxSparseMemo)
      limit("more than " + std::to_string(m_limits.maxSparseMemo) +
            " memo entries out of sequence");
  }
  [[gnu::always_inline]] void memoGet(uint64_t idx) {
    if (idx < m_memo.size() && m_memo[idx].kind() != Item::Empty) return push(m_memo[idx]);
    const auto it = m_sparse.find(idx);
    if (it == m_sparse.end())
      error("memo slot " + std::to_string(idx) + " read before it was written");
    push(it->second);
  }

  // ---- globals: judged by the rules both walks share (safety_judge.h) ----
  Item global(std::string module, std::string name, uint64_t offset) {
    return Item(Item::Global, m_judge.global(std::move(module), std::move(name), offset));
  }
  void called(const Item& callable, const char* how) {
    if (callable.kind() == Item::Global) m_judge.called(callable.n(), how);
  }
  Item reduce(const Item& callable, const Item& args) {
    if (callable.kind() != Item::Global) return Item{};
    const uint32_t symbol = callable.n();
    if (m_judge.isImport(symbol) && args.kind() == Item::Tuple) {
      // The module object it returns, for a getattr to follow (__import__
      // itself stays dangerous: importing runs the module).
      const Item& modName = m_tuples[args.n()].first;
      if (modName.kind() == Item::Str) return Item(Item::Module, modName.n(), modName.at);
    }
    if (m_judge.isGetattr(symbol)) {
      SafetyJudge::Target target;
      const bool known =
          args.kind() == Item::Tuple && m_tuples[args.n()].second.kind() == Item::Str;
      if (known) {
        const Item& t = m_tuples[args.n()].first;
        if (t.kind() == Item::Module)
          target.module = text(t);
        else
          target.symbol = t.n();
      }
      const uint32_t reached =
          m_judge.getattr(symbol, known ? &target : nullptr,
                          known ? text(m_tuples[args.n()].second) : "", m_opStart);
      return reached == SafetyJudge::kNoSymbol ? Item{} : Item(Item::Global, reached);
    }
    called(callable, "REDUCE");
    return Item{};
  }
  const std::string& m_record;
  uint64_t m_base;
  const ScanLimits& m_limits;
  SafetyJudge m_judge;
  uint64_t m_opStart = 0;
  ItemArray m_stack;
  std::vector<size_t> m_marks;
  ItemArray m_memo;
  std::unordered_map<uint64_t, Item> m_sparse;
  uint64_t m_memoCount = 0;
  std::vector<std::pair<Item, Item>> m_tuples;
};

}  // namespace

uint64_t scanPickle(const uint8_t* data, uint64_t size, const std::string& record,
                    uint64_t baseOffset, SafetyReport& report, const ScanLimits& limits) {
  ++report.pickles;
  detail::notePickleWalk(record, baseOffset);
  Scanner scanner(data, size, record, baseOffset, report, limits);
  return scanner.run();
}

}  // namespace ckpt
