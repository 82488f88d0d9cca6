#pragma once
// Checkpoints written by many ranks, read as one logical checkpoint
// (FORMAT.md section 7). CheckpointFile::open recognises a folder or an index
// file and builds a ShardSet: every logical tensor with its global shape and
// dtype, and the chunks it is made of, each a tensor of one part file placed
// at an offset of the global shape. The part files are ordinary
// CheckpointFiles (safetensors, torch zip archives); a logical tensor's bytes
// stay in them and are read chunk by chunk (TensorData over chunks), never
// assembled unless asked for (CheckpointFile::storageBytes).

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/format/tensor_info.h"
#include "ckpt/format/value.h"

namespace ckpt {

class CheckpointFile;

enum class ShardLayout {
  HuggingFace,  // *.safetensors.index.json / pytorch_model.bin.index.json + shards
  Dcp,          // torch.distributed.checkpoint: .metadata + __<rank>_<n>.distcp
  Fsdp,         // torch.save per rank (model_rank0.pt, ...): ShardedTensor / DTensor values
  DeepSpeed,    // a tag folder (global_step1000/): model states + ZeRO optimizer files per rank
  // A Megatron-LM save folder in the torch format (iter_0000100/): one
  // model_optim_rng.pt per model-parallel rank (mp_rank_<tp>[_<pp>]/), each
  // holding its slice of every tensor-parallel weight (sharded_megatron.cpp).
  Megatron,
};
// "Hugging Face" (for people), "hf-index" (for JSON); "FSDP", "fsdp"; ...
[[nodiscard]] std::string_view shardLayoutTitle(ShardLayout layout);
[[nodiscard]] std::string_view shardLayoutId(ShardLayout layout);

// One file of the checkpoint.
struct ShardPart {
  std::string file;  // relative to the checkpoint's folder
  std::string path;  // as opened
  int rank = -1;     // the writer's rank when the layout says; -1 otherwise
  uint64_t size = 0;
  bool present = false;
  std::string error;  // why it cannot be read ("" when fine)
};

// A piece of a logical tensor: tensor `tensor` of part `part`, covering
// [offsets[d], offsets[d] + sizes[d]) along every dimension d.
struct ShardChunk {
  int part = -1;
  // The archive inside the part that holds it (DCP: one torch.save archive
  // per chunk); -1 when the part itself is the file (Hugging Face shards).
  int slice = -1;
  int tensor = -1;  // index into that file's CheckpointFile::tensors()
  Dims offsets;
  Dims sizes;
  // Where the chunk starts in that tensor, in elements: a chunk may be a
  // run of a flat buffer (DeepSpeed's fp32 partitions), read as `sizes`
  // row-major from there. 0 with `sizes` the tensor's whole shape otherwise.
  int64_t sourceOffset = 0;
};

struct LogicalTensor {
  std::string name;  // the key as the writer flattened it
  // Where it sits in the state dict the writer was given (DCP's planner
  // data: ("model", "blocks.0.attn.q_proj.weight")); empty: at {name}.
  std::vector<PathElement> path;
  DType dtype = DType::Float32;
  Dims shape;  // global
  std::vector<ShardChunk> chunks;
  // Chunks the description places in a part that is missing or cannot be
  // read (DCP's .metadata, FSDP's shard metadata): where the bytes would
  // be. `part` is that part; `slice` and `tensor` are -1. Never read.
  std::vector<ShardChunk> missing;
  // Chunks present on several ranks with the same offsets and sizes (a
  // replicated tensor): kept once, counted here.
  int replicas = 0;
  // A flat parameter buffer (FSDP's LOCAL_STATE_DICT `_flat_param`): many
  // parameters concatenated, which cannot be named without the model.
  bool flat = false;
  // How it was made from its pieces, when that is worth a word: Megatron's
  // tensor-parallel join ("joined along dim 0 from mp_rank_00, mp_rank_01").
  std::string note;
  // Why its bytes cannot all be read: a part missing or unreadable, chunks
  // that overlap, leave gaps or lie outside the shape. Names the file and key.
  std::string error;
  [[nodiscard]] bool incomplete() const { return !error.empty(); }
};

// What a path is, when it is a sharded checkpoint. Reads names only (and
// nothing when the path is a plain file).
struct ShardProbe {
  ShardLayout layout = ShardLayout::HuggingFace;
  std::string folder;  // the checkpoint's folder
  std::string entry;   // the file that describes it (the index), "" when none
};
[[nodiscard]] std::optional<ShardProbe> probeSharded(const std::string& path);
// Whether a regular file at `path` would be a sharded checkpoint's
// description by its name (DCP's .metadata, a Hugging Face *.index.json):
// what probeSharded asks of a file, without the stat.
[[nodiscard]] bool isShardDescriptionName(const std::string& path);

class ShardSet {
 public:
  // Opens every part (its directory and pickle, never tensor bytes) and maps
  // the logical tensors onto their chunks. Throws FormatError for a
  // description that cannot be read at all (an index that is not JSON);
  // problems of single parts or tensors are recorded in them.
  // `metadataOnly`: the parts are listed (sizes), not opened, and `tensors`
  // stays empty; small non-tensor items (DCP's bytes items: the step) are
  // still read.
  static std::unique_ptr<ShardSet> open(const ShardProbe& probe, bool metadataOnly);
  ~ShardSet();

  [[nodiscard]] ShardLayout layout() const { return m_layout; }
  [[nodiscard]] const std::string& folder() const { return m_folder; }
  [[nodiscard]] const std::string& entry() const { return m_entry; }
  [[nodiscard]] const std::vector<ShardPart>& parts() const { return m_parts; }
  [[nodiscard]] const std::vector<LogicalTensor>& tensors() const { return m_tensors; }
  // Ranks that wrote it (0 when the layout has no ranks: Hugging Face shards).
  [[nodiscard]] int ranks() const { return m_ranks; }
  [[nodiscard]] uint64_t totalSize() const;
  // The part file, or null when it is missing or unreadable.
  [[nodiscard]] const CheckpointFile* partFile(int part) const;
  // The file a chunk's tensor index refers to (a part, or a slice of one).
  // A DCP chunk's archive is opened on first use (opening the checkpoint
  // reads only .metadata): throws FormatError naming the file and the
  // chunk when it cannot be read or holds another tensor than .metadata says.
  // Safe to call from several threads.
  [[nodiscard]] const CheckpointFile* chunkFile(const ShardChunk& chunk) const;
  // Opens every chunk's archive and checks it (CRCs too): what verify says.
  [[nodiscard]] std::vector<std::string> verifyChunks() const;
  // Values that are not tensors, where they sit (DCP's bytes items, loaded:
  // a step, a learning rate), owned by this set. A bytes item that holds
  // tensors itself is shown as a string saying so.
  struct Item {
    std::vector<PathElement> path;
    const Value* value = nullptr;
  };
  [[nodiscard]] const std::vector<Item>& items() const { return m_items; }
  // DCP: every storage_data entry of .metadata, in its order: where
  // torch.distributed.checkpoint reads an item's torch.save archive (a
  // slice of a .distcp part). Listed by a metadataOnly open too (what the
  // safety scan walks); empty for the other layouts.
  struct StorageSlice {
    std::string key;  // the item's fqn, "model.token_embed.weight"
    int part = -1;    // -1 when the entry names no place inside the folder
    uint64_t offset = 0, length = 0;
    std::string error;  // why it names no place that can be read ("" when fine)
  };
  [[nodiscard]] const std::vector<StorageSlice>& storageSlices() const { return m_storage; }
  // Metadata the description carries (the index's "metadata"), as JSON text
  // per key.
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& metadata() const {
    return m_metadata;
  }
  // Things to know that are no error: tensors in a shard the index does not name, ...
  [[nodiscard]] const std::vector<std::string>& notes() const { return m_notes; }
  // "sharded: Hugging Face, 3 files" / "sharded: DCP, 8 ranks, 24 files".
  [[nodiscard]] std::string summary() const;

 private:
  ShardSet() = default;
  void openHuggingFace(bool metadataOnly);
  void openDcp(bool metadataOnly);
  void openFsdp(bool metadataOnly);
  void openDeepSpeed(bool metadataOnly);
  void openMegatron(bool metadataOnly);
  int addPart(const std::string& file, int rank);
  void openParts();
  void checkChunks(LogicalTensor& t) const;

  ShardLayout m_layout = ShardLayout::HuggingFace;
  std::string m_folder, m_entry;
  std::vector<ShardPart> m_parts;
  std::vector<std::unique_ptr<CheckpointFile>> m_files;  // parallel to m_parts
  struct SliceSpec {
    int part = -1;
    uint64_t offset = 0, length = 0;
    DType dtype = DType::Float32;
    Dims sizes;
    std::string what;  // "chunk at offsets [4, 0] of 'model.w'"
  };
  std::vector<SliceSpec> m_sliceSpecs;
  mutable std::vector<std::unique_ptr<CheckpointFile>>
      m_slices;  // parallel to m_sliceSpecs, opened on use
  mutable std::mutex m_sliceMutex;
  std::vector<std::unique_ptr<CheckpointFile>> m_itemFiles;  // DCP bytes items
  std::unique_ptr<CheckpointFile> m_description;             // DCP's .metadata
  std::vector<Item> m_items;
  std::vector<StorageSlice> m_storage;
  ValueArena m_arena;  // strings made for items
  std::vector<LogicalTensor> m_tensors;
  std::vector<std::pair<std::string, std::string>> m_metadata;
  std::vector<std::string> m_notes;
  int m_ranks = 0;
};

// A file name inside a checkpoint's folder that a description names: a
// plain relative path with no "..", no absolute path, and (after symlinks)
// still inside `folder`. Returns the path to open, or throws FormatError
// naming `what` (e.g. "weight_map['lm_head.weight']").
[[nodiscard]] std::string pathInsideFolder(const std::string& folder, const std::string& name,
                                           const std::string& what);

}  // namespace ckpt
