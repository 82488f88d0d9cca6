// Writing torch zip files (FORMAT.md section 5): a temporary file in the
// target's directory, fsync, rename over the target, fsync the directory.
#include "ckpt/format/torch_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <random>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/utf8.h"

namespace ckpt {
namespace {

using K = Value::Kind;

std::string dirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
std::string baseOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// torch.save's archive folder: the file name without its last extension,
// "archive" when that is empty or not plain printable ASCII.
std::string archiveNameFor(const std::string& path, const std::string& requested) {
  auto plain = [](const std::string& s) {
    return !s.empty() && s.size() <= 200 && s != "." && s != ".." &&
           std::all_of(s.begin(), s.end(),
                       [](char c) { return c > 0x20 && c < 0x7F && c != '/' && c != '\\'; });
  };
  if (!requested.empty()) {
    if (!plain(requested))
      fail("archive name '" + requested.substr(0, 80) +
           "' must be printable ASCII without '/', '\\' or spaces");
    return requested;
  }
  std::string stem = baseOf(path);
  const size_t dot = stem.rfind('.');
  if (dot != std::string::npos) stem.resize(dot);
  return plain(stem) ? stem : "archive";
}

// The temporary file: buffered writes whose every failure throws with the
// final path, errno's text and what was being done; removed unless committed.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : m_path(path), m_dir(dirOf(path)) {
    const std::string base = baseOf(path);
    if (base.empty()) fail(m_path + ": not a file name");
    std::random_device rd;
    for (int attempt = 0;; ++attempt) {
      char suffix[64];
      std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%08x", long(::getpid()), unsigned(rd()));
      const size_t slash = path.rfind('/');
      m_temp = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "." +
               base + suffix;
      m_fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (m_fd >= 0) break;
      if (errno != EEXIST || attempt > 100) {
        const std::string temp = std::move(m_temp);
        m_temp.clear();  // not ours: never remove it
        sysFail("cannot create temporary file " + temp);
      }
    }
    m_buffer.reserve(kBufferSize);
  }
  ~OutputFile() { discard(); }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  [[nodiscard]] uint64_t position() const { return m_position; }

  void write(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    if (m_buffer.size() + n <= kBufferSize) {
      m_buffer.insert(m_buffer.end(), p, p + n);
    } else {
      flush();
      if (n >= kBufferSize)
        writeAll(p, n);
      else
        m_buffer.insert(m_buffer.end(), p, p + n);
    }
    m_position += n;
  }
  void write(std::string_view s) { write(s.data(), s.size()); }

  // Flush, fsync, close, rename over the target, fsync the directory.
  void commit() {
    flush();
    if (::fsync(m_fd) != 0) sysFail("cannot fsync " + m_temp);
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0) sysFail("cannot close " + m_temp);
    if (::rename(m_temp.c_str(), m_path.c_str()) != 0)
      sysFail("cannot rename " + m_temp + " to " + m_path);
    m_committed = true;
    // The rename is done: a failure to sync the directory is reported, but
    // the file is in place and stays.
    const int dfd = ::open(m_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) sysFail("wrote the file, but cannot open its directory " + m_dir + " to fsync it");
    const int rc = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    if (rc != 0 && err != EINVAL && err != EROFS) {
      errno = err;
      sysFail("wrote the file, but cannot fsync its directory " + m_dir);
    }
  }

  [[noreturn]] void sysFail(const std::string& what) {
    const int err = errno;
    discard();
    throw FormatError(m_path + ": " + what + ": " + std::strerror(err));
  }

  // Closes and removes the temporary file (unless committed).
  void discard() {
    if (m_fd >= 0) {
      ::close(m_fd);
      m_fd = -1;
    }
    if (!m_committed && !m_temp.empty()) {
      ::unlink(m_temp.c_str());
      m_temp.clear();
    }
  }

 private:
  static constexpr size_t kBufferSize = 1 << 20;

  void flush() {
    if (m_buffer.empty()) return;
    writeAll(m_buffer.data(), m_buffer.size());
    m_buffer.clear();
  }
  void writeAll(const uint8_t* p, size_t n) {
    while (n > 0) {
      const size_t chunk = std::min<size_t>(n, size_t(1) << 30);
      const ssize_t w = ::write(m_fd, p, chunk);
      if (w < 0) {
        if (errno == EINTR) continue;
        sysFail("cannot write " + m_temp);
      }
      if (w == 0) {  // no progress and no error: treat as a full disk
        errno = ENOSPC;
        sysFail("cannot write " + m_temp);
      }
      p += w;
      n -= size_t(w);
    }
  }
  std::string m_path, m_dir, m_temp;
  int m_fd = -1;
  bool m_committed = false;
  uint64_t m_position = 0;
  std::vector<uint8_t> m_buffer;
};

// A record's bytes: given (writeTorchFile) or fetched when the record is
// written (rewriteCheckpoint, so that at most one inflated record is in
// memory); byteswapped in chunks when `swapWidth` > 1.
struct RecordSource {
  const void* data = nullptr;
  uint64_t size = 0;
  std::function<ByteRegion()> fetch;
  int swapWidth = 0;
};

class ZipOut {
 public:
  explicit ZipOut(OutputFile& out) : m_out(out) {}

  void record(const std::string& name, const void* data, uint64_t size, int swapWidth = 0) {
    const uint64_t offset = m_out.position();
    m_out.write(writer::zip::localHeader(name, offset, size));
    uLong crc = crc32(0L, Z_NULL, 0);
    const auto* p = static_cast<const uint8_t*>(data);
    constexpr uint64_t kChunk = 4u << 20;
    for (uint64_t done = 0; done < size;) {
      const size_t n = size_t(std::min<uint64_t>(size - done, kChunk));
      const uint8_t* chunk = p + done;
      if (swapWidth > 1) {
        m_scratch.assign(chunk, chunk + n);
        for (size_t i = 0; i + size_t(swapWidth) <= n; i += size_t(swapWidth))
          std::reverse(m_scratch.begin() + long(i), m_scratch.begin() + long(i) + swapWidth);
        chunk = m_scratch.data();
      }
      crc = crc32(crc, chunk, uInt(n));
      m_out.write(chunk, n);
      done += n;
    }
    m_out.write(writer::zip::dataDescriptor(uint32_t(crc), size));
    m_central += writer::zip::centralHeader(name, offset, size, uint32_t(crc));
    ++m_count;
  }
  void record(const std::string& name, std::string_view text) {
    record(name, text.data(), text.size());
  }

  void finish() {
    const uint64_t cdOffset = m_out.position();
    m_out.write(m_central);
    m_out.write(writer::zip::endRecords(m_count, cdOffset, m_central.size()));
  }

 private:
  OutputFile& m_out;
  std::string m_central;
  uint64_t m_count = 0;
  std::vector<uint8_t> m_scratch;
};

// The whole file: pickle first (so every problem with the tree is found
// before a file exists), then the records.
void writeArchive(
    const std::string& path, const Value* root, const TensorTable& table,
    const std::function<RecordSource(const writer::PickledTree::UsedStorage&)>& sourceFor,
    const WriteOptions& options) {
  std::string archive;
  writer::PickledTree pickled;
  std::vector<RecordSource> sources;
  try {
    archive = archiveNameFor(path, options.archiveName);
    pickled = writer::pickleTree(root, table);
    sources.reserve(pickled.storages.size());
    for (const auto& u : pickled.storages) {
      sources.push_back(sourceFor(u));
      const RecordSource& src = sources.back();
      if (!src.fetch && src.size != u.nbytes)
        fail("storage " + table.storages[size_t(u.storage)].key + " has " +
             std::to_string(src.size) + " bytes, but its " + std::to_string(u.numel) + " " +
             std::string(dtypeName(u.dtype)) + " elements need " + std::to_string(u.nbytes));
      if (!src.fetch && src.size > 0 && !src.data)
        fail("storage " + table.storages[size_t(u.storage)].key + " has no data pointer");
    }
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }

  // Records in the order torch writes them, data/<key> sorted as strings.
  std::vector<size_t> order(pickled.storages.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return pickled.storages[a].key < pickled.storages[b].key; });

  OutputFile out(path);
  try {
    ZipOut zip(out);
    const std::string prefix = archive + "/";
    zip.record(prefix + "data.pkl", pickled.bytes);
    zip.record(prefix + "byteorder", "little");
    for (size_t i : order) {
      const auto& u = pickled.storages[i];
      RecordSource& src = sources[i];
      ByteRegion region;
      if (src.fetch) {
        region = src.fetch();
        if (region.size != u.nbytes)
          fail("storage " + table.storages[size_t(u.storage)].key + ": read " +
               std::to_string(region.size) + " bytes, expected " + std::to_string(u.nbytes));
        src.data = region.data;
        src.size = region.size;
      }
      zip.record(prefix + "data/" + u.key, src.data, src.size, src.swapWidth);
    }
    zip.record(prefix + "version", "3\n");
    zip.finish();
  } catch (const FormatError& e) {
    out.discard();  // (the destructor would too; other exceptions rely on it)
    if (std::string_view(e.what()).substr(0, path.size() + 2) == path + ": ") throw;
    throw FormatError(path + ": " + e.what());
  }
  out.commit();
}

}  // namespace

void writeTorchFile(const std::string& path, const Value* root, const TensorTable& table,
                    const std::vector<StorageBytes>& bytes, const WriteOptions& options) {
  if (bytes.size() != table.storages.size())
    throw FormatError(path + ": " + std::to_string(table.storages.size()) + " storages but " +
                      std::to_string(bytes.size()) + " byte ranges");
  writeArchive(
      path, root, table,
      [&](const writer::PickledTree::UsedStorage& u) {
        const StorageBytes& b = bytes[size_t(u.storage)];
        RecordSource s;
        s.data = b.data;
        s.size = b.size;
        return s;
      },
      options);
}

void writeTorchFileFetching(const std::string& path, const Value* root, const TensorTable& table,
                            const std::function<ByteRegion(size_t storage)>& fetch,
                            const WriteOptions& options) {
  writeArchive(
      path, root, table,
      [&](const writer::PickledTree::UsedStorage& u) {
        RecordSource src;
        src.size = u.nbytes;
        const size_t index = size_t(u.storage);
        src.fetch = [&fetch, index] { return fetch(index); };
        return src;
      },
      options);
}

namespace {

std::optional<std::string_view> safetensorsDtype(DType t) {
  switch (t) {
    case DType::Float64:
      return "F64";
    case DType::Float32:
      return "F32";
    case DType::Float16:
      return "F16";
    case DType::BFloat16:
      return "BF16";
    case DType::Int64:
      return "I64";
    case DType::Int32:
      return "I32";
    case DType::Int16:
      return "I16";
    case DType::Int8:
      return "I8";
    case DType::UInt8:
      return "U8";
    case DType::Bool:
      return "BOOL";
    case DType::UInt16:
      return "U16";
    case DType::UInt32:
      return "U32";
    case DType::UInt64:
      return "U64";
    case DType::Float8E4M3FN:
      return "F8_E4M3";
    case DType::Float8E5M2:
      return "F8_E5M2";
    default:
      return std::nullopt;
  }
}

}  // namespace

void writeSafetensorsFile(const std::string& path, const std::vector<SafetensorsEntry>& entries,
                          const std::vector<std::pair<std::string, std::string>>& metadata,
                          const std::function<ByteRegion(size_t entry)>& fetch) {
  // The header first, so that a tensor safetensors cannot hold is refused
  // before any file exists.
  std::string header = "{";
  // The header is UTF-8 JSON and its readers take names as text: a name
  // from a file that is not UTF-8 has no faithful spelling there (escaping
  // it would rename the tensor), so the file is refused, not written raw.
  auto jsonString = [&path](std::string_view s, const std::string& what) {
    if (const int64_t bad = utf8::firstInvalid(s); bad >= 0) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", unsigned(static_cast<unsigned char>(s[bad])));
      throw FormatError(path + ": " + what + " is not UTF-8 (byte " + byte + " at offset " +
                        std::to_string(bad) +
                        "), and a safetensors header is UTF-8 JSON: nothing written");
    }
    std::string out;
    utf8::appendJsonString(out, s);
    return out;
  };
  auto quoted = [](std::string_view s) { return "\"" + utf8::printable(s) + "\""; };
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i)
      header +=
          (i ? "," : "") +
          jsonString(metadata[i].first, "metadata key " + quoted(metadata[i].first)) + ":" +
          jsonString(metadata[i].second, "the value of metadata " + quoted(metadata[i].first));
    header += "}";
    first = false;
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const SafetensorsEntry& e : entries) {
    const std::string key = jsonString(e.name, "tensor name " + quoted(e.name));
    const auto name = safetensorsDtype(e.dtype);
    if (!name)
      throw FormatError(path + ": tensor " + e.name + ": safetensors has no dtype for " +
                        std::string(dtypeName(e.dtype)));
    uint64_t numel = 1;
    std::string shape = "[";
    for (size_t d = 0; d < e.shape.size(); ++d) {
      numel *= uint64_t(e.shape[d]);
      shape += (d ? "," : "") + std::to_string(e.shape[d]);
    }
    shape += "]";
    const uint64_t n = numel * uint64_t(dtypeSize(e.dtype));
    header += std::string(first ? "" : ",") + key + ":{\"dtype\":\"" + std::string(*name) +
              "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + n) + "]}";
    first = false;
    sizes.push_back(n);
    offset += n;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  OutputFile out(path);
  try {
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
    out.write(len, 8);
    out.write(header);
    for (size_t i = 0; i < entries.size(); ++i) {
      const ByteRegion r = fetch(i);
      if (r.size != sizes[i])
        fail("tensor " + entries[i].name + ": read " + std::to_string(r.size) +
             " bytes, expected " + std::to_string(sizes[i]));
      out.write(r.data, size_t(r.size));
    }
  } catch (const FormatError& e) {
    out.discard();
    if (std::string_view(e.what()).substr(0, path.size() + 2) == path + ": ") throw;
    throw FormatError(path + ": " + e.what());
  }
  out.commit();
}

void rewriteCheckpoint(const CheckpointFile& file, const std::string& path,
                       const WriteOptions& options) {
  TensorTable table;
  table.tensors = file.tensors();
  table.storages = file.storages();
  writeArchive(
      path, file.root(), table,
      [&](const writer::PickledTree::UsedStorage& u) {
        const StorageInfo& s = table.storages[size_t(u.storage)];
        if (!s.error.empty())
          fail("cannot rewrite " + file.path() + ": storage " + s.key + ": " + s.error);
        RecordSource src;
        src.size = u.nbytes;
        const size_t index = size_t(u.storage);
        src.fetch = [&file, index] { return file.storageBytes(index); };
        if (file.bigEndian()) {
          // Elements are swapped whole; complex numbers per component.
          const int width = dtypeSize(u.dtype);
          src.swapWidth = dtypeIsComplex(u.dtype) ? width / 2 : width;
        }
        return src;
      },
      options);
}

// ---- TreeBuilder -------------------------------------------------------------

Value* TreeBuilder::none() {
  return m_arena.make(K::None);
}

Value* TreeBuilder::boolean(bool b) {
  Value* v = m_arena.make(K::Bool);
  v->boolean = b;
  v->integer = b;
  return v;
}

Value* TreeBuilder::integer(int64_t i) {
  Value* v = m_arena.make(K::Int);
  v->integer = i;
  return v;
}

Value* TreeBuilder::real(double d) {
  Value* v = m_arena.make(K::Float);
  v->real = d;
  return v;
}

Value* TreeBuilder::textNode(Value::Kind kind, std::string_view text) {
  Value* v = m_arena.make(kind);
  v->text = m_arena.copy(text);
  return v;
}

Value* TreeBuilder::str(std::string_view s) {
  return textNode(K::Str, s);
}
Value* TreeBuilder::bytes(std::string_view s) {
  return textNode(K::Bytes, s);
}

Value* TreeBuilder::list() {
  return m_arena.make(K::List);
}

Value* TreeBuilder::tuple(std::initializer_list<const Value*> items) {
  Value* v = m_arena.make(K::Tuple);
  m_arena.assign(v->items, items.begin(), items.size());
  return v;
}

Value* TreeBuilder::dict() {
  return m_arena.make(K::Dict);
}

Value* TreeBuilder::orderedDict() {
  Value* v = m_arena.make(K::Dict);
  v->tag = Value::kOrderedDict;
  Value* state = dict();
  Value* meta = m_arena.make(K::Dict);
  meta->tag = Value::kOrderedDict;
  set(state, "_metadata", meta);
  v->state = state;
  return v;
}

Value* TreeBuilder::tensor(int64_t index) {
  Value* v = m_arena.make(K::Tensor);
  v->index = index;
  return v;
}

void TreeBuilder::set(Value* dict, std::string_view key, const Value* v) {
  if (!dict || dict->kind != K::Dict) throw FormatError("TreeBuilder::set: not a dict");
  for (size_t i = 0; i < dict->entries.size(); ++i) {
    const Value* k = dict->entries[i].first;
    if (k->kind == K::Str && k->text == key) {
      const_cast<ValuePair&>(dict->entries[i]).second = v;
      return;
    }
  }
  m_arena.append(dict->entries, ValuePair{str(key), v});
}

void TreeBuilder::set(Value* dict, int64_t key, const Value* v) {
  if (!dict || dict->kind != K::Dict) throw FormatError("TreeBuilder::set: not a dict");
  for (size_t i = 0; i < dict->entries.size(); ++i) {
    const Value* k = dict->entries[i].first;
    if (k->kind == K::Int && k->integer == key) {
      const_cast<ValuePair&>(dict->entries[i]).second = v;
      return;
    }
  }
  m_arena.append(dict->entries, ValuePair{integer(key), v});
}

void TreeBuilder::append(Value* list, const Value* v) {
  if (!list || (list->kind != K::List && list->kind != K::Tuple && list->kind != K::Set))
    throw FormatError("TreeBuilder::append: not a list, tuple or set");
  m_arena.append(list->items, v);
}

Value* TreeBuilder::bigInt(std::string_view decimal) {
  return textNode(K::BigInt, decimal);
}
Value* TreeBuilder::global(std::string_view qualifiedName) {
  return textNode(K::Global, qualifiedName);
}

Value* TreeBuilder::object(std::string_view cls, std::initializer_list<const Value*> args,
                           bool newObj) {
  Value* v = m_arena.make(K::Object);
  v->text = m_arena.copy(cls);
  v->tag = newObj ? Value::kMadeByNewObj : 0;
  m_arena.assign(v->items, args.begin(), args.size());
  return v;
}

}  // namespace ckpt
