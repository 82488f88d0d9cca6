// Checkpoints written by many ranks (FORMAT.md section 7): recognising the
// layouts, opening their parts, mapping logical tensors onto chunks.
#include "ckpt/format/sharded.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/input_file.h"
#include "ckpt/format/megatron_names.h"
#include "sharded_util.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using namespace sharded;

// An index file is small; one that claims more is not an index.
constexpr uint64_t kMaxIndexBytes = 64ull << 20;

std::string parentOf(const std::string& path) {
  const fs::path p = fs::path(path).parent_path();
  return p.empty() ? "." : p.string();
}

// Top-level tensors of a part by key: a state dict or a safetensors file.
std::map<std::string, int, std::less<>> tensorsByKey(const CheckpointFile& f) {
  std::map<std::string, int, std::less<>> out;
  const Value* root = f.root();
  if (!root || root->kind != Value::Kind::Dict) return out;
  for (const auto& [k, v] : root->entries)
    if (k->isStr() && v->kind == Value::Kind::Tensor)
      out.emplace(std::string(k->text), int(v->index));
  return out;
}

}  // namespace

std::string_view shardLayoutTitle(ShardLayout layout) {
  switch (layout) {
    case ShardLayout::HuggingFace:
      return "Hugging Face";
    case ShardLayout::Dcp:
      return "DCP";
    case ShardLayout::Fsdp:
      return "FSDP";
    case ShardLayout::DeepSpeed:
      return "DeepSpeed";
    case ShardLayout::Megatron:
      return "Megatron-LM";
  }
  return "?";
}

std::string_view shardLayoutId(ShardLayout layout) {
  switch (layout) {
    case ShardLayout::HuggingFace:
      return "hf-index";
    case ShardLayout::Dcp:
      return "dcp";
    case ShardLayout::Fsdp:
      return "fsdp";
    case ShardLayout::DeepSpeed:
      return "deepspeed";
    case ShardLayout::Megatron:
      return "megatron";
  }
  return "?";
}

bool isShardDescriptionName(const std::string& path) {
  return fs::path(path).filename() == ".metadata" || endsWith(path, ".index.json");
}

std::optional<ShardProbe> probeSharded(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  if (S_ISREG(st.st_mode)) {
    if (!isShardDescriptionName(path)) return std::nullopt;
    if (fs::path(path).filename() == ".metadata")
      return ShardProbe{ShardLayout::Dcp, parentOf(path), path};
    return ShardProbe{ShardLayout::HuggingFace, parentOf(path), path};
  }
  if (!S_ISDIR(st.st_mode)) return std::nullopt;
  std::error_code ec;
  if (fs::is_regular_file(fs::path(path) / ".metadata", ec))
    return ShardProbe{ShardLayout::Dcp, path, (fs::path(path) / ".metadata").string()};
  // Megatron-LM's torch format: iter_<N>/ or release/ with rank folders
  // (its torch_dist format is a DCP folder, found above).
  if (!megatronRankFolders(path).empty()) return ShardProbe{ShardLayout::Megatron, path, ""};
  // DeepSpeed: a tag folder, or the folder whose `latest` names one.
  if (std::optional<std::string> tag = deepSpeedTagFolder(path)) {
    const bool viaLatest = *tag != path;
    return ShardProbe{ShardLayout::DeepSpeed, *tag,
                      viaLatest ? (fs::path(path) / "latest").string() : ""};
  }
  // One listing for both questions (indexes, and rank files as
  // rankFilesIn finds them): a listing of many runs asks it of every folder.
  std::vector<std::string> indexes;
  bool rankFiles = false;
  for (fs::directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (endsWith(name, ".index.json")) {
      if (it->is_regular_file(ec)) indexes.push_back(name);
    } else if (!rankFiles) {
      const std::optional<RankName> r = parseRankName(name);
      std::error_code fec;
      rankFiles = r && r->rank < kMaxRanks && it->is_regular_file(fec);
    }
  }
  if (indexes.empty()) {
    // FSDP's torch.save per rank: model_rank0.pt, model_rank1.pt, ...
    if (rankFiles) return ShardProbe{ShardLayout::Fsdp, path, ""};
    return std::nullopt;
  }
  std::sort(indexes.begin(), indexes.end());
  // The safetensors index first when a folder holds both (transformers writes
  // the two side by side when asked for both kinds).
  std::string pick = indexes.front();
  for (const char* preferred : {"model.safetensors.index.json", "pytorch_model.bin.index.json"})
    if (std::find(indexes.begin(), indexes.end(), preferred) != indexes.end()) {
      pick = preferred;
      break;
    }
  return ShardProbe{ShardLayout::HuggingFace, path, (fs::path(path) / pick).string()};
}

std::string pathInsideFolder(const std::string& folder, const std::string& name,
                             const std::string& what) {
  const auto outside = [&](const std::string& why) {
    fail(what + " names " + inQuotes(name) + ", " + why + " (only files inside " + folder +
         " are read)");
  };
  if (name.empty()) outside("an empty file name");
  if (name.find('\0') != std::string::npos) outside("a name with a NUL byte");
  const fs::path p(name);
  if (p.is_absolute()) outside("an absolute path");
  for (const fs::path& part : p)
    if (part == "..") outside("a path that leaves the checkpoint's folder");
  const fs::path full = fs::path(folder) / p;
  std::error_code ec;
  if (fs::exists(full, ec)) {
    // A symlink may still lead out: compare where both really are.
    const fs::path real = fs::canonical(full, ec);
    const fs::path base = fs::canonical(folder, ec);
    const std::string r = real.string(), b = base.string() + "/";
    if (ec || r.compare(0, b.size(), b) != 0)
      outside("a link that leads outside the checkpoint's folder (to " + r + ")");
  }
  return full.string();
}

ShardSet::~ShardSet() = default;

std::unique_ptr<ShardSet> ShardSet::open(const ShardProbe& probe, bool metadataOnly) {
  std::unique_ptr<ShardSet> s(new ShardSet);
  s->m_layout = probe.layout;
  s->m_folder = probe.folder;
  s->m_entry = probe.entry;
  switch (probe.layout) {
    case ShardLayout::HuggingFace:
      s->openHuggingFace(metadataOnly);
      break;
    case ShardLayout::Dcp:
      s->openDcp(metadataOnly);
      break;
    case ShardLayout::Fsdp:
      s->openFsdp(metadataOnly);
      break;
    case ShardLayout::DeepSpeed:
      s->openDeepSpeed(metadataOnly);
      break;
    case ShardLayout::Megatron:
      s->openMegatron(metadataOnly);
      break;
  }
  return s;
}

int ShardSet::addPart(const std::string& file, int rank) {
  for (size_t i = 0; i < m_parts.size(); ++i)
    if (m_parts[i].file == file) return int(i);
  ShardPart p;
  p.file = file;
  p.rank = rank;
  p.path = (fs::path(m_folder) / file).string();
  struct stat st {};
  if (::stat(p.path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    p.present = true;
    p.size = uint64_t(st.st_size);
  } else {
    p.error = file + " is missing";
  }
  m_parts.push_back(std::move(p));
  m_files.emplace_back();
  return int(m_parts.size() - 1);
}

void ShardSet::openParts() {
  for (size_t i = 0; i < m_parts.size(); ++i) {
    ShardPart& p = m_parts[i];
    if (!p.present || !p.error.empty()) continue;
    try {
      m_files[i] = CheckpointFile::open(p.path);
    } catch (const FormatError& e) {
      p.error = e.what();
    }
  }
}

const CheckpointFile* ShardSet::partFile(int part) const {
  if (part < 0 || size_t(part) >= m_files.size()) return nullptr;
  return m_files[size_t(part)].get();
}

const CheckpointFile* ShardSet::chunkFile(const ShardChunk& chunk) const {
  if (chunk.slice < 0) return partFile(chunk.part);
  const SliceSpec& spec = m_sliceSpecs.at(size_t(chunk.slice));
  std::lock_guard lock(m_sliceMutex);
  std::unique_ptr<CheckpointFile>& f = m_slices[size_t(chunk.slice)];
  if (f) return f.get();
  const ShardPart& p = m_parts[size_t(spec.part)];
  std::unique_ptr<CheckpointFile> opened;
  try {
    opened = sharded::openArchiveAt(p.path, spec.offset, spec.length);
  } catch (const FormatError& e) {
    throw FormatError(std::string(e.what()) + " (" + spec.what + ")");
  }
  if (opened->tensors().empty() || !opened->root() || opened->root()->kind != Value::Kind::Tensor)
    fail(p.file + ": the " + spec.what + " holds no tensor");
  const TensorInfo& local = opened->tensors()[0];
  if (local.shape != spec.sizes || local.dtype != spec.dtype)
    fail(p.file + ": the " + spec.what + " holds a " + std::string(dtypeName(local.dtype)) + " " +
         local.shapeString() + " tensor, .metadata says " + std::string(dtypeName(spec.dtype)) +
         " " + dimsText(spec.sizes));
  if (!local.error.empty()) fail(p.file + ": the " + spec.what + ": " + local.error);
  f = std::move(opened);
  return f.get();
}

std::vector<std::string> ShardSet::verifyChunks() const {
  std::vector<std::string> problems;
  for (const LogicalTensor& t : m_tensors) {
    if (t.incomplete()) continue;  // said already
    for (const ShardChunk& c : t.chunks) {
      if (c.slice < 0) continue;
      try {
        const CheckpointFile* f = chunkFile(c);
        for (const std::string& q : f->verify())
          problems.push_back("tensor " + t.name + ": " + m_parts[size_t(c.part)].file + ": " + q);
      } catch (const FormatError& e) {
        problems.push_back("tensor " + t.name + ": " + e.what());
      }
    }
  }
  return problems;
}

uint64_t ShardSet::totalSize() const {
  uint64_t total = 0;
  for (const ShardPart& p : m_parts) total += p.size;
  if (!m_entry.empty()) {
    struct stat st {};
    if (::stat(m_entry.c_str(), &st) == 0) total += uint64_t(st.st_size);
  }
  return total;
}

std::string ShardSet::summary() const {
  std::string s = "sharded: " + std::string(shardLayoutTitle(m_layout));
  if (m_ranks > 0) s += ", " + std::to_string(m_ranks) + (m_ranks == 1 ? " rank" : " ranks");
  const size_t files = m_parts.size() + (m_entry.empty() ? 0 : 1);
  s += ", " + std::to_string(files) + (files == 1 ? " file" : " files");
  size_t missing = 0;
  for (const ShardPart& p : m_parts) missing += p.present ? 0 : 1;
  if (missing) s += ", " + std::to_string(missing) + " missing";
  return s;
}

// Chunks inside the global shape, not overlapping, covering every element;
// identical chunks from several ranks (a replicated tensor) kept once.
void ShardSet::checkChunks(LogicalTensor& t) const {
  if (!t.error.empty()) return;
  if (!plausibleShape(t.shape)) {
    t.error = "its global shape " + dimsText(t.shape) + " has a negative or overflowing size";
    return;
  }
  if (t.chunks.size() > kMaxChunks) {
    t.error = std::to_string(t.chunks.size()) + " chunks, over the limit of " +
              std::to_string(kMaxChunks);
    return;
  }
  const size_t nd = t.shape.size();
  auto where = [&](const ShardChunk& c) {
    return m_parts[size_t(c.part)].file + ": chunk at offsets " + dimsText(c.offsets) + " sizes " +
           dimsText(c.sizes);
  };
  std::vector<ShardChunk> kept;
  for (ShardChunk& c : t.chunks) {
    if (c.offsets.size() != nd || c.sizes.size() != nd) {
      t.error = where(c) + " has " + std::to_string(c.sizes.size()) +
                " dimensions, the global shape " + dimsText(t.shape) + " has " + std::to_string(nd);
      return;
    }
    for (size_t d = 0; d < nd; ++d) {
      if (c.offsets[d] < 0 || c.sizes[d] < 0 || c.offsets[d] > t.shape[d] ||
          c.sizes[d] > t.shape[d] - c.offsets[d]) {
        t.error = where(c) + " lies outside the global shape " + dimsText(t.shape);
        return;
      }
    }
    bool replica = false;
    for (const ShardChunk& k : kept) {
      if (k.offsets == c.offsets && k.sizes == c.sizes) {
        replica = true;
        break;
      }
      bool overlap = true;
      for (size_t d = 0; d < nd && overlap; ++d)
        overlap = std::max(k.offsets[d], c.offsets[d]) <
                  std::min(k.offsets[d] + k.sizes[d], c.offsets[d] + c.sizes[d]);
      if (overlap) {
        t.error = where(c) + " overlaps " + where(k);
        return;
      }
    }
    if (replica)
      ++t.replicas;
    else
      kept.push_back(std::move(c));
  }
  t.chunks = std::move(kept);
  uint64_t covered = 0, numel = 1;
  for (size_t d = 0; d < nd; ++d) numel *= uint64_t(t.shape[d]);
  for (const ShardChunk& c : t.chunks) {
    uint64_t n = 1;
    for (size_t d = 0; d < nd; ++d) n *= uint64_t(c.sizes[d]);
    covered += n;
  }
  if (covered != numel)
    t.error = "its chunks cover " + std::to_string(covered) + " of its " + std::to_string(numel) +
              " elements";
}

// ---- Hugging Face: an index naming the shard of every tensor ---------------

void ShardSet::openHuggingFace(bool metadataOnly) {
  const std::string entryName = fs::path(m_entry).filename().string();
  nlohmann::ordered_json doc;
  {
    InputFile in(m_entry);
    if (in.size() > kMaxIndexBytes)
      fail(m_entry + ": an index of " + std::to_string(in.size()) + " bytes, over the limit of " +
           std::to_string(kMaxIndexBytes));
    const std::vector<uint8_t> bytes = in.read(0, in.size());
    try {
      doc = nlohmann::ordered_json::parse(bytes.begin(), bytes.end());
    } catch (const nlohmann::json::exception& e) {
      fail(m_entry + ": not valid JSON: " + e.what());
    }
  }
  if (!doc.is_object()) fail(m_entry + ": the index is not a JSON object");
  const auto wm = doc.find("weight_map");
  if (wm == doc.end() || !wm->is_object()) fail(m_entry + ": no \"weight_map\" object");
  if (const auto md = doc.find("metadata"); md != doc.end() && md->is_object())
    for (const auto& [k, v] : md->items()) m_metadata.emplace_back(k, v.dump());

  // Every entry first names its part: a name that leads outside the folder
  // gets no part at all (and so is never opened).
  struct Named {
    std::string tensor;
    int part = -1;
    std::string error;
  };
  std::vector<Named> named;
  for (const auto& [tensor, file] : wm->items()) {
    Named n{tensor, -1, {}};
    const std::string what = entryName + ": weight_map[" + inQuotes(tensor) + "]";
    if (!file.is_string()) {
      n.error = what + " is not a file name";
    } else {
      try {
        (void)pathInsideFolder(m_folder, file.get<std::string>(), what);
        n.part = addPart(file.get<std::string>(), -1);
      } catch (const FormatError& e) {
        n.error = e.what();
      }
    }
    named.push_back(std::move(n));
  }
  if (metadataOnly) return;
  openParts();

  std::vector<std::map<std::string, int, std::less<>>> keys(m_parts.size());
  for (size_t i = 0; i < m_parts.size(); ++i)
    if (m_files[i]) keys[i] = tensorsByKey(*m_files[i]);
  std::vector<std::vector<bool>> used(m_parts.size());
  for (size_t i = 0; i < m_parts.size(); ++i)
    used[i].assign(m_files[i] ? m_files[i]->tensors().size() : 0, false);

  for (Named& n : named) {
    LogicalTensor t;
    t.name = n.tensor;
    if (!n.error.empty()) {
      t.error = n.error;
    } else {
      const ShardPart& p = m_parts[size_t(n.part)];
      const std::string what = " (weight_map[" + inQuotes(n.tensor) + "] in " + entryName + ")";
      if (!p.error.empty()) {
        t.error = p.error + what;
        // Its shape is in that file alone: where it would be is unknown.
        t.missing.push_back(ShardChunk{n.part, -1, -1, {}, {}});
      } else if (auto it = keys[size_t(n.part)].find(n.tensor); it == keys[size_t(n.part)].end()) {
        t.error = p.file + " has no tensor " + inQuotes(n.tensor) + what;
      } else {
        const TensorInfo& info = m_files[size_t(n.part)]->tensors()[size_t(it->second)];
        used[size_t(n.part)][size_t(it->second)] = true;
        t.dtype = info.dtype;
        t.shape = info.shape;
        t.chunks.push_back(
            ShardChunk{n.part, -1, it->second, Dims(info.shape.size(), 0), info.shape});
        if (!info.error.empty()) t.error = p.file + ": " + info.error;
        checkChunks(t);
      }
    }
    m_tensors.push_back(std::move(t));
  }
  for (size_t i = 0; i < m_parts.size(); ++i)
    for (size_t j = 0; j < used[i].size(); ++j)
      if (!used[i][j])
        m_notes.push_back(m_parts[i].file + " holds " + inQuotes(m_files[i]->tensors()[j].name()) +
                          ", which the index does not name (not shown)");
}

}  // namespace ckpt
