#pragma once
// A protobuf wire-format reader (internal): varints, 32- and 64-bit fixed
// fields and length-delimited fields over bytes in memory; unknown fields are
// skipped by their wire type. Enough for the few messages of a TensorBoard
// event file, without libprotobuf and a protoc step (docs/ARCHITECTURE.md).
// Every read is bounds-checked: a malformed message sets failed(), never reads
// past its bytes.

#include <cstdint>
#include <cstring>
#include <string_view>

namespace ckpt::detail {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, Bytes = 2, Fixed32 = 5 };

class ProtoReader {
 public:
  ProtoReader(const uint8_t* data, size_t size) : m_p(data), m_end(data + size), m_begin(data) {}
  explicit ProtoReader(std::string_view bytes)
      : ProtoReader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) {}

  // Moves to the next field: false at the end of the message or on an error.
  bool next() {
    if (m_p >= m_end || m_failed) return false;
    const uint64_t key = varint();
    if (m_failed) return false;
    m_field = uint32_t(key >> 3);
    const auto wire = uint8_t(key & 7);
    if (m_field == 0 || (wire != 0 && wire != 1 && wire != 2 && wire != 5))
      return fail("bad field key");  // groups (3, 4) are from proto2's past: no event uses them
    m_wire = WireType(wire);
    return true;
  }
  [[nodiscard]] uint32_t field() const { return m_field; }
  [[nodiscard]] WireType wire() const { return m_wire; }
  [[nodiscard]] bool failed() const { return m_failed; }
  [[nodiscard]] const char* error() const { return m_error; }
  // Where the reader is, from the start of its bytes (for error messages).
  [[nodiscard]] size_t position() const { return size_t(m_p - m_begin); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (m_p >= m_end) return fail("truncated varint"), 0;
      const uint8_t b = *m_p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return fail("varint longer than 10 bytes"), 0;
  }
  uint32_t fixed32() {
    uint32_t v = 0;
    if (m_end - m_p < 4) return fail("truncated fixed32"), 0;
    std::memcpy(&v, m_p, 4);  // little-endian hosts, as the rest of the reader
    m_p += 4;
    return v;
  }
  uint64_t fixed64() {
    uint64_t v = 0;
    if (m_end - m_p < 8) return fail("truncated fixed64"), 0;
    std::memcpy(&v, m_p, 8);
    m_p += 8;
    return v;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (m_failed) return {};
    if (n > uint64_t(m_end - m_p)) {
      fail("length past the end of the message");
      return {};
    }
    const std::string_view s(reinterpret_cast<const char*>(m_p), size_t(n));
    m_p += n;
    return s;
  }
  float float32() {
    const uint32_t u = fixed32();
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  double float64() {
    const uint64_t u = fixed64();
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  }
  // The current field's value, whatever its wire type, unread.
  void skip() {
    switch (m_wire) {
      case WireType::Varint:
        (void)varint();
        break;
      case WireType::Fixed64:
        (void)fixed64();
        break;
      case WireType::Bytes:
        (void)bytes();
        break;
      case WireType::Fixed32:
        (void)fixed32();
        break;
    }
  }
  bool fail(const char* why) {
    if (!m_failed) m_error = why;
    m_failed = true;
    return false;
  }

 private:
  const uint8_t* m_p;
  const uint8_t* m_end;
  const uint8_t* m_begin;
  uint32_t m_field = 0;
  WireType m_wire = WireType::Varint;
  bool m_failed = false;
  const char* m_error = "";
};

}  // namespace ckpt::detail
