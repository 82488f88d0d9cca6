#include "ckpt/index/metrics_cache.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_file.h"
#include "ckpt/index/wandb.h"
#include "crc32c.h"
#include "raw_bytes.h"

namespace ckpt {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'C', 'K', 'S', 'C', 'M', 'C', '\0', '\1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = 0x01020304;  // read back otherwise on a foreign host
// The bytes checksummed at the start of the file and before the byte reached.
constexpr uint64_t kProbe = 4096;
// A file changed this soon before it was read might change again without
// its size or time changing (timestamps are coarse): such an entry is
// never trusted on its stat alone.
constexpr int64_t kRacyNs = 2'000'000'000;

std::atomic<bool> g_disabled{false};
std::atomic<uint64_t> g_hits{0}, g_appended{0}, g_misses{0}, g_rejected{0}, g_bytes{0}, g_writes{0};

struct SourceStat {
  uint64_t size = 0;
  int64_t mtimeNs = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
};

bool statSource(const std::string& path, SourceStat& s) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  s.size = uint64_t(st.st_size);
  s.mtimeNs = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  s.inode = uint64_t(st.st_ino);
  s.device = uint64_t(st.st_dev);
  return true;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// CRC-32C of the file's bytes [from, to); nothing when they cannot be read.
std::optional<uint32_t> probeCrc(const std::string& path, uint64_t from, uint64_t to) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string buf(size_t(to - from), '\0');
  const ssize_t got = ::pread(fd, buf.data(), buf.size(), off_t(from));
  ::close(fd);
  if (got != ssize_t(buf.size())) return std::nullopt;
  return detail::crc32c(reinterpret_cast<const uint8_t*>(buf.data()), buf.size());
}

struct Probes {
  uint32_t head = 0, tail = 0;
};

std::optional<Probes> probes(const std::string& path, uint64_t end) {
  const auto head = probeCrc(path, 0, std::min(end, kProbe));
  const auto tail = probeCrc(path, end - std::min(end, kProbe), end);
  if (!head || !tail) return std::nullopt;
  return Probes{*head, *tail};
}

// What a cache file holds.
struct Entry {
  std::string path;
  SourceStat stat;
  int64_t readAtNs = 0;  // when the read that filled it began
  uint64_t end = 0;
  Probes probe;
  std::vector<std::string> problems;
  std::vector<FileSeries> series;
};

template <typename T>
void put(std::string& out, const T& v) {
  detail::putRaw(out, v);
}
using detail::putText;
template <typename T>
bool get(std::string_view& in, T& v) {
  return detail::getRaw(in, v);
}
using detail::getText;

// A cache file's parts around its payload: magic, version, byte order and
// the payload's size; the payload's CRC. Written as they are, not joined
// (a sweep's 1,000 files of 160 kB each were copied once more, into fresh
// pages, to add 4 bytes).
struct Encoded {
  std::string head, tail;
};

// `payload` is cleared first (a buffer kept for the next file: store()).
Encoded encode(const Entry& e, std::string& payload) {
  Encoded out;
  payload.clear();
  // Room for all of it: growing by doubling copies the points again and again.
  size_t room = e.path.size() + 128;
  for (const std::string& p : e.problems) room += p.size() + 8;
  for (const FileSeries& s : e.series)
    room += s.metric.size() + 8 * s.restarts.size() + s.points.bytes() + 256;
  payload.reserve(room);
  putText(payload, e.path);
  put(payload, e.stat.size);
  put(payload, e.stat.mtimeNs);
  put(payload, e.stat.inode);
  put(payload, e.stat.device);
  put(payload, e.readAtNs);
  put(payload, e.end);
  put(payload, e.probe.head);
  put(payload, e.probe.tail);
  put(payload, uint64_t(e.problems.size()));
  for (const std::string& p : e.problems) putText(payload, p);
  put(payload, uint64_t(e.series.size()));
  for (const FileSeries& s : e.series) {
    putText(payload, s.metric);
    put(payload, uint64_t(s.restarts.size()));
    for (int64_t r : s.restarts) put(payload, r);
    s.points.save(payload);
  }
  out.head.assign(kMagic, sizeof kMagic);
  put(out.head, kVersion);
  put(out.head, kByteOrder);
  put(out.head, uint64_t(payload.size()));
  put(out.tail, detail::crc32c(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
  return out;
}

// Nothing unless every byte checks out.
std::optional<Entry> decode(std::string_view in) {
  uint32_t version = 0, order = 0, crc = 0;
  uint64_t size = 0;
  if (in.size() < sizeof kMagic || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  in.remove_prefix(sizeof kMagic);
  if (!get(in, version) || version != kVersion || !get(in, order) || order != kByteOrder ||
      !get(in, size) || in.size() != size + sizeof crc)
    return std::nullopt;
  std::string_view payload = in.substr(0, size_t(size));
  in.remove_prefix(size_t(size));
  if (!get(in, crc) ||
      crc != detail::crc32c(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()))
    return std::nullopt;
  Entry e;
  uint64_t problems = 0, series = 0;
  if (!getText(payload, e.path) || !get(payload, e.stat.size) || !get(payload, e.stat.mtimeNs) ||
      !get(payload, e.stat.inode) || !get(payload, e.stat.device) || !get(payload, e.readAtNs) ||
      !get(payload, e.end) || e.end > e.stat.size || !get(payload, e.probe.head) ||
      !get(payload, e.probe.tail) || !get(payload, problems) || problems > payload.size())
    return std::nullopt;
  for (uint64_t i = 0; i < problems; ++i)
    if (!getText(payload, e.problems.emplace_back())) return std::nullopt;
  if (!get(payload, series) || series > payload.size()) return std::nullopt;
  // A point is at least a few bytes of its file: more than `end` is no
  // series of it (and would make a progression column claim billions).
  const size_t maxPoints = size_t(e.end);
  for (uint64_t i = 0; i < series; ++i) {
    FileSeries& s = e.series.emplace_back();
    uint64_t restarts = 0;
    if (!getText(payload, s.metric) || !get(payload, restarts) ||
        restarts > payload.size() / sizeof(int64_t))
      return std::nullopt;
    s.restarts.resize(size_t(restarts));
    for (int64_t& r : s.restarts)
      if (!get(payload, r)) return std::nullopt;
    if (!s.points.load(payload, maxPoints)) return std::nullopt;
  }
  if (!payload.empty()) return std::nullopt;
  return e;
}

// The whole cache file: one open, one fstat for its size, one read() into
// a buffer this thread keeps (already faulted in from the last file: fresh
// pages cost ~15 us each on a VM, a sweep's cache is 160 MB). The view is
// good until the thread's next call.
std::optional<std::string_view> slurp(const std::string& path) {
  static thread_local std::string buffer;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
    ::close(fd);
    return std::nullopt;
  }
  const size_t size = size_t(st.st_size);
  if (buffer.size() < size) buffer.resize(size);
  // A file that changed meanwhile fails the CRC (or the length it records).
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, buffer.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += size_t(n);
  }
  ::close(fd);
  if (got != size) return std::nullopt;
  return std::string_view(buffer.data(), size);
}

void store(const std::string& file, const Entry& e) {
  // The payload's buffer is kept for the thread's next file: writing into
  // fresh pages cost more than the copy (a cold sweep's 1,000 files).
  thread_local std::string payload;
  const Encoded parts = encode(e, payload);
  if (detail::writeCacheFile(file, {parts.head, payload, parts.tail})) ++g_writes;
  if (payload.capacity() > (size_t(16) << 20)) std::string().swap(payload);  // not kept that big
}

}  // namespace

MetricsCacheStats metricsCacheStats() {
  return {g_hits, g_appended, g_misses, g_rejected, g_bytes, g_writes};
}

void resetMetricsCacheStats() {
  for (auto* c : {&g_hits, &g_appended, &g_misses, &g_rejected, &g_bytes, &g_writes}) *c = 0;
}

std::string metricsCacheDir() {
  if (const char* d = std::getenv("CKPTSCOPE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "ckptscope" / "metrics").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "ckptscope" / "metrics").string();
  return {};
}

bool metricsCacheEnabled() {
  if (g_disabled) return false;
  const char* off = std::getenv("CKPTSCOPE_NO_CACHE");
  return !off || !*off || std::string_view(off) == "0";
}

void setMetricsCacheEnabled(bool enabled) {
  g_disabled = !enabled;
}

std::string metricsCacheFile(const std::string& sourcePath) {
  return detail::cacheFileIn(metricsCacheDir(), sourcePath);
}

namespace {

// A reader of one kind of appendable metrics file: the whole file, and what
// follows byte `offset` (an earlier read's end) point by point in file order.
using EmitPoint = std::function<void(std::string_view, const MetricPoint&)>;
struct AppendableReader {
  std::function<std::vector<FileSeries>(const std::string&, uint64_t*, std::vector<std::string>*)>
      whole;
  std::function<void(const std::string&, uint64_t, const EmitPoint&, uint64_t*,
                     std::vector<std::string>*)>
      from;
  // A problem the whole read named that an appended read can make untrue
  // (a last line still being written); dropped before reading on.
  std::function<bool(const std::string&)> stale;
};

std::vector<FileSeries> readCached(const std::string& path, const AppendableReader& reader,
                                   uint64_t* end, std::vector<std::string>* problems) {
  const std::string cacheFile = metricsCacheEnabled() ? metricsCacheFile(path) : std::string();
  SourceStat now;
  if (cacheFile.empty() || !statSource(path, now)) {
    uint64_t e = 0;
    auto series = reader.whole(path, &e, problems);
    g_bytes += e;
    if (end) *end = e;
    return series;
  }
  const std::string key = detail::absolutePath(path);
  const int64_t readAt = nowNs();
  std::optional<Entry> cached;
  if (const auto bytes = slurp(cacheFile)) {
    cached = decode(*bytes);
    if (cached && cached->path != key) cached.reset();  // another file's (a hash collision)
    if (!cached) ++g_rejected;
  }

  auto finish = [&](Entry& e) {
    if (problems) problems->insert(problems->end(), e.problems.begin(), e.problems.end());
    if (end) *end = e.end;
    return std::move(e.series);
  };

  if (cached && cached->stat.inode == now.inode && cached->stat.device == now.device) {
    Entry& e = *cached;
    const bool racy = e.stat.mtimeNs + kRacyNs > e.readAtNs;
    if (!racy && e.stat.size == now.size && e.stat.mtimeNs == now.mtimeNs) {
      ++g_hits;
      return finish(e);
    }
    // Grown: the bytes read before must still be there (checked where a
    // rewrite would most likely show: the first line and the last ones).
    const auto p = now.size > e.stat.size ? probes(path, e.end) : std::nullopt;
    if (p && p->head == e.probe.head && p->tail == e.probe.tail) {
      ++g_appended;
      uint64_t newEnd = e.end;
      if (reader.stale) std::erase_if(e.problems, reader.stale);
      reader.from(
          path, e.end,
          [&e](std::string_view metric, const MetricPoint& point) {
            auto it = std::find_if(e.series.begin(), e.series.end(),
                                   [&](const FileSeries& s) { return s.metric == metric; });
            if (it == e.series.end())
              it = e.series.insert(e.series.end(), FileSeries{std::string(metric), {}, {}});
            addInFileOrder(it->points, it->restarts, point);
          },
          &newEnd, &e.problems);
      g_bytes += newEnd - e.end;
      e.end = newEnd;
      e.stat = now;
      e.readAtNs = readAt;
      if (const auto q = probes(path, e.end)) {
        e.probe = *q;
        store(cacheFile, e);
      }
      return finish(e);
    }
  }

  ++g_misses;
  Entry e;
  e.path = key;
  e.stat = now;
  e.readAtNs = readAt;
  e.series = reader.whole(path, &e.end, &e.problems);
  g_bytes += e.end;
  // The file may have changed while it was read: stat again, and cache
  // only what was read from the file as it still is.
  SourceStat after;
  if (statSource(path, after) && after.size == now.size && after.mtimeNs == now.mtimeNs)
    if (const auto p = probes(path, e.end)) {
      e.probe = *p;
      store(cacheFile, e);
    }
  return finish(e);
}

}  // namespace

std::vector<FileSeries> readMetricsJsonlCached(const std::string& path, uint64_t* end,
                                               std::vector<std::string>* problems) {
  static const AppendableReader jsonl{
      [](const std::string& p, uint64_t* e, std::vector<std::string>* bad) {
        return readMetricsJsonlSeries(p, e, bad);
      },
      [](const std::string& p, uint64_t offset, const EmitPoint& emit, uint64_t* e,
         std::vector<std::string>* bad) { readMetricsJsonl(p, emit, offset, e, bad); },
      {}};
  return readCached(path, jsonl, end, problems);
}

std::vector<FileSeries> readWandbHistoryCached(const std::string& path, uint64_t* end,
                                               std::vector<std::string>* problems) {
  if (!isWandbHistoryJsonl(path)) return readWandbHistory(path, end, problems);
  static const AppendableReader history{
      [](const std::string& p, uint64_t* e, std::vector<std::string>* bad) {
        return readWandbHistory(p, e, bad);
      },
      [](const std::string& p, uint64_t offset, const EmitPoint& emit, uint64_t* e,
         std::vector<std::string>* bad) {
        for (const auto& [metric, point] : readWandbHistoryJsonl(p, offset, e, bad))
          emit(metric, point);
        // A read from an offset does not name a last line still cut short;
        // the whole read did, by its line number, which is not known here.
        std::error_code ec;
        if (const uintmax_t size = fs::file_size(p, ec); !ec && size > *e && bad)
          bad->push_back(p + ": byte " + std::to_string(*e) + ": " +
                         std::string(kWandbHistoryCutShort) + ", skipped");
      },
      [](const std::string& problem) {
        return problem.find(kWandbHistoryCutShort) != std::string::npos;
      }};
  std::vector<FileSeries> out = readCached(path, history, end, problems);
  // As a whole read gives them (a metric first seen in an appended row went last).
  std::sort(out.begin(), out.end(),
            [](const FileSeries& a, const FileSeries& b) { return a.metric < b.metric; });
  return out;
}

}  // namespace ckpt
