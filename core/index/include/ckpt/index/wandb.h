#pragma once
// Weights & Biases run folders, as the wandb SDK leaves them on disk (online
// or offline):
//
//   wandb/run-<YYYYMMDD_HHMMSS>-<id>/          (offline-run-... offline)
//     run-<id>.wandb              the run's transaction log: every record the
//                                 SDK sent or would send (wandb sync uploads it)
//     files/config.yaml           the config: `<key>: {desc: ..., value: ...}`
//                                 (newer SDKs: `{value: ...}`), `_wandb` internal
//     files/wandb-summary.json    the run summary (last value of each key)
//     files/output.log            the console output
//     logs/debug.log, debug-internal.log   the SDK's own logs (not read)
//   wandb/latest-run -> run-...   a link to the newest run (not a run of its own)
//   wandb/run-<later>-<id>/       a resumed run's next attempt (same id): one
//                                 run with the others (wandbRunFolders)
//
// wandb before 0.10 (wandb/wandb_run.py, history.py, run_manager.py: the
// Run's dir is `{run|dryrun}-<UTC %Y%m%d_%H%M%S>-<id>`, dryrun offline) kept
// the run's files in the run folder itself, with no .wandb file:
//
//   wandb/run-<date>_<time>-<id>/  (dryrun-... offline)
//     wandb-history.jsonl         the history: one json.dumps'd row a line,
//                                 the logged keys then `_runtime`,
//                                 `_timestamp`, `_step` (History._write);
//                                 NaN / Infinity bare; a resumed attempt's
//                                 folder starts with the tail of the
//                                 history the server returned (_setup_resume)
//     wandb-summary.json, config.yaml ({desc, value} per key, `wandb_version`,
//     `_wandb`), wandb-metadata.json (`name`: the display name, when set),
//     wandb-events.jsonl (system metrics, not read), output.log
//
// Every file of a run folder is looked for in files/ first, then in the
// folder itself (wandbRunFile). Where a folder holds both a .wandb file and
// a wandb-history.jsonl, the .wandb file is its history (wandbHistoryFile).
//
// The .wandb file (wandb/sdk/internal/datastore.py, core/pkg/leveldb in
// wandb/wandb) is a 7-byte header (":W&B", u16 LE 0xBEE1, version u8 0)
// then LevelDB's log format: 32 KiB blocks of chunks, each a 7-byte header
// (u32 LE CRC-32 (IEEE, zlib's, unmasked) of the type byte and the data, u16
// LE length, u8 type FULL 1 / FIRST 2 / MIDDLE 3 / LAST 4) and the data; a
// block's last < 7 bytes are zeros. A record is one serialized `Record`
// protobuf (wandb/proto/wandb_internal.proto): history = 2 (HistoryRecord:
// item = 1 {key = 1, nested_key = 2, value_json = 16}, step = 2 {num = 1}),
// run = 17 (RunRecord: run_id = 1, entity = 2, project = 3,
// display_name = 8, start_time = 17). A history row's `_step` item is its
// step and `_timestamp` its wall time; a key is `nested_key` joined with
// '.', a JSON object value is flattened the same way (as wandb-core's
// runhistory does); media objects (`_type`) and non-numbers are no curves.
// No Qt, no LibTorch, no libprotobuf (protowire.h).

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt {

// RunEntry::trainer (and CheckpointEntry::trainer) of what these rules find.
inline constexpr std::string_view kWandbId = "wandb";

// "run-20240101_120000-abc123", "offline-run-..." or (before 0.10)
// "dryrun-...": the folder name wandb.init gives a run.
[[nodiscard]] bool isWandbRunFolderName(std::string_view name);

// A run folder (by its name, or the name of the folder it links to:
// latest-run) holding a files/ folder or a .wandb file, or (before 0.10)
// a wandb-history.jsonl, wandb-summary.json, config.yaml or
// wandb-metadata.json of its own.
[[nodiscard]] bool isWandbRunFolder(const std::string& dir);

// wandb/latest-run: a link to a run folder listed under its own name.
[[nodiscard]] bool isWandbLatestLink(const std::string& dir);

// The run a file belongs to when it lies under a run folder (a checkpoint
// the script saved with wandb.save: in files/, before 0.10 in the folder
// itself): that run's newest folder.
[[nodiscard]] std::optional<std::string> wandbRunOf(const std::string& path);

// Every folder of the run `dir` belongs to, oldest first: wandb.init(id=...,
// resume=...) starts a new folder for each attempt, named by its start
// time, with the same run id, in the same wandb/ folder. At one start time
// an offline folder comes first. The last is the newest: the run's own
// folder (its name, summary and config are the newest attempt's). A folder
// that is no run folder: itself alone.
[[nodiscard]] std::vector<std::string> wandbRunFolders(const std::string& dir);

// The run's .wandb file ("" when there is none).
[[nodiscard]] std::string wandbStoreFile(const std::string& dir);

// `name` of the run folder `dir`: files/<name>, else <name> in the folder
// itself (wandb before 0.10); "" when it is in neither.
[[nodiscard]] std::string wandbRunFile(const std::string& dir, std::string_view name);

// Where the run folder's history is: its .wandb file, else an older SDK's
// wandb-history.jsonl (wandbRunFile); "" when there is neither.
[[nodiscard]] std::string wandbHistoryFile(const std::string& dir);

// An older SDK's history file, by its name (wandb-history.jsonl).
[[nodiscard]] bool isWandbHistoryJsonl(const std::string& path);

// The files a run's curves and summary come from, those that are there:
// its history (wandbHistoryFile), output.log, wandb-summary.json.
[[nodiscard]] std::vector<std::string> wandbMetricFiles(const std::string& dir);

// What the run's RunRecord says (the first one in the .wandb file).
struct WandbRunInfo {
  std::string runId, entity, project, displayName;
  std::optional<double> startTime;  // Unix seconds
};

// The run's name as the W&B UI shows it: its display name (the .wandb
// file's RunRecord; without one, wandb-metadata.json's `name`), else the
// run folder's name.
[[nodiscard]] std::string wandbRunName(const std::string& dir);

// ------------------------------------------------------------ .wandb file

struct WandbStoreRead {
  uint64_t end = 0;      // just after the last whole record: where a live run is read on from
  uint64_t records = 0;  // whole records read
  // Records lost to damage: a chunk whose CRC does not match, framing that
  // makes no sense (the rest of its block is skipped), a record whose
  // protobuf does not decode. Each kind is one line in `problems` naming
  // the file and the byte of its first case.
  uint64_t damaged = 0;
  // The header is not W&B's, or a store version this reader does not know:
  // nothing was read (problems says so: the history needs `wandb sync`).
  bool unreadable = false;
};

// Each whole record of `path` from `offset` (0: the start, its header
// checked; else an earlier call's `end`) to the last whole one, handed to
// `record(bytes, byteOffset)`, at most `maxRecords` of them. A record still
// being written (a live run, a truncated tail) is left for the next call.
// Never throws for a file's contents; a file that cannot be opened is a
// line in `problems`.
WandbStoreRead readWandbStore(const std::string& path, uint64_t offset,
                              const std::function<void(std::string_view, uint64_t)>& record,
                              std::vector<std::string>* problems = nullptr,
                              uint64_t maxRecords = UINT64_MAX);

// The first RunRecord of a .wandb file (read until it is found).
[[nodiscard]] WandbRunInfo readWandbRunInfo(const std::string& storePath);

// The history rows of a .wandb file from `offset` as (metric, point) in file
// order; `*end` gets where to continue, `*damaged` adds the records lost.
// A wandb-history.jsonl (isWandbHistoryJsonl) is read by
// readWandbHistoryJsonl: the run's history, whichever file holds it.
std::vector<std::pair<std::string, MetricPoint>> readWandbPoints(
    const std::string& path, uint64_t offset = 0, uint64_t* end = nullptr,
    std::vector<std::string>* problems = nullptr, uint64_t* damaged = nullptr);

// The whole history (a .wandb file or a wandb-history.jsonl) per metric,
// each through addInFileOrder; sorted by metric.
std::vector<FileSeries> readWandbHistory(const std::string& path, uint64_t* end = nullptr,
                                         std::vector<std::string>* problems = nullptr,
                                         uint64_t* damaged = nullptr);

// ---------------------------------------- wandb-history.jsonl (before 0.10)

// How a read of a wandb-history.jsonl from the start names its last line
// when no newline ends it (the metrics cache drops it once more is read).
inline constexpr std::string_view kWandbHistoryCutShort =
    "a last line without a newline (cut short, or still being written)";

// The rows of an older SDK's wandb-history.jsonl from byte `offset` (0, or
// an earlier call's `*end`) as (metric, point) in file order: each row's
// numbers named as the .wandb reader names them (a nested dict's parts
// joined with '.'; media objects, strings, booleans and the SDK's own keys
// no curves), at its `_step`, its `_timestamp` the wall time. Reading stops
// at the last line ended by a newline (`*end`: just past it); from the start
// (offset 0) a last line without one is named in `problems` and counted in
// `*damaged` (cut short, or still being written: a later read from `*end`
// takes it once it is whole). A line that is no JSON object with an
// integer `_step` is skipped, named by its line and byte, and counted. A row
// with a `_stream` key belongs to a History.stream() of its own steps and is
// left out. A file shorter than `offset` was rewritten: read from the start.
std::vector<std::pair<std::string, MetricPoint>> readWandbHistoryJsonl(
    const std::string& path, uint64_t offset = 0, uint64_t* end = nullptr,
    std::vector<std::string>* problems = nullptr, uint64_t* damaged = nullptr);

// ------------------------------------------------------ files/ of the run

// config.yaml (wandbRunFile): each key's `value` (the `_wandb` key and
// `wandb_version` left out), as JSON. Empty when there is no such file; a
// file that cannot be read is a line in `problems`.
[[nodiscard]] nlohmann::json readWandbConfig(const std::string& dir,
                                             std::vector<std::string>* problems = nullptr);

// A wandb-summary.json (wandbRunFile): every number, nested keys joined
// with '.' (`_wandb` and media objects left out). Python's NaN / Infinity
// accepted.
[[nodiscard]] std::map<std::string, double> readWandbSummary(
    const std::string& path, std::vector<std::string>* problems = nullptr);

}  // namespace ckpt
