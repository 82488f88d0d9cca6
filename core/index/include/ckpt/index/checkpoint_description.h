#pragma once
// What the Inspect tab shows of one checkpoint, as facts without words:
// its Summary's fields, the value tree of its Metadata tab, the state-dict
// entries of its Parameters tab, the Adam state of its Optimizer tab and its
// tensor table. Computed from the open file (no tensor byte read but a
// 0-dim optimizer step), here for a local file and by the agent for a
// remote one (`describe`, docs/REMOTE.md; ckpt/remote/describe_wire.h
// carries it), so the app words both the same way (ui/inspector).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/format/pickle_safety.h"

namespace ckpt {

class CheckpointFile;
struct CheckpointSafety;

// A node of the value tree (the Metadata tab): containers give a count,
// scalars a short text, a tensor its dtype and shape, an object its class.
struct DescribedValue {
  enum class Key {
    Text,      // `key` as it is: a dict key, a list position, "callee", "args", "state"
    Root,      // the file's root
    ListItem,  // an opaque object's APPEND item number `item`
  };
  Key keyKind = Key::Text;
  std::string key;
  int64_t item = -1;
  std::string type;        // "dict", "OrderedDict", "int", "tensor", "object", "None", ...
  std::string text;        // scalars: shortRepr; objects: class; tensors: "float32 [64, 64]"
  int64_t count = -1;      // lists, tuples, sets, args: items; dicts: keys
  int tensor = -1;         // a tensor node: index into the file's tensors
  bool repeats = false;    // cut here: it repeats an enclosing value
  bool truncated = false;  // not shown: past the node budget
  std::vector<DescribedValue> children;

  bool operator==(const DescribedValue&) const = default;
};

// A state-dict entry (the Parameters tab's leaves).
struct DescribedEntry {
  std::string name;  // "blocks.0.attn.q_proj.weight", wrapper prefixes stripped
  int tensor = -1;
  std::string dtype, shape;
  uint64_t numel = 0, nbytes = 0;
  std::string tiedTo;  // the entry whose bytes this one shares; "" when none

  bool operator==(const DescribedEntry&) const = default;
};

// One optimizer parameter with state (CheckpointView::optimizerParams).
struct DescribedOptimizerRow {
  int64_t index = 0;
  std::string name;  // "" when it could not be mapped
  std::string step;  // as Python prints it; "" when the state has none
  bool stepUnreadable = false;
  std::string shape;  // exp_avg's
  int expAvg = -1, expAvgSq = -1;
  std::string problem;

  bool operator==(const DescribedOptimizerRow&) const = default;
};

// One tensor of the file (the tensor table).
struct DescribedTensor {
  std::string name;  // its path in the value tree
  std::string dtype, shape;
  std::vector<int64_t> sizes;  // the shape as numbers (the value table's rows and columns)
  uint64_t elements = 0, bytes = 0;
  // Whose it is: an optimizer tensor's parameter ("of" `owner`) or the entry it is tied to.
  enum class Owner { None, OptimizerOf, TiedTo };
  Owner ownerKind = Owner::None;
  std::string owner;
  std::string location;  // its storage's location when not "cpu"
  bool meta = false;
  std::string joined;  // how a sharded checkpoint's slices were joined
  std::string error;   // why its bytes cannot be read

  bool operator==(const DescribedTensor&) const = default;
};

// The safety verdict as the Summary's first line words it (checkpoint_safety.h).
struct DescribedSafety {
  Verdict verdict = Verdict::Safe;
  bool sharded = false;
  std::vector<std::string> dangerous, suspicious;  // offenders
  std::string error;                               // the scan's (or the worst file's) error
  std::string worstFile;                           // sharded: the file carrying the verdict
  uint64_t filesWithVerdict = 0;
  std::string scope;  // sharded: "3 rank files and .metadata"
  uint64_t missing = 0;

  bool operator==(const DescribedSafety&) const = default;
};

struct CheckpointDescription {
  std::string path;
  std::string format;  // formatName()
  bool bigEndian = false;
  uint64_t fileSize = 0;
  int64_t mtime = 0;
  DescribedSafety safety;
  bool sharded = false;  // a checkpoint of many files (the Shards tab)

  std::optional<int64_t> step;
  std::string stepSource;               // where a Megatron save's step came from
  std::optional<int64_t> stepFromName;  // no step inside: the file name's
  std::optional<double> loss;
  std::optional<std::string> run, stage;
  bool final = false;

  bool hasModelState = false;
  uint64_t parameterCount = 0;
  std::string modelStateKey;
  bool ddpPrefix = false, compiledPrefix = false;
  std::vector<DescribedEntry> entries;

  bool hasOptimizer = false;
  uint64_t optimizerWithState = 0;  // entries of its `state`
  uint64_t optimizerGroups = 0;     // param_groups
  std::vector<std::pair<std::string, std::string>>
      optimizerHyper;  // the first group's lr, betas, ...
  std::vector<DescribedOptimizerRow> optimizer;

  std::vector<std::pair<std::string, std::string>> config;    // key, shortRepr(80)
  std::vector<std::pair<std::string, std::string>> metadata;  // key, shortRepr(100); not config
  std::vector<std::string> metadataKeys;                      // every key, config's too
  std::vector<std::string> notes;                             // CheckpointView::notes
  std::vector<DescribedTensor> tensors;
  DescribedValue tree;  // the root; a Megatron save's common.pt is its last child

  bool operator==(const CheckpointDescription&) const = default;
};

// Past this many nodes the Metadata tree is cut (a pickle can hold millions).
inline constexpr size_t kMaxDescribedValues = 200000;

// Describes an open file; `safety` is what scanCheckpoint said of its path.
// Reads no tensor bytes but those of a 0-dim optimizer step.
[[nodiscard]] CheckpointDescription describeCheckpoint(const CheckpointFile& file,
                                                       const CheckpointSafety& safety);

// Opens `path` and describes it (the scan too). Throws FormatError as
// CheckpointFile::open does; `safety` is set before then, so a file that
// cannot be read can still say it is dangerous.
[[nodiscard]] CheckpointDescription describeCheckpointAt(const std::string& path,
                                                         DescribedSafety* safety = nullptr);

DescribedSafety describeSafety(const CheckpointSafety& safety);

}  // namespace ckpt
