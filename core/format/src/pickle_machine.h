// The pickle machine's internals, shared by its two halves:
//   pickle_reader.cpp  the opcode machine: stack, marks, memo, containers,
//                      literals (what any pickle means);
//   pickle_torch.cpp   calls (REDUCE, NEWOBJ, INST, OBJ) given a meaning:
//                      dicts, sets, bytes, numpy scalars and torch's tensor
//                      rebuild functions (what a checkpoint's pickle means).
// Not a public header: only those two files include it. The small members
// the opcode loop runs for every value are defined here so that both halves
// inline them.
#pragma once

#include <bit>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "byte_cursor.h"
#include "ckpt/format/pickle_reader.h"
#include "safety_judge.h"

namespace ckpt::pickle_machine {

using K = Value::Kind;

constexpr size_t kMaxBigIntBytes = 4096;
constexpr size_t kMaxLineBytes = 4096;
constexpr size_t kMaxDims = 64;

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

// The Known row of a global's full name ("module.name"), Other for the rest.
Known classify(std::string_view name);

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

class Machine : ByteCursor<Machine> {
 public:
  Machine(ValueArena& arena, const std::string& what, const PickleLimits& limits,
          const PersistentLoader& loader, TensorTable* table, const uint8_t* data, uint64_t size,
          uint64_t base, bool borrow)
      : ByteCursor(data, size),
        m_arena(arena),
        m_what(what),
        m_limits(limits),
        m_loader(loader),
        m_table(table),
        m_base(base),
        m_borrow(borrow) {}

  // Threaded dispatch (labels as values, a GCC and Clang extension): each
  // handler ends in its own jump to the next opcode's handler, so every such
  // jump learns what follows its opcode (torch's pickles repeat one opcode
  // pattern per tensor). A handler ends in NEXT(); STOP returns the result.
  // Every opcode in CKPT_PICKLE_OPS has a label L_<name>; the rest are unknown.
  PickleResult run();

  // Judge the walk's globals and calls as the safety scan does
  // (safety_judge.h): one walk gives the tree and the verdict.
  void setJudge(SafetyJudge* judge, const ScanLimits& bounds);

 private:
  friend class ByteCursor<Machine>;  // need, u8, uintLE, textLine (byte_cursor.h)

  // ---- errors and input -------------------------------------------------
  [[noreturn, gnu::noinline, gnu::cold]] void error(const std::string& msg) const;
  [[noreturn, gnu::noinline, gnu::cold]] void truncated(uint64_t n) const;
  const uint8_t* take(uint64_t n) {
    if (n > m_limits.maxStringBytes)
      error("a string of " + std::to_string(n) + " bytes is over the limit of " +
            std::to_string(m_limits.maxStringBytes));
    return bytes(n);
  }
  std::string line();

  // ---- values -----------------------------------------------------------
  [[noreturn, gnu::noinline, gnu::cold]] void tooManyNodes() const;
  // Past m_stackCap: the reader's limit (an error), or first the safety
  // scan's bound (the judge notes it and the walk goes on).
  [[gnu::noinline, gnu::cold]] void stackTooDeep();
  [[noreturn, gnu::noinline, gnu::cold]] void underflow() const;
  [[gnu::always_inline]] Value* make(K kind) {
    if (m_arena.size() >= m_limits.maxNodes) [[unlikely]]
      tooManyNodes();
    return m_arena.make(kind);
  }
  [[gnu::always_inline]] void push(Value* v) {
    if (m_stack.size() + m_marks.size() >= m_stackCap) [[unlikely]]
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
  void pushMark();
  // Removes the topmost mark; the items above it are m_stack[at..end), to be
  // dropped with m_stack.shrinkTo(at) once used.
  size_t popMark();
  // The value just below the items of a popped mark (the list or dict that
  // APPENDS / SETITEMS / ADDITEMS fill).
  Value* below(size_t at);
  void adopt(Value* parent, const Value* child) { adoptDepth(parent, child->depth); }
  // `parent` now holds a child `childDepth` deep.
  [[gnu::always_inline]] void adoptDepth(Value* parent, uint32_t childDepth) {
    if (childDepth + 1 > parent->depth) {
      parent->depth = childDepth + 1;
      if (parent->depth > m_limits.maxDepth) [[unlikely]]
        tooDeep();
    }
  }
  [[noreturn, gnu::noinline, gnu::cold]] void tooDeep() const;
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
  Value* none() { return constant(m_none, K::None, 0); }
  Value* boolean(bool b) { return constant(b ? m_true : m_false, K::Bool, b); }
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
  Value* intFromBytes(const uint8_t* p, uint64_t n);
  Value* intFromDecimal(std::string s);

  // ---- memo -------------------------------------------------------------
  // Keys are normally 0, 1, 2, ...: a vector for those, a map for the rest,
  // and nothing is ever sized from a key read from the file.
  [[gnu::always_inline]] void memoPut(uint64_t key) {
    Value* v = top();
    if (key == m_memoDense.size() && m_memoSparse.empty() && m_memoCount < m_memoFastCap)
        [[likely]] {
      // The usual case: keys 0, 1, 2, ... in order.
      ++m_memoCount;
      m_memoDense.push_back(v);
      return;
    }
    memoPutSlow(key, v);
  }
  [[gnu::noinline]] void memoPutSlow(uint64_t key, Value* v);
  [[gnu::always_inline]] void memoGet(uint64_t key) {
    Value* v = key < m_memoDense.size() ? m_memoDense[key] : nullptr;
    if (!v) [[unlikely]]
      v = memoGetSlow(key);
    push(v);
  }
  [[gnu::noinline]] Value* memoGetSlow(uint64_t key);
  uint64_t decimalLine();

  // ---- containers -------------------------------------------------------
  void setItems(Value* target, Value* const* kv, size_t n);
  void appendItems(Value* target, Value* const* items, size_t n);

  Value* global(std::string_view module, std::string_view name);

  // ---- the safety judge's view (only with one: m_judge) -----------------
  // What the scan's walk would hold for `v`: a symbol (a global, or what a
  // getattr reached), or the module an __import__ returned.
  [[nodiscard]] SafetyJudge::Target judged(const Value* v) const;
  // REDUCE / INST / OBJ of `callable` with `args`, which made `result`.
  void judgeCall(const Value* callable, const Value* args, const Value* result, const char* how);
  // After the walk: bounds of the scan's own the tree went past.
  void judgeBounds();

  // ---- calls: REDUCE, NEWOBJ, INST, OBJ ----------------------------------
  const Value* arg(const Value* args, size_t i) const {
    return i < args->items.size() ? args->items[i] : nullptr;
  }

  Value* opaque(const Value* callable, const Value* args);

  Value* construct(Value* callable, Value* args);

  // numpy.core.multiarray.scalar(dtype, raw bytes) -> the number.
  Value* numpyScalar(const Value* dtype, const Value* raw);

  // ---- torch rebuild functions -----------------------------------------
  int64_t intArg(const Value* v, const char* what, std::string_view fn);
  // Fills `out` in place (returning a Dims by value and moving it costs a
  // store-forwarding stall per tensor).
  void dimsArg(const Value* v, const char* what, std::string_view fn, Dims& out);
  bool boolArg(const Value* v);
  Value* tensorNode(TensorInfo&& info);
  TensorInfo& infoOf(const Value* t);

  // A tensor node for (storage, offset, size, stride, ...): its TensorInfo
  // is filled in place in the table (building it elsewhere and moving it in
  // costs store-forwarding stalls on its inline arrays), and taken out again
  // when an argument is wrong. `more` checks and sets the rest.
  template <typename More>
  Value* stridedTensor(const Value* args, std::string_view fn, More&& more);

  Value* torchCall(Known fn, const Value* callable, const Value* args);

  void build(Value* obj, Value* state);

  // The text-line opcodes (protocol 0), out of run(): see NEXT().
  Value* intLine();
  Value* floatLine();
  Value* stringLine();
  // GLOBAL and INST: "module\nname\n".
  Value* globalLines();

  // Python 2 STRING literal: backslash escapes, latin-1 bytes.
  std::string unescape(const std::string& s);

  // UNICODE: raw-unicode-escape (latin-1 with \uXXXX and \UXXXXXXXX).
  std::string rawUnicodeEscape(const std::string& s);

  ValueArena& m_arena;
  const std::string& m_what;
  const PickleLimits& m_limits;
  const PersistentLoader& m_loader;
  TensorTable* m_table;
  uint64_t m_base;
  bool m_borrow;  // m_data outlives the arena: view it instead of copying
  uint64_t m_opStart = 0;
  PtrArray m_stack;
  std::vector<size_t> m_marks;
  size_t m_floor = 0;  // m_marks.back(), 0 without a mark
  PtrArray m_memoDense;
  std::unordered_map<uint64_t, Value*> m_memoSparse;
  uint64_t m_memoCount = 0;
  uint64_t m_stackCap = m_limits.maxStack;  // see stackTooDeep()
  // Memo entries in order that take memoPut's fast path: the reader's limit,
  // or with a judge the scan's bound (memoPutSlow notes it where the scan
  // stops).
  uint64_t m_memoFastCap = m_limits.maxMemo;
  SafetyJudge* m_judge = nullptr;
  ScanLimits m_bounds;
  uint64_t m_nodesBefore = 0;  // values in the arena when the walk began
  // getattr results and imported modules, by the value the call made.
  std::unordered_map<const Value*, SafetyJudge::Target> m_judgedValues;
  // Tuples a call made (torch.Size): the scan's walk sees no tuple there.
  std::unordered_set<const Value*> m_madeByCall;
  Value* m_none = nullptr;
  Value* m_true = nullptr;
  Value* m_false = nullptr;
  Value* m_emptyTuple = nullptr;  // immutable, so shared
  static constexpr size_t kSmallInts = 256;
  Value* m_smallInts[kSmallInts] = {};
  static constexpr int kRecentIntBits = 6;
  Value* m_recentInts[size_t(1) << kRecentIntBits] = {};
};

}  // namespace ckpt::pickle_machine
