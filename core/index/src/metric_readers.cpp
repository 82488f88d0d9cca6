// Reading metrics.jsonl in blocks from an offset (live updates), a block
// of a megabyte or more split among threads; one line is read by
// jsonl_line.h. A file read whole: metrics_jsonl_whole.cpp. Console logs:
// console_log.cpp.
#include <algorithm>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ckpt/index/metrics.h"
#include "jsonl_line.h"
#include "metric_text.h"

namespace ckpt {
namespace {

using Points = std::vector<std::pair<std::string, MetricPoint>>;

using detail::badLineProblem;
using detail::blankLine;
using detail::cutsAtNewlines;
using detail::kMaxJsonlLine;
using detail::kParallelBlock;
using detail::parseJsonlLine;

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
    const std::vector<size_t> cuts = cutsAtNewlines(text, threads);
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

}  // namespace ckpt
