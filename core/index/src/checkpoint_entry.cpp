// One checkpoint's entry in a listing (scanner.h): the step and kind its
// name says, what the file holds (step, loss, sizes, the trainer that wrote
// it), its safety verdict. The walk that finds checkpoints: scanner.cpp.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include <sys/stat.h>

#include "ascii.h"
#include "checkpoint_values.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/index/natural_order.h"
#include "ckpt/index/scanner.h"
#include "ckpt/index/trainers.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

bool boundaryBefore(const std::string& s, size_t pos) {
  return pos == 0 || !std::isalpha(static_cast<unsigned char>(s[pos - 1]));
}

// Digits after `word` (optionally after one '_', '-' or '=': Lightning's
// `epoch=2-step=300`) at a word boundary.
std::optional<int64_t> numberAfter(const std::string& s, std::string_view word,
                                   bool separatorRequired) {
  for (size_t pos = s.find(word); pos != std::string::npos; pos = s.find(word, pos + 1)) {
    if (!boundaryBefore(s, pos)) continue;
    size_t i = pos + word.size();
    const bool sep = i < s.size() && (s[i] == '_' || s[i] == '-' || s[i] == '=');
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

namespace {

bool endsWithWord(const std::string& stem, std::string_view word) {
  return stem.size() > word.size() && stem.ends_with(word) &&
         (stem[stem.size() - word.size() - 1] == '_' || stem[stem.size() - word.size() - 1] == '-');
}

}  // namespace

NameInfo parseCheckpointName(std::string_view fileName) {
  std::string stem = detail::asciiLower(fileName);
  // checkpoint.pth.tar (PyTorch's ImageNet example): both suffixes go.
  if (stem.ends_with(".pth.tar") || stem.ends_with(".pt.tar")) stem.resize(stem.size() - 4);
  if (const size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  NameInfo info;
  info.step = numberAfter(stem, "step", false);
  if (!info.step) info.step = numberAfter(stem, "checkpoint", true);
  if (!info.step) info.step = numberAfter(stem, "ckpt", true);
  if (!info.step) info.step = numberAfter(stem, "iter", true);
  if (stem.find("final") != std::string::npos) info.kind = CheckpointKind::Final;
  // best_checkpoint.pt, and the suffix fairseq (checkpoint_best.pt) and the
  // ImageNet example (model_best.pth.tar) write; the same for last / latest.
  else if (stem.rfind("best", 0) == 0 || endsWithWord(stem, "best"))
    info.kind = CheckpointKind::Best;
  else if (stem.rfind("latest", 0) == 0 || stem.rfind("last", 0) == 0 ||
           endsWithWord(stem, "last") || endsWithWord(stem, "latest"))
    info.kind = CheckpointKind::Latest;
  else if (info.step)
    info.kind = CheckpointKind::Step;
  return info;
}

bool isCandidateName(std::string_view fileName) {
  const std::string lower = detail::asciiLower(fileName);
  if (lower.ends_with(".pth.tar") || lower.ends_with(".pt.tar")) return true;
  const std::string ext = fs::path(lower).extension().string();
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

CheckpointEntry describeCheckpoint(const std::string& path, const std::string& relative,
                                   std::optional<FileStamp>* stamp) {
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
  // The safety verdict of one file comes from the reader's own walk as it
  // opens the file (one pass: CheckpointFile::safety()). A sharded
  // checkpoint (as safe as its worst file), or a file the reader cannot
  // open or judge, is scanned on its own: an unreadable file still says
  // whether it would run code.
  std::optional<CheckpointSafety> safety;
  try {
    // One file: its tensor table too (what the optimizer's share of the
    // bytes needs; still no tensor bytes read). A sharded checkpoint, or a
    // file whose tensor table cannot be built, is listed from its metadata.
    // (Opened as one file first, refused when it is sharded: no stat of
    // the path before the open, which a listing of 50,000 small files felt.)
    std::unique_ptr<CheckpointFile> file;
    ReadOptions options;
    if (const std::optional<SafetyProfile> profile = singleFileProfile(path)) {
      options.safety = true;
      options.safetyProfile = *profile;
    }
    options.singleFileOnly = true;
    try {
      file = CheckpointFile::open(path, options);
    } catch (const std::exception&) {
    }
    if (!file) {
      options.singleFileOnly = false;
      options.metadataOnly = true;
      file = CheckpointFile::open(path, options);
    }
    if (file->safety()) safety = singleFileSafety(path, *file->safety());
    if (stamp && !file->shards()) *stamp = file->input().stamp();
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
    // nanoGPT saves ckpt.pt when the val loss improves (or always): its
    // best_val_loss is the val loss recorded at iter_num.
    if (view.lookup("iter_num") && !e.scalars.count("val_loss"))
      if (const auto v = detail::numberOrScalar(*file, view.lookup("best_val_loss")))
        e.scalars["val_loss"] = *v;
    if (view.lookup("iter_num") && view.lookup("model_args")) e.trainer = std::string(kNanoGptId);
    if (e.layout == "deepspeed") e.trainer = std::string(kDeepSpeedId);
    detail::describeLightningCheckpoint(*file, view, p.filename().string(), e);
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
  if (!safety) safety = scanCheckpoint(path);
  e.verdict = std::string(verdictName(safety->verdict));
  e.offenders = safety->offenders();
  e.safety = safety->summary();
  return e;
}

namespace {

int verdictRank(std::string_view v) {
  if (v == "dangerous") return 3;
  if (v == "unreadable") return 2;
  if (v == "suspicious") return 1;
  return 0;
}

}  // namespace

void addCheckpointPart(CheckpointEntry& e, const std::string& path, std::string file,
                       std::string role) {
  CheckpointPart part;
  part.file = std::move(file);
  part.role = std::move(role);
  part.path = path;
  std::error_code sec;
  part.size = uint64_t(fs::file_size(path, sec));
  if (sec) part.size = 0;
  e.size += part.size;
  const std::string ext = fs::path(path).extension().string();
  // (Accelerate's random_states_<i>.pkl is a torch.save too.)
  if (ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".pkl") {
    const CheckpointSafety safety = scanCheckpoint(part.path);
    part.verdict = std::string(verdictName(safety.verdict));
    if (verdictRank(part.verdict) > verdictRank(e.verdict)) {
      e.verdict = part.verdict;
      e.safety = part.file + ": " + safety.summary();
    }
    for (const std::string& o : safety.offenders())
      if (std::find(e.offenders.begin(), e.offenders.end(), o) == e.offenders.end())
        e.offenders.push_back(o);
  }
  e.parts.push_back(std::move(part));
}

void addFolderParts(CheckpointEntry& e, const std::string& dir,
                    std::string_view (*roleOf)(std::string_view)) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (!it->is_regular_file(fec)) continue;
    const std::string_view role = roleOf(it->path().filename().string());
    if (role.empty() || role == "weights" || role == "weights-shard") continue;
    files.push_back(it->path());
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return naturalLess(a.filename().string(), b.filename().string());
  });
  for (const fs::path& f : files)
    addCheckpointPart(e, f.string(), f.filename().string(),
                      std::string(roleOf(f.filename().string())));
}

}  // namespace ckpt
