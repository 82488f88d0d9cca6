#pragma once
// JSON as Python's json module writes it (internal): json.dump writes NaN,
// Infinity and -Infinity bare (a loss that went to NaN), which nlohmann
// rejects. A Hugging Face Trainer's trainer_state.json and W&B's
// wandb-summary.json / history values are such JSON.

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt::detail {

// Outside strings the bare words become strings that no JSON text can hold
// unescaped-equal (a leading U+0001), read back as those numbers by numberOf.
inline constexpr std::string_view kNanMark = "\x01NaN";
inline constexpr std::string_view kInfMark = "\x01Infinity";
inline constexpr std::string_view kNegInfMark = "\x01-Infinity";

inline std::string markNonFinite(std::string_view text) {
  std::string out;
  bool inString = false, escaped = false, changed = false;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      out.push_back(c);
      continue;
    }
    if (c == '"') inString = true;
    const std::string_view rest = text.substr(i);
    std::string_view word, mark;
    if (rest.starts_with("NaN"))
      word = "NaN", mark = "\\u0001NaN";
    else if (rest.starts_with("Infinity"))
      word = "Infinity", mark = "\\u0001Infinity";
    else if (rest.starts_with("-Infinity"))
      word = "-Infinity", mark = "\\u0001-Infinity";
    if (!word.empty()) {
      out += '"';
      out += mark;
      out += '"';
      i += word.size() - 1;
      changed = true;
      continue;
    }
    out.push_back(c);
  }
  if (!changed) return std::string(text);
  return out;
}

// A JSON number, or one of the marked bare words; nothing otherwise.
inline std::optional<double> numberOf(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned() || v.is_number_float())
    return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == kNanMark) return std::numeric_limits<double>::quiet_NaN();
    if (s == kInfMark) return std::numeric_limits<double>::infinity();
    if (s == kNegInfMark) return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

inline std::optional<int64_t> integerOf(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t(INT64_MAX))
    return int64_t(v.get<uint64_t>());
  // A float step that is a whole number (a hand-edited state): taken as that step.
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15) return int64_t(d);
  }
  return std::nullopt;
}

}  // namespace ckpt::detail
