#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/format/error.h"

namespace ckpt {

// How much a global named in a pickle could do if Python unpickled the file
// (torch.load with weights_only=False). The tables behind classifyGlobal()
// live in src/safety_tables.cpp.
enum class SafetyLevel : uint8_t {
  Innocuous,   // what torch's weights_only unpickler allows: rebuild functions, storages, dtypes,
               // ...
  Suspicious,  // plain data classes and builtins that are not code; classes we do not know
  Dangerous,   // can run code, touch the system or the network
};
std::string_view safetyLevelName(SafetyLevel l);  // "innocuous", "suspicious", "dangerous"

// Who wrote a file and where it sits in that writer's layout: the file
// that layout names may name the writer's own classes (an allow-list per
// profile in safety_tables.cpp, what PyTorch's and the writers' restricted
// loaders accept there). A profile applies to that file only: the same
// classes anywhere else are judged by the general tables.
enum class SafetyProfile : uint8_t {
  None,
  DcpMetadata,     // torch.distributed.checkpoint: the folder's .metadata
  Fsdp,            // FSDP's torch.save per rank: a rank file of its folder
  DeepSpeed,       // a DeepSpeed tag folder's model and optimizer states
  HfTrainingArgs,  // Hugging Face Trainer: training_args.bin beside trainer_state.json /
                   // config.json
  Megatron,        // Megatron-LM: a rank's model_optim_rng.pt / distrib_optim.pt in
                   // iter_N/mp_rank_*/ or release/mp_rank_*/, a torch_dist save's
                   // iter_N/common.pt (megatron_names.h)
};
// "a DCP checkpoint's metadata", "an FSDP rank file", ...: "safe for <title>".
std::string_view safetyProfileTitle(SafetyProfile p);

struct GlobalLevel {
  SafetyLevel level = SafetyLevel::Suspicious;
  bool known = false;    // named by a table row (an unknown global called by REDUCE is dangerous)
  std::string_view why;  // the table row's reason; "" for an unknown global
  // Allowed by the file's layout profile (innocuous there only). `callable`:
  // the profile vouches for a call too (an enum's value lookup); a class it
  // vouches for only as built from its state (NEWOBJ + BUILD) is judged by
  // the general tables when a REDUCE calls it (its __init__ runs).
  bool profiled = false;
  bool callable = true;
};
// `module`, `name` as a pickle spells them (Python 2 names such as
// `__builtin__` are mapped first; `name` may be dotted: "OrderedDict.fromkeys").
GlobalLevel classifyGlobal(std::string_view module, std::string_view name,
                           SafetyProfile profile = SafetyProfile::None);
// "module.name" after the Python 2 aliases ("__builtin__.getattr" ->
// "builtins.getattr"): the name the tables and the scan's special cases use.
std::string canonicalGlobal(std::string_view module, std::string_view name);

// One GLOBAL / STACK_GLOBAL / INST opcode (or a getattr it resolves).
struct GlobalUse {
  std::string module;
  std::string name;
  SafetyLevel level = SafetyLevel::Suspicious;
  std::string record;   // which pickle: "archive/data.pkl", "legacy main pickle", "file.pkl", ...
  uint64_t offset = 0;  // byte offset of the opcode within the file (zip: within the record)
  std::string
      why;  // what made the level ("os.* runs commands", "unknown global called by REDUCE", ...)
  std::string reaches;  // builtins.getattr followed: what it reaches ("os.system"); else ""
  // "getattr" for an entry no opcode names: what a getattr call reached
  // (`offset` is then the REDUCE's); "" for GLOBAL / STACK_GLOBAL / INST.
  std::string via;
};

enum class Verdict : uint8_t { Safe, Suspicious, Dangerous, Unreadable };
std::string_view verdictName(Verdict v);  // "safe", "suspicious", "dangerous", "unreadable"

// What a file would do if unpickled, found by walking its pickles' opcodes:
// nothing is imported, called or built.
struct SafetyReport {
  Verdict verdict = Verdict::Safe;
  // The layout profile the file was judged under (set before scanning).
  SafetyProfile profile = SafetyProfile::None;
  std::vector<GlobalUse>
      globals;  // every global named, in file order (a pickle's memo reuse is not repeated)
  // Why the file (or one of its pickles) could not be scanned to its end;
  // what came before the break is in `globals` and counts for the verdict:
  // a dangerous global seen before the damage leaves the verdict dangerous.
  std::string error;
  size_t pickles = 0;  // pickles scanned (whole or in part)
  // Globals past ScanLimits::maxGlobals are not listed, but still judged.
  size_t leftOut = 0;
  SafetyLevel leftOutWorst = SafetyLevel::Innocuous;

  [[nodiscard]] SafetyLevel worst() const;
  // The dangerous and suspicious globals as "module.name" (once each, worst first).
  [[nodiscard]] std::vector<std::string> offenders() const;
  // "dangerous: posix.system, builtins.eval" / "suspicious: pathlib.PosixPath" / "safe" /
  // "safe for a DCP checkpoint's metadata" (judged under a layout profile).
  [[nodiscard]] std::string summary() const;
};

struct ScanLimits {
  uint64_t maxPickleBytes = 1ull << 30;  // one pickle record
  uint64_t maxStack = 1'000'000;         // stack entries + marks
  uint64_t maxMemo = 2'000'000;          // memo entries (picklers number them 0, 1, 2, ...)
  uint64_t maxSparseMemo = 65'536;       // memo entries out of that sequence (hand-made pickles)
  uint64_t maxGlobals = 100'000;  // globals listed per file (the rest is summarised in `error`)
  uint64_t maxRecords = 10'000;   // pickle records in one zip
};

// A pickle the scan stopped walking for a bound of its own (ScanLimits, a
// text line or name longer than it follows) where Python's unpickler would
// go on: what follows was not examined.
class ScanLimitError : public FormatError {
 public:
  using FormatError::FormatError;
};

// Walks one pickle's opcodes from `data` and adds what it names to `report`
// (`baseOffset` is added to offsets; globals are judged under
// report.profile). Returns the offset just past STOP (relative to data). A
// pickle that breaks off throws TruncatedError, one Python's unpickler
// would refuse at the same opcode FormatError, one past the scan's own
// bounds ScanLimitError, each naming `record` and the byte offset; what was
// seen before stays in `report`.
uint64_t scanPickle(const uint8_t* data, uint64_t size, const std::string& record,
                    uint64_t baseOffset, SafetyReport& report, const ScanLimits& limits = {});

// Every pickle of a file: every zip record that holds one, recognised by
// its bytes whatever its name (a walk from its first byte that reaches
// STOP, or names a global before it breaks; a torch file's `data/<key>`
// storages are raw bytes no loader unpickles), stored ones read whatever
// their encryption flag says; .npy records' object arrays; a legacy file's
// pickles from the magic number on; a plain pickle (protocol 0-5); a numpy
// .npy object array. safetensors files hold no pickle and are safe. A
// record that could not be examined (an unknown compression method, past
// a bound, unreadable) leaves the verdict unreadable at best. Never throws:
// a file that cannot be read comes back `unreadable` with `error` (path,
// record, byte offset), and the globals seen before the break. `profile`:
// the layout profile the file is judged under (checkpoint_safety.h knows
// which file of a layout is which).
SafetyReport scanFile(const std::string& path, const ScanLimits& limits = {},
                      SafetyProfile profile = SafetyProfile::None);
// The same for the `length` bytes at `offset` of a file, read as a file of
// their own (one torch.save archive of a DCP .distcp file); errors name the
// path and the slice.
SafetyReport scanFileSlice(const std::string& path, uint64_t offset, uint64_t length,
                           const ScanLimits& limits = {});
// The same for a file's bytes already in memory, named `name` (the
// fuzzer's inputs): the same code as scanFile over an InputFile in memory.
SafetyReport scanBytes(const std::string& name, const uint8_t* data, uint64_t size,
                       const ScanLimits& limits = {}, SafetyProfile profile = SafetyProfile::None);
// The verdict of what a report holds: dangerous when any global is (even
// in a file that breaks off later), else unreadable when the scan stopped,
// else suspicious when any global is, else safe.
[[nodiscard]] Verdict judgeSafety(const SafetyReport& report);

}  // namespace ckpt
