#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ckpt/format/input_file.h"
#include "ckpt/format/tensor_info.h"

namespace ckpt {

namespace detail {
struct ChunkList;
}

// The mapped bytes of one tensor and element access that converts any dtype
// to double (complex: the real part; quantized: the stored integer).
class TensorData {
 public:
  TensorData(TensorInfo info, ByteRegion region, uint64_t regionBase, bool bigEndian);
  // A logical tensor made of chunks (ckpt/format/sharded.h): `chunks[i]` is
  // placed at `offsets[i]` of info.shape (its own shape gives the sizes).
  // Element access goes to the chunk holding the element; a run of elements
  // is read chunk by chunk, so nothing is assembled. The chunks must cover
  // the shape without overlapping (ShardSet checks that).
  TensorData(TensorInfo info, std::vector<Dims> offsets, std::vector<TensorData> chunks);

  [[nodiscard]] const TensorInfo& info() const { return m_info; }
  [[nodiscard]] uint64_t numel() const { return m_numel; }
  // Element at a row-major logical index.
  [[nodiscard]] double at(uint64_t flatIndex) const;
  [[nodiscard]] std::complex<double> complexAt(uint64_t flatIndex) const;
  // Visits every element in row-major order (fast path for contiguous data).
  void forEach(const std::function<void(uint64_t index, double value)>& fn) const;
  // Converts `count` elements starting at row-major index `first` into `out`
  // (clamped to numel(); returns how many were written). The bulk path for
  // statistics and diffs: one dtype switch per call, a tight loop for
  // contiguous data, so callers stream a tensor in cache-sized chunks.
  size_t read(uint64_t first, size_t count, double* out) const;
  // The raw bytes of `count` elements from row-major index `first`, packed
  // and little-endian, into `out` (count x element size bytes; clamped to
  // numel(); returns how many elements were written). Not for the packed
  // quantized types (quint4x2, quint2x4): those throw FormatError.
  size_t readRaw(uint64_t first, size_t count, uint8_t* out) const;
  // readRaw, and for the packed types too: whole bytes of a contiguous
  // tensor, from an element `first` on a byte boundary of the storage
  // (dtypeBytesFor(count) bytes written; the last byte's spare bits as
  // stored). A packed tensor otherwise laid out throws FormatError.
  size_t readBytes(uint64_t first, size_t count, uint8_t* out) const;
  // The raw bytes of the element at storage element position `pos`; null
  // for a tensor made of chunks (its bytes are in several places).
  [[nodiscard]] const uint8_t* elementPtr(uint64_t storagePos) const;
  [[nodiscard]] bool chunked() const { return m_chunks != nullptr; }
  // Whether its bytes are stored big-endian (read() and readRaw() convert).
  [[nodiscard]] bool bigEndian() const { return m_bigEndian; }
  // `sizes` row-major elements from row-major index `first` of this
  // contiguous tensor, as a tensor of that shape over the same bytes (a
  // piece of a flat buffer). Throws FormatError when this tensor is not
  // contiguous or the piece does not fit.
  [[nodiscard]] TensorData run(uint64_t first, const Dims& sizes) const;

 private:
  [[nodiscard]] uint64_t storagePosition(uint64_t flatIndex) const;
  [[nodiscard]] double decode(const uint8_t* p, bool imag = false) const;
  [[nodiscard]] double valueAt(uint64_t storagePos) const;

  // Calls fn(chunk data, local first index, count, output offset) for the
  // runs that cover [first, first + count).
  template <typename Fn>
  void forRuns(uint64_t first, uint64_t count, Fn&& fn) const;

  TensorInfo m_info;
  std::shared_ptr<const detail::ChunkList> m_chunks;  // set for a tensor made of chunks
  ByteRegion m_region;
  uint64_t m_base = 0;  // storage element index where m_region starts
  bool m_bigEndian = false;
  uint64_t m_numel = 0;
  int m_elemSize = 0;
  int m_perByte = 1;
};

}  // namespace ckpt
