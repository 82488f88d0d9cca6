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
// With `columns` (the client asked for them, docs/REMOTE.md) each series'
// points are sent as `columns` instead: a progression (steps every N,
// tokens = step x batch, a constant learning rate) as its first value and
// stride, the rest one array a field.
void appendMetricsResultText(std::string& out, const std::vector<RunMetrics>& runs,
                             bool columns = false);
// A series' points as `[[step,value,wall_time|null,tokens|null],...]`.
void appendPointsText(std::string& out, const SeriesPoints& points);
// ... and as `{"count":N,"step":COL,"value":COL,"wall_time":COL,"tokens":COL}`
// (wall_time / tokens only when some point has one), COL an array of N
// values (null where a point has none) or {"first":a,"stride":b}: value i is
// first + stride * i (integers as uint64, wrapping; reals fma(stride, i,
// first), one rounding), used only where every value is exactly that.
void appendColumnsText(std::string& out, const SeriesPoints& points);
// The `metrics` result's text read back: the points straight into the
// series' columns (no tree of them), the other fields as runMetricsFromWire
// reads them; series with `points` or `columns`. Any JSON layout is read
// (an older agent's too). Throws
// std::runtime_error naming where ("metrics: runs[2].series[0].points[17]:
// value is not a number"), also for a text that ends early.
std::vector<RunMetrics> metricsResultFromText(std::string_view text);

// A number on the wire: itself, or "nan", "inf", "-inf" (JSON has none of them).
nlohmann::ordered_json numberToWire(double d);

// A point as [step, value, wall_time|null, tokens|null].
nlohmann::ordered_json pointToWire(const MetricPoint& p);
MetricPoint pointFromWire(const nlohmann::ordered_json& j);

}  // namespace ckpt::remote
