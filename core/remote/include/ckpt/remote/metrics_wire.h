#pragma once
// A run's metric series on the wire (docs/REMOTE.md, `metrics`): every field
// of RunMetrics, so what a client rebuilds prints and draws exactly as the
// host's own would. Non-finite numbers travel as "nan", "inf", "-inf".

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt::remote {

nlohmann::ordered_json runMetricsToWire(const RunMetrics& run);
// Throws std::runtime_error naming the field that is missing or wrong.
RunMetrics runMetricsFromWire(const nlohmann::ordered_json& j);

// A number on the wire: itself, or "nan", "inf", "-inf" (JSON has none of them).
nlohmann::ordered_json numberToWire(double d);

// A point as [step, value, wall_time|null, tokens|null].
nlohmann::ordered_json pointToWire(const MetricPoint& p);
MetricPoint pointFromWire(const nlohmann::ordered_json& j);

}  // namespace ckpt::remote
