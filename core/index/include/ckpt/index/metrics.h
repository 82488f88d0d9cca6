#pragma once
// Training curves from everything a run leaves behind: checkpoint metadata,
// our trainer's metrics.jsonl, and the reference library's console logs
// (`step=100 loss=1.9034 lr=6.060e-05` in *.log / *.out / *.err files).
// No Qt, no LibTorch.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/index/scanner.h"

namespace ckpt {

struct MetricPoint {
  int64_t step = 0;
  double value = 0;
  std::optional<double> wallTime;  // seconds since the run started
  std::optional<int64_t> tokens;   // tokens seen
};

// Where a series came from, in order of preference when several give the
// same metric: metrics.jsonl, then console logs, then checkpoints.
enum class MetricSource { MetricsJsonl, ConsoleLog, Checkpoint };
std::string_view metricSourceName(MetricSource s);  // "metrics.jsonl", "log", "checkpoint"

struct MetricSeries {
  std::string metric;  // "loss", "val_loss", "lr", "tokens_per_sec", "accuracy", ...
  MetricSource source = MetricSource::MetricsJsonl;
  std::vector<MetricPoint> points;  // sorted by step, one point per step (the last one read wins)
};

struct RunMetrics {
  std::string run;   // RunEntry::name
  std::string path;  // the run's directory
  std::vector<MetricSeries> series;  // one per metric (the preferred source)
  std::vector<int64_t> checkpointSteps;  // steps that have a checkpoint file (markers)
  std::vector<std::string> problems;     // unreadable lines/files, named with file and line
  [[nodiscard]] const MetricSeries* find(const std::string& metric) const;
};

// metrics.jsonl: one JSON object per line with "step" and numbers ("loss",
// "lr", "tokens", "tokens_per_sec", "wall_time", "val_loss", ...). Reading
// starts at byte `offset` and stops at the last complete line; `*end` gets
// the offset to continue from (live updates append). Bad lines are skipped
// and reported in `problems` as "file:line: why".
std::vector<std::pair<std::string, MetricPoint>> readMetricsJsonl(const std::string& path, uint64_t offset = 0,
                                                                  uint64_t* end = nullptr,
                                                                  std::vector<std::string>* problems = nullptr);

// Console logs: lines holding `step=N` and `key=value` pairs (`loss=1.9`,
// `lr=6.060e-05`, `accuracy=55.2%`, `val_loss=...`); other lines are ignored.
std::vector<std::pair<std::string, MetricPoint>> readConsoleLog(const std::string& path, uint64_t offset = 0,
                                                                uint64_t* end = nullptr);

// All series of one run: its metrics.jsonl, console logs in its directory
// (and logs next to it whose name starts with the run's name), and the
// loss / train_loss / val_loss / learning_rate of its checkpoints. A branch
// run (lineage.json in its directory) starts with its parent's metrics.jsonl
// up to the branch step, and so on up the chain.
RunMetrics collectRunMetrics(const RunEntry& run);

// TensorBoard's smoothing: debiased exponential moving average with weight
// `smoothing` in [0, 1) (0: the raw values).
std::vector<double> smoothEma(const std::vector<double>& values, double smoothing);

// The same one value at a time, for a curve that grows: next() gives what
// smoothEma would give for the value appended (NaN and infinities pass
// through and do not count).
class EmaSmoother {
 public:
  explicit EmaSmoother(double smoothing = 0);
  double next(double x);

 private:
  double m_w = 0;
  double m_last = 0;
  int64_t m_count = 0;
  bool m_debiasing = false;
};

}  // namespace ckpt
