#include "ckpt/index/series_points.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "bulk_memory.h"
#include "raw_bytes.h"

namespace ckpt {
namespace {

// The tokens column's "this point has none" (a real count is never negative).
constexpr int64_t kNoTokens = std::numeric_limits<int64_t>::min();

// Bit for bit: -0.0 is not 0.0, and a NaN's payload is kept.
template <typename T>
bool sameBits(T a, T b) {
  if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  else
    return a == b;
}

using detail::getRaw;
using detail::putRaw;

enum ColumnKind : uint8_t { kProgression = 1, kDense = 2 };

}  // namespace

template <typename T>
PointColumn<T>::PointColumn(const PointColumn& other)
    : m_first(other.m_first),
      m_stride(other.m_stride),
      m_size(other.m_size),
      m_reserve(other.m_reserve),
      m_dense(other.m_dense) {
  if (m_dense && m_size != 0) {
    bool bulk = false;
    T* data = allocate(m_size, /*bulkFirst=*/false, bulk);
    adopt(data, m_size, bulk);
    std::memcpy(m_data, other.m_data, m_size * sizeof(T));
  }
}

template <typename T>
PointColumn<T>::PointColumn(PointColumn&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)),
      m_capacity(std::exchange(other.m_capacity, 0)),
      m_first(other.m_first),
      m_stride(other.m_stride),
      m_size(std::exchange(other.m_size, 0)),
      m_reserve(other.m_reserve),
      m_dense(std::exchange(other.m_dense, false)),
      m_bulk(std::exchange(other.m_bulk, false)) {}

template <typename T>
PointColumn<T>& PointColumn<T>::operator=(const PointColumn& other) {
  if (this != &other) *this = PointColumn(other);
  return *this;
}

template <typename T>
PointColumn<T>& PointColumn<T>::operator=(PointColumn&& other) noexcept {
  if (this == &other) return *this;
  release();
  m_data = std::exchange(other.m_data, nullptr);
  m_capacity = std::exchange(other.m_capacity, 0);
  m_first = other.m_first;
  m_stride = other.m_stride;
  m_size = std::exchange(other.m_size, 0);
  m_reserve = other.m_reserve;
  m_dense = std::exchange(other.m_dense, false);
  m_bulk = std::exchange(other.m_bulk, false);
  return *this;
}

template <typename T>
PointColumn<T>::~PointColumn() {
  release();
}

template <typename T>
void PointColumn<T>::release() {
  if (m_data) {
    if (m_bulk)
      detail::bulkRelease(m_data);
    else
      ::operator delete(m_data);
  }
  m_data = nullptr;
  m_capacity = 0;
  m_bulk = false;
}

template <typename T>
T* PointColumn<T>::allocate(size_t capacity, bool bulkFirst, bool& bulk) {
  T* p = bulkFirst ? static_cast<T*>(detail::bulkAllocate(capacity * sizeof(T))) : nullptr;
  bulk = p != nullptr;
  return bulk ? p : static_cast<T*>(::operator new(capacity * sizeof(T)));
}

template <typename T>
void PointColumn<T>::adopt(T* data, size_t capacity, bool bulk) {
  release();
  m_data = data;
  m_capacity = capacity;
  m_bulk = bulk;
}

template <typename T>
void PointColumn<T>::reallocate(size_t capacity) {
  bool bulk = false;
  T* fresh = allocate(capacity, /*bulkFirst=*/false, bulk);
  if (m_dense && m_size != 0) std::memcpy(fresh, m_data, m_size * sizeof(T));
  adopt(fresh, capacity, bulk);
}

template <typename T>
void PointColumn<T>::save(std::string& out) const {
  putRaw(out, uint8_t(m_dense ? kDense : kProgression));
  putRaw(out, uint64_t(m_size));
  if (m_dense) {
    if (m_size != 0) out.append(reinterpret_cast<const char*>(m_data), m_size * sizeof(T));
  } else {
    putRaw(out, m_first);
    putRaw(out, m_stride);
  }
}

template <typename T>
bool PointColumn<T>::load(std::string_view& in, size_t maxSize) {
  clear();
  uint8_t kind = 0;
  uint64_t size = 0;
  if (!getRaw(in, kind) || !getRaw(in, size) || size > maxSize) return false;
  if (kind == kDense) {
    if (in.size() / sizeof(T) < size) return false;
    const size_t bytes = size_t(size) * sizeof(T);
    if (bytes != 0) {
      // Values read once and kept: bulk memory (huge pages) when there is.
      bool bulk = false;
      T* data = allocate(size_t(size), /*bulkFirst=*/true, bulk);
      adopt(data, size_t(size), bulk);
      std::memcpy(m_data, in.data(), bytes);
    }
    in.remove_prefix(bytes);
    m_dense = true;
  } else if (kind == kProgression) {
    if (!getRaw(in, m_first) || !getRaw(in, m_stride)) return false;
  } else {
    return false;
  }
  m_size = size_t(size);
  return true;
}

template <typename T>
T PointColumn<T>::progression(size_t i) const {
  // The first value as it came: first + stride * 0 is not it when the
  // stride is infinite or NaN (inf * 0 is NaN) or the first is -0.0.
  if (i == 0) return m_first;
  if constexpr (std::is_same_v<T, double>) {
    return m_first + m_stride * double(i);
  } else {
    // Wrapping arithmetic: defined for any step, and the same on the check
    // as on every read, so a progression that wraps is still read back exactly.
    return T(uint64_t(m_first) + uint64_t(m_stride) * uint64_t(i));
  }
}

template <typename T>
void PointColumn<T>::makeDense() {
  const size_t capacity = std::max(m_reserve, m_size + m_size / 2 + 16);
  // The room asked for up front (a file's points, as it is parsed): bulk
  // memory, as a loaded column's; a column that grows past it moves to the heap.
  bool bulk = false;
  T* fresh = allocate(capacity, /*bulkFirst=*/capacity == m_reserve, bulk);
  for (size_t i = 0; i < m_size; ++i) fresh[i] = progression(i);
  adopt(fresh, capacity, bulk);
  m_dense = true;
}

template <typename T>
void PointColumn<T>::pushSlow(T v) {
  if (m_dense) {
    // Grow by half again, not libstdc++'s doubling: a sweep's columns stay
    // within 1.5x the 8 bytes a point they need.
    if (m_size == m_capacity) reallocate(m_capacity + m_capacity / 2 + 16);
    m_data[m_size] = v;
  } else if (m_size == 0) {
    m_first = v;
  } else if (m_size == 1) {
    if constexpr (std::is_same_v<T, double>)
      m_stride = v - m_first;
    else
      m_stride = T(uint64_t(v) - uint64_t(m_first));
    if (!sameBits(progression(1), v)) {
      makeDense();
      m_data[m_size] = v;
    }
  } else if (!sameBits(progression(m_size), v)) {
    makeDense();
    m_data[m_size] = v;
  }
  ++m_size;
}

template <typename T>
void PointColumn<T>::truncate(size_t n) {
  if (n >= m_size) return;
  m_size = n;
}

template <typename T>
void PointColumn<T>::clear() {
  release();
  m_dense = false;
  m_size = 0;
}

template <typename T>
void PointColumn<T>::append(const PointColumn& other) {
  // A vector takes the other's values as they are: no check a value (the
  // parts of a file parsed on several threads are joined here).
  if (m_dense) {
    const size_t total = m_size + other.m_size;
    if (total > m_capacity) reallocate(total);
    if (other.m_dense) {
      if (other.m_size != 0) std::memcpy(m_data + m_size, other.m_data, other.m_size * sizeof(T));
    } else {
      for (size_t i = 0; i < other.m_size; ++i) m_data[m_size + i] = other.progression(i);
    }
    m_size = total;
    return;
  }
  for (size_t i = 0; i < other.m_size; ++i) push(other[i]);
}

template class PointColumn<int64_t>;
template class PointColumn<double>;

std::optional<double> SeriesPoints::wallTime(size_t i) const {
  if (m_wall.size() == 0) return std::nullopt;
  const double w = m_wall[i];
  if (std::isnan(w)) return std::nullopt;
  return w;
}

namespace {

// The smallest value of a column (a double that is not finite left out), or nothing. A
// progression's smallest is at one of its ends, unless the integer one
// wraps (then each value is looked at).
template <typename T>
std::optional<T> columnMin(const PointColumn<T>& c) {
  const size_t n = c.size();
  if (n == 0) return std::nullopt;
  std::optional<T> low;
  const auto consider = [&low](T v) {
    if constexpr (std::is_same_v<T, double>)
      if (!std::isfinite(v)) return;
    if (!low || v < *low) low = v;
  };
  if (const T* d = c.data()) {
    for (size_t i = 0; i < n; ++i) consider(d[i]);
    return low;
  }
  bool ends = true;
  if constexpr (std::is_same_v<T, int64_t>) {
    const __int128 last = __int128(c.first()) + __int128(c.stride()) * __int128(n - 1);
    ends =
        last >= std::numeric_limits<int64_t>::min() && last <= std::numeric_limits<int64_t>::max();
  } else {
    ends = std::isfinite(c[0]) && std::isfinite(c[n - 1]);
  }
  if (ends) {
    consider(c[0]);
    consider(c[n - 1]);
  } else {
    for (size_t i = 0; i < n; ++i) consider(c[i]);
  }
  return low;
}

}  // namespace

std::optional<int64_t> SeriesPoints::minStep() const {
  return columnMin(m_steps);
}

std::optional<double> SeriesPoints::minWallTime() const {
  return columnMin(m_wall);
}

std::optional<int64_t> SeriesPoints::tokens(size_t i) const {
  if (m_tokens.size() == 0) return std::nullopt;
  const int64_t t = m_tokens[i];
  if (t == kNoTokens) return std::nullopt;
  return t;
}

void SeriesPoints::push(int64_t step, double value, std::optional<double> wallTime,
                        std::optional<int64_t> tokens) {
  const size_t n = size();
  // A column is started by the first point that has the field; the points
  // before it get "none".
  if (wallTime || m_wall.size() != 0) {
    while (m_wall.size() < n) m_wall.push(std::nan(""));
    m_wall.push(wallTime ? *wallTime : std::nan(""));
  }
  if (tokens || m_tokens.size() != 0) {
    while (m_tokens.size() < n) m_tokens.push(kNoTokens);
    m_tokens.push(tokens ? *tokens : kNoTokens);
  }
  m_steps.push(step);
  m_values.push(value);
}

void SeriesPoints::truncate(size_t n) {
  m_steps.truncate(n);
  m_values.truncate(n);
  m_wall.truncate(n);
  m_tokens.truncate(n);
  // Columns stay once started (a scan for the last point with a wall time
  // would make replacing the last point cost the whole series); the points
  // left without the field read as none.
  if (n == 0) clear();
}

void SeriesPoints::clear() {
  m_steps.clear();
  m_values.clear();
  m_wall.clear();
  m_tokens.clear();
}

void SeriesPoints::reserve(size_t n) {
  m_steps.reserve(n);
  m_values.reserve(n);
  m_wall.reserve(n);
  m_tokens.reserve(n);
}

void SeriesPoints::append(const SeriesPoints& other) {
  const size_t n = size(), total = n + other.size();
  if (other.hasWallTimes() || hasWallTimes()) {
    while (m_wall.size() < n) m_wall.push(std::nan(""));
    if (other.hasWallTimes())
      m_wall.append(other.m_wall);
    else
      while (m_wall.size() < total) m_wall.push(std::nan(""));
  }
  if (other.hasTokens() || hasTokens()) {
    while (m_tokens.size() < n) m_tokens.push(kNoTokens);
    if (other.hasTokens())
      m_tokens.append(other.m_tokens);
    else
      while (m_tokens.size() < total) m_tokens.push(kNoTokens);
  }
  m_steps.append(other.m_steps);
  m_values.append(other.m_values);
}

size_t SeriesPoints::lowerBound(int64_t step) const {
  size_t lo = 0, hi = size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (m_steps[mid] < step)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void SeriesPoints::save(std::string& out) const {
  m_steps.save(out);
  m_values.save(out);
  m_wall.save(out);
  m_tokens.save(out);
}

bool SeriesPoints::load(std::string_view& in, size_t maxPoints) {
  const bool ok = m_steps.load(in, maxPoints) && m_values.load(in, maxPoints) &&
                  m_wall.load(in, maxPoints) && m_tokens.load(in, maxPoints) &&
                  m_values.size() == size() && (m_wall.size() == 0 || m_wall.size() == size()) &&
                  (m_tokens.size() == 0 || m_tokens.size() == size());
  if (!ok) clear();
  return ok;
}

size_t SeriesPoints::bytes() const {
  return m_steps.bytes() + m_values.bytes() + m_wall.bytes() + m_tokens.bytes();
}

bool operator==(const SeriesPoints& a, const SeriesPoints& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a.step(i) != b.step(i) || !sameBits(a.value(i), b.value(i)) ||
        a.wallTime(i).has_value() != b.wallTime(i).has_value() ||
        (a.wallTime(i) && !sameBits(*a.wallTime(i), *b.wallTime(i))) || a.tokens(i) != b.tokens(i))
      return false;
  return true;
}

}  // namespace ckpt
