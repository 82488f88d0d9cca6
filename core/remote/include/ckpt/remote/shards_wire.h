#pragma once
// What the inspector's Shards tab shows of a checkpoint written by many
// ranks (ShardSet: its parts, its logical tensors and their chunks), as
// plain values that need no file: filled from a ShardSet here, or from the
// agent's `shards` answer for a checkpoint on a host (docs/REMOTE.md). No
// tensor bytes, and nothing that reads them (a chunk's `slice` and `tensor`
// are -1 once it has travelled).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/format/sharded.h"

namespace ckpt {

struct ShardListing {
  ShardLayout layout = ShardLayout::HuggingFace;
  std::string folder;  // the checkpoint's folder
  std::string entry;   // the file that describes it, "" when none
  int ranks = 0;       // 0 when the layout has no ranks
  std::vector<ShardPart> parts;
  std::vector<LogicalTensor> tensors;  // in the CheckpointFile's tensor order
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> metadata;

  [[nodiscard]] uint64_t totalSize() const;
  // As ShardSet::summary words it: "sharded: DCP, 3 ranks, 4 files".
  [[nodiscard]] std::string summary() const;
};

// Everything the Shards tab shows of `shards` (a copy: the set may go).
[[nodiscard]] ShardListing listShards(const ShardSet& shards);

}  // namespace ckpt

namespace ckpt::remote {

// The `shards` answer's {shards: ...} object.
nlohmann::ordered_json shardsToWire(const ShardListing& listing);
// Throws std::runtime_error naming the field that is missing, wrong or
// implausible ("shards: tensors[3].chunks[0].part is 7, past the 4 parts");
// counts that disagree with the arrays, a part over 64 TiB, sizes that do
// not add up, chunks naming no part are refused. Allocates no more than the
// answer's arrays hold.
ShardListing shardsFromWire(const nlohmann::ordered_json& j);

}  // namespace ckpt::remote
