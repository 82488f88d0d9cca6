#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_data.h"

namespace ckpt {

// Where a tensor sits in a modern_llm decoder (MODEL.md names), for the
// per-layer bar chart (by block) and heat map (block x module).
enum class LayerModule : uint8_t {
  Embedding,  // token_embed.*
  Q,          // blocks.i.attn.q_proj.*
  K,
  V,
  Out,      // attn.out_proj (o_proj)
  FfnGate,  // ffn.gate (MoE: experts.e.0, the up projection)
  FfnProj,  // ffn.proj (MoE: experts.e.2, the down projection)
  AttnNorm,
  FfnNorm,
  FinalNorm,
  Head,   // lm_head.*
  Sinks,  // attn.sink_states
  Other,  // anything else (MoE routers, unknown names)
};
inline constexpr int kLayerModuleCount = int(LayerModule::Other) + 1;

// "embedding", "q", "k", "v", "out", "ffn_gate", "ffn_proj", "attn_norm",
// "ffn_norm", "final_norm", "head", "sinks", "other".
[[nodiscard]] std::string_view layerModuleName(LayerModule m);

struct LayerKey {
  int block = -1;  // `blocks.{i}.` (also `layers.{i}.`, `h.{i}.`); -1 outside the blocks
  LayerModule module = LayerModule::Other;
};
// Classifies a normalised state-dict name ("_orig_mod." already stripped).
[[nodiscard]] LayerKey classifyTensorName(std::string_view name);

// One tensor present under the same name and shape in both checkpoints.
//
// Metrics are computed in double over the element pairs where both a and b
// are finite; NaN and infinities are counted per side and left out (so one
// NaN does not turn every number into NaN, and the counts say it was there).
// Conventions where ||a|| = 0: rel_l2 is 0 when b is all zeros too, +inf
// otherwise; cosine is 1 when both are all zeros, 0 when just one is (as
// torch's cosine_similarity with its eps gives). Without any finite pair
// (numel 0, or all NaN) every metric is NaN.
struct TensorDiff {
  std::string name;  // normalised key
  int tensorA = -1;  // indices into CheckpointFile::tensors()
  int tensorB = -1;
  DType dtypeA = DType::Float32;
  DType dtypeB = DType::Float32;  // differing dtypes are compared in double
  std::vector<int64_t> shape;
  LayerKey layer;

  uint64_t numel = 0;
  uint64_t finitePairs = 0;  // pairs where both values are finite
  uint64_t nanA = 0, infA = 0, nanB = 0, infB = 0;

  double normA = 0, normB = 0;  // ||a||, ||b|| (finite pairs)
  double normDiff = 0;          // ||b - a||
  double dot = 0;               // <a, b>
  double relL2 = 0;             // ||b - a|| / ||a||
  double cosine = 1;            // <a, b> / (||a|| ||b||)
  double maxAbs = 0;            // max |b - a|
  double meanAbs = 0;           // sum |b - a| / finitePairs

  // Same storage as this other entry in both files (lm_head.weight and
  // token_embed.weight when tied): its numbers were copied, not recomputed.
  std::string tiedTo;
  // Why its bytes could not be compared (message names the file and tensor);
  // the metrics are then meaningless.
  std::string error;
  // False when the diff was cancelled before this tensor was done.
  bool computed = false;

  [[nodiscard]] bool hasNonFinite() const { return nanA + infA + nanB + infB > 0; }
};

// A name in both checkpoints whose shape differs: no metrics.
struct ShapeChange {
  std::string name;
  std::vector<int64_t> shapeA, shapeB;
  DType dtypeA = DType::Float32, dtypeB = DType::Float32;
};

// A metadata / config key whose value differs or exists on one side only.
// Keys are flattened: top-level and `metadata` keys as they are (the top
// level wins, as in CheckpointView::lookup), nested dicts and dataclasses
// with dots ("config.d_model"). Values that hold tensors are not metadata.
struct MetadataChange {
  std::string key;
  bool inA = false, inB = false;
  std::string aText, bText;             // Python-like (shortRepr); "" when absent
  nlohmann::ordered_json aJson, bJson;  // the info --json encoding; null when absent
  bool same = false;  // equal on both sides (listed only when asked for every key)
};

// Relative change of a group of tensors:
// sqrt(sum ||b - a||^2) / sqrt(sum ||a||^2), same conventions as TensorDiff
// (NaN when no element pair of the group is finite).
struct LayerAggregate {
  int block = -1;
  LayerModule module = LayerModule::Other;  // unused for per-block totals
  double sumDiffSq = 0;
  double sumASq = 0;
  uint64_t numel = 0;
  uint64_t finitePairs = 0;
  int tensors = 0;
  [[nodiscard]] double relL2() const;
};

struct CheckpointDiff {
  std::string pathA, pathB;
  // How names were found: "model_state", ... ; "" for a bare state dict or
  // safetensors; "(all tensors)" when a file holds no state dict and every
  // tensor is compared by its path.
  std::string stateKeyA, stateKeyB;
  // Wrapper prefixes stripped from the names (normaliseStateNames):
  // "_orig_mod." (torch.compile), "module." (DDP / DataParallel).
  bool compiledPrefixA = false, compiledPrefixB = false;
  bool ddpPrefixA = false, ddpPrefixB = false;

  std::vector<std::string> added;    // in b only (b's order)
  std::vector<std::string> removed;  // in a only (a's order)
  std::vector<ShapeChange> changedShape;
  std::vector<TensorDiff> tensors;  // same name and shape, in a's order
  std::vector<MetadataChange> metadata;
  // Per block (sorted, -1 first: embedding, final norm, head); tensors tied
  // to another count once.
  std::vector<LayerAggregate> blocks;
  // Per block x module, sorted by block then module; a tied tensor counts in
  // its own module (lm_head under head) as well.
  std::vector<LayerAggregate> modules;
  // Things to know: ties present on one side only, duplicate names, ...
  std::vector<std::string> notes;

  // Indices into `tensors` of the DiffOptions::topN largest changes
  // (topByRelL2); empty when topN is 0.
  std::vector<size_t> top;

  uint64_t bytesCompared = 0;  // tensor bytes read from both files
  bool cancelled = false;      // the progress callback returned false

  // Indices into `tensors` of the n largest relative changes (NaN last,
  // errors and uncomputed left out), ties broken by name.
  [[nodiscard]] std::vector<size_t> topByRelL2(size_t n) const;
  [[nodiscard]] size_t changedDtypeCount() const;
  [[nodiscard]] size_t errorCount() const;
};

struct DiffOptions {
  // How many of the largest relative changes to rank into CheckpointDiff::top
  // (every tensor is compared either way).
  size_t topN = 20;
  // Worker threads across tensors (0: as many as the hardware has, at most 2
  // -- the comparison is bound by memory bandwidth well before that).
  int threads = 0;
  // Elements converted per read (two double buffers of this size per thread).
  size_t chunkElements = 16384;
  // Called with the bytes compared so far and in all, from the calling thread
  // or a worker (never two at once), about every 4 MB; returning false cancels:
  // the result comes back with `cancelled` set and the tensors done so far.
  std::function<bool(size_t done, size_t total)> progress;
  // Where the bytes of a compared pair come from; unset: each file's
  // tensorData(t.tensorA / t.tensorB). A file on another machine
  // (ckpt/remote/cross_diff.h) sets it to fetch them, or to hand the same
  // bytes twice for a tensor equal on both sides. Called from the worker
  // threads (two at once). A FormatError becomes the tensor's error, as an
  // unreadable tensor's does; anything else ends the diff (rethrown).
  std::function<std::pair<TensorData, TensorData>(const TensorDiff& t)> tensorBytes;
};

// Compares the model state dicts of two checkpoints by normalised name
// (CheckpointView), one tensor at a time from mapped bytes: memory stays
// bounded (a few MB) whatever the checkpoint size. Throws FormatError only
// for problems of the files as a whole; a tensor whose bytes cannot be read
// gets its `error` and the rest is still compared.
[[nodiscard]] CheckpointDiff diffCheckpoints(const CheckpointFile& a, const CheckpointFile& b,
                                             const DiffOptions& options = {});

// The metadata / config part alone (no tensor bytes are read).
// With `everyKey`, keys equal on both sides are listed too (`same` set): a
// side-by-side view of all metadata.
[[nodiscard]] std::vector<MetadataChange> diffMetadata(const CheckpointFile& a,
                                                       const CheckpointFile& b,
                                                       bool everyKey = false);

// The `ckptscope-cli diff --json` document:
// {"a", "b", "added": [name], "removed": [name],
//  "changed_shape": [{"name", "a": [dims], "b": [dims], "dtype_a", "dtype_b"}],
//  "changed_dtype": [{"name", "a", "b"}],
//  "tensors": [{"name", "rel_l2", "cosine", "max_abs", "mean_abs", "norm_a",
//               "norm_b", "norm_diff", "numel", "shape", "dtype_a", "dtype_b",
//               "block", "module", "nan_a", "inf_a", "nan_b", "inf_b",
//               "tied_to" (when tied), "error" (when unreadable)}],
//  "metadata": [{"key", "a", "b", "only": "a"|"b" (when on one side)}],
//  "layers": {"blocks": [{"block", "rel_l2", "numel", "tensors"}],
//             "modules": [{"block", "module", "rel_l2", "numel", "tensors"}]},
//  "notes": [str], "bytes_compared", "cancelled"}
// Metadata values use the info --json encoding. Numbers that are not finite
// (rel_l2 when ||a|| = 0 and b is not, metrics without a finite pair) are
// null. `top` > 0 keeps the `top` largest rel_l2, largest first; otherwise
// every tensor in a's order.
[[nodiscard]] nlohmann::ordered_json diffToJson(const CheckpointDiff& diff, size_t top = 0);

}  // namespace ckpt
