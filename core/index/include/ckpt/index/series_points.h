#pragma once
// A metric's points stored as columns (steps, values, and wall times /
// tokens only when the series has them) instead of one 48-byte struct a
// point: a sweep of 1,000 runs x 20,000 steps is 20 M points, and the
// struct's optional fields cost more than the numbers. A column that is an
// arithmetic progression (steps logged every N, tokens = step x batch, a
// constant learning rate) is kept as its first value and stride until a
// value breaks it, so it costs nothing; otherwise 8 bytes a point. A series
// of irregular steps and values is 16 bytes a point.
//
// Readers push points (push / push_back); consumers read step(i) /
// value(i) / wallTime(i) / tokens(i), or a whole MetricPoint (operator[],
// iteration: built on the fly, by value). No Qt, no LibTorch.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ckpt {

struct MetricPoint {
  int64_t step = 0;
  double value = 0;
  std::optional<double> wallTime;  // seconds since the run started, or a Unix time (logs,
                                   // metrics.jsonl's time.time())
  std::optional<int64_t> tokens;   // tokens seen
};

// One column: while every value pushed equals first + stride * i exactly
// (bit for bit), only those two are kept; the first value that does not
// makes it a plain vector. T is int64_t or double.
template <typename T>
class PointColumn {
 public:
  PointColumn() = default;
  PointColumn(const PointColumn& other);
  PointColumn(PointColumn&& other) noexcept;
  PointColumn& operator=(const PointColumn& other);
  PointColumn& operator=(PointColumn&& other) noexcept;
  ~PointColumn();

  [[nodiscard]] size_t size() const { return m_size; }
  [[nodiscard]] T operator[](size_t i) const { return m_dense ? m_data[i] : progression(i); }
  // The values in memory, for a loop over many; nullptr while the column is
  // a progression (read those through operator[]).
  [[nodiscard]] const T* data() const { return m_dense ? m_data : nullptr; }
  // A progression's first value and stride (what operator[] computes from).
  [[nodiscard]] T first() const { return m_first; }
  [[nodiscard]] T stride() const { return m_stride; }
  // A vector with room, or an integer progression that goes on, takes the
  // value here (a sweep's open pushes hundreds of millions); the rest
  // (growing, a double progression's check) out of line.
  void push(T v) {
    if (m_dense) {
      if (m_size < m_capacity) {
        m_data[m_size++] = v;
        return;
      }
    } else if constexpr (std::is_integral_v<T>) {
      // progression(m_size): integers wrap alike wherever it is computed.
      if (m_size >= 2 && T(uint64_t(m_first) + uint64_t(m_stride) * uint64_t(m_size)) == v) {
        ++m_size;
        return;
      }
    }
    pushSlow(v);
  }
  void truncate(size_t n);
  void clear();
  // Room for n values, taken only if the column turns into a vector.
  void reserve(size_t n) { m_reserve = n; }
  void append(const PointColumn& other);
  // Heap bytes held (the benchmark's bytes per point).
  [[nodiscard]] size_t bytes() const { return m_capacity * sizeof(T); }
  // As bytes (host order: the metrics cache never leaves the machine), and
  // back: false when `in` holds no well-formed column of at most maxSize
  // values. A loaded vector's values are in bulk memory (bulk_memory.h:
  // huge pages) when it is big; it moves to the heap if it grows.
  void save(std::string& out) const;
  [[nodiscard]] bool load(std::string_view& in, size_t maxSize);

 private:
  // Out of line, so that the check on push and every read compute the
  // progression with the same instructions (a fused multiply-add in one
  // place and not in the other would change the last bit).
  [[nodiscard]] T progression(size_t i) const;
  void makeDense();
  void pushSlow(T v);
  // Room for `capacity` values: bulk memory first when `bulkFirst` (and
  // `bulk` says whether it was), else the heap.
  static T* allocate(size_t capacity, bool bulkFirst, bool& bulk);
  // `data` (from allocate) held from now on, what was held released.
  void adopt(T* data, size_t capacity, bool bulk);
  // The values (the first m_size) moved to heap storage of `capacity`.
  void reallocate(size_t capacity);
  void release();

  T* m_data = nullptr;  // when m_dense: m_capacity values, the first m_size in use
  size_t m_capacity = 0;
  T m_first{};
  T m_stride{};
  size_t m_size = 0;
  size_t m_reserve = 0;
  bool m_dense = false;
  bool m_bulk = false;  // m_data from bulkAllocate, else operator new
};

extern template class PointColumn<int64_t>;
extern template class PointColumn<double>;

class SeriesPoints {
 public:
  [[nodiscard]] size_t size() const { return m_steps.size(); }
  [[nodiscard]] bool empty() const { return m_steps.size() == 0; }
  [[nodiscard]] int64_t step(size_t i) const { return m_steps[i]; }
  [[nodiscard]] double value(size_t i) const { return m_values[i]; }
  // The columns' data() (nullptr: a progression, read step(i) / value(i)).
  [[nodiscard]] const int64_t* stepData() const { return m_steps.data(); }
  [[nodiscard]] const double* valueData() const { return m_values.data(); }
  [[nodiscard]] const PointColumn<int64_t>& stepColumn() const { return m_steps; }
  // Nothing for a point logged without one. A NaN wall time counts as none.
  [[nodiscard]] std::optional<double> wallTime(size_t i) const;
  [[nodiscard]] std::optional<int64_t> tokens(size_t i) const;
  // Whether some point has (or had, before a truncate) the field.
  [[nodiscard]] bool hasWallTimes() const { return m_wall.size() != 0; }
  [[nodiscard]] bool hasTokens() const { return m_tokens.size() != 0; }
  // The smallest step, and the smallest finite wall time, read off
  // the columns (a progression's ends), not point by point: a sweep's open
  // spent a sixth of its time here through wallTime(i).
  [[nodiscard]] std::optional<int64_t> minStep() const;
  [[nodiscard]] std::optional<double> minWallTime() const;
  [[nodiscard]] MetricPoint operator[](size_t i) const {
    return {step(i), value(i), wallTime(i), tokens(i)};
  }
  [[nodiscard]] MetricPoint front() const { return (*this)[0]; }
  [[nodiscard]] MetricPoint back() const { return (*this)[size() - 1]; }

  void push(int64_t step, double value, std::optional<double> wallTime = std::nullopt,
            std::optional<int64_t> tokens = std::nullopt);
  void push_back(const MetricPoint& p) { push(p.step, p.value, p.wallTime, p.tokens); }
  void pop_back() { truncate(size() - 1); }
  // Keeps the first n points.
  void truncate(size_t n);
  void clear();
  void reserve(size_t n);
  // `other`'s points after these (the caller keeps the steps in order).
  void append(const SeriesPoints& other);
  // The first point at or after `step` (steps ascending), or size().
  [[nodiscard]] size_t lowerBound(int64_t step) const;
  // Heap bytes the columns hold.
  [[nodiscard]] size_t bytes() const;
  // The columns as bytes (the metrics cache, metrics_cache.h), and back:
  // false, and the series left empty, when `in` does not hold a well-formed
  // series of at most maxPoints points.
  void save(std::string& out) const;
  [[nodiscard]] bool load(std::string_view& in, size_t maxPoints);

  // Iteration yields MetricPoint values (a proxy: there is no point in
  // memory to refer to).
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using iterator_concept = std::random_access_iterator_tag;
    using value_type = MetricPoint;
    using difference_type = std::ptrdiff_t;
    using reference = MetricPoint;
    using pointer = void;
    const_iterator() = default;
    const_iterator(const SeriesPoints* s, size_t i) : m_s(s), m_i(i) {}
    MetricPoint operator*() const { return (*m_s)[m_i]; }
    MetricPoint operator[](difference_type n) const {
      return (*m_s)[size_t(difference_type(m_i) + n)];
    }
    const_iterator& operator++() {
      ++m_i;
      return *this;
    }
    const_iterator operator++(int) {
      auto t = *this;
      ++m_i;
      return t;
    }
    const_iterator& operator--() {
      --m_i;
      return *this;
    }
    const_iterator operator--(int) {
      auto t = *this;
      --m_i;
      return t;
    }
    const_iterator& operator+=(difference_type n) {
      m_i = size_t(difference_type(m_i) + n);
      return *this;
    }
    const_iterator& operator-=(difference_type n) {
      m_i = size_t(difference_type(m_i) - n);
      return *this;
    }
    friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
    friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
    friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return difference_type(a.m_i) - difference_type(b.m_i);
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.m_i == b.m_i;
    }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) {
      return a.m_i <=> b.m_i;
    }
    [[nodiscard]] size_t index() const { return m_i; }

   private:
    const SeriesPoints* m_s = nullptr;
    size_t m_i = 0;
  };
  [[nodiscard]] const_iterator begin() const { return {this, 0}; }
  [[nodiscard]] const_iterator end() const { return {this, size()}; }

  friend bool operator==(const SeriesPoints& a, const SeriesPoints& b);

 private:
  PointColumn<int64_t> m_steps;
  PointColumn<double> m_values;
  // Empty while no point has a wall time / tokens; then one entry a point,
  // NaN / kNoTokens where a point has none.
  PointColumn<double> m_wall;
  PointColumn<int64_t> m_tokens;
};

}  // namespace ckpt
