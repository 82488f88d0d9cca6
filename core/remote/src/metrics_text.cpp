// The `metrics` result as text, both ways, without a JSON tree of its points
// (metrics_wire.h): a sweep's answer is tens of megabytes; with nlohmann's
// tree of it the agent took 1.32 s for the 300-run benchmark (0.41 s as
// text), and over ssh the command took 6.3 s (1.9 s). Everything but the points is small and still
// goes through parseJsonText / runMetricsFromWire, so strings (bytes as \udcXY) and the other
// fields read exactly as before.
#include <algorithm>
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

  // A column of `columns` (see appendIntColumn): values or a progression.
  struct Column {
    bool present = false;
    bool progression = false;
    double firstReal = 0, strideReal = 0;
    int64_t firstInt = 0, strideInt = 0;
    std::vector<std::optional<double>> reals;
    std::vector<std::optional<int64_t>> ints;
    [[nodiscard]] size_t size() const { return std::max(reals.size(), ints.size()); }
  };
  Column column(const std::string& name, bool integral) {
    Column c;
    c.present = true;
    const std::string first = name + ".first", stride = name + ".stride";
    if (take('{')) {
      c.progression = true;
      bool sawFirst = false, sawStride = false;
      if (!take('}')) {
        do {
          const std::string k = key();
          if (k == "first" || k == "stride") {
            const bool isFirst = k == "first";
            (isFirst ? sawFirst : sawStride) = true;
            if (integral)
              (isFirst ? c.firstInt : c.strideInt) = integer((isFirst ? first : stride).c_str());
            else
              (isFirst ? c.firstReal : c.strideReal) = real((isFirst ? first : stride).c_str());
          } else {
            (void)valueToken();
          }
        } while (take(','));
        expect('}', ("after " + name).c_str());
      }
      if (!sawFirst || !sawStride) fail(name + ": a progression needs first and stride");
      return c;
    }
    expect('[', ("(columns." + name + " is neither an array nor {first, stride})").c_str());
    if (!take(']')) {
      do {
        if (integral)
          c.ints.push_back(null() ? std::nullopt : std::optional<int64_t>(integer(name.c_str())));
        else
          c.reals.push_back(null() ? std::nullopt : std::optional<double>(real(name.c_str())));
      } while (take(','));
      expect(']', ("after columns." + name).c_str());
    }
    return c;
  }

  // {"count": N, "step": COL, "value": COL, "wall_time": COL, "tokens": COL}
  // into `points`.
  void columns(SeriesPoints& points) {
    expect('{', "(columns is not an object)");
    std::optional<int64_t> count;
    Column step, value, wall, tokens;
    if (!take('}')) {
      do {
        const std::string k = key();
        if (k == "count")
          count = integer("columns.count");
        else if (k == "step")
          step = column("step", true);
        else if (k == "value")
          value = column("value", false);
        else if (k == "wall_time")
          wall = column("wall_time", false);
        else if (k == "tokens")
          tokens = column("tokens", true);
        else
          (void)valueToken();
      } while (take(','));
      expect('}', "after the columns");
    }
    if (!count || *count < 0) fail("columns.count is missing or negative");
    // Progressions cost nothing on the wire: a hostile count must not make
    // billions of points (a 1 GiB answer holds fewer than 2^30 anyway).
    if (*count > (int64_t(1) << 30)) fail("columns.count is past 2^30 points");
    const size_t n = size_t(*count);
    if (!step.present || !value.present) fail("columns need step and value");
    for (const auto& [c, name] : {std::pair<const Column*, const char*>{&step, "step"},
                                  {&value, "value"},
                                  {&wall, "wall_time"},
                                  {&tokens, "tokens"}})
      if (c->present && !c->progression && c->size() != n)
        fail(std::string("columns.") + name + " has " + std::to_string(c->size()) + " values for " +
             std::to_string(n) + " points");
    for (size_t i = 0; i < n; ++i) {
      where.point = i;
      const auto intAt = [i](const Column& c) -> std::optional<int64_t> {
        if (!c.present) return std::nullopt;
        if (!c.progression) return c.ints[i];
        return int64_t(uint64_t(c.firstInt) + uint64_t(c.strideInt) * uint64_t(i));
      };
      const auto realAt = [i](const Column& c) -> std::optional<double> {
        if (!c.present) return std::nullopt;
        if (!c.progression) return c.reals[i];
        return std::fma(c.strideReal, double(i), c.firstReal);
      };
      const std::optional<int64_t> s = intAt(step);
      const std::optional<double> v = realAt(value);
      if (!s) fail("columns.step has null at " + std::to_string(i));
      if (!v) fail("columns.value has null at " + std::to_string(i));
      points.push(*s, *v, realAt(wall), intAt(tokens));
    }
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
              if (sk == "points" || sk == "columns") {
                points.clear();
                if (sk == "points")
                  in.points(points);
                else
                  in.columns(points);
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

// An integer column that is a progression, as `columns` give it.
void appendIntProgression(std::string& out, int64_t first, int64_t stride) {
  char b[kNumberTextMax + 2];
  out += "{\"first\":";
  out.append(b, size_t(writeInteger(b, first) - b));
  out += ",\"stride\":";
  out.append(b, size_t(writeInteger(b, stride) - b));
  out += '}';
}

// A column as docs/REMOTE.md's `columns` give it: {"first":a,"stride":b}
// when value i is first + stride * i for every point (integers wrapping as
// uint64; reals as fma(stride, i, first), one rounding, the same bits on
// every machine), else an array of the N values, null where a point has none.
template <typename Get>
void appendIntColumn(std::string& out, size_t n, const Get& get) {
  char b[kNumberTextMax + 2];
  bool progression = n >= 2;
  const std::optional<int64_t> first = n ? get(0) : std::nullopt;
  const std::optional<int64_t> second = n >= 2 ? get(1) : std::nullopt;
  progression = first && second;
  const uint64_t stride = progression ? uint64_t(*second) - uint64_t(*first) : 0;
  for (size_t i = 0; progression && i < n; ++i) {
    const std::optional<int64_t> v = get(i);
    progression = v && uint64_t(*v) == uint64_t(*first) + stride * uint64_t(i);
  }
  if (progression) {
    appendIntProgression(out, *first, int64_t(stride));
    return;
  }
  out += '[';
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    if (const std::optional<int64_t> v = get(i))
      out.append(b, size_t(writeInteger(b, *v) - b));
    else
      out += "null";
  }
  out += ']';
}

bool sameBits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

template <typename Get>
void appendRealColumn(std::string& out, size_t n, const Get& get) {
  char b[kNumberTextMax + 8];
  const std::optional<double> first = n ? get(0) : std::nullopt;
  const std::optional<double> second = n >= 2 ? get(1) : std::nullopt;
  bool progression = first && second;
  const double stride = progression ? *second - *first : 0;
  for (size_t i = 0; progression && i < n; ++i) {
    const std::optional<double> v = get(i);
    progression = v && sameBits(*v, std::fma(stride, double(i), *first));
  }
  if (progression) {
    out += "{\"first\":";
    out.append(b, size_t(writeReal(b, *first) - b));
    out += ",\"stride\":";
    out.append(b, size_t(writeReal(b, stride) - b));
    out += '}';
    return;
  }
  out += '[';
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    if (const std::optional<double> v = get(i))
      out.append(b, size_t(writeReal(b, *v) - b));
    else
      out += "null";
  }
  out += ']';
}

}  // namespace

void appendColumnsText(std::string& out, const SeriesPoints& p) {
  const size_t n = p.size();
  out += "{\"count\":";
  out += std::to_string(n);
  out += ",\"step\":";
  // Steps kept as a progression (series_points.h) are one, exactly as the
  // check below would find point by point: given as it is.
  if (const PointColumn<int64_t>& steps = p.stepColumn(); n >= 2 && !steps.data()) {
    appendIntProgression(out, steps.first(), steps.stride());
  } else {
    appendIntColumn(out, n, [&p](size_t i) { return std::optional<int64_t>(p.step(i)); });
  }
  out += ",\"value\":";
  appendRealColumn(out, n, [&p](size_t i) { return std::optional<double>(p.value(i)); });
  if (p.hasWallTimes()) {
    out += ",\"wall_time\":";
    appendRealColumn(out, n, [&p](size_t i) { return p.wallTime(i); });
  }
  if (p.hasTokens()) {
    out += ",\"tokens\":";
    appendIntColumn(out, n, [&p](size_t i) { return p.tokens(i); });
  }
  out += '}';
}

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
