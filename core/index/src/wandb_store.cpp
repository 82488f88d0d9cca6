// A W&B run's .wandb transaction log: its LevelDB-log framing, the Record
// protobufs in it, and the history rows among them (wandb.h). Also the
// run's wandb-summary.json, whose values are the same JSON.
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>

#include "ckpt/index/wandb.h"
#include "protowire.h"
#include "python_json.h"
#include "wandb_values.h"

namespace ckpt {
namespace {

// wandb/sdk/internal/datastore.py: LEVELDBLOG_BLOCK_LEN, _HEADER_LEN, the
// chunk types, and the file header's ident, magic and version.
constexpr uint64_t kBlock = 32768;
constexpr uint64_t kChunkHeader = 7;
constexpr uint64_t kFileHeader = 7;
constexpr uint8_t kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4;
constexpr std::string_view kIdent = ":W&B";
constexpr uint16_t kMagic = 0xBEE1;
constexpr uint8_t kVersion = 0;

// A record bigger than this is damage, not a record (wandb's biggest are
// artifact manifests, and those past 2 GiB go to a file of their own).
constexpr uint64_t kMaxRecord = 256ull << 20;
// A summary file bigger than this is not one.
constexpr uint64_t kMaxSummaryBytes = 64ull << 20;
// JSON values nested deeper than this are one value no curve reads.
constexpr int kMaxValueDepth = 16;

// wandb_internal.proto field numbers.
constexpr uint32_t kRecordHistory = 2, kRecordRun = 17;
constexpr uint32_t kHistoryItem = 1, kHistoryStep = 2, kHistoryStepNum = 1;
constexpr uint32_t kItemKey = 1, kItemNestedKey = 2, kItemValueJson = 16;
constexpr uint32_t kRunId = 1, kRunEntity = 2, kRunProject = 3, kRunDisplayName = 8,
                   kRunStartTime = 17;
constexpr uint32_t kTimestampSeconds = 1, kTimestampNanos = 2;

uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// zlib.crc32(data, zlib.crc32(type)) as datastore.py computes it: the
// CRC-32 of the type byte followed by the data.
uint32_t chunkCrc(const uint8_t* typeAndData, size_t size) {
  return uint32_t(crc32(0L, typeAndData, uInt(size)));
}

// One kind of damage: how often, and the byte of the first.
struct Damage {
  uint64_t count = 0;
  uint64_t first = 0;
  void note(uint64_t at) {
    if (count++ == 0) first = at;
  }
};

}  // namespace

WandbStoreRead readWandbStore(const std::string& path, uint64_t offset,
                              const std::function<void(std::string_view, uint64_t)>& record,
                              std::vector<std::string>* problems, uint64_t maxRecords) {
  WandbStoreRead r;
  r.end = offset;
  auto problem = [&](const std::string& why) {
    if (problems) problems->push_back(path + ": " + why);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    problem("cannot be opened");
    return r;
  }
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(std::max<std::streamoff>(0, in.tellg()));
  if (offset > size) offset = 0;  // rewritten: read again from the start
  uint8_t h[kFileHeader] = {};
  if (size >= kFileHeader) {
    in.seekg(0);
    in.read(reinterpret_cast<char*>(h), kFileHeader);
  }
  const bool ours = size >= kFileHeader && std::memcmp(h, kIdent.data(), kIdent.size()) == 0 &&
                    uint16_t(h[4] | h[5] << 8) == kMagic;
  if (offset > 0) {
    // A later read of a file the first read found unreadable (it said so
    // then): nothing, silently, so that following it repeats nothing.
    if (!ours || h[6] != kVersion) {
      r.unreadable = true;
      return r;
    }
  } else {
    if (size < kFileHeader) return r;  // nothing written yet
    if (!ours) {
      problem("not a W&B transaction log (no \":W&B\" header with magic 0xBEE1)");
      r.unreadable = true;
      r.end = size;
      return r;
    }
    if (h[6] != kVersion) {
      problem("W&B store version " + std::to_string(h[6]) +
              " is not one this reader knows: the history needs `wandb sync` (the run's "
              "config, summary and console output are shown)");
      r.unreadable = true;
      r.end = size;
      return r;
    }
    offset = kFileHeader;
    r.end = offset;
  }

  Damage badCrc, badFraming, lostPartial;
  std::vector<uint8_t> block(kBlock);
  uint64_t blockStart = offset - offset % kBlock;
  size_t blockLen = 0;
  auto load = [&](uint64_t start) {
    blockStart = start;
    blockLen = start >= size ? 0 : size_t(std::min<uint64_t>(kBlock, size - start));
    in.clear();
    in.seekg(std::streamoff(start));
    in.read(reinterpret_cast<char*>(block.data()), std::streamsize(blockLen));
    blockLen = size_t(in.gcount());
  };
  load(blockStart);

  std::string pending;  // a FIRST chunk's data and its MIDDLEs so far
  uint64_t pendingStart = 0;
  bool inRecord = false;
  bool dropping = false;  // the chunks left of a record already counted as lost
  uint64_t pos = offset;
  auto dropPending = [&](uint64_t at) {
    if (inRecord) lostPartial.note(at);
    inRecord = false;
    pending.clear();
  };
  auto nextBlock = [&] {
    pos = blockStart + kBlock;
    load(pos);
  };
  while (r.records < maxRecords) {
    const uint64_t inBlock = pos - blockStart;
    if (inBlock + kChunkHeader > kBlock) {
      // The block's zero trailer: the next chunk begins the next block.
      if (blockStart + kBlock >= size) break;
      nextBlock();
      if (!inRecord) r.end = pos;
      continue;
    }
    if (inBlock + kChunkHeader > blockLen) break;  // the header is not all written yet
    const uint8_t* h = block.data() + inBlock;
    const uint32_t crc = le32(h);
    const uint64_t length = uint64_t(h[4] | h[5] << 8);
    const uint8_t type = h[6];
    if (crc == 0 && length == 0 && type == 0 &&
        std::all_of(h, static_cast<const uint8_t*>(block.data() + blockLen),
                    [](uint8_t b) { return b == 0; }) &&
        blockStart + blockLen >= size)
      break;  // zeros to the end: space not written yet
    if (type < kFull || type > kLast || inBlock + kChunkHeader + length > kBlock) {
      // The header itself is damaged: its length cannot be trusted, so
      // reading goes on at the next block (as LevelDB's reader does).
      badFraming.note(pos);
      dropPending(pos);
      dropping = true;
      if (blockStart + kBlock >= size) {
        pos = size;
        r.end = pos;
        break;
      }
      nextBlock();
      r.end = pos;
      continue;
    }
    if (inBlock + kChunkHeader + length > blockLen) break;  // the data is not all written yet
    const uint8_t* data = h + kChunkHeader;
    if (chunkCrc(h + 6, size_t(length) + 1) != crc) {
      badCrc.note(pos);
      dropPending(pos);
      dropping = true;
      pos += kChunkHeader + length;
      r.end = pos;
      continue;
    }
    const std::string_view bytes(reinterpret_cast<const char*>(data), size_t(length));
    if (type == kFull || type == kFirst) {
      dropPending(pos);
      dropping = false;
    }
    if (type == kFull) {
      ++r.records;
      record(bytes, pos);
    } else if (type == kFirst) {
      pending.assign(bytes);
      pendingStart = pos;
      inRecord = true;
    } else if (!inRecord) {
      // A MIDDLE or LAST whose FIRST was not read: its record is lost.
      if (!dropping) badFraming.note(pos);
      dropping = true;
    } else if (pending.size() + length > kMaxRecord) {
      dropPending(pos);
      dropping = true;
    } else {
      pending.append(bytes);
      if (type == kLast) {
        inRecord = false;
        ++r.records;
        record(pending, pendingStart);
        pending.clear();
      }
    }
    pos += kChunkHeader + length;
    if (!inRecord) r.end = pos;
  }
  // A record still being written is read from its FIRST chunk next time.
  if (inRecord) r.end = pendingStart;
  if (badCrc.count)
    problem("byte " + std::to_string(badCrc.first) + ": " + std::to_string(badCrc.count) +
            " chunk(s) whose CRC does not match their data, skipped");
  if (badFraming.count)
    problem("byte " + std::to_string(badFraming.first) + ": " + std::to_string(badFraming.count) +
            " damaged chunk header(s) or chunks out of order, skipped");
  if (lostPartial.count)
    problem("byte " + std::to_string(lostPartial.first) + ": " + std::to_string(lostPartial.count) +
            " record(s) cut short by damage, skipped");
  r.damaged = badCrc.count + badFraming.count + lostPartial.count;
  return r;
}

namespace {

// A JSON number as Python's json.dumps writes it (NaN, Infinity, -Infinity
// included), the whole of `s`.
std::optional<double> jsonNumber(std::string_view s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

std::string_view trimmedJson(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

using NumberSink = detail::WandbNumberSink;
using detail::isWandbInternalKey;

// One item's value_json: a number, or an object of numbers (a nested dict
// logged under one key); anything else gives nothing.
void itemNumbers(std::string_view valueJson, const std::string& name, const NumberSink& emit) {
  const std::string_view s = trimmedJson(valueJson);
  if (s.empty()) return;
  if (const std::optional<double> v = jsonNumber(s)) {
    emit(name, *v);
    return;
  }
  if (s.front() != '{') return;
  const nlohmann::json j = nlohmann::json::parse(detail::markNonFinite(s), nullptr, false);
  if (!j.is_discarded()) detail::flattenWandbNumbers(j, name, emit);
}

std::optional<int64_t> jsonInteger(std::string_view s) {
  s = trimmedJson(s);
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  if (const std::optional<double> d = jsonNumber(s);
      d && std::isfinite(*d) && *d == std::floor(*d) && std::abs(*d) < 9e15)
    return int64_t(*d);
  return std::nullopt;
}

struct HistoryItem {
  std::string name;
  std::string_view valueJson;
};

// A HistoryItem: its key (nested_key joined with '.', wandb-core's
// runhistory rule) and value_json. False when it does not decode.
bool decodeItem(std::string_view bytes, HistoryItem& item) {
  detail::ProtoReader p(bytes);
  std::string key;
  std::string nested;
  bool hasNested = false;
  while (p.next()) {
    if (p.wire() != detail::WireType::Bytes) {
      p.skip();
      continue;
    }
    if (p.field() == kItemKey) {
      key = std::string(p.bytes());
    } else if (p.field() == kItemNestedKey) {
      if (hasNested) nested += '.';
      nested += p.bytes();
      hasNested = true;
    } else if (p.field() == kItemValueJson) {
      item.valueJson = p.bytes();
    } else {
      p.skip();
    }
  }
  item.name = hasNested ? std::move(nested) : std::move(key);
  return !p.failed();
}

enum class Decoded { Other, History, Bad };

// One Record: its history row's points to `sink` (its `_step` the step,
// its `_timestamp` the wall time; `_runtime` and `_wandb.*` are no curves).
using PointSink = std::function<void(const std::string& metric, const MetricPoint& point)>;
Decoded decodeRecord(std::string_view bytes, const PointSink& sink, std::string* why) {
  detail::ProtoReader rec(bytes);
  std::string_view history;
  bool hasHistory = false;
  while (rec.next()) {
    if (rec.field() == kRecordHistory && rec.wire() == detail::WireType::Bytes) {
      history = rec.bytes();
      hasHistory = true;
    } else {
      rec.skip();
    }
  }
  if (rec.failed()) {
    *why = rec.error();
    return Decoded::Bad;
  }
  if (!hasHistory) return Decoded::Other;
  detail::ProtoReader h(history);
  std::vector<HistoryItem> items;
  std::optional<int64_t> stepNum;
  while (h.next()) {
    if (h.field() == kHistoryItem && h.wire() == detail::WireType::Bytes) {
      HistoryItem item;
      if (!decodeItem(h.bytes(), item)) {
        *why = "a history item does not decode";
        return Decoded::Bad;
      }
      items.push_back(std::move(item));
    } else if (h.field() == kHistoryStep && h.wire() == detail::WireType::Bytes) {
      stepNum = 0;  // proto3 leaves num 0 out: an empty HistoryStep is step 0
      detail::ProtoReader s(h.bytes());
      while (s.next())
        if (s.field() == kHistoryStepNum && s.wire() == detail::WireType::Varint)
          stepNum = int64_t(s.varint());
        else
          s.skip();
    } else {
      h.skip();
    }
  }
  if (h.failed()) {
    *why = h.error();
    return Decoded::Bad;
  }
  MetricPoint base;
  bool hasStep = false;
  for (const HistoryItem& item : items) {
    if (item.name == "_step") {
      if (const auto s = jsonInteger(item.valueJson)) base.step = *s, hasStep = true;
    } else if (item.name == "_timestamp") {
      if (const auto t = jsonNumber(trimmedJson(item.valueJson))) base.wallTime = *t;
    }
  }
  if (!hasStep && stepNum) base.step = *stepNum, hasStep = true;
  if (!hasStep) {
    *why = "a history row without _step";
    return Decoded::Bad;
  }
  for (const HistoryItem& item : items) {
    if (item.name.empty() || isWandbInternalKey(item.name)) continue;
    itemNumbers(item.valueJson, item.name, [&](const std::string& metric, double v) {
      MetricPoint p = base;
      p.value = v;
      sink(metric, p);
    });
  }
  return Decoded::History;
}

// Every history point from `offset`, with the records that do not decode
// counted as damage.
WandbStoreRead forEachPoint(const std::string& path, uint64_t offset,
                            std::vector<std::string>* problems, const PointSink& sink) {
  Damage bad;
  std::string firstWhy;
  WandbStoreRead r = readWandbStore(
      path, offset,
      [&](std::string_view bytes, uint64_t at) {
        std::string why;
        if (decodeRecord(bytes, sink, &why) == Decoded::Bad) {
          if (bad.count == 0) firstWhy = why;
          bad.note(at);
        }
      },
      problems);
  if (bad.count && problems)
    problems->push_back(path + ": byte " + std::to_string(bad.first) + ": " +
                        std::to_string(bad.count) + " record(s) that do not decode (" + firstWhy +
                        "), skipped");
  r.damaged += bad.count;
  return r;
}

}  // namespace

std::vector<std::pair<std::string, MetricPoint>> readWandbPoints(const std::string& path,
                                                                 uint64_t offset, uint64_t* end,
                                                                 std::vector<std::string>* problems,
                                                                 uint64_t* damaged) {
  if (isWandbHistoryJsonl(path)) return readWandbHistoryJsonl(path, offset, end, problems, damaged);
  std::vector<std::pair<std::string, MetricPoint>> out;
  const WandbStoreRead r = forEachPoint(
      path, offset, problems,
      [&](const std::string& metric, const MetricPoint& p) { out.emplace_back(metric, p); });
  if (end) *end = r.end;
  if (damaged) *damaged += r.damaged;
  return out;
}

std::vector<FileSeries> readWandbHistory(const std::string& path, uint64_t* end,
                                         std::vector<std::string>* problems, uint64_t* damaged) {
  std::map<std::string, FileSeries, std::less<>> byMetric;
  auto add = [&](const std::string& metric, const MetricPoint& p) {
    auto it = byMetric.find(metric);
    if (it == byMetric.end()) {
      it = byMetric.emplace(metric, FileSeries{}).first;
      it->second.metric = metric;
    }
    addInFileOrder(it->second.points, it->second.restarts, p);
  };
  if (isWandbHistoryJsonl(path)) {
    for (const auto& [metric, p] : readWandbHistoryJsonl(path, 0, end, problems, damaged))
      add(metric, p);
  } else {
    const WandbStoreRead r = forEachPoint(path, 0, problems, add);
    if (end) *end = r.end;
    if (damaged) *damaged += r.damaged;
  }
  std::vector<FileSeries> out;
  out.reserve(byMetric.size());
  for (auto& [metric, s] : byMetric) out.push_back(std::move(s));
  return out;
}

WandbRunInfo readWandbRunInfo(const std::string& storePath) {
  WandbRunInfo info;
  bool found = false;
  // The RunRecord comes first (after the header record): a few records are
  // read, not the whole history.
  (void)readWandbStore(
      storePath, 0,
      [&](std::string_view bytes, uint64_t) {
        if (found) return;
        detail::ProtoReader rec(bytes);
        while (rec.next()) {
          if (rec.field() != kRecordRun || rec.wire() != detail::WireType::Bytes) {
            rec.skip();
            continue;
          }
          found = true;
          detail::ProtoReader run(rec.bytes());
          while (run.next()) {
            if (run.wire() != detail::WireType::Bytes) {
              run.skip();
              continue;
            }
            const uint32_t f = run.field();
            const std::string_view v = run.bytes();
            if (f == kRunId) info.runId = v;
            if (f == kRunEntity) info.entity = v;
            if (f == kRunProject) info.project = v;
            if (f == kRunDisplayName) info.displayName = v;
            if (f == kRunStartTime) {
              detail::ProtoReader t(v);
              double seconds = 0, nanos = 0;
              while (t.next())
                if (t.field() == kTimestampSeconds && t.wire() == detail::WireType::Varint)
                  seconds = double(int64_t(t.varint()));
                else if (t.field() == kTimestampNanos && t.wire() == detail::WireType::Varint)
                  nanos = double(int32_t(t.varint()));
                else
                  t.skip();
              if (!t.failed()) info.startTime = seconds + nanos * 1e-9;
            }
          }
        }
      },
      nullptr, /*maxRecords=*/64);
  return info;
}

std::map<std::string, double> readWandbSummary(const std::string& path,
                                               std::vector<std::string>* problems) {
  std::map<std::string, double> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(std::max<std::streamoff>(0, in.tellg()));
  if (size > kMaxSummaryBytes) {
    if (problems)
      problems->push_back(path + ": " + std::to_string(size) +
                          " bytes, too big for a run summary (not read)");
    return out;
  }
  std::string text(size_t(size), '\0');
  in.seekg(0);
  in.read(text.data(), std::streamsize(size));
  const nlohmann::json j = nlohmann::json::parse(detail::markNonFinite(text), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (problems) problems->push_back(path + ": not a JSON object");
    return out;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "_wandb") continue;  // the SDK's own (runtime): not the run's
    detail::flattenWandbNumbers(it.value(), it.key(),
                                [&](const std::string& k, double v) { out[k] = v; });
  }
  return out;
}

namespace detail {

void flattenWandbNumbers(const nlohmann::json& v, const std::string& prefix,
                         const WandbNumberSink& emit, int depth) {
  if (v.is_object()) {
    if (v.contains("_type") || depth >= kMaxValueDepth) return;
    for (auto it = v.begin(); it != v.end(); ++it)
      flattenWandbNumbers(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), emit,
                          depth + 1);
    return;
  }
  if (v.is_boolean()) return;  // a flag, not a curve
  if (const std::optional<double> d = numberOf(v)) emit(prefix, *d);
}

bool isWandbInternalKey(const std::string& key) {
  return key == "_step" || key == "_timestamp" || key == "_runtime" || key == "_wandb" ||
         key.starts_with("_wandb.");
}

}  // namespace detail

}  // namespace ckpt
