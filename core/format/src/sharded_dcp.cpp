// torch.distributed.checkpoint folders (FORMAT.md section 7): `.metadata`, a
// pickle of Metadata dataclasses, says every tensor's global size, dtype and
// chunks, and where each chunk's torch.save archive lies in which
// __<rank>_<n>.distcp file. The classes are never imported: the safe pickle
// reader leaves them as opaque objects, read here by field name.
#include <sys/stat.h>

#include <charconv>
#include <filesystem>
#include <map>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "sharded_util.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using K = Value::Kind;
using namespace sharded;

// "__3_0.distcp" -> 3.
int rankOf(const std::string& file) {
  if (file.rfind("__", 0) != 0) return -1;
  int rank = -1;
  const char* b = file.data() + 2;
  const auto r = std::from_chars(b, file.data() + file.size(), rank);
  return r.ec == std::errc() && r.ptr < file.data() + file.size() && *r.ptr == '_' ? rank : -1;
}

}  // namespace

void ShardSet::openDcp(bool metadataOnly) {
  {
    struct stat st {};
    if (::stat(m_entry.c_str(), &st) != 0) fail(m_entry + ": cannot stat");
    ReadOptions options;
    options.sliceLength =
        uint64_t(st.st_size);  // the pickle itself, never probed as a folder again
    m_description = CheckpointFile::open(m_entry, options);
  }
  const Value* md = m_description->root();
  if (!isClass(md, "Metadata"))
    fail(m_entry + ": not a torch.distributed.checkpoint Metadata pickle");
  const Value* sdm = field(md, "state_dict_metadata");
  const Value* storage = field(md, "storage_data");
  const Value* planner = field(md, "planner_data");
  if (!sdm || !sdm->isDict()) fail(m_entry + ": Metadata has no state_dict_metadata dict");
  if (!storage || !storage->isDict()) fail(m_entry + ": Metadata has no storage_data dict");

  // storage_data: MetadataIndex(fqn, offset, index) -> _StorageInfo(relative_path, offset, length).
  struct Where {
    int part = -1;
    uint64_t offset = 0, length = 0;
    std::string error;
  };
  std::map<std::pair<std::string, Dims>, Where> where;
  int maxRank = -1;
  for (const auto& [k, v] : storage->entries) {
    const Value* fqn = field(k, "fqn");
    if (!fqn || !fqn->isStr()) continue;
    const std::optional<Dims> offsets = intsOf(field(k, "offset"));
    const std::string key = std::string(fqn->text);
    Where w;
    const Value* rel = field(v, "relative_path");
    const Value* off = field(v, "offset");
    const Value* len = field(v, "length");
    const std::string what = ".metadata: storage_data['" + key.substr(0, 200) + "']";
    if (!rel || !rel->isStr() || !off || !off->isInt() || !len || !len->isInt() ||
        off->integer < 0 || len->integer < 0) {
      w.error = what + " is not a (relative_path, offset, length) _StorageInfo";
    } else if (const Value* t = field(v, "transform_descriptors");
               t && t->isSequence() && !t->items.empty()) {
      w.error = what + " is stored transformed (" + shortRepr(t, 60) + "), which is not read";
    } else {
      try {
        (void)pathInsideFolder(m_folder, std::string(rel->text), what);
        const int rank = rankOf(std::string(rel->text));
        w.part = addPart(std::string(rel->text), rank);
        maxRank = std::max(maxRank, rank);
        w.offset = uint64_t(off->integer);
        w.length = uint64_t(len->integer);
      } catch (const FormatError& e) {
        w.error = e.what();
      }
    }
    m_storage.push_back(StorageSlice{key, w.part, w.offset, w.length, w.error});
    where[{key, offsets.value_or(Dims{})}] = std::move(w);
  }
  // Ranks whose files no storage entry names still count when present.
  std::error_code ec;
  for (fs::directory_iterator it(m_folder, ec), end; !ec && it != end; it.increment(ec))
    if (const std::string name = it->path().filename().string(); endsWith(name, ".distcp"))
      maxRank = std::max(maxRank, rankOf(name));
  m_ranks = maxRank + 1;

  auto pathFor = [&](const std::string& key) {
    std::vector<PathElement> path;
    const Value* p = planner && planner->isDict() ? planner->get(key) : nullptr;
    if (p && p->isSequence()) {
      for (const Value* e : p->items) {
        if (e->isStr())
          path.emplace_back(std::string(e->text));
        else if (e->isInt())
          path.emplace_back(e->integer);
        else
          return std::vector<PathElement>{key};
      }
    }
    if (path.empty()) path.emplace_back(key);
    return path;
  };
  // A bytes item's archive, opened now (they are few and small: the step).
  auto openSlice = [&](const Where& w, std::string& error) -> int {
    const ShardPart& p = m_parts[size_t(w.part)];
    if (!p.present) {
      error = p.error;
      return -1;
    }
    try {
      m_itemFiles.push_back(openArchiveAt(p.path, w.offset, w.length));
      return int(m_itemFiles.size() - 1);
    } catch (const FormatError& e) {
      error = e.what();
      return -1;
    }
  };

  for (const auto& [k, v] : sdm->entries) {
    if (!k->isStr()) continue;
    const std::string key = std::string(k->text);
    if (isClass(v, "BytesStorageMetadata")) {
      // A pickled object (torch.save) of its own: shown when it holds no tensor.
      Item item{pathFor(key), nullptr};
      auto w = where.find({key, Dims{}});
      std::string error = w == where.end() ? "no storage_data entry" : w->second.error;
      int slice = -1;
      if (error.empty()) slice = openSlice(w->second, error);
      if (slice >= 0 && m_itemFiles[size_t(slice)]->tensors().empty()) {
        item.value = m_itemFiles[size_t(slice)]->root();
      } else {
        Value* s = m_arena.make(K::Str);
        s->text = m_arena.copy(slice >= 0 ? "(a bytes item holding tensors, not shown)"
                                          : "(unreadable: " + error + ")");
        item.value = s;
      }
      m_items.push_back(std::move(item));
      continue;
    }
    // A listing needs the step and such (bytes items), not the tensors.
    if (metadataOnly) continue;
    LogicalTensor t;
    t.name = key;
    t.path = pathFor(key);
    const std::optional<Dims> size = intsOf(field(v, "size"));
    const std::optional<DType> dtype = propertiesDtype(field(v, "properties"));
    const Value* chunks = field(v, "chunks");
    const std::string what = ".metadata: state_dict_metadata['" + key.substr(0, 200) + "']";
    if (!size || !dtype || !chunks || !chunks->isSequence()) {
      t.error =
          what + " is not a TensorStorageMetadata (properties, size, chunks) this reader knows";
      m_tensors.push_back(std::move(t));
      continue;
    }
    t.shape = *size;
    t.dtype = *dtype;
    for (const Value* c : chunks->items) {
      const std::optional<Dims> offsets = intsOf(field(c, "offsets"));
      const std::optional<Dims> sizes = intsOf(field(c, "sizes"));
      if (!offsets || !sizes) {
        if (t.error.empty()) t.error = what + ": a chunk without offsets and sizes";
        break;
      }
      ShardChunk chunk{-1, -1, 0, *offsets, *sizes};
      const std::string at = "chunk at offsets " + dimsText(*offsets);
      auto w = where.find({key, *offsets});
      if (w == where.end()) {
        if (t.error.empty()) t.error = what + ": no storage_data entry for its " + at;
        break;
      }
      if (!w->second.error.empty()) {
        if (t.error.empty()) t.error = w->second.error;
        break;
      }
      chunk.part = w->second.part;
      const ShardPart& part = m_parts[size_t(chunk.part)];
      const std::string of = at + " of '" + key.substr(0, 200) + "'";
      if (!part.present) {
        // Where the missing bytes would be: the other chunks are still
        // listed. An empty chunk has no bytes to miss.
        bool empty = false;
        for (size_t d = 0; d < sizes->size(); ++d) empty |= (*sizes)[d] == 0;
        if (t.error.empty() && !empty) t.error = part.error + " (" + of + ")";
        t.missing.push_back(ShardChunk{chunk.part, -1, -1, *offsets, *sizes});
        continue;
      }
      // The archive itself is opened when its bytes are wanted (chunkFile);
      // that it lies inside its file is known now.
      uint64_t end = 0;
      if (addOverflows(w->second.offset, w->second.length, &end) || end > part.size) {
        if (t.error.empty())
          t.error = part.file + ": the slice of " + std::to_string(w->second.length) +
                    " bytes at offset " + std::to_string(w->second.offset) +
                    " runs past the end of the file (" + std::to_string(part.size) + " bytes) (" +
                    of + ")";
        break;
      }
      chunk.slice = int(m_sliceSpecs.size());
      chunk.tensor = 0;
      m_sliceSpecs.push_back(
          SliceSpec{chunk.part, w->second.offset, w->second.length, *dtype, *sizes, of});
      t.chunks.push_back(std::move(chunk));
    }
    checkChunks(t);
    m_tensors.push_back(std::move(t));
  }
  m_slices.resize(m_sliceSpecs.size());
}

}  // namespace ckpt
