#include "ckpt/format/checkpoint_file.h"

#include <cstring>
#include <new>
#include <algorithm>
#include <chrono>
#include <utility>

#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/zip_archive.h"

namespace ckpt {

std::string_view formatName(FileFormat f) {
  switch (f) {
    case FileFormat::TorchZip: return "torch-zip";
    case FileFormat::TorchLegacy: return "torch-legacy";
    case FileFormat::Safetensors: return "safetensors";
    case FileFormat::Pickle: return "pickle";
  }
  return "?";
}

Sniff sniffFile(const InputFile& file) {
  static constexpr uint8_t kLegacy[] = {0x80, 0x02, 0x8A, 0x0A, 0x6C, 0xFC, 0x9C, 0x46, 0xF9, 0x20, 0x6A, 0xA8, 0x50, 0x19};
  uint8_t head[512] = {};
  const uint64_t n = std::min<uint64_t>(file.size(), sizeof head);
  if (n == 0) return Sniff::Unknown;
  file.read(0, n, head);
  if (n >= 4 && head[0] == 'P' && head[1] == 'K' && ((head[2] == 3 && head[3] == 4) || (head[2] == 5 && head[3] == 6)))
    return Sniff::Zip;
  if (n >= sizeof kLegacy && std::memcmp(head, kLegacy, sizeof kLegacy) == 0) return Sniff::TorchLegacy;
  if (n >= 262 && std::memcmp(head + 257, "ustar", 5) == 0) return Sniff::Tar;
  if (n >= 9 && head[8] == '{') {
    uint64_t len = 0;
    for (int i = 0; i < 8; ++i) len |= uint64_t(head[i]) << (8 * i);
    if (len >= 2 && len <= file.size() - 8) return Sniff::Safetensors;
  }
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
    return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
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

std::unique_ptr<CheckpointFile> CheckpointFile::open(const std::string& path, const ReadOptions& options) {
  std::unique_ptr<CheckpointFile> f(new CheckpointFile);
  f->m_metadataOnly = options.metadataOnly;
  if (options.phases) {
    *options.phases = {};
    f->m_phases = options.phases;
    f->lap(nullptr);
  }
  if (!options.metadataOnly) f->m_table = std::exchange(spareTables(), TensorTable{});
  try {
    f->m_file = std::make_unique<InputFile>(path);
    if (f->m_file->size() == 0) fail("empty file");
    const Sniff sniff = sniffFile(*f->m_file);
    f->lap(&OpenPhases::sniff);
    switch (sniff) {
      case Sniff::Zip: f->loadTorchZip(options); break;  // TorchScript archives are told apart inside
      case Sniff::TorchLegacy: f->loadTorchLegacy(options); break;
      case Sniff::Safetensors: f->loadSafetensors(options); break;
      case Sniff::Tar: fail("a tar-era PyTorch file (before 0.1.10) is not supported");
      case Sniff::Pickle: f->loadPlainPickle(options); break;
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
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw FormatError(path + ": out of memory while reading");
  } catch (const std::length_error&) {
    throw FormatError(path + ": a size in the file is too large");
  }
  return f;
}

void CheckpointFile::lap(double OpenPhases::*field) {
  if (!m_phases) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
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
    if (r.state) path.pushKey("__state__");
    else if (!r.key) path.pushIndex(r.index);
    else if (r.key->kind == K::Str) path.pushKey(r.key->text);
    else if (r.key->kind == K::Int) path.pushIndex(r.key->integer);
    else path.pushKey(shortRepr(r.key, 60));
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
    if (v->id >= seenIds.size()) seenIds.resize(std::max<size_t>(size_t(v->id) + 1, seenIds.size() * 2));
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

void walkTensors(const Value* root, const std::function<void(const Value*, const TensorPath&)>& fn) {
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
  walkTensorsWith(m_root, [&](const Value* t, TensorPath& path) {
    const auto created = uint32_t(t->index);
    m_table.tensors[created].path = path;
    inOrder = inOrder && created == order.size();
    const_cast<Value*>(t)->index = int64_t(order.size());
    order.push_back(created);
  }, m_arena.size());
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
      overflow |= mulOverflows(uint64_t(t.shape[d] - 1), uint64_t(t.stride[d]), &term) || addOverflows(last, term, &last);
    if (!overflow) endByte = dtypeBytesFor(t.dtype, last + 1);
    overflow |= endByte == UINT64_MAX;
    if (overflow || endByte > s.nbytes())
      t.error = "extent (storage offset " + std::to_string(t.storageOffset) + ", size " + t.shapeString() +
                ") needs " + (overflow ? std::string("an overflowing number of") : std::to_string(endByte)) +
                " bytes, storage " + s.key + " has " + std::to_string(s.nbytes());
  }
}

ByteRegion CheckpointFile::storageBytes(size_t index) const {
  const StorageInfo& s = m_table.storages.at(index);
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
  const StorageInfo& s = m_table.storages[size_t(t.storage)];
  if (t.numel() == 0) return TensorData(t, ByteRegion{}, 0, m_bigEndian);
  uint64_t last = uint64_t(t.storageOffset);
  for (size_t d = 0; d < t.shape.size(); ++d) last += uint64_t(t.shape[d] - 1) * uint64_t(t.stride[d]);
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
        return TensorData(t, m_file->map(m_zip->dataOffset(*e) + begin, length), first, m_bigEndian);
      }
      ByteRegion whole = m_zip->bytes(*e, s.nbytes());
      ByteRegion part{whole.owner, whole.data + begin, length};
      if (begin + length > whole.size) fail("record " + std::string(e->name) + " is shorter than the tensor's extent");
      return TensorData(t, part, first, m_bigEndian);
    }
    return TensorData(t, m_file->map(s.dataOffset + begin, length), first, m_bigEndian);
  } catch (const FormatError& e) {
    throw FormatError(where + ": " + e.what());
  }
}

std::vector<std::string> CheckpointFile::verify() const {
  std::vector<std::string> problems;
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
