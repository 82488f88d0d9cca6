// Decoding a TensorBoard event file's records: Event, Summary.Value,
// SummaryMetadata, SessionLog and TensorProto, with field numbers from
// TensorBoard's tensorboard/compat/proto/{event,summary,tensor,tensor_shape,
// types}.proto.
#include "tfevent_decode.h"

#include <cstring>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ckpt/format/numeric.h"
#include "protowire.h"

namespace ckpt::detail {
namespace {

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
      return halfToFloat(v);
    }
    case kBfloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16ToFloat(v);
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
      return loadLe32(p);
    case kDouble: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case kInt64:
      return double(int64_t(loadLe64(p)));
    case kUint64:
      return double(loadLe64(p));
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
      *out = dtype == kHalf ? halfToFloat(uint16_t(intBits.value_or(0)))
                            : bf16ToFloat(uint16_t(intBits.value_or(0)));
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

// Decodes Event records. Remembers each tag's plugin (its first metadata
// names it; later values of the tag carry none): a rank-0 tensor of another
// plugin than "scalars" is not a scalar.
class Decoder {
 public:
  explicit Decoder(TfEventsHandler& handler) : m_handler(handler) {}

  // False (and `why`) when the record is no Event; nothing is reported then.
  bool decode(const uint8_t* data, size_t size, const char** why, size_t* at) {
    ProtoReader r(data, size);
    std::optional<double> wallTime;
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

}  // namespace

struct EventDecoder::State : Decoder {
  using Decoder::Decoder;
};

EventDecoder::EventDecoder(TfEventsHandler& handler) : m(std::make_unique<State>(handler)) {}
EventDecoder::~EventDecoder() = default;

bool EventDecoder::decode(const uint8_t* data, size_t size, const char** why, size_t* at) {
  return m->decode(data, size, why, at);
}

}  // namespace ckpt::detail
