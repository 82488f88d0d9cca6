#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
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
  Dims(const std::vector<int64_t>& v) { assign(v.data(), v.size()); }  // NOLINT: implicit on purpose
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
  friend bool operator==(const Dims& a, const std::vector<int64_t>& b) { return equal(a, b.data(), b.size()); }
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
    std::memcpy(m_inline, o.m_inline, sizeof m_inline);
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

// Where a tensor sits in the value tree: its path elements from the root. A
// vector of PathElement that keeps up to kInline of them in place (a state
// dict entry takes 2, an optimizer moment 4), so a tensor table costs no
// allocation per path. Reads like a std::vector<PathElement> and converts
// to and from one.
class TensorPath {
 public:
  using value_type = PathElement;
  using size_type = size_t;
  using difference_type = ptrdiff_t;
  using reference = PathElement&;
  using const_reference = const PathElement&;
  using pointer = PathElement*;
  using const_pointer = const PathElement*;
  using iterator = PathElement*;
  using const_iterator = const PathElement*;
  static constexpr size_t kInline = 4;

  TensorPath() noexcept {}
  TensorPath(std::initializer_list<PathElement> v) { append(v.begin(), v.size()); }
  TensorPath(const std::vector<PathElement>& v) { append(v.data(), v.size()); }  // NOLINT: implicit on purpose
  TensorPath(const TensorPath& o) { append(o.data(), o.m_size); }
  TensorPath(TensorPath&& o) noexcept { take(o); }
  TensorPath& operator=(const TensorPath& o) {
    if (this != &o) {
      clear();
      append(o.data(), o.m_size);
    }
    return *this;
  }
  TensorPath& operator=(TensorPath&& o) noexcept {
    if (this != &o) {
      clear();
      release();
      take(o);
    }
    return *this;
  }
  ~TensorPath() {
    clear();
    release();
  }

  [[nodiscard]] size_t size() const { return m_size; }
  [[nodiscard]] bool empty() const { return m_size == 0; }
  [[nodiscard]] size_t capacity() const { return m_heap ? m_capacity : kInline; }
  [[nodiscard]] PathElement* data() { return m_heap ? m_heap : inlineData(); }
  [[nodiscard]] const PathElement* data() const { return m_heap ? m_heap : inlineData(); }
  [[nodiscard]] PathElement* begin() { return data(); }
  [[nodiscard]] PathElement* end() { return data() + m_size; }
  [[nodiscard]] const PathElement* begin() const { return data(); }
  [[nodiscard]] const PathElement* end() const { return data() + m_size; }
  [[nodiscard]] const PathElement* cbegin() const { return data(); }
  [[nodiscard]] const PathElement* cend() const { return data() + m_size; }
  [[nodiscard]] PathElement& operator[](size_t i) { return data()[i]; }
  [[nodiscard]] const PathElement& operator[](size_t i) const { return data()[i]; }
  [[nodiscard]] PathElement& at(size_t i) {
    if (i >= m_size) throw std::out_of_range("TensorPath::at");
    return data()[i];
  }
  [[nodiscard]] const PathElement& at(size_t i) const {
    if (i >= m_size) throw std::out_of_range("TensorPath::at");
    return data()[i];
  }
  [[nodiscard]] PathElement& front() { return data()[0]; }
  [[nodiscard]] const PathElement& front() const { return data()[0]; }
  [[nodiscard]] PathElement& back() { return data()[m_size - 1]; }
  [[nodiscard]] const PathElement& back() const { return data()[m_size - 1]; }

  void reserve(size_t n) {
    if (n > capacity()) grow(n);
  }
  template <typename... Args>
  PathElement& emplace_back(Args&&... args) {
    if (m_size == capacity()) {
      // Made first: the arguments may refer to an element that growing moves.
      PathElement x(std::forward<Args>(args)...);
      grow(m_size * 2);
      return *new (data() + m_size++) PathElement(std::move(x));
    }
    return *new (data() + m_size++) PathElement(std::forward<Args>(args)...);
  }
  void push_back(const PathElement& x) { emplace_back(x); }
  void push_back(PathElement&& x) { emplace_back(std::move(x)); }
  void pop_back() { data()[--m_size].~PathElement(); }
  void clear() {
    PathElement* d = data();
    for (size_t i = 0; i < m_size; ++i) d[i].~PathElement();
    m_size = 0;
  }

  [[nodiscard]] std::vector<PathElement> vec() const { return std::vector<PathElement>(begin(), end()); }
  operator std::vector<PathElement>() const { return vec(); }  // NOLINT: implicit on purpose

  friend bool operator==(const TensorPath& a, const TensorPath& b) { return equal(a, b.data(), b.size()); }
  friend bool operator==(const TensorPath& a, const std::vector<PathElement>& b) { return equal(a, b.data(), b.size()); }

 private:
  static bool equal(const TensorPath& a, const PathElement* b, size_t n) {
    if (a.m_size != n) return false;
    for (size_t i = 0; i < n; ++i)
      if (!(a.data()[i] == b[i])) return false;
    return true;
  }
  PathElement* inlineData() { return reinterpret_cast<PathElement*>(m_inline); }
  const PathElement* inlineData() const { return reinterpret_cast<const PathElement*>(m_inline); }
  void append(const PathElement* p, size_t n) {
    reserve(m_size + n);
    for (size_t i = 0; i < n; ++i) emplace_back(p[i]);
  }
  void grow(size_t want) {
    const size_t cap = std::max(want, kInline * 2);
    auto* p = static_cast<PathElement*>(::operator new(cap * sizeof(PathElement)));
    PathElement* old = data();
    for (size_t i = 0; i < m_size; ++i) {
      new (p + i) PathElement(std::move(old[i]));
      old[i].~PathElement();
    }
    release();
    m_heap = p;
    m_capacity = cap;
  }
  // Frees the heap block (its elements are destroyed already).
  void release() {
    if (m_heap) ::operator delete(m_heap);
    m_heap = nullptr;
    m_capacity = 0;
  }
  // Takes o's elements (moving inline ones over); o ends up empty. This holds
  // no elements and no heap block.
  void take(TensorPath& o) noexcept {
    if (o.m_heap) {
      m_heap = o.m_heap;
      m_capacity = o.m_capacity;
      m_size = o.m_size;
      o.m_heap = nullptr;
      o.m_capacity = 0;
      o.m_size = 0;
      return;
    }
    PathElement* from = o.inlineData();
    for (size_t i = 0; i < o.m_size; ++i) {
      new (inlineData() + i) PathElement(std::move(from[i]));
      from[i].~PathElement();
    }
    m_size = o.m_size;
    o.m_size = 0;
  }

  size_t m_size = 0;
  size_t m_capacity = 0;           // of the heap block
  PathElement* m_heap = nullptr;  // null: the elements are inline
  alignas(PathElement) unsigned char m_inline[kInline * sizeof(PathElement)];
};

// "model_state.blocks.0.attn.q_proj.weight"; integer steps print as numbers.
std::string joinPath(const TensorPath& path, size_t from = 0);

// A storage record: the bytes that one or more tensors view.
struct StorageInfo {
  // Provided, so that a new entry in a table (emplace_back()) gets its
  // member initializers only, not a memset of the whole struct first.
  StorageInfo() noexcept {}
  std::string key;       // "0", "1", ... as in the file
  DType dtype = DType::UInt8;  // element type of the storage class
  uint64_t numel = 0;    // elements of `dtype` the file claims
  std::string location;  // "cpu", "cuda:0", ...
  int64_t zipEntry = -1;  // index into the zip's entries once found
  std::string record;     // the zip record name, set only when it is missing or short (for messages)
  uint64_t dataOffset = 0;  // absolute byte offset, when known (legacy, safetensors)
  bool dataOffsetKnown = false;
  int useCount = 0;      // tensors viewing it
  std::string error;     // why its bytes cannot be read, "" when fine

  [[nodiscard]] uint64_t nbytes() const;
};

// A lazy tensor: everything the pickle says about it, no element bytes.
struct TensorInfo {
  // Provided, as StorageInfo's: no memset of ~400 bytes per tensor first.
  TensorInfo() noexcept {}
  TensorPath path;  // first place in the tree where it occurs
  DType dtype = DType::Float32;
  Dims shape;
  Dims stride;  // in elements
  int64_t storageOffset = 0;    // in elements of `dtype`
  int storage = -1;             // index into storages(); -1 for meta tensors
  bool requiresGrad = false;
  bool isParameter = false;
  bool isMeta = false;
  std::string subclass;          // tensor subclass named by _rebuild_from_type_v2
  std::string qscheme;           // quantized tensors: "per_tensor_affine", ...
  double qscale = 0.0;           // per-tensor quantisation
  int64_t qzeroPoint = 0;
  std::string error;  // why its bytes cannot be read ("" when the extent is fine)

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

// Contiguous (row-major) strides for a shape.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape);

}  // namespace ckpt
