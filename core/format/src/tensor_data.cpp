#include "ckpt/format/tensor_data.h"

#include <algorithm>
#include <cstring>

#include "ckpt/format/error.h"
#include "ckpt/format/numeric.h"

namespace ckpt {

namespace detail {
struct ChunkList {
  struct Chunk {
    Dims offsets, sizes;
    Dims localStrides;  // row-major strides of the chunk's own shape
    TensorData data;
    size_t split = 0;  // every dimension after this one spans the whole global extent
  };
  std::vector<Chunk> chunks;
  Dims globalStrides;
};
}  // namespace detail

TensorData::TensorData(TensorInfo info, std::vector<Dims> offsets, std::vector<TensorData> chunks)
    : m_info(std::move(info)) {
  m_numel = m_info.numel();
  m_elemSize = dtypeSize(m_info.dtype);
  m_perByte = dtypeElementsPerByte(m_info.dtype);
  auto list = std::make_shared<detail::ChunkList>();
  const Dims& shape = m_info.shape;
  const size_t nd = shape.size();
  list->globalStrides = Dims(contiguousStrides(shape.vec()));
  for (size_t i = 0; i < chunks.size(); ++i) {
    detail::ChunkList::Chunk c{offsets.at(i), chunks[i].info().shape,
                               Dims(contiguousStrides(chunks[i].info().shape.vec())),
                               std::move(chunks[i]), 0};
    if (c.offsets.size() != nd || c.sizes.size() != nd)
      fail("tensor " + std::string(m_info.name()) + ": a chunk has " +
           std::to_string(c.sizes.size()) + " dimensions, the tensor " + std::to_string(nd));
    size_t k = nd ? nd - 1 : 0;
    while (k > 0 && c.offsets[k] == 0 && c.sizes[k] == shape[k]) --k;
    c.split = k;
    list->chunks.push_back(std::move(c));
  }
  m_chunks = std::move(list);
}

TensorData TensorData::run(uint64_t first, const Dims& sizes) const {
  uint64_t n = 1;
  for (const int64_t s : sizes.vec()) n *= uint64_t(s);
  const std::string name(m_info.name());
  if (m_chunks || !m_info.isContiguous())
    fail("tensor " + name + ": a piece of it is wanted, and it is not one contiguous buffer");
  if (first > m_numel || n > m_numel - first)
    fail("tensor " + name + ": elements [" + std::to_string(first) + ", " +
         std::to_string(first + n) + ") are wanted, it has " + std::to_string(m_numel));
  TensorData piece = *this;
  piece.m_info.shape = sizes;
  piece.m_info.stride = Dims(contiguousStrides(sizes.vec()));
  piece.m_info.storageOffset = m_info.storageOffset + int64_t(first);
  piece.m_numel = n;
  return piece;
}

template <typename Fn>
void TensorData::forRuns(uint64_t first, uint64_t count, Fn&& fn) const {
  const Dims& shape = m_info.shape;
  const size_t nd = shape.size();
  const Dims& gs = m_chunks->globalStrides;
  Dims x(nd);
  const uint64_t end = first + count;
  for (uint64_t g = first; g < end;) {
    uint64_t rem = g;
    for (size_t d = nd; d-- > 0;) {
      x[d] = int64_t(rem % uint64_t(shape[d]));
      rem /= uint64_t(shape[d]);
    }
    const detail::ChunkList::Chunk* hit = nullptr;
    for (const auto& c : m_chunks->chunks) {
      bool inside = true;
      for (size_t d = 0; d < nd && inside; ++d)
        inside = x[d] >= c.offsets[d] && x[d] < c.offsets[d] + c.sizes[d];
      if (inside && c.data.numel() > 0) {
        hit = &c;
        break;
      }
    }
    if (!hit)
      fail("tensor " + std::string(m_info.name()) + ": element " + std::to_string(g) +
           " lies in no chunk");
    uint64_t run = 1, local = 0;
    if (nd > 0) {
      const size_t k = hit->split;
      uint64_t innerPos = 0;
      for (size_t d = k + 1; d < nd; ++d) innerPos += uint64_t(x[d]) * uint64_t(gs[d]);
      run = uint64_t(hit->offsets[k] + hit->sizes[k] - x[k]) * uint64_t(gs[k]) - innerPos;
      for (size_t d = 0; d < nd; ++d)
        local += uint64_t(x[d] - hit->offsets[d]) * uint64_t(hit->localStrides[d]);
    }
    run = std::min(run, end - g);
    fn(hit->data, local, run, g - first);
    g += run;
  }
}

TensorData::TensorData(TensorInfo info, ByteRegion region, uint64_t regionBase, bool bigEndian)
    : m_info(std::move(info)),
      m_region(std::move(region)),
      m_base(regionBase),
      m_bigEndian(bigEndian) {
  m_numel = m_info.numel();
  m_elemSize = dtypeSize(m_info.dtype);
  m_perByte = dtypeElementsPerByte(m_info.dtype);
}

uint64_t TensorData::storagePosition(uint64_t flat) const {
  uint64_t pos = uint64_t(m_info.storageOffset);
  for (size_t d = m_info.shape.size(); d-- > 0;) {
    const uint64_t n = uint64_t(m_info.shape[d]);
    pos += (flat % n) * uint64_t(m_info.stride[d]);
    flat /= n;
  }
  return pos;
}

const uint8_t* TensorData::elementPtr(uint64_t storagePos) const {
  if (m_chunks) return nullptr;
  if (m_perByte > 1) return m_region.data + (storagePos - m_base) / uint64_t(m_perByte);
  return m_region.data + (storagePos - m_base) * uint64_t(m_elemSize);
}

double TensorData::valueAt(uint64_t storagePos) const {
  if (m_perByte > 1) {
    const int bits = 8 / m_perByte;
    const int shift = int((storagePos - m_base) % uint64_t(m_perByte)) * bits;
    return double((*elementPtr(storagePos) >> shift) & ((1 << bits) - 1));
  }
  return decode(elementPtr(storagePos));
}

namespace {

template <typename T>
T load(const uint8_t* p, bool swap) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (swap)
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

// Contiguous elements of one storage type to doubles: the compiler
// vectorises this for the plain types.
template <typename T, typename Convert>
void convertRun(const uint8_t* p, size_t n, bool swap, double* out, Convert convert) {
  if (!swap) {
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, p + i * sizeof(T), sizeof(T));
      out[i] = double(convert(v));
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = double(convert(load<T>(p + i * sizeof(T), true)));
}

constexpr auto kSame = [](auto v) { return v; };

}  // namespace

double TensorData::decode(const uint8_t* p, bool imag) const {
  const bool sw = m_bigEndian;
  switch (m_info.dtype) {
    case DType::Float64:
      return load<double>(p, sw);
    case DType::Float32:
      return load<float>(p, sw);
    case DType::Float16:
      return detail::halfToFloat(load<uint16_t>(p, sw));
    case DType::BFloat16:
      return detail::bf16ToFloat(load<uint16_t>(p, sw));
    case DType::Int64:
      return double(load<int64_t>(p, sw));
    case DType::Int32:
      return load<int32_t>(p, sw);
    case DType::Int16:
      return load<int16_t>(p, sw);
    case DType::Int8:
      return int8_t(*p);
    case DType::UInt8:
      return *p;
    case DType::Bool:
      return *p ? 1.0 : 0.0;
    case DType::Complex32:
      return detail::halfToFloat(load<uint16_t>(p + (imag ? 2 : 0), sw));
    case DType::Complex64:
      return load<float>(p + (imag ? 4 : 0), sw);
    case DType::Complex128:
      return load<double>(p + (imag ? 8 : 0), sw);
    case DType::QInt8:
      return int8_t(*p);
    case DType::QUInt8:
      return *p;
    case DType::QInt32:
      return load<int32_t>(p, sw);
    case DType::QUInt4x2:
    case DType::QUInt2x4:
      return *p;
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
      return detail::fp8e4m3fnToFloat(*p);
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
      return detail::fp8e5m2ToFloat(*p);
    case DType::UInt16:
      return load<uint16_t>(p, sw);
    case DType::UInt32:
      return load<uint32_t>(p, sw);
    case DType::UInt64:
      return double(load<uint64_t>(p, sw));
  }
  return 0.0;
}

double TensorData::at(uint64_t flatIndex) const {
  if (m_chunks) {
    double v = 0;
    forRuns(flatIndex, 1,
            [&v](const TensorData& c, uint64_t local, uint64_t, uint64_t) { v = c.at(local); });
    return v;
  }
  return valueAt(storagePosition(flatIndex));
}

std::complex<double> TensorData::complexAt(uint64_t flatIndex) const {
  if (m_chunks) {
    std::complex<double> v;
    forRuns(flatIndex, 1, [&v](const TensorData& c, uint64_t local, uint64_t, uint64_t) {
      v = c.complexAt(local);
    });
    return v;
  }
  const uint8_t* p = elementPtr(storagePosition(flatIndex));
  return {decode(p), dtypeIsComplex(m_info.dtype) ? decode(p, true) : 0.0};
}

void TensorData::forEach(const std::function<void(uint64_t, double)>& fn) const {
  if (m_numel == 0) return;
  if (m_chunks) {
    std::vector<double> buffer(4096);
    for (uint64_t first = 0; first < m_numel;) {
      const size_t n = read(first, buffer.size(), buffer.data());
      for (size_t i = 0; i < n; ++i) fn(first + i, buffer[i]);
      first += n;
    }
    return;
  }
  if (m_info.isContiguous() && m_perByte == 1) {
    const uint8_t* p = elementPtr(uint64_t(m_info.storageOffset));
    for (uint64_t i = 0; i < m_numel; ++i, p += m_elemSize) fn(i, decode(p));
    return;
  }
  // Odometer over the dimensions: no division per element.
  const size_t nd = m_info.shape.size();
  std::vector<int64_t> idx(nd, 0);
  uint64_t pos = uint64_t(m_info.storageOffset);
  for (uint64_t i = 0; i < m_numel; ++i) {
    fn(i, valueAt(pos));
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < m_info.shape[d]) {
        pos += uint64_t(m_info.stride[d]);
        break;
      }
      pos -= uint64_t(m_info.stride[d]) * uint64_t(m_info.shape[d] - 1);
      idx[d] = 0;
    }
  }
}

size_t TensorData::read(uint64_t first, size_t count, double* out) const {
  if (first >= m_numel) return 0;
  const size_t n = size_t(std::min<uint64_t>(count, m_numel - first));
  if (m_chunks) {
    forRuns(first, n, [out](const TensorData& c, uint64_t local, uint64_t k, uint64_t at) {
      if (c.read(local, size_t(k), out + at) != k)
        fail("tensor " + std::string(c.info().name()) + ": short chunk read");
    });
    return n;
  }
  if (!m_info.isContiguous() || m_perByte > 1) {
    for (size_t i = 0; i < n; ++i) out[i] = at(first + i);
    return n;
  }
  const uint8_t* p = elementPtr(uint64_t(m_info.storageOffset) + first);
  const bool sw = m_bigEndian;
  switch (m_info.dtype) {
    case DType::Float64:
      convertRun<double>(p, n, sw, out, kSame);
      return n;
    case DType::Float32:
      convertRun<float>(p, n, sw, out, kSame);
      return n;
    case DType::Float16:
      convertRun<uint16_t>(p, n, sw, out, detail::halfToFloat);
      return n;
    case DType::BFloat16:
      convertRun<uint16_t>(p, n, sw, out, detail::bf16ToFloat);
      return n;
    case DType::Int64:
      convertRun<int64_t>(p, n, sw, out, kSame);
      return n;
    case DType::Int32:
      convertRun<int32_t>(p, n, sw, out, kSame);
      return n;
    case DType::Int16:
      convertRun<int16_t>(p, n, sw, out, kSame);
      return n;
    case DType::Int8:
      convertRun<int8_t>(p, n, false, out, kSame);
      return n;
    case DType::UInt8:
      convertRun<uint8_t>(p, n, false, out, kSame);
      return n;
    case DType::Bool:
      convertRun<uint8_t>(p, n, false, out, [](uint8_t v) { return v ? 1 : 0; });
      return n;
    default:
      break;
  }
  for (size_t i = 0; i < n; ++i, p += m_elemSize) out[i] = decode(p);
  return n;
}

size_t TensorData::readRaw(uint64_t first, size_t count, uint8_t* out) const {
  if (first >= m_numel) return 0;
  const size_t n = size_t(std::min<uint64_t>(count, m_numel - first));
  if (m_perByte > 1)
    fail("tensor " + std::string(m_info.name()) + ": packed " +
         std::string(dtypeName(m_info.dtype)) + " elements cannot be copied one by one");
  const size_t es = size_t(m_elemSize);
  if (m_chunks) {
    forRuns(first, n, [out, es](const TensorData& c, uint64_t local, uint64_t k, uint64_t at) {
      if (c.readRaw(local, size_t(k), out + at * es) != k)
        fail("tensor " + std::string(c.info().name()) + ": short chunk read");
    });
    return n;
  }
  if (m_info.isContiguous()) {
    std::memcpy(out, elementPtr(uint64_t(m_info.storageOffset) + first), n * es);
  } else {
    for (size_t i = 0; i < n; ++i)
      std::memcpy(out + i * es, elementPtr(storagePosition(first + i)), es);
  }
  if (m_bigEndian && es > 1) {
    // Elements swapped whole; complex numbers per component.
    const size_t width = dtypeIsComplex(m_info.dtype) ? es / 2 : es;
    for (size_t i = 0; i + width <= n * es; i += width) std::reverse(out + i, out + i + width);
  }
  return n;
}

size_t TensorData::readBytes(uint64_t first, size_t count, uint8_t* out) const {
  if (m_perByte == 1) return readRaw(first, count, out);
  if (first >= m_numel) return 0;
  const uint64_t per = uint64_t(m_perByte);
  const uint64_t at = uint64_t(m_info.storageOffset) + first;
  if (m_chunks || !m_info.isContiguous() || at % per != 0)
    fail("tensor " + std::string(m_info.name()) + ": packed " +
         std::string(dtypeName(m_info.dtype)) +
         " elements that do not start on a byte of a contiguous tensor cannot be copied");
  const size_t n = size_t(std::min<uint64_t>(count, m_numel - first));
  std::memcpy(out, elementPtr(at), dtypeBytesFor(m_info.dtype, n));
  return n;
}

}  // namespace ckpt
