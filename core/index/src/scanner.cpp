#include "ckpt/index/scanner.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <filesystem>
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
#include "ckpt/index/megatron.h"
#include "ckpt/index/mlflow.h"
#include "ckpt/index/natural_order.h"
#include "ckpt/index/run_plan.h"
#include "ckpt/index/tfevents.h"
#include "ckpt/index/torchtitan.h"
#include "ckpt/index/trainers.h"
#include "ckpt/index/wandb.h"

namespace fs = std::filesystem;

namespace ckpt {

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

namespace {

// .bin, .ckpt and .pth.tar files count only when their first bytes say torch or safetensors.
// A writer's temporary file (.<name>.tmp-<pid>-<hex>) is never listed.
bool isListedFile(const fs::path& path) {
  if (isTempFileName(path.filename().string()) || !isCandidateName(path.filename().string()))
    return false;
  // A .tar here is a .pth.tar (isCandidateName): torch.save's zip under the
  // ImageNet example's name, not a tar archive.
  const std::string ext = detail::asciiLower(path.extension().string());
  if (ext != ".bin" && ext != ".ckpt" && ext != ".tar") return true;
  try {
    InputFile in(path.string());
    const Sniff s = sniffFile(in);
    return s == Sniff::Zip || s == Sniff::TorchLegacy || s == Sniff::Safetensors;
  } catch (const std::exception&) {
    return false;
  }
}

// A sharded checkpoint in `dir` is listed once: a Hugging Face index (its
// folder may hold other checkpoints too), or the folder itself (a DCP
// folder is one checkpoint, named like one: step_1000/). The files it is made
// of are not listed on their own.
void collectSharded(const fs::path& dir, std::vector<fs::path>& listed, std::set<fs::path>& parts) {
  const std::optional<ShardProbe> probe = probeSharded(dir.string());
  if (!probe) return;
  // A DeepSpeed folder whose `latest` names a tag folder: the tag folders
  // below are listed themselves (each its step), not this one again.
  if (probe->layout == ShardLayout::DeepSpeed && fs::path(probe->folder) != dir) return;
  listed.push_back(probe->layout == ShardLayout::HuggingFace ? fs::path(probe->entry) : dir);
  try {
    const auto shards = ShardSet::open(*probe, /*metadataOnly=*/true);
    for (const ShardPart& p : shards->parts()) parts.insert(fs::path(p.path).lexically_normal());
  } catch (const std::exception&) {
    // A description that cannot be read is still listed, with its error.
  }
}

void dropParts(std::vector<fs::path>& files, const std::set<fs::path>& parts) {
  if (parts.empty()) return;
  files.erase(
      std::remove_if(files.begin(), files.end(),
                     [&](const fs::path& f) { return parts.count(f.lexically_normal()) > 0; }),
      files.end());
}

}  // namespace

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
  std::stable_sort(checkpoints.begin(), checkpoints.end(),
                   [](const CheckpointEntry& a, const CheckpointEntry& b) {
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
                   });
}

namespace {

bool isMetricsFileName(const std::string& name) {
  return name == "metrics.jsonl" || name == "trainer_state.json" || name == "metrics.csv";
}

// What a walk finds, before any file is read.
struct Found {
  std::vector<fs::path> files;              // checkpoint files, listed one by one
  std::set<fs::path> parts;                 // files a sharded checkpoint is made of (not listed)
  std::vector<fs::path> hfFolders;          // Hugging Face Trainer checkpoint-<step>/ folders
  std::vector<fs::path> megatronFolders;    // Megatron-LM iter_<N>/ and release/ folders
  std::vector<fs::path> accelerateFolders;  // Accelerate save_state folders (accelerate.h)
  std::map<fs::path, std::vector<std::string>> metricFiles;  // by directory
  std::map<fs::path, std::vector<std::string>> eventFiles;   // TensorBoard's, by directory
  std::set<fs::path> mlflowRuns;                             // MLflow run folders
  fs::path root;                                             // the folder the walk began at

  // One entry of a directory: a folder that is a Trainer checkpoint is one
  // item (its files are not walked: returns false); another folder may
  // hold a sharded checkpoint.
  bool addFolder(const fs::path& dir) {
    // An MLflow run: a run without checkpoints (mlflow.h); its metrics/,
    // params/ and tags/ hold no checkpoint (a key may be any name).
    if (mlflowRuns.count(dir.parent_path())) {
      const fs::path name = dir.filename();
      if (name == "metrics" || name == "params" || name == "tags") return false;
    }
    if (isMlflowRunFolder(dir.string())) {
      mlflowRuns.insert(dir);
      metricFiles[dir].push_back((dir / "metrics").string());
    }
    // A W&B run: a run without checkpoints of its own (wandb.h). Its
    // wandb/latest-run link is the same run, listed under its own name; a
    // resumed run's folders are one run, at its newest folder (finishRun
    // gives it the files of all of them).
    if (isWandbRunFolder(dir.string())) {
      if (dir != root && isWandbLatestLink(dir.string())) return false;
      metricFiles.try_emplace(fs::path(wandbRunFolders(dir.string()).back()));
    }
    if (isHfCheckpointFolder(dir.string())) {
      hfFolders.push_back(dir);
      return false;
    }
    if (isMegatronCheckpointFolder(dir.string())) {
      megatronFolders.push_back(dir);
      return false;
    }
    if (isAccelerateStateFolder(dir.string())) {
      accelerateFolders.push_back(dir);
      return false;
    }
    collectSharded(dir, files, parts);
    return true;
  }
  void addFile(const fs::path& file) {
    if (isListedFile(file)) files.push_back(file);
    if (isMetricsFileName(file.filename().string()))
      metricFiles[file.parent_path()].push_back(file.string());
    else if (isTfEventsFileName(file.filename().string()))
      eventFiles[file.parent_path()].push_back(file.string());
  }
};

// A checkpoints/ folder of Accelerate's automatic naming: its
// checkpoint_<i>/ folders are checkpoints of the project folder above it.
bool hasAutomaticAccelerateFolders(const fs::path& dir) {
  const fs::path d = fs::path(dir).lexically_normal();
  if ((d.filename().empty() ? d.parent_path() : d).filename() != "checkpoints") return false;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->path().filename().string().starts_with("checkpoint_") && it->is_directory(fec) &&
        isAccelerateStateFolder(it->path().string()))
      return true;
  }
  return false;
}

// Whether `dir` is a run by what it holds itself (one listing, nothing
// read): a checkpoint file, a metrics or event file, a checkpoint folder.
// What scanRunDirectory (the watcher, one folder at a time) asks of a
// runs/<launch>/ folder's grandparent; scanDirectory knows its runs.
bool looksLikeRun(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code fec;
    if (it->is_regular_file(fec)) {
      if (isCandidateName(name) || isMetricsFileName(name) || isTfEventsFileName(name)) return true;
    } else if (it->is_directory(fec) && (name == "checkpoints" || name == "checkpoint" ||
                                         isHfCheckpointFolder(it->path().string()))) {
      return true;
    }
  }
  return false;
}

// torchtitan's <dump>/checkpoint/step-<N>/ folders of a dump folder.
std::vector<fs::path> torchtitanCheckpoints(const std::string& dump) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path folder = fs::path(dump) / "checkpoint";
  for (fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec))
    if (torchtitanRunOf(it->path().string())) out.push_back(it->path());
  return out;
}

bool hasTorchtitanCheckpoint(const std::string& checkpointFolder) {
  std::error_code ec;
  for (fs::directory_iterator
           it(checkpointFolder, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec))
    if (torchtitanRunOf(it->path().string())) return true;
  return false;
}

// A folder of event files whose parent is one of kRunEventFolders (runs/,
// tb/): the run it belongs to is the grandparent, when that is a run.
std::optional<fs::path> eventFolderOwner(const fs::path& dir) {
  if (!dir.has_parent_path() || !dir.parent_path().has_parent_path()) return std::nullopt;
  const std::string parent = dir.parent_path().filename().string();
  if (std::find(kRunEventFolders.begin(), kRunEventFolders.end(), parent) == kRunEventFolders.end())
    return std::nullopt;
  return dir.parent_path().parent_path();
}

// One thing to read: a file, or a Trainer folder's checkpoint.
struct Item {
  fs::path path;
  fs::path runDir;
  enum class Kind { File, HfFolder, HfFinal, MegatronFolder, AccelerateFolder } kind = Kind::File;
  // The trainer whose layout put it in runDir rather than its own folder:
  // a Lightning run's checkpoints/ file, torchtitan's checkpoint/step-<N>/.
  std::string_view trainer;
};

// The files a Trainer wrote into its output folder itself (the final
// model, training_args.bin) are one final checkpoint, not one each.
std::vector<Item> itemsOf(Found& found) {
  dropParts(found.files, found.parts);
  std::map<fs::path, bool> hfOutput;  // folder -> is a Trainer's output_dir
  for (const fs::path& f : found.hfFolders) hfOutput[f.parent_path()] = true;
  auto isHfOutput = [&](const fs::path& dir) {
    auto [it, added] = hfOutput.try_emplace(dir, false);
    if (added) it->second = isHfOutputFolder(dir.string());
    return it->second;
  };
  std::vector<Item> items;
  std::set<fs::path> finals;
  // The run a Lightning, MLflow or W&B layout puts a file in depends on its
  // folder alone: asked once per folder (a path walk each; 10% of listing
  // 50,000 small checkpoints when asked per file).
  struct Owners {
    std::optional<std::string> lightning, mlflow, wandb;
  };
  std::map<fs::path, Owners> owners;
  // The walk found a folder's files one after another: its path and owners
  // are worked out when the folder changes (a lookup per file was a tenth
  // of the work done before the first file is read).
  fs::path dir;
  Owners* owner = nullptr;
  items.reserve(found.files.size() + found.hfFolders.size() + found.megatronFolders.size() +
                found.accelerateFolders.size());
  for (fs::path& f : found.files) {
    const std::string_view native = f.native();
    const size_t slash = native.rfind('/');
    if (!owner || slash == std::string_view::npos || slash != dir.native().size() ||
        native.substr(0, slash) != dir.native()) {
      dir = f.parent_path();
      auto [at, added] = owners.try_emplace(dir);
      owner = &at->second;
      if (added)
        *owner = {lightningRunOf(f.string()), mlflowRunOf(f.string()), wandbRunOf(f.string())};
    }
    const std::string_view role =
        hfPartRole(slash == std::string_view::npos ? native : native.substr(slash + 1));
    if (!role.empty() && isHfOutput(dir)) {
      if (finals.insert(dir).second) items.push_back({dir, dir, Item::Kind::HfFinal, {}});
      continue;
    }
    if (const std::optional<std::string>& run = owner->lightning) {
      items.push_back({std::move(f), fs::path(*run), Item::Kind::File, kLightningId});
      continue;
    }
    // (torchtitan's step-<N> folders: the name first, a path walk each.)
    if (const std::optional<std::string> run =
            native.substr(slash == std::string_view::npos ? 0 : slash + 1).starts_with("step-")
                ? torchtitanRunOf(f.string())
                : std::nullopt) {
      items.push_back({std::move(f), fs::path(*run), Item::Kind::File, kTorchtitanId});
      continue;
    }
    // A checkpoint logged as an MLflow artifact: in its run's artifacts/.
    if (const std::optional<std::string>& run = owner->mlflow) {
      items.push_back({std::move(f), fs::path(*run), Item::Kind::File, kMlflowId});
      continue;
    }
    // A checkpoint the script saved with wandb.save: in its run's files/.
    if (const std::optional<std::string>& run = owner->wandb) {
      items.push_back({std::move(f), fs::path(*run), Item::Kind::File, kWandbId});
      continue;
    }
    items.push_back({std::move(f), dir, Item::Kind::File, {}});
  }
  for (const fs::path& f : found.hfFolders)
    items.push_back({f, f.parent_path(), Item::Kind::HfFolder, {}});
  for (const fs::path& f : found.megatronFolders)
    items.push_back({f, f.parent_path(), Item::Kind::MegatronFolder, {}});
  for (const fs::path& f : found.accelerateFolders)
    items.push_back(
        {f, fs::path(accelerateRunOf(f.string())), Item::Kind::AccelerateFolder, kAccelerateId});
  return items;
}

CheckpointEntry describeItem(const Item& item, const fs::path& rootPath) {
  auto relative = [&](const fs::path& p) {
    std::string rel = p.lexically_relative(rootPath).string();
    // The root itself, a checkpoint's folder opened on its own: its folder
    // name, as when its parent is opened (it was listed as ".").
    if (rel.empty() || rel == ".") rel = fs::absolute(p).lexically_normal().filename().string();
    return rel;
  };
  switch (item.kind) {
    case Item::Kind::HfFolder:
      return describeHfCheckpoint(item.path.string(), relative(item.path), /*finalModel=*/false);
    case Item::Kind::HfFinal: {
      CheckpointEntry e =
          describeHfCheckpoint(item.path.string(), relative(item.path), /*finalModel=*/true);
      // Named by its weights' file: the folder is the run's own.
      if (e.error.empty()) e.file = relative(fs::path(e.path));
      return e;
    }
    case Item::Kind::MegatronFolder:
      return describeMegatronCheckpoint(item.path.string(), relative(item.path));
    case Item::Kind::AccelerateFolder:
      return describeAccelerateCheckpoint(item.path.string(), relative(item.path));
    case Item::Kind::File:
      break;
  }
  CheckpointEntry e = describeCheckpoint(item.path.string(), relative(item.path));
  if (!item.trainer.empty()) e.trainer = std::string(item.trainer);
  return e;
}

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
    run.checkpoints.push_back(describeItem(
        {folder, folder.parent_path(), hf ? Item::Kind::HfFolder : Item::Kind::MegatronFolder, {}},
        folder.parent_path()));
    finishRun(run, Found{});
    result.runs.push_back(std::move(run));
    return result;
  }

  // Collect first so that progress knows the total.
  Found found;
  found.root = fs::path(root);
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw std::runtime_error(root + ": " + ec.message());
  if (found.addFolder(root)) {
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const auto& entry = *it;
      if (entry.is_directory(ec)) {
        // .git, .cache, ...; a Trainer checkpoint's files are read as one.
        if (entry.path().filename().string().rfind('.', 0) == 0 || !found.addFolder(entry.path()))
          it.disable_recursion_pending();
        continue;
      }
      if (entry.is_regular_file(ec)) found.addFile(entry.path());
    }
  }
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
    itemRun[i] = i > 0 && items[i].runDir.native() == items[i - 1].runDir.native()
                     ? itemRun[i - 1]
                     : &runAt(items[i].runDir);
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
  // each run's in path order, as finishRun's stable sort saw them when all
  // items were sorted by path (most comparisons now stop at the run).
  std::map<const Pending*, size_t> position;
  for (size_t k = 0; k < order.size(); ++k) position[order[k].get()] = k;
  std::vector<std::pair<size_t, size_t>> byRun(items.size());  // (run's position, item)
  for (size_t i = 0; i < items.size(); ++i)
    byRun[i] = {i > 0 && itemRun[i] == itemRun[i - 1] ? byRun[i - 1].first
                                                      : position[pendingOf[itemRun[i]]],
                i};
  std::sort(byRun.begin(), byRun.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return naturalLess(items[a.second].path.native(), items[b.second].path.native());
  });
  {
    std::vector<Item> sorted;
    std::vector<RunEntry*> sortedRun;
    sorted.reserve(items.size());
    sortedRun.reserve(items.size());
    for (const auto& [run, i] : byRun) {
      sorted.push_back(std::move(items[i]));
      sortedRun.push_back(itemRun[i]);
    }
    items = std::move(sorted);
    itemRun = std::move(sortedRun);
  }
  std::vector<Pending*> itemPending(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    itemPending[i] = pendingOf[itemRun[i]];
    itemPending[i]->items.push_back(i);
  }
  for (auto& p : order) p->left = p->items.size();

  // Files are read on several threads (each item's entry in its own slot);
  // progress, runDone and finishRun stay on this one.
  std::vector<std::optional<CheckpointEntry>> entries(items.size());
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto work = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const size_t i = next++;
      if (i >= items.size()) break;
      try {
        entries[i] = describeItem(items[i], rootPath);
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
      if (entries[i]) p.run->checkpoints.push_back(std::move(*entries[i]));
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
  const unsigned threads =
      options.threads ? options.threads : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  std::vector<std::thread> helpers;
  if (items.size() > 16)
    for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work);
  emitReady();  // runs without checkpoints at the front
  while (!stop) {
    const size_t i = next++;
    if (i >= items.size()) break;
    try {
      entries[i] = describeItem(items[i], rootPath);
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
  for (std::thread& h : helpers) h.join();
  if (failure) std::rethrow_exception(failure);
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
