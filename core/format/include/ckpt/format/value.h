#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace ckpt {

class ValueArena;

// A growable array whose memory lives in a ValueArena: no destructor, no
// per-element allocation. Read it like a vector; grow it through the arena.
template <typename T>
class ArenaArray {
 public:
  [[nodiscard]] const T* begin() const { return m_data; }
  [[nodiscard]] const T* end() const { return m_data + m_size; }
  [[nodiscard]] size_t size() const { return m_size; }
  [[nodiscard]] bool empty() const { return m_size == 0; }
  [[nodiscard]] const T& operator[](size_t i) const { return m_data[i]; }
  [[nodiscard]] const T& front() const { return m_data[0]; }
  [[nodiscard]] const T& back() const { return m_data[m_size - 1]; }

 private:
  friend class ValueArena;
  T* m_data = nullptr;
  uint32_t m_size = 0;
  uint32_t m_capacity = 0;
};

struct Value;
// A dict entry: key and value.
struct ValuePair {
  const Value* first;
  const Value* second;
};

// The value tree a pickle (or a safetensors header) decodes to. Nodes live in
// a ValueArena owned by the file they came from and point at each other with
// plain pointers: pickles can share one node from several places (the memo)
// and even build cycles, so nothing here owns anything (and nothing needs
// destroying: the arena frees its blocks whole). Code that walks the tree
// must tolerate sharing and cycles (see walkTensors, the JSON export).
struct Value {
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,     // fits in int64: `integer`
    BigInt,  // beyond 64 bits: decimal digits in `text`, '-' first when negative
    Float,
    Str,    // UTF-8 in `text`
    Bytes,  // raw bytes in `text`
    List,
    Tuple,
    Set,
    Dict,     // ordered (file order), keys of any kind
    Tensor,   // `index` into CheckpointFile::tensors() once the file is loaded
    Storage,  // `index` into CheckpointFile::storages()
    Global,   // a class or function reference, "module.name" in `text`
    Object,   // anything else: class in `text`, `items` = call arguments, `state`
  };

  Kind kind = Kind::None;
  bool boolean = false;
  // Global: the reader's classification (internal). Object: kMadeByNewObj
  // when NEWOBJ made it (cls.__new__(cls, *args)), 0 when a call did.
  // Dict: kOrderedDict for a collections.OrderedDict.
  uint8_t tag = 0;
  static constexpr uint8_t kMadeByNewObj = 1;
  static constexpr uint8_t kOrderedDict = 2;
  // Deepest nesting below this node as the reader built it (for its limit).
  uint32_t depth = 0;
  // Creation number within its arena (walks mark visited nodes by it).
  uint32_t id = 0;
  // One number, by kind (a node is one kind for life): Int's `integer`,
  // Float's `real`, a Tensor's or Storage's `index` into the file's tables.
  union {
    int64_t integer = 0;
    double real;
    int64_t index;
  };
  std::string_view text;  // arena-owned
  // List / Tuple / Set elements; an Object's constructor arguments.
  ArenaArray<const Value*> items;
  // Dict entries; an Object's dict items (SETITEM on an opaque object).
  ArenaArray<ValuePair> entries;
  // An Object's list items (APPEND on an opaque object).
  ArenaArray<const Value*> listItems;
  // An Object's BUILD state; a Dict's attributes (an OrderedDict's _metadata).
  const Value* state = nullptr;
  // An Object created by calling something that is not a plain global.
  const Value* callee = nullptr;

  [[nodiscard]] bool isNone() const { return kind == Kind::None; }
  [[nodiscard]] bool isStr() const { return kind == Kind::Str; }
  [[nodiscard]] bool isInt() const { return kind == Kind::Int; }
  [[nodiscard]] bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  [[nodiscard]] bool isDict() const { return kind == Kind::Dict; }
  [[nodiscard]] bool isTensor() const { return kind == Kind::Tensor; }
  [[nodiscard]] bool isSequence() const { return kind == Kind::List || kind == Kind::Tuple; }
  [[nodiscard]] double number() const {
    return kind == Kind::Int ? double(integer) : kind == Kind::Float ? real : 0.0;
  }
  [[nodiscard]] std::string str() const { return std::string(text); }

  // Dict lookup by string key (first match, linear); nullptr when absent or
  // when this is not a dict.
  [[nodiscard]] const Value* get(std::string_view key) const;
  // Dict lookup by integer key.
  [[nodiscard]] const Value* get(int64_t key) const;
};

// Bump allocation in large blocks for values, their strings and arrays.
// Everything is freed at once with the arena.
class ValueArena {
 public:
  ValueArena() = default;
  ~ValueArena();
  ValueArena(const ValueArena&) = delete;
  ValueArena& operator=(const ValueArena&) = delete;

  Value* make(Value::Kind kind) {
    static_assert(std::is_trivially_destructible_v<Value>);
    Value* v =
        new (allocate(sizeof(Value), alignof(Value))) Value;  // member initializers only: no memset
    v->kind = kind;
    v->id = uint32_t(m_count++);
    return v;
  }
  [[nodiscard]] size_t size() const { return m_count; }
  // A copy of `s` owned by the arena.
  std::string_view copy(std::string_view s);
  // `n` uninitialised bytes owned by the arena (a buffer the values made
  // from it may view, such as the pickle they are decoded from).
  uint8_t* allocateBytes(size_t n) { return static_cast<uint8_t*>(allocate(n ? n : 1, 1)); }

  template <typename T>
  void append(ArenaArray<T>& a, const T& x) {
    if (a.m_size == a.m_capacity) grow(a, a.m_size + 1);
    a.m_data[a.m_size++] = x;
  }
  template <typename T>
  void assign(ArenaArray<T>& a, const T* data, size_t n) {
    if (n > a.m_capacity) grow(a, n);
    for (size_t i = 0; i < n; ++i) a.m_data[i] = data[i];
    a.m_size = uint32_t(n);
  }
  template <typename T>
  void reserve(ArenaArray<T>& a, size_t n) {
    if (n > a.m_capacity) grow(a, n);
  }
  // Makes the (empty) array hold exactly `n` elements, uninitialised, and
  // returns them for the caller to fill in.
  template <typename T>
  T* initialize(ArenaArray<T>& a, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (n > UINT32_MAX) throw std::length_error("arena array too large");
    a.m_data = n ? static_cast<T*>(allocate(n * sizeof(T), alignof(T))) : nullptr;
    a.m_size = a.m_capacity = uint32_t(n);
    return a.m_data;
  }

 private:
  void* allocate(size_t bytes, size_t align) {
    // align is a power of two
    const size_t pad = size_t(-reinterpret_cast<uintptr_t>(m_cursor)) & (align - 1);
    if (pad + bytes > m_left) return allocateSlow(bytes, align);
    std::byte* p = m_cursor + pad;
    m_cursor += pad + bytes;
    m_left -= pad + bytes;
    return p;
  }
  void* allocateSlow(size_t bytes, size_t align);
  template <typename T>
  void grow(ArenaArray<T>& a, size_t need) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (need > UINT32_MAX) throw std::length_error("arena array too large");
    size_t cap = a.m_capacity ? size_t(a.m_capacity) * 2 : 4;
    if (cap < need) cap = need;
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    T* p = static_cast<T*>(allocate(cap * sizeof(T), alignof(T)));
    for (uint32_t i = 0; i < a.m_size; ++i) p[i] = a.m_data[i];
    a.m_data = p;
    a.m_capacity = uint32_t(cap);
  }

  struct Block {
    std::unique_ptr<std::byte[]> data;
    size_t size;
  };
  std::vector<Block> m_blocks;
  std::byte* m_cursor = nullptr;
  size_t m_left = 0;
  size_t m_count = 0;
};

std::string_view kindName(Value::Kind kind);

// A short Python-like rendering for tables and the CLI: strings quoted,
// containers abbreviated past `maxChars`, tensors as "tensor#3".
std::string shortRepr(const Value* v, size_t maxChars = 120);

// A float as Python prints it: shortest round-trip digits, "1.0", "nan", "inf".
std::string formatPythonFloat(double d);

}  // namespace ckpt
