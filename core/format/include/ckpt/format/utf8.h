#pragma once
// Strict UTF-8, shared by the pickle reader, the tokenizers, the datasets and
// every JSON writer.

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

// Names from files are bytes; JSON text is UTF-8. The one way every JSON
// writer bridges the two (docs/ARCHITECTURE.md, "JSON output"): valid UTF-8
// is kept as it is, and each byte that does not begin a valid sequence,
// 0xXY (always 0x80-0xFF), is written \udcXY, the lone surrogate Python's
// "surrogateescape" error handler makes of it. So
// `json.loads(text)[...].encode("utf-8", "surrogateescape")` gives back the
// bytes the file holds, and a name that is valid UTF-8 reads as itself.
// Appends `bytes` as a quoted JSON string; control characters escaped as
// nlohmann::json escapes them.
void appendJsonString(std::string& out, std::string_view bytes);
// `bytes` for a message: each invalid byte written \xXY (Python's bytes
// repr), the rest as it is.
std::string printable(std::string_view bytes);

}  // namespace ckpt::utf8
