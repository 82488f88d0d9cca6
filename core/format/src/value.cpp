#include "ckpt/format/value.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_set>

namespace ckpt {

const Value* Value::get(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  for (const auto& [k, v] : entries)
    if (k->kind == Kind::Str && k->text == key) return v;
  return nullptr;
}

const Value* Value::get(int64_t key) const {
  if (kind != Kind::Dict) return nullptr;
  for (const auto& [k, v] : entries)
    if (k->kind == Kind::Int && k->integer == key) return v;
  return nullptr;
}

namespace {

// Blocks of arenas that were destroyed, kept per thread for the next one:
// opening file after file (a directory scan) then reuses warm memory instead
// of faulting fresh pages in every time.
struct BlockPool {
  std::vector<std::pair<std::unique_ptr<std::byte[]>, size_t>> blocks;
  size_t bytes = 0;
  static constexpr size_t kMaxBytes = 8u << 20;
};
thread_local BlockPool t_pool;

}  // namespace

ValueArena::~ValueArena() {
  for (Block& b : m_blocks) {
    if (t_pool.bytes + b.size > BlockPool::kMaxBytes) break;
    t_pool.bytes += b.size;
    t_pool.blocks.emplace_back(std::move(b.data), b.size);
  }
}

void* ValueArena::allocateSlow(size_t bytes, size_t align) {
  // Blocks grow with the arena so that big pickles need few of them. The
  // first is small: a sharded checkpoint keeps one tiny archive open per
  // chunk (hundreds of them), each with an arena of its own.
  size_t size = std::max<size_t>(m_blocks.empty() ? 4 * 1024 : 64 * 1024, bytes + align);
  if (!m_blocks.empty())
    size = std::max(size, std::min<size_t>(m_blocks.back().size * 2, 16u << 20));
  Block block{nullptr, 0};
  for (size_t i = 0; i < t_pool.blocks.size(); ++i) {
    if (t_pool.blocks[i].second >= bytes + align) {
      block = {std::move(t_pool.blocks[i].first), t_pool.blocks[i].second};
      t_pool.bytes -= block.size;
      t_pool.blocks.erase(t_pool.blocks.begin() + long(i));
      break;
    }
  }
  if (!block.data) block = {std::unique_ptr<std::byte[]>(new std::byte[size]), size};  // not zeroed
  m_blocks.push_back(std::move(block));
  m_cursor = m_blocks.back().data.get();
  m_left = m_blocks.back().size;
  return allocate(bytes, align);
}

std::string_view ValueArena::copy(std::string_view s) {
  if (s.empty()) return {};
  char* p = static_cast<char*>(allocate(s.size(), 1));
  std::memcpy(p, s.data(), s.size());
  return {p, s.size()};
}

std::string_view kindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::BigInt:
      return "int";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::Str:
      return "str";
    case Value::Kind::Bytes:
      return "bytes";
    case Value::Kind::List:
      return "list";
    case Value::Kind::Tuple:
      return "tuple";
    case Value::Kind::Set:
      return "set";
    case Value::Kind::Dict:
      return "dict";
    case Value::Kind::Tensor:
      return "tensor";
    case Value::Kind::Storage:
      return "storage";
    case Value::Kind::Global:
      return "global";
    case Value::Kind::Object:
      return "object";
  }
  return "?";
}

namespace {

// Python's float repr: the shortest digits that read back the same, in
// fixed notation for 1e-4 <= |d| < 1e16, scientific otherwise.
std::string formatFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[48];
  for (int prec = 0; prec <= 16; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf: [-]D[.DDD]e[+-]XX
  std::string sci = buf;
  const size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (std::isdigit(static_cast<unsigned char>(sci[i]))) digits += sci[i];
  const std::string sign = d < 0 ? "-" : "";
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp) + 1 >= digits.size()) {
      out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  char ex[16];
  std::snprintf(ex, sizeof ex, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return sign + mant + ex;
}

struct Repr {
  std::string out;
  size_t max;
  std::unordered_set<const Value*> onPath;

  bool full() const { return out.size() >= max; }

  void quoted(std::string_view s) {
    out += '\'';
    for (char c : s) {
      if (full()) return;
      if (c == '\'' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    out += '\'';
  }

  void seq(const ArenaArray<const Value*>& items, const char* open, const char* close) {
    out += open;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ", ";
      if (full()) {
        out += "...";
        break;
      }
      emit(items[i]);
    }
    out += close;
  }

  void emit(const Value* v) {
    if (!v) {
      out += "?";
      return;
    }
    if (full()) {
      out += "...";
      return;
    }
    using K = Value::Kind;
    switch (v->kind) {
      case K::None:
        out += "None";
        return;
      case K::Bool:
        out += v->boolean ? "True" : "False";
        return;
      case K::Int:
        out += std::to_string(v->integer);
        return;
      case K::BigInt:
        out += v->text;
        return;
      case K::Float:
        out += formatFloat(v->real);
        return;
      case K::Str:
        quoted(v->text);
        return;
      case K::Bytes: {
        out += "b'";
        for (unsigned char c : v->text) {
          if (full()) break;
          if (c >= 32 && c < 127 && c != '\'' && c != '\\') {
            out += char(c);
          } else {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
          }
        }
        out += "'";
        return;
      }
      case K::Tensor:
        out += "tensor#" + std::to_string(v->index);
        return;
      case K::Storage:
        out += "storage#" + std::to_string(v->index);
        return;
      case K::Global:
        out += v->text;
        return;
      default:
        break;
    }
    if (!onPath.insert(v).second) {
      out += "<cycle>";
      return;
    }
    switch (v->kind) {
      case K::List:
        seq(v->items, "[", "]");
        break;
      case K::Tuple:
        seq(v->items, "(", v->items.size() == 1 ? ",)" : ")");
        break;
      case K::Set:
        seq(v->items, "{", "}");
        break;
      case K::Dict:
        out += "{";
        for (size_t i = 0; i < v->entries.size(); ++i) {
          if (i) out += ", ";
          if (full()) {
            out += "...";
            break;
          }
          emit(v->entries[i].first);
          out += ": ";
          emit(v->entries[i].second);
        }
        out += "}";
        break;
      case K::Object:
        out += v->text;
        seq(v->items, "(", ")");
        if (v->state) {
          out += " state=";
          emit(v->state);
        }
        break;
      default:
        break;
    }
    onPath.erase(v);
  }
};

}  // namespace

std::string shortRepr(const Value* v, size_t maxChars) {
  Repr r{{}, maxChars, {}};
  r.emit(v);
  if (r.out.size() > maxChars + 3) {
    r.out.resize(maxChars);
    r.out += "...";
  }
  return r.out;
}

std::string formatPythonFloat(double d) {
  return formatFloat(d);
}

}  // namespace ckpt
