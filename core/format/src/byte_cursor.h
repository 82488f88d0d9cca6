// Reading a pickle's bytes in order: a position in a byte range, the bounds
// check every read makes, and little-endian integers. The one home of these
// for the pickle opcode machine (pickle_machine.h) and the safety scan
// (pickle_scan.cpp). Not a public header.
//
// A reader derives from ByteCursor<Reader> (CRTP) and says what running out
// means: its truncated(n), which names the record and the opcode and does
// not return (nor does its error(message), for a text line too long). The
// checks inline into the reader's opcode loop as its own members did: no
// call, no virtual dispatch, one compare per read.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace ckpt {

// The unsigned little-endian integer of the `n` bytes (1 to 8) at `p`.
[[gnu::always_inline]] inline uint64_t loadLE(const uint8_t* p, int n) {
  if constexpr (std::endian::native == std::endian::little) {
    switch (n) {
      case 1:
        return p[0];
      case 2: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        return x;
      }
      case 4: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        return x;
      }
      case 8: {
        uint64_t x;
        std::memcpy(&x, p, 8);
        return x;
      }
      default:
        break;
    }
  }
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

template <typename Reader>
class ByteCursor {
 protected:
  ByteCursor(const uint8_t* data, uint64_t size) : m_data(data), m_size(size) {}

  // At least `n` bytes left, else the reader's truncated(n).
  [[gnu::always_inline]] void need(uint64_t n) const {
    if (m_size - m_pos < n) [[unlikely]]
      static_cast<const Reader*>(this)->truncated(n);
  }
  [[gnu::always_inline]] uint8_t u8() {
    need(1);
    return m_data[m_pos++];
  }
  // An unsigned little-endian integer of `n` bytes (1 to 8).
  [[gnu::always_inline]] uint64_t uintLE(int n) {
    need(uint64_t(n));
    const uint64_t v = loadLE(m_data + m_pos, n);
    m_pos += uint64_t(n);
    return v;
  }
  [[gnu::always_inline]] void skip(uint64_t n) {
    need(n);
    m_pos += n;
  }
  // The next `n` bytes, in place.
  [[gnu::always_inline]] const uint8_t* bytes(uint64_t n) {
    need(n);
    const uint8_t* p = m_data + m_pos;
    m_pos += n;
    return p;
  }

  // A text line (the protocol 0 opcodes): where it starts and its length,
  // without its '\n' (nor a '\r' before it); the position is past the '\n'.
  // Longer than `maxBytes`: the reader's error().
  std::pair<const char*, size_t> textLine(size_t maxBytes) {
    const uint64_t start = m_pos;
    while (true) {
      need(1);
      if (m_data[m_pos] == '\n') break;
      if (m_pos - start > maxBytes)
        static_cast<const Reader*>(this)->error("text line longer than " +
                                                std::to_string(maxBytes) + " bytes");
      ++m_pos;
    }
    size_t n = size_t(m_pos - start);
    ++m_pos;
    const char* p = reinterpret_cast<const char*>(m_data + start);
    if (n && p[n - 1] == '\r') --n;
    return {p, n};
  }

  const uint8_t* m_data;
  uint64_t m_size;
  uint64_t m_pos = 0;
};

}  // namespace ckpt
