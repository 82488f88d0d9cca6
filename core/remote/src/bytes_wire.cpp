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
  base64Append(bytes, out);
  return out;
}

void base64Append(std::string_view bytes, std::string& out) {
  const size_t at = out.size();
  out.resize(at + (bytes.size() + 2) / 3 * 4, '=');
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  char* o = out.data() + at;
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3, o += 4) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    o[2] = kAlphabet[(v >> 6) & 63];
    o[3] = kAlphabet[v & 63];
  }
  if (const size_t rest = bytes.size() - i) {
    const uint32_t v = uint32_t(p[i]) << 16 | (rest == 2 ? uint32_t(p[i + 1]) << 8 : 0);
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    if (rest == 2) o[2] = kAlphabet[(v >> 6) & 63];
  }
}

bool base64Decode(std::string_view text, std::string& out) {
  static constexpr std::array<int8_t, 256> table = decodeTable();
  if (text.size() % 4 != 0) return false;
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  const size_t at = out.size();
  out.resize(at + text.size() / 4 * 3 - pad);
  auto* o = reinterpret_cast<uint8_t*>(out.data() + at);
  const auto* t = reinterpret_cast<const uint8_t*>(text.data());
  const size_t whole = text.size() - (pad ? 4 : 0);  // quads without '='
  for (size_t i = 0; i < whole; i += 4, o += 3) {
    const int a = table[t[i]], b = table[t[i + 1]], c = table[t[i + 2]], d = table[t[i + 3]];
    if ((a | b | c | d) < 0) return false;
    const uint32_t v = uint32_t(a) << 18 | uint32_t(b) << 12 | uint32_t(c) << 6 | uint32_t(d);
    o[0] = uint8_t(v >> 16);
    o[1] = uint8_t(v >> 8);
    o[2] = uint8_t(v);
  }
  if (pad) {
    const size_t i = whole;
    const int a = table[t[i]], b = table[t[i + 1]], c = pad == 1 ? table[t[i + 2]] : 0;
    if ((a | b | c) < 0 || (pad == 2 && t[i + 2] != '=')) return false;
    const uint32_t v = uint32_t(a) << 18 | uint32_t(b) << 12 | uint32_t(c) << 6;
    o[0] = uint8_t(v >> 16);
    if (pad == 1) o[1] = uint8_t(v >> 8);
  }
  return true;
}

}  // namespace ckpt::remote
