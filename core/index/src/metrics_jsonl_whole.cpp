// metrics.jsonl read whole (readMetricsJsonlSeries): the file mapped, its
// lines matched against the layouts of the lines before them, split among
// threads when few files are read at once. The block reader (from an
// offset, live updates) is metric_readers.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

#include "ckpt/format/input_file.h"
#include "ckpt/index/metrics.h"
#include "jsonl_line.h"
#include "metric_text.h"

namespace ckpt {
namespace {

using detail::badLineProblem;
using detail::blankLine;
using detail::cutsAtNewlines;
using detail::is;
using detail::isSpace;
using detail::kJsonlBlock;
using detail::kMaxJsonlLine;
using detail::kParallelBlock;
using detail::parseFlatLine;
using detail::parseJsonlLine;
using detail::parseJsonNumber;
using detail::sameBytes;
using detail::sameText;

}  // namespace

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

  // The line that starts at `p` (and ends at its '\n' or at `end`), if it
  // is laid out so: its step, wall time and tokens into `base`, its
  // metrics' values into `values` (by key), and where it ends (its '\n',
  // or `end`); nullptr when it is not. The bytes between values were
  // learned from a line and hold no '\n', nor does a number, so the line's
  // end need not be looked for first.
  const char* match(const char* p, const char* end, MetricPoint& base,
                    std::vector<double>& values) const {
    values.resize(m_keys.size());
    for (size_t i = 0; i < m_keys.size(); ++i) {
      const Key& k = m_keys[i];
      if (size_t(end - p) < k.lead.size() || !sameBytes(p, k.lead.data(), k.lead.size()))
        return nullptr;
      p += k.lead.size();
      double v = 0;
      bool integer = false;
      if (!parseJsonNumber(p, end, v, integer)) return nullptr;
      switch (k.role) {
        case Role::Step:
          if (!integer || !(std::fabs(v) < 9.2e18)) return nullptr;  // parseFlatLine refuses it
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
    if (size_t(end - p) < m_tail.size() || !sameBytes(p, m_tail.data(), m_tail.size()))
      return nullptr;
    p += m_tail.size();
    return p == end || *p == '\n' ? p : nullptr;
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
  const char* const textEnd = text.data() + text.size();
  while (lineStart < text.size()) {
    // A line laid out as one seen before: read where it stands.
    const char* const start = text.data() + lineStart;
    const char* lineEnd = nullptr;
    for (size_t s = 0; s < shapes.size() && !lineEnd; ++s) {
      MetricPoint base;
      lineEnd = shapes[s].match(start, textEnd, base, values);
      if (!lineEnd) continue;
      const auto& keys = shapes[s].keys();
      for (size_t k = 0; k < keys.size(); ++k) {
        if (keys[k].role != LineShape::Role::Metric) continue;
        MetricPoint p = base;
        p.value = values[k];
        add(keys[k].series, p);
      }
      if (s != 0) std::swap(shapes[s], shapes[0]);
    }
    if (lineEnd) {
      ++out.lines;
      if (size_t(lineEnd - start) >= kLongLine) {
        out.longLine = true;
        return;
      }
      lineStart = size_t(lineEnd - text.data()) + 1;
      continue;
    }
    const size_t nl = text.find('\n', lineStart);
    const std::string_view line = text.substr(lineStart, nl - lineStart);
    ++out.lines;
    if (line.size() >= kLongLine) {
      out.longLine = true;
      return;
    }
    lineStart = nl + 1;
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

// A mapped file's pages all mapped in one call, as it is read whole: page
// faults (one each 64 kB, of a few microseconds each in a VM) were a tenth
// of a cold sweep's open. Advice only: an older kernel maps them as read.
void mapEveryPage(const ByteRegion& region) {
#ifdef MADV_POPULATE_READ
  if (region.size <= InputFile::kReadWholeBytes) return;  // read into memory, not mapped
  const auto at = reinterpret_cast<std::uintptr_t>(region.data);
  const auto page = std::uintptr_t(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t start = at & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(start), size_t(at + region.size - start), MADV_POPULATE_READ);
#else
  (void)region;
#endif
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
  mapEveryPage(region);
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
  const std::vector<size_t> cuts = cutsAtNewlines(text, threads);
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
