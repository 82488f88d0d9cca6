// ckptscope-cli metrics DIR|FILE... [--json|--csv] [--metric NAME] [--log FILE|DIR] [--no-cache]
// [--stats]
//
// Every run's series as the Curves tab draws them (core/index
// collectMetrics): directories are scanned for runs, checkpoint and
// metrics.jsonl files name the run of their directory, console logs (*.log,
// *.out, *.err) are added to every run's sources (and their lines that
// belong to none make runs of their own).
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "ckpt/format/utf8.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/metrics_cache.h"
#include "ckpt/index/number_text.h"
#include "common.h"
#include "documents.h"
#include "remote_commands.h"

namespace ckpt::cli {
namespace {

// Output is written in big blocks: a million points are 40 MB of JSON.
// An Out made with `toStdout` false only collects (take()): a run's text
// made on another thread.
class Out {
 public:
  explicit Out(bool toStdout = true) : m_toStdout(toStdout) {}
  ~Out() { flush(); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  void put(std::string_view s) {
    m_buf.append(s);
    if (m_buf.size() > (1u << 20)) flush();
  }
  // Text made elsewhere, after what was put before it.
  void write(std::string_view text) {
    flush();
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  void put(char c) { m_buf.push_back(c); }
  // The shortest text that reads back exactly, always a float ("2.0", not
  // "2": Python's json.loads would make that an int).
  void number(double d) {
    char b[40];
    const std::string_view text(b, size_t(writeShortest(b, d) - b));
    m_buf.append(text);
    if (text.find_first_of(".en") == std::string_view::npos) m_buf.append(".0");
  }
  void integer(int64_t n) {
    char b[kNumberTextMax];
    m_buf.append(b, size_t(writeInteger(b, n) - b));
  }
  // `[step, value, wall_time|null, tokens|null]`, one append per point (a
  // million of them).
  static void point(std::string& out, const SeriesPoints& s, size_t i, bool comma) {
    char b[160];
    char* w = b;
    auto text = [&w](std::string_view t) {
      std::memcpy(w, t.data(), t.size());
      w += t.size();
    };
    auto real = [&](double d) {
      if (!std::isfinite(d)) return text("null");
      char* start = w;
      w = writeShortest(w, d);
      if (std::find_if(start, w, [](char c) { return c == '.' || c == 'e' || c == 'n'; }) == w)
        text(".0");
    };
    if (comma) text(", ");
    *w++ = '[';
    w = writeInteger(w, s.step(i));
    text(", ");
    real(s.value(i));
    text(", ");
    if (const auto wall = s.wallTime(i))
      real(*wall);
    else
      text("null");
    text(", ");
    if (const auto tokens = s.tokens(i))
      w = writeInteger(w, *tokens);
    else
      text("null");
    *w++ = ']';
    out.append(b, size_t(w - b));
  }
  // Run names and paths are bytes from the filesystem and the files.
  void jsonString(std::string_view s) { utf8::appendJsonString(m_buf, s); }
  void csvField(std::string_view s) {
    if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
      put(s);
      return;
    }
    put('"');
    for (const char c : s) {
      if (c == '"') put('"');
      put(c);
    }
    put('"');
  }
  // `head` step,value,wall_time,tokens `tail` in one append.
  static void csvRow(std::string& out, std::string_view head, const SeriesPoints& s, size_t i,
                     std::string_view tail) {
    const MetricPoint p = s[i];
    out.append(head);
    char b[128];
    char* w = b;
    w = writeInteger(w, p.step);
    *w++ = ',';
    if (std::isnan(p.value)) {
      std::memcpy(w, "nan", 3);
      w += 3;
    } else if (std::isinf(p.value)) {
      const std::string_view t = p.value > 0 ? "inf" : "-inf";
      std::memcpy(w, t.data(), t.size());
      w += t.size();
    } else {
      w = writeShortest(w, p.value);
    }
    *w++ = ',';
    if (p.wallTime && std::isfinite(*p.wallTime)) w = writeShortest(w, *p.wallTime);
    *w++ = ',';
    if (p.tokens) w = writeInteger(w, *p.tokens);
    out.append(b, size_t(w - b));
    out.append(tail);
  }
  // Rows 0..n-1, each appended by `row(buffer, i)`, in order. A million
  // rows are formatted on several threads (number formatting is most of the
  // export's time), each into its own buffer, written in turn.
  template <typename Row>
  void rows(size_t n, const Row& row) {
    const unsigned threads = n >= (1u << 16) && m_toStdout ? metricThreads() : 1;
    if (threads == 1) {
      for (size_t i = 0; i < n; ++i) {
        row(m_buf, i);
        if (m_buf.size() > (1u << 20)) flush();
      }
      return;
    }
    flush();
    // Slices of 1 << 15 rows (about 1 MB of text) keep each thread's buffer
    // in its cache; the buffers are made once and reused (growing them a
    // million rows long cost page faults and copies: most of the export's
    // system time).
    constexpr size_t kSlice = 1u << 15;
    if (m_parts.size() < threads) m_parts.resize(threads);
    for (std::string& part : m_parts)
      if (part.capacity() < kSlice * 48) part.reserve(kSlice * 48);
    for (size_t from = 0; from < n; from += kSlice * threads) {
      std::vector<std::thread> workers;
      auto format = [&](unsigned t) {
        const size_t a = std::min(n, from + t * kSlice), b = std::min(n, a + kSlice);
        m_parts[t].clear();
        for (size_t i = a; i < b; ++i) row(m_parts[t], i);
      };
      for (unsigned t = 1; t < threads; ++t) workers.emplace_back(format, t);
      format(0);
      for (std::thread& w : workers) w.join();
      for (unsigned t = 0; t < threads; ++t)
        std::fwrite(m_parts[t].data(), 1, m_parts[t].size(), stdout);
    }
  }
  // What was put so far, for a buffer that is not written out.
  std::string take() { return std::exchange(m_buf, {}); }
  void flush() {
    if (!m_toStdout) return;
    if (!m_buf.empty()) std::fwrite(m_buf.data(), 1, m_buf.size(), stdout);
    m_buf.clear();
  }

 private:
  bool m_toStdout;
  std::string m_buf;
  std::vector<std::string> m_parts;  // rows() formats into these, one per thread
};

bool wanted(const MetricSeries& s, const std::vector<std::string>& metrics) {
  return metrics.empty() || std::find(metrics.begin(), metrics.end(), s.metric) != metrics.end();
}

// JSON has no NaN: non-finite values are null, as in diff --json.
void jsonValue(Out& o, double v) {
  if (std::isfinite(v))
    o.number(v);
  else
    o.put("null");
}

// {"name": number, ...}: a checkpoint's recorded values, a run's summary.
void jsonObject(Out& o, const std::map<std::string, double>& values) {
  o.put("{");
  bool first = true;
  for (const auto& [k, v] : values) {
    if (!first) o.put(", ");
    first = false;
    o.jsonString(k);
    o.put(": ");
    jsonValue(o, v);
  }
  o.put("}");
}

// What every format prints of a run, one run at a time: printMetrics and
// MetricsPrinter write the same bytes.
void printJsonRun(Out& o, const RunMetrics& r, const std::vector<std::string>& metrics) {
  o.jsonString(r.run);
  o.put(", \"path\": ");
  o.jsonString(r.path);
  o.put(", \"series\": [");
  bool firstSeries = true;
  for (const MetricSeries& s : r.series) {
    if (!wanted(s, metrics)) continue;
    o.put(firstSeries ? "\n  {\"metric\": " : ",\n  {\"metric\": ");
    firstSeries = false;
    o.jsonString(s.metric);
    o.put(", \"source\": ");
    o.jsonString(metricSourceName(s.source));
    o.put(", \"files\": [");
    for (size_t i = 0; i < s.files.size(); ++i) {
      if (i) o.put(", ");
      o.jsonString(s.files[i]);
    }
    o.put("], \"restarts\": [");
    for (size_t i = 0; i < s.restarts.size(); ++i) {
      if (i) o.put(", ");
      o.integer(s.restarts[i]);
    }
    o.put("], \"points\": [");
    o.rows(s.points.size(),
           [&s](std::string& out, size_t i) { Out::point(out, s.points, i, i > 0); });
    o.put("]}");
  }
  o.put(firstSeries ? "], \"markers\": [" : "\n  ], \"markers\": [");
  for (size_t i = 0; i < r.markers.size(); ++i) {
    const CheckpointMarker& m = r.markers[i];
    o.put(i ? ", {\"step\": " : "{\"step\": ");
    o.integer(m.step);
    o.put(", \"file\": ");
    o.jsonString(m.path);
    o.put(", \"loss\": ");
    if (const auto v = r.markerValue(m, "loss"))
      jsonValue(o, *v);
    else
      o.put("null");
    o.put(", \"recorded\": ");
    jsonObject(o, m.recorded);
    o.put("}");
  }
  o.put("], \"summary\": ");
  jsonObject(o, r.summary);
  o.put(", \"problems\": [");
  for (size_t i = 0; i < r.problems.size(); ++i) {
    if (i) o.put(", ");
    o.jsonString(r.problems[i]);
  }
  o.put("]}");
}

void printCsvRun(Out& o, const RunMetrics& r, const std::vector<std::string>& metrics) {
  for (const MetricSeries& s : r.series) {
    if (!wanted(s, metrics)) continue;
    const std::string source =
        s.files.size() == 1 ? s.files.front() : std::string(metricSourceName(s.source));
    // What every row of the series shares, quoted once.
    Out prefix, suffix;
    prefix.csvField(r.run);
    prefix.put(',');
    prefix.csvField(s.metric);
    prefix.put(',');
    suffix.put(',');
    suffix.csvField(source);
    suffix.put('\n');
    const std::string head = prefix.take(), tail = suffix.take();
    o.rows(s.points.size(),
           [&](std::string& out, size_t i) { Out::csvRow(out, head, s.points, i, tail); });
  }
}

void printTextRun(const RunMetrics& r, const std::vector<std::string>& metrics) {
  std::printf("%s  (%s)\n", r.run.c_str(), r.path.c_str());
  size_t shown = 0;
  for (const MetricSeries& s : r.series) {
    if (!wanted(s, metrics)) continue;
    ++shown;
    const MetricPoint first = s.points.front();
    const MetricPoint last = s.points.back();
    std::printf("  %-16s %8zu points  steps %lld..%lld  last %.6g  from %s", s.metric.c_str(),
                s.points.size(), static_cast<long long>(first.step),
                static_cast<long long>(last.step), last.value,
                s.files.size() == 1 ? s.files.front().c_str()
                                    : std::string(metricSourceName(s.source)).c_str());
    for (int64_t step : s.restarts)
      std::printf("  (restarted at step %lld)", static_cast<long long>(step));
    std::printf("\n");
  }
  if (!shown) std::printf("  no metrics found\n");
  size_t withValue = 0;
  for (const CheckpointMarker& m : r.markers) withValue += r.markerValue(m, "loss") ? 1 : 0;
  if (!r.markers.empty())
    std::printf("  %zu checkpoint%s, %zu with a recorded or logged loss\n", r.markers.size(),
                r.markers.size() == 1 ? "" : "s", withValue);
  if (!r.summary.empty()) {
    std::printf("  summary (%s):", r.summaryFile.c_str());
    for (const auto& [k, v] : r.summary) std::printf(" %s=%.6g", k.c_str(), v);
    std::printf("\n");
  }
  for (const std::string& p : r.problems) std::printf("  problem: %s\n", p.c_str());
}

}  // namespace

struct MetricsPrinter::Impl {
  Impl(std::vector<std::string> m, MetricsFormat f, bool each)
      : metrics(std::move(m)), format(f), eachRunOut(each) {}
  std::vector<std::string> metrics;
  MetricsFormat format;
  bool eachRunOut;
  Out out;
  bool first = true;

  // A run's JSON or CSV text into `o` (`firstRun`: the first run of the output).
  void put(Out& o, const RunMetrics& run, bool firstRun) const {
    if (format == MetricsFormat::Json) {
      o.put(firstRun ? "\n {\"name\": " : ",\n {\"name\": ");
      printJsonRun(o, run, metrics);
    } else {
      printCsvRun(o, run, metrics);
    }
  }
  // The same as a string, made on another thread.
  [[nodiscard]] std::string text(const RunMetrics& run, bool firstRun) const {
    Out o(/*toStdout=*/false);
    put(o, run, firstRun);
    return o.take();
  }
};

MetricsPrinter::MetricsPrinter(std::vector<std::string> metrics, MetricsFormat format,
                               bool eachRunOut)
    : m(new Impl(std::move(metrics), format, eachRunOut)) {}

void MetricsPrinter::addAll(const std::vector<RunMetrics>& runs) {
  const unsigned threads = m->format == MetricsFormat::Text || m->eachRunOut || runs.size() < 2
                               ? 1
                               : unsigned(std::min<size_t>(metricThreads(), runs.size()));
  if (threads <= 1) {
    for (const RunMetrics& run : runs) add(run);
    return;
  }
  start();
  // Each run's text made on `threads` threads, at most a few runs ahead of
  // the one written here, in order (number formatting is most of a sweep's
  // `metrics --json`: 1,000 runs x 40,000 points).
  const size_t ahead = 4 * size_t(threads);
  std::vector<std::string> texts(runs.size());
  std::vector<char> done(runs.size(), 0);
  size_t next = 0, written = 0;
  std::mutex mutex;
  std::condition_variable changed;
  const bool firstOfAll = m->first;
  auto work = [&] {
    for (;;) {
      size_t i = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return next >= runs.size() || next < written + ahead; });
        if (next >= runs.size()) return;
        i = next++;
      }
      std::string text = m->text(runs[i], firstOfAll && i == 0);
      {
        const std::lock_guard lock(mutex);
        texts[i] = std::move(text);
        done[i] = 1;
      }
      changed.notify_all();
    }
  };
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) workers.emplace_back(work);
  for (size_t k = 0; k < runs.size(); ++k) {
    std::string text;
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return done[k] != 0; });
      text = std::move(texts[k]);
      written = k + 1;
    }
    changed.notify_all();
    m->out.write(text);
  }
  for (std::thread& w : workers) w.join();
  m->first = false;
}

void MetricsPrinter::start() {
  // Nothing before the first run: a command that fails first prints nothing.
  if (!m->first) return;
  if (m->format == MetricsFormat::Json) m->out.put("{\"runs\": [");
  if (m->format == MetricsFormat::Csv)
    m->out.put("run,metric,step,value,wall_time,tokens,source\n");
}

MetricsPrinter::~MetricsPrinter() = default;

void MetricsPrinter::add(const RunMetrics& run) {
  start();
  if (m->format == MetricsFormat::Text)
    printTextRun(run, m->metrics);
  else
    m->put(m->out, run, m->first);
  m->first = false;
  // A run that arrives from a host is seen as soon as it is printed.
  if (!m->eachRunOut) return;
  m->out.flush();
  std::fflush(stdout);
}

void MetricsPrinter::finish() {
  start();
  if (m->format == MetricsFormat::Json) m->out.put(m->first ? "]}\n" : "\n]}\n");
  m->out.flush();
  std::fflush(stdout);
}

namespace {

// --stats, on stderr as one JSON line: the points read and the bytes their
// columns take, and what the metrics cache did (for the benchmark).
struct PointStats {
  size_t points = 0, bytes = 0;
  void add(const RunMetrics& r) {
    for (const MetricSeries& s : r.series) {
      points += s.points.size();
      bytes += s.points.bytes();
    }
  }
};

void printStats(const PointStats& read) {
  const size_t points = read.points, bytes = read.bytes;
  const MetricsCacheStats c = metricsCacheStats();
  std::fprintf(stderr,
               "{\"points\": %zu, \"column_bytes\": %zu, \"files\": %llu, \"cache_hits\": %llu, "
               "\"cache_appended\": %llu, \"cache_misses\": %llu, \"cache_rejected\": %llu, "
               "\"bytes_parsed\": %llu}\n",
               points, bytes, static_cast<unsigned long long>(c.hits + c.appended + c.misses),
               static_cast<unsigned long long>(c.hits), static_cast<unsigned long long>(c.appended),
               static_cast<unsigned long long>(c.misses),
               static_cast<unsigned long long>(c.rejected),
               static_cast<unsigned long long>(c.bytesParsed));
}

bool isLogArgument(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".log" || ext == ".out" || ext == ".err" || ext == ".txt";
}

}  // namespace

int runMetrics(int argc, char** argv) {
  std::vector<std::string> paths, logs, metrics;
  bool json = false, csv = false, stats = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--csv") {
      csv = true;
    } else if (a == "--no-cache") {
      setMetricsCacheEnabled(false);
    } else if (a == "--stats") {
      stats = true;
    } else if (a == "--metric" || a == "--log") {
      if (i + 1 >= argc) return usageError(a + " needs a value", "metrics");
      (a == "--metric" ? metrics : logs).push_back(argv[++i]);
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option " + a, "metrics");
    } else {
      paths.push_back(a);
    }
  }
  if (json && csv) return usageError("--json and --csv exclude each other", "metrics");
  if (paths.empty() && logs.empty())
    return usageError("metrics takes at least one DIR or FILE", "metrics");

  const MetricsFormat format =
      json ? MetricsFormat::Json : (csv ? MetricsFormat::Csv : MetricsFormat::Text);
  std::vector<std::string> named = paths;
  named.insert(named.end(), logs.begin(), logs.end());
  if (acrossMachines(named)) return runMetricsAcrossMachines(paths, logs, metrics, format);
  std::string problem;
  if (const auto remote = remotePaths(named, problem))
    return runRemoteMetrics({remote->begin(), remote->begin() + long(paths.size())},
                            {remote->begin() + long(paths.size()), remote->end()}, metrics, format);
  if (!problem.empty()) return usageError(problem, "metrics");
  // Read first, then printed: printing while the other threads read made
  // the sweep benchmark's `metrics --json` slower (2.7 s -> 3.3 s: the
  // printing thread stalled on the points' memory), for half its memory.
  std::vector<RunMetrics> result;
  try {
    result = metricsOf(paths, logs);
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
  printMetrics(result, metrics, format);
  if (stats) {
    PointStats read;
    for (const RunMetrics& run : result) read.add(run);
    printStats(read);
  }
  return kExitOk;
}

std::vector<RunMetrics> metricsOf(const std::vector<std::string>& paths,
                                  std::vector<std::string> logs, const FindRunsFn& find) {
  std::vector<RunMetrics> out;
  metricsOf(paths, std::move(logs), find,
            [&out](RunMetrics&& run) { out.push_back(std::move(run)); });
  return out;
}

void metricsOf(const std::vector<std::string>& paths, std::vector<std::string> logs,
               const FindRunsFn& find, const RunMetricsFn& each) {
  std::vector<RunEntry> runs;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec) && isLogArgument(p)) {
      logs.push_back(p);
      continue;
    }
    for (RunEntry& r : find ? find(p) : findMetricRuns(p)) runs.push_back(std::move(r));
  }
  collectMetrics(runs, logs, each);
}

void printMetrics(const std::vector<RunMetrics>& runs, const std::vector<std::string>& metrics,
                  MetricsFormat format) {
  MetricsPrinter printer(metrics, format);
  printer.addAll(runs);
  printer.finish();
}

}  // namespace ckpt::cli
