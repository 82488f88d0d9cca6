// torch.save files: the zip format (PyTorch >= 1.6) and the legacy format.
#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/zip_archive.h"
#include "safety_walk.h"

namespace ckpt {
namespace {

using K = Value::Kind;

// torch's magic number, protocol version and sys_info pickles take about
// 100 to 250 bytes; a header that needs more than this is not torch's.
constexpr uint64_t kLegacyHeadBytes = 64 * 1024;
constexpr size_t kMaxKeyLength = 64;

bool validStorageKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyLength) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  });
}

// "0", "1", ... "412" (no sign, no leading zero, at most 9 digits) as a
// number; anything else is not one.
std::optional<size_t> decimalKey(std::string_view key) {
  if (key.empty() || key.size() > 9 || (key.size() > 1 && key[0] == '0')) return std::nullopt;
  size_t n = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + size_t(c - '0');
  }
  return n;
}

// Registers the storages that persistent ids name, one Storage node each.
// Zip ids are ('storage', cls, key, location, numel); legacy ids add
// view_metadata.
class StorageRegistry {
 public:
  StorageRegistry(ValueArena& arena, TensorTable& table, std::string recordPrefix, bool legacy)
      : m_arena(arena), m_table(table), m_prefix(std::move(recordPrefix)), m_legacy(legacy) {}

  const Value* load(const Value* pid) {
    if (m_legacy && pid->isStr() && pid->text.substr(0, 11) == "('storage',")
      fail("persistent id " + shortRepr(pid, 80) +
           " is text: torch.save with pickle protocol 0 writes the repr of the tuple, which "
           "torch.load cannot read back either");
    if (pid->kind != K::Tuple || pid->items.empty() || !pid->items[0]->isStr())
      fail("persistent id is not a tuple starting with a string: " + shortRepr(pid, 80));
    if (pid->items[0]->text != "storage")
      fail("persistent id of type '" + std::string(pid->items[0]->text.substr(0, 40)) +
           "' is not supported (only 'storage')");
    const size_t want = m_legacy ? 6 : 5;
    if (pid->items.size() < want)
      fail("storage persistent id has " + std::to_string(pid->items.size()) + " fields, expected " +
           std::to_string(want));
    const Value* cls = pid->items[1];
    const Value* key = pid->items[2];
    const Value* location = pid->items[3];
    const Value* numel = pid->items[4];
    if (cls->kind != K::Global) fail("storage type is not a class: " + shortRepr(cls, 60));
    // The class is one memoized node per type: look its dtype up once.
    if (cls != m_lastClass) {
      m_lastDtype = dtypeFromStorageClass(cls->text.substr(cls->text.rfind('.') + 1));
      m_lastClass = cls;
    }
    const auto dtype = m_lastDtype;
    if (!dtype) fail("unknown storage type " + cls->str());
    if (!key->isStr() || !validStorageKey(key->text))
      fail("invalid storage key " + shortRepr(key, 80) + " (expected a short alphanumeric name)");
    if (!location->isStr()) fail("storage location is not a string");
    if (!numel->isInt() || numel->integer < 0)
      fail("storage " + key->str() + ": invalid element count " + shortRepr(numel, 40));

    std::string_view storageKey = key->text;
    uint64_t viewOffset = 0;
    std::string_view viewOf;
    if (m_legacy && pid->items.size() > 5 && !pid->items[5]->isNone()) {
      // (view_key, offset, view_size): a view into storage `key`.
      const Value* vm = pid->items[5];
      if (!vm->isSequence() || vm->items.size() != 3 || !vm->items[0]->isStr() ||
          !vm->items[1]->isInt() || !vm->items[2]->isInt() || vm->items[1]->integer < 0 ||
          vm->items[2]->integer < 0 || !validStorageKey(vm->items[0]->text))
        fail("invalid storage view metadata " + shortRepr(vm, 80));
      viewOf = storageKey;
      storageKey = vm->items[0]->text;
      viewOffset = uint64_t(vm->items[1]->integer);
      ensure(viewOf, *dtype, uint64_t(numel->integer), location->text, "", 0);
      return node(ensure(storageKey, *dtype, uint64_t(vm->items[2]->integer), location->text,
                         viewOf, viewOffset));
    }
    return node(ensure(storageKey, *dtype, uint64_t(numel->integer), location->text, "", 0));
  }

  void reserve(size_t n) {
    m_dense.reserve(n);
    m_nodes.reserve(n);
  }

  struct View {
    int storage;
    std::string base;
    uint64_t offset;  // in elements
  };
  const std::vector<View>& views() const { return m_views; }
  std::optional<int> find(std::string_view key) const { return find(key, decimal(key)); }
  // `n`: decimal(key).
  std::optional<int> find(std::string_view key, std::optional<size_t> n) const {
    if (n && *n < m_dense.size()) return m_dense[*n];
    if (m_byKey.empty()) return std::nullopt;  // the usual case: no key torch would not write
    auto it = m_byKey.find(key);
    if (it == m_byKey.end()) return std::nullopt;
    return it->second;
  }

 private:
  // Keys are views of arena strings, which live as long as the file.
  int ensure(std::string_view key, DType dtype, uint64_t numel, std::string_view location,
             std::string_view viewOf, uint64_t viewOffset) {
    const auto n = decimal(key);
    if (const auto found = find(key, n)) {
      const StorageInfo& s = m_table.storages[size_t(*found)];
      if (s.dtype != dtype || s.numel != numel)
        fail("storage " + std::string(key) + " is described twice, differently (" +
             std::string(dtypeName(s.dtype)) + " x " + std::to_string(s.numel) + " vs " +
             std::string(dtypeName(dtype)) + " x " + std::to_string(numel) + ")");
      return *found;
    }
    const int index = int(m_table.storages.size());
    StorageInfo& s = m_table.storages.emplace_back();
    s.key = key;
    s.dtype = dtype;
    s.numel = numel;
    s.location = location;
    // torch numbers storages "0", "1", ... in order: index those directly.
    if (n && *n == m_dense.size())
      m_dense.push_back(index);
    else
      m_byKey.emplace(key, index);
    m_nodes.push_back(nullptr);
    if (!viewOf.empty()) m_views.push_back({index, std::string(viewOf), viewOffset});
    return index;
  }
  const Value* node(int index) {
    if (!m_nodes[size_t(index)]) {
      Value* v = m_arena.make(K::Storage);
      v->index = index;
      m_nodes[size_t(index)] = v;
    }
    return m_nodes[size_t(index)];
  }

  ValueArena& m_arena;
  TensorTable& m_table;
  std::string m_prefix;
  bool m_legacy;
  static std::optional<size_t> decimal(std::string_view key) { return decimalKey(key); }

  std::vector<int> m_dense;
  std::unordered_map<std::string_view, int> m_byKey;
  const Value* m_lastClass = nullptr;
  std::optional<DType> m_lastDtype;
  std::vector<const Value*> m_nodes;
  std::vector<View> m_views;
};

uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

void CheckpointFile::loadTorchZip(const ReadOptions& options) {
  m_format = FileFormat::TorchZip;
  m_zip = std::make_unique<ZipArchive>(*m_file);
  const auto& entries = m_zip->entries();
  if (entries.empty()) fail("empty zip archive: not a PyTorch checkpoint");
  const std::string first(entries.front().name);
  const size_t slash = first.find('/');
  if (slash == std::string::npos)
    fail("not a PyTorch archive: its first record '" + first.substr(0, 80) +
         "' is not inside a folder");
  m_zipRoot = first.substr(0, slash + 1);

  // One pass over the records finds the ones this reads by name and numbers
  // the storage records "<root>/data/<n>" (the first of equal names wins, as
  // in ZipArchive::find, which answers for any other name).
  const ZipEntry* constants = nullptr;
  const ZipEntry* pkl = nullptr;
  const ZipEntry* order = nullptr;
  std::vector<int32_t> dataRecords(entries.size(), -1);  // by n
  const std::string_view root = m_zipRoot;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string_view name = entries[i].name;
    if (name.size() <= root.size() || name.compare(0, root.size(), root) != 0) continue;
    const std::string_view rest = name.substr(root.size());
    auto firstOf = [&](const ZipEntry*& slot) {
      if (!slot) slot = &entries[i];
    };
    if (rest.size() > 5 && rest.compare(0, 5, "data/") == 0) {
      if (const auto n = decimalKey(rest.substr(5));
          n && *n < dataRecords.size() && dataRecords[*n] < 0)
        dataRecords[*n] = int32_t(i);
    } else if (rest == "data.pkl") {
      firstOf(pkl);
    } else if (rest == "constants.pkl") {
      firstOf(constants);
    } else if (rest == "byteorder") {
      firstOf(order);
    }
  }
  lap(&OpenPhases::directory);
  if (constants)
    fail(
        "a TorchScript archive (torch.jit.save) is not supported: it holds a program, not a "
        "checkpoint; "
        "save the model's state_dict with torch.save instead");
  if (!pkl) fail("not a PyTorch archive: no " + m_zipRoot + "data.pkl record");

  if (order) {
    const std::vector<uint8_t> b = m_zip->readAll(*order, 64);
    const std::string s(b.begin(), b.end());
    if (s == "big")
      m_bigEndian = true;
    else if (s != "little")
      fail("record " + std::string(order->name) + " says '" + s.substr(0, 20) +
           "', expected little or big");
  }

  // The pickle goes into the arena: the strings decoded from it view it there.
  if (pkl->size > options.maxPickleBytes)
    fail("zip record " + std::string(pkl->name) + " is " + std::to_string(pkl->size) +
         " bytes, over the limit of " + std::to_string(options.maxPickleBytes));
  const uint8_t* pickleData = nullptr;
  if (pkl->method == 0 && !(pkl->flags & 1) && pkl->compressedSize == pkl->size &&
      pkl->size <= m_file->size()) {
    uint8_t* buf = m_arena.allocateBytes(size_t(pkl->size + ZipArchive::localHeaderRoom(*pkl)));
    pickleData = m_zip->readStored(*pkl, options.maxPickleBytes, buf);
  } else {  // deflated (or broken): bytes() checks what it claims before anything is allocated for
            // it
    const ByteRegion r = m_zip->bytes(*pkl, options.maxPickleBytes);
    uint8_t* buf = m_arena.allocateBytes(size_t(r.size));
    if (r.size) std::memcpy(buf, r.data, size_t(r.size));
    pickleData = buf;
  }
  const std::string_view pickle(reinterpret_cast<const char*>(pickleData), size_t(pkl->size));
  lap(&OpenPhases::pickleRead);
  StorageRegistry registry(m_arena, m_table, m_zipRoot + "data/", /*legacy=*/false);
  PickleReader reader(m_arena, std::string(pkl->name), options.limits);
  reader.setBytesOutliveArena(true);
  if (m_safety) reader.setSafetyJudge(m_safety->judge(std::string(pkl->name), 0), m_safety->limits);
  // The safety verdict's other records: whatever else in the zip may hold
  // a pickle (this one was judged as it was read).
  auto scanOtherRecords = [&] {
    if (m_safety) scanZipRest(*m_zip, pkl, *m_safety);
  };
  if (options.metadataOnly) {
    Value* placeholder = m_arena.make(K::Storage);
    reader.setPersistentLoader([placeholder](const Value*) { return placeholder; });
    m_root = reader.parse(pickleData, pickle.size()).root;
    lap(&OpenPhases::parse);
    scanOtherRecords();
    return;
  }
  // A zip holds one record per storage, and a tensor takes at least a few
  // dozen pickle bytes: room for that many up front saves regrowing (and
  // moving) the tables while the pickle is read.
  const size_t expected = std::min<size_t>(entries.size(), pickle.size() / 32);
  m_table.storages.reserve(expected);
  m_table.tensors.reserve(expected);
  registry.reserve(expected);
  reader.setTensorTable(&m_table);
  reader.setPersistentLoader([&registry](const Value* pid) { return registry.load(pid); });
  m_root = reader.parse(pickleData, pickle.size()).root;
  lap(&OpenPhases::parse);
  scanOtherRecords();

  // A storage whose record is missing or short leaves the rest readable:
  // its tensors carry the error, and `verify` reports it.
  auto recordOf = [this](const StorageInfo& s) { return m_zipRoot + "data/" + s.key; };
  for (StorageInfo& s : m_table.storages) {
    const ZipEntry* e = nullptr;
    if (const auto n = decimalKey(s.key); n && *n < dataRecords.size() && dataRecords[*n] >= 0)
      e = &entries[size_t(dataRecords[*n])];
    else
      e = m_zip->find(recordOf(s));
    uint64_t need = 0;
    if (e) s.zipEntry = e - m_zip->entries().data();
    if (!e) {
      s.record = recordOf(s);
      s.error = "record " + s.record + " is missing";
    } else if (e->method != 0 && e->method != 8) {
      // Found now rather than when the bytes are first read: info and the
      // browser must not show a tensor as fine that no one can read.
      s.record = recordOf(s);
      s.error = "record " + s.record + " uses compression method " + std::to_string(e->method) +
                " (only stored and deflated records can be read)";
    } else if (mulOverflows(s.numel, uint64_t(dtypeSize(s.dtype)), &need)) {
      s.error =
          "storage " + s.key + " claims " + std::to_string(s.numel) + " elements: size overflows";
    } else if (e->size < need) {
      s.record = recordOf(s);
      s.error = "record " + s.record + " holds " + std::to_string(e->size) +
                " bytes, but storage " + s.key + " claims " + std::to_string(s.numel) + " x " +
                std::to_string(dtypeSize(s.dtype)) + " = " + std::to_string(need) + " bytes";
    }
  }
  lap(&OpenPhases::records);
}

void CheckpointFile::loadTorchLegacy(const ReadOptions& options) {
  m_format = FileFormat::TorchLegacy;
  const uint64_t size = m_file->size();
  // The pickles come first and their length is only known by parsing them:
  // map the file and let the page cache bring in just what the parser reads.
  const ByteRegion all = m_file->map(0, size);
  uint64_t pos = 0;
  auto next = [&](const char* what, PickleLimits limits, const PersistentLoader& loader) {
    PickleReader reader(m_arena, std::string("legacy ") + what + " pickle", limits);
    // After a walk that stopped where the scan stops, the scan examines
    // nothing more: neither does the reader's judge.
    if (m_safety && m_safety->stopMessage().empty())
      reader.setSafetyJudge(m_safety->judge(std::string("legacy ") + what + " pickle", pos),
                            m_safety->limits);
    if (loader) {
      reader.setPersistentLoader(loader);
      if (!options.metadataOnly) reader.setTensorTable(&m_table);
    }
    const PickleResult r = reader.parse(all.data + pos, size - pos, pos);
    if (m_safety) m_safety->stoppedInSequence();
    pos += r.end;
    return r.root;
  };
  // The magic number, protocol version and sys_info, by the sniff's rule;
  // the main pickle follows them.
  const LegacyHead legacy =
      readLegacyHead(all.data, std::min<uint64_t>(size, kLegacyHeadBytes), size);
  if (legacy.verdict == LegacyHead::Verdict::Damaged)
    fail("damaged torch legacy file: " + legacy.damage);
  if (legacy.verdict != LegacyHead::Verdict::Legacy || legacy.mainOffset == 0)
    fail(
        "not a torch legacy file: no magic number, protocol version and sys_info pickles in its "
        "first " +
        std::to_string(kLegacyHeadBytes) + " bytes");
  if (!legacy.littleEndian) fail("legacy file written on a big-endian machine: not supported");
  pos = legacy.mainOffset;
  // The safety verdict: the magic number, protocol and sys_info pickles
  // were read by the sniff's rule (readLegacyHead, no judge): scanned here.
  // Where the scan does not end them where the sniff did, it would judge
  // the rest from another place: the walk leaves the verdict to it.
  if (m_safety && scanSequenceRest(*m_file, /*legacy=*/true, 0, 0, 3, *m_safety) != pos)
    m_safety->deferred = true;

  StorageRegistry registry(m_arena, m_table, "", /*legacy=*/true);
  if (options.metadataOnly) {
    Value* placeholder = m_arena.make(K::Storage);
    m_root = next("main", options.limits, [placeholder](const Value*) { return placeholder; });
    // The storage keys pickle, not read here: scanned.
    if (m_safety && m_safety->stopMessage().empty())
      scanSequenceRest(*m_file, /*legacy=*/true, 4, pos, 5, *m_safety);
    return;
  }
  m_root =
      next("main", options.limits, [&registry](const Value* pid) { return registry.load(pid); });
  const Value* keys = next("storage keys", options.limits, {});
  if (keys->kind != K::List)
    fail("legacy file: storage key list is a " + std::string(kindName(keys->kind)));

  // Then, for each key in that order: int64 element count, then the bytes.
  std::string truncated;
  for (const Value* k : keys->items) {
    if (!k->isStr()) fail("legacy file: storage key is not a string");
    const auto idx = registry.find(k->text);
    if (!idx)
      fail("legacy file lists storage '" + std::string(k->text.substr(0, 40)) +
           "' that no tensor uses");
    StorageInfo& s = m_table.storages[size_t(*idx)];
    if (!truncated.empty()) {
      s.error = truncated;
      continue;
    }
    if (size - pos < 8) {
      truncated = "truncated: storage " + s.key + " header at offset " + std::to_string(pos) +
                  " lies past the end of the file";
      s.error = truncated;
      continue;
    }
    const uint64_t count = le64(all.data + pos);
    uint64_t nbytes = 0, end = 0;
    if (mulOverflows(count, uint64_t(dtypeSize(s.dtype)), &nbytes) ||
        addOverflows(pos + 8, nbytes, &end) || end > size) {
      truncated = "truncated: storage " + s.key + " claims " + std::to_string(count) +
                  " elements at offset " + std::to_string(pos) + ", past the end of the file (" +
                  std::to_string(size) + " bytes)";
      s.error = truncated;
      continue;
    }
    if (count != s.numel)
      s.error = "storage " + s.key + " holds " + std::to_string(count) +
                " elements, the pickle says " + std::to_string(s.numel);
    s.dataOffset = pos + 8;
    s.dataOffsetKnown = true;
    pos = end;
  }
  for (const auto& view : registry.views()) {
    StorageInfo& v = m_table.storages[size_t(view.storage)];
    const auto base = registry.find(view.base);
    const StorageInfo& b = m_table.storages[size_t(*base)];
    v.error = b.error;
    if (!b.error.empty()) continue;
    if (view.offset + v.numel > b.numel) {
      v.error = "storage view " + v.key + " extends past its base storage " + b.key;
      continue;
    }
    v.dataOffset = b.dataOffset + view.offset * uint64_t(dtypeSize(b.dtype));
    v.dataOffsetKnown = true;
  }
  for (StorageInfo& s : m_table.storages)
    if (!s.dataOffsetKnown && s.error.empty())
      s.error = "storage " + s.key + " has no data in the file";
}

// A plain pickle file: the whole file is one pickle. Torch's rebuild calls
// stay opaque objects (a plain pickle has no storages to point at); a
// persistent id names data outside the file and is an error.
void CheckpointFile::loadPlainPickle(const ReadOptions& options) {
  m_format = FileFormat::Pickle;
  const uint64_t size = m_file->size();
  if (size > options.maxPickleBytes)
    fail("a pickle of " + std::to_string(size) + " bytes is over the limit of " +
         std::to_string(options.maxPickleBytes));
  uint8_t* buf = m_arena.allocateBytes(size_t(size));
  m_file->read(0, size, buf);
  PickleReader reader(m_arena, "pickle", options.limits);
  reader.setBytesOutliveArena(true);
  reader.setPersistentLoader([](const Value* pid) -> const Value* {
    fail("persistent id " + shortRepr(pid, 60) +
         " in a plain pickle: it names data outside the file");
  });
  if (m_safety) reader.setSafetyJudge(m_safety->judge("pickle 1", 0), m_safety->limits);
  const PickleResult r = reader.parse(buf, size);
  // A legacy file whose magic number pickle is longer than the sniff reads.
  if (const std::string damage = legacyMagicReplaced(buf, size, r.end, r.root); !damage.empty())
    fail("damaged torch legacy file: " + damage);
  m_root = r.root;
  // Python's pickle.load stops after the first; a scan looks at up to four
  // more written back to back (a legacy file's protocol pickle among them).
  if (m_safety && !m_safety->stoppedInSequence())
    scanSequenceRest(*m_file, /*legacy=*/false, 1, r.end, 5, *m_safety);
}

}  // namespace ckpt
