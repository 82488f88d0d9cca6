#pragma once
// A comparison on the wire (docs/REMOTE.md, `diff` with `full: true`): every
// field of CheckpointDiff and every metadata key of both files, so the app's
// Compare tab shows two checkpoints on a host exactly as it shows the same
// files opened here, while only the numbers travel (kilobytes, whatever
// the checkpoints weigh). Non-finite numbers travel as "nan", "inf", "-inf".

#include <nlohmann/json.hpp>
#include <vector>

#include "ckpt/analysis/diff.h"

namespace ckpt::remote {

// What the Compare tab shows: the diff, and the metadata side by side
// (diffMetadata with everyKey).
struct WireDiff {
  CheckpointDiff diff;
  std::vector<MetadataChange> everyKey;
};

nlohmann::ordered_json diffToWire(const CheckpointDiff& diff,
                                  const std::vector<MetadataChange>& everyKey);
// Throws std::runtime_error naming the field that is missing or wrong
// ("diff: tensors[3].norm_a is not a number").
WireDiff diffFromWire(const nlohmann::ordered_json& j);

}  // namespace ckpt::remote
