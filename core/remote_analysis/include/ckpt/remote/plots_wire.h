#pragma once
// A tensor's plots on the wire (docs/REMOTE.md, `stats` asked with `bins`
// and `heat_rows` / `heat_cols`): the histogram and heat map analyzeTensor
// computes on the host, read back for the Tensor tab.

#include <nlohmann/json.hpp>
#include <optional>

#include "ckpt/analysis/tensor_stats.h"

namespace ckpt::remote {

// The histogram and heat map of a `stats` answer (the whole answer); nothing
// when it holds none (an agent older than them). Throws std::runtime_error
// naming a wrong field ("stats: heat_map.values does not hold rows x cols
// values").
std::optional<Histogram> histogramFromWire(const nlohmann::ordered_json& answer);
std::optional<HeatMap> heatMapFromWire(const nlohmann::ordered_json& answer);

}  // namespace ckpt::remote
