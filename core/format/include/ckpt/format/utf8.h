#pragma once
// Strict UTF-8, shared by the pickle reader, the tokenizers and the datasets.

#include <cstdint>
#include <string>
#include <string_view>

namespace ckpt::utf8 {

constexpr char32_t kInvalid = 0xFFFFFFFF;

struct Decoded {
  char32_t cp;   // kInvalid for a bad or truncated sequence
  uint32_t len;  // bytes consumed (1 for a bad sequence: its first byte)
};

// One code point at s[pos] (pos < s.size()); overlong forms, surrogates and
// values past U+10FFFF are invalid.
Decoded decode(std::string_view s, size_t pos);
void append(std::string& out, char32_t cp);
// Offset of the first byte that does not start a valid sequence, or -1.
int64_t firstInvalid(std::string_view s);

}  // namespace ckpt::utf8
