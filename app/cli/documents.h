#pragma once
// What the read commands compute, apart from how they print it: the
// command (ls.cpp, info.cpp, ...) and the agent (serve.cpp) call the same
// functions, so a remote answer is the local one (docs/REMOTE.md).

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/analysis/diff.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/metrics_each.h"
#include "ckpt/index/scanner.h"

namespace ckpt::cli {

// `ls --json`.
nlohmann::ordered_json lsDocument(const ScanResult& result);

// `info --json`, and why the command fails after printing it (a storage or
// tensor whose bytes are not there; "" when none).
nlohmann::ordered_json infoDocument(const CheckpointFile& file);
std::string infoFailure(const CheckpointFile& file);

// `diff --top N`'s options (0: the default ranking length); the report is
// diffToJson(diff, top).
DiffOptions diffOptions(size_t top);
// diff's text report (without --json) of `diff`, made from `a` and `b`.
void printDiffText(const CheckpointDiff& diff, const CheckpointFile& a, const CheckpointFile& b);
// Why `diff` fails after printing its report: the tensors it could not read.
std::string diffFailure(const CheckpointDiff& diff);

// `scan`: the files' and sharded checkpoints' verdicts. With `printText`
// each verdict is printed as it is found, then the counts (the text
// output); `document` is the `--json` document either way. `exit` is the
// command's status (3 dangerous, 1 unreadable); `problem` a folder that
// cannot be listed (then exit is 1 and nothing else is set).
struct SafetyScan {
  nlohmann::ordered_json document;
  int exit = 0;
  std::string problem;
};
SafetyScan scanSafety(const std::vector<std::string>& paths, bool recursive, bool printText);

// `metrics`: the runs under `paths` (console logs among them are read as
// `logs`); throws std::runtime_error naming a path that cannot be read.
// How the runs under a path are found: findMetricRuns (empty), or as the
// agent shares a folder's scan among the requests that came together.
using FindRunsFn = std::function<std::vector<RunEntry>(const std::string& path)>;
std::vector<RunMetrics> metricsOf(const std::vector<std::string>& paths,
                                  std::vector<std::string> logs, const FindRunsFn& find = {});
// The same runs handed to `each` in that order as each is read (metrics_each.h).
void metricsOf(const std::vector<std::string>& paths, std::vector<std::string> logs,
               const FindRunsFn& find, const RunMetricsFn& each);
enum class MetricsFormat { Text, Json, Csv };
void printMetrics(const std::vector<RunMetrics>& runs, const std::vector<std::string>& metrics,
                  MetricsFormat format);
// printMetrics a run at a time, the same bytes (a remote sweep is printed
// while the host reads its next runs). `eachRunOut`: each run written out
// at once, not when a megabyte is ready.
class MetricsPrinter {
 public:
  MetricsPrinter(std::vector<std::string> metrics, MetricsFormat format, bool eachRunOut = false);
  ~MetricsPrinter();
  MetricsPrinter(const MetricsPrinter&) = delete;
  MetricsPrinter& operator=(const MetricsPrinter&) = delete;
  void add(const RunMetrics& run);
  // add() of each, the runs' texts made on several threads (JSON, CSV).
  void addAll(const std::vector<RunMetrics>& runs);
  // The output's end (JSON's closing brackets), flushed.
  void finish();

 private:
  void start();  // the output's head, before the first run (or the end)
  struct Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace ckpt::cli
