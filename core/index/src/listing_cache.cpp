#include "ckpt/index/listing_cache.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_file.h"
#include "ckpt/format/file_stamp_of.h"
#include "ckpt/index/metrics_cache.h"
#include "crc32c.h"
#include "listing_identity.h"
#include "raw_bytes.h"

namespace ckpt {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'C', 'K', 'S', 'C', 'L', 'S', '\0', '\1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = 0x01020304;
// A file changed this soon before the listing began might change again
// without its size or times changing: it is not recorded.
constexpr int64_t kRacyNs = 2'000'000'000;

std::atomic<uint64_t> g_hits{0}, g_misses{0}, g_rejected{0}, g_writes{0}, g_stamped{0};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The sources entries are computed by (core/format and core/index, hashed
// at build time): another version may describe a file otherwise. The same
// in the app, the CLI and an agent built from one tree, so they share files.
std::string_view buildIdentity() {
  return CKPT_LISTING_SOURCES_SHA256;
}

template <typename T>
void put(std::string& out, const T& v) {
  detail::putRaw(out, v);
}
using detail::putText;
template <typename T>
void putOptional(std::string& out, const std::optional<T>& v) {
  put(out, uint8_t(v.has_value()));
  if (v) put(out, *v);
}
void putOptionalText(std::string& out, const std::optional<std::string>& v) {
  put(out, uint8_t(v.has_value()));
  if (v) putText(out, *v);
}

template <typename T>
bool get(std::string_view& in, T& v) {
  return detail::getRaw(in, v);
}
using detail::getText;
bool getView(std::string_view& in, std::string_view& s) {
  uint64_t n = 0;
  if (!get(in, n) || n > in.size()) return false;
  s = in.substr(0, size_t(n));
  in.remove_prefix(size_t(n));
  return true;
}
template <typename T>
bool getOptional(std::string_view& in, std::optional<T>& v) {
  uint8_t has = 0;
  if (!get(in, has) || has > 1) return false;
  if (!has) return true;
  T x{};
  if (!get(in, x)) return false;
  v = x;
  return true;
}
bool getOptionalText(std::string_view& in, std::optional<std::string>& v) {
  uint8_t has = 0;
  if (!get(in, has) || has > 1) return false;
  if (!has) return true;
  return getText(in, v.emplace());
}
// A count of things each at least `least` bytes long: no more than `in` holds.
bool getCount(std::string_view& in, uint64_t& n, size_t least) {
  return get(in, n) && n <= in.size() / least;
}

// Every field describeCheckpoint fills but `file` and `path` (the caller's),
// appended to `out`.
void encodeEntry(std::string& out, const CheckpointEntry& e) {
  putText(out, e.format);
  putOptional(out, e.step);
  put(out, uint8_t(e.kind));
  putOptional(out, e.loss);
  putOptionalText(out, e.runName);
  putOptionalText(out, e.stage);
  put(out, uint64_t(e.scalars.size()));
  for (const auto& [key, value] : e.scalars) {
    putText(out, key);
    put(out, value);
  }
  put(out, e.size);
  put(out, e.mtime);
  put(out, e.tensorBytes);
  put(out, e.optimizerBytes);
  putText(out, e.error);
  putText(out, e.verdict);
  put(out, uint64_t(e.offenders.size()));
  for (const std::string& o : e.offenders) putText(out, o);
  putText(out, e.safety);
  putText(out, e.sharded);
  putText(out, e.layout);
  put(out, int32_t(e.ranks));
  put(out, int32_t(e.shardFiles));
  put(out, int32_t(e.shardMissing));
  putText(out, e.trainer);
  put(out, uint64_t(e.parts.size()));
  for (const CheckpointPart& p : e.parts) {
    putText(out, p.role);
    putText(out, p.file);
    putText(out, p.path);
    put(out, p.size);
    putText(out, p.verdict);
  }
  putText(out, e.folder);
  put(out, uint8_t(e.best));
  putText(out, e.bestSource);
  put(out, uint64_t(e.recordedBest.size()));
  for (const CheckpointEntry::RecordedBest& r : e.recordedBest) {
    putText(out, r.path);
    putText(out, r.monitor);
    putText(out, r.mode);
    putOptional(out, r.score);
  }
  put(out, uint8_t(e.latest));
}

std::optional<CheckpointEntry> decodeEntry(std::string_view in) {
  CheckpointEntry e;
  uint8_t kind = 0, best = 0, latest = 0;
  uint64_t n = 0;
  int32_t ranks = 0, shardFiles = 0, shardMissing = 0;
  if (!getText(in, e.format) || !getOptional(in, e.step) || !get(in, kind) ||
      kind > uint8_t(CheckpointKind::Latest) || !getOptional(in, e.loss) ||
      !getOptionalText(in, e.runName) || !getOptionalText(in, e.stage) || !getCount(in, n, 16))
    return std::nullopt;
  e.kind = CheckpointKind(kind);
  for (uint64_t i = 0; i < n; ++i) {
    std::string key;
    double value = 0;
    if (!getText(in, key) || !get(in, value)) return std::nullopt;
    e.scalars.emplace(std::move(key), value);
  }
  if (!get(in, e.size) || !get(in, e.mtime) || !get(in, e.tensorBytes) ||
      !get(in, e.optimizerBytes) || !getText(in, e.error) || !getText(in, e.verdict) ||
      !getCount(in, n, 8))
    return std::nullopt;
  e.offenders.resize(size_t(n));
  for (std::string& o : e.offenders)
    if (!getText(in, o)) return std::nullopt;
  if (!getText(in, e.safety) || !getText(in, e.sharded) || !getText(in, e.layout) ||
      !get(in, ranks) || !get(in, shardFiles) || !get(in, shardMissing) ||
      !getText(in, e.trainer) || !getCount(in, n, 40))
    return std::nullopt;
  e.ranks = ranks;
  e.shardFiles = shardFiles;
  e.shardMissing = shardMissing;
  e.parts.resize(size_t(n));
  for (CheckpointPart& p : e.parts)
    if (!getText(in, p.role) || !getText(in, p.file) || !getText(in, p.path) || !get(in, p.size) ||
        !getText(in, p.verdict))
      return std::nullopt;
  if (!getText(in, e.folder) || !get(in, best) || best > 1 || !getText(in, e.bestSource) ||
      !getCount(in, n, 25))
    return std::nullopt;
  e.best = best != 0;
  e.recordedBest.resize(size_t(n));
  for (CheckpointEntry::RecordedBest& r : e.recordedBest)
    if (!getText(in, r.path) || !getText(in, r.monitor) || !getText(in, r.mode) ||
        !getOptional(in, r.score))
      return std::nullopt;
  if (!get(in, latest) || latest > 1 || !in.empty()) return std::nullopt;
  e.latest = latest != 0;
  return e;
}

// What a file says on its own, read whole: nothing else decides its entry.
bool keepable(const CheckpointEntry& e, const std::string& path) {
  if (!e.error.empty() || !e.sharded.empty() || !e.layout.empty() || !e.parts.empty() ||
      !e.folder.empty() || e.format.empty())
    return false;
  // A rank's file or a DCP part: its safety profile comes from its folder.
  const std::string name = fs::path(path).filename().string();
  return name.find("rank") == std::string::npos && !name.ends_with(".distcp");
}

}  // namespace

ListingCacheStats listingCacheStats() {
  return {g_hits, g_misses, g_rejected, g_writes, g_stamped};
}

void resetListingCacheStats() {
  for (auto* c : {&g_hits, &g_misses, &g_rejected, &g_writes, &g_stamped}) *c = 0;
}

std::string listingCacheDir() {
  if (const char* d = std::getenv("CKPTSCOPE_CACHE_DIR"); d && *d)
    return (fs::path(d) / "listings").string();
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "ckptscope" / "listings").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "ckptscope" / "listings").string();
  return {};
}

std::string listingCacheFile(const std::string& root) {
  return detail::cacheFileIn(listingCacheDir(), root);
}

std::unique_ptr<ListingCache> ListingCache::open(const std::string& root) {
  if (!metricsCacheEnabled()) return nullptr;
  std::string file = listingCacheFile(root);
  if (file.empty()) return nullptr;
  std::unique_ptr<ListingCache> cache(
      new ListingCache(detail::absolutePath(root), std::move(file)));
  cache->load();
  return cache;
}

ListingCache::ListingCache(std::string root, std::string file)
    : m_root(std::move(root)), m_file(std::move(file)), m_startNs(nowNs()) {}

ListingCache::~ListingCache() = default;

// The file: magic, version, byte order, then the payload's size, the
// payload and its CRC-32C. The payload: build, root, record count, then
// each record (path, stat, entry).
void ListingCache::load() {
  const int fd = ::open(m_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return;
  }
  m_loaded.resize(size_t(st.st_size));
  size_t got = 0;
  while (got < m_loaded.size()) {
    const ssize_t n = ::read(fd, m_loaded.data() + got, m_loaded.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += size_t(n);
  }
  ::close(fd);
  auto reject = [&] {
    ++g_rejected;
    m_records.clear();
    m_loaded.clear();
  };
  if (got != m_loaded.size()) return reject();
  std::string_view in(m_loaded);
  uint32_t version = 0, order = 0, crc = 0;
  uint64_t size = 0, count = 0;
  if (in.size() < sizeof kMagic || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0)
    return reject();
  in.remove_prefix(sizeof kMagic);
  if (!get(in, version) || version != kVersion || !get(in, order) || order != kByteOrder ||
      !get(in, size) || in.size() != size + sizeof crc)
    return reject();
  std::string_view payload = in.substr(0, size_t(size));
  in.remove_prefix(size_t(size));
  if (!get(in, crc) ||
      crc != detail::crc32c(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()))
    return reject();
  std::string_view build, root;
  if (!getView(payload, build) || build != buildIdentity() || !getView(payload, root) ||
      root != m_root || !getCount(payload, count, 56))
    return reject();
  m_records.reserve(size_t(count));
  for (uint64_t i = 0; i < count; ++i) {
    const char* begin = payload.data();
    Record r;
    if (!getView(payload, r.path) || !get(payload, r.stat.device) || !get(payload, r.stat.inode) ||
        !get(payload, r.stat.size) || !get(payload, r.stat.mtimeNs) ||
        !get(payload, r.stat.ctimeNs) || !getView(payload, r.entry))
      return reject();
    r.whole = std::string_view(begin, size_t(payload.data() - begin));
    m_records.push_back(r);
  }
  if (!payload.empty()) return reject();
}

const ListingCache::Record* ListingCache::find(size_t slot, std::string_view path) {
  if (slot < m_records.size() && m_records[slot].path == path) return &m_records[slot];
  // A file added or gone before it, or one not kept: every later slot
  // moved. Looked up by path from then on (the index is made once).
  std::call_once(m_indexOnce, [this] {
    m_index.reserve(m_records.size());
    for (size_t i = 0; i < m_records.size(); ++i) m_index.emplace(m_records[i].path, i);
  });
  const auto it = m_index.find(path);
  return it == m_index.end() ? nullptr : &m_records[it->second];
}

ListingCache::Folder::~Folder() {
  if (m_fd >= 0) ::close(m_fd);
}

void ListingCache::resize(size_t items) {
  m_slots.assign(items, std::string_view());
  m_read.assign(items, std::string());
}

namespace {

// stat(2) of `path`; with a held folder (`fd`, `held`: its path), by its
// name in its folder, which is opened when it is not the one held.
bool statFile(const std::string& path, int* fd, std::string* held, struct stat& st) {
  const size_t slash = path.rfind('/');
  if (!fd || slash == std::string::npos || slash == 0) return ::stat(path.c_str(), &st) == 0;
  const std::string_view dir(path.data(), slash);
  if (*fd < 0 || *held != dir) {
    if (*fd >= 0) ::close(*fd);
    held->assign(dir);
    *fd = ::open(held->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0) return ::stat(path.c_str(), &st) == 0;
  }
  return ::fstatat(*fd, path.c_str() + slash + 1, &st, 0) == 0;
}

}  // namespace

CheckpointEntry ListingCache::entry(size_t slot, const std::string& path, const std::string& file,
                                    const Read& read, Folder* folder, const FileStamp* stamped) {
  std::optional<FileStamp> stamp;
  if (slot >= m_slots.size()) {
    ++g_misses;
    return read(&stamp);
  }
  // A file with a record is stat'ed and taken from the cache when it is
  // what was recorded; one without is read at once (its open stamps it).
  if (const Record* r = find(slot, path)) {
    FileStamp now;
    if (stamped) {
      now = *stamped;
      ++g_stamped;
    } else {
      struct stat st {};
      if (!statFile(path, folder ? &folder->m_fd : nullptr, folder ? &folder->m_path : nullptr,
                    st) ||
          !S_ISREG(st.st_mode)) {
        ++g_misses;
        return read(&stamp);
      }
      now = fileStampOf(st);
    }
    if (r->stat == now)
      if (std::optional<CheckpointEntry> e = decodeEntry(r->entry)) {
        ++g_hits;
        m_slots[slot] = r->whole;
        e->path = path;
        e->file = file;
        return std::move(*e);
      }
  }
  ++g_misses;
  CheckpointEntry e = read(&stamp);
  // Recorded under the stamp of the open that read it, and only when
  // nothing changed the file in the last ticks before the listing.
  if (stamp && keepable(e, path) && stamp->ctimeNs < m_startNs - kRacyNs &&
      stamp->mtimeNs < m_startNs - kRacyNs) {
    // Made in place, in room enough for a small checkpoint's entry: a
    // record grown by doubling, and an entry encoded apart and copied in,
    // were a dozen allocations a file.
    std::string& out = m_read[slot];
    out.reserve(path.size() + 320);
    putText(out, path);
    put(out, stamp->device);
    put(out, stamp->inode);
    put(out, stamp->size);
    put(out, stamp->mtimeNs);
    put(out, stamp->ctimeNs);
    const size_t lengthAt = out.size();
    put(out, uint64_t(0));
    encodeEntry(out, e);
    const uint64_t length = out.size() - lengthAt - sizeof(uint64_t);
    std::memcpy(out.data() + lengthAt, &length, sizeof length);
    m_slots[slot] = out;
    m_changed = true;
  }
  return e;
}

void ListingCache::save() {
  uint64_t count = 0;
  size_t bytes = 0;
  for (const std::string_view s : m_slots)
    if (!s.empty()) {
      ++count;
      bytes += s.size();
    }
  // Unchanged: every record loaded was used as it was, none was added.
  if (!m_changed && count == m_records.size()) return;
  // The records are written where they lie (each file's, or the loaded
  // cache's bytes), not copied into one payload first: 50,000 small
  // checkpoints make 18 MB of records, fresh pages to fill.
  std::string prefix;
  putText(prefix, buildIdentity());
  putText(prefix, m_root);
  put(prefix, count);
  std::vector<std::string_view> parts;
  parts.reserve(size_t(count) + 3);
  std::string head(kMagic, sizeof kMagic), tail;
  put(head, kVersion);
  put(head, kByteOrder);
  put(head, uint64_t(prefix.size() + bytes));
  parts.push_back(head);
  parts.push_back(prefix);
  uint32_t crc = detail::crc32c(reinterpret_cast<const uint8_t*>(prefix.data()), prefix.size());
  for (const std::string_view s : m_slots)
    if (!s.empty()) {
      parts.push_back(s);
      crc = detail::crc32cExtend(crc, reinterpret_cast<const uint8_t*>(s.data()), s.size());
    }
  put(tail, crc);
  parts.push_back(tail);
  if (detail::writeCacheFile(m_file, parts)) ++g_writes;
}

}  // namespace ckpt
