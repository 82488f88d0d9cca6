#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ckpt/format/dtype.h"

namespace ckpt {

// A tensor's sizes or strides: a vector of int64 that keeps up to kInline
// dimensions in place (every tensor a checkpoint normally holds), so a tensor
// table costs no allocation per tensor. Reads like a std::vector<int64_t>,
// compares equal to one and converts to one.
class Dims {
 public:
  using value_type = int64_t;
  using size_type = size_t;
  using difference_type = ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using pointer = int64_t*;
  using const_pointer = const int64_t*;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  static constexpr size_t kInline = 6;

  Dims() noexcept {}
  Dims(std::initializer_list<int64_t> v) { assign(v.begin(), v.size()); }
  Dims(const std::vector<int64_t>& v) {
    assign(v.data(), v.size());
  }  // NOLINT: implicit on purpose
  explicit Dims(size_t n, int64_t value = 0) { resize(n, value); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  Dims(It first, It last) {
    for (; first != last; ++first) push_back(int64_t(*first));
  }
  Dims(const Dims& o) { assign(o.data(), o.m_size); }
  Dims(Dims&& o) noexcept { take(o); }
  Dims& operator=(const Dims& o) {
    if (this != &o) assign(o.data(), o.m_size);
    return *this;
  }
  Dims& operator=(Dims&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  Dims& operator=(std::initializer_list<int64_t> v) {
    assign(v.begin(), v.size());
    return *this;
  }
  ~Dims() { release(); }

  [[nodiscard]] size_t size() const { return m_size; }
  [[nodiscard]] bool empty() const { return m_size == 0; }
  [[nodiscard]] size_t capacity() const { return m_capacity ? m_capacity : kInline; }
  [[nodiscard]] int64_t* data() { return m_capacity ? m_heap : m_inline; }
  [[nodiscard]] const int64_t* data() const { return m_capacity ? m_heap : m_inline; }
  [[nodiscard]] int64_t* begin() { return data(); }
  [[nodiscard]] int64_t* end() { return data() + m_size; }
  [[nodiscard]] const int64_t* begin() const { return data(); }
  [[nodiscard]] const int64_t* end() const { return data() + m_size; }
  [[nodiscard]] const int64_t* cbegin() const { return data(); }
  [[nodiscard]] const int64_t* cend() const { return data() + m_size; }
  [[nodiscard]] int64_t& operator[](size_t i) { return data()[i]; }
  [[nodiscard]] const int64_t& operator[](size_t i) const { return data()[i]; }
  [[nodiscard]] int64_t& at(size_t i) {
    if (i >= m_size) throw std::out_of_range("Dims::at");
    return data()[i];
  }
  [[nodiscard]] const int64_t& at(size_t i) const {
    if (i >= m_size) throw std::out_of_range("Dims::at");
    return data()[i];
  }
  [[nodiscard]] int64_t& front() { return data()[0]; }
  [[nodiscard]] const int64_t& front() const { return data()[0]; }
  [[nodiscard]] int64_t& back() { return data()[m_size - 1]; }
  [[nodiscard]] const int64_t& back() const { return data()[m_size - 1]; }

  void reserve(size_t n) {
    if (n > capacity()) grow(n);
  }
  void push_back(int64_t x) {
    if (m_size == capacity()) grow(size_t(m_size) * 2);
    data()[m_size++] = x;
  }
  void pop_back() { --m_size; }
  void clear() { m_size = 0; }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    for (size_t i = m_size; i < n; ++i) data()[i] = value;
    m_size = uint32_t(n);
  }
  void assign(const int64_t* p, size_t n) {
    reserve(n);
    if (n) std::memmove(data(), p, n * sizeof(int64_t));
    m_size = uint32_t(n);
  }

  [[nodiscard]] std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  operator std::vector<int64_t>() const { return vec(); }  // NOLINT: implicit on purpose

  friend bool operator==(const Dims& a, const Dims& b) { return equal(a, b.data(), b.size()); }
  friend bool operator==(const Dims& a, const std::vector<int64_t>& b) {
    return equal(a, b.data(), b.size());
  }
  friend bool operator<(const Dims& a, const Dims& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static bool equal(const Dims& a, const int64_t* b, size_t n) {
    return a.m_size == n && (n == 0 || std::memcmp(a.data(), b, n * sizeof(int64_t)) == 0);
  }
  void grow(size_t want) {
    if (want > UINT32_MAX) throw std::length_error("Dims: too many dimensions");
    const size_t cap = std::max<size_t>(want, kInline * 2);
    auto* p = new int64_t[cap];
    if (m_size) std::memcpy(p, data(), m_size * sizeof(int64_t));
    release();
    m_heap = p;
    m_capacity = uint32_t(cap);
  }
  void release() {
    if (m_capacity) delete[] m_heap;
    m_capacity = 0;
  }
  // Leaves `o` empty; this must hold no heap block.
  void take(Dims& o) noexcept {
    m_size = o.m_size;
    m_capacity = o.m_capacity;
    // The whole inline block, used or not: a fixed-size copy is a few moves.
    // (GCC sees the unused part as maybe uninitialized when `o` is a fresh
    // Dims: that part is never read.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
    std::memcpy(m_inline, o.m_inline, sizeof m_inline);
#pragma GCC diagnostic pop
    o.m_size = 0;
    o.m_capacity = 0;
  }

  uint32_t m_size = 0;
  uint32_t m_capacity = 0;  // 0: the elements are inline
  union {
    int64_t m_inline[kInline];
    int64_t* m_heap;
  };
};

// One step of a path from the root of the value tree: a string key, or an
// integer key / list index.
using PathElement = std::variant<std::string, int64_t>;

// Where a tensor sits in the value tree: its path elements from the root.
// It keeps the dotted name ("model_state.blocks.0.attn.q_proj.weight") as
// one piece of text, and each element as a span of it, in place up to
// kInlineText bytes and kInlineElements elements (every name a checkpoint
// normally holds): a tensor table costs no allocation per path, and the name
// a table shows is there without being assembled. Elements read as
// PathElement values; integer elements print as their decimal digits.
class TensorPath {
 public:
  static constexpr size_t kInlineText = 64;
  static constexpr size_t kInlineElements = 4;

  TensorPath() noexcept {}
  TensorPath(std::initializer_list<PathElement> v) {
    for (const PathElement& e : v) push_back(e);
  }
  TensorPath(const std::vector<PathElement>& v) {  // NOLINT: implicit on purpose
    for (const PathElement& e : v) push_back(e);
  }
  TensorPath(const TensorPath& o) { copyFrom(o); }
  TensorPath(TensorPath&& o) noexcept { take(o); }
  TensorPath& operator=(const TensorPath& o) {
    if (this != &o) {
      clear();
      copyFrom(o);
    }
    return *this;
  }
  TensorPath& operator=(TensorPath&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~TensorPath() { release(); }

  [[nodiscard]] size_t size() const { return m_size; }
  [[nodiscard]] bool empty() const { return m_size == 0; }
  // The elements joined with '.' (a '.' goes before an element only when
  // something precedes it, so leading empty keys leave no dot).
  [[nodiscard]] std::string_view name() const { return {text(), m_textSize}; }
  [[nodiscard]] bool isIndex(size_t i) const { return elements()[i].index; }
  // Element i's text: the key, or an index's decimal digits.
  [[nodiscard]] std::string_view key(size_t i) const {
    const Element& e = elements()[i];
    return {text() + e.offset, e.length};
  }
  [[nodiscard]] int64_t index(size_t i) const;  // isIndex(i) must hold
  [[nodiscard]] PathElement operator[](size_t i) const {
    if (isIndex(i)) return index(i);
    return std::string(key(i));
  }
  [[nodiscard]] PathElement at(size_t i) const {
    if (i >= m_size) throw std::out_of_range("TensorPath::at");
    return (*this)[i];
  }
  [[nodiscard]] PathElement front() const { return (*this)[0]; }
  [[nodiscard]] PathElement back() const { return (*this)[m_size - 1]; }

  void pushKey(std::string_view key) { append(key.data(), key.size(), false); }
  void pushIndex(int64_t index);
  void push_back(const PathElement& x) {
    if (const auto* s = std::get_if<std::string>(&x))
      pushKey(*s);
    else
      pushIndex(std::get<int64_t>(x));
  }
  void pop_back() {
    const Element& e = elements()[--m_size];
    m_textSize = e.offset ? e.offset - 1 : 0;  // the '.' before it, if any, goes too
  }
  void clear() { m_size = m_textSize = 0; }

  [[nodiscard]] std::vector<PathElement> vec() const;
  operator std::vector<PathElement>() const { return vec(); }  // NOLINT: implicit on purpose

  friend bool operator==(const TensorPath& a, const TensorPath& b);

 private:
  struct Element {
    uint32_t offset;  // into the text
    uint32_t length : 31;
    uint32_t index : 1;  // an integer key / list index
  };
  [[nodiscard]] const char* text() const { return m_heapText ? m_heapText : m_inlineText; }
  [[nodiscard]] const Element* elements() const {
    return m_heapElements ? m_heapElements : m_inlineElements;
  }
  void append(const char* p, size_t n, bool isIndex) {
    const size_t sep = m_textSize ? 1 : 0;
    const size_t need = size_t(m_textSize) + sep + n;
    if (need > (m_heapText ? m_textCapacity : kInlineText) || n >= (size_t(1) << 31) ||
        m_size == (m_heapElements ? m_elementCapacity : kInlineElements)) [[unlikely]] {
      appendGrowing(p, n, isIndex);
      return;
    }
    char* t = m_heapText ? m_heapText : m_inlineText;
    if (sep) t[m_textSize] = '.';
    if (n) std::memcpy(t + m_textSize + sep, p, n);
    Element* e = m_heapElements ? m_heapElements : m_inlineElements;
    e[m_size++] = Element{uint32_t(m_textSize + sep), uint32_t(n), isIndex ? 1u : 0u};
    m_textSize = uint32_t(need);
  }
  void appendGrowing(const char* p, size_t n, bool isIndex);
  void growText(size_t need);
  void growElements(size_t need);  // room for at least `need` elements
  void copyFrom(const TensorPath& o);
  void take(TensorPath& o) noexcept;
  void release() noexcept;

  char* m_heapText = nullptr;         // null: the text is inline
  Element* m_heapElements = nullptr;  // null: the elements are inline
  uint32_t m_textSize = 0;
  uint32_t m_textCapacity = 0;  // of the heap text
  uint32_t m_size = 0;
  uint32_t m_elementCapacity = 0;  // of the heap elements
  char m_inlineText[kInlineText];
  Element m_inlineElements[kInlineElements];
};

// "model_state.blocks.0.attn.q_proj.weight"; integer steps print as numbers.
// From element `from` on, as if the path began there.
std::string joinPath(const TensorPath& path, size_t from = 0);

// A storage record: the bytes that one or more tensors view.
struct StorageInfo {
  // Provided, so that a new entry in a table (emplace_back()) gets its
  // member initializers only, not a memset of the whole struct first.
  StorageInfo() noexcept {}
  std::string key;             // "0", "1", ... as in the file
  DType dtype = DType::UInt8;  // element type of the storage class
  uint64_t numel = 0;          // elements of `dtype` the file claims
  std::string location;        // "cpu", "cuda:0", ...
  int64_t zipEntry = -1;       // index into the zip's entries once found
  std::string record;  // the zip record name, set only when it is missing or short (for messages)
  uint64_t dataOffset = 0;  // absolute byte offset, when known (legacy, safetensors)
  bool dataOffsetKnown = false;
  int useCount = 0;   // tensors viewing it
  std::string error;  // why its bytes cannot be read, "" when fine

  [[nodiscard]] uint64_t nbytes() const;
};

// A lazy tensor: everything the pickle says about it, no element bytes.
struct TensorInfo {
  // Provided, as StorageInfo's: no memset of ~400 bytes per tensor first.
  TensorInfo() noexcept {}
  TensorPath path;  // first place in the tree where it occurs
  DType dtype = DType::Float32;
  Dims shape;
  Dims stride;                // in elements
  int64_t storageOffset = 0;  // in elements of `dtype`
  int storage = -1;           // index into storages(); -1 for meta tensors
  bool requiresGrad = false;
  bool isParameter = false;
  bool isMeta = false;
  std::string subclass;  // tensor subclass named by _rebuild_from_type_v2
  std::string qscheme;   // quantized tensors: "per_tensor_affine", ...
  double qscale = 0.0;   // per-tensor quantisation
  int64_t qzeroPoint = 0;
  std::string error;  // why its bytes cannot be read ("" when the extent is fine)

  // Its dotted name, as joinPath(path) gives it.
  [[nodiscard]] std::string_view name() const { return path.name(); }
  [[nodiscard]] uint64_t numel() const;
  [[nodiscard]] uint64_t nbytes() const;  // numel x element size
  [[nodiscard]] bool isContiguous() const;
  [[nodiscard]] std::string shapeString() const;  // "[768, 3072]"
};

// What a reader builds while decoding: tensors in the order the pickle
// creates them, and the storages they view.
struct TensorTable {
  std::vector<TensorInfo> tensors;
  std::vector<StorageInfo> storages;
};

// A CPU storage keyed "<index>" holding exactly `t`'s elements, for a tensor
// that has one of its own (written contiguous, or made from chunks).
StorageInfo storageOf(const TensorInfo& t, size_t index);

// Contiguous (row-major) strides for a shape.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape);

}  // namespace ckpt
