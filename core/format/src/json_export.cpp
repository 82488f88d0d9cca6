#include "ckpt/format/json_export.h"

#include "ckpt/format/sharded.h"
#include "ckpt/format/utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>

namespace ckpt {
namespace {

using K = Value::Kind;
using json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 2000;

struct Encoder {
  size_t budget;
  std::unordered_set<const Value*> onPath;

  json encode(const Value* v, int depth) {
    if (budget == 0) return json{{"$truncated", true}};
    --budget;
    if (!v) return nullptr;
    switch (v->kind) {
      case K::None:
        return nullptr;
      case K::Bool:
        return v->boolean;
      case K::Int:
        return v->integer;
      case K::BigInt:
        return json{{"$int", v->text}};
      case K::Float:
        if (std::isnan(v->real)) return json{{"$float", "nan"}};
        if (std::isinf(v->real)) return json{{"$float", v->real > 0 ? "inf" : "-inf"}};
        return v->real;
      case K::Str:
        return v->text;
      case K::Bytes: {
        static const char* hex = "0123456789abcdef";
        std::string s;
        s.reserve(v->text.size() * 2);
        for (unsigned char c : v->text) {
          s += hex[c >> 4];
          s += hex[c & 15];
        }
        return json{{"$bytes", s}};
      }
      case K::Tensor:
        return json{{"$tensor", v->index}};
      case K::Storage:
        return json{{"$storage", v->index}};
      case K::Global:
        return json{{"$global", v->text}};
      default:
        break;
    }
    if (depth > kMaxJsonDepth) return json{{"$truncated", "too deep"}};
    if (!onPath.insert(v).second) return json{{"$cycle", true}};
    json out;
    auto list = [&](const ArenaArray<const Value*>& items) {
      json a = json::array();
      for (const Value* x : items) a.push_back(encode(x, depth + 1));
      return a;
    };
    switch (v->kind) {
      case K::List:
        out = list(v->items);
        break;
      case K::Tuple:
        out = json{{"$tuple", list(v->items)}};
        break;
      case K::Set:
        out = json{{"$set", list(v->items)}};
        break;
      case K::Dict: {
        bool allStr = true;
        for (const auto& e : v->entries) allStr &= e.first->kind == K::Str;
        if (allStr) {
          out = json::object();
          for (const auto& [k, x] : v->entries) out[k->text] = encode(x, depth + 1);
        } else {
          json pairs = json::array();
          for (const auto& [k, x] : v->entries)
            pairs.push_back(json::array({encode(k, depth + 1), encode(x, depth + 1)}));
          out = json{{"$dict", pairs}};
        }
        break;
      }
      case K::Object: {
        out = json{{"$object", v->text}};
        if (v->callee) out["callee"] = encode(v->callee, depth + 1);
        out["args"] = list(v->items);
        out["state"] = encode(v->state, depth + 1);
        if (!v->listItems.empty()) out["items"] = list(v->listItems);
        if (!v->entries.empty()) {
          json pairs = json::array();
          for (const auto& [k, x] : v->entries)
            pairs.push_back(json::array({encode(k, depth + 1), encode(x, depth + 1)}));
          out["dictitems"] = pairs;
        }
        break;
      }
      default:
        break;
    }
    onPath.erase(v);
    return out;
  }
};

void newline(std::string& out, int indent, int level) {
  if (indent < 0) return;
  out += '\n';
  out.append(size_t(indent) * size_t(level), ' ');
}

// Recursion is bounded: valueToJson cuts trees at kMaxJsonDepth.
void dumpTo(std::string& out, const json& j, int indent, int level) {
  switch (j.type()) {
    case json::value_t::object:
    case json::value_t::array: {
      const bool object = j.is_object();
      if (j.empty()) {
        out += object ? "{}" : "[]";
        return;
      }
      out += object ? '{' : '[';
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += ',';
        first = false;
        newline(out, indent, level + 1);
        if (object) {
          utf8::appendJsonString(out, it.key());
          out += indent >= 0 ? ": " : ":";
        }
        dumpTo(out, it.value(), indent, level + 1);
      }
      newline(out, indent, level);
      out += object ? '}' : ']';
      return;
    }
    case json::value_t::string:
      utf8::appendJsonString(out, j.get_ref<const std::string&>());
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      char b[24];
      const auto r = j.is_number_unsigned() ? std::to_chars(b, b + sizeof b, j.get<uint64_t>())
                                            : std::to_chars(b, b + sizeof b, j.get<int64_t>());
      out.append(b, size_t(r.ptr - b));
      return;
    }
    default:
      // Floats (nlohmann's shortest round-trip form, null for NaN), booleans, null.
      out += j.dump();
  }
}

}  // namespace

std::string dumpJson(const json& j, int indent) {
  std::string out;
  dumpTo(out, j, indent, 0);
  return out;
}

json pathToJson(const TensorPath& path) {
  json a = json::array();
  for (size_t i = 0; i < path.size(); ++i) {
    if (path.isIndex(i))
      a.push_back(path.index(i));
    else
      a.push_back(path.key(i));
  }
  return a;
}

json valueToJson(const Value* v, size_t maxNodes) {
  Encoder e{maxNodes, {}};
  return e.encode(v, 0);
}

json toJson(const CheckpointFile& file, size_t maxNodes) {
  if (maxNodes == 0) maxNodes = std::max<size_t>(1'000'000, 4 * file.valueCount());
  json doc;
  doc["file"] = file.path();
  doc["format"] = std::string(formatName(file.format()));
  const ShardSet* shards = file.shards();
  if (shards) {
    json files = json::array();
    for (const ShardPart& p : shards->parts()) {
      json f{{"file", p.file}, {"size", p.size}, {"present", p.present}};
      if (p.rank >= 0) f["rank"] = p.rank;
      if (!p.error.empty()) f["error"] = p.error;
      files.push_back(std::move(f));
    }
    doc["sharded"] = {{"layout", std::string(shardLayoutId(shards->layout()))},
                      {"summary", shards->summary()},
                      {"ranks", shards->ranks()},
                      {"entry", shards->entry()},
                      {"files", std::move(files)},
                      {"notes", shards->notes()}};
  }
  json tensors = json::array();
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const TensorInfo& t = file.tensors()[i];
    json j;
    j["path"] = pathToJson(t.path);
    j["dtype"] = std::string(dtypeName(t.dtype));
    j["shape"] = t.shape;
    j["stride"] = t.stride;
    j["storage_offset"] = t.storageOffset;
    j["storage"] = t.storage >= 0 ? json(file.storages()[size_t(t.storage)].key) : json(nullptr);
    j["nbytes"] = t.nbytes();
    j["requires_grad"] = t.requiresGrad;
    if (t.isParameter) j["parameter"] = true;
    if (t.isMeta) j["meta"] = true;
    if (!t.error.empty()) j["error"] = t.error;
    if (shards) {
      // Where its pieces are: the layout across ranks.
      const LogicalTensor& lt = shards->tensors()[size_t(t.storage)];
      const auto chunkJson = [shards](const ShardChunk& c) {
        json cj{{"file", shards->parts()[size_t(c.part)].file},
                {"offsets", c.offsets},
                {"sizes", c.sizes}};
        if (const int rank = shards->parts()[size_t(c.part)].rank; rank >= 0) cj["rank"] = rank;
        // A run of a flat buffer (DeepSpeed's partitions): where it starts there.
        if (c.sourceOffset) cj["source_offset"] = c.sourceOffset;
        return cj;
      };
      json chunks = json::array();
      for (const ShardChunk& c : lt.chunks) chunks.push_back(chunkJson(c));
      j["chunks"] = std::move(chunks);
      // Where a missing or unreadable part's chunks would be.
      if (!lt.missing.empty()) {
        json missing = json::array();
        for (const ShardChunk& c : lt.missing) missing.push_back(chunkJson(c));
        j["missing_chunks"] = std::move(missing);
      }
      if (lt.replicas) j["replicas"] = lt.replicas;
      // How the pieces were joined (Megatron's tensor-parallel slices).
      if (!lt.note.empty()) j["joined"] = lt.note;
      if (lt.flat) j["flat"] = true;
      if (lt.incomplete()) j["incomplete"] = true;
    }
    tensors.push_back(std::move(j));
  }
  doc["tensors"] = std::move(tensors);
  doc["tree"] = valueToJson(file.root(), maxNodes);
  return doc;
}

}  // namespace ckpt
