#include "ckpt/index/scanner.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include <sys/stat.h>

#include "ascii.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/sharded.h"
#include "ckpt/index/run_plan.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

bool boundaryBefore(const std::string& s, size_t pos) {
  return pos == 0 || !std::isalpha(static_cast<unsigned char>(s[pos - 1]));
}

// Digits after `word` (optionally after one '_' or '-') at a word boundary.
std::optional<int64_t> numberAfter(const std::string& s, std::string_view word,
                                   bool separatorRequired) {
  for (size_t pos = s.find(word); pos != std::string::npos; pos = s.find(word, pos + 1)) {
    if (!boundaryBefore(s, pos)) continue;
    size_t i = pos + word.size();
    const bool sep = i < s.size() && (s[i] == '_' || s[i] == '-');
    if (sep)
      ++i;
    else if (separatorRequired)
      continue;
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) && j - i < 18) ++j;
    if (j > i) return std::stoll(s.substr(i, j - i));
  }
  return std::nullopt;
}

std::string stripError(const std::string& message, const std::string& path) {
  if (message.rfind(path + ": ", 0) == 0) return message.substr(path.size() + 2);
  return message;
}

}  // namespace

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

NameInfo parseCheckpointName(std::string_view fileName) {
  std::string stem = detail::asciiLower(fileName);
  if (const size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  NameInfo info;
  info.step = numberAfter(stem, "step", false);
  if (!info.step) info.step = numberAfter(stem, "checkpoint", true);
  if (!info.step) info.step = numberAfter(stem, "ckpt", true);
  if (!info.step) info.step = numberAfter(stem, "iter", true);
  if (stem.find("final") != std::string::npos)
    info.kind = CheckpointKind::Final;
  else if (stem.rfind("best", 0) == 0)
    info.kind = CheckpointKind::Best;
  else if (stem.rfind("latest", 0) == 0 || stem.rfind("last", 0) == 0)
    info.kind = CheckpointKind::Latest;
  else if (info.step)
    info.kind = CheckpointKind::Step;
  return info;
}

bool isCandidateName(std::string_view fileName) {
  const std::string ext = detail::asciiLower(fs::path(fileName).extension().string());
  return ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt" ||
         ext == ".safetensors" || ext == ".pkl" || ext == ".pickle";
}

namespace {

// Bytes of the storages the tensors under `v` view, each storage once.
uint64_t storageBytes(const CheckpointFile& file, const Value* v) {
  std::vector<uint8_t> seen(file.storages().size());
  uint64_t sum = 0;
  walkTensors(v, [&](const Value* t, const TensorPath&) {
    const TensorInfo& info = file.tensors()[size_t(t->index)];
    if (info.storage < 0 || size_t(info.storage) >= seen.size() || seen[size_t(info.storage)])
      return;
    seen[size_t(info.storage)] = 1;
    const uint64_t n = file.storages()[size_t(info.storage)].nbytes();
    sum = n > UINT64_MAX - sum ? UINT64_MAX : sum + n;
  });
  return sum;
}

}  // namespace

CheckpointEntry describeCheckpoint(const std::string& path, const std::string& relative) {
  CheckpointEntry e;
  e.path = path;
  e.file = relative;
  const fs::path p(path);
  NameInfo name = parseCheckpointName(p.filename().string());
  if (!name.step && p.has_parent_path()) {
    // Hugging Face style: checkpoint-500/pytorch_model.bin
    const NameInfo dir = parseCheckpointName(p.parent_path().filename().string() + ".d");
    if (dir.step) {
      name.step = dir.step;
      if (name.kind == CheckpointKind::Unknown) name.kind = CheckpointKind::Step;
    }
  }
  // The safety verdict: a second walk over the same (now cached) pickle
  // bytes, opcodes only. Kept apart from the read so that an unreadable
  // file still says whether it would run code.
  // A checkpoint of many files is as safe as its worst file.
  const CheckpointSafety safety = scanCheckpoint(path);
  e.verdict = std::string(verdictName(safety.verdict));
  e.offenders = safety.offenders();
  e.safety = safety.summary();
  try {
    // One file: its tensor table too (what the optimizer's share of the
    // bytes needs; still no tensor bytes read). A sharded checkpoint, or a
    // file whose tensor table cannot be built, is listed from its metadata.
    std::unique_ptr<CheckpointFile> file;
    if (!probeSharded(path)) {
      try {
        file = CheckpointFile::open(path);
      } catch (const std::exception&) {
      }
    }
    if (!file) {
      ReadOptions options;
      options.metadataOnly = true;
      file = CheckpointFile::open(path, options);
    }
    e.size = file->fileSize();
    e.mtime = file->mtime();
    e.format = std::string(formatName(file->format()));
    if (const ShardSet* shards = file->shards()) {
      e.sharded = shards->summary();
      e.layout = std::string(shardLayoutId(shards->layout()));
      e.ranks = shards->ranks();
      e.shardFiles = int(shards->parts().size() + (shards->entry().empty() ? 0 : 1));
      e.shardMissing = int(std::count_if(shards->parts().begin(), shards->parts().end(),
                                         [](const ShardPart& p) { return !p.present; }));
    }
    const CheckpointView view(*file);
    e.tensorBytes = storageBytes(*file, file->root());
    if (view.optimizer()) e.optimizerBytes = storageBytes(*file, view.optimizer());
    e.step = view.step() ? view.step() : name.step;
    e.loss = view.loss();
    e.runName = view.run();
    e.stage = view.stage();
    for (const char* key :
         {"loss", "train_loss", "val_loss", "learning_rate", "tokens_seen", "accuracy"}) {
      const Value* v = view.lookup(key);
      if (v && v->isNumber()) e.scalars[key] = v->number();
    }
    e.kind = name.kind;
    if (view.isFinal())
      e.kind = CheckpointKind::Final;
    else if (e.kind == CheckpointKind::Unknown && e.step)
      e.kind = CheckpointKind::Step;
  } catch (const std::exception& err) {
    e.error = stripError(err.what(), path);
    e.step = name.step;
    e.kind = name.kind;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      e.size = uint64_t(st.st_size);
      e.mtime = int64_t(st.st_mtime);
    }
  }
  return e;
}

namespace {

// .bin and .ckpt files count only when their first bytes say torch or safetensors.
// A writer's temporary file (.<name>.tmp-<pid>-<hex>) is never listed.
bool isListedFile(const fs::path& path) {
  if (isTempFileName(path.filename().string()) || !isCandidateName(path.filename().string()))
    return false;
  const std::string ext = detail::asciiLower(path.extension().string());
  if (ext != ".bin" && ext != ".ckpt") return true;
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
                     return a.file < b.file;
                   });
}

RunEntry scanRunDirectory(const std::string& root, const std::string& dir,
                          const std::function<bool(const CheckpointEntry& entry)>& keep) {
  RunEntry run;
  run.name = runNameFor(root, dir);
  run.path = dir;
  run.root = root;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && isListedFile(it->path())) files.push_back(it->path());
  }
  if (ec) throw std::runtime_error(dir + ": " + ec.message());
  std::set<fs::path> parts;
  collectSharded(dir, files, parts);
  dropParts(files, parts);
  std::sort(files.begin(), files.end());
  const fs::path rootPath(root);
  for (const fs::path& f : files) {
    CheckpointEntry entry = describeCheckpoint(f.string(), f.lexically_relative(rootPath).string());
    if (!keep || keep(entry)) run.checkpoints.push_back(std::move(entry));
  }
  sortCheckpoints(run.checkpoints);
  return run;
}

ScanResult scanDirectory(const std::string& root, const ScanOptions& options) {
  ScanResult result;
  result.root = root;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw std::runtime_error(root + ": not a directory");

  // Collect first so that progress knows the total.
  std::vector<fs::path> files;
  std::set<fs::path> parts;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw std::runtime_error(root + ": " + ec.message());
  collectSharded(root, files, parts);
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto& entry = *it;
    if (entry.is_directory(ec)) {
      if (entry.path().filename().string().rfind('.', 0) == 0) {
        it.disable_recursion_pending();  // .git, .cache, ...
        continue;
      }
      collectSharded(entry.path(), files, parts);
      continue;
    }
    if (entry.is_regular_file(ec) && isListedFile(entry.path())) files.push_back(entry.path());
  }
  dropParts(files, parts);
  std::sort(files.begin(), files.end());

  const fs::path rootPath(root);
  std::map<std::string, RunEntry> runs;
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path& f = files[i];
    std::string rel = f.lexically_relative(rootPath).string();
    // The root itself, a sharded checkpoint's folder opened on its own: its
    // folder name, as when its parent is opened (it was listed as ".").
    if (rel.empty() || rel == ".") rel = fs::absolute(f).lexically_normal().filename().string();
    CheckpointEntry entry = describeCheckpoint(f.string(), rel);
    const std::string runName = runNameFor(root, f.parent_path().string());
    RunEntry& run = runs[runName];
    run.name = runName;
    run.path = f.parent_path().string();
    run.root = root;
    run.checkpoints.push_back(std::move(entry));
    if (options.progress && !options.progress(i + 1, files.size())) break;
  }
  for (auto& [name, run] : runs) {
    sortCheckpoints(run.checkpoints);
    result.runs.push_back(std::move(run));
  }
  return result;
}

}  // namespace ckpt
