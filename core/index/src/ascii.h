#pragma once
// Small text helpers the index's sources share (internal).

#include <cctype>
#include <string>
#include <string_view>

namespace ckpt::detail {

// ASCII lower case; other bytes (UTF-8 included) unchanged.
inline std::string asciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace ckpt::detail
