#include "ckpt/remote/bytes_wire.h"

#include <array>
#include <cstdint>

namespace ckpt::remote {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> decodeTable() {
  std::array<int8_t, 256> t{};
  for (size_t i = 0; i < 256; ++i) t[i] = -1;
  for (int i = 0; i < 64; ++i) t[uint8_t(kAlphabet[i])] = int8_t(i);
  return t;
}

}  // namespace

std::string base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (const size_t rest = bytes.size() - i) {
    const uint32_t v = uint32_t(p[i]) << 16 | (rest == 2 ? uint32_t(p[i + 1]) << 8 : 0);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool base64Decode(std::string_view text, std::string& out) {
  static constexpr std::array<int8_t, 256> table = decodeTable();
  if (text.size() % 4 != 0) return false;
  out.reserve(out.size() + text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int8_t c[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char ch = text[i + size_t(k)];
      if (ch == '=' && i + 4 == text.size() && k >= 2) {
        c[k] = 0;
        ++pad;
        continue;
      }
      if (pad) return false;  // data after '='
      c[k] = table[uint8_t(ch)];
      if (c[k] < 0) return false;
    }
    const uint32_t v =
        uint32_t(c[0]) << 18 | uint32_t(c[1]) << 12 | uint32_t(c[2]) << 6 | uint32_t(c[3]);
    out += char(v >> 16);
    if (pad < 2) out += char((v >> 8) & 255);
    if (pad < 1) out += char(v & 255);
  }
  return true;
}

}  // namespace ckpt::remote
