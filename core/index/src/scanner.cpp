#include "ckpt/index/scanner.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <sys/stat.h>

#include "ascii.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/index/accelerate.h"
#include "ckpt/index/hf_trainer.h"
#include "ckpt/index/lightning.h"
#include "ckpt/index/listing_cache.h"
#include "ckpt/index/megatron.h"
#include "ckpt/index/mlflow.h"
#include "ckpt/index/natural_order.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/tfevents.h"
#include "ckpt/index/torchtitan.h"
#include "ckpt/index/trainers.h"
#include "ckpt/index/wandb.h"
#include "read_ahead.h"
#include "scan_walk.h"

namespace fs = std::filesystem;

namespace ckpt {

using namespace detail;  // the walk (scan_walk.h)

std::string_view trainerTitle(std::string_view id) {
  // Proper nouns: the same in every language.
  static const std::map<std::string_view, std::string_view> titles = {
      {kHfTrainerId, "Hugging Face Trainer"},
      {kAccelerateId, "Hugging Face Accelerate"},
      {kLightningId, "PyTorch Lightning"},
      {kMlflowId, "MLflow"},
      {kWandbId, "W&B"},
      {kTensorBoardId, "TensorBoard"},
      {kNanoGptId, "nanoGPT"},
      {kDeepSpeedId, "DeepSpeed"},
      {kMegatronId, "Megatron-LM"},
      {kTorchtitanId, "torchtitan"},
      {kCkptScopeId, "CkptScope (metrics.jsonl)"}};
  const auto it = titles.find(id);
  return it == titles.end() ? id : it->second;
}

std::string_view checkpointKindName(CheckpointKind k) {
  switch (k) {
    case CheckpointKind::Step:
      return "step";
    case CheckpointKind::Final:
      return "final";
    case CheckpointKind::Best:
      return "best";
    case CheckpointKind::Latest:
      return "latest";
    case CheckpointKind::Unknown:
      return "";
  }
  return "";
}

std::string runNameFor(const std::string& root, const std::string& dir) {
  const fs::path rootPath(root);
  std::string name = fs::path(dir).lexically_relative(rootPath).string();
  if (name.empty() || name == ".")
    name = fs::absolute(rootPath).lexically_normal().filename().string();
  // Above the root (the root is a sharded checkpoint's own folder, whose run
  // is the folder holding it): that folder's name, not "..".
  else if (name == ".." || name.starts_with("../"))
    name = fs::absolute(fs::path(dir)).lexically_normal().filename().string();
  if (name.empty())
    name = fs::absolute(rootPath).lexically_normal().parent_path().filename().string();
  return name;
}

void sortCheckpoints(std::vector<CheckpointEntry>& checkpoints) {
  const auto before = [](const CheckpointEntry& a, const CheckpointEntry& b) {
    const int64_t sa = a.step.value_or(INT64_MAX), sb = b.step.value_or(INT64_MAX);
    if (sa != sb) return sa < sb;
    // At one step: the step file, then best / latest copies, then final.
    auto rank = [](CheckpointKind k) {
      switch (k) {
        case CheckpointKind::Step:
          return 0;
        case CheckpointKind::Best:
          return 1;
        case CheckpointKind::Latest:
          return 2;
        case CheckpointKind::Final:
          return 3;
        default:
          return 4;
      }
    };
    if (rank(a.kind) != rank(b.kind)) return rank(a.kind) < rank(b.kind);
    return naturalLess(a.file, b.file);
  };
  // Most runs' files are listed in step order already (step_100 before
  // step_200): nothing to move (a stable sort moved every entry twice).
  if (std::is_sorted(checkpoints.begin(), checkpoints.end(), before)) return;
  std::stable_sort(checkpoints.begin(), checkpoints.end(), before);
}

namespace {

// DeepSpeed's `latest` file in the run's folder names the newest tag folder.
void markDeepSpeedLatest(RunEntry& run) {
  if (std::none_of(run.checkpoints.begin(), run.checkpoints.end(),
                   [](const CheckpointEntry& c) { return c.layout == "deepspeed"; }))
    return;  // nothing to mark: the folder is not listed again
  const std::optional<ShardProbe> probe = probeSharded(run.path);
  if (!probe || probe->layout != ShardLayout::DeepSpeed || fs::path(probe->folder) == run.path)
    return;
  const fs::path tag = fs::path(probe->folder).lexically_normal();
  for (CheckpointEntry& c : run.checkpoints)
    if (c.layout == "deepspeed" && fs::path(c.path).lexically_normal() == tag) c.latest = true;
}

// Checkpoints sorted, a Trainer run's best and final marked, DeepSpeed's
// latest marked, its metrics files named.
void finishRun(RunEntry& run, const Found& found) {
  sortCheckpoints(run.checkpoints);
  markDeepSpeedLatest(run);
  markMegatronLatest(run);
  if (std::any_of(run.checkpoints.begin(), run.checkpoints.end(),
                  [](const CheckpointEntry& c) { return c.trainer == kHfTrainerId; })) {
    run.trainer = std::string(kHfTrainerId);
    applyTrainerState(run);
    sortCheckpoints(run.checkpoints);  // the final model may have its step now
  }
  const fs::path runDir = fs::path(run.path).lexically_normal();
  if (const auto it = found.metricFiles.find(fs::path(run.path)); it != found.metricFiles.end())
    run.metricFiles = it->second;
  // Event files: the run's own, and those of its runs/*/ and tb/*/ folders
  // (findMetricSources reads the same ones).
  bool events = false;
  for (const auto& [dir, files] : found.eventFiles) {
    const std::optional<fs::path> owner = eventFolderOwner(dir);
    if (dir.lexically_normal() != runDir && (!owner || owner->lexically_normal() != runDir))
      continue;
    run.metricFiles.insert(run.metricFiles.end(), files.begin(), files.end());
    events = true;
  }
  std::sort(run.metricFiles.begin(), run.metricFiles.end());
  if (run.trainer.empty() &&
      (std::any_of(run.checkpoints.begin(), run.checkpoints.end(),
                   [](const CheckpointEntry& c) { return c.trainer == kLightningId; }) ||
       std::any_of(run.metricFiles.begin(), run.metricFiles.end(),
                   [](const std::string& f) { return fs::path(f).filename() == "metrics.csv"; }))) {
    run.trainer = std::string(kLightningId);
    applyModelCheckpointBest(run);
  }
  // An MLflow run is named as MLflow's UI names it (its checkpoints, if
  // any, are artifacts it logged).
  if (isMlflowRunFolder(run.path)) {
    run.trainer = std::string(kMlflowId);
    run.name = mlflowRunName(run.path);
    if (run.metricFiles.empty())
      run.metricFiles.push_back((fs::path(run.path) / "metrics").string());
  }
  // A W&B run is named as W&B's UI names it; its files are the .wandb
  // history, the console output and the summary of each of its folders.
  if (isWandbRunFolder(run.path)) {
    run.trainer = std::string(kWandbId);
    run.name = wandbRunName(run.path);
    for (const std::string& folder : wandbRunFolders(run.path))
      for (std::string& f : wandbMetricFiles(folder))
        if (std::find(run.metricFiles.begin(), run.metricFiles.end(), f) == run.metricFiles.end())
          run.metricFiles.push_back(std::move(f));
    std::sort(run.metricFiles.begin(), run.metricFiles.end());
  }
  if (!run.trainer.empty()) return;
  // The trainer its checkpoints say wrote them (nanoGPT's iter_num, a
  // DeepSpeed tag folder), else what its metrics files say.
  for (const CheckpointEntry& c : run.checkpoints)
    if (!c.trainer.empty()) {
      run.trainer = c.trainer;
      return;
    }
  const bool jsonl =
      std::any_of(run.metricFiles.begin(), run.metricFiles.end(),
                  [](const std::string& f) { return fs::path(f).filename() == "metrics.jsonl"; });
  if (jsonl)
    run.trainer = std::string(kCkptScopeId);
  else if (events && run.checkpoints.empty())
    // Lightning's TensorBoardLogger writes version_N/ with hparams.yaml.
    run.trainer = std::string(isLightningRunFolder(run.path) ? kLightningId : kTensorBoardId);
}

}  // namespace

RunEntry scanRunDirectory(const std::string& root, const std::string& dir,
                          const std::function<bool(const CheckpointEntry& entry)>& keep) {
  RunEntry run;
  run.name = runNameFor(root, dir);
  run.path = dir;
  run.root = root;
  // A Trainer checkpoint folder is a checkpoint of the run in its parent,
  // a Lightning run's checkpoints/ folder holds checkpoints of its parent.
  // So is a Megatron iter_<N>/ folder (and its rank folders), and torchtitan's
  // checkpoint/ folder holds checkpoints of the dump folder.
  const fs::path parent = fs::path(dir).lexically_normal().parent_path();
  if (isHfCheckpointFolder(dir) || isLightningCheckpointFolder(dir) ||
      isMegatronCheckpointFolder(dir) ||
      (isMegatronRankName(fs::path(dir).lexically_normal().filename().string()) &&
       isMegatronCheckpointFolder(parent.string())) ||
      (fs::path(dir).lexically_normal().filename() == "checkpoint" &&
       hasTorchtitanCheckpoint(dir)) ||
      mlflowRunOf((fs::path(dir) / "file").string()) || isAccelerateStateFolder(dir) ||
      hasAutomaticAccelerateFolders(dir))
    return run;
  std::error_code ec;
  Found found;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec))
      found.addFile(it->path());
    else if (it->is_directory(fec) && isHfCheckpointFolder(it->path().string()))
      found.hfFolders.push_back(it->path());
    else if (it->is_directory(fec) && isMegatronCheckpointFolder(it->path().string()))
      found.megatronFolders.push_back(it->path());
    else if (it->is_directory(fec) && isAccelerateStateFolder(it->path().string()))
      found.accelerateFolders.push_back(it->path());
  }
  if (ec) throw std::runtime_error(dir + ": " + ec.message());
  // Accelerate's automatic naming: <project_dir>/checkpoints/checkpoint_<i>/.
  if (const fs::path ckpts = fs::path(dir) / "checkpoints"; hasAutomaticAccelerateFolders(ckpts)) {
    std::error_code cec;
    for (fs::directory_iterator it(ckpts, fs::directory_options::skip_permission_denied, cec), end;
         !cec && it != end; it.increment(cec)) {
      std::error_code fec;
      if (it->is_directory(fec) && isAccelerateStateFolder(it->path().string()))
        found.accelerateFolders.push_back(it->path());
    }
  }
  if (const fs::path ckpts = fs::path(dir) / "checkpoints";
      isLightningCheckpointFolder(ckpts.string())) {
    std::error_code cec;
    for (fs::directory_iterator it(ckpts, fs::directory_options::skip_permission_denied, cec), end;
         !cec && it != end; it.increment(cec)) {
      std::error_code fec;
      if (it->is_regular_file(fec) && isListedFile(it->path())) found.files.push_back(it->path());
    }
  }
  // An MLflow run's checkpoints are artifacts it logged, anywhere below artifacts/.
  if (const fs::path artifacts = fs::path(dir) / "artifacts";
      isMlflowRunFolder(dir) && fs::is_directory(artifacts, ec)) {
    std::error_code aec;
    for (fs::recursive_directory_iterator
             it(artifacts, fs::directory_options::skip_permission_denied, aec),
         end;
         !aec && it != end; it.increment(aec)) {
      std::error_code fec;
      if (it->is_regular_file(fec) && isListedFile(it->path())) found.files.push_back(it->path());
    }
  }
  collectSharded(dir, found.files, found.parts);
  // torchtitan's checkpoint/step-<N>/ folders are its checkpoints.
  for (const fs::path& step : torchtitanCheckpoints(dir))
    collectSharded(step, found.files, found.parts);
  // Its runs/*/ and tb/*/ event files are its own; a folder that is such
  // a folder of a run has none of its own.
  for (const std::string_view folder : kRunEventFolders)
    for (const std::string& f : tfEventFilesInSubfolders((fs::path(dir) / folder).string()))
      found.eventFiles[fs::path(f).parent_path()].push_back(f);
  if (const std::optional<fs::path> owner = eventFolderOwner(fs::path(dir));
      owner && looksLikeRun(*owner))
    found.eventFiles.erase(fs::path(dir));
  const fs::path rootPath(root);
  for (const Item& item : itemsOf(found)) {
    CheckpointEntry entry = describeItem(item, rootPath);
    if (!keep || keep(entry)) run.checkpoints.push_back(std::move(entry));
  }
  finishRun(run, found);
  return run;
}

ScanResult scanDirectory(const std::string& root, const ScanOptions& options) {
  ScanResult result;
  result.root = root;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw std::runtime_error(root + ": not a directory");

  // A Trainer checkpoint folder opened on its own: that one checkpoint, in
  // the run of the folder holding it (as a sharded checkpoint's folder is).
  // So is a Megatron iter_<N>/ folder.
  if (const bool hf = isHfCheckpointFolder(root); hf || isMegatronCheckpointFolder(root)) {
    const fs::path folder = fs::absolute(root).lexically_normal().parent_path() /
                            fs::absolute(root).lexically_normal().filename();
    RunEntry run;
    run.path = folder.parent_path().string();
    run.name = runNameFor(root, run.path);
    run.root = root;
    run.checkpoints.push_back(describeItem({folder,
                                            std::make_shared<const fs::path>(folder.parent_path()),
                                            hf ? Item::Kind::HfFolder : Item::Kind::MegatronFolder,
                                            {}},
                                           folder.parent_path()));
    finishRun(run, Found{});
    result.runs.push_back(std::move(run));
    return result;
  }

  // Collect first so that progress knows the total.
  const unsigned threads =
      options.threads ? options.threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  // The cache of the last listing loads while the folders are walked (a
  // tenth of a folder opened again, before its first run could be shown).
  std::future<std::unique_ptr<ListingCache>> cacheLoad =
      std::async(std::launch::async, [&root] { return ListingCache::open(root); });
  Found found = walkTree(fs::path(root), threads);
  std::vector<Item> items = itemsOf(found);

  // Every run is known before any file is read (its name, folder and which
  // items are its checkpoints), so a run is finished and handed to
  // runDone as soon as its last file is read, while others are still read.
  const fs::path rootPath(root);
  std::map<std::string, RunEntry> runs;
  auto runAt = [&](const fs::path& dir) -> RunEntry& {
    const std::string runName = runNameFor(root, dir.string());
    RunEntry& run = runs[runName];
    run.name = runName;
    run.path = dir.string();
    run.root = root;
    return run;
  };
  // (Items come folder by folder: a run's name is worked out once a folder.)
  std::vector<RunEntry*> itemRun(items.size());
  for (size_t i = 0; i < items.size(); ++i)
    itemRun[i] = i > 0 && (items[i].runDir == items[i - 1].runDir ||
                           items[i].runDir->native() == items[i - 1].runDir->native())
                     ? itemRun[i - 1]
                     : &runAt(*items[i].runDir);
  // Runs that log but have not saved a checkpoint yet.
  std::set<const RunEntry*> listedForFiles;
  for (const auto& [dir, files] : found.metricFiles) listedForFiles.insert(&runAt(dir));
  // A folder of event files is a run of its own unless it is a run's
  // runs/<launch>/ or tb/<launch>/ folder (finishRun gives that run its files).
  std::set<fs::path> runDirs;
  for (const auto& [name, run] : runs) runDirs.insert(fs::path(run.path).lexically_normal());
  for (const auto& [dir, files] : found.eventFiles) {
    const std::optional<fs::path> owner = eventFolderOwner(dir);
    if (owner && runDirs.count(owner->lexically_normal())) continue;
    listedForFiles.insert(&runAt(dir));
    runDirs.insert(dir.lexically_normal());
  }

  // The runs in the order they are listed (before finishRun renames an
  // MLflow or W&B run), each with its items in path order.
  struct Pending {
    RunEntry* run;
    std::vector<size_t> items;
    std::atomic<size_t> left{0};
    bool finished = false;
  };
  std::vector<std::unique_ptr<Pending>> order;
  std::map<const RunEntry*, Pending*> pendingOf;
  for (auto& [name, run] : runs) {
    order.push_back(std::make_unique<Pending>());
    order.back()->run = &run;
    pendingOf[&run] = order.back().get();
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return naturalLess(a->run->name, b->run->name);
  });
  // Items in listing order: run by run (read in the order they are shown),
  // each run's in path order (finishRun's sort then finds most runs in
  // step order already). Items are put in their run's bucket and each
  // bucket sorted on its own: one sort of every item, most comparisons
  // deciding on the run, took a fifth of the time before the first run.
  std::vector<std::vector<size_t>> buckets(order.size());  // item indices, by run position
  {
    std::map<const RunEntry*, size_t> position;
    for (size_t k = 0; k < order.size(); ++k) position[order[k]->run] = k;
    size_t at = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i == 0 || itemRun[i] != itemRun[i - 1]) at = position.at(itemRun[i]);
      buckets[at].push_back(i);
    }
  }
  // Items stay where the walk put them; reading goes by listing position
  // (moving 50,000 items into that order took as long as sorting them).
  std::vector<size_t> itemAt;  // listing position -> index in items
  itemAt.reserve(items.size());
  for (size_t k = 0; k < order.size(); ++k) {
    std::vector<size_t>& bucket = buckets[k];
    const auto byPath = [&](size_t a, size_t b) {
      return naturalLess(items[a].path.native(), items[b].path.native());
    };
    // (The walk sorted each folder's files: most buckets are in order.)
    if (!std::is_sorted(bucket.begin(), bucket.end(), byPath))
      std::sort(bucket.begin(), bucket.end(), byPath);
    order[k]->items.reserve(bucket.size());
    for (size_t i : bucket) {
      order[k]->items.push_back(itemAt.size());
      itemAt.push_back(i);
    }
    std::vector<size_t>().swap(bucket);
  }
  std::vector<Pending*> itemPending(items.size());
  for (size_t k = 0; k < order.size(); ++k)
    for (size_t i : order[k]->items) itemPending[i] = order[k].get();
  for (auto& p : order) p->left = p->items.size();
  // Files unchanged since the last listing of this folder: from the cache.
  const std::unique_ptr<ListingCache> cache = cacheLoad.get();
  if (cache) cache->resize(items.size());

  // Files are read on several threads in listing order (each position's
  // entry in its own slot);
  // progress, runDone and finishRun stay on this one. (A slot is a pointer:
  // 50,000 empty entries made up front were a tenth of a listing's time
  // before its first file, all of it on this thread.)
  std::vector<std::unique_ptr<CheckpointEntry>> entries(items.size());
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr failure;
  std::mutex failureMutex;
  // A listing of a few files is read on this thread alone, one by one.
  const bool many = items.size() > 16;
  // Each thread takes the next items, a batch of them when it reads files
  // ahead (read_ahead.h: a few system calls for the batch's small files,
  // each then described from its bytes); false when none are left.
  struct Taken {
    size_t first = 0, last = 0;
  };
  auto take = [&](ReadAhead& ahead, Taken* t) {
    const size_t count = ahead.on() ? ReadAhead::kBatch : 1;
    t->first = next.fetch_add(count);
    if (t->first >= items.size()) return false;
    t->last = std::min(items.size(), t->first + count);
    if (ahead.on()) {
      // A file the cache has a record of is stat'ed (and read only when it
      // changed); any other is read.
      std::vector<const std::string*> read(t->last - t->first, nullptr), stat(read.size(), nullptr);
      for (size_t i = t->first; i < t->last; ++i) {
        const Item& item = items[itemAt[i]];
        if (item.kind != Item::Kind::File) continue;
        (cache && cache->knows(i, item.path.native()) ? stat : read)[i - t->first] =
            &item.path.native();
      }
      ahead.read(read, stat);
    }
    return true;
  };
  auto describe = [&](ReadAhead& ahead, const Taken& t, size_t i, ListingCache::Folder* folder) {
    const FileOffer offer(ahead.file(i - t.first));
    entries[i] = std::make_unique<CheckpointEntry>(
        describeItem(items[itemAt[i]], rootPath, cache.get(), i, folder, ahead.stamp(i - t.first)));
  };
  auto work = [&] {
    ListingCache::Folder folder;
    ReadAhead ahead(many);
    Taken t;
    while (!stop.load(std::memory_order_relaxed) && take(ahead, &t))
      for (size_t i = t.first; i < t.last && !stop.load(std::memory_order_relaxed); ++i) {
        try {
          describe(ahead, t, i, &folder);
        } catch (...) {
          const std::lock_guard lock(failureMutex);
          if (!failure) failure = std::current_exception();
          stop = true;
        }
        itemPending[i]->left.fetch_sub(1, std::memory_order_acq_rel);
        done.fetch_add(1, std::memory_order_release);
      }
  };
  auto finish = [&](Pending& p) {
    p.run->checkpoints.reserve(p.run->checkpoints.size() + p.items.size());
    for (size_t i : p.items)
      if (entries[i]) {
        p.run->checkpoints.push_back(std::move(*entries[i]));
        entries[i].reset();
      }
    finishRun(*p.run, found);
    p.finished = true;
  };
  // Runs whose files are all read, in listing order, up to the first that is not.
  size_t emitted = 0;
  auto emitReady = [&] {
    while (emitted < order.size() && order[emitted]->left.load(std::memory_order_acquire) == 0) {
      Pending& p = *order[emitted++];
      finish(p);
      if (options.runDone) options.runDone(*p.run);
    }
  };
  std::vector<std::thread> helpers;
  if (many)
    for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work);
  emitReady();  // runs without checkpoints at the front
  {
    ListingCache::Folder folder;
    ReadAhead ahead(many);
    Taken t;
    while (!stop && take(ahead, &t))
      for (size_t i = t.first; i < t.last && !stop; ++i) {
        try {
          describe(ahead, t, i, &folder);
        } catch (...) {
          stop = true;
          for (std::thread& h : helpers) h.join();
          throw;
        }
        itemPending[i]->left.fetch_sub(1, std::memory_order_acq_rel);
        const size_t n = done.fetch_add(1, std::memory_order_acq_rel) + 1;
        if (options.progress && !options.progress(n, items.size())) stop = true;
        emitReady();
      }
  }
  for (std::thread& h : helpers) h.join();
  if (failure) std::rethrow_exception(failure);
  // The runs whose last files the helpers read after this thread's last.
  if (!stop) emitReady();
  if (cache && !stop) cache->save();
  if (options.progress && !stop && done > 0) options.progress(done, items.size());

  for (auto& [name, run] : runs) {
    Pending& p = *pendingOf[&run];
    // Stopped early: a run none of whose files were read is left out,
    // unless its metrics or event files list it.
    if (!p.finished && !p.items.empty() && p.left == p.items.size() && !listedForFiles.count(&run))
      continue;
    if (!p.finished) finish(p);
    result.runs.push_back(std::move(run));
  }
  std::stable_sort(
      result.runs.begin(), result.runs.end(),
      [](const RunEntry& a, const RunEntry& b) { return naturalLess(a.name, b.name); });
  return result;
}

}  // namespace ckpt
