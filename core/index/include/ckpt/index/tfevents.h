#pragma once
// TensorBoard event files (events.out.tfevents.*), whoever wrote them:
// torch.utils.tensorboard, tensorboardX, TensorFlow / Keras, Lightning, the
// Hugging Face Trainer. A file is TFRecord framing (u64 LE length, masked
// CRC-32C of the length, the data, masked CRC-32C of the data) around
// `Event` protobufs; the scalars are `Summary.Value`s holding `simple_value`
// or a rank-0 numeric `TensorProto`. Read in blocks, never whole: a 1 GB
// file of images and histograms streams through at the speed of the disk.
// No Qt, no LibTorch, no libprotobuf (core/index/src/protowire.h).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ckpt/index/folder_listing.h"

#include "ckpt/index/metrics.h"

namespace ckpt {

// `events.out.tfevents.<seconds>.<host>...`: the prefix every writer uses.
[[nodiscard]] bool isTfEventsFileName(std::string_view fileName);

// The event files directly in `dir`, in the order TensorBoard reads them:
// by the time its writer started (the seconds in the name), then by name.
// Nothing when `dir` cannot be listed.
[[nodiscard]] std::vector<std::string> tfEventFilesIn(const std::string& dir);
// The same from a listing of `dir` already made (folder_listing.h).
std::vector<std::string> tfEventFilesIn(const std::string& dir,
                                        const std::vector<FolderEntry>& entries);

// The event files of `dir`'s folders (not of `dir` itself), folder by folder
// in the order of their first file, each folder's in tfEventFilesIn's order
// (a Hugging Face Trainer's runs/<date>_<host>/, one per launch).
[[nodiscard]] std::vector<std::string> tfEventFilesInSubfolders(const std::string& dir);

// What an event file holds that a curve needs, in file order.
class TfEventsHandler {
 public:
  virtual ~TfEventsHandler() = default;
  // A scalar of `tag` (a Value without a tag: its node_name, as TensorBoard).
  // `point.wallTime` is the event's wall_time (Unix seconds).
  virtual void scalar(std::string_view tag, const MetricPoint& point) = 0;
  // A SessionLog.START at `step`: a job started (or restarted) there.
  virtual void sessionStart(int64_t step) = 0;
};

struct TfEventsRead {
  uint64_t end = 0;         // just after the last complete record: where to continue
  uint64_t records = 0;     // complete records read, good or bad
  uint64_t badRecords = 0;  // skipped: a checksum that does not match, or a bad Event
  // Bytes past `end` that are not yet a whole record (a writer is still
  // writing it, or the file was cut there).
  uint64_t pendingBytes = 0;
};

// Reads `path` from `offset` (0, or an earlier call's `end`) to the last
// complete record. A record whose data checksum or Event does not decode is
// skipped and counted; after a length whose checksum fails, the next byte
// where a whole header checks out is where reading goes on (the bytes between
// are skipped). Each kind of damage is one line in `problems`, naming the file
// and the byte offset of its first case. A file that cannot be opened is one
// line in `problems` and reads nothing. Never throws for a file's contents.
TfEventsRead readTfEvents(const std::string& path, TfEventsHandler& handler, uint64_t offset = 0,
                          std::vector<std::string>* problems = nullptr);

// A SessionLog.START in readTfEventsPoints' list: this metric name (no tag is
// empty: a Value without tag or node_name is skipped), the point at its step.
inline constexpr std::string_view kTfSessionStart = "";

// readTfEvents as a list of (tag, point) in file order, for the Curves tab's
// live reads; `*end` gets where to continue.
std::vector<std::pair<std::string, MetricPoint>> readTfEventsPoints(
    const std::string& path, uint64_t offset = 0, uint64_t* end = nullptr,
    std::vector<std::string>* problems = nullptr);

// TensorBoard's rule for a SessionLog.START at `step`: the earlier job's
// points at or after `step` are orphans and go. Returns whether any went
// (then `step` is noted in `restarts`).
bool dropFromStep(SeriesPoints& points, std::vector<int64_t>& restarts, int64_t step);

// One tag of a folder's event files.
struct TfSeries {
  std::string tag;
  SeriesPoints points;  // sorted by step, one per step
  std::vector<int64_t> restarts;
  std::vector<std::string> files;  // the files its points came from
};

// A folder's event files (tfEventFilesIn's order) read as one run, as
// TensorBoard does: each tag's points in file order through addInFileOrder
// (a step going back drops the tag's later points), and a SessionLog.START
// drops every tag's points at or after its step (dropFromStep). Sorted by
// tag. `readEnds[file]` gets where each file's reading stopped; an incomplete
// last record is a line in `problems` (a live run's is read when complete).
std::vector<TfSeries> readTfEventsFolder(const std::vector<std::string>& files,
                                         std::map<std::string, uint64_t>* readEnds = nullptr,
                                         std::vector<std::string>* problems = nullptr);

}  // namespace ckpt
