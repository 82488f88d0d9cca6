#pragma once
// Small helpers the sharded layouts share (sharded*.cpp, and the safety
// scan and skeleton of such a checkpoint): reading the
// opaque objects the safe pickle reader leaves for the writers' classes by
// field name, and the pieces of their error messages.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/dtype.h"
#include "ckpt/format/tensor_info.h"
#include "ckpt/format/value.h"

namespace ckpt::sharded {

// The torch.save archive DCP keeps at [offset, offset + length) of a
// .distcp part, opened as a file of its own. Throws FormatError.
inline std::unique_ptr<CheckpointFile> openArchiveAt(const std::string& path, uint64_t offset,
                                                     uint64_t length) {
  ReadOptions options;
  options.sliceOffset = offset;
  options.sliceLength = length;
  return CheckpointFile::open(path, options);
}

inline bool endsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

inline std::string dimsText(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

inline std::string inQuotes(std::string_view s) {
  return "'" + std::string(s.substr(0, 200)) + "'";
}

// A dataclass's (or plain object's) field: its BUILD state is its __dict__,
// or (dict or None, slots dict) for a class with __slots__.
inline const Value* field(const Value* obj, std::string_view name) {
  if (!obj) return nullptr;
  if (obj->kind == Value::Kind::Dict) return obj->get(name);
  if (obj->kind != Value::Kind::Object || !obj->state) return nullptr;
  const Value* st = obj->state;
  if (st->kind == Value::Kind::Tuple && st->items.size() == 2) {
    if (const Value* v = st->items[0]->isDict() ? st->items[0]->get(name) : nullptr) return v;
    st = st->items[1];
  }
  return st->isDict() ? st->get(name) : nullptr;
}

// An object of class `cls` (the last dotted part, or the full name).
inline bool isClass(const Value* v, std::string_view cls) {
  return v && v->kind == Value::Kind::Object &&
         (v->text == cls || endsWith(v->text, std::string(".") + std::string(cls)));
}

// A torch.Size (the reader makes it a tuple) or list of ints.
inline std::optional<Dims> intsOf(const Value* v) {
  if (!v || !v->isSequence()) return std::nullopt;
  Dims d;
  for (const Value* x : v->items) {
    if (!x->isInt()) return std::nullopt;
    d.push_back(x->integer);
  }
  return d;
}

// Most ranks (and chunks of one tensor) a description may claim: more is
// taken for a hostile file (the overlap check compares chunks pairwise).
constexpr int kMaxRanks = 1 << 16;
constexpr size_t kMaxChunks = 1 << 14;

// A global shape a description claims: no negative size, a numel that fits.
inline bool plausibleShape(const Dims& d) {
  uint64_t n = 1;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] < 0) return false;
    if (d[i] > 0 && n > (uint64_t(1) << 62) / uint64_t(d[i])) return false;
    n *= uint64_t(d[i]);
  }
  return true;
}

// TensorProperties: __getstate__ gives (dtype, layout, requires_grad,
// memory_format, pin_memory); an older writer's dataclass state a dict.
inline std::optional<DType> propertiesDtype(const Value* props) {
  const Value* dt = field(props, "dtype");
  if (!dt && props && props->kind == Value::Kind::Object && props->state &&
      props->state->kind == Value::Kind::Tuple && !props->state->items.empty())
    dt = props->state->items[0];
  if (!dt || dt->kind != Value::Kind::Global) return std::nullopt;
  return dtypeFromTorchName(dt->text);
}

// A file of one rank among others with the same name around the rank:
// "model_rank1.pt" is rank 1 of group ("model_rank", ".pt").
struct RankName {
  std::string file;
  std::string prefix, digits, suffix;
  int rank = -1;
  // The group's name for people: "model" ("rank" when the name is no more).
  [[nodiscard]] std::string group() const;
};
// FSDP's per-rank torch.save files: a name with "rank<N>" ("rank_<N>",
// "rank-<N>") ending .pt, .pth or .bin; DeepSpeed's mp_rank files are not.
std::optional<RankName> parseRankName(const std::string& file);
// The rank files directly in `folder`, by group and rank (names only).
std::vector<RankName> rankFilesIn(const std::string& folder);

// A DeepSpeed file name: [bf16_]zero_pp_rank_<r>_mp_rank_<mp>_optim_states.pt,
// mp_rank_<mp>_model_states.pt or zero_pp_rank_<r>_mp_rank_<mp>_model_states.pt.
struct DeepSpeedName {
  int rank = -1;  // the data-parallel rank; -1 for mp_rank_00_model_states.pt
  int mpRank = 0;
  bool optim = false;
  bool bf16 = false;
};
std::optional<DeepSpeedName> parseDeepSpeedName(const std::string& file);
// The tag folder a DeepSpeed checkpoint is in: `folder` itself when it
// holds the model states, the folder its `latest` file names otherwise
// (never outside `folder`); nullopt when neither.
std::optional<std::string> deepSpeedTagFolder(const std::string& folder);
// Boxes of `shape` covering its row-major elements [first, last), in order,
// each a contiguous run: (offsets, sizes).
void flatRangeBoxes(const Dims& shape, uint64_t first, uint64_t last,
                    std::vector<std::pair<Dims, Dims>>& out);

}  // namespace ckpt::sharded
