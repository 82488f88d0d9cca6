// Reading metrics.jsonl: a fast path for flat objects of numbers, nlohmann
// for anything else; in blocks from an offset (live updates), or a whole
// file on several threads. Console logs: console_log.cpp.
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
        out.series.back().points.reserve(expectedLines);
        out.increasing.push_back(1);
      }
    }
    SeriesPoints& v = out.series[next].points;
    if (!v.empty() && p.step <= v.step(v.size() - 1)) out.increasing[next] = 0;
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
        it->points.append(from.points);
      else
        for (const MetricPoint& p : from.points) addInFileOrder(it->points, it->restarts, p);
    }
  }
  if (end) *end = text.size();
  return out;
}

}  // namespace ckpt
