#include "crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define CKPT_CRC32C_X86 1
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define CKPT_CRC32C_ARM 1
#endif

namespace ckpt::detail {
namespace {

// Reflected polynomial 0x1EDC6F41.
constexpr uint32_t kPoly = 0x82f63b78u;

// Slicing by 8: eight bytes per step, for CPUs without the instruction.
struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};

uint32_t crcTable(uint32_t crc, const uint8_t* p, size_t n) {
  static const Tables tables;
  const auto& t = tables.t;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian hosts only (as the rest of the reader)
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if CKPT_CRC32C_X86
__attribute__((target("sse4.2"))) uint32_t crcHardware(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = uint32_t(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
bool hasHardware() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#elif CKPT_CRC32C_ARM
uint32_t crcHardware(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    crc = __crc32cd(crc, v);
    p += 8;
    n -= 8;
  }
  while (n--) crc = __crc32cb(crc, *p++);
  return crc;
}
bool hasHardware() {
  return true;
}
#endif

}  // namespace

uint32_t crc32c(const uint8_t* data, size_t size) {
  return crc32cExtend(0, data, size);
}

uint32_t crc32cExtend(uint32_t crc, const uint8_t* data, size_t size) {
#if CKPT_CRC32C_X86 || CKPT_CRC32C_ARM
  if (hasHardware()) return ~crcHardware(~crc, data, size);
#endif
  return ~crcTable(~crc, data, size);
}

uint32_t crc32cPortable(const uint8_t* data, size_t size) {
  return ~crcTable(~0u, data, size);
}

}  // namespace ckpt::detail
