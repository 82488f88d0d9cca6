// Where a run's curves come from: the files findMetricSources finds for a
// run (its metrics.jsonl, trainer states, logs beside it and in logs/
// folders up to the root, event files), split from metrics.cpp.
#include "ckpt/index/folder_listing.h"
#include "ckpt/index/hf_trainer.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/mlflow.h"
#include "ckpt/index/tfevents.h"
#include "ckpt/index/trainers.h"
#include "ckpt/index/wandb.h"
#include "clean_path.h"
#include "metric_files.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using detail::cleanPath;
using detail::expandExtra;
using detail::fileKey;
using detail::isJsonlFile;

// Files looked at in one folder of logs: a folder of a million files is not a logs/ folder.
constexpr size_t kMaxLogsPerFolder = 10000;

// isLogFile / isJsonlFile on a listed name, as path::extension() reads it
// (".log" alone is a hidden file without one), without making a path of
// each of a big folder's names.
bool isLogOrJsonl(const FolderEntry& e, bool withJsonl) {
  if (!e.regular) return false;
  const size_t dot = e.name.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  const std::string_view ext = std::string_view(e.name).substr(dot);
  return ext == ".log" || ext == ".out" || ext == ".err" || (withJsonl && ext == ".jsonl");
}

std::vector<fs::path> logFilesIn(const fs::path& dir, const std::vector<FolderEntry>& entries,
                                 bool withJsonl) {
  std::vector<fs::path> out;
  for (const FolderEntry& e : entries) {
    if (out.size() >= kMaxLogsPerFolder) break;
    if (isLogOrJsonl(e, withJsonl)) out.push_back(dir / e.name);
  }
  return out;
}

std::vector<fs::path> logFilesIn(const fs::path& dir, bool withJsonl) {
  return logFilesIn(dir, listFolder(dir.string()), withJsonl);
}

bool isUnder(const fs::path& dir, const fs::path& root) {
  auto d = dir.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++d) {
    if (r->empty()) continue;  // a trailing separator
    if (d == dir.end() || *d != *r) return false;
  }
  return true;
}

bool startsWith(const std::string& s, const std::string& prefix) {
  return !prefix.empty() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

namespace detail {

std::vector<fs::path> expandExtra(const std::vector<std::string>& extraLogs) {
  std::vector<fs::path> out;
  for (const std::string& e : extraLogs) {
    std::error_code ec;
    const fs::path p = cleanPath(e);
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files = logFilesIn(p, /*withJsonl=*/true);
      std::sort(files.begin(), files.end());
      out.insert(out.end(), files.begin(), files.end());
    } else {
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace detail

std::vector<std::string> runLogNames(const RunEntry& run) {
  std::vector<std::string> names;
  auto add = [&names](const std::string& n) {
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  add(cleanPath(run.path).filename().string());
  for (const CheckpointEntry& c : run.checkpoints)
    if (c.runName) add(*c.runName);
  return names;
}

std::vector<MetricSourceFile> findMetricSources(const RunEntry& run,
                                                const std::vector<std::string>& extraLogs) {
  FolderListings listings;
  return findMetricSources(run, extraLogs, listings);
}

std::vector<MetricSourceFile> findMetricSources(const RunEntry& run,
                                                const std::vector<std::string>& extraLogs,
                                                FolderListings& listings) {
  const fs::path dir = cleanPath(run.path);
  // Each folder listed once (the run's own for its logs and its event
  // files; its parent and their logs/ folders for all runs of an open).
  const auto logsIn = [&listings](const fs::path& folder) {
    return logFilesIn(folder, listings.list(folder.string()), false);
  };
  const std::string base = dir.filename().string();
  const std::vector<std::string> names = runLogNames(run);
  std::vector<MetricSourceFile> jsonl, logs;
  std::set<std::string> seen;
  auto add = [&](const fs::path& p, MetricSource kind, bool unnamed) {
    bool regular = false;
    const std::string key = fileKey(p, &regular);
    if (!regular || !seen.insert(key).second) return;
    MetricSourceFile f;
    f.path = p.string();
    f.kind = kind;
    f.filter.names = names;
    f.filter.unnamedLines = unnamed;
    (kind == MetricSource::ConsoleLog ? logs : jsonl).push_back(std::move(f));
  };
  auto namedAfterRun = [&base](const fs::path& p) {
    return startsWith(p.filename().string(), base);
  };

  add(dir / "metrics.jsonl", MetricSource::MetricsJsonl, true);
  // A Trainer's run: its checkpoint folders, or the state save_state() left
  // (no listing of every other run's folder for it).
  std::error_code stateEc;
  const bool hfRun =
      std::any_of(run.checkpoints.begin(), run.checkpoints.end(),
                  [](const CheckpointEntry& c) { return c.trainer == kHfTrainerId; }) ||
      fs::is_regular_file(dir / "trainer_state.json", stateEc);
  if (const std::string state = hfRun ? newestTrainerState(dir.string()) : std::string();
      !state.empty())
    add(state, MetricSource::TrainerState, true);
  add(dir / "metrics.csv", MetricSource::LightningCsv, true);
  if (isMlflowRunFolder(dir.string()))
    for (const std::string& p : mlflowMetricFiles(dir.string())) add(p, MetricSource::Mlflow, true);
  const std::vector<std::string> wandbFolders =
      isWandbRunFolder(dir.string()) ? wandbRunFolders(dir.string()) : std::vector<std::string>{};
  const bool wandbRun = !wandbFolders.empty();
  // A resumed run's folders, oldest first: a later one wins from its first step.
  for (const std::string& folder : wandbFolders) {
    if (const std::string history = wandbHistoryFile(folder); !history.empty())
      add(history, MetricSource::Wandb, true);
    add(wandbRunFile(folder, "output.log"), MetricSource::ConsoleLog, true);
  }
  for (const fs::path& p : logsIn(dir)) add(p, MetricSource::ConsoleLog, true);
  const bool hasParent = dir.has_parent_path() && dir.parent_path() != dir;
  if (hasParent)
    for (const fs::path& p : logsIn(dir.parent_path()))
      add(p, MetricSource::ConsoleLog, namedAfterRun(p));
  // logs/ folders: the run's, its parent's, and every ancestor's up to the root.
  std::vector<fs::path> folders{dir};
  if (hasParent) folders.push_back(dir.parent_path());
  const fs::path root = run.root.empty() ? fs::path() : cleanPath(run.root);
  if (!root.empty() && isUnder(dir, root)) {
    for (fs::path a = dir.parent_path(); isUnder(a, root); a = a.parent_path()) {
      if (std::find(folders.begin(), folders.end(), a) == folders.end()) folders.push_back(a);
      if (a == root || !a.has_parent_path() || a.parent_path() == a) break;
    }
  } else if (root.empty() && hasParent && dir.parent_path().has_parent_path() &&
             dir.parent_path().parent_path() != dir.parent_path()) {
    // Root unknown: the grandparent too, the reference layout's
    // <experiment>/logs next to <experiment>/checkpoints/<run>.
    folders.push_back(dir.parent_path().parent_path());
  }
  for (const fs::path& a : folders)
    for (const fs::path& p : (wandbRun && a == dir) ? std::vector<fs::path>{} : logsIn(a / "logs"))
      add(p, MetricSource::ConsoleLog, a == dir || namedAfterRun(p));
  for (const fs::path& p : expandExtra(extraLogs)) {
    const fs::path parent = p.parent_path();
    if (isJsonlFile(p)) {
      if (parent == dir) add(p, MetricSource::MetricsJsonl, true);
    } else {
      add(p, MetricSource::ConsoleLog, parent == dir || parent == dir / "logs" || namedAfterRun(p));
    }
  }
  // Event files: after metrics.jsonl, in the order TensorBoard reads them;
  // then a Hugging Face Trainer's (its logging_dir is <run>/runs/<date>_<host>/,
  // a new one each launch) and torchtitan's (tb/<timestamp>/), folder by folder.
  for (const std::string& p : tfEventFilesIn(dir.string(), listings.list(dir.string())))
    add(p, MetricSource::TensorBoard, true);
  for (const std::string_view folder : kRunEventFolders)
    for (const std::string& p : tfEventFilesInSubfolders((dir / folder).string()))
      add(p, MetricSource::TensorBoard, true);
  // Later files win a step: by modification time (a restarted job's new
  // log is newer), then by path.
  std::vector<std::pair<fs::file_time_type, MetricSourceFile>> timed;
  for (MetricSourceFile& f : logs) {
    std::error_code ec;
    timed.emplace_back(fs::last_write_time(f.path, ec), std::move(f));
  }
  std::stable_sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.path < b.second.path;
  });
  for (auto& [t, f] : timed) jsonl.push_back(std::move(f));
  return jsonl;
}

}  // namespace ckpt
