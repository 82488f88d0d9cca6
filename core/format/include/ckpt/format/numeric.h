#pragma once
// Bit-level conversions shared by the pickle reader, tensor access and the
// TensorBoard event reader (core/index).

#include <cstdint>
#include <cstring>
#include <string>

namespace ckpt::detail {

inline float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Little-endian loads (the hosts we build for are little-endian, as the
// rest of the reader assumes).
inline uint32_t loadLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t loadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return bitsToFloat(sign);
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    mant &= 0x3ff;
    return bitsToFloat(sign | ((127 - 15 - e) << 23) | (mant << 13));
  }
  if (exp == 31) return bitsToFloat(sign | 0x7f800000 | (mant << 13));
  return bitsToFloat(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

inline float bf16ToFloat(uint16_t b) {
  return bitsToFloat(uint32_t(b) << 16);
}

// float8 e4m3fn: no infinities, S.1111.111 is NaN.
inline float fp8e4m3fnToFloat(uint8_t v) {
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  const int exp = (v >> 3) & 0xf, mant = v & 7;
  if (exp == 15 && mant == 7) return __builtin_nanf("");
  if (exp == 0) return sign * float(mant) / 8.0f * 0.015625f;            // 2^-6
  return sign * (1.0f + float(mant) / 8.0f) * float(1 << exp) / 128.0f;  // bias 7
}

// float8 e5m2: the top byte of a half.
inline float fp8e5m2ToFloat(uint8_t v) {
  return halfToFloat(uint16_t(v) << 8);
}

// Two's complement little-endian bytes (any length) to decimal digits.
std::string twosComplementToDecimal(const uint8_t* bytes, size_t n);

}  // namespace ckpt::detail
