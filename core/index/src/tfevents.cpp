// TensorBoard event files: TFRecord framing (TensorBoard's record_writer.py),
// files read in blocks from any offset, and a folder's files merged as
// TensorBoard merges a run's. The records' Events: tfevent_decode.cpp.
#include "ckpt/index/tfevents.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/format/numeric.h"
#include "crc32c.h"
#include "tfevent_decode.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using detail::EventDecoder;
using detail::TagHash;

constexpr std::string_view kPrefix = "events.out.tfevents.";
// Bytes read at a time.
constexpr size_t kBlock = 4u << 20;
// A record longer than this is skipped unread: no scalar event comes close
// (TF1's merged summaries with images are a few MB), and the buffer stays bounded.
constexpr uint64_t kMaxRecord = 256ull << 20;
constexpr size_t kHeader = 12;  // u64 length + masked CRC of the length
constexpr size_t kFooter = 4;   // masked CRC of the data
// Event files looked at in one folder.
constexpr size_t kMaxFilesPerFolder = 10000;

// One kind of damage in a file: the first case and how many.
struct Damage {
  uint64_t count = 0;
  uint64_t first = 0;
  uint64_t bytes = 0;  // skipped by it
  std::string detail;  // of the first case
  void add(uint64_t offset, uint64_t skipped, std::string why = {}) {
    if (count++ == 0) {
      first = offset;
      detail = std::move(why);
    }
    bytes += skipped;
  }
};

class File {
 public:
  explicit File(const std::string& path) : m_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (m_fd >= 0) ::close(m_fd);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  [[nodiscard]] bool open() const { return m_fd >= 0; }
  [[nodiscard]] uint64_t size() const {
    struct stat st {};
    return ::fstat(m_fd, &st) == 0 ? uint64_t(st.st_size) : 0;
  }
  // Up to `n` bytes at `offset`; fewer at the end of the file.
  size_t read(uint64_t offset, uint8_t* out, size_t n) const {
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(m_fd, out + got, n - got, off_t(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += size_t(r);
    }
    return got;
  }

 private:
  int m_fd;
};

// The bytes of a file from some offset on, a block at a time: `need(n)`
// makes n bytes at `at` available unless the file ends first.
class Window {
 public:
  // `expected`: the bytes there are to read. A live run's few new bytes get
  // a small buffer (the Curves tab reads every followed file each second).
  Window(const File& file, uint64_t offset, uint64_t expected)
      : m_file(file), m_base(offset), m_buf(size_t(std::clamp<uint64_t>(expected, 64, kBlock))) {}
  bool need(size_t n) {
    if (m_have - m_at >= n) return true;
    if (m_at > 0) {  // the unread tail to the front
      std::memmove(m_buf.data(), m_buf.data() + m_at, m_have - m_at);
      m_base += m_at;
      m_have -= m_at;
      m_at = 0;
    }
    if (n > m_buf.size()) m_buf.resize(std::max(n, std::min(2 * m_buf.size(), kBlock)));
    while (m_have < n) {
      const size_t got = m_file.read(m_base + m_have, m_buf.data() + m_have, m_buf.size() - m_have);
      if (got == 0) return false;
      m_have += got;
    }
    return true;
  }
  [[nodiscard]] const uint8_t* data() const { return m_buf.data() + m_at; }
  [[nodiscard]] uint64_t offset() const { return m_base + m_at; }  // in the file
  void advance(size_t n) { m_at += n; }
  // Past bytes never looked at: the window starts over there.
  void seek(uint64_t offset) {
    m_base = offset;
    m_at = m_have = 0;
  }

 private:
  const File& m_file;
  uint64_t m_base;  // file offset of m_buf[0]
  std::vector<uint8_t> m_buf;
  size_t m_have = 0, m_at = 0;
};

bool headerChecks(const uint8_t* p) {
  return detail::maskCrc32c(detail::crc32c(p, 8)) == detail::loadLe32(p + 8);
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

void report(std::vector<std::string>* problems, const std::string& path, const Damage& d,
            const std::string& what) {
  if (!problems || d.count == 0) return;
  std::string line = path + ": byte " + std::to_string(d.first) + ": " + what;
  if (!d.detail.empty()) line += " (" + d.detail + ")";
  if (d.count > 1) line += "; " + std::to_string(d.count - 1) + " more like it";
  problems->push_back(std::move(line));
}

// Where the seconds of a file name's writer start end: 0 when there are none.
uint64_t nameSeconds(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return 0;
  name.remove_prefix(kPrefix.size());
  uint64_t seconds = 0;
  const auto r = std::from_chars(name.data(), name.data() + name.size(), seconds);
  return r.ec == std::errc() ? seconds : 0;
}

class PointList : public TfEventsHandler {
 public:
  void scalar(std::string_view tag, const MetricPoint& point) override {
    points.emplace_back(std::string(tag), point);
  }
  void sessionStart(int64_t step) override {
    MetricPoint p;
    p.step = step;
    points.emplace_back(std::string(kTfSessionStart), p);
  }
  std::vector<std::pair<std::string, MetricPoint>> points;
};

// A folder's tags while its files are read.
class FolderSeries : public TfEventsHandler {
 public:
  struct Tag {
    SeriesPoints points;
    std::vector<int64_t> restarts;
    std::vector<size_t> files;
  };
  size_t file = 0;  // index of the file being read

  void scalar(std::string_view tag, const MetricPoint& point) override {
    auto it = m_tags.find(tag);
    if (it == m_tags.end()) it = m_tags.emplace(std::string(tag), Tag{}).first;
    Tag& t = it->second;
    if (t.files.empty() || t.files.back() != file) t.files.push_back(file);
    addInFileOrder(t.points, t.restarts, point);
  }
  void sessionStart(int64_t step) override {
    for (auto& [name, t] : m_tags) dropFromStep(t.points, t.restarts, step);
  }
  std::unordered_map<std::string, Tag, TagHash, std::equal_to<>>& tags() { return m_tags; }

 private:
  std::unordered_map<std::string, Tag, TagHash, std::equal_to<>> m_tags;
};

}  // namespace

bool isTfEventsFileName(std::string_view fileName) {
  return fileName.size() > kPrefix.size() && fileName.substr(0, kPrefix.size()) == kPrefix;
}

std::vector<std::string> tfEventFilesIn(const std::string& dir) {
  return tfEventFilesIn(dir, listFolder(dir));
}

std::vector<std::string> tfEventFilesIn(const std::string& dir,
                                        const std::vector<FolderEntry>& entries) {
  std::vector<std::pair<uint64_t, std::string>> found;
  for (const FolderEntry& e : entries) {
    if (found.size() >= kMaxFilesPerFolder) break;
    if (!e.regular || !isTfEventsFileName(e.name)) continue;
    found.emplace_back(nameSeconds(e.name), (fs::path(dir) / e.name).string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::vector<std::string> tfEventFilesInSubfolders(const std::string& dir) {
  std::vector<std::pair<std::pair<uint64_t, std::string>, std::vector<std::string>>> folders;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (folders.size() >= kMaxFilesPerFolder) break;
    std::error_code fec;
    if (!it->is_directory(fec)) continue;
    std::vector<std::string> files = tfEventFilesIn(it->path().string());
    if (files.empty()) continue;
    const std::string first = fs::path(files.front()).filename().string();
    folders.push_back({{nameSeconds(first), first}, std::move(files)});
  }
  std::sort(folders.begin(), folders.end());
  std::vector<std::string> out;
  for (auto& f : folders) out.insert(out.end(), f.second.begin(), f.second.end());
  return out;
}

TfEventsRead readTfEvents(const std::string& path, TfEventsHandler& handler, uint64_t offset,
                          std::vector<std::string>* problems) {
  TfEventsRead result;
  result.end = offset;
  const File file(path);
  if (!file.open()) {
    if (problems) problems->push_back(path + ": cannot open: " + std::strerror(errno));
    return result;
  }
  const uint64_t size = file.size();
  if (offset > size) offset = result.end = 0;  // shorter than read before: rewritten
  Window w(file, offset, size - offset);
  EventDecoder decoder(handler);
  Damage badLength, badData, badEvent, oversized;
  for (;;) {
    if (!w.need(kHeader)) break;
    const uint64_t start = w.offset();
    if (!headerChecks(w.data())) {
      // The length cannot be trusted: the next whole header that checks out is the next record.
      uint64_t skipped = 0;
      bool found = false;
      for (;;) {
        w.advance(1);
        ++skipped;
        if (!w.need(kHeader)) break;
        if (headerChecks(w.data())) {
          found = true;
          break;
        }
      }
      badLength.add(start, skipped);
      ++result.records;
      ++result.badRecords;
      // Not found: up to the last bytes that could still begin a header once the file grows.
      result.end = w.offset();
      if (!found) break;
      continue;
    }
    const uint64_t length = detail::loadLe64(w.data());
    const uint64_t total = kHeader + length + kFooter;
    if (length > kMaxRecord) {
      if (length > size || start + total > size) break;  // not all there (yet)
      oversized.add(start, total, std::to_string(length) + " bytes");
      w.seek(start + total);
      ++result.records;
      result.end = start + total;
      continue;
    }
    if (!w.need(size_t(total))) break;
    const uint8_t* data = w.data() + kHeader;
    ++result.records;
    if (detail::maskCrc32c(detail::crc32c(data, size_t(length))) !=
        detail::loadLe32(data + length)) {
      badData.add(start, total);
      ++result.badRecords;
    } else {
      const char* why = "";
      size_t at = 0;
      if (!decoder.decode(data, size_t(length), &why, &at)) {
        badEvent.add(start, total,
                     std::string(why) + " at byte " + std::to_string(at) + " of the record");
        ++result.badRecords;
      }
    }
    w.advance(size_t(total));
    result.end = w.offset();
  }
  const uint64_t now = std::max(size, file.size());
  result.pendingBytes = now > result.end ? now - result.end : 0;
  report(problems, path, badLength,
         "a record length's checksum does not match: skipped to the next record that checks "
         "out (" +
             plural(badLength.bytes, "byte", "bytes") + " in all)");
  report(problems, path, badData, "a record's data checksum does not match: record skipped");
  report(problems, path, badEvent, "a record is no TensorBoard Event: skipped");
  report(problems, path, oversized, "a record over 256 MiB (no scalars): skipped unread");
  return result;
}

std::vector<std::pair<std::string, MetricPoint>> readTfEventsPoints(
    const std::string& path, uint64_t offset, uint64_t* end, std::vector<std::string>* problems) {
  PointList list;
  const TfEventsRead r = readTfEvents(path, list, offset, problems);
  if (end) *end = r.end;
  return std::move(list.points);
}

bool dropFromStep(SeriesPoints& points, std::vector<int64_t>& restarts, int64_t step) {
  const size_t from = points.lowerBound(step);
  if (from == points.size()) return false;
  points.truncate(from);
  restarts.push_back(step);
  return true;
}

std::vector<TfSeries> readTfEventsFolder(const std::vector<std::string>& files,
                                         std::map<std::string, uint64_t>* readEnds,
                                         std::vector<std::string>* problems) {
  FolderSeries series;
  for (size_t i = 0; i < files.size(); ++i) {
    series.file = i;
    const TfEventsRead r = readTfEvents(files[i], series, 0, problems);
    if (readEnds) (*readEnds)[files[i]] = r.end;
    if (r.pendingBytes && problems)
      problems->push_back(files[i] + ": byte " + std::to_string(r.end) + ": the last " +
                          plural(r.pendingBytes, "byte is", "bytes are") +
                          " not a whole record (still being written, or the file was cut)");
  }
  std::vector<TfSeries> out;
  for (auto& [tag, t] : series.tags()) {
    if (t.points.empty()) continue;
    TfSeries s;
    s.tag = tag;
    s.points = std::move(t.points);
    s.restarts = std::move(t.restarts);
    for (size_t f : t.files) s.files.push_back(files[f]);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const TfSeries& a, const TfSeries& b) { return a.tag < b.tag; });
  return out;
}

}  // namespace ckpt
