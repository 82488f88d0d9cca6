// Reading metrics.jsonl: a fast path for flat objects of numbers, nlohmann
// for anything else; in blocks from an offset (live updates), or a whole
// file on several threads. Console logs: console_log.cpp.
#include <algorithm>
#include <atomic>
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

#include "ckpt/format/input_file.h"
#include "ckpt/index/metrics.h"
#include "metric_text.h"

namespace ckpt {
namespace {

using Points = std::vector<std::pair<std::string, MetricPoint>>;

using detail::canonicalMetric;
using detail::kJsonlBlock;
using detail::kMaxJsonlLine;

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

// memcmp(a, b, n) == 0 for the few bytes between a line's values, without
// a call: loads of 8 (or 4) bytes from both ends, overlapping, within the n.
bool sameBytes(const char* a, const char* b, size_t n) {
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

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// Where a decimal's first significant digit stands, as a power of ten plus
// one (12.5 and 1.25e1: 2; 0.05: -1), for one too large or too small for a
// double; 0 for a zero.
int64_t decimalMagnitude(const char* p, const char* end) {
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

namespace {
thread_local bool t_singleThreaded = false;
}  // namespace

unsigned metricThreads() {
  static const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  return t_singleThreaded ? 1 : n;
}

SingleThreadedMetrics::SingleThreadedMetrics() : m_was(t_singleThreaded) {
  t_singleThreaded = true;
}

SingleThreadedMetrics::~SingleThreadedMetrics() {
  t_singleThreaded = m_was;
}

void readMetricsJsonl(const std::string& path, const MetricSink& sink, uint64_t offset,
                      uint64_t* end, std::vector<std::string>* problems) {
  uint64_t lineNumber = 0;
  std::vector<std::pair<std::string_view, double>> metrics;
  std::deque<std::string> names;
  auto bad = [&](uint64_t at, uint64_t line) {
    if (problems) problems->push_back(badLineProblem(path, at, line, offset != 0));
  };
  // A block of complete lines, starting at byte `base` of the file.
  auto handleLines = [&](std::string_view text, uint64_t base) {
    const unsigned threads = text.size() >= kParallelBlock ? metricThreads() : 1;
    if (threads == 1) {
      for (size_t lineStart = 0; lineStart < text.size();) {
        const size_t nl = text.find('\n', lineStart);
        const std::string_view line = text.substr(lineStart, nl - lineStart);
        ++lineNumber;
        names.clear();
        if (!blankLine(line) && !parseJsonlLine(line, metrics, names, sink))
          bad(base + lineStart, lineNumber);
        lineStart = nl + 1;
      }
      return;
    }
    // Parts end at newlines; the points go to the sink part by part.
    std::vector<size_t> cuts{0};
    for (unsigned t = 1; t < threads; ++t) {
      const size_t guess = std::max(cuts.back(), text.size() * t / threads);
      const size_t nl = guess >= text.size() ? std::string_view::npos : text.find('\n', guess);
      cuts.push_back(nl == std::string_view::npos ? text.size() : nl + 1);
    }
    cuts.push_back(text.size());
    std::vector<ParsedPart> parts(threads);
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t)
      workers.emplace_back(parsePart, text.substr(cuts[t], cuts[t + 1] - cuts[t]), cuts[t],
                           std::ref(parts[t]));
    parsePart(text.substr(0, cuts[1]), 0, parts[0]);
    for (std::thread& w : workers) w.join();
    for (const ParsedPart& part : parts) {
      for (const auto& [at, line] : part.bad) bad(base + at, lineNumber + line);
      for (const auto& [metric, p] : part.points) sink(metric, p);
      lineNumber += part.lines;
    }
  };
  detail::forEachLineBlock(path, offset, end, handleLines, [&](uint64_t at) {
    ++lineNumber;
    if (problems)
      problems->push_back(path + ": byte " + std::to_string(at) + ": a line longer than " +
                          std::to_string(kMaxJsonlLine >> 20) + " MiB, skipped");
  });
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

// A line's layout: the bytes before each value (`{"step": `, `, "loss": `)
// and after the last (`}`), and what each value is. A trainer writes every
// line with the same keys in the same order, so a line is matched against
// the layout of one before it with one memcmp a key instead of scanning
// and comparing its keys (half of a sweep's cold open was parseFlatLine).
// A line matched gives the points parseFlatLine gives for it; one that
// differs by a byte outside its numbers goes through parseJsonlLine.
class LineShape {
 public:
  enum class Role : uint8_t { Step, WallTime, Tokens, Metric };
  struct Key {
    std::string lead;  // from the end of the value before (or the line's start) to this value
    Role role = Role::Metric;
    size_t series = 0;  // a metric's index in the part's series
  };

  // The layout of `line`, a flat object of numbers with an integer step
  // (false for anything else: a string value, no step); `seriesOf` gives a
  // metric's series (the line's points were emitted: they exist).
  template <typename SeriesOf>
  bool learn(std::string_view line, const SeriesOf& seriesOf) {
    MetricPoint base;
    bool hasStep = false;
    std::vector<std::pair<std::string_view, double>> metrics;
    if (!parseFlatLine(line, base, metrics, hasStep) || !hasStep) return false;
    // The line is well formed: walk it again, keeping the bytes between values.
    m_keys.clear();
    const char* p = line.data();
    const char* end = p + line.size();
    const char* from = p;
    auto skip = [&] {
      while (p < end && isSpace(*p)) ++p;
    };
    skip();
    ++p;  // '{'
    while (true) {
      skip();
      const char* keyStart = ++p;  // after '"'
      while (*p != '"') ++p;
      const std::string_view key(keyStart, size_t(p - keyStart));
      ++p;
      skip();
      ++p;  // ':'
      skip();
      if (*p == '"' || *p == '{' || *p == '[' || *p == 't' || *p == 'f' || *p == 'n') return false;
      Key k;
      k.lead.assign(from, p);
      k.role = is(key, "step")        ? Role::Step
               : is(key, "wall_time") ? Role::WallTime
               : is(key, "tokens")    ? Role::Tokens
                                      : Role::Metric;
      if (k.role == Role::Metric)
        k.series = seriesOf(is(key, "learning_rate") ? std::string_view("lr") : key);
      m_keys.push_back(std::move(k));
      double v = 0;
      bool integer = false;
      if (!parseJsonNumber(p, end, v, integer)) return false;
      from = p;
      skip();
      if (*p == ',') {
        ++p;
        continue;
      }
      m_tail.assign(from, end);
      return true;
    }
  }

  // The line's step, wall time and tokens into `base` and its metrics'
  // values into `values` (by key); false when it is not laid out so.
  bool match(std::string_view line, MetricPoint& base, std::vector<double>& values) const {
    const char* p = line.data();
    const char* end = p + line.size();
    values.resize(m_keys.size());
    for (size_t i = 0; i < m_keys.size(); ++i) {
      const Key& k = m_keys[i];
      if (size_t(end - p) < k.lead.size() || !sameBytes(p, k.lead.data(), k.lead.size()))
        return false;
      p += k.lead.size();
      double v = 0;
      bool integer = false;
      if (!parseJsonNumber(p, end, v, integer)) return false;
      switch (k.role) {
        case Role::Step:
          if (!integer || !(std::fabs(v) < 9.2e18)) return false;  // parseFlatLine refuses it
          base.step = int64_t(v);
          break;
        case Role::WallTime:
          base.wallTime = v;
          break;
        case Role::Tokens:
          if (std::isfinite(v) && std::fabs(v) < 9.2e18) base.tokens = int64_t(v);
          break;
        case Role::Metric:
          values[i] = v;
          break;
      }
    }
    return size_t(end - p) == m_tail.size() && sameBytes(p, m_tail.data(), m_tail.size());
  }

  [[nodiscard]] const std::vector<Key>& keys() const { return m_keys; }

 private:
  std::vector<Key> m_keys;
  std::string m_tail;  // after the last value: `}`, and spaces or '\r' after it
};

void parseSeriesPart(std::string_view text, size_t at, size_t expectedLines, SeriesPart& out) {
  std::vector<std::pair<std::string_view, double>> metrics;
  std::deque<std::string> names;
  // Lines name their metrics in the same order: look the next one up where
  // the last line had it.
  size_t next = 0;
  auto seriesOf = [&](std::string_view metric) {
    if (next >= out.series.size() || !sameText(out.series[next].metric, metric)) {
      next = 0;
      while (next < out.series.size() && !sameText(out.series[next].metric, metric)) ++next;
      if (next == out.series.size()) {
        out.series.push_back({std::string(metric), {}, {}});
        out.series.back().points.reserve(expectedLines);
        out.increasing.push_back(1);
      }
    }
    return next++;
  };
  std::vector<int64_t> lastStep;  // per series (read off its column, a progression's is computed)
  auto add = [&](size_t series, const MetricPoint& p) {
    SeriesPoints& v = out.series[series].points;
    if (series >= lastStep.size()) lastStep.resize(series + 1);
    if (!v.empty() && p.step <= lastStep[series]) out.increasing[series] = 0;
    lastStep[series] = p.step;
    v.push_back(p);
  };
  auto emit = [&](std::string_view metric, const MetricPoint& p) { add(seriesOf(metric), p); };
  // The layouts of the lines seen (a few: train and eval lines alternate),
  // the last matched first. A file whose lines all differ stops learning.
  constexpr size_t kShapes = 4;
  std::vector<LineShape> shapes;
  std::vector<double> values;
  uint64_t learned = 0;
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    const size_t nl = text.find('\n', lineStart);
    const std::string_view line = text.substr(lineStart, nl - lineStart);
    ++out.lines;
    if (line.size() >= kLongLine) {
      out.longLine = true;
      return;
    }
    lineStart = nl + 1;
    bool matched = false;
    for (size_t s = 0; s < shapes.size() && !matched; ++s) {
      MetricPoint base;
      if (!shapes[s].match(line, base, values)) continue;
      matched = true;
      const auto& keys = shapes[s].keys();
      for (size_t k = 0; k < keys.size(); ++k) {
        if (keys[k].role != LineShape::Role::Metric) continue;
        MetricPoint p = base;
        p.value = values[k];
        add(keys[k].series, p);
      }
      if (s != 0) std::swap(shapes[s], shapes[0]);
    }
    if (matched) continue;
    names.clear();
    if (blankLine(line)) continue;
    if (!parseJsonlLine(line, metrics, names, emit)) {
      out.bad.emplace_back(at + (line.data() - text.data()), out.lines);
      continue;
    }
    if (learned > 64 && learned * 8 > out.lines) continue;  // hardly a line repeats a layout
    LineShape shape;
    if (!shape.learn(line, seriesOf)) continue;
    ++learned;
    if (shapes.size() == kShapes) shapes.pop_back();
    shapes.insert(shapes.begin(), std::move(shape));
  }
}

// Counts the metrics.jsonl files read whole at this moment (all threads).
class FileBeingRead {
 public:
  FileBeingRead() : m_count(s_reading.fetch_add(1) + 1) {}
  ~FileBeingRead() { s_reading.fetch_sub(1); }
  FileBeingRead(const FileBeingRead&) = delete;
  FileBeingRead& operator=(const FileBeingRead&) = delete;
  // Files being read when this one started, itself included.
  [[nodiscard]] unsigned count() const { return m_count; }

 private:
  static inline std::atomic<unsigned> s_reading{0};
  unsigned m_count;
};

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
  // Split only while fewer files than threads are read at once: a sweep's
  // runs read on the thread pool keep the cores busy already, and a split
  // file costs a thread and the joining of its parts (a tenth of a cold
  // sweep's open).
  const FileBeingRead reading;
  const unsigned threads =
      text.size() >= kParallelBlock ? std::max(1u, metricThreads() / reading.count()) : 1;
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
        it->points.append(from.points);
      else
        for (const MetricPoint& p : from.points) addInFileOrder(it->points, it->restarts, p);
    }
  }
  if (end) *end = text.size();
  return out;
}

}  // namespace ckpt
