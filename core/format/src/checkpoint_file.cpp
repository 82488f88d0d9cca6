#include "ckpt/format/checkpoint_file.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <new>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/zip_archive.h"
#include "safety_walk.h"

namespace ckpt {

std::string_view formatName(FileFormat f) {
  switch (f) {
    case FileFormat::TorchZip:
      return "torch-zip";
    case FileFormat::TorchLegacy:
      return "torch-legacy";
    case FileFormat::Safetensors:
      return "safetensors";
    case FileFormat::Pickle:
      return "pickle";
    case FileFormat::Sharded:
      return "sharded";
  }
  return "?";
}

Sniff sniffFile(const InputFile& file) {
  uint8_t head[512] = {};
  const uint64_t n = std::min<uint64_t>(file.size(), sizeof head);
  if (n == 0) return Sniff::Unknown;
  file.read(0, n, head);
  if (n >= 4 && head[0] == 'P' && head[1] == 'K' &&
      ((head[2] == 3 && head[3] == 4) || (head[2] == 5 && head[3] == 6)))
    return Sniff::Zip;
  if (n >= 262 && std::memcmp(head + 257, "ustar", 5) == 0) return Sniff::Tar;
  if (n >= 9 && head[8] == '{') {
    uint64_t len = 0;
    for (int i = 0; i < 8; ++i) len |= uint64_t(head[i]) << (8 * i);
    if (len >= 2 && len <= file.size() - 8) return Sniff::Safetensors;
  }
  // Every pickle protocol, damaged magic numbers included: what the first
  // pickles hold decides, not a byte pattern (protocol 2's header bytes were
  // once the only ones recognised, and every other protocol read as an
  // empty plain pickle).
  if (readLegacyHead(head, n, file.size()).verdict != LegacyHead::Verdict::NotLegacy)
    return Sniff::TorchLegacy;
  if (head[0] == 0x80) return Sniff::Pickle;
  return Sniff::Unknown;
}

namespace {

// The tensor and storage tables of the last file closed on this thread,
// emptied, with their capacity: the next file opened here fills them
// instead of allocating (and first touching) a few hundred kB again. The
// value arena keeps its blocks the same way.
TensorTable& spareTables() {
  thread_local TensorTable spare;
  return spare;
}
constexpr size_t kMaxSpareRows = 4096;  // at most ~2 MB kept per thread

bool hasPickleExtension(const std::string& path) {
  auto endsWith = [&path](std::string_view tail) {
    return path.size() >= tail.size() &&
           path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  return endsWith(".pkl") || endsWith(".pickle") || endsWith(".PKL");
}

}  // namespace

CheckpointFile::~CheckpointFile() {
  m_table.tensors.clear();
  m_table.storages.clear();
  TensorTable& spare = spareTables();
  if (m_table.tensors.capacity() <= kMaxSpareRows && m_table.storages.capacity() <= kMaxSpareRows &&
      m_table.tensors.capacity() >= spare.tensors.capacity())
    spare = std::move(m_table);
}

std::unique_ptr<CheckpointFile> CheckpointFile::open(const std::string& path,
                                                     const ReadOptions& options) {
  return openFrom(path, nullptr, options);
}

std::unique_ptr<CheckpointFile> CheckpointFile::openBytes(const std::string& name, ByteRegion bytes,
                                                          const ReadOptions& options) {
  return openFrom(name, &bytes, options);
}

std::unique_ptr<CheckpointFile> CheckpointFile::openFrom(const std::string& path,
                                                         const ByteRegion* bytes,
                                                         const ReadOptions& options) {
  std::unique_ptr<CheckpointFile> f(new CheckpointFile);
  f->m_metadataOnly = options.metadataOnly;
  if (options.phases) {
    *options.phases = {};
    f->m_phases = options.phases;
    f->lap(nullptr);
  }
  if (!options.metadataOnly) f->m_table = std::exchange(spareTables(), TensorTable{});
  f->m_path = path;
  try {
    if (bytes) {
      f->m_file = std::make_unique<InputFile>(path, *bytes);
    } else if (options.sliceLength) {
      f->m_file = std::make_unique<InputFile>(path, options.sliceOffset, *options.sliceLength);
    } else {
      // The file is opened first: only a folder or a sharded checkpoint's
      // description (its name says) is probed, so one file costs no stat
      // besides the open's fstat.
      if (!isShardDescriptionName(path)) f->m_file = InputFile::openUnlessDirectory(path);
      if (!f->m_file) {
        if (const std::optional<ShardProbe> probe = probeSharded(path)) {
          if (options.singleFileOnly) fail("a sharded checkpoint, not one file");
          f->loadSharded(*probe, options);
          f->finish();
          for (TensorInfo& t : f->m_table.tensors)
            if (t.error.empty()) t.error = f->m_shards->tensors()[size_t(t.storage)].error;
          return f;
        }
        f->m_file = std::make_unique<InputFile>(path);
      }
    }
    if (f->m_file->size() == 0) fail("empty file");
    if (options.safety && !options.sliceLength) {
      f->m_safety = std::make_unique<SafetyWalk>();
      f->m_safety->report.profile = options.safetyProfile;
      f->m_safety->path = path;
    }
    const Sniff sniff = sniffFile(*f->m_file);
    f->lap(&OpenPhases::sniff);
    switch (sniff) {
      case Sniff::Zip:
        f->loadTorchZip(options);
        break;  // TorchScript archives are told apart inside
      case Sniff::TorchLegacy:
        f->loadTorchLegacy(options);
        break;
      case Sniff::Safetensors:
        f->loadSafetensors(options);
        break;
      case Sniff::Tar:
        fail("a tar-era PyTorch file (before 0.1.10) is not supported");
      case Sniff::Pickle:
        f->loadPlainPickle(options);
        break;
      case Sniff::Unknown:
        // Protocol 0 and 1 pickles start with any opcode: the name tells.
        if (hasPickleExtension(path)) {
          f->loadPlainPickle(options);
          break;
        }
        fail("not a PyTorch or safetensors file (unrecognised first bytes)");
    }
    f->lap(&OpenPhases::parse);  // the rest of a legacy or safetensors read
    f->finish();
    f->lap(&OpenPhases::finish);
    if (f->m_safety) {
      if (f->m_safety->overBound())
        f->m_safety.reset();
      else
        f->m_safety->report.verdict = judgeSafety(f->m_safety->report);
    }
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw FormatError(path + ": out of memory while reading");
  } catch (const std::length_error&) {
    throw FormatError(path + ": a size in the file is too large");
  }
  return f;
}

const SafetyReport* CheckpointFile::safety() const {
  return m_safety ? &m_safety->report : nullptr;
}

void CheckpointFile::lap(double OpenPhases::*field) {
  if (!m_phases) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (field) m_phases->*field += double(now - m_lapNs) * 1e-9;
  m_lapNs = now;
}

namespace {

// walkTensors without a std::function in the loop (finish() calls it with a
// lambda it can inline). `fn` gets the path as a TensorPath&.
// `valueCount`: how many values the tree's arena made (0 if unknown).
template <typename Fn>
void walkTensorsWith(const Value* root, Fn&& fn, size_t valueCount = 0) {
  using K = Value::Kind;
  static const Value kNoState{};
  struct Frame {
    const Value* v;
    size_t next;
    bool hasKey;  // false for the root, whose path is empty
  };
  auto isContainer = [](const Value* v) {
    return v->kind == K::Dict || v->kind == K::List || v->kind == K::Tuple || v->kind == K::Set ||
           v->kind == K::Object;
  };
  // How to name a child, kept cheap until the child turns out to be a
  // tensor or a container (scalars are never named).
  struct KeyRef {
    const Value* key = nullptr;  // a dict key; else `index`, or "__state__" when `state`
    int64_t index = 0;
    bool state = false;
  };
  auto pushKey = [](TensorPath& path, const KeyRef& r) {
    if (r.state)
      path.pushKey("__state__");
    else if (!r.key)
      path.pushIndex(r.index);
    else if (r.key->kind == K::Str)
      path.pushKey(r.key->text);
    else if (r.key->kind == K::Int)
      path.pushIndex(r.key->integer);
    else
      path.pushKey(shortRepr(r.key, 60));
  };
  // Child i of a container and how to name it; nullptr past the end.
  auto child = [](const Value* v, size_t i, KeyRef& key) -> const Value* {
    switch (v->kind) {
      case K::Dict:
        if (i >= v->entries.size()) return nullptr;
        key.key = v->entries[i].first;
        return v->entries[i].second;
      case K::List:
      case K::Tuple:
      case K::Set:
        if (i >= v->items.size()) return nullptr;
        key.index = int64_t(i);
        return v->items[i];
      case K::Object:
        // Arguments, then state, then list items, then dict items.
        if (i < v->items.size()) {
          key.index = int64_t(i);
          return v->items[i];
        }
        i -= v->items.size();
        if (i == 0) {
          key.state = true;
          return v->state ? v->state : &kNoState;
        }
        i -= 1;
        if (i < v->listItems.size()) {
          key.index = int64_t(i);
          return v->listItems[i];
        }
        i -= v->listItems.size();
        if (i >= v->entries.size()) return nullptr;
        key.key = v->entries[i].first;
        return v->entries[i].second;
      default:
        return nullptr;
    }
  };

  // Visited containers and tensors, by creation number.
  std::vector<uint8_t> seenIds(valueCount);
  auto firstVisit = [&seenIds](const Value* v) {
    if (v->id >= seenIds.size())
      seenIds.resize(std::max<size_t>(size_t(v->id) + 1, seenIds.size() * 2));
    if (seenIds[v->id]) return false;
    seenIds[v->id] = 1;
    return true;
  };
  std::vector<Frame> stack;
  TensorPath path;
  if (!root) return;
  if (root->kind == K::Tensor) {
    fn(root, path);
    return;
  }
  if (!isContainer(root)) return;
  firstVisit(root);
  stack.push_back({root, 0, false});
  while (!stack.empty()) {
    Frame& f = stack.back();
    KeyRef key;
    const Value* c = child(f.v, f.next, key);
    if (!c) {
      const bool hasKey = f.hasKey;
      stack.pop_back();
      if (hasKey) path.pop_back();
      continue;
    }
    ++f.next;
    if (c->kind == K::Tensor) {
      if (firstVisit(c)) {
        pushKey(path, key);
        fn(c, path);
        path.pop_back();
      }
    } else if (isContainer(c) && firstVisit(c)) {
      pushKey(path, key);
      stack.push_back({c, 0, true});
    }
  }
}

}  // namespace

void walkTensors(const Value* root,
                 const std::function<void(const Value*, const TensorPath&)>& fn) {
  walkTensorsWith(root, [&fn](const Value* t, const TensorPath& path) { fn(t, path); });
}

void CheckpointFile::finish() {
  if (m_metadataOnly) {
    m_table = {};
    return;
  }
  // Number tensors in tree order and give each its first path. Tensors the
  // tree does not reach are dropped. The pickle normally creates them in
  // tree order already: then nothing moves.
  std::vector<uint32_t> order;  // order[new index] = index in creation order
  order.reserve(m_table.tensors.size());
  bool inOrder = true;
  walkTensorsWith(
      m_root,
      [&](const Value* t, TensorPath& path) {
        const auto created = uint32_t(t->index);
        m_table.tensors[created].path = path;
        inOrder = inOrder && created == order.size();
        const_cast<Value*>(t)->index = int64_t(order.size());
        order.push_back(created);
      },
      m_arena.size());
  if (!inOrder) {
    std::vector<TensorInfo> ordered;
    ordered.reserve(order.size());
    for (const uint32_t created : order) ordered.push_back(std::move(m_table.tensors[created]));
    m_table.tensors = std::move(ordered);
  } else {
    m_table.tensors.erase(m_table.tensors.begin() + ptrdiff_t(order.size()), m_table.tensors.end());
  }

  for (TensorInfo& t : m_table.tensors) {
    if (t.isMeta || t.storage < 0) continue;
    StorageInfo& s = m_table.storages[size_t(t.storage)];
    ++s.useCount;
    if (!s.error.empty()) {
      t.error = s.error;
      continue;
    }
    if (t.numel() == 0) continue;
    // The last element the tensor touches must lie inside its storage.
    uint64_t last = uint64_t(t.storageOffset), term = 0, endByte = 0;
    bool overflow = false;
    for (size_t d = 0; d < t.shape.size(); ++d)
      overflow |= mulOverflows(uint64_t(t.shape[d] - 1), uint64_t(t.stride[d]), &term) ||
                  addOverflows(last, term, &last);
    if (!overflow) endByte = dtypeBytesFor(t.dtype, last + 1);
    overflow |= endByte == UINT64_MAX;
    if (overflow || endByte > s.nbytes())
      t.error = "extent (storage offset " + std::to_string(t.storageOffset) + ", size " +
                t.shapeString() + ") needs " +
                (overflow ? std::string("an overflowing number of") : std::to_string(endByte)) +
                " bytes, storage " + s.key + " has " + std::to_string(s.nbytes());
  }
}

uint64_t CheckpointFile::fileSize() const {
  return m_shards ? m_shards->totalSize() : m_file->size();
}

ByteRegion CheckpointFile::storageBytes(size_t index) const {
  const StorageInfo& s = m_table.storages.at(index);
  if (m_shards) {
    // Logical tensor `index` is storage `index`; the tree may list it elsewhere.
    size_t tensor = 0;
    while (tensor < m_table.tensors.size() && m_table.tensors[tensor].storage != int(index))
      ++tensor;
    const TensorData data = tensorData(tensor);
    const uint64_t nbytes = data.info().nbytes();
    auto buffer = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<uint64_t>(nbytes, 1)]);
    const size_t es = size_t(dtypeSize(data.info().dtype));
    constexpr size_t kBlock = 1 << 20;
    for (uint64_t first = 0; first < data.numel();)
      first += data.readRaw(first, kBlock, buffer.get() + first * es);
    (void)s;
    return ByteRegion{std::shared_ptr<const void>(buffer, buffer.get()), buffer.get(), nbytes};
  }
  if (!s.error.empty()) fail(path() + ": storage " + s.key + ": " + s.error);
  try {
    if (m_zip) {
      if (s.zipEntry < 0) fail("record " + s.record + " is missing");
      const ZipEntry* e = &m_zip->entries()[size_t(s.zipEntry)];
      ByteRegion r = m_zip->bytes(*e, s.nbytes());
      r.size = std::min(r.size, s.nbytes());
      return r;
    }
    return m_file->map(s.dataOffset, s.nbytes());
  } catch (const FormatError& e) {
    throw FormatError(path() + ": storage " + s.key + ": " + e.what());
  }
}

TensorData CheckpointFile::tensorData(size_t i) const {
  const TensorInfo& t = m_table.tensors.at(i);
  const std::string where = path() + ": tensor " + joinPath(t.path);
  if (t.isMeta || t.storage < 0) fail(where + " is a meta tensor: it has no data");
  if (!t.error.empty()) fail(where + ": " + t.error);
  if (m_shards) {
    const LogicalTensor& lt = m_shards->tensors().at(size_t(t.storage));
    std::vector<Dims> offsets;
    std::vector<TensorData> chunks;
    try {
      for (const ShardChunk& c : lt.chunks) {
        const CheckpointFile* part = m_shards->chunkFile(c);
        if (!part) fail(m_shards->parts()[size_t(c.part)].file + " cannot be read");
        TensorData data = part->tensorData(size_t(c.tensor));
        if (c.sourceOffset != 0 || data.info().shape != c.sizes)
          data = data.run(uint64_t(c.sourceOffset), c.sizes);
        chunks.push_back(std::move(data));
        offsets.push_back(c.offsets);
      }
      return TensorData(t, std::move(offsets), std::move(chunks));
    } catch (const FormatError& e) {
      throw FormatError(where + ": " + e.what());
    }
  }
  const StorageInfo& s = m_table.storages[size_t(t.storage)];
  if (t.numel() == 0) return TensorData(t, ByteRegion{}, 0, m_bigEndian);
  uint64_t last = uint64_t(t.storageOffset);
  for (size_t d = 0; d < t.shape.size(); ++d)
    last += uint64_t(t.shape[d] - 1) * uint64_t(t.stride[d]);
  // Packed types (quint4x2) start the region at a byte boundary.
  const uint64_t per = uint64_t(dtypeElementsPerByte(t.dtype));
  const uint64_t first = uint64_t(t.storageOffset) - uint64_t(t.storageOffset) % per;
  const uint64_t begin = dtypeBytesFor(t.dtype, first);
  const uint64_t length = dtypeBytesFor(t.dtype, last + 1) - begin;
  try {
    if (m_zip) {
      if (s.zipEntry < 0) fail("record " + s.record + " is missing");
      const ZipEntry* e = &m_zip->entries()[size_t(s.zipEntry)];
      if (e->method == 0) {
        return TensorData(t, m_file->map(m_zip->dataOffset(*e) + begin, length), first,
                          m_bigEndian);
      }
      ByteRegion whole = m_zip->bytes(*e, s.nbytes());
      ByteRegion part{whole.owner, whole.data + begin, length};
      if (begin + length > whole.size)
        fail("record " + std::string(e->name) + " is shorter than the tensor's extent");
      return TensorData(t, part, first, m_bigEndian);
    }
    return TensorData(t, m_file->map(s.dataOffset + begin, length), first, m_bigEndian);
  } catch (const FormatError& e) {
    throw FormatError(where + ": " + e.what());
  }
}

std::vector<std::string> CheckpointFile::verify() const {
  std::vector<std::string> problems;
  if (m_shards) {
    for (size_t i = 0; i < m_shards->parts().size(); ++i) {
      const ShardPart& p = m_shards->parts()[i];
      if (!p.error.empty()) problems.push_back(p.error);
      if (const CheckpointFile* f = m_shards->partFile(int(i)))
        for (const std::string& q : f->verify()) problems.push_back(p.file + ": " + q);
    }
    for (const std::string& q : m_shards->verifyChunks()) problems.push_back(q);
  }
  if (m_zip)
    for (const ZipEntry& e : m_zip->entries())
      if (std::string p = m_zip->checkCrc(e); !p.empty()) problems.push_back(p);
  for (const StorageInfo& s : m_table.storages)
    if (!s.error.empty()) problems.push_back("storage " + s.key + ": " + s.error);
  for (const TensorInfo& t : m_table.tensors)
    if (!t.error.empty() && (t.storage < 0 || m_table.storages[size_t(t.storage)].error.empty()))
      problems.push_back("tensor " + joinPath(t.path) + ": " + t.error);
  return problems;
}

}  // namespace ckpt

namespace ckpt {

// The logical checkpoint as a state dict: name -> tensor, each its own
// storage (so nothing looks tied), the description's metadata beside them
// under "__metadata__" as safetensors keeps it.
void CheckpointFile::loadSharded(const ShardProbe& probe, const ReadOptions& options) {
  using K = Value::Kind;
  m_format = FileFormat::Sharded;
  m_shards = ShardSet::open(probe, options.metadataOnly);
  if (!probe.entry.empty()) {
    m_file = std::make_unique<InputFile>(probe.entry);
  } else {
    for (const ShardPart& p : m_shards->parts())
      if (p.present) {
        m_file = std::make_unique<InputFile>(p.path);
        break;
      }
    if (!m_file) fail("none of its files is present");
  }
  auto str = [this](std::string_view s) {
    Value* v = m_arena.make(K::Str);
    v->text = m_arena.copy(s);
    return v;
  };
  Value* root = m_arena.make(K::Dict);
  root->tag = Value::kOrderedDict;
  // Nested dicts along the writer's paths (DCP's planner data), made once each.
  std::map<std::vector<PathElement>, Value*> dicts;
  auto place = [&](const std::vector<PathElement>& path, const Value* leaf) {
    Value* at = root;
    std::vector<PathElement> prefix;
    for (size_t i = 0; i < path.size(); ++i) {
      Value* key = nullptr;
      if (const auto* s = std::get_if<std::string>(&path[i])) {
        key = str(*s);
      } else {
        key = m_arena.make(K::Int);
        key->integer = std::get<int64_t>(path[i]);
      }
      if (i + 1 == path.size()) {
        m_arena.append(at->entries, ValuePair{key, leaf});
        return;
      }
      prefix.push_back(path[i]);
      Value*& next = dicts[prefix];
      if (!next) {
        next = m_arena.make(K::Dict);
        m_arena.append(at->entries, ValuePair{key, next});
      }
      at = next;
    }
  };
  const std::vector<LogicalTensor>& logical = m_shards->tensors();
  for (size_t i = 0; i < logical.size(); ++i) {
    const LogicalTensor& lt = logical[i];
    TensorInfo info;
    info.dtype = lt.dtype;
    info.shape = lt.shape;
    info.stride = contiguousStrides(lt.shape.vec());
    info.storage = int(i);
    m_table.storages.push_back(storageOf(info, i));
    Value* t = m_arena.make(K::Tensor);
    t->index = int64_t(m_table.tensors.size());
    m_table.tensors.push_back(std::move(info));
    place(lt.path.empty() ? std::vector<PathElement>{lt.name} : lt.path, t);
  }
  // Items come from other files' arenas: copied into this one, so that walks
  // that mark nodes by their creation number see each node once.
  std::function<const Value*(const Value*, int)> copy = [&](const Value* v,
                                                            int depth) -> const Value* {
    if (!v) return nullptr;
    if (depth > 64 || v->kind == K::Tensor || v->kind == K::Storage)
      return str("(nested too deep)");
    Value* c = m_arena.make(v->kind);
    c->boolean = v->boolean;
    c->tag = v->tag;
    c->integer = v->integer;  // also `real` (the same bits)
    c->text = m_arena.copy(v->text);
    for (const Value* x : v->items) m_arena.append(c->items, copy(x, depth + 1));
    for (const Value* x : v->listItems) m_arena.append(c->listItems, copy(x, depth + 1));
    for (const auto& [k, x] : v->entries)
      m_arena.append(c->entries, ValuePair{copy(k, depth + 1), copy(x, depth + 1)});
    c->state = copy(v->state, depth + 1);
    return c;
  };
  for (const ShardSet::Item& item : m_shards->items()) place(item.path, copy(item.value, 0));
  if (!m_shards->metadata().empty()) {
    Value* meta = m_arena.make(K::Dict);
    for (const auto& [k, json] : m_shards->metadata()) {
      Value* v = nullptr;
      const auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
      if (doc.is_number_integer()) {
        v = m_arena.make(K::Int);
        v->integer = doc.get<int64_t>();
      } else if (doc.is_string()) {
        v = str(doc.get<std::string>());
      } else {
        v = str(json);
      }
      m_arena.append(meta->entries, ValuePair{str(k), v});
    }
    m_arena.append(root->entries, ValuePair{str("__metadata__"), meta});
  }
  m_root = root;
}

}  // namespace ckpt
