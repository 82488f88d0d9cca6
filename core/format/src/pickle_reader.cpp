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
#include "numeric.h"
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

namespace {

using K = Value::Kind;

// Opcodes: pickle_opcodes.h.
using namespace pickle_ops;

constexpr size_t kMaxBigIntBytes = 4096;
constexpr size_t kMaxLineBytes = 4096;
constexpr size_t kMaxDims = 64;

std::string latin1ToUtf8(const uint8_t* p, size_t n) {
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) utf8::append(out, p[i]);
  return out;
}

// UTF-8 to latin-1 bytes (what `_codecs.encode(s, 'latin1')` gives);
// false when a code point is above 255 or the UTF-8 is malformed.
bool utf8ToLatin1(std::string_view s, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = uint8_t(s[i]);
    if (c < 0x80) {
      out += char(c);
      ++i;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
      const uint32_t cp = (uint32_t(c & 0x1F) << 6) | (uint8_t(s[i + 1]) & 0x3F);
      if (cp > 0xFF) return false;
      out += char(cp);
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

// The globals the reader interprets, classified once per GLOBAL opcode.
enum class Known : uint8_t {
  Other = 0,
  Dict,
  TorchSize,
  CodecsEncode,
  Set,
  Bytes,
  NumpyScalar,
  Reconstructor,
  NewObj,
  FirstTorch,
  RebuildTensor = FirstTorch,
  RebuildTensorV3,
  RebuildParameter,
  RebuildQTensor,
  RebuildMeta,
  RebuildFromType,
};

Known classify(std::string_view name) {
  struct Row {
    std::string_view name;
    Known known;
  };
  static constexpr Row rows[] = {
      {"collections.OrderedDict", Known::Dict},
      {"builtins.dict", Known::Dict},
      {"__builtin__.dict", Known::Dict},
      {"torch.Size", Known::TorchSize},
      {"_codecs.encode", Known::CodecsEncode},
      {"builtins.set", Known::Set},
      {"__builtin__.set", Known::Set},
      {"builtins.frozenset", Known::Set},
      {"__builtin__.frozenset", Known::Set},
      {"builtins.bytearray", Known::Bytes},
      {"__builtin__.bytearray", Known::Bytes},
      {"builtins.bytes", Known::Bytes},
      {"__builtin__.bytes", Known::Bytes},
      {"numpy.core.multiarray.scalar", Known::NumpyScalar},
      {"numpy._core.multiarray.scalar", Known::NumpyScalar},
      {"copyreg._reconstructor", Known::Reconstructor},
      {"copy_reg._reconstructor", Known::Reconstructor},
      {"copyreg.__newobj__", Known::NewObj},
      {"copy_reg.__newobj__", Known::NewObj},
      {"torch._utils._rebuild_tensor_v2", Known::RebuildTensor},
      {"torch._utils._rebuild_tensor", Known::RebuildTensor},
      {"torch._utils._rebuild_tensor_v3", Known::RebuildTensorV3},
      {"torch._utils._rebuild_parameter", Known::RebuildParameter},
      {"torch._utils._rebuild_parameter_with_state", Known::RebuildParameter},
      {"torch._utils._rebuild_qtensor", Known::RebuildQTensor},
      {"torch._utils._rebuild_meta_tensor_no_storage", Known::RebuildMeta},
      {"torch._tensor._rebuild_from_type_v2", Known::RebuildFromType},
      {"torch._utils._rebuild_from_type_v2", Known::RebuildFromType},
  };
  for (const Row& r : rows)
    if (r.name == name) return r.known;
  return Known::Other;
}

// A growable array of Value pointers for the machine's stack and memo: the
// operations the opcode loop uses are inlined (std::vector's are not, in a
// function this big), and the buffers are reused from one parse to the next
// on the same thread instead of being allocated and grown every time.
class PtrArray {
 public:
  PtrArray() {
    auto& pool = freeBuffers();
    if (!pool.empty()) {
      m_data = pool.back().first;
      m_capacity = pool.back().second;
      pool.pop_back();
    }
  }
  ~PtrArray() {
    if (!m_data) return;
    auto& pool = freeBuffers();
    if (pool.size() < 8 && m_capacity <= kMaxPooled)
      pool.emplace_back(m_data, m_capacity);
    else
      delete[] m_data;
  }
  PtrArray(const PtrArray&) = delete;
  PtrArray& operator=(const PtrArray&) = delete;

  [[gnu::always_inline]] size_t size() const { return m_size; }
  [[gnu::always_inline]] bool empty() const { return m_size == 0; }
  [[gnu::always_inline]] Value** data() { return m_data; }
  [[gnu::always_inline]] Value*& operator[](size_t i) { return m_data[i]; }
  [[gnu::always_inline]] Value* back() const { return m_data[m_size - 1]; }
  [[gnu::always_inline]] void pop_back() { --m_size; }
  [[gnu::always_inline]] void push_back(Value* v) {
    if (m_size == m_capacity) [[unlikely]]
      grow();
    m_data[m_size++] = v;
  }
  // Drops the elements from `at` on (at <= size()).
  [[gnu::always_inline]] void shrinkTo(size_t at) { m_size = at; }

 private:
  static constexpr size_t kMaxPooled = size_t(1) << 20;
  static std::vector<std::pair<Value**, size_t>>& freeBuffers() {
    struct Pool {
      std::vector<std::pair<Value**, size_t>> buffers;
      ~Pool() {
        for (auto& b : buffers) delete[] b.first;
      }
    };
    thread_local Pool pool;
    return pool.buffers;
  }
  [[gnu::noinline]] void grow() {
    const size_t cap = m_capacity ? m_capacity * 2 : 1024;
    auto* p = new Value*[cap];
    if (m_size) std::memcpy(p, m_data, m_size * sizeof(Value*));
    delete[] m_data;
    m_data = p;
    m_capacity = cap;
  }

  Value** m_data = nullptr;
  size_t m_size = 0;
  size_t m_capacity = 0;
};

class Machine {
 public:
  Machine(ValueArena& arena, const std::string& what, const PickleLimits& limits,
          const PersistentLoader& loader, TensorTable* table, const uint8_t* data, uint64_t size,
          uint64_t base, bool borrow)
      : m_arena(arena),
        m_what(what),
        m_limits(limits),
        m_loader(loader),
        m_table(table),
        m_data(data),
        m_size(size),
        m_base(base),
        m_borrow(borrow) {}

  // Threaded dispatch (labels as values, a GCC and Clang extension): each
  // handler ends in its own jump to the next opcode's handler, so every such
  // jump learns what follows its opcode (torch's pickles repeat one opcode
  // pattern per tensor). A handler ends in NEXT(); STOP returns the result.
  // Every opcode in CKPT_PICKLE_OPS has a label L_<name>; the rest are unknown.
  PickleResult run() {
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
    popMark();
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
    push(construct(callable, args));
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
    push(construct(cls, seqFromMark(K::Tuple)));
    NEXT();
  }
  L_OBJ : {
    const size_t at = popMark();
    if (at == m_stack.size()) error("OBJ without a class");
    Value* cls = m_stack[at];
    Value* args = makeSeq(K::Tuple, m_stack.data() + at + 1, m_stack.size() - at - 1);
    m_stack.shrinkTo(at);
    push(construct(cls, args));
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

 private:
  // ---- errors and input -------------------------------------------------
  [[noreturn, gnu::noinline, gnu::cold]] void error(const std::string& msg) const {
    fail(m_what + ": byte " + std::to_string(m_base + m_opStart) + ": " + msg);
  }
  [[noreturn, gnu::noinline, gnu::cold]] void truncated(uint64_t n) const {
    failTruncated(m_what + ": truncated: opcode at byte " + std::to_string(m_base + m_opStart) +
                  " needs " + std::to_string(n) + " bytes, " + std::to_string(m_size - m_pos) +
                  " left");
  }
  [[gnu::always_inline]] void need(uint64_t n) const {
    if (m_size - m_pos < n) [[unlikely]]
      truncated(n);
  }
  [[gnu::always_inline]] uint8_t u8() {
    need(1);
    return m_data[m_pos++];
  }
  [[gnu::always_inline]] uint64_t uintLE(int n) {
    need(uint64_t(n));
    uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
      switch (n) {
        case 2: {
          uint16_t x;
          std::memcpy(&x, m_data + m_pos, 2);
          v = x;
          break;
        }
        case 4: {
          uint32_t x;
          std::memcpy(&x, m_data + m_pos, 4);
          v = x;
          break;
        }
        case 8:
          std::memcpy(&v, m_data + m_pos, 8);
          break;
        default:
          for (int i = 0; i < n; ++i) v |= uint64_t(m_data[m_pos + i]) << (8 * i);
      }
    } else {
      for (int i = 0; i < n; ++i) v |= uint64_t(m_data[m_pos + i]) << (8 * i);
    }
    m_pos += uint64_t(n);
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > m_limits.maxStringBytes)
      error("a string of " + std::to_string(n) + " bytes is over the limit of " +
            std::to_string(m_limits.maxStringBytes));
    need(n);
    const uint8_t* p = m_data + m_pos;
    m_pos += n;
    return p;
  }
  std::string line() {
    const uint64_t start = m_pos;
    while (true) {
      need(1);
      if (m_data[m_pos] == '\n') break;
      if (m_pos - start > kMaxLineBytes)
        error("text line longer than " + std::to_string(kMaxLineBytes) + " bytes");
      ++m_pos;
    }
    std::string s(reinterpret_cast<const char*>(m_data + start), m_pos - start);
    ++m_pos;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    return s;
  }

  // ---- values -----------------------------------------------------------
  [[noreturn, gnu::noinline, gnu::cold]] void tooManyNodes() const {
    error("more than " + std::to_string(m_limits.maxNodes) + " values");
  }
  [[noreturn, gnu::noinline, gnu::cold]] void stackTooDeep() const {
    error("stack deeper than " + std::to_string(m_limits.maxStack));
  }
  [[noreturn, gnu::noinline, gnu::cold]] void underflow() const {
    error("stack underflow");
  }
  [[gnu::always_inline]] Value* make(K kind) {
    if (m_arena.size() >= m_limits.maxNodes) [[unlikely]]
      tooManyNodes();
    return m_arena.make(kind);
  }
  [[gnu::always_inline]] void push(Value* v) {
    if (m_stack.size() + m_marks.size() >= m_limits.maxStack) [[unlikely]]
      stackTooDeep();
    m_stack.push_back(v);
  }
  // m_floor is the topmost mark (0 without one): nothing below it may be
  // popped until the mark is.
  [[gnu::always_inline]] Value* pop() {
    if (m_stack.size() <= m_floor) [[unlikely]]
      underflow();
    Value* v = m_stack.back();
    m_stack.pop_back();
    return v;
  }
  [[gnu::always_inline]] Value* top() {
    if (m_stack.size() <= m_floor) [[unlikely]]
      underflow();
    return m_stack.back();
  }
  void pushMark() {
    if (m_stack.size() + m_marks.size() >= m_limits.maxStack) error("too many MARKs");
    m_marks.push_back(m_stack.size());
    m_floor = m_stack.size();
  }
  // Removes the topmost mark; the items above it are m_stack[at..end), to be
  // dropped with m_stack.shrinkTo(at) once used.
  size_t popMark() {
    if (m_marks.empty()) error("no MARK on the stack");
    const size_t at = m_marks.back();
    m_marks.pop_back();
    m_floor = m_marks.empty() ? 0 : m_marks.back();
    return at;
  }
  // The value just below the items of a popped mark (the list or dict that
  // APPENDS / SETITEMS / ADDITEMS fill).
  Value* below(size_t at) {
    if (at == 0 || at <= m_floor) underflow();
    return m_stack[at - 1];
  }
  void adopt(Value* parent, const Value* child) {
    adoptDepth(parent, child->depth);
  }
  // `parent` now holds a child `childDepth` deep.
  [[gnu::always_inline]] void adoptDepth(Value* parent, uint32_t childDepth) {
    if (childDepth + 1 > parent->depth) {
      parent->depth = childDepth + 1;
      if (parent->depth > m_limits.maxDepth) [[unlikely]]
        tooDeep();
    }
  }
  [[noreturn, gnu::noinline, gnu::cold]] void tooDeep() const {
    error("nesting deeper than " + std::to_string(m_limits.maxDepth));
  }
  // Scalars never change once made, so None, booleans and small ints are
  // shared: most values in a checkpoint pickle are exactly these.
  Value* constant(Value*& slot, K kind, int64_t v) {
    if (!slot) {
      slot = make(kind);
      slot->integer = v;
      slot->boolean = v != 0;
    }
    return slot;
  }
  Value* none() {
    return constant(m_none, K::None, 0);
  }
  Value* boolean(bool b) {
    return constant(b ? m_true : m_false, K::Bool, b);
  }
  Value* makeInt(int64_t v) {
    if (v >= 0 && v < int64_t(kSmallInts)) return constant(m_smallInts[size_t(v)], K::Int, v);
    // Sizes and strides repeat (768, 3072, 50257, ...): the last int seen in
    // each of a few slots is shared too.
    Value*& slot = m_recentInts[(uint64_t(v) * 0x9E3779B97F4A7C15ull) >> (64 - kRecentIntBits)];
    if (slot && slot->integer == v) return slot;
    Value* n = make(K::Int);
    n->integer = v;
    slot = n;
    return n;
  }
  Value* makeStr(std::string_view s) {
    Value* n = make(K::Str);
    n->text = m_arena.copy(s);
    return n;
  }
  // A str or bytes value of text that lies in the pickle as is.
  Value* makeStrIn(std::string_view s, K kind) {
    Value* n = make(kind);
    n->text = m_borrow ? s : m_arena.copy(s);
    return n;
  }
  Value* makeBytes(std::string_view s) {
    Value* n = make(K::Bytes);
    n->text = m_arena.copy(s);
    return n;
  }
  Value* makeSeq(K kind, Value* const* items, size_t count) {
    Value* n = make(kind);
    if (count == 0) return n;
    const Value** out = m_arena.initialize(n->items, count);
    uint32_t deepest = 0;
    for (size_t i = 0; i < count; ++i) {
      out[i] = items[i];
      deepest = std::max(deepest, items[i]->depth);
    }
    adoptDepth(n, deepest);
    return n;
  }
  // A sequence from the items above the topmost mark.
  Value* seqFromMark(K kind) {
    const size_t at = popMark();
    Value* n = makeSeq(kind, m_stack.data() + at, m_stack.size() - at);
    m_stack.shrinkTo(at);
    return n;
  }
  Value* intFromBytes(const uint8_t* p, uint64_t n) {
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
  Value* intFromDecimal(std::string s) {
    while (!s.empty() && (s.back() == 'L' || s.back() == ' ')) s.pop_back();
    size_t i = 0;
    while (i < s.size() && s[i] == ' ') ++i;
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

  // ---- memo -------------------------------------------------------------
  // Keys are normally 0, 1, 2, ...: a vector for those, a map for the rest,
  // and nothing is ever sized from a key read from the file.
  [[gnu::always_inline]] void memoPut(uint64_t key) {
    Value* v = top();
    if (key == m_memoDense.size() && m_memoSparse.empty() && m_memoCount < m_limits.maxMemo)
        [[likely]] {
      // The usual case: keys 0, 1, 2, ... in order.
      ++m_memoCount;
      m_memoDense.push_back(v);
      return;
    }
    memoPutSlow(key, v);
  }
  [[gnu::noinline]] void memoPutSlow(uint64_t key, Value* v) {
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
    if (key == m_memoDense.size())
      m_memoDense.push_back(v);
    else
      m_memoSparse.emplace(key, v);
  }
  [[gnu::always_inline]] void memoGet(uint64_t key) {
    Value* v = key < m_memoDense.size() ? m_memoDense[key] : nullptr;
    if (!v) [[unlikely]]
      v = memoGetSlow(key);
    push(v);
  }
  [[gnu::noinline]] Value* memoGetSlow(uint64_t key) {
    Value* v = nullptr;
    if (auto it = m_memoSparse.find(key); it != m_memoSparse.end()) v = it->second;
    if (!v) error("memo key " + std::to_string(key) + " is not defined");
    return v;
  }
  uint64_t decimalLine() {
    const std::string s = line();
    if (s.empty() || s.size() > 20 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      error("bad memo key '" + s.substr(0, 40) + "'");
    return std::stoull(s);
  }

  // ---- containers -------------------------------------------------------
  void setItems(Value* target, Value* const* kv, size_t n) {
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
  void appendItems(Value* target, Value* const* items, size_t n) {
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

  Value* global(std::string_view module, std::string_view name) {
    if (module.empty() || name.empty() || module.size() > 512 || name.size() > 512)
      error("bad global name '" + std::string(module.substr(0, 64)) + "." +
            std::string(name.substr(0, 64)) + "'");
    for (std::string_view part : {module, name})
      for (char c : part)
        if (uint8_t(c) < 32) error("control character in global name");
    std::string full;
    full.reserve(module.size() + 1 + name.size());
    full.append(module).append(".").append(name);
    Value* g = make(K::Global);
    g->tag = uint8_t(classify(full));
    g->text = m_arena.copy(full);
    return g;
  }

  // ---- calls: REDUCE, NEWOBJ, INST, OBJ ----------------------------------
  const Value* arg(const Value* args, size_t i) const {
    return i < args->items.size() ? args->items[i] : nullptr;
  }

  Value* opaque(const Value* callable, const Value* args) {
    Value* obj = make(K::Object);
    if (callable->kind == K::Global) {
      obj->text = callable->text;
    } else {
      obj->text = "(call)";
      obj->callee = callable;
      adopt(obj, callable);
    }
    for (const Value* a : args->items) adopt(obj, a);
    obj->items = args->items;  // arena arrays are values: share the elements
    return obj;
  }

  Value* construct(Value* callable, Value* args) {
    if (args->kind != K::Tuple)
      error("call arguments are a " + std::string(kindName(args->kind)) + ", not a tuple");
    if (callable->kind != K::Global) return opaque(callable, args);
    const size_t n = args->items.size();
    switch (Known(callable->tag)) {
      case Known::Dict: {
        Value* d = make(K::Dict);
        if (callable->text == "collections.OrderedDict") d->tag = Value::kOrderedDict;
        if (n == 1 && args->items[0]->isSequence()) {
          for (const Value* pair : args->items[0]->items) {
            if (!pair->isSequence() || pair->items.size() != 2) return opaque(callable, args);
            adopt(d, pair);
            m_arena.append(d->entries, ValuePair{pair->items[0], pair->items[1]});
          }
        } else if (n != 0) {
          return opaque(callable, args);
        }
        return d;
      }
      case Known::TorchSize:
        if (n == 1 && args->items[0]->isSequence())
          return makeSeq(K::Tuple, const_cast<Value* const*>(args->items[0]->items.begin()),
                         args->items[0]->items.size());
        break;
      case Known::CodecsEncode:
        if (n == 2 && args->items[0]->isStr() && args->items[1]->isStr()) {
          const std::string_view enc = args->items[1]->text;
          if (enc == "latin1" || enc == "latin-1" || enc == "iso-8859-1" || enc == "ISO-8859-1") {
            std::string bytes;
            if (!utf8ToLatin1(args->items[0]->text, bytes))
              error("_codecs.encode: text is not latin-1");
            return makeBytes(bytes);
          }
          if (enc == "utf-8" || enc == "utf8") return makeBytes(args->items[0]->text);
        }
        break;
      case Known::Set:
        if (n == 0) return make(K::Set);
        if (n == 1 && (args->items[0]->isSequence() || args->items[0]->kind == K::Set))
          return makeSeq(K::Set, const_cast<Value* const*>(args->items[0]->items.begin()),
                         args->items[0]->items.size());
        break;
      case Known::Bytes: {
        if (n == 0) return makeBytes({});
        if (n == 1 && args->items[0]->kind == K::Bytes) return makeBytes(args->items[0]->text);
        std::string bytes;
        if (n == 2 && args->items[0]->isStr() && args->items[1]->isStr() &&
            utf8ToLatin1(args->items[0]->text, bytes))
          return makeBytes(bytes);
        break;
      }
      case Known::NumpyScalar:
        if (n == 2)
          if (Value* v = numpyScalar(args->items[0], args->items[1])) return v;
        break;
      case Known::Reconstructor:
        if (n >= 1 && args->items[0]->kind == K::Global) {
          Value* obj = make(K::Object);
          obj->text = args->items[0]->text;
          return obj;
        }
        break;
      case Known::NewObj:
        if (n >= 1 && args->items[0]->kind == K::Global) {
          Value* obj = make(K::Object);
          obj->text = args->items[0]->text;
          obj->tag = Value::kMadeByNewObj;
          for (size_t i = 1; i < n; ++i) adopt(obj, args->items[i]);
          m_arena.assign(obj->items, args->items.begin() + 1, n - 1);
          return obj;
        }
        break;
      default:
        if (m_table && callable->tag >= uint8_t(Known::FirstTorch))
          if (Value* t = torchCall(Known(callable->tag), callable, args)) return t;
        break;
    }
    return opaque(callable, args);
  }

  // numpy.core.multiarray.scalar(dtype, raw bytes) -> the number.
  Value* numpyScalar(const Value* dtype, const Value* raw) {
    if (dtype->kind != K::Object || dtype->text != "numpy.dtype" || dtype->items.empty() ||
        !dtype->items[0]->isStr() || raw->kind != K::Bytes)
      return nullptr;
    const std::string code(dtype->items[0]->text);  // "f8", "i4", "b1", ...
    if (code.size() < 2) return nullptr;
    const char kind = code[0];
    const int size = std::atoi(code.c_str() + 1);
    if (size <= 0 || size > 8 || size_t(size) != raw->text.size()) return nullptr;
    bool big = false;
    if (dtype->state && dtype->state->kind == K::Tuple && dtype->state->items.size() > 1 &&
        dtype->state->items[1]->isStr())
      big = dtype->state->items[1]->text == ">";
    uint8_t b[8] = {};
    for (int i = 0; i < size; ++i) b[i] = uint8_t(raw->text[size_t(big ? size - 1 - i : i)]);
    uint64_t u = 0;
    std::memcpy(&u, b, 8);
    if (kind == 'f') {
      Value* f = make(K::Float);
      if (size == 8)
        std::memcpy(&f->real, b, 8);
      else if (size == 4)
        f->real = detail::bitsToFloat(uint32_t(u));
      else if (size == 2)
        f->real = detail::halfToFloat(uint16_t(u));
      else
        return nullptr;
      return f;
    }
    if (kind == 'i') return intFromBytes(b, uint64_t(size));
    if (kind == 'u') {
      uint8_t ext[9] = {};
      std::memcpy(ext, b, size_t(size));
      return intFromBytes(ext, uint64_t(size) + 1);  // zero-extended: never negative
    }
    if (kind == 'b' && size == 1) return boolean(b[0] != 0);
    return nullptr;
  }

  // ---- torch rebuild functions -----------------------------------------
  int64_t intArg(const Value* v, const char* what, std::string_view fn) {
    if (!v || v->kind != K::Int) error(std::string(fn) + ": " + what + " is not an integer");
    return v->integer;
  }
  // Fills `out` in place (returning a Dims by value and moving it costs a
  // store-forwarding stall per tensor).
  void dimsArg(const Value* v, const char* what, std::string_view fn, Dims& out) {
    if (!v || !v->isSequence()) error(std::string(fn) + ": " + what + " is not a tuple");
    if (v->items.size() > kMaxDims)
      error(std::string(fn) + ": " + what + " has " + std::to_string(v->items.size()) +
            " dimensions");
    out.clear();
    out.reserve(v->items.size());
    for (const Value* d : v->items) {
      const int64_t x = intArg(d, what, fn);
      if (x < 0) error(std::string(fn) + ": negative " + what + " " + std::to_string(x));
      out.push_back(x);
    }
  }
  bool boolArg(const Value* v) {
    if (!v) return false;
    if (v->kind == K::Bool) return v->boolean;
    if (v->kind == K::Int) return v->integer != 0;
    return false;
  }
  Value* tensorNode(TensorInfo&& info) {
    Value* t = make(K::Tensor);
    t->index = int64_t(m_table->tensors.size());
    m_table->tensors.push_back(std::move(info));
    return t;
  }
  TensorInfo& infoOf(const Value* t) {
    return m_table->tensors[size_t(t->index)];
  }

  // A tensor node for (storage, offset, size, stride, ...): its TensorInfo
  // is filled in place in the table (building it elsewhere and moving it in
  // costs store-forwarding stalls on its inline arrays), and taken out again
  // when an argument is wrong. `more` checks and sets the rest.
  template <typename More>
  Value* stridedTensor(const Value* args, std::string_view fn, More&& more) {
    const Value* st = arg(args, 0);
    if (!st || st->kind != K::Storage) error(std::string(fn) + ": argument 1 is not a storage");
    Value* t = make(K::Tensor);
    t->index = int64_t(m_table->tensors.size());
    TensorInfo& info = m_table->tensors.emplace_back();
    try {
      info.storage = int(st->index);
      info.dtype = m_table->storages[size_t(st->index)].dtype;
      info.storageOffset = intArg(arg(args, 1), "storage offset", fn);
      if (info.storageOffset < 0) error(std::string(fn) + ": negative storage offset");
      dimsArg(arg(args, 2), "size", fn, info.shape);
      dimsArg(arg(args, 3), "stride", fn, info.stride);
      if (info.shape.size() != info.stride.size())
        error(std::string(fn) + ": size has " + std::to_string(info.shape.size()) +
              " dimensions, stride " + std::to_string(info.stride.size()));
      more(info);
    } catch (...) {
      m_table->tensors.pop_back();
      throw;
    }
    return t;
  }

  Value* torchCall(Known fn, const Value* callable, const Value* args) {
    // Only error messages need the name as a std::string.
    const std::string_view fnName = callable->text;
    auto name = [fnName] { return std::string(fnName); };
    const size_t n = args->items.size();
    switch (fn) {
      case Known::RebuildTensor: {
        if (n < 4) error(name() + ": expected at least 4 arguments, got " + std::to_string(n));
        return stridedTensor(args, fnName,
                             [&](TensorInfo& info) { info.requiresGrad = boolArg(arg(args, 4)); });
      }
      case Known::RebuildTensorV3: {
        if (n < 7) error(name() + ": expected at least 7 arguments, got " + std::to_string(n));
        return stridedTensor(args, fnName, [&](TensorInfo& info) {
          info.requiresGrad = boolArg(arg(args, 4));
          const Value* dt = arg(args, 6);
          auto d = dt && dt->kind == K::Global ? dtypeFromTorchName(dt->text) : std::nullopt;
          if (!d) error(name() + ": unknown dtype " + (dt ? shortRepr(dt, 40) : "?"));
          info.dtype = *d;
        });
      }
      case Known::RebuildParameter: {
        const Value* data = arg(args, 0);
        if (!data || data->kind != K::Tensor) error(name() + ": argument 1 is not a tensor");
        TensorInfo& info = infoOf(data);
        info.isParameter = true;
        info.requiresGrad = boolArg(arg(args, 1));
        return const_cast<Value*>(data);
      }
      case Known::RebuildQTensor: {
        if (n < 5) error(name() + ": expected at least 5 arguments, got " + std::to_string(n));
        return stridedTensor(args, fnName, [&](TensorInfo& info) {
          const Value* q = arg(args, 4);
          if (q && q->isSequence() && !q->items.empty()) {
            const Value* scheme = q->items[0];
            if (scheme->kind == K::Global)
              info.qscheme = std::string(scheme->text.substr(scheme->text.rfind('.') + 1));
            else if (scheme->kind == K::Object)
              info.qscheme = std::string(scheme->text);
            if (q->items.size() >= 3 && q->items[1]->isNumber() && q->items[2]->isInt()) {
              info.qscale = q->items[1]->number();
              info.qzeroPoint = q->items[2]->integer;
            }
          }
          info.requiresGrad = boolArg(arg(args, 5));
        });
      }
      case Known::RebuildMeta: {
        if (n < 3) error(name() + ": expected at least 3 arguments, got " + std::to_string(n));
        const Value* dt = arg(args, 0);
        auto d = dt && dt->kind == K::Global ? dtypeFromTorchName(dt->text) : std::nullopt;
        if (!d) error(name() + ": unknown dtype");
        TensorInfo info;
        info.dtype = *d;
        info.isMeta = true;
        dimsArg(arg(args, 1), "size", fnName, info.shape);
        dimsArg(arg(args, 2), "stride", fnName, info.stride);
        if (info.shape.size() != info.stride.size())
          error(name() + ": size and stride differ in length");
        info.requiresGrad = boolArg(arg(args, 3));
        return tensorNode(std::move(info));
      }
      case Known::RebuildFromType: {
        // (func, new_type, args, state): call func(*args), then note the type.
        const Value* func = arg(args, 0);
        const Value* type = arg(args, 1);
        const Value* inner = arg(args, 2);
        if (!func || !inner || func->kind != K::Global || inner->kind != K::Tuple) return nullptr;
        Value* t = construct(const_cast<Value*>(func), const_cast<Value*>(inner));
        if (t->kind == K::Object && func->text == "torch._utils._rebuild_wrapper_subclass" &&
            type && type->kind == K::Global) {
          // A tensor subclass with no storage of its own (ShardedTensor,
          // DTensor): an opaque object of that class, its arguments (cls,
          // dtype, size, stride, storage offset, layout, device,
          // requires_grad) as items and its state (local shards) kept.
          t->text = type->text;
          if (const Value* state = arg(args, 3)) {
            adopt(t, state);
            t->state = state;
          }
          return t;
        }
        if (t->kind == K::Tensor && type && type->kind == K::Global) {
          if (type->text == "torch.nn.parameter.Parameter")
            infoOf(t).isParameter = true;
          else if (type->text != "torch.Tensor")
            infoOf(t).subclass = std::string(type->text);
        }
        return t;
      }
      default:
        return nullptr;
    }
  }

  void build(Value* obj, Value* state) {
    switch (obj->kind) {
      case K::Dict:
      case K::Object:
        adopt(obj, state);
        obj->state = state;
        return;
      case K::Tensor:
        return;  // parameter / subclass state: nothing we show
      default:
        error("BUILD on a " + std::string(kindName(obj->kind)));
    }
  }

  // The text-line opcodes (protocol 0), out of run(): see NEXT().
  Value* intLine() {
    const std::string s = line();
    if (s == "01" || s == "00") return boolean(s == "01");
    return intFromDecimal(s);
  }
  Value* floatLine() {
    const std::string s = line();
    char* end = nullptr;
    Value* f = make(K::Float);
    f->real = std::strtod(s.c_str(), &end);
    if (s.empty() || (end && *end != '\0')) error("bad float literal '" + s.substr(0, 40) + "'");
    return f;
  }
  Value* stringLine() {
    const std::string s = line();
    if (s.size() < 2 || (s[0] != '\'' && s[0] != '"') || s.back() != s[0])
      error("bad STRING literal");
    return makeStr(unescape(s.substr(1, s.size() - 2)));
  }
  // GLOBAL and INST: "module\nname\n".
  Value* globalLines() {
    const std::string module = line();
    const std::string name = line();
    return global(module, name);
  }

  // Python 2 STRING literal: backslash escapes, latin-1 bytes.
  std::string unescape(const std::string& s) {
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

  // UNICODE: raw-unicode-escape (latin-1 with \uXXXX and \UXXXXXXXX).
  std::string rawUnicodeEscape(const std::string& s) {
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

  ValueArena& m_arena;
  const std::string& m_what;
  const PickleLimits& m_limits;
  const PersistentLoader& m_loader;
  TensorTable* m_table;
  const uint8_t* m_data;
  uint64_t m_size;
  uint64_t m_base;
  bool m_borrow;  // m_data outlives the arena: view it instead of copying
  uint64_t m_pos = 0;
  uint64_t m_opStart = 0;
  PtrArray m_stack;
  std::vector<size_t> m_marks;
  size_t m_floor = 0;  // m_marks.back(), 0 without a mark
  PtrArray m_memoDense;
  std::unordered_map<uint64_t, Value*> m_memoSparse;
  uint64_t m_memoCount = 0;
  Value* m_none = nullptr;
  Value* m_true = nullptr;
  Value* m_false = nullptr;
  Value* m_emptyTuple = nullptr;  // immutable, so shared
  static constexpr size_t kSmallInts = 256;
  Value* m_smallInts[kSmallInts] = {};
  static constexpr int kRecentIntBits = 6;
  Value* m_recentInts[size_t(1) << kRecentIntBits] = {};
};

}  // namespace

PickleReader::PickleReader(ValueArena& arena, std::string what, PickleLimits limits)
    : m_arena(arena), m_what(std::move(what)), m_limits(limits) {}

PickleResult PickleReader::parse(const uint8_t* data, uint64_t size, uint64_t baseOffset) {
  Machine machine(m_arena, m_what, m_limits, m_loader, m_table, data, size, baseOffset, m_borrow);
  return machine.run();
}

}  // namespace ckpt
