#include "ckpt/format/pickle_reader.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "ckpt/format/error.h"
#include "ckpt/format/utf8.h"
#include "pickle_machine.h"
#include "pickle_opcodes.h"

namespace ckpt {

namespace detail {

std::string twosComplementToDecimal(const uint8_t* bytes, size_t n) {
  if (n == 0) return "0";
  std::vector<uint8_t> mag(bytes, bytes + n);
  const bool negative = (mag[n - 1] & 0x80) != 0;
  if (negative) {  // magnitude = ~x + 1
    unsigned carry = 1;
    for (auto& b : mag) {
      unsigned v = unsigned(uint8_t(~b)) + carry;
      b = uint8_t(v);
      carry = v >> 8;
    }
  }
  // Little-endian bytes -> big-endian base-1e9 limbs by repeated division.
  std::vector<uint32_t> words;  // little-endian 32-bit words
  for (size_t i = 0; i < n; i += 4) {
    uint32_t w = 0;
    for (size_t j = 0; j < 4 && i + j < n; ++j) w |= uint32_t(mag[i + j]) << (8 * j);
    words.push_back(w);
  }
  while (!words.empty() && words.back() == 0) words.pop_back();
  if (words.empty()) return "0";
  std::vector<uint32_t> chunks;  // base 1e9, least significant first
  while (!words.empty()) {
    uint64_t rem = 0;
    for (size_t i = words.size(); i-- > 0;) {
      const uint64_t cur = (rem << 32) | words[i];
      words[i] = uint32_t(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    chunks.push_back(uint32_t(rem));
    while (!words.empty() && words.back() == 0) words.pop_back();
  }
  std::string out = negative ? "-" : "";
  out += std::to_string(chunks.back());
  for (size_t i = chunks.size() - 1; i-- > 0;) {
    std::string part = std::to_string(chunks[i]);
    out += std::string(9 - part.size(), '0') + part;
  }
  return out;
}

}  // namespace detail

namespace pickle_machine {

// Opcodes: pickle_opcodes.h.
using namespace pickle_ops;

namespace {

std::string latin1ToUtf8(const uint8_t* p, size_t n) {
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) utf8::append(out, p[i]);
  return out;
}

}  // namespace

// Threaded dispatch (labels as values, a GCC and Clang extension): each
// handler ends in its own jump to the next opcode's handler, so every such
// jump learns what follows its opcode (torch's pickles repeat one opcode
// pattern per tensor). A handler ends in NEXT(); STOP returns the result.
// Every opcode in CKPT_PICKLE_OPS has a label L_<name>; the rest are unknown.
PickleResult Machine::run() {
  void* table[256];
  for (void*& t : table) t = &&L_unknown;
  table[STOP] = &&L_STOP;
// (clang-format cannot settle on one layout for this list)
// clang-format off
#define CKPT_PICKLE_OPS(X)                                                                      \
X(PROTO) X(FRAME) X(MARK) X(POP) X(POP_MARK) X(DUP) X(NONE) X(NEWTRUE) X(NEWFALSE) X(INT)     \
X(BININT) X(BININT1) X(BININT2) X(LONG) X(LONG1) X(LONG4) X(FLOAT) X(BINFLOAT) X(STRING)      \
X(BINSTRING) X(SHORT_BINSTRING) X(UNICODE) X(BINUNICODE) X(SHORT_BINUNICODE) X(BINUNICODE8)  \
X(BINBYTES) X(SHORT_BINBYTES) X(BINBYTES8) X(BYTEARRAY8) X(NEXT_BUFFER) X(READONLY_BUFFER)    \
X(EMPTY_TUPLE) X(TUPLE) X(TUPLE1) X(TUPLE2) X(TUPLE3) X(EMPTY_LIST) X(LIST) X(APPEND)         \
X(APPENDS) X(EMPTY_DICT) X(DICT) X(SETITEM) X(SETITEMS) X(EMPTY_SET) X(ADDITEMS)              \
X(FROZENSET) X(GLOBAL) X(STACK_GLOBAL) X(REDUCE) X(NEWOBJ) X(NEWOBJ_EX) X(INST) X(OBJ)        \
X(BUILD) X(PERSID) X(BINPERSID) X(EXT1) X(EXT2) X(EXT4) X(GET) X(BINGET) X(LONG_BINGET)       \
X(PUT) X(BINPUT) X(LONG_BINPUT) X(MEMOIZE)
// clang-format on
#define CKPT_PICKLE_LABEL(name) table[name] = &&L_##name;
  CKPT_PICKLE_OPS(CKPT_PICKLE_LABEL)
#undef CKPT_PICKLE_LABEL
#undef CKPT_PICKLE_OPS
  uint8_t op;
  // A computed goto leaves a block without running destructors: no
  // handler may hold a local with one (a std::string, ...) where it calls
  // NEXT(). Those that need strings call a member function (intLine, ...).
  // The sanitizer build's leak check finds a handler that breaks this.
#define NEXT()         \
  do {                 \
    m_opStart = m_pos; \
    op = u8();         \
    goto* table[op];   \
  } while (0)
  NEXT();
L_STOP : {
  if (m_stack.empty()) error("STOP with an empty stack");
  if (m_judge) judgeBounds();
  return {m_stack.back(), m_pos};
}
L_PROTO : {
  const uint8_t proto = u8();
  if (proto > 5) error("unsupported pickle protocol " + std::to_string(proto));
  NEXT();
}
L_FRAME : {
  const uint64_t len = uintLE(8);
  if (len > m_size - m_pos) need(len);
  NEXT();
}
L_MARK:
  pushMark();
  NEXT();
L_POP:
  if (m_stack.size() > m_floor)
    m_stack.pop_back();
  else
    popMark();
  NEXT();
L_POP_MARK:
  // Python drops the topmost MARK and everything above it.
  m_stack.shrinkTo(popMark());
  NEXT();
L_DUP:
  push(top());
  NEXT();
L_NONE:
  push(none());
  NEXT();
L_NEWTRUE:
L_NEWFALSE:
  push(boolean(op == NEWTRUE));
  NEXT();
L_INT:
  push(intLine());
  NEXT();
L_BININT:
  push(makeInt(int32_t(uint32_t(uintLE(4)))));
  NEXT();
L_BININT1:
  push(makeInt(u8()));
  NEXT();
L_BININT2:
  push(makeInt(int64_t(uintLE(2))));
  NEXT();
L_LONG:
  push(intFromDecimal(line()));
  NEXT();
L_LONG1 : {
  const uint64_t n = u8();
  push(intFromBytes(take(n), n));
  NEXT();
}
L_LONG4 : {
  const int32_t n = int32_t(uint32_t(uintLE(4)));
  if (n < 0) error("LONG4 with negative length");
  if (uint64_t(n) > kMaxBigIntBytes)
    error("integer of " + std::to_string(n) + " bytes is too large");
  push(intFromBytes(take(uint64_t(n)), uint64_t(n)));
  NEXT();
}
L_FLOAT:
  push(floatLine());
  NEXT();
L_BINFLOAT : {
  need(8);
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | m_data[m_pos + i];
  m_pos += 8;
  Value* f = make(K::Float);
  std::memcpy(&f->real, &bits, 8);
  push(f);
  NEXT();
}
L_STRING:
  push(stringLine());
  NEXT();
L_BINSTRING : {
  const int32_t n = int32_t(uint32_t(uintLE(4)));
  if (n < 0) error("BINSTRING with negative length");
  const uint8_t* p = take(uint64_t(n));
  push(makeStr(latin1ToUtf8(p, size_t(n))));
  NEXT();
}
L_SHORT_BINSTRING : {
  const uint64_t n = u8();
  const uint8_t* p = take(n);
  push(makeStr(latin1ToUtf8(p, n)));
  NEXT();
}
L_UNICODE:
  push(makeStr(rawUnicodeEscape(line())));
  NEXT();
L_BINUNICODE:
L_SHORT_BINUNICODE:
L_BINUNICODE8 : {
  const uint64_t n = op == SHORT_BINUNICODE ? u8() : uintLE(op == BINUNICODE ? 4 : 8);
  const uint8_t* p = take(n);
  push(makeStrIn(std::string_view(reinterpret_cast<const char*>(p), n), K::Str));
  NEXT();
}
L_BINBYTES:
L_SHORT_BINBYTES:
L_BINBYTES8:
L_BYTEARRAY8 : {
  const uint64_t n = op == SHORT_BINBYTES ? u8() : uintLE(op == BINBYTES ? 4 : 8);
  const uint8_t* p = take(n);
  push(makeStrIn(std::string_view(reinterpret_cast<const char*>(p), n), K::Bytes));
  NEXT();
}
L_NEXT_BUFFER:
L_READONLY_BUFFER:
  error("out-of-band buffers (pickle protocol 5) are not supported");
L_EMPTY_TUPLE:
  push(constant(m_emptyTuple, K::Tuple, 0));
  NEXT();
L_TUPLE:
  push(seqFromMark(K::Tuple));
  NEXT();
L_TUPLE1:
L_TUPLE2:
L_TUPLE3 : {
  const size_t n = size_t(op - TUPLE1 + 1);
  Value* items[3];
  for (size_t i = n; i-- > 0;) items[i] = pop();
  push(makeSeq(K::Tuple, items, n));
  NEXT();
}
L_EMPTY_LIST:
  push(make(K::List));
  NEXT();
L_LIST:
  push(seqFromMark(K::List));
  NEXT();
L_APPEND : {
  Value* v = pop();
  appendItems(top(), &v, 1);
  NEXT();
}
L_APPENDS : {
  const size_t at = popMark();
  appendItems(below(at), m_stack.data() + at, m_stack.size() - at);
  m_stack.shrinkTo(at);
  NEXT();
}
L_EMPTY_DICT:
  push(make(K::Dict));
  NEXT();
L_DICT : {
  const size_t at = popMark();
  Value* d = make(K::Dict);
  setItems(d, m_stack.data() + at, m_stack.size() - at);
  m_stack.shrinkTo(at);
  push(d);
  NEXT();
}
L_SETITEM : {
  Value* kv[2];
  kv[1] = pop();
  kv[0] = pop();
  setItems(top(), kv, 2);
  NEXT();
}
L_SETITEMS : {
  const size_t at = popMark();
  setItems(below(at), m_stack.data() + at, m_stack.size() - at);
  m_stack.shrinkTo(at);
  NEXT();
}
L_EMPTY_SET:
  push(make(K::Set));
  NEXT();
L_ADDITEMS : {
  const size_t at = popMark();
  Value* s = below(at);
  if (s->kind != K::Set) error("ADDITEMS on a " + std::string(kindName(s->kind)));
  for (size_t i = at; i < m_stack.size(); ++i) {
    adopt(s, m_stack[i]);
    m_arena.append(s->items, static_cast<const Value*>(m_stack[i]));
  }
  m_stack.shrinkTo(at);
  NEXT();
}
L_FROZENSET:
  push(seqFromMark(K::Set));
  NEXT();
L_GLOBAL:
  push(globalLines());
  NEXT();
L_STACK_GLOBAL : {
  Value* name = pop();
  Value* module = pop();
  if (!name->isStr() || !module->isStr()) error("STACK_GLOBAL needs two strings");
  push(global(module->text, name->text));
  NEXT();
}
L_REDUCE : {
  Value* args = pop();
  Value* callable = pop();
  Value* made = construct(callable, args);
  if (m_judge) judgeCall(callable, args, made, "REDUCE");
  push(made);
  NEXT();
}
L_NEWOBJ : {
  Value* args = pop();
  Value* cls = pop();
  Value* obj = construct(cls, args);
  if (obj->kind == K::Object && obj->text == cls->text) obj->tag = Value::kMadeByNewObj;
  push(obj);
  NEXT();
}
L_NEWOBJ_EX : {
  Value* kwargs = pop();
  Value* args = pop();
  Value* cls = pop();
  Value* obj = construct(cls, args);
  if (obj->kind == K::Object && obj->text == cls->text) obj->tag = Value::kMadeByNewObj;
  if (kwargs->kind == K::Dict && !kwargs->entries.empty() && obj->kind == K::Object) {
    adopt(obj, kwargs);
    m_arena.append(obj->items, static_cast<const Value*>(kwargs));
  }
  push(obj);
  NEXT();
}
L_INST : {
  Value* cls = globalLines();
  Value* made = construct(cls, seqFromMark(K::Tuple));
  if (m_judge) judgeCall(cls, nullptr, made, "INST");
  push(made);
  NEXT();
}
L_OBJ : {
  const size_t at = popMark();
  if (at == m_stack.size()) error("OBJ without a class");
  Value* cls = m_stack[at];
  Value* args = makeSeq(K::Tuple, m_stack.data() + at + 1, m_stack.size() - at - 1);
  m_stack.shrinkTo(at);
  Value* made = construct(cls, args);
  if (m_judge) judgeCall(cls, nullptr, made, "OBJ");
  push(made);
  NEXT();
}
L_BUILD : {
  Value* state = pop();
  build(top(), state);
  NEXT();
}
L_PERSID:
L_BINPERSID : {
  Value* pid = op == PERSID ? makeStr(line()) : pop();
  if (!m_loader) error("persistent id in a pickle that allows none");
  const Value* v = nullptr;
  try {
    v = m_loader(pid);
  } catch (const FormatError& e) {
    error(e.what());
  }
  push(const_cast<Value*>(v));
  NEXT();
}
L_EXT1:
L_EXT2:
L_EXT4:
  error("extension registry codes are not supported");
L_GET:
  memoGet(decimalLine());
  NEXT();
L_BINGET:
  memoGet(u8());
  NEXT();
L_LONG_BINGET:
  memoGet(uintLE(4));
  NEXT();
L_PUT:
  memoPut(decimalLine());
  NEXT();
L_BINPUT:
  memoPut(u8());
  NEXT();
L_LONG_BINPUT:
  memoPut(uintLE(4));
  NEXT();
L_MEMOIZE:
  memoPut(m_memoCount);
  NEXT();
L_unknown : {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", op);
  error(std::string("unknown opcode ") + buf);
}
#undef NEXT
}

void Machine::error(const std::string& msg) const {
  fail(m_what + ": byte " + std::to_string(m_base + m_opStart) + ": " + msg);
}

void Machine::truncated(uint64_t n) const {
  failTruncated(m_what + ": truncated: opcode at byte " + std::to_string(m_base + m_opStart) +
                " needs " + std::to_string(n) + " bytes, " + std::to_string(m_size - m_pos) +
                " left");
}

std::string Machine::line() {
  const auto [p, n] = textLine(kMaxLineBytes);
  return std::string(p, n);
}

void Machine::tooManyNodes() const {
  error("more than " + std::to_string(m_limits.maxNodes) + " values");
}

void Machine::stackTooDeep() {
  if (m_stackCap < m_limits.maxStack) {
    // The scan's walk stops here; the reader goes on to its own limit.
    m_judge->bound(m_opStart, "stack deeper than " + std::to_string(m_bounds.maxStack));
    m_stackCap = m_limits.maxStack;
    if (m_stack.size() + m_marks.size() < m_stackCap) return;
  }
  error("stack deeper than " + std::to_string(m_limits.maxStack));
}

void Machine::setJudge(SafetyJudge* judge, const ScanLimits& bounds) {
  m_judge = judge;
  m_bounds = bounds;
  m_nodesBefore = m_arena.size();
  if (judge) {
    m_stackCap = std::min<uint64_t>(m_limits.maxStack, bounds.maxStack);
    m_memoFastCap = std::min<uint64_t>(m_limits.maxMemo, bounds.maxMemo);
  }
}

// A Global's index holds its symbol + 1 (global(), pickle_torch.cpp).
SafetyJudge::Target Machine::judged(const Value* v) const {
  if (v->kind == K::Global) {
    SafetyJudge::Target t;
    if (v->index > 0) t.symbol = uint32_t(v->index - 1);
    return t;
  }
  if (m_judgedValues.empty()) return {};
  const auto it = m_judgedValues.find(v);
  return it == m_judgedValues.end() ? SafetyJudge::Target{} : it->second;
}

// What the scan's walk does at a call (pickle_scan.cpp, reduce() and
// called()), on the values the reader built: its shadow stack knows a
// tuple only as an opcode built it (not torch.Size's), a string only up to
// SafetyJudge::kMaxName bytes.
void Machine::judgeCall(const Value* callable, const Value* args, const Value* result,
                        const char* how) {
  const SafetyJudge::Target fn = judged(callable);
  if (fn.symbol == SafetyJudge::kNoSymbol) return;
  const bool tuple = args && args->kind == K::Tuple && !m_madeByCall.count(args);
  auto shortStr = [](const Value* v) {
    return v->isStr() && v->text.size() <= SafetyJudge::kMaxName;
  };
  if (args && m_judge->isImport(fn.symbol) && tuple && args->items.size() == 1 &&
      shortStr(args->items[0])) {
    // The module object it returns, for a getattr to follow (__import__
    // itself stays dangerous: importing runs the module).
    SafetyJudge::Target module;
    module.module = args->items[0]->text;
    m_judgedValues[result] = module;
    return;
  }
  if (args && m_judge->isGetattr(fn.symbol)) {
    SafetyJudge::Target target;
    const bool known = tuple && args->items.size() == 2 && shortStr(args->items[1]) &&
                       ((target = judged(args->items[0])).symbol != SafetyJudge::kNoSymbol ||
                        !target.module.empty());
    const uint32_t reached = m_judge->getattr(fn.symbol, known ? &target : nullptr,
                                              known ? args->items[1]->text : "", m_opStart);
    if (reached != SafetyJudge::kNoSymbol) {
      SafetyJudge::Target t;
      t.symbol = reached;
      m_judgedValues[result] = t;
    }
    return;
  }
  m_judge->called(fn.symbol, how);
}

void Machine::judgeBounds() {
  // The scan's walk would have stopped somewhere before here
  // (pickle_scan.cpp): the tuples it remembers are fewer than the values
  // made. Where is not known: not exact. (Its memo bounds are noted where
  // the scan checks them: memoPutSlow.)
  if (m_arena.size() - m_nodesBefore > m_bounds.maxMemo + m_bounds.maxStack)
    m_judge->bound(m_opStart, "more tuples than the scan remembers", /*exact=*/false);
}

void Machine::underflow() const {
  error("stack underflow");
}

void Machine::pushMark() {
  if (m_stack.size() + m_marks.size() >= m_stackCap) {
    if (m_stackCap < m_limits.maxStack) stackTooDeep();  // the scan's bound: noted
    if (m_stack.size() + m_marks.size() >= m_limits.maxStack) error("too many MARKs");
  }
  m_marks.push_back(m_stack.size());
  m_floor = m_stack.size();
}

size_t Machine::popMark() {
  if (m_marks.empty()) error("no MARK on the stack");
  const size_t at = m_marks.back();
  m_marks.pop_back();
  m_floor = m_marks.empty() ? 0 : m_marks.back();
  return at;
}

Value* Machine::below(size_t at) {
  if (at == 0 || at <= m_floor) underflow();
  return m_stack[at - 1];
}

void Machine::tooDeep() const {
  error("nesting deeper than " + std::to_string(m_limits.maxDepth));
}

Value* Machine::intFromBytes(const uint8_t* p, uint64_t n) {
  if (n > kMaxBigIntBytes) error("integer of " + std::to_string(n) + " bytes is too large");
  if (n == 0) return makeInt(0);
  const bool negative = (p[n - 1] & 0x80) != 0;
  bool fits = true;
  for (uint64_t i = 8; i < n; ++i)
    if (p[i] != (negative ? 0xFF : 0x00)) fits = false;
  if (n > 8 && fits && bool(p[7] & 0x80) != negative) fits = false;
  if (fits) {
    uint64_t v = negative ? ~uint64_t(0) : 0;
    for (uint64_t i = 0; i < std::min<uint64_t>(n, 8); ++i) {
      v &= ~(uint64_t(0xFF) << (8 * i));
      v |= uint64_t(p[i]) << (8 * i);
    }
    return makeInt(int64_t(v));
  }
  Value* big = make(K::BigInt);
  big->text = m_arena.copy(detail::twosComplementToDecimal(p, n));
  return big;
}

Value* Machine::intFromDecimal(std::string s) {
  // As Python's LONG and INT read it: one trailing 'L' dropped, then int(),
  // which ignores whitespace around the digits (a flipped 'L' that became
  // a form feed still loads in torch).
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  if (!s.empty() && s.back() == 'L') s.pop_back();
  while (!s.empty() && space(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && space(s[i])) ++i;
  s = s.substr(i);
  const bool negative = !s.empty() && (s[0] == '-' || s[0] == '+');
  std::string digits = negative ? s.substr(1) : s;
  if (digits.empty() || digits.size() > 2 * kMaxBigIntBytes ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    error("bad integer literal '" + s.substr(0, 40) + "'");
  const bool minus = negative && s[0] == '-';
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  errno = 0;
  char* end = nullptr;
  const std::string canon = (minus ? "-" : "") + digits;
  const long long v = std::strtoll(canon.c_str(), &end, 10);
  if (errno == 0 && end && *end == '\0') return makeInt(v);
  Value* big = make(K::BigInt);
  big->text = m_arena.copy(canon);
  return big;
}

void Machine::memoPutSlow(uint64_t key, Value* v) {
  if (key < m_memoDense.size()) {
    if (!m_memoDense[key]) ++m_memoCount;
    m_memoDense[key] = v;
    return;
  }
  auto it = m_memoSparse.find(key);
  if (it != m_memoSparse.end()) {
    it->second = v;
    return;
  }
  if (m_memoCount >= m_limits.maxMemo)
    error("memo larger than " + std::to_string(m_limits.maxMemo) + " entries");
  ++m_memoCount;
  if (key == m_memoDense.size()) {
    // The scan's bounds, checked where and as it checks them (memoPut in
    // pickle_scan.cpp): before an entry in order, after one out of it.
    if (m_judge && key >= m_bounds.maxMemo)
      m_judge->bound(m_opStart, "more than " + std::to_string(m_bounds.maxMemo) + " memo entries");
    m_memoDense.push_back(v);
  } else {
    m_memoSparse.emplace(key, v);
    if (m_judge && m_memoSparse.size() > m_bounds.maxSparseMemo)
      m_judge->bound(m_opStart, "more than " + std::to_string(m_bounds.maxSparseMemo) +
                                    " memo entries out of sequence");
  }
}

Value* Machine::memoGetSlow(uint64_t key) {
  Value* v = nullptr;
  if (auto it = m_memoSparse.find(key); it != m_memoSparse.end()) v = it->second;
  if (!v) error("memo key " + std::to_string(key) + " is not defined");
  return v;
}

uint64_t Machine::decimalLine() {
  const std::string s = line();
  if (m_judge && s.size() > 19) m_judge->bound(m_opStart, "a memo index the scan does not follow");
  if (s.empty() || s.size() > 20 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    error("bad memo key '" + s.substr(0, 40) + "'");
  return std::stoull(s);
}

void Machine::setItems(Value* target, Value* const* kv, size_t n) {
  if (n % 2) error("SETITEMS with an odd number of items");
  if (target->kind != K::Dict && target->kind != K::Object)
    error("SETITEM on a " + std::string(kindName(target->kind)));
  m_arena.reserve(target->entries, target->entries.size() + n / 2);
  for (size_t i = 0; i < n; i += 2) {
    adopt(target, kv[i]);
    adopt(target, kv[i + 1]);
    m_arena.append(target->entries, ValuePair{kv[i], kv[i + 1]});
  }
}

void Machine::appendItems(Value* target, Value* const* items, size_t n) {
  ArenaArray<const Value*>* dst = nullptr;
  if (target->kind == K::List)
    dst = &target->items;
  else if (target->kind == K::Object)
    dst = &target->listItems;
  else
    error("APPEND on a " + std::string(kindName(target->kind)));
  m_arena.reserve(*dst, dst->size() + n);
  for (size_t i = 0; i < n; ++i) {
    adopt(target, items[i]);
    m_arena.append(*dst, static_cast<const Value*>(items[i]));
  }
}

Value* Machine::intLine() {
  const std::string s = line();
  if (s == "01" || s == "00") return boolean(s == "01");
  return intFromDecimal(s);
}

Value* Machine::floatLine() {
  const std::string s = line();
  char* end = nullptr;
  Value* f = make(K::Float);
  f->real = std::strtod(s.c_str(), &end);
  if (s.empty() || (end && *end != '\0')) error("bad float literal '" + s.substr(0, 40) + "'");
  return f;
}

Value* Machine::stringLine() {
  const std::string s = line();
  if (s.size() < 2 || (s[0] != '\'' && s[0] != '"') || s.back() != s[0])
    error("bad STRING literal");
  return makeStr(unescape(s.substr(1, s.size() - 2)));
}

Value* Machine::globalLines() {
  const std::string module = line();
  const std::string name = line();
  return global(module, name);
}

std::string Machine::unescape(const std::string& s) {
  std::string bytes;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      bytes += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n':
        bytes += '\n';
        break;
      case 't':
        bytes += '\t';
        break;
      case 'r':
        bytes += '\r';
        break;
      case '0':
        bytes += '\0';
        break;
      case 'x':
        if (i + 2 < s.size() && std::isxdigit(uint8_t(s[i + 1])) &&
            std::isxdigit(uint8_t(s[i + 2]))) {
          bytes += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          error("bad \\x escape in STRING literal");
        }
        break;
      default:
        bytes += c;
    }
  }
  return latin1ToUtf8(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string Machine::rawUnicodeEscape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
      const size_t len = s[i + 1] == 'u' ? 4 : 8;
      if (i + 2 + len <= s.size()) {
        const std::string hex = s.substr(i + 2, len);
        if (std::all_of(hex.begin(), hex.end(),
                        [](char c) { return std::isxdigit(uint8_t(c)) != 0; })) {
          const unsigned long cp = std::stoul(hex, nullptr, 16);
          if (cp > 0x10FFFF) error("bad code point in UNICODE literal");
          utf8::append(out, uint32_t(cp));
          i += 1 + len;
          continue;
        }
      }
    }
    utf8::append(out, uint8_t(s[i]));
  }
  return out;
}

}  // namespace pickle_machine

namespace detail {
namespace {
thread_local PickleWalkHook t_walkHook = nullptr;
thread_local void* t_walkContext = nullptr;
}  // namespace
void setPickleWalkHook(PickleWalkHook hook, void* context) {
  t_walkHook = hook;
  t_walkContext = context;
}
void notePickleWalk(const std::string& record, uint64_t offset) {
  if (t_walkHook) [[unlikely]]
    t_walkHook(record, offset, t_walkContext);
}
}  // namespace detail

void PickleReader::setSafetyJudge(SafetyJudge* judge, const ScanLimits& bounds) {
  m_judge = judge;
  m_judgeBounds = &bounds;
}

PickleReader::PickleReader(ValueArena& arena, std::string what, PickleLimits limits)
    : m_arena(arena), m_what(std::move(what)), m_limits(limits) {}

PickleResult PickleReader::parse(const uint8_t* data, uint64_t size, uint64_t baseOffset) {
  detail::notePickleWalk(m_judge ? m_judge->record() : m_what, baseOffset);
  pickle_machine::Machine machine(m_arena, m_what, m_limits, m_loader, m_table, data, size,
                                  baseOffset, m_borrow);
  if (m_judge) machine.setJudge(m_judge, *m_judgeBounds);
  return machine.run();
}

}  // namespace ckpt
