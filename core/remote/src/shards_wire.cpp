#include "ckpt/remote/shards_wire.h"

#include <limits>

#include "wire_reader.h"

namespace ckpt {

uint64_t ShardListing::totalSize() const {
  uint64_t n = 0;
  for (const ShardPart& p : parts) n += p.size;
  return n;
}

// The words of ShardSet::summary, from the listing (a host's answer carries
// no text to trust here: the heading says what the counts say).
std::string ShardListing::summary() const {
  std::string s = "sharded: " + std::string(shardLayoutTitle(layout));
  if (ranks > 0) s += ", " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  const size_t files = parts.size() + (entry.empty() ? 0 : 1);
  s += ", " + std::to_string(files) + (files == 1 ? " file" : " files");
  size_t missing = 0;
  for (const ShardPart& p : parts) missing += p.present ? 0 : 1;
  if (missing) s += ", " + std::to_string(missing) + " missing";
  return s;
}

ShardListing listShards(const ShardSet& shards) {
  ShardListing l;
  l.layout = shards.layout();
  l.folder = shards.folder();
  l.entry = shards.entry();
  l.ranks = shards.ranks();
  l.parts = shards.parts();
  l.tensors = shards.tensors();
  l.notes = shards.notes();
  l.metadata = shards.metadata();
  return l;
}

}  // namespace ckpt

namespace ckpt::remote {
namespace {

constexpr const char* kWhat = "shards";
// A part file past this is a lie (as a skeleton's file size is refused).
constexpr uint64_t kMostPartBytes = uint64_t(1) << 46;  // 64 TiB
// torch's tensors have at most 64 dimensions.
constexpr size_t kMostDims = 64;
// Elements of a tensor whose chunks are said to be complete.
constexpr uint64_t kMostElements = uint64_t(1) << 62;
constexpr int64_t kMostRanks = int64_t(1) << 24;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::runtime_error(std::string(kWhat) + ": " + where + " " + what);
}

// An integer of [lo, hi] (no wrap of a negative into an unsigned, no cut
// of a large one into an int).
int64_t integerIn(const Json& j, const char* name, const std::string& where, int64_t lo, int64_t hi,
                  int64_t fallback) {
  if (!j.contains(name) || j[name].is_null()) return fallback;
  const Json& v = j[name];
  const std::string at = where + "." + name;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(hi)) fail(at, "is " + std::to_string(u) + ", over " + std::to_string(hi));
    return int64_t(u);
  }
  if (!v.is_number_integer()) fail(at, "is not an integer");
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi)
    fail(at, "is " + std::to_string(i) + ", not in [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "]");
  return i;
}

uint64_t sizeIn(const Json& j, const char* name, const std::string& where, uint64_t most) {
  if (!j.contains(name) || j[name].is_null()) return 0;
  const Json& v = j[name];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    fail(where + "." + name, "is not a size");
  const uint64_t u = v.get<uint64_t>();
  if (u > most)
    fail(where + "." + name, "claims " + std::to_string(u) + " bytes, over the " +
                                 std::to_string(most) + " a file can be");
  return u;
}

Json dimsToWire(const Dims& d) {
  Json a = Json::array();
  for (int64_t x : d) a.push_back(x);
  return a;
}

Dims dimsFromWire(const Reader& r, const char* name) {
  const Json& a = r.array(name);
  if (a.size() > kMostDims)
    r.fail(name, ("has " + std::to_string(a.size()) + " dimensions, over 64").c_str());
  Dims d;
  for (const Json& x : a) {
    if (!x.is_number_integer() ||
        (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(INT64_MAX)))
      r.fail(name, "holds something that is not an integer");
    d.push_back(x.get<int64_t>());
  }
  return d;
}

Json chunkToWire(const ShardChunk& c) {
  Json j{{"part", c.part}, {"offsets", dimsToWire(c.offsets)}, {"sizes", dimsToWire(c.sizes)}};
  if (c.sourceOffset) j["source_offset"] = c.sourceOffset;
  return j;
}

ShardChunk chunkFromWire(const Json& j, const std::string& where, size_t parts) {
  const Reader r = Reader::object(j, where, kWhat);
  ShardChunk c;
  if (!j.contains("part")) r.fail("part", "is missing");
  const int64_t part = integerIn(j, "part", where, 0, INT32_MAX, -1);
  if (uint64_t(part) >= parts)
    fail(where + ".part",
         "is " + std::to_string(part) + ", past the " + std::to_string(parts) + " parts");
  c.part = int(part);
  c.offsets = dimsFromWire(r, "offsets");
  c.sizes = dimsFromWire(r, "sizes");
  c.sourceOffset = integerIn(j, "source_offset", where, 0, INT64_MAX, 0);
  return c;
}

// What a tensor the host calls complete must be (ShardSet::checkChunks
// records an error otherwise): a shape of non-negative sizes that fit, and
// every chunk of its rank inside it.
void checkComplete(const LogicalTensor& t, const std::string& where) {
  uint64_t elements = 1;
  for (int64_t d : t.shape) {
    if (d < 0) fail(where + ".shape", "has a negative size and no error");
    if (d != 0 && elements > kMostElements / uint64_t(d))
      fail(where + ".shape", "holds more than 2^62 elements and no error");
    elements *= uint64_t(d);
  }
  if (!t.missing.empty()) fail(where + ".missing", "lists chunks of a tensor with no error");
  for (size_t i = 0; i < t.chunks.size(); ++i) {
    const ShardChunk& c = t.chunks[i];
    const std::string at = where + ".chunks[" + std::to_string(i) + "]";
    if (c.offsets.size() != t.shape.size() || c.sizes.size() != t.shape.size())
      fail(at, "has offsets or sizes of another rank than the shape's");
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (c.offsets[d] < 0 || c.sizes[d] < 0 || c.offsets[d] > t.shape[d] ||
          c.sizes[d] > t.shape[d] - c.offsets[d])
        fail(at, "lies outside the tensor's shape and the tensor has no error");
  }
}

}  // namespace

Json shardsToWire(const ShardListing& l) {
  Json parts = Json::array();
  for (const ShardPart& p : l.parts) {
    Json j{{"file", p.file},
           {"path", p.path},
           {"rank", p.rank},
           {"size", p.size},
           {"present", p.present}};
    if (!p.error.empty()) j["error"] = p.error;
    parts.push_back(std::move(j));
  }
  Json tensors = Json::array();
  uint64_t chunks = 0;
  for (const LogicalTensor& t : l.tensors) {
    Json j{{"name", t.name},
           {"dtype", std::string(dtypeName(t.dtype))},
           {"shape", dimsToWire(t.shape)}};
    Json present = Json::array(), missing = Json::array();
    for (const ShardChunk& c : t.chunks) present.push_back(chunkToWire(c));
    for (const ShardChunk& c : t.missing) missing.push_back(chunkToWire(c));
    chunks += t.chunks.size() + t.missing.size();
    j["chunks"] = std::move(present);
    if (!missing.empty()) j["missing"] = std::move(missing);
    if (t.replicas) j["replicas"] = t.replicas;
    if (t.flat) j["flat"] = true;
    if (!t.note.empty()) j["note"] = t.note;
    if (!t.error.empty()) j["error"] = t.error;
    tensors.push_back(std::move(j));
  }
  Json metadata = Json::array();
  for (const auto& [k, v] : l.metadata) metadata.push_back(Json::array({k, v}));
  Json out;
  out["layout"] = std::string(shardLayoutId(l.layout));
  out["folder"] = l.folder;
  out["entry"] = l.entry;
  out["ranks"] = l.ranks;
  out["total_size"] = l.totalSize();
  out["counts"] =
      Json{{"parts", l.parts.size()}, {"tensors", l.tensors.size()}, {"chunks", chunks}};
  out["parts"] = std::move(parts);
  out["tensors"] = std::move(tensors);
  out["notes"] = l.notes;
  out["metadata"] = std::move(metadata);
  return out;
}

ShardListing shardsFromWire(const Json& j) {
  const Reader r = Reader::object(j, "shards", kWhat);
  ShardListing l;
  const std::string layout = r.text("layout", true);
  bool known = false;
  for (ShardLayout x : {ShardLayout::HuggingFace, ShardLayout::Dcp, ShardLayout::Fsdp,
                        ShardLayout::DeepSpeed, ShardLayout::Megatron})
    if (layout == shardLayoutId(x)) {
      l.layout = x;
      known = true;
    }
  if (!known) r.fail("layout", ("is \"" + layout + "\", no layout this program knows").c_str());
  l.folder = r.text("folder");
  l.entry = r.text("entry");
  l.ranks = int(integerIn(j, "ranks", "shards", 0, kMostRanks, 0));

  const Json& parts = r.array("parts", true);
  const Json& tensors = r.array("tensors", true);
  // The counts the host gives must be the arrays' (a reply cut or made up
  // is not shown as a smaller checkpoint).
  const Reader counts = Reader::object(r.at("counts"), "shards.counts", kWhat);
  const auto count = [&](const char* name, uint64_t actual) {
    const int64_t said = integerIn(r.at("counts"), name, "shards.counts", 0, INT64_MAX, -1);
    if (said < 0) counts.fail(name, "is missing");
    if (uint64_t(said) != actual)
      counts.fail(name,
                  ("is " + std::to_string(said) + " but " + std::to_string(actual) + " are listed")
                      .c_str());
  };
  count("parts", parts.size());
  count("tensors", tensors.size());

  uint64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string where = "shards.parts[" + std::to_string(i) + "]";
    const Reader pr = Reader::object(parts[i], where, kWhat);
    ShardPart p;
    p.file = pr.text("file", true);
    p.path = pr.text("path");
    p.rank = int(integerIn(parts[i], "rank", where, -1, kMostRanks, -1));
    p.size = sizeIn(parts[i], "size", where, kMostPartBytes);
    p.present = pr.flag("present");
    p.error = pr.text("error");
    total += p.size;  // at most 2^46 each, checked below 2^62 after each: no wrap
    if (total > (uint64_t(1) << 62))
      fail(where + ".size", "makes the parts larger than 2^62 bytes");
    l.parts.push_back(std::move(p));
  }
  const int64_t saidTotal = integerIn(j, "total_size", "shards", 0, INT64_MAX, -1);
  if (saidTotal >= 0 && uint64_t(saidTotal) != total)
    r.fail("total_size", ("is " + std::to_string(saidTotal) + " but the parts' sizes add up to " +
                          std::to_string(total))
                             .c_str());

  uint64_t chunks = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string where = "shards.tensors[" + std::to_string(i) + "]";
    const Reader tr = Reader::object(tensors[i], where, kWhat);
    LogicalTensor t;
    t.name = tr.text("name", true);
    const std::string dtype = tr.text("dtype", true);
    const auto dt = dtypeFromTorchName(dtype);
    if (!dt) tr.fail("dtype", ("is \"" + dtype + "\", no dtype this program knows").c_str());
    t.dtype = *dt;
    t.shape = dimsFromWire(tr, "shape");
    const Json& present = tr.array("chunks");
    const Json& missing = tr.array("missing");
    for (size_t c = 0; c < present.size(); ++c)
      t.chunks.push_back(
          chunkFromWire(present[c], where + ".chunks[" + std::to_string(c) + "]", parts.size()));
    for (size_t c = 0; c < missing.size(); ++c)
      t.missing.push_back(
          chunkFromWire(missing[c], where + ".missing[" + std::to_string(c) + "]", parts.size()));
    chunks += present.size() + missing.size();
    t.replicas = int(integerIn(tensors[i], "replicas", where, 0, INT32_MAX, 0));
    t.flat = tr.flag("flat");
    t.note = tr.text("note");
    t.error = tr.text("error");
    if (t.error.empty()) checkComplete(t, where);
    l.tensors.push_back(std::move(t));
  }
  count("chunks", chunks);
  l.notes = r.texts("notes");
  const Json& metadata = r.array("metadata");
  for (const Json& p : metadata) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string())
      r.fail("metadata", "holds something that is not a [key, text] pair");
    l.metadata.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  }
  return l;
}

}  // namespace ckpt::remote
