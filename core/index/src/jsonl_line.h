#pragma once
// One metrics.jsonl line read (internal, shared by metric_readers.cpp, the
// block reader, and metrics_jsonl_whole.cpp, a file read whole): numbers
// parsed by hand, a flat object of numbers without nlohmann, the rest with it.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ckpt/index/metrics.h"
#include "metric_text.h"

namespace ckpt::detail {

// ---------------------------------------------------------------- jsonl

// `text == word` for a literal, compared inline (a million lines compare
// three keys each: std::string_view's out-of-line compare was a tenth of
// reading them).
template <size_t N>
bool is(std::string_view text, const char (&word)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), word, N - 1) == 0;
}

inline bool sameText(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

// memcmp(a, b, n) == 0 for the few bytes between a line's values, without
// a call: loads of 8 (or 4) bytes from both ends, overlapping, within the n.
inline bool sameBytes(const char* a, const char* b, size_t n) {
  auto load8 = [](const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  };
  auto load4 = [](const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  if (n > 16) return std::memcmp(a, b, n) == 0;
  if (n >= 8) return load8(a) == load8(b) && load8(a + n - 8) == load8(b + n - 8);
  if (n >= 4) return load4(a) == load4(b) && load4(a + n - 4) == load4(b + n - 4);
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

inline bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// Where a decimal's first significant digit stands, as a power of ten plus
// one (12.5 and 1.25e1: 2; 0.05: -1), for one too large or too small for a
// double; 0 for a zero.
inline int64_t decimalMagnitude(const char* p, const char* end) {
  int64_t digitsBefore = 0, zerosAfter = 0;
  bool significant = false;
  for (; p < end && *p >= '0' && *p <= '9'; ++p)
    if (significant || *p != '0') {
      significant = true;
      ++digitsBefore;
    }
  if (p < end && *p == '.')
    for (++p; p < end && *p >= '0' && *p <= '9'; ++p)
      if (!significant) {
        if (*p != '0')
          significant = true;
        else
          ++zerosAfter;
      }
  if (!significant) return 0;
  int64_t exponent = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    const bool minus = p < end && *p == '-';
    if (p < end && (*p == '-' || *p == '+')) ++p;
    for (; p < end && *p >= '0' && *p <= '9'; ++p)
      exponent = std::min<int64_t>(exponent * 10 + (*p - '0'), int64_t(1) << 40);
    if (minus) exponent = -exponent;
  }
  return (digitsBefore > 0 ? digitsBefore : -zerosAfter) + exponent;
}

// A JSON number (or Python's NaN / Infinity / -Infinity) at `p`; `integer`
// says whether it was written without fraction or exponent.
// Clinger's fast path: a decimal with at most 15 significant digits and a
// power of ten of at most 22 is m * 10^e or m / 10^-e of two exactly
// representable doubles, so one IEEE operation rounds it correctly: the
// same bits strtod / from_chars give.
[[gnu::always_inline]] inline bool parseJsonNumber(const char*& p, const char* end, double& value,
                                                   bool& integer) {
  const char* start = p;
  if (p < end && *p == 'N' && end - p >= 3 && std::string_view(p, 3) == "NaN") {
    p += 3;
    value = std::numeric_limits<double>::quiet_NaN();
    integer = false;
    return true;
  }
  const bool negative = p < end && *p == '-';
  const char* q = p + (negative ? 1 : 0);
  if (q < end && *q == 'I' && end - q >= 8 && std::string_view(q, 8) == "Infinity") {
    p = q + 8;
    value = negative ? -std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::infinity();
    integer = false;
    return true;
  }
  // Integers (steps, token counts) by hand: most numbers of a metrics line.
  const char* r = q;
  uint64_t n = 0;
  while (r < end && *r >= '0' && *r <= '9' && r - q < 18) n = n * 10 + uint64_t(*r++ - '0');
  if (r == q) return false;
  if (r == end || (*r != '.' && *r != 'e' && *r != 'E' && (*r < '0' || *r > '9'))) {
    value = negative ? -double(n) : double(n);
    integer = true;
    p = r;
    return true;
  }
  // A fraction or an exponent after at most 18 digits: Clinger's fast path
  // (fastDecimal's rule) goes on from the digits read, without reading them
  // again. More than 18 digits, or what the fast path cannot round
  // exactly: from_chars (what follows the number is checked by the caller).
  integer = *r >= '0' && *r <= '9';
  if (!integer) {
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    // Significant digits so far: the integer part's without its leading zeros.
    const char* firstSignificant = q;
    while (firstSignificant < r && *firstSignificant == '0') ++firstSignificant;
    int digits = int(r - firstSignificant), exponent = 0;
    uint64_t m = n;
    const char* s = r;
    if (*s == '.') {
      ++s;
      if (m == 0)
        for (; s < end && *s == '0'; ++s) --exponent;  // 0.000123: zeros after the point
      for (; s < end && *s >= '0' && *s <= '9' && digits <= 15; ++s, ++digits, --exponent)
        m = m * 10 + uint64_t(*s - '0');
    }
    bool fast = digits <= 15 && !(s < end && *s >= '0' && *s <= '9');
    if (fast && s < end && (*s == 'e' || *s == 'E')) {
      ++s;
      const bool minus = s < end && *s == '-';
      if (s < end && (*s == '-' || *s == '+')) ++s;
      int e = 0, k = 0;
      for (; s < end && *s >= '0' && *s <= '9' && k < 4; ++s, ++k) e = e * 10 + (*s - '0');
      fast = k > 0 && !(s < end && *s >= '0' && *s <= '9');
      exponent += minus ? -e : e;
    }
    if (fast && exponent >= -22 && exponent <= 22) {
      const double v = double(m);
      value = exponent < 0 ? v / kPow10[-exponent] : v * kPow10[exponent];
      if (negative) value = -value;
      p = s;
      return true;
    }
  }
  const auto res = std::from_chars(start, end, value);
  if (res.ec == std::errc::result_out_of_range) {
    // 1e999 or 1e-999: Python's json reads an infinity or a zero.
    value = decimalMagnitude(q, res.ptr) > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    if (negative) value = -value;
  } else if (res.ec != std::errc()) {
    return false;
  }
  // An integer of 19+ digits: from_chars read it; was it one?
  integer = integer && std::all_of(q, res.ptr, [](char c) { return c >= '0' && c <= '9'; });
  p = res.ptr;
  return true;
}

// Skips a JSON string at `p` (on its opening quote), escapes included.
inline bool skipString(const char*& p, const char* end) {
  for (++p; p < end; ++p) {
    if (*p == '\\') {
      ++p;
    } else if (*p == '"') {
      ++p;
      return true;
    }
  }
  return false;
}

// Skips a value that is not a number: a string, true / false / null, or a
// nested array / object (brackets balanced outside strings, depth capped).
inline bool skipValue(const char*& p, const char* end) {
  if (p >= end) return false;
  if (*p == '"') return skipString(p, end);
  for (std::string_view word : {"true", "false", "null"})
    if (size_t(end - p) >= word.size() && std::string_view(p, word.size()) == word) {
      p += word.size();
      return true;
    }
  if (*p != '{' && *p != '[') return false;
  int depth = 0;
  while (p < end) {
    if (*p == '"') {
      if (!skipString(p, end)) return false;
      continue;
    }
    if (*p == '{' || *p == '[') {
      if (++depth > 64) return false;
    } else if (*p == '}' || *p == ']') {
      if (--depth == 0) {
        ++p;
        return true;
      }
    }
    ++p;
  }
  return false;
}

// One object per line, the way trainers write metrics.jsonl: its number
// members (Python's NaN / Infinity included); other members are skipped.
// Returns false when the line needs a real JSON parser to say what is wrong
// with it (or has an escaped key).
inline bool parseFlatLine(std::string_view line, MetricPoint& base,
                          std::vector<std::pair<std::string_view, double>>& metrics,
                          bool& hasStep) {
  const char* p = line.data();
  const char* end = p + line.size();
  auto skip = [&] {
    while (p < end && isSpace(*p)) ++p;
  };
  skip();
  if (p >= end || *p != '{') return false;
  ++p;
  skip();
  if (p < end && *p == '}') {
    ++p;
    skip();
    return p == end;
  }
  while (true) {
    skip();
    if (p >= end || *p != '"') return false;
    const char* keyStart = ++p;
    while (p < end && *p != '"' && *p != '\\') ++p;
    if (p >= end || *p != '"') return false;
    const std::string_view key(keyStart, size_t(p - keyStart));
    ++p;
    skip();
    if (p >= end || *p != ':') return false;
    ++p;
    skip();
    double v = 0;
    bool integer = false;
    if (p < end && (*p == '"' || *p == '{' || *p == '[' || *p == 't' || *p == 'f' || *p == 'n')) {
      if (!skipValue(p, end) || is(key, "step")) return false;
    } else if (!parseJsonNumber(p, end, v, integer)) {
      return false;
    } else if (is(key, "step")) {
      if (!integer || !(std::fabs(v) < 9.2e18)) return false;  // let the slow path say why
      base.step = int64_t(v);
      hasStep = true;
    } else if (is(key, "wall_time")) {
      base.wallTime = v;
    } else if (is(key, "tokens")) {
      if (std::isfinite(v) && std::fabs(v) < 9.2e18) base.tokens = int64_t(v);
    } else {
      metrics.emplace_back(key, v);
    }
    skip();
    if (p < end && *p == ',') {
      ++p;
      continue;
    }
    if (p < end && *p == '}') {
      ++p;
      skip();
      return p == end;
    }
    return false;
  }
}

// One metrics.jsonl line's points, handed to `emit(metric, point)`; false
// when the line is neither a flat object of numbers nor a JSON object with
// an integer "step". `names` keeps the metric names the slow path makes
// alive until they are emitted.
template <typename Emit>
bool parseJsonlLine(std::string_view line,
                    std::vector<std::pair<std::string_view, double>>& metrics,
                    std::deque<std::string>& names, const Emit& emit) {
  MetricPoint base;
  bool hasStep = false;
  metrics.clear();
  if (parseFlatLine(line, base, metrics, hasStep) && hasStep) {
    for (const auto& [metric, value] : metrics) {
      MetricPoint p = base;
      p.value = value;
      emit(is(metric, "learning_rate") ? std::string_view("lr") : metric, p);
    }
    return true;
  }
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) return false;
  base.step = j["step"].get<int64_t>();
  base.wallTime.reset();
  base.tokens.reset();
  if (j.contains("wall_time") && j["wall_time"].is_number())
    base.wallTime = j["wall_time"].get<double>();
  if (j.contains("tokens") && j["tokens"].is_number()) base.tokens = j["tokens"].get<int64_t>();
  for (const auto& [key, value] : j.items()) {
    if (key == "step" || key == "wall_time" || key == "tokens" || !value.is_number()) continue;
    MetricPoint p = base;
    p.value = value.template get<double>();
    names.push_back(canonicalMetric(key));
    emit(std::string_view(names.back()), p);
  }
  return true;
}

inline bool blankLine(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Where `text` (whole lines) is cut into `parts` parts of about the same
// size, each ending at a newline: parts + 1 offsets, the first 0 and the
// last text.size() (a part may be empty).
inline std::vector<size_t> cutsAtNewlines(std::string_view text, unsigned parts) {
  std::vector<size_t> cuts{0};
  for (unsigned t = 1; t < parts; ++t) {
    const size_t guess = std::max(cuts.back(), text.size() * t / parts);
    const size_t nl = guess >= text.size() ? std::string_view::npos : text.find('\n', guess);
    cuts.push_back(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  cuts.push_back(text.size());
  return cuts;
}

// Blocks this big or more are split among threads.
inline constexpr size_t kParallelBlock = 1u << 20;

inline std::string badLineProblem(const std::string& path, uint64_t at, uint64_t line,
                                  bool fromOffset) {
  return path + ": byte " + std::to_string(at) + " (line " + std::to_string(line) +
         (fromOffset ? " from there" : "") + "): not a JSON object with an integer \"step\"";
}

}  // namespace ckpt::detail
