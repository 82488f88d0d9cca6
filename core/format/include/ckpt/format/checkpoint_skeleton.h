#pragma once
// A checkpoint read on another machine without its tensor bytes: the parts
// of the file its reader reads when it opens it (zip directory, records'
// headers, pickles, a safetensors header, a legacy file's pickles and
// storage headers) travel, the storages' bytes do not. Opened here from
// those parts, it is the same CheckpointFile as on the host (the same
// tree, tensors, metadata), so a comparison with a file here is made by
// the code that compares two files here (ckpt/remote/cross_diff.h). And a
// digest of a tensor's bytes, so that tensors equal on both sides need not
// travel at all.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ckpt/format/checkpoint_file.h"

namespace ckpt {

class TensorData;

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// The ranges of `file` (one file, not a sharded checkpoint) that are not
// bytes of a storage: sorted, disjoint, covering the rest of the file.
// Throws FormatError for a sharded checkpoint.
[[nodiscard]] std::vector<ByteRange> skeletonRanges(const CheckpointFile& file);

// A sharded checkpoint (file.shards()) without its storages' bytes: every
// file its reader reads, named relative to `base` (the folder the path
// names, or the folder of the index file it names): the description (an
// index, DCP's .metadata, DeepSpeed's `latest`) whole, each part without
// its storages' bytes (a DCP part: each torch.save archive in it without
// theirs; bytes between them are not read). A part that is missing is not
// listed (a reader given these files finds it missing too); a part or an
// archive the reader cannot read is sent whole (a reader given it fails
// as this one did), up to 64 MiB: past that, and for a file outside
// `base`, throws FormatError naming it.
struct SkeletonFileRanges {
  std::string file;  // relative to `base`, '/'-separated
  uint64_t size = 0;
  std::vector<ByteRange> ranges;
};
[[nodiscard]] std::vector<SkeletonFileRanges> shardedSkeletonRanges(const CheckpointFile& file,
                                                                    const std::string& base);

struct SkeletonPart {
  uint64_t offset = 0;
  std::string bytes;
};

// Throws FormatError naming `name` when one of `parts` lies past the end
// of a file of `size` bytes.
void checkSkeletonParts(const std::string& name, uint64_t size,
                        const std::vector<SkeletonPart>& parts);

// A file of `size` bytes of which `parts` are known (the rest reads as
// zeros, never touched by the reader), opened as `name`. The storages'
// bytes are not there: its tensorData() must not be used for a comparison
// (the caller fetches them). Memory: the parts, not `size` (an anonymous
// mapping reserved, not filled). Throws FormatError when a part lies
// outside `size` or the file cannot be read.
[[nodiscard]] std::unique_ptr<CheckpointFile> openSkeleton(const std::string& name, uint64_t size,
                                                           const std::vector<SkeletonPart>& parts,
                                                           const ReadOptions& options = {});

// A digest of a tensor's elements as stored, packed and little-endian (what
// TensorData::readBytes gives: the same on a big-endian file or a strided
// view of equal values): "xxh64:" and 16 hex digits. Equal digests and
// equal dtypes and shapes: the same bytes. `progress` (bytes hashed, may be
// unset) returning false stops it: "" comes back. Throws FormatError for
// unreadable bytes (and a packed type not on a byte boundary).
[[nodiscard]] std::string tensorDigest(const TensorData& data,
                                       const std::function<bool(uint64_t bytes)>& progress = {});

}  // namespace ckpt
