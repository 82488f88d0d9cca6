#pragma once
// A checkpoint's description on the wire (docs/REMOTE.md, `describe`):
// every field of CheckpointDescription, so the app's Inspect tab shows a
// checkpoint on a host exactly as it shows the same file opened here.

#include <nlohmann/json.hpp>

#include <optional>

#include "ckpt/index/checkpoint_description.h"

namespace ckpt::remote {

nlohmann::ordered_json describeToWire(const CheckpointDescription& d);
// Throws std::runtime_error naming the field that is missing or wrong
// ("describe: tensors[3].bytes is not an integer").
CheckpointDescription describeFromWire(const nlohmann::ordered_json& j);

// A tensor's statistics as `stats` answers them ({count, finite, ..., l2norm}).
struct WireStats {
  uint64_t count = 0, finite = 0, zeros = 0, nans = 0, posInf = 0, negInf = 0;
  double min = 0, max = 0, mean = 0, std = 0, l2norm = 0;
};
WireStats statsFromWire(const nlohmann::ordered_json& j);

// The values of a `slice` answer ({tensor, numel, first, values}), "nan",
// "inf" and "-inf" among them; at most `most` of them (the count asked for).
std::vector<double> sliceFromWire(const nlohmann::ordered_json& j, size_t most);

}  // namespace ckpt::remote
