// The walk's part of a listing (scanner.h): what a folder holds before any
// file is read (Found), the items to read (itemsOf) and one item described
// (describeItem). The parallel reading and the runs: scanner.cpp.
#include "scan_walk.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "ascii.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
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

namespace ckpt::detail {

namespace fs = std::filesystem;

namespace {

std::string_view filenameOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool endsWithLower(std::string_view name, std::string_view ext) {
  if (name.size() < ext.size()) return false;
  for (size_t i = 0; i < ext.size(); ++i) {
    const char c = name[name.size() - ext.size() + i];
    if ((c >= 'A' && c <= 'Z' ? char(c + ('a' - 'A')) : c) != ext[i]) return false;
  }
  return true;
}

// Whether a file of this name may be listed (isListedFile), and whether
// its first bytes must say so.
enum class NameVerdict { No, Yes, Sniff };
NameVerdict listedName(std::string_view name) {
  if (isTempFileName(name) || !isCandidateName(name)) return NameVerdict::No;
  // A .tar here is a .pth.tar (isCandidateName): torch.save's zip under the
  // ImageNet example's name, not a tar archive.
  for (const std::string_view ext : {".bin", ".ckpt", ".tar"})
    if (endsWithLower(name, ext)) return NameVerdict::Sniff;
  return NameVerdict::Yes;
}

bool sniffsListed(const std::string& path) {
  try {
    InputFile in(path);
    const Sniff s = sniffFile(in);
    return s == Sniff::Zip || s == Sniff::TorchLegacy || s == Sniff::Safetensors;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

// .bin, .ckpt and .pth.tar files count only when their first bytes say torch or safetensors.
// A writer's temporary file (.<name>.tmp-<pid>-<hex>) is never listed.
bool isListedFile(const fs::path& path) {
  switch (listedName(filenameOf(path.native()))) {
    case NameVerdict::No:
      return false;
    case NameVerdict::Yes:
      return true;
    case NameVerdict::Sniff:
      break;
  }
  return sniffsListed(path.native());
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

namespace {

void dropParts(std::vector<fs::path>& files, const std::set<fs::path>& parts) {
  if (parts.empty()) return;
  files.erase(
      std::remove_if(files.begin(), files.end(),
                     [&](const fs::path& f) { return parts.count(f.lexically_normal()) > 0; }),
      files.end());
}

}  // namespace

bool Found::addFolder(const fs::path& dir) {
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
  return true;  // its sharded checkpoint, if any: when it is listed (walkTree)
}

void Found::addFile(const fs::path& file) {
  addFileNamed(file.parent_path(), filenameOf(file.native()), &file.native());
}

void Found::addFileNamed(const fs::path& dir, std::string_view name, const std::string* given) {
  const NameVerdict listed = listedName(name);
  const bool metrics = isMetricsFileName(name), events = !metrics && isTfEventsFileName(name);
  if (listed == NameVerdict::No && !metrics && !events) return;
  std::string path;
  if (given) {
    path = *given;
  } else {
    // As `dir / name` makes it (a folder given as "runs/" gives "runs/a.pt").
    path.reserve(dir.native().size() + 1 + name.size());
    path.append(dir.native());
    if (!path.empty() && path.back() != '/') path += '/';
    path.append(name);
  }
  if (metrics) metricFiles[dir].push_back(path);
  if (events) eventFiles[dir].push_back(path);
  if (listed == NameVerdict::Yes || (listed == NameVerdict::Sniff && sniffsListed(path)))
    files.emplace_back(std::move(path));
}

void Found::merge(Found&& other) {
  auto append = [](auto& to, auto& from) {
    if (to.empty()) {
      to = std::move(from);
      return;
    }
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  append(files, other.files);
  append(hfFolders, other.hfFolders);
  append(megatronFolders, other.megatronFolders);
  append(accelerateFolders, other.accelerateFolders);
  parts.merge(other.parts);
  mlflowRuns.merge(other.mlflowRuns);
  for (auto& [dir, list] : other.metricFiles) append(metricFiles[dir], list);
  for (auto& [dir, list] : other.eventFiles) append(eventFiles[dir], list);
}

namespace {

// A folder to list: whether it is an MLflow run is known to the thread
// that listed its parent (its metrics/, params/ and tags/ are not walked).
struct Folder {
  fs::path path;
  bool mlflowRun = false;
};

// The folders a walk has still to list, shared by its threads. A thread
// takes the newest (depth first: a run's folders one after another) and
// the walk ends when none is left and no thread is listing one.
class FolderQueue {
 public:
  explicit FolderQueue(Folder first) { m_folders.push_back(std::move(first)); }

  std::optional<Folder> take() {
    std::unique_lock lock(m_mutex);
    m_ready.wait(lock, [&] { return !m_folders.empty() || m_listing == 0 || m_failed; });
    if (m_folders.empty() || m_failed) return std::nullopt;
    Folder f = std::move(m_folders.back());
    m_folders.pop_back();
    ++m_listing;
    return f;
  }
  // The folders found in one listing; the listing is done.
  void done(std::vector<Folder>& found) {
    {
      const std::lock_guard lock(m_mutex);
      for (auto it = found.rbegin(); it != found.rend(); ++it) m_folders.push_back(std::move(*it));
      --m_listing;
    }
    found.clear();
    m_ready.notify_all();
  }
  void fail(std::exception_ptr e) {
    {
      const std::lock_guard lock(m_mutex);
      if (!m_failure) m_failure = e;
      m_failed = true;
      --m_listing;
    }
    m_ready.notify_all();
  }
  std::exception_ptr failure() const { return m_failure; }

 private:
  std::mutex m_mutex;
  std::condition_variable m_ready;
  std::vector<Folder> m_folders;
  size_t m_listing = 0;
  bool m_failed = false;
  std::exception_ptr m_failure;
};

// Whether a name in a folder may be part of a sharded checkpoint the
// folder holds (probeSharded): DCP's .metadata, a Hugging Face index,
// DeepSpeed's `latest`, and every rank file or folder (FSDP's
// model_rank0.pt, DeepSpeed's mp_rank_00_model_states.pt, Megatron's
// mp_rank_00/) has "rank" in its name. A folder with none of these holds
// none: it is not probed (ten system calls and a second listing each).
bool mayBeShardName(std::string_view name) {
  if (name == ".metadata" || name == "latest" || name.ends_with(".index.json")) return true;
  for (size_t i = 0; i + 4 <= name.size(); ++i)
    if ((name[i] | 0x20) == 'r' && (name[i + 1] | 0x20) == 'a' && (name[i + 2] | 0x20) == 'n' &&
        (name[i + 3] | 0x20) == 'k')
      return true;
  return false;
}

// One folder's entries: its files into `found`, its folders (those to
// walk) into `below`, the sharded checkpoint it holds into `found`.
void listFolder(const Folder& folder, Found& found, std::vector<Folder>& below) {
  if (folder.mlflowRun) found.mlflowRuns.insert(folder.path);
  const size_t firstFile = found.files.size();
  // Listed by readdir: a file's name is looked at before any path is made
  // for it (a directory_iterator made a path of every entry, and its checks
  // a path of every name: half of the walk).
  const auto failed = [&](int err) {
    return std::runtime_error(folder.path.string() + ": " + std::generic_category().message(err));
  };
  DIR* dir = ::opendir(folder.path.c_str());
  if (!dir) {
    const int err = errno;
    // Not ours to read (skipped, as before), or removed while the walk went on.
    if (err == EACCES || err == ENOENT || err == ENOTDIR) return;
    throw failed(err);
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> closeDir(dir, ::closedir);
  bool maybeSharded = false;
  for (;;) {
    errno = 0;
    const dirent* d = ::readdir(dir);
    if (!d) {
      if (errno != 0 && errno != ENOENT) throw failed(errno);
      break;
    }
    const std::string_view name(d->d_name);
    if (name == "." || name == "..") continue;
    maybeSharded = maybeSharded || mayBeShardName(name);
    // What it is, links followed (as a directory_entry says it); a link
    // that leads nowhere is nothing.
    unsigned char type = d->d_type;
    bool link = type == DT_LNK;
    struct stat st {};
    if (type == DT_UNKNOWN) {
      if (::fstatat(::dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      link = S_ISLNK(st.st_mode);
      type = link                  ? DT_LNK
             : S_ISDIR(st.st_mode) ? DT_DIR
             : S_ISREG(st.st_mode) ? DT_REG
                                   : DT_UNKNOWN;
    }
    if (type == DT_LNK) {
      if (::fstatat(::dirfd(dir), d->d_name, &st, 0) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    if (type == DT_DIR) {
      // .git, .cache, ...; a Trainer checkpoint's files are read as one; a
      // link to a folder is looked at, not walked (it may lead anywhere).
      if (name.starts_with('.')) continue;
      fs::path sub = folder.path / name;
      if (!found.addFolder(sub)) continue;
      if (link) {
        collectSharded(sub, found.files, found.parts);
      } else {
        const bool mlflowRun = found.mlflowRuns.count(sub) > 0;
        below.push_back({std::move(sub), mlflowRun});
      }
      continue;
    }
    if (type == DT_REG) found.addFileNamed(folder.path, name);
  }
  // In the order they are listed (on the walk's threads: the listing sorts
  // each run's items and finds them sorted).
  std::sort(
      found.files.begin() + std::ptrdiff_t(firstFile), found.files.end(),
      [](const fs::path& a, const fs::path& b) { return naturalLess(a.native(), b.native()); });
  if (maybeSharded) collectSharded(folder.path, found.files, found.parts);
}

}  // namespace

Found walkTree(const fs::path& root, unsigned threads) {
  Found found;
  found.root = root;
  if (!found.addFolder(root)) return found;
  FolderQueue queue({root, found.mlflowRuns.count(root) > 0});
  std::vector<Found> walked(std::max(threads, 1u));
  for (Found& w : walked) w.root = root;
  auto walk = [&](Found& mine) {
    std::vector<Folder> below;
    while (std::optional<Folder> folder = queue.take()) {
      try {
        listFolder(*folder, mine, below);
      } catch (...) {
        queue.fail(std::current_exception());
        return;
      }
      queue.done(below);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < walked.size(); ++t) helpers.emplace_back(walk, std::ref(walked[t]));
  walk(walked[0]);
  for (std::thread& h : helpers) h.join();
  if (queue.failure()) std::rethrow_exception(queue.failure());
  for (Found& w : walked) found.merge(std::move(w));
  return found;
}

bool isMetricsFileName(std::string_view name) {
  return name == "metrics.jsonl" || name == "trainer_state.json" || name == "metrics.csv";
}

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

namespace {

// Whether a folder on `path` (its parts between slashes) has a name `named` takes.
template <typename Named>
bool anyFolderNamed(std::string_view path, Named named) {
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start && named(path.substr(start, end - start))) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

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
  // (An item shares its run's folder with the other items of the folder:
  // a copy of the path each was a third of this.)
  struct Owners {
    std::shared_ptr<const fs::path> lightning, mlflow, wandb;
  };
  auto shared = [](const std::optional<std::string>& run) {
    return run ? std::make_shared<const fs::path>(*run) : nullptr;
  };
  std::map<fs::path, Owners> owners;
  // The walk found a folder's files one after another: its path and owners
  // are worked out when the folder changes (a lookup per file was a tenth
  // of the work done before the first file is read).
  fs::path dir;
  std::shared_ptr<const fs::path> sharedDir;
  Owners* owner = nullptr;
  items.reserve(found.files.size() + found.hfFolders.size() + found.megatronFolders.size() +
                found.accelerateFolders.size());
  for (fs::path& f : found.files) {
    const std::string_view native = f.native();
    const size_t slash = native.rfind('/');
    if (!owner || slash == std::string_view::npos || slash != dir.native().size() ||
        native.substr(0, slash) != dir.native()) {
      dir = f.parent_path();
      sharedDir = std::make_shared<const fs::path>(dir);
      auto [at, added] = owners.try_emplace(dir);
      owner = &at->second;
      // (Each asks only when a folder on the path has the name its layout
      // needs: the folders of 1,000 plain runs cost a path walk of 16
      // parents each, a fifth of making the items.)
      if (added)
        *owner = {shared(lightningRunOf(f.string())),
                  anyFolderNamed(native.substr(0, slash),
                                 [](std::string_view n) { return n == "artifacts"; })
                      ? shared(mlflowRunOf(f.string()))
                      : nullptr,
                  anyFolderNamed(native.substr(0, slash), isWandbRunFolderName)
                      ? shared(wandbRunOf(f.string()))
                      : nullptr};
    }
    const std::string_view role =
        hfPartRole(slash == std::string_view::npos ? native : native.substr(slash + 1));
    if (!role.empty() && isHfOutput(dir)) {
      if (finals.insert(dir).second) items.push_back({dir, sharedDir, Item::Kind::HfFinal, {}});
      continue;
    }
    if (owner->lightning) {
      items.push_back({std::move(f), owner->lightning, Item::Kind::File, kLightningId});
      continue;
    }
    // (torchtitan's step-<N> folders: the name first, a path walk each.)
    if (const std::optional<std::string> run =
            native.substr(slash == std::string_view::npos ? 0 : slash + 1).starts_with("step-")
                ? torchtitanRunOf(f.string())
                : std::nullopt) {
      items.push_back(
          {std::move(f), std::make_shared<const fs::path>(*run), Item::Kind::File, kTorchtitanId});
      continue;
    }
    // A checkpoint logged as an MLflow artifact: in its run's artifacts/.
    if (owner->mlflow) {
      items.push_back({std::move(f), owner->mlflow, Item::Kind::File, kMlflowId});
      continue;
    }
    // A checkpoint the script saved with wandb.save: in its run's files/.
    if (owner->wandb) {
      items.push_back({std::move(f), owner->wandb, Item::Kind::File, kWandbId});
      continue;
    }
    items.push_back({std::move(f), sharedDir, Item::Kind::File, {}});
  }
  auto parentOf = [](const fs::path& f) {
    return std::make_shared<const fs::path>(f.parent_path());
  };
  for (const fs::path& f : found.hfFolders)
    items.push_back({f, parentOf(f), Item::Kind::HfFolder, {}});
  for (const fs::path& f : found.megatronFolders)
    items.push_back({f, parentOf(f), Item::Kind::MegatronFolder, {}});
  for (const fs::path& f : found.accelerateFolders)
    items.push_back({f, std::make_shared<const fs::path>(accelerateRunOf(f.string())),
                     Item::Kind::AccelerateFolder, kAccelerateId});
  return items;
}

namespace {

// Whether a relative path has a ".", ".." or empty part (a doubled or
// trailing slash): lexically_relative would make something else of it.
bool hasDotOrEmptyPart(std::string_view rest) {
  return anyFolderNamed(rest, [](std::string_view n) { return n == "." || n == ".."; }) ||
         rest.empty() || rest.front() == '/' || rest.back() == '/' ||
         rest.find("//") != std::string_view::npos;
}

}  // namespace

CheckpointEntry describeItem(const Item& item, const fs::path& rootPath, ListingCache* cache,
                             size_t slot, ListingCache::Folder* folder, const FileStamp* stamped) {
  auto relative = [&](const fs::path& p) {
    // Below the root as the walk joined it (the root, a slash, names):
    // the rest of the path, as lexically_relative gives it.
    const std::string& root = rootPath.native();
    const std::string& path = p.native();
    if (!root.empty() && root.back() != '/' && path.size() > root.size() + 1 &&
        path[root.size()] == '/' && path.compare(0, root.size(), root) == 0) {
      const std::string_view rest = std::string_view(path).substr(root.size() + 1);
      if (!hasDotOrEmptyPart(rest)) return std::string(rest);
    }
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
  const std::string path = item.path.string(), file = relative(item.path);
  auto read = [&](std::optional<FileStamp>* stamp) {
    return describeCheckpoint(path, file, stamp);
  };
  CheckpointEntry e = cache ? cache->entry(slot, path, file, read, folder, stamped) : read(nullptr);
  if (!item.trainer.empty()) e.trainer = std::string(item.trainer);
  return e;
}

}  // namespace ckpt::detail
