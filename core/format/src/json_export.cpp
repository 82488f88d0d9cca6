#include "ckpt/format/json_export.h"

#include "ckpt/format/sharded.h"
#include "ckpt/format/utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ckpt {
namespace {

using K = Value::Kind;
using json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 2000;
// A raw JSON text held in a DOM (toJson's "tree"): a binary value of this
// subtype, which only dumpJson lays out; nothing else makes binary values.
constexpr std::uint8_t kRawJson = 0x4a;

void appendInteger(std::string& out, int64_t v) {
  char b[24];
  const auto r = std::to_chars(b, b + sizeof b, v);
  out.append(b, size_t(r.ptr - b));
}

// nlohmann's dump() form of a finite double: the shortest text that reads
// back to the same double, ".0" added to a whole number.
void appendDouble(std::string& out, double v) {
  char b[64];
  const char* end = nlohmann::detail::to_chars(b, b + sizeof b, v);
  out.append(b, size_t(end - b));
}

// Compact JSON text, written as the encoder walks (no DOM): the output of
// `info --json`'s tree and of every pickle shown as text.
struct TextSink {
  std::string& out;
  bool comma = false;  // a value was written at this level: the next one needs ','

  void sep() {
    if (comma) out += ',';
    comma = true;
  }
  void null() { sep(), out += "null"; }
  void boolean(bool b) { sep(), out += b ? "true" : "false"; }
  void integer(int64_t v) { sep(), appendInteger(out, v); }
  void real(double v) { sep(), appendDouble(out, v); }
  void string(std::string_view s) { sep(), utf8::appendJsonString(out, s); }
  void key(std::string_view k) {
    sep();
    utf8::appendJsonString(out, k);
    out += ':';
    comma = false;
  }
  void begin(bool object) { sep(), out += object ? '{' : '[', comma = false; }
  void end(bool object) { out += object ? '}' : ']', comma = true; }
};

// The same walk into nlohmann's DOM (valueToJson: hyperparameters, metadata
// diffs, tests).
struct TreeSink {
  json root;
  std::vector<json*> open;  // containers being filled; stable while open
  std::string pendingKey;

  json& slot() {
    if (open.empty()) return root;
    json& top = *open.back();
    if (top.is_array()) {
      top.push_back(nullptr);
      return top.back();
    }
    return top[pendingKey];
  }
  void null() { slot() = nullptr; }
  void boolean(bool b) { slot() = b; }
  void integer(int64_t v) { slot() = v; }
  void real(double v) { slot() = v; }
  void string(std::string_view s) { slot() = std::string(s); }
  void key(std::string_view k) { pendingKey.assign(k); }
  void begin(bool object) {
    json& s = slot();
    s = object ? json::object() : json::array();
    open.push_back(&s);
  }
  void end(bool) { open.pop_back(); }
};

// A dict with repeated keys reads as Python builds it: each key where it
// first appears, with the value it was last given (most dicts have none).
std::vector<ValuePair> pythonDictEntries(const ArenaArray<ValuePair>& entries) {
  std::vector<ValuePair> out;
  out.reserve(entries.size());
  std::unordered_map<std::string_view, size_t> at;
  for (const ValuePair& e : entries) {
    const auto [it, fresh] = at.try_emplace(e.first->text, out.size());
    if (fresh)
      out.push_back(e);
    else
      out[it->second].second = e.second;
  }
  return out;
}

bool hasRepeatedKey(const ArenaArray<ValuePair>& entries) {
  if (entries.size() < 2) return false;
  if (entries.size() <= 8) {
    for (size_t i = 1; i < entries.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (entries[i].first->text == entries[j].first->text) return true;
    return false;
  }
  std::unordered_set<std::string_view> seen;
  for (const ValuePair& e : entries)
    if (!seen.insert(e.first->text).second) return true;
  return false;
}

template <class Sink>
struct Encoder {
  Sink& sink;
  size_t budget;
  // The containers from the root to here: a cycle comes back to one of
  // them. Most trees are shallow: a linear look, a set only past 32 deep.
  std::vector<const Value*> path;
  std::unordered_set<const Value*> deepPath;

  bool onPath(const Value* v) const {
    if (path.size() > 32) return deepPath.count(v) != 0;
    return std::find(path.begin(), path.end(), v) != path.end();
  }
  void enter(const Value* v) {
    path.push_back(v);
    if (path.size() == 33)
      deepPath.insert(path.begin(), path.end());
    else if (path.size() > 33)
      deepPath.insert(v);
  }
  void leave() {
    if (path.size() > 32) deepPath.erase(path.back());
    if (path.size() == 33) deepPath.clear();
    path.pop_back();
  }

  // {"tag": text} and the like: a one-key object around a string.
  void tagged(std::string_view tag, std::string_view text) {
    sink.begin(true);
    sink.key(tag);
    sink.string(text);
    sink.end(true);
  }
  void list(const ArenaArray<const Value*>& items, int depth) {
    sink.begin(false);
    for (const Value* x : items) encode(x, depth + 1);
    sink.end(false);
  }
  void pairs(const ArenaArray<ValuePair>& entries, int depth) {
    sink.begin(false);
    for (const auto& [k, x] : entries) {
      sink.begin(false);
      encode(k, depth + 1);
      encode(x, depth + 1);
      sink.end(false);
    }
    sink.end(false);
  }

  void encode(const Value* v, int depth) {
    if (budget == 0) {
      sink.begin(true);
      sink.key("$truncated");
      sink.boolean(true);
      sink.end(true);
      return;
    }
    --budget;
    if (!v) return sink.null();
    switch (v->kind) {
      case K::None:
        return sink.null();
      case K::Bool:
        return sink.boolean(v->boolean);
      case K::Int:
        return sink.integer(v->integer);
      case K::BigInt:
        return tagged("$int", v->text);
      case K::Float:
        if (std::isnan(v->real)) return tagged("$float", "nan");
        if (std::isinf(v->real)) return tagged("$float", v->real > 0 ? "inf" : "-inf");
        return sink.real(v->real);
      case K::Str:
        return sink.string(v->text);
      case K::Bytes: {
        static const char* hex = "0123456789abcdef";
        std::string s;
        s.reserve(v->text.size() * 2);
        for (unsigned char c : v->text) {
          s += hex[c >> 4];
          s += hex[c & 15];
        }
        return tagged("$bytes", s);
      }
      case K::Tensor:
      case K::Storage:
        sink.begin(true);
        sink.key(v->kind == K::Tensor ? "$tensor" : "$storage");
        sink.integer(v->index);
        sink.end(true);
        return;
      case K::Global:
        return tagged("$global", v->text);
      default:
        break;
    }
    if (depth > kMaxJsonDepth) return tagged("$truncated", "too deep");
    if (onPath(v)) {
      sink.begin(true);
      sink.key("$cycle");
      sink.boolean(true);
      sink.end(true);
      return;
    }
    enter(v);
    switch (v->kind) {
      case K::List:
        list(v->items, depth);
        break;
      case K::Tuple:
      case K::Set:
        sink.begin(true);
        sink.key(v->kind == K::Tuple ? "$tuple" : "$set");
        list(v->items, depth);
        sink.end(true);
        break;
      case K::Dict: {
        bool allStr = true;
        for (const auto& e : v->entries) allStr &= e.first->kind == K::Str;
        if (allStr) {
          sink.begin(true);
          const auto one = [&](const ValuePair& e) {
            sink.key(e.first->text);
            encode(e.second, depth + 1);
          };
          if (hasRepeatedKey(v->entries))
            for (const ValuePair& e : pythonDictEntries(v->entries)) one(e);
          else
            for (const ValuePair& e : v->entries) one(e);
          sink.end(true);
        } else {
          sink.begin(true);
          sink.key("$dict");
          pairs(v->entries, depth);
          sink.end(true);
        }
        break;
      }
      case K::Object:
        sink.begin(true);
        sink.key("$object");
        sink.string(v->text);
        if (v->callee) {
          sink.key("callee");
          encode(v->callee, depth + 1);
        }
        sink.key("args");
        list(v->items, depth);
        sink.key("state");
        encode(v->state, depth + 1);
        if (!v->listItems.empty()) {
          sink.key("items");
          list(v->listItems, depth);
        }
        if (!v->entries.empty()) {
          sink.key("dictitems");
          pairs(v->entries, depth);
        }
        sink.end(true);
        break;
      default:
        sink.null();
        break;
    }
    leave();
  }
};

void newline(std::string& out, int indent, int level) {
  if (indent < 0) return;
  out += '\n';
  out.append(size_t(indent) * size_t(level), ' ');
}

// Compact JSON text (TextSink's) laid out as dump(indent) lays out a DOM:
// a newline and `indent` spaces a level inside a non-empty container, ": "
// after a key.
void appendLaidOut(std::string& out, std::string_view text, int indent, int level) {
  if (indent < 0) {
    out += text;
    return;
  }
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      out += c;
      if (c == '\\')
        out += text[++i];
      else if (c == '"')
        inString = false;
      continue;
    }
    switch (c) {
      case '"':
        out += c;
        inString = true;
        break;
      case '{':
      case '[':
        out += c;
        if (i + 1 < text.size() && (text[i + 1] == '}' || text[i + 1] == ']'))
          out += text[++i];  // empty: "{}", "[]"
        else
          newline(out, indent, ++level);
        break;
      case '}':
      case ']':
        newline(out, indent, --level);
        out += c;
        break;
      case ',':
        out += c;
        newline(out, indent, level);
        break;
      case ':':
        out += ": ";
        break;
      default:
        out += c;
    }
  }
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
      appendInteger(out, j.get<int64_t>());
      return;
    case json::value_t::number_unsigned: {
      char b[24];
      const auto r = std::to_chars(b, b + sizeof b, j.get<uint64_t>());
      out.append(b, size_t(r.ptr - b));
      return;
    }
    case json::value_t::number_float:
      if (std::isfinite(j.get<double>()))
        appendDouble(out, j.get<double>());
      else
        out += "null";  // as nlohmann writes NaN and the infinities
      return;
    case json::value_t::binary: {
      const auto& raw = j.get_binary();
      if (raw.has_subtype() && raw.subtype() == kRawJson) {
        appendLaidOut(out, std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()),
                      indent, level);
        return;
      }
      out += j.dump();
      return;
    }
    default:
      // Booleans, null.
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
  TreeSink sink;
  Encoder<TreeSink>{sink, maxNodes, {}, {}}.encode(v, 0);
  return std::move(sink.root);
}

void appendValueJson(std::string& out, const Value* v, size_t maxNodes) {
  TextSink sink{out};
  Encoder<TextSink>{sink, maxNodes, {}, {}}.encode(v, 0);
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
  // The tree as text, never as a DOM: a checkpoint's pickle can hold
  // millions of values, and a DOM node costs ~10x its text.
  std::string tree;
  appendValueJson(tree, file.root(), maxNodes);
  doc["tree"] = json::binary(std::vector<std::uint8_t>(tree.begin(), tree.end()), kRawJson);
  return doc;
}

}  // namespace ckpt
