#pragma once
// CRC-32C (Castagnoli), as TFRecord files checksum their records (internal).

#include <cstddef>
#include <cstdint>

namespace ckpt::detail {

// The CRC-32C of `size` bytes: the SSE4.2 / ARMv8 instruction where the CPU
// has it (an event file is checksummed whole, so this is most of reading
// one), a table otherwise.
[[nodiscard]] uint32_t crc32c(const uint8_t* data, size_t size);
// The CRC-32C of bytes A then B, given `crc` = crc32c(A) and B: a CRC
// taken over parts that are never put side by side in memory.
[[nodiscard]] uint32_t crc32cExtend(uint32_t crc, const uint8_t* data, size_t size);
// The table's answer, whatever the CPU (for tests: both must agree).
[[nodiscard]] uint32_t crc32cPortable(const uint8_t* data, size_t size);

// TFRecord's masking (record_writer): rotate right by 15, add a constant, so
// a CRC over bytes that embed CRCs stays well distributed.
[[nodiscard]] inline uint32_t maskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace ckpt::detail
