#pragma once
// Numbers as Python's str() writes them in the text files other trainers
// leave (Lightning's metrics.csv, MLflow's metric lines), and the file test
// those readers share (internal).

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "ascii.h"

namespace ckpt::detail {

inline bool isRegularFile(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

// 0.5, 3, 1e-05, nan, inf, -inf; nothing for anything else (empty included).
inline std::optional<double> pythonFloat(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const std::string lower = asciiLower(s);
  if (lower == "nan") return std::nan("");
  if (lower == "inf" || lower == "infinity") return HUGE_VAL;
  if (lower == "-inf" || lower == "-infinity") return -HUGE_VAL;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The whole text as a decimal integer; nothing otherwise.
inline std::optional<int64_t> wholeInteger(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace ckpt::detail
