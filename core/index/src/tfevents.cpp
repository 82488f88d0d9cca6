// TensorBoard event files: TFRecord framing, Event / Summary / TensorProto
// decoding, and a folder's files merged as TensorBoard merges a run's.
// Field numbers from TensorBoard's tensorboard/compat/proto/{event,summary,
// tensor,tensor_shape,types}.proto; the framing from its record_writer.py.
#include "ckpt/index/tfevents.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "protowire.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using detail::ProtoReader;
using detail::WireType;

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

// Event, Summary, Summary.Value, SummaryMetadata, SessionLog, TensorProto,
// TensorShapeProto field numbers.
enum EventField : uint32_t { kWallTime = 1, kStep = 2, kSummary = 5, kSessionLog = 7 };
enum ValueField : uint32_t {
  kTag = 1,
  kSimpleValue = 2,
  kNodeName = 7,
  kTensor = 8,
  kMetadata = 9
};
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kMetadataPluginData = 1, kPluginName = 1;
constexpr uint32_t kSessionStatus = 1, kSessionStart = 1;
enum TensorField : uint32_t {
  kDtype = 1,
  kShape = 2,
  kContent = 4,
  kFloatVal = 5,
  kDoubleVal = 6,
  kIntVal = 7,
  kInt64Val = 10,
  kBoolVal = 11,
  kHalfVal = 13,
  kUint32Val = 16,
  kUint64Val = 17
};
constexpr uint32_t kShapeDim = 2, kShapeUnknownRank = 3;
// types.proto's DataType.
enum DType : uint64_t {
  kFloat = 1,
  kDouble = 2,
  kInt32 = 3,
  kUint8 = 4,
  kInt16 = 5,
  kInt8 = 6,
  kInt64 = 9,
  kBool = 10,
  kBfloat16 = 14,
  kUint16 = 17,
  kHalf = 19,
  kUint32 = 22,
  kUint64 = 23
};

uint64_t readLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t readLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

double halfToDouble(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v;
  if (exponent == 0)
    v = std::ldexp(double(mantissa), -24);
  else if (exponent == 31)
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(double(mantissa | 0x400), exponent - 25);
  return (h & 0x8000) ? -v : v;
}

double bfloat16ToDouble(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The bytes one element of `dtype` takes in tensor_content; 0 for a dtype
// that is no number.
size_t elementSize(uint64_t dtype) {
  switch (dtype) {
    case kBool:
    case kInt8:
    case kUint8:
      return 1;
    case kInt16:
    case kUint16:
    case kHalf:
    case kBfloat16:
      return 2;
    case kFloat:
    case kInt32:
    case kUint32:
      return 4;
    case kDouble:
    case kInt64:
    case kUint64:
      return 8;
    default:
      return 0;
  }
}

// One element of `dtype` from its little-endian bytes.
double fromContent(uint64_t dtype, const uint8_t* p) {
  switch (dtype) {
    case kBool:
      return *p ? 1 : 0;
    case kInt8:
      return double(int8_t(*p));
    case kUint8:
      return *p;
    case kInt16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case kUint16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case kHalf: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return halfToDouble(v);
    }
    case kBfloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bfloat16ToDouble(v);
    }
    case kFloat: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case kInt32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case kUint32:
      return readLe32(p);
    case kDouble: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case kInt64:
      return double(int64_t(readLe64(p)));
    case kUint64:
      return double(readLe64(p));
    default:
      return 0;
  }
}

// The first element of a repeated integer field, packed or not.
std::optional<uint64_t> firstVarint(ProtoReader& r) {
  if (r.wire() == WireType::Varint) return r.varint();
  if (r.wire() != WireType::Bytes) return r.skip(), std::nullopt;
  ProtoReader packed(r.bytes());
  if (r.failed()) return std::nullopt;
  const uint64_t v = packed.varint();
  if (packed.failed()) return std::nullopt;  // empty: no element
  return v;
}

enum class Scalar { Yes, No, Bad };

// A TensorProto's value when it is a rank-0 number. A tensor of another
// shape or dtype (a histogram, an image, text) is no scalar; a rank-0 number
// whose bytes do not fit its dtype is Bad.
Scalar tensorScalar(std::string_view bytes, double* out) {
  ProtoReader r(bytes);
  uint64_t dtype = 0;
  size_t rank = 0;
  bool unknownRank = false;
  std::string_view content;
  bool hasContent = false;
  std::optional<double> typed;  // the first element of the typed field of dtype, as read
  std::optional<uint64_t> intBits;
  uint32_t intField = 0;
  while (r.next()) {
    switch (r.field()) {
      case kDtype:
        if (r.wire() != WireType::Varint) return Scalar::Bad;
        dtype = r.varint();
        break;
      case kShape: {
        if (r.wire() != WireType::Bytes) return Scalar::Bad;
        ProtoReader shape(r.bytes());
        while (shape.next()) {
          if (shape.field() == kShapeDim)
            ++rank;
          else if (shape.field() == kShapeUnknownRank && shape.wire() == WireType::Varint)
            unknownRank = shape.varint() != 0;
          if (shape.field() != kShapeUnknownRank || shape.wire() != WireType::Varint) shape.skip();
        }
        if (shape.failed()) return Scalar::Bad;
        break;
      }
      case kContent:
        if (r.wire() != WireType::Bytes) return Scalar::Bad;
        content = r.bytes();
        hasContent = true;
        break;
      case kFloatVal:
        if (typed || r.wire() == WireType::Varint) {
          r.skip();
        } else if (r.wire() == WireType::Fixed32) {
          typed = double(r.float32());
        } else if (r.wire() == WireType::Bytes) {
          const std::string_view packed = r.bytes();
          if (packed.size() >= 4) typed = fromContent(kFloat, (const uint8_t*)packed.data());
        } else {
          r.skip();
        }
        break;
      case kDoubleVal:
        if (typed || r.wire() == WireType::Varint) {
          r.skip();
        } else if (r.wire() == WireType::Fixed64) {
          typed = r.float64();
        } else if (r.wire() == WireType::Bytes) {
          const std::string_view packed = r.bytes();
          if (packed.size() >= 8) typed = fromContent(kDouble, (const uint8_t*)packed.data());
        } else {
          r.skip();
        }
        break;
      case kIntVal:
      case kInt64Val:
      case kBoolVal:
      case kHalfVal:
      case kUint32Val:
      case kUint64Val:
        if (intBits) {
          r.skip();
        } else {
          intField = r.field();
          intBits = firstVarint(r);
        }
        break;
      default:
        r.skip();
    }
  }
  if (r.failed()) return Scalar::Bad;
  const size_t size = elementSize(dtype);
  if (rank != 0 || unknownRank || size == 0) return Scalar::No;
  if (hasContent && !content.empty()) {
    if (content.size() != size) return Scalar::Bad;
    *out = fromContent(dtype, reinterpret_cast<const uint8_t*>(content.data()));
    return Scalar::Yes;
  }
  // The typed field that belongs to dtype (tensor.proto says which).
  switch (dtype) {
    case kFloat:
    case kDouble:
      *out = typed.value_or(0);
      return Scalar::Yes;
    case kHalf:
    case kBfloat16:
      if (intBits && intField != kHalfVal) return Scalar::Bad;
      *out = dtype == kHalf ? halfToDouble(uint16_t(intBits.value_or(0)))
                            : bfloat16ToDouble(uint16_t(intBits.value_or(0)));
      return Scalar::Yes;
    default:
      break;
  }
  const uint64_t bits = intBits.value_or(0);
  switch (dtype) {
    case kInt32:
    case kInt16:
    case kInt8:
      *out = double(int32_t(uint32_t(bits)));  // int32 varints are sign-extended to 64 bits
      break;
    case kUint8:
    case kUint16:
    case kUint32:
      *out = double(uint32_t(bits));
      break;
    case kInt64:
      *out = double(int64_t(bits));
      break;
    case kUint64:
      *out = double(bits);
      break;
    case kBool:
      *out = bits ? 1 : 0;
      break;
    default:
      return Scalar::No;
  }
  // No element at all: TensorFlow fills the shape with zeros.
  return Scalar::Yes;
}

// Heterogeneous lookup: a tag from a record is found without a string made.
struct TagHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Decodes Event records. Remembers each tag's plugin (its first metadata
// names it; later values of the tag carry none): a rank-0 tensor of another
// plugin than "scalars" is not a scalar.
class EventDecoder {
 public:
  explicit EventDecoder(TfEventsHandler& handler) : m_handler(handler) {}

  // False (and `why`) when the record is no Event; nothing is reported then.
  bool decode(const uint8_t* data, size_t size, const char** why, size_t* at) {
    ProtoReader r(data, size);
    double wallTime = 0;
    int64_t step = 0;
    std::string_view summary;
    bool start = false;
    while (r.next()) {
      switch (r.field()) {
        case kWallTime:
          if (r.wire() == WireType::Fixed64)
            wallTime = r.float64();
          else
            r.skip();
          break;
        case kStep:
          if (r.wire() == WireType::Varint)
            step = int64_t(r.varint());
          else
            r.skip();
          break;
        case kSummary:
          if (r.wire() == WireType::Bytes)
            summary = r.bytes();
          else
            r.skip();
          break;
        case kSessionLog:
          if (r.wire() == WireType::Bytes) {
            ProtoReader s(r.bytes());
            while (s.next()) {
              if (s.field() == kSessionStatus && s.wire() == WireType::Varint)
                start = s.varint() == kSessionStart;
              else
                s.skip();
            }
            if (s.failed()) return failed(s, r.position(), why, at);
          } else {
            r.skip();
          }
          break;
        default:
          r.skip();
      }
    }
    if (r.failed()) return failed(r, r.position(), why, at);
    m_values.clear();
    if (!summary.empty() && !decodeSummary(summary, why)) {
      *at = size_t(reinterpret_cast<const uint8_t*>(summary.data()) - data);
      return false;
    }
    // Only a whole record reports anything.
    if (start) m_handler.sessionStart(step);
    MetricPoint p;
    p.step = step;
    p.wallTime = wallTime;
    for (const auto& [tag, value] : m_values) {
      p.value = value;
      m_handler.scalar(tag, p);
    }
    return true;
  }

 private:
  static bool failed(const ProtoReader& r, size_t position, const char** why, size_t* at) {
    *why = r.error();
    *at = position;
    return false;
  }

  bool decodeSummary(std::string_view bytes, const char** why) {
    ProtoReader r(bytes);
    while (r.next()) {
      if (r.field() != kSummaryValue || r.wire() != WireType::Bytes) {
        r.skip();
        continue;
      }
      if (!decodeValue(r.bytes(), why)) return false;
    }
    if (r.failed()) *why = r.error();
    return !r.failed();
  }

  bool decodeValue(std::string_view bytes, const char** why) {
    ProtoReader v(bytes);
    std::string_view tag, nodeName, tensor, metadata;
    std::optional<float> simple;
    bool hasTensor = false, hasMetadata = false;
    while (v.next()) {
      const auto f = v.field();
      if (f == kSimpleValue && v.wire() == WireType::Fixed32) {
        simple = v.float32();
      } else if (v.wire() != WireType::Bytes) {
        v.skip();
      } else if (f == kTag) {
        tag = v.bytes();
      } else if (f == kNodeName) {
        nodeName = v.bytes();
      } else if (f == kTensor) {
        tensor = v.bytes();
        hasTensor = true;
      } else if (f == kMetadata) {
        metadata = v.bytes();
        hasMetadata = true;
      } else {
        v.skip();
      }
    }
    if (v.failed()) {
      *why = v.error();
      return false;
    }
    const std::string_view name = tag.empty() ? nodeName : tag;
    if (name.empty()) return true;  // nothing to call it: TensorBoard drops it too
    if (hasMetadata && !m_seenMetadata.count(name)) {
      m_seenMetadata.emplace(name);
      std::string_view plugin;
      ProtoReader m(metadata);
      while (m.next()) {
        if (m.field() == kMetadataPluginData && m.wire() == WireType::Bytes) {
          ProtoReader pd(m.bytes());
          while (pd.next()) {
            if (pd.field() == kPluginName && pd.wire() == WireType::Bytes)
              plugin = pd.bytes();
            else
              pd.skip();
          }
        } else {
          m.skip();
        }
      }
      if (!plugin.empty() && plugin != "scalars") m_otherPlugin.emplace(name);
    }
    if (simple) {
      m_values.emplace_back(name, double(*simple));
    } else if (hasTensor && (m_otherPlugin.empty() || !m_otherPlugin.count(name))) {
      double value = 0;
      switch (tensorScalar(tensor, &value)) {
        case Scalar::Yes:
          m_values.emplace_back(name, value);
          break;
        case Scalar::No:
          break;
        case Scalar::Bad:
          *why = "a rank-0 tensor whose value does not fit its dtype";
          return false;
      }
    }
    return true;
  }

  TfEventsHandler& m_handler;
  std::vector<std::pair<std::string_view, double>> m_values;  // the record's, until it is whole
  std::unordered_set<std::string, TagHash, std::equal_to<>> m_seenMetadata;
  std::unordered_set<std::string, TagHash, std::equal_to<>> m_otherPlugin;
};

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
  Window(const File& file, uint64_t offset) : m_file(file), m_base(offset), m_buf(kBlock) {}
  bool need(size_t n) {
    if (m_have - m_at >= n) return true;
    if (m_at > 0) {  // the unread tail to the front
      std::memmove(m_buf.data(), m_buf.data() + m_at, m_have - m_at);
      m_base += m_at;
      m_have -= m_at;
      m_at = 0;
    }
    if (n > m_buf.size()) m_buf.resize(n);
    while (m_have < n) {
      const size_t got = m_file.read(m_base + m_have, m_buf.data() + m_have, m_buf.size() - m_have);
      if (got == 0) return false;
      m_have += got;
    }
    return true;
  }
  [[nodiscard]] const uint8_t* data() const { return m_buf.data() + m_at; }
  [[nodiscard]] uint64_t offset() const { return m_base + m_at; }  // in the file
  [[nodiscard]] size_t available() const { return m_have - m_at; }
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
  return detail::maskCrc32c(detail::crc32c(p, 8)) == readLe32(p + 8);
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
    std::vector<MetricPoint> points;
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
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (found.size() >= kMaxFilesPerFolder) break;
    const std::string name = it->path().filename().string();
    std::error_code fec;
    if (!isTfEventsFileName(name) || !it->is_regular_file(fec)) continue;
    found.emplace_back(nameSeconds(name), it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.second));
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
  Window w(file, offset);
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
    const uint64_t length = readLe64(w.data());
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
    if (detail::maskCrc32c(detail::crc32c(data, size_t(length))) != readLe32(data + length)) {
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

bool dropFromStep(std::vector<MetricPoint>& points, std::vector<int64_t>& restarts, int64_t step) {
  const auto from = std::lower_bound(points.begin(), points.end(), step,
                                     [](const MetricPoint& a, int64_t s) { return a.step < s; });
  if (from == points.end()) return false;
  points.erase(from, points.end());
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
