#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt {

// The value tree a pickle (or a safetensors header) decodes to. Nodes live in
// a ValueArena owned by the file they came from and point at each other with
// plain pointers: pickles can share one node from several places (the memo)
// and even build cycles, so nothing here owns anything. Code that walks the
// tree must tolerate both (see walkTensors, the JSON export).
struct Value {
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,     // fits in int64: `integer`
    BigInt,  // beyond 64 bits: decimal digits in `text`, '-' first when negative
    Float,
    Str,    // UTF-8 in `text`
    Bytes,  // raw bytes in `text`
    List,
    Tuple,
    Set,
    Dict,     // ordered (file order), keys of any kind
    Tensor,   // `index` into CheckpointFile::tensors() once the file is loaded
    Storage,  // `index` into CheckpointFile::storages()
    Global,   // a class or function reference, "module.name" in `text`
    Object,   // anything else: class in `text`, `items` = call arguments, `state`
  };

  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0.0;
  std::string text;
  // List / Tuple / Set elements; an Object's constructor arguments.
  std::vector<const Value*> items;
  // Dict entries; an Object's dict items (SETITEM on an opaque object).
  std::vector<std::pair<const Value*, const Value*>> entries;
  // An Object's BUILD state; a Dict's attributes (an OrderedDict's _metadata).
  const Value* state = nullptr;
  // An Object created by calling something that is not a plain global.
  const Value* callee = nullptr;
  // An Object's list items (APPEND on an opaque object).
  std::vector<const Value*> listItems;
  int64_t index = -1;
  // Deepest nesting below this node as the reader built it (for its limit).
  uint32_t depth = 0;

  [[nodiscard]] bool isNone() const { return kind == Kind::None; }
  [[nodiscard]] bool isStr() const { return kind == Kind::Str; }
  [[nodiscard]] bool isInt() const { return kind == Kind::Int; }
  [[nodiscard]] bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  [[nodiscard]] bool isDict() const { return kind == Kind::Dict; }
  [[nodiscard]] bool isTensor() const { return kind == Kind::Tensor; }
  [[nodiscard]] bool isSequence() const { return kind == Kind::List || kind == Kind::Tuple; }
  [[nodiscard]] double number() const { return kind == Kind::Int ? double(integer) : real; }

  // Dict lookup by string key (first match, linear); nullptr when absent or
  // when this is not a dict.
  [[nodiscard]] const Value* get(std::string_view key) const;
  // Dict lookup by integer key.
  [[nodiscard]] const Value* get(int64_t key) const;
};

class ValueArena {
 public:
  Value* make(Value::Kind kind);
  [[nodiscard]] size_t size() const { return m_nodes.size(); }

 private:
  std::deque<Value> m_nodes;
};

std::string_view kindName(Value::Kind kind);

// A short Python-like rendering for tables and the CLI: strings quoted,
// containers abbreviated past `maxChars`, tensors as "tensor#3".
std::string shortRepr(const Value* v, size_t maxChars = 120);

// A float as Python prints it: shortest round-trip digits, "1.0", "nan", "inf".
std::string formatPythonFloat(double d);

}  // namespace ckpt
