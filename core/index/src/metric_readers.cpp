// Reading metric files: metrics.jsonl (a fast path for flat objects of
// numbers, nlohmann for anything else) and console logs (logger names, eval
// lines, tqdm noise; nanoGPT's lines: nanogpt_log.cpp; LogFilter: console_log.cpp).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include <sys/mman.h>

#include "ckpt/format/input_file.h"
#include "ckpt/index/metrics.h"
#include "nanogpt_log.h"

namespace ckpt {
namespace {

using Points = std::vector<std::pair<std::string, MetricPoint>>;

// Files grow while a run trains: cap what one call reads.
constexpr uint64_t kMaxRead = 256ull << 20;
// metrics.jsonl is read this much at a time; a longer line is skipped.
constexpr uint64_t kJsonlBlock = 4ull << 20;
constexpr size_t kMaxJsonlLine = 64u << 20;
// A logger name or metric key longer than this is not one.
constexpr size_t kMaxName = 200;

// The complete lines of `path` from `offset` on; `*end` is where the next
// read continues (just after the last newline).
std::string completeLines(const std::string& path, uint64_t offset, uint64_t* end) {
  if (end) *end = offset;
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(std::max<std::streamoff>(0, in.tellg()));
  if (size < offset) offset = 0;  // truncated and rewritten: start over
  const uint64_t length = std::min(size - offset, kMaxRead);
  std::string text(length, '\0');
  in.seekg(std::streamoff(offset));
  in.read(text.data(), std::streamsize(length));
  text.resize(size_t(in.gcount()));
  const size_t lastNewline = text.rfind('\n');
  text.resize(lastNewline == std::string::npos ? 0 : lastNewline + 1);
  if (end) *end = offset + text.size();
  return text;
}

std::string canonicalMetric(std::string key) {
  if (key == "learning_rate") return "lr";
  return key;
}

// ---------------------------------------------------------------- jsonl

// `text == word` for a literal, compared inline (a million lines compare
// three keys each: std::string_view's out-of-line compare was a tenth of
// reading them).
template <size_t N>
bool is(std::string_view text, const char (&word)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), word, N - 1) == 0;
}

bool sameText(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// A JSON number (or Python's NaN / Infinity / -Infinity) at `p`; `integer`
// says whether it was written without fraction or exponent.
// Clinger's fast path: a decimal with at most 15 significant digits and a
// power of ten of at most 22 is m * 10^e or m / 10^-e of two exactly
// representable doubles, so one IEEE operation rounds it correctly: the
// same bits strtod / from_chars give. Anything else: nothing.
std::optional<double> fastDecimal(const char* p, const char* end, const char** after) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  uint64_t m = 0;
  int digits = 0, exponent = 0;
  const char* q = p;
  while (q < end && *q == '0') ++q;  // leading zeros are not significant
  bool any = q > p;
  for (; q < end && *q >= '0' && *q <= '9'; ++q, ++digits, any = true)
    m = m * 10 + uint64_t(*q - '0');
  if (q < end && *q == '.') {
    ++q;
    if (m == 0)
      for (; q < end && *q == '0'; ++q, any = true) --exponent;  // 0.000123: zeros after the point
    for (; q < end && *q >= '0' && *q <= '9'; ++q, ++digits, any = true) {
      m = m * 10 + uint64_t(*q - '0');
      --exponent;
    }
  }
  if (!any || digits > 15) return std::nullopt;
  if (q < end && (*q == 'e' || *q == 'E')) {
    ++q;
    const bool minus = q < end && *q == '-';
    if (q < end && (*q == '-' || *q == '+')) ++q;
    int e = 0, n = 0;
    for (; q < end && *q >= '0' && *q <= '9' && n < 4; ++q, ++n) e = e * 10 + (*q - '0');
    if (n == 0 || (q < end && *q >= '0' && *q <= '9')) return std::nullopt;
    exponent += minus ? -e : e;
  }
  if (exponent < -22 || exponent > 22) return std::nullopt;
  double v = double(m);
  v = exponent < 0 ? v / kPow10[-exponent] : v * kPow10[exponent];
  *after = q;
  return negative ? -v : v;
}

bool parseJsonNumber(const char*& p, const char* end, double& value, bool& integer) {
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
  // A fraction, an exponent, or more than 18 digits: from_chars (what
  // follows the number is checked by the caller).
  integer = *r >= '0' && *r <= '9';
  if (!integer) {
    const char* after = nullptr;
    if (const auto v = fastDecimal(start, end, &after)) {
      value = *v;
      p = after;
      return true;
    }
  }
  const auto res = std::from_chars(start, end, value);
  if (res.ec != std::errc()) return false;  // 1e999: the slow path decides
  // An integer of 19+ digits: from_chars read it; was it one?
  integer = integer && std::all_of(q, res.ptr, [](char c) { return c >= '0' && c <= '9'; });
  p = res.ptr;
  return true;
}

// Skips a JSON string at `p` (on its opening quote), escapes included.
bool skipString(const char*& p, const char* end) {
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
bool skipValue(const char*& p, const char* end) {
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
bool parseFlatLine(std::string_view line, MetricPoint& base,
                   std::vector<std::pair<std::string_view, double>>& metrics, bool& hasStep) {
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

// ---------------------------------------------------------------- logs

bool digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

int number(std::string_view s, size_t at, size_t n) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

// "YYYY-MM-DD HH:MM:SS" (optionally ",mmm" or ".mmm") at `at`: seconds
// since the epoch read as UTC, and where it ends.
std::optional<double> timestampAt(std::string_view s, size_t at, size_t* after) {
  if (!digits(s, at, 4) || s.size() < at + 19 || s[at + 4] != '-' || !digits(s, at + 5, 2) ||
      s[at + 7] != '-' || !digits(s, at + 8, 2) || (s[at + 10] != ' ' && s[at + 10] != 'T') ||
      !digits(s, at + 11, 2) || s[at + 13] != ':' || !digits(s, at + 14, 2) || s[at + 16] != ':' ||
      !digits(s, at + 17, 2))
    return std::nullopt;
  const int mon = number(s, at + 5, 2), day = number(s, at + 8, 2);
  const int h = number(s, at + 11, 2), mi = number(s, at + 14, 2), sec = number(s, at + 17, 2);
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || h > 23 || mi > 59 || sec > 60)
    return std::nullopt;
  double t = double(daysFromCivil(number(s, at, 4), unsigned(mon), unsigned(day)) * 86400 +
                    h * 3600 + mi * 60 + sec);
  size_t i = at + 19;
  if (i + 1 < s.size() && (s[i] == ',' || s[i] == '.') && digits(s, i + 1, 1)) {
    // Milliseconds (logging's ",123"): seconds + 123 / 1000.0, as Python adds them.
    size_t j = i + 1;
    int64_t fraction = 0;
    double scale = 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) && j - i <= 9) {
      fraction = fraction * 10 + (s[j] - '0');
      scale *= 10;
      ++j;
    }
    t += double(fraction) / scale;
    i = j;
  }
  *after = i;
  return t;
}

// A piece of a line taken apart: the logger's run, the wall time, the message.
struct Record {
  std::string_view logger;  // "" when none
  std::optional<double> wallTime;
  std::string_view message;
};

bool isLevel(std::string_view s) {
  return s == "DEBUG" || s == "INFO" || s == "WARNING" || s == "WARN" || s == "ERROR" ||
         s == "CRITICAL";
}

Record splitRecord(std::string_view piece) {
  Record r;
  r.message = piece;
  // `%(asctime)s - %(name)s - %(levelname)s - %(message)s`, possibly right
  // after a progress bar's text on the same piece.
  for (size_t at = piece.find('-'); at != std::string_view::npos; at = piece.find('-', at + 1)) {
    size_t after = 0;
    const auto t = at >= 4 ? timestampAt(piece, at - 4, &after) : std::nullopt;
    if (!t) continue;
    r.wallTime = t;
    std::string_view rest = piece.substr(after);
    r.message = rest;
    if (rest.substr(0, 3) != " - ") return r;
    rest.remove_prefix(3);
    const size_t nameEnd = rest.find(" - ");
    if (nameEnd == std::string_view::npos) return r;
    const std::string_view name = rest.substr(0, nameEnd);
    std::string_view afterName = rest.substr(nameEnd + 3);
    const size_t levelEnd = afterName.find(" - ");
    if (levelEnd != std::string_view::npos && isLevel(afterName.substr(0, levelEnd))) {
      r.logger = name;
      r.message = afterName.substr(levelEnd + 3);
    } else {
      r.message = rest;
    }
    return r;
  }
  // basicConfig's default `%(levelname)s:%(name)s:%(message)s`.
  const size_t colon = piece.find(':');
  if (colon != std::string_view::npos && isLevel(piece.substr(0, colon))) {
    const std::string_view rest = piece.substr(colon + 1);
    const size_t nameEnd = rest.find(':');
    if (nameEnd != std::string_view::npos && nameEnd < kMaxName &&
        rest.substr(0, nameEnd).find(' ') == std::string_view::npos) {
      r.logger = rest.substr(0, nameEnd);
      r.message = rest.substr(nameEnd + 1);
    }
  }
  return r;
}

// The run a logger names: `trainer.<run>`.
std::string_view runOfLogger(std::string_view logger) {
  constexpr std::string_view kTrainer = "trainer.";
  if (logger.size() > kTrainer.size() && logger.substr(0, kTrainer.size()) == kTrainer &&
      logger.size() < kMaxName)
    return logger.substr(kTrainer.size());
  return {};
}

std::optional<double> parseNumber(std::string_view s) {
  while (!s.empty() && (s.back() == '%' || s.back() == ',' || s.back() == ';')) s.remove_suffix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    if (s == "nan" || s == "NaN") return std::nan("");
    return std::nullopt;
  }
  return v;
}

bool isSeparator(char c) {
  return c == ' ' || c == '\t' || c == ',' || c == '|' || c == '\r';
}

bool startsWithWord(std::string_view s, std::string_view word) {
  if (s.size() < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != word[i]) return false;
  return s.size() == word.size() || !std::isalnum(static_cast<unsigned char>(s[word.size()]));
}

// An evaluation's message: "eval step=...", "Eval: step=...", "validation step=...".
bool isEvalMessage(std::string_view m) {
  while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
  return startsWithWord(m, "eval") || startsWithWord(m, "evaluation") || startsWithWord(m, "val") ||
         startsWithWord(m, "validation");
}

// tqdm's bar: "<desc>:  12%|█▏   | 120/1000 [...]".
bool looksLikeProgressBar(std::string_view piece) {
  return piece.find("%|") != std::string_view::npos;
}

void parsePiece(std::string_view piece, std::vector<LoggedPoint>& out) {
  if (piece.find("step=") == std::string_view::npos) return;
  const Record rec = splitRecord(piece);
  if (!rec.wallTime && rec.logger.empty() && looksLikeProgressBar(piece))
    return;  // a bar's postfix
  const std::string_view line = rec.message;
  // key=value pairs separated by spaces (or commas / pipes).
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && isSeparator(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !isSeparator(line[i])) ++i;
    const std::string_view token = line.substr(start, i - start);
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq > kMaxName) continue;
    const std::string_view key = token.substr(0, eq);
    if (!std::all_of(key.begin(), key.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        }))
      continue;
    pairs.emplace_back(key, token.substr(eq + 1));
  }
  std::optional<int64_t> step;
  std::optional<int64_t> tokens;
  for (const auto& [k, v] : pairs) {
    const auto n = parseNumber(v);
    if (!n || *n < 0 || *n != std::floor(*n) || *n > 9.2e18) continue;
    if (k == "step")
      step = int64_t(*n);
    else if (k == "tokens")
      tokens = int64_t(*n);
  }
  if (!step) return;
  const bool eval = isEvalMessage(line);
  const std::string run(runOfLogger(rec.logger));
  for (const auto& [k, v] : pairs) {
    if (k == "step" || k == "tokens") continue;
    const auto n = parseNumber(v);
    if (!n) continue;
    LoggedPoint p;
    p.run = run;
    std::string key(k);
    if (key.rfind("eval_", 0) == 0)
      key = "val_" + key.substr(5);
    else if (eval && key.rfind("val_", 0) != 0)
      key = "val_" + key;
    p.metric = canonicalMetric(std::move(key));
    p.point.step = *step;
    p.point.value = *n;
    p.point.wallTime = rec.wallTime;
    p.point.tokens = tokens;
    out.push_back(std::move(p));
  }
}

}  // namespace

namespace {

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

bool blankLine(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// A block of complete lines parsed on several threads (a million-line file
// parses about twice as fast on two cores); the points come out in file order.
struct ParsedPart {
  std::vector<std::pair<std::string_view, MetricPoint>> points;
  std::deque<std::string> names;
  std::vector<std::pair<size_t, uint64_t>> bad;  // (byte in the block, line number in the part)
  uint64_t lines = 0;
};

void parsePart(std::string_view text, size_t at, ParsedPart& out) {
  std::vector<std::pair<std::string_view, double>> metrics;
  out.points.reserve(text.size() / 24);
  auto emit = [&out](std::string_view metric, const MetricPoint& p) {
    out.points.emplace_back(metric, p);
  };
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    const size_t nl = text.find('\n', lineStart);
    const std::string_view line = text.substr(lineStart, nl - lineStart);
    ++out.lines;
    if (!blankLine(line) && !parseJsonlLine(line, metrics, out.names, emit))
      out.bad.emplace_back(at + lineStart, out.lines);
    lineStart = nl + 1;
  }
}

// Blocks this big or more are split among threads.
constexpr size_t kParallelBlock = 1u << 20;

std::string badLineProblem(const std::string& path, uint64_t at, uint64_t line, bool fromOffset) {
  return path + ": byte " + std::to_string(at) + " (line " + std::to_string(line) +
         (fromOffset ? " from there" : "") + "): not a JSON object with an integer \"step\"";
}

}  // namespace

unsigned metricThreads() {
  static const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  return n;
}

void readMetricsJsonl(const std::string& path, const MetricSink& sink, uint64_t offset,
                      uint64_t* end, std::vector<std::string>* problems) {
  if (end) *end = offset;
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(std::max<std::streamoff>(0, in.tellg()));
  if (size < offset) offset = 0;  // truncated and rewritten: start over
  in.seekg(std::streamoff(offset));
  // Read in blocks: a million-line file is never held whole. What the file
  // holds now is read; lines appended meanwhile wait for the next call.
  uint64_t remaining = size - offset;
  uint64_t bufferStart = offset;  // file offset of buffer[0]
  std::string buffer;
  uint64_t lineNumber = 0;
  bool skipping = false;  // inside a line too long to hold
  std::vector<std::pair<std::string_view, double>> metrics;
  std::deque<std::string> names;
  auto bad = [&](uint64_t at, uint64_t line) {
    if (problems) problems->push_back(badLineProblem(path, at, line, offset != 0));
  };
  // The complete lines buffer[from, to) (`to` just past a newline).
  auto handleLines = [&](size_t from, size_t to) {
    const unsigned threads = to - from >= kParallelBlock ? metricThreads() : 1;
    if (threads == 1) {
      size_t lineStart = from;
      while (lineStart < to) {
        const size_t nl = buffer.find('\n', lineStart);
        const std::string_view line(buffer.data() + lineStart, nl - lineStart);
        ++lineNumber;
        names.clear();
        if (!blankLine(line) && !parseJsonlLine(line, metrics, names, sink))
          bad(bufferStart + lineStart, lineNumber);
        lineStart = nl + 1;
      }
      return;
    }
    // Parts end at newlines; the points go to the sink part by part.
    std::vector<size_t> cuts{from};
    for (unsigned t = 1; t < threads; ++t) {
      const size_t guess = std::max(cuts.back(), from + (to - from) * t / threads);
      const size_t nl = guess >= to ? std::string::npos : buffer.find('\n', guess);
      cuts.push_back(nl == std::string::npos || nl + 1 > to ? to : nl + 1);
    }
    cuts.push_back(to);
    std::vector<ParsedPart> parts(threads);
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t)
      workers.emplace_back(parsePart,
                           std::string_view(buffer.data() + cuts[t], cuts[t + 1] - cuts[t]),
                           cuts[t], std::ref(parts[t]));
    parsePart(std::string_view(buffer.data() + cuts[0], cuts[1] - cuts[0]), cuts[0], parts[0]);
    for (std::thread& w : workers) w.join();
    for (const ParsedPart& part : parts) {
      for (const auto& [at, line] : part.bad) bad(bufferStart + at, lineNumber + line);
      for (const auto& [metric, p] : part.points) sink(metric, p);
      lineNumber += part.lines;
    }
  };

  while (remaining > 0) {
    const size_t old = buffer.size();
    const size_t chunk = size_t(std::min<uint64_t>(remaining, kJsonlBlock));
    buffer.resize(old + chunk);
    in.read(buffer.data() + old, std::streamsize(chunk));
    const size_t got = size_t(in.gcount());
    buffer.resize(old + got);
    if (got == 0) break;
    remaining -= got;
    size_t lineStart = 0;
    const size_t lastNl = buffer.rfind('\n');
    if (lastNl != std::string::npos && lastNl >= old) {
      if (skipping) {
        // The rest of a too-long line: it ends at the first newline.
        skipping = false;
        lineStart = buffer.find('\n', old) + 1;
      }
      handleLines(lineStart, lastNl + 1);
      lineStart = lastNl + 1;
    }
    buffer.erase(0, lineStart);
    bufferStart += lineStart;
    if (buffer.size() > kMaxJsonlLine) {
      if (!skipping && problems)
        problems->push_back(path + ": byte " + std::to_string(bufferStart) +
                            ": a line longer than " + std::to_string(kMaxJsonlLine >> 20) +
                            " MiB, skipped");
      ++lineNumber;
      skipping = true;
      bufferStart += buffer.size();
      buffer.clear();
    }
  }
  if (end) *end = bufferStart;
}

Points readMetricsJsonl(const std::string& path, uint64_t offset, uint64_t* end,
                        std::vector<std::string>* problems) {
  Points out;
  readMetricsJsonl(
      path,
      [&out](std::string_view metric, const MetricPoint& p) {
        out.emplace_back(std::string(metric), p);
      },
      offset, end, problems);
  return out;
}

namespace {

// One part's lines of a metrics.jsonl read whole, per metric in file order.
struct SeriesPart {
  std::vector<FileSeries> series;
  std::vector<char> increasing;                  // per series: its steps strictly increase
  std::vector<std::pair<size_t, uint64_t>> bad;  // (byte in the file, line number in the part)
  uint64_t lines = 0;
  bool longLine = false;  // a line the block reader would skip as too long
};

// Lines this long are left to the block reader (which skips those over
// kMaxJsonlLine, depending on where its blocks end).
constexpr size_t kLongLine = kMaxJsonlLine - kJsonlBlock;

// Room for `n` points in `v`, which is then written once from start to end.
// A million points are 48 MB: on Linux the kernel is asked for huge pages
// under them (touching 4 KiB pages one fault at a time was a third of
// reading the benchmark's file on our VM).
void reserveLarge(std::vector<MetricPoint>& v, size_t n) {
  v.reserve(n);
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  const uintptr_t data = reinterpret_cast<uintptr_t>(v.data());
  const uintptr_t start = (data + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (data + v.capacity() * sizeof(MetricPoint)) & ~(kHuge - 1);
  if (end >= start + 2 * kHuge)
    ::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
#endif
}

void parseSeriesPart(std::string_view text, size_t at, size_t expectedLines, SeriesPart& out) {
  std::vector<std::pair<std::string_view, double>> metrics;
  std::deque<std::string> names;
  // Lines name their metrics in the same order: look the next one up where
  // the last line had it.
  size_t next = 0;
  auto emit = [&](std::string_view metric, const MetricPoint& p) {
    if (next >= out.series.size() || !sameText(out.series[next].metric, metric)) {
      next = 0;
      while (next < out.series.size() && !sameText(out.series[next].metric, metric)) ++next;
      if (next == out.series.size()) {
        out.series.push_back({std::string(metric), {}, {}});
        reserveLarge(out.series.back().points, expectedLines);
        out.increasing.push_back(1);
      }
    }
    std::vector<MetricPoint>& v = out.series[next].points;
    if (!v.empty() && p.step <= v.back().step) out.increasing[next] = 0;
    v.push_back(p);
    ++next;
  };
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    const size_t nl = text.find('\n', lineStart);
    const std::string_view line = text.substr(lineStart, nl - lineStart);
    ++out.lines;
    if (line.size() >= kLongLine) {
      out.longLine = true;
      return;
    }
    names.clear();
    if (!blankLine(line) && !parseJsonlLine(line, metrics, names, emit))
      out.bad.emplace_back(at + lineStart, out.lines);
    lineStart = nl + 1;
  }
}

// The block reader's result in the same form (files with very long lines).
std::vector<FileSeries> seriesFromBlocks(const std::string& path, uint64_t* end,
                                         std::vector<std::string>* problems) {
  std::vector<FileSeries> out;
  readMetricsJsonl(
      path,
      [&out](std::string_view metric, const MetricPoint& p) {
        auto it = std::find_if(out.begin(), out.end(),
                               [&](const FileSeries& s) { return s.metric == metric; });
        if (it == out.end()) it = out.insert(out.end(), FileSeries{std::string(metric), {}, {}});
        addInFileOrder(it->points, it->restarts, p);
      },
      0, end, problems);
  return out;
}

}  // namespace

std::vector<FileSeries> readMetricsJsonlSeries(const std::string& path, uint64_t* end,
                                               std::vector<std::string>* problems) {
  if (end) *end = 0;
  ByteRegion region;
  try {
    const InputFile file(path);
    region = file.map(0, file.size());
  } catch (const std::exception&) {
    return seriesFromBlocks(path, end, problems);  // not a file that maps: read as it can be
  }
  const std::string_view all(reinterpret_cast<const char*>(region.data), size_t(region.size));
  const size_t lastNl = all.rfind('\n');
  const std::string_view text =
      lastNl == std::string_view::npos ? std::string_view() : all.substr(0, lastNl + 1);
  if (all.size() - text.size() >= kLongLine) return seriesFromBlocks(path, end, problems);

  // Parts end at newlines. Room for every line's point, from the size of
  // the part and of the first line: a million points would otherwise move
  // through a dozen growing copies. The first part's lists take the other
  // parts' points, so they get room for the whole file.
  const unsigned threads = text.size() >= kParallelBlock ? metricThreads() : 1;
  std::vector<size_t> cuts{0};
  for (unsigned t = 1; t < threads; ++t) {
    const size_t guess = std::max(cuts.back(), text.size() * t / threads);
    const size_t nl = guess >= text.size() ? std::string_view::npos : text.find('\n', guess);
    cuts.push_back(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  cuts.push_back(text.size());
  const size_t firstLine = text.empty() ? 1 : text.find('\n') + 1;
  auto expected = [firstLine](size_t bytes) {
    const size_t lines = bytes / firstLine;
    return std::min(lines + lines / 16 + 16, bytes / 8 + 16);
  };
  std::vector<SeriesPart> parts(threads);
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < threads; ++t)
    workers.emplace_back(parseSeriesPart, text.substr(cuts[t], cuts[t + 1] - cuts[t]), cuts[t],
                         expected(cuts[t + 1] - cuts[t]), std::ref(parts[t]));
  parseSeriesPart(text.substr(0, cuts[1]), 0, expected(text.size()), parts[0]);
  for (std::thread& w : workers) w.join();
  for (const SeriesPart& part : parts)
    if (part.longLine) return seriesFromBlocks(path, end, problems);

  // Joined in file order, as if every point went through addInFileOrder.
  std::vector<FileSeries> out;
  uint64_t lineNumber = 0;
  for (SeriesPart& part : parts) {
    if (problems)
      for (const auto& [at, line] : part.bad)
        problems->push_back(badLineProblem(path, at, lineNumber + line, false));
    lineNumber += part.lines;
    for (size_t i = 0; i < part.series.size(); ++i) {
      FileSeries& from = part.series[i];
      const bool increasing = part.increasing[i] != 0;
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const FileSeries& s) { return s.metric == from.metric; });
      if (it == out.end()) {
        if (increasing) {
          out.push_back(std::move(from));
          continue;
        }
        it = out.insert(out.end(), FileSeries{from.metric, {}, {}});
      }
      if (increasing && (it->points.empty() || from.points.front().step > it->points.back().step))
        it->points.insert(it->points.end(), from.points.begin(), from.points.end());
      else
        for (const MetricPoint& p : from.points) addInFileOrder(it->points, it->restarts, p);
    }
  }
  if (end) *end = text.size();
  return out;
}

std::vector<LoggedPoint> readConsoleLogLines(const std::string& path, uint64_t offset,
                                             uint64_t* end) {
  std::vector<LoggedPoint> out;
  const std::string text = completeLines(path, offset, end);
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    const size_t nl = text.find('\n', lineStart);
    const std::string_view line(text.data() + lineStart, nl - lineStart);
    lineStart = nl + 1;
    if (detail::parseNanoGptLine(line, out)) continue;
    if (line.find("step=") == std::string_view::npos) continue;
    // tqdm redraws with '\r': each piece is a bar or a record.
    size_t pieceStart = 0;
    while (pieceStart <= line.size()) {
      size_t cr = line.find('\r', pieceStart);
      if (cr == std::string_view::npos) cr = line.size();
      parsePiece(line.substr(pieceStart, cr - pieceStart), out);
      pieceStart = cr + 1;
    }
  }
  return out;
}

}  // namespace ckpt
