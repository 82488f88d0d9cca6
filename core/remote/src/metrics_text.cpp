// The `metrics` result as text, both ways, without a JSON tree of its points
// (metrics_wire.h): a sweep's answer is tens of megabytes, and nlohmann's
// tree of it cost the agent ~1 s to build and free and the client ~2 s to
// parse. Everything but the points is small and still goes through
// parseJsonText / runMetricsFromWire, so strings (bytes as \udcXY) and the
// other fields read exactly as before.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "ckpt/format/json_text.h"
#include "ckpt/index/number_text.h"
#include "ckpt/remote/metrics_wire.h"

namespace ckpt::remote {
namespace {

using Json = nlohmann::ordered_json;

// A real on the wire: the shortest text that reads back exactly (with ".0"
// on an integral value, as nlohmann writes one), or "nan", "inf", "-inf".
char* writeReal(char* w, double d) {
  if (std::isnan(d)) {
    std::memcpy(w, "\"nan\"", 5);
    return w + 5;
  }
  if (std::isinf(d)) {
    const char* t = d > 0 ? "\"inf\"" : "\"-inf\"";
    const size_t n = std::strlen(t);
    std::memcpy(w, t, n);
    return w + n;
  }
  char* start = w;
  w = writeShortest(w, d);
  if (std::memchr(start, '.', size_t(w - start)) == nullptr &&
      std::memchr(start, 'e', size_t(w - start)) == nullptr) {
    std::memcpy(w, ".0", 2);
    w += 2;
  }
  return w;
}

// Where the reader is, said only when something is wrong.
struct Where {
  size_t run = 0, series = 0, point = 0;
  int depth = 0;  // 0: the result, 1: runs[run], 2: its series, 3: a point
  [[nodiscard]] std::string text() const {
    std::string s = depth == 0 ? "the result" : "runs[" + std::to_string(run) + "]";
    if (depth >= 2) s += ".series[" + std::to_string(series) + "]";
    if (depth >= 3) s += ".points[" + std::to_string(point) + "]";
    return s;
  }
};

class TextReader {
 public:
  explicit TextReader(std::string_view t) : m_t(t) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("metrics: " + where.text() + ": " + what + " (byte " +
                             std::to_string(m_i) + " of the answer)");
  }
  void ws() {
    while (m_i < m_t.size() &&
           (m_t[m_i] == ' ' || m_t[m_i] == '\n' || m_t[m_i] == '\r' || m_t[m_i] == '\t'))
      ++m_i;
  }
  char peek() {
    ws();
    if (m_i >= m_t.size()) fail("the answer ends here");
    return m_t[m_i];
  }
  bool take(char c) {
    if (peek() != c) return false;
    ++m_i;
    return true;
  }
  void expect(char c, const char* what) {
    if (!take(c)) fail(std::string("expected '") + c + "' " + what);
  }
  [[nodiscard]] bool atEnd() {
    ws();
    return m_i == m_t.size();
  }

  // A string's text, quotes included (escapes left as they are).
  std::string_view stringToken() {
    if (peek() != '"') fail("expected a string");
    const size_t start = m_i++;
    for (;;) {
      const size_t q = m_t.find_first_of("\"\\", m_i);
      if (q == std::string_view::npos) {
        m_i = m_t.size();
        fail("the answer ends inside a string");
      }
      if (m_t[q] == '\\') {
        m_i = q + 2;
        continue;
      }
      m_i = q + 1;
      return m_t.substr(start, m_i - start);
    }
  }
  // An object's key and its ':'.
  std::string key() {
    const std::string_view t = stringToken();
    std::string k = t.find('\\') == std::string_view::npos ? std::string(t.substr(1, t.size() - 2))
                                                           : parseJsonText(t).get<std::string>();
    expect(':', "after a key");
    return k;
  }
  // The text of the next value, whatever it is (without recursion: a
  // hostile nesting cannot overflow the stack; parseJsonText checks it).
  std::string_view valueToken() {
    peek();
    const size_t start = m_i;
    int depth = 0;
    do {
      const char c = peek();
      if (c == '"') {
        stringToken();
      } else if (c == '[' || c == '{') {
        ++depth;
        ++m_i;
      } else if (c == ']' || c == '}') {
        if (--depth < 0) fail("expected a value");
        ++m_i;
      } else if (c == ',' || c == ':') {
        if (depth == 0) fail("expected a value");
        ++m_i;
      } else {
        while (m_i < m_t.size() && std::strchr(",:]}[{\" \n\r\t", m_t[m_i]) == nullptr) ++m_i;
      }
    } while (depth > 0);
    return m_t.substr(start, m_i - start);
  }
  Json value() {
    const std::string_view t = valueToken();
    try {
      return parseJsonText(t);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  [[nodiscard]] bool null() {
    if (peek() != 'n') return false;
    if (m_t.substr(m_i, 4) != "null") fail("expected null");
    m_i += 4;
    return true;
  }
  int64_t integer(const char* field) {
    peek();
    int64_t v = 0;
    const char* b = m_t.data() + m_i;
    const char* e = m_t.data() + m_t.size();
    const auto [end, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) fail(std::string(field) + " is out of range");
    if (ec != std::errc() || (end < e && (*end == '.' || *end == 'e' || *end == 'E')))
      fail(std::string(field) + " is not an integer");
    m_i += size_t(end - b);
    return v;
  }
  double real(const char* field) {
    if (peek() == '"') {
      const std::string_view t = stringToken();
      if (t == "\"nan\"") return std::numeric_limits<double>::quiet_NaN();
      if (t == "\"inf\"") return std::numeric_limits<double>::infinity();
      if (t == "\"-inf\"") return -std::numeric_limits<double>::infinity();
      fail(std::string(field) + " is not a number");
    }
    const char* b = m_t.data() + m_i;
    const char* e = m_t.data() + m_t.size();
    // JSON's numbers only (from_chars would also take "inf", "nan").
    if (!(*b == '-' || (*b >= '0' && *b <= '9'))) fail(std::string(field) + " is not a number");
    double v = 0;
    auto [end, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) {
      // 1e999 / 1e-999: what nlohmann (strtod) reads, inf / 0.
      const std::string copy(b, size_t(end - b));
      v = std::strtod(copy.c_str(), nullptr);
    } else if (ec != std::errc()) {
      fail(std::string(field) + " is not a number");
    }
    m_i += size_t(end - b);
    return v;
  }

  // [[step, value, wall_time|null, tokens|null], ...] into `points`.
  void points(SeriesPoints& points) {
    expect('[', "(points is not an array)");
    where.depth = 3;
    where.point = 0;
    if (!take(']')) {
      do {
        expect('[', "(a point is [step, value, wall_time, tokens])");
        const int64_t step = integer("step");
        expect(',', "after step");
        const double value = real("value");
        expect(',', "after value");
        std::optional<double> wall;
        if (!null()) wall = real("wall_time");
        expect(',', "after wall_time");
        std::optional<int64_t> tokens;
        if (!null()) tokens = integer("tokens");
        expect(']', "(a point is [step, value, wall_time, tokens])");
        points.push(step, value, wall, tokens);
        ++where.point;
      } while (take(','));
      expect(']', "after the last point");
    }
    where.depth = 2;
  }

  Where where;

 private:
  std::string_view m_t;
  size_t m_i = 0;
};

RunMetrics readRun(TextReader& in) {
  in.expect('{', "(a run is an object)");
  Json run = Json::object();
  std::vector<SeriesPoints> columns;
  if (!in.take('}')) {
    do {
      const std::string k = in.key();
      if (k != "series") {
        run[k] = in.value();
        continue;
      }
      Json series = Json::array();
      columns.clear();
      in.expect('[', "(series is not an array)");
      in.where.depth = 2;
      in.where.series = 0;
      if (!in.take(']')) {
        do {
          in.expect('{', "(a series is an object)");
          Json s = Json::object();
          SeriesPoints points;
          if (!in.take('}')) {
            do {
              const std::string sk = in.key();
              if (sk == "points") {
                points.clear();
                in.points(points);
                s["points"] = Json::array();  // the columns stand in for them
              } else {
                s[sk] = in.value();
              }
            } while (in.take(','));
            in.expect('}', "after a series' last field");
          }
          series.push_back(std::move(s));
          columns.push_back(std::move(points));
          ++in.where.series;
        } while (in.take(','));
        in.expect(']', "after the last series");
      }
      in.where.depth = 1;
      run["series"] = std::move(series);
    } while (in.take(','));
    in.expect('}', "after a run's last field");
  }
  RunMetrics r;
  try {
    r = runMetricsFromWire(run);
  } catch (const std::exception& e) {
    in.fail(e.what());
  }
  for (size_t k = 0; k < r.series.size() && k < columns.size(); ++k)
    r.series[k].points = std::move(columns[k]);
  return r;
}

}  // namespace

void appendPointsText(std::string& out, const SeriesPoints& points) {
  out += '[';
  char b[4 * kNumberTextMax + 16];
  for (size_t i = 0; i < points.size(); ++i) {
    char* w = b;
    if (i) *w++ = ',';
    *w++ = '[';
    w = writeInteger(w, points.step(i));
    *w++ = ',';
    w = writeReal(w, points.value(i));
    *w++ = ',';
    if (const auto wall = points.wallTime(i)) {
      w = writeReal(w, *wall);
    } else {
      std::memcpy(w, "null", 4);
      w += 4;
    }
    *w++ = ',';
    if (const auto tokens = points.tokens(i)) {
      w = writeInteger(w, *tokens);
    } else {
      std::memcpy(w, "null", 4);
      w += 4;
    }
    *w++ = ']';
    out.append(b, size_t(w - b));
  }
  out += ']';
}

std::vector<RunMetrics> metricsResultFromText(std::string_view text) {
  TextReader in(text);
  std::vector<RunMetrics> runs;
  bool sawRuns = false;
  in.expect('{', "(the result is an object)");
  if (!in.take('}')) {
    do {
      const std::string k = in.key();
      if (k != "runs") {
        (void)in.valueToken();  // a field this client does not know
        continue;
      }
      sawRuns = true;
      runs.clear();
      in.expect('[', "(runs is not an array)");
      if (!in.take(']')) {
        do {
          in.where.depth = 1;
          runs.push_back(readRun(in));
          ++in.where.run;
        } while (in.take(','));
        in.where.depth = 0;
        in.expect(']', "after the last run");
      }
    } while (in.take(','));
    in.expect('}', "after the result's last field");
  }
  if (!sawRuns) in.fail("runs is missing");
  if (!in.atEnd()) in.fail("something follows the result");
  return runs;
}

}  // namespace ckpt::remote
