#pragma once
// A run's metric series on the wire (docs/REMOTE.md, `metrics`): every field
// of RunMetrics, so what a client rebuilds prints and draws exactly as the
// host's own would. Non-finite numbers travel as "nan", "inf", "-inf".

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt::remote {

nlohmann::ordered_json runMetricsToWire(const RunMetrics& run);
// Throws std::runtime_error naming the field that is missing or wrong.
RunMetrics runMetricsFromWire(const nlohmann::ordered_json& j);

// The `metrics` result, {"runs": [RUN, ...]}, as compact JSON text appended
// to `out`: the document dumpJson(runMetricsToWire) gives for each run,
// written with no tree (a sweep of 300 runs is 600,000 points; building and
// freeing their tree was most of the agent's time).
void appendMetricsResultText(std::string& out, const std::vector<RunMetrics>& runs);
// A series' points as `[[step,value,wall_time|null,tokens|null],...]`.
void appendPointsText(std::string& out, const SeriesPoints& points);
// The `metrics` result's text read back: the points straight into the
// series' columns (no tree of them), the other fields as runMetricsFromWire
// reads them. Any JSON layout is read (an older agent's too). Throws
// std::runtime_error naming where ("metrics: runs[2].series[0].points[17]:
// value is not a number"), also for a text that ends early.
std::vector<RunMetrics> metricsResultFromText(std::string_view text);

// A number on the wire: itself, or "nan", "inf", "-inf" (JSON has none of them).
nlohmann::ordered_json numberToWire(double d);

// A point as [step, value, wall_time|null, tokens|null].
nlohmann::ordered_json pointToWire(const MetricPoint& p);
MetricPoint pointFromWire(const nlohmann::ordered_json& j);

}  // namespace ckpt::remote
