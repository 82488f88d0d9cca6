#pragma once

#include <complex>
#include <cstdint>
#include <functional>

#include "ckpt/format/input_file.h"
#include "ckpt/format/tensor_info.h"

namespace ckpt {

// The mapped bytes of one tensor and element access that converts any dtype
// to double (complex: the real part; quantized: the stored integer).
class TensorData {
 public:
  TensorData(TensorInfo info, ByteRegion region, uint64_t regionBase, bool bigEndian);

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
  // The raw bytes of the element at storage element position `pos`.
  [[nodiscard]] const uint8_t* elementPtr(uint64_t storagePos) const;

 private:
  [[nodiscard]] uint64_t storagePosition(uint64_t flatIndex) const;
  [[nodiscard]] double decode(const uint8_t* p, bool imag = false) const;
  [[nodiscard]] double valueAt(uint64_t storagePos) const;

  TensorInfo m_info;
  ByteRegion m_region;
  uint64_t m_base = 0;  // storage element index where m_region starts
  bool m_bigEndian = false;
  uint64_t m_numel = 0;
  int m_elemSize = 0;
  int m_perByte = 1;
};

}  // namespace ckpt
