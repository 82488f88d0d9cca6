#include "ckpt/index/megatron.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/index/natural_order.h"
#include "ckpt/index/trainers.h"
#include "small_file.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

constexpr std::string_view kRankFile = "model_optim_rng.pt";
constexpr std::string_view kDistribOptim = "distrib_optim.pt";
constexpr std::string_view kTracker = "latest_checkpointed_iteration.txt";
// torch_dist (megatron/core/dist_checkpointing): the checkpointing config
// and the common (not sharded) state beside the DCP files.
constexpr std::string_view kDistConfig = "metadata.json";
constexpr std::string_view kCommon = "common.pt";

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

bool isFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The rank folders of a save folder that hold a rank file, in natural order
// (mp_rank_00 before mp_rank_01; mp_rank_00_000 before mp_rank_00_001).
std::vector<fs::path> rankFolders(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code dec;
    if (it->is_directory(dec) && isMegatronRankName(it->path().filename().string()) &&
        isFile(it->path() / kRankFile))
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    return naturalLess(a.filename().string(), b.filename().string());
  });
  return out;
}

// A torch_dist save: metadata.json is a CheckpointingConfig (an object
// with a string sharded_backend: "torch_dist", "zarr", ...) and common.pt
// is there. The config is a few dozen bytes; more is not Megatron's.
bool isDistSave(const fs::path& dir) {
  if (!isFile(dir / kCommon)) return false;
  const std::optional<detail::SmallFile> config = detail::readSmallFile(dir / kDistConfig, 4095);
  if (!config || config->larger || config->text.empty()) return false;
  const nlohmann::json j = nlohmann::json::parse(config->text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("sharded_backend") && j["sharded_backend"].is_string();
}

// `iteration` of a file's pickle (generate_state_dict's; common.pt's too).
std::optional<int64_t> iterationIn(const std::string& path) {
  try {
    ReadOptions options;
    options.metadataOnly = true;
    const auto file = CheckpointFile::open(path, options);
    const Value* iteration = CheckpointView(*file).lookup("iteration");
    if (iteration && iteration->isNumber()) return int64_t(iteration->number());
  } catch (const std::exception&) {
    // Its description says what is wrong with it.
  }
  return std::nullopt;
}

std::string folderName(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty() && p.has_parent_path()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

bool isMegatronCheckpointFolder(const std::string& dir) {
  const std::string name = folderName(dir);
  if (!megatronIterationOf(name) && name != "release") return false;
  return !rankFolders(fs::path(dir)).empty() || isDistSave(fs::path(dir));
}

std::string megatronCommonFile(const CheckpointEntry& e) {
  if (e.trainer != kMegatronId || e.sharded.empty()) return {};
  for (const CheckpointPart& p : e.parts)
    if (p.file == kCommon) return p.path;
  return {};
}

namespace {

// A torch_dist save: the DCP folder is the checkpoint (its tensors by
// ShardedTensor key), common.pt and metadata.json its parts.
CheckpointEntry describeDistSave(const std::string& dir, const std::string& relative) {
  const fs::path d(dir);
  CheckpointEntry e = describeCheckpoint(dir, relative);
  addCheckpointPart(e, (d / kCommon).string(), std::string(kCommon), "common state");
  addCheckpointPart(e, (d / kDistConfig).string(), std::string(kDistConfig), "format");
  e.shardFiles += 2;
  if (folderName(dir) != "release")
    if (const std::optional<int64_t> it = iterationIn((d / kCommon).string())) e.step = it;
  return e;
}

}  // namespace

CheckpointEntry describeMegatronCheckpoint(const std::string& dir, const std::string& relative) {
  const fs::path d(dir);
  const std::vector<fs::path> ranks = rankFolders(d);
  const std::string name = folderName(dir);
  CheckpointEntry e;
  const bool dist = ranks.empty() && isDistSave(d);
  if (dist) {
    e = describeDistSave(dir, relative);
  } else if (ranks.empty()) {
    e.path = dir;
    e.file = relative;
    e.error = "no mp_rank_*/model_optim_rng.pt in the folder";
    e.verdict = "unreadable";
    e.safety = "unreadable: " + e.error;
  } else {
    // The first rank's file is the checkpoint as one file shows it (its
    // metadata, its part of the weights); the rest are parts.
    const std::string first = (ranks.front() / kRankFile).string();
    e = describeCheckpoint(first, relative);
    // generate_state_dict's `iteration` is the step (its pickle only, cached);
    // a release has none that means one.
    if (e.error.empty() && name != "release")
      if (const std::optional<int64_t> it = iterationIn(first)) e.step = it;
  }
  e.file = relative;
  e.folder = dir;
  e.trainer = std::string(kMegatronId);
  if (!dist) {  // a torch_dist save keeps its DCP layout and ranks
    e.layout = std::string(kMegatronId);
    e.ranks = int(ranks.size());
  }
  if (name == "release") {
    e.kind = CheckpointKind::Final;
    e.step.reset();
  } else {
    // What the pickle says wins (describeCheckpoint read `iteration`); else the folder's number.
    if (!e.step) e.step = megatronIterationOf(name);
    if (e.kind == CheckpointKind::Unknown) e.kind = CheckpointKind::Step;
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string rank = ranks[i].filename().string();
    if (i > 0)
      addCheckpointPart(e, (ranks[i] / kRankFile).string(), rank + "/" + std::string(kRankFile),
                        "rank " + rank);
    if (isFile(ranks[i] / kDistribOptim))
      addCheckpointPart(e, (ranks[i] / kDistribOptim).string(),
                        rank + "/" + std::string(kDistribOptim), "optimizer " + rank);
  }
  if (!ranks.empty()) e.shardFiles = int(e.parts.size()) + 1;
  return e;
}

std::string inspectPathOf(const CheckpointEntry& e) {
  if (e.trainer == kMegatronId && e.layout == kMegatronId && e.ranks > 1 && !e.folder.empty())
    return e.folder;
  return e.path;
}

std::optional<int64_t> readMegatronTracker(const std::string& saveDir) {
  const std::optional<detail::SmallFile> tracker =
      detail::readSmallFile(fs::path(saveDir) / kTracker, 64);
  if (!tracker) return std::nullopt;
  std::string text = tracker->text;
  // read_metadata: f.read().strip(), then int() or "release".
  const auto notSpace = [](char c) { return !std::isspace(static_cast<unsigned char>(c)); };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), notSpace));
  text.erase(std::find_if(text.rbegin(), text.rend(), notSpace).base(), text.end());
  if (text == "release") return -1;
  if (!allDigits(text) || text.size() > 18) return std::nullopt;
  return std::stoll(text);
}

void markMegatronLatest(RunEntry& run) {
  if (std::none_of(run.checkpoints.begin(), run.checkpoints.end(),
                   [](const CheckpointEntry& c) { return c.trainer == kMegatronId; }))
    return;
  run.trainer = std::string(kMegatronId);
  const std::optional<int64_t> latest = readMegatronTracker(run.path);
  if (!latest) return;
  for (CheckpointEntry& c : run.checkpoints) {
    if (c.trainer != kMegatronId) continue;
    const std::string name = folderName(c.folder);
    c.latest = *latest < 0 ? name == "release" : megatronIterationOf(name) == *latest;
  }
}

}  // namespace ckpt
