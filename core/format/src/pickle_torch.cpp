// The pickle machine's calls (REDUCE, NEWOBJ, INST, OBJ, BUILD): the
// globals CkptScope understands (dicts, sets, bytes, numpy scalars, torch's
// tensor rebuild functions) become values; every other call an opaque object
// that records its class, arguments and state. Nothing is ever executed.
// The opcode machine itself is in pickle_reader.cpp.
#include <cstdlib>
#include <string>

#include "ckpt/format/error.h"
#include "ckpt/format/numeric.h"
#include "pickle_machine.h"

namespace ckpt::pickle_machine {

namespace {

// UTF-8 to latin-1 bytes (what `_codecs.encode(s, 'latin1')` gives);
// false when a code point is above 255 or the UTF-8 is malformed.
bool utf8ToLatin1(std::string_view s, std::string& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = uint8_t(s[i]);
    if (c < 0x80) {
      out += char(c);
      ++i;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
      const uint32_t cp = (uint32_t(c & 0x1F) << 6) | (uint8_t(s[i + 1]) & 0x3F);
      if (cp > 0xFF) return false;
      out += char(cp);
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

Known classify(std::string_view name) {
  struct Row {
    std::string_view name;
    Known known;
  };
  static constexpr Row rows[] = {
      {"collections.OrderedDict", Known::Dict},
      {"builtins.dict", Known::Dict},
      {"__builtin__.dict", Known::Dict},
      {"torch.Size", Known::TorchSize},
      {"_codecs.encode", Known::CodecsEncode},
      {"builtins.set", Known::Set},
      {"__builtin__.set", Known::Set},
      {"builtins.frozenset", Known::Set},
      {"__builtin__.frozenset", Known::Set},
      {"builtins.bytearray", Known::Bytes},
      {"__builtin__.bytearray", Known::Bytes},
      {"builtins.bytes", Known::Bytes},
      {"__builtin__.bytes", Known::Bytes},
      {"numpy.core.multiarray.scalar", Known::NumpyScalar},
      {"numpy._core.multiarray.scalar", Known::NumpyScalar},
      {"copyreg._reconstructor", Known::Reconstructor},
      {"copy_reg._reconstructor", Known::Reconstructor},
      {"copyreg.__newobj__", Known::NewObj},
      {"copy_reg.__newobj__", Known::NewObj},
      {"torch._utils._rebuild_tensor_v2", Known::RebuildTensor},
      {"torch._utils._rebuild_tensor", Known::RebuildTensor},
      {"torch._utils._rebuild_tensor_v3", Known::RebuildTensorV3},
      {"torch._utils._rebuild_parameter", Known::RebuildParameter},
      {"torch._utils._rebuild_parameter_with_state", Known::RebuildParameter},
      {"torch._utils._rebuild_qtensor", Known::RebuildQTensor},
      {"torch._utils._rebuild_meta_tensor_no_storage", Known::RebuildMeta},
      {"torch._tensor._rebuild_from_type_v2", Known::RebuildFromType},
      {"torch._utils._rebuild_from_type_v2", Known::RebuildFromType},
  };
  for (const Row& r : rows)
    if (r.name == name) return r.known;
  return Known::Other;
}

Value* Machine::global(std::string_view module, std::string_view name) {
  if (module.empty() || name.empty() || module.size() > 512 || name.size() > 512)
    error("bad global name '" + std::string(module.substr(0, 64)) + "." +
          std::string(name.substr(0, 64)) + "'");
  for (std::string_view part : {module, name})
    for (char c : part)
      if (uint8_t(c) < 32) error("control character in global name");
  std::string full;
  full.reserve(module.size() + 1 + name.size());
  full.append(module).append(".").append(name);
  Value* g = make(K::Global);
  g->tag = uint8_t(classify(full));
  g->text = m_arena.copy(full);
  // The judge's symbol + 1 in the Global's (otherwise unused) index.
  if (m_judge)
    g->index = int64_t(m_judge->global(std::string(module), std::string(name), m_opStart)) + 1;
  return g;
}

Value* Machine::opaque(const Value* callable, const Value* args) {
  Value* obj = make(K::Object);
  if (callable->kind == K::Global) {
    obj->text = callable->text;
  } else {
    obj->text = "(call)";
    obj->callee = callable;
    adopt(obj, callable);
  }
  for (const Value* a : args->items) adopt(obj, a);
  obj->items = args->items;  // arena arrays are values: share the elements
  return obj;
}

Value* Machine::construct(Value* callable, Value* args) {
  if (args->kind != K::Tuple)
    error("call arguments are a " + std::string(kindName(args->kind)) + ", not a tuple");
  if (callable->kind != K::Global) return opaque(callable, args);
  const size_t n = args->items.size();
  switch (Known(callable->tag)) {
    case Known::Dict: {
      Value* d = make(K::Dict);
      if (callable->text == "collections.OrderedDict") d->tag = Value::kOrderedDict;
      if (n == 1 && args->items[0]->isSequence()) {
        for (const Value* pair : args->items[0]->items) {
          if (!pair->isSequence() || pair->items.size() != 2) return opaque(callable, args);
          adopt(d, pair);
          m_arena.append(d->entries, ValuePair{pair->items[0], pair->items[1]});
        }
      } else if (n != 0) {
        return opaque(callable, args);
      }
      return d;
    }
    case Known::TorchSize:
      if (n == 1 && args->items[0]->isSequence()) {
        Value* t = makeSeq(K::Tuple, const_cast<Value* const*>(args->items[0]->items.begin()),
                           args->items[0]->items.size());
        if (m_judge) m_madeByCall.insert(t);  // not a tuple to the scan's walk
        return t;
      }
      break;
    case Known::CodecsEncode:
      if (n == 2 && args->items[0]->isStr() && args->items[1]->isStr()) {
        const std::string_view enc = args->items[1]->text;
        if (enc == "latin1" || enc == "latin-1" || enc == "iso-8859-1" || enc == "ISO-8859-1") {
          std::string bytes;
          if (!utf8ToLatin1(args->items[0]->text, bytes))
            error("_codecs.encode: text is not latin-1");
          return makeBytes(bytes);
        }
        if (enc == "utf-8" || enc == "utf8") return makeBytes(args->items[0]->text);
      }
      break;
    case Known::Set:
      if (n == 0) return make(K::Set);
      if (n == 1 && (args->items[0]->isSequence() || args->items[0]->kind == K::Set))
        return makeSeq(K::Set, const_cast<Value* const*>(args->items[0]->items.begin()),
                       args->items[0]->items.size());
      break;
    case Known::Bytes: {
      if (n == 0) return makeBytes({});
      if (n == 1 && args->items[0]->kind == K::Bytes) return makeBytes(args->items[0]->text);
      std::string bytes;
      if (n == 2 && args->items[0]->isStr() && args->items[1]->isStr() &&
          utf8ToLatin1(args->items[0]->text, bytes))
        return makeBytes(bytes);
      break;
    }
    case Known::NumpyScalar:
      if (n == 2)
        if (Value* v = numpyScalar(args->items[0], args->items[1])) return v;
      break;
    case Known::Reconstructor:
      if (n >= 1 && args->items[0]->kind == K::Global) {
        Value* obj = make(K::Object);
        obj->text = args->items[0]->text;
        return obj;
      }
      break;
    case Known::NewObj:
      if (n >= 1 && args->items[0]->kind == K::Global) {
        Value* obj = make(K::Object);
        obj->text = args->items[0]->text;
        obj->tag = Value::kMadeByNewObj;
        for (size_t i = 1; i < n; ++i) adopt(obj, args->items[i]);
        m_arena.assign(obj->items, args->items.begin() + 1, n - 1);
        return obj;
      }
      break;
    default:
      if (m_table && callable->tag >= uint8_t(Known::FirstTorch))
        if (Value* t = torchCall(Known(callable->tag), callable, args)) return t;
      break;
  }
  return opaque(callable, args);
}

Value* Machine::numpyScalar(const Value* dtype, const Value* raw) {
  if (dtype->kind != K::Object || dtype->text != "numpy.dtype" || dtype->items.empty() ||
      !dtype->items[0]->isStr() || raw->kind != K::Bytes)
    return nullptr;
  const std::string code(dtype->items[0]->text);  // "f8", "i4", "b1", ...
  if (code.size() < 2) return nullptr;
  const char kind = code[0];
  const int size = std::atoi(code.c_str() + 1);
  if (size <= 0 || size > 8 || size_t(size) != raw->text.size()) return nullptr;
  bool big = false;
  if (dtype->state && dtype->state->kind == K::Tuple && dtype->state->items.size() > 1 &&
      dtype->state->items[1]->isStr())
    big = dtype->state->items[1]->text == ">";
  uint8_t b[8] = {};
  for (int i = 0; i < size; ++i) b[i] = uint8_t(raw->text[size_t(big ? size - 1 - i : i)]);
  uint64_t u = 0;
  std::memcpy(&u, b, 8);
  if (kind == 'f') {
    Value* f = make(K::Float);
    if (size == 8)
      std::memcpy(&f->real, b, 8);
    else if (size == 4)
      f->real = detail::bitsToFloat(uint32_t(u));
    else if (size == 2)
      f->real = detail::halfToFloat(uint16_t(u));
    else
      return nullptr;
    return f;
  }
  if (kind == 'i') return intFromBytes(b, uint64_t(size));
  if (kind == 'u') {
    uint8_t ext[9] = {};
    std::memcpy(ext, b, size_t(size));
    return intFromBytes(ext, uint64_t(size) + 1);  // zero-extended: never negative
  }
  if (kind == 'b' && size == 1) return boolean(b[0] != 0);
  return nullptr;
}

int64_t Machine::intArg(const Value* v, const char* what, std::string_view fn) {
  if (!v || v->kind != K::Int) error(std::string(fn) + ": " + what + " is not an integer");
  return v->integer;
}

void Machine::dimsArg(const Value* v, const char* what, std::string_view fn, Dims& out) {
  if (!v || !v->isSequence()) error(std::string(fn) + ": " + what + " is not a tuple");
  if (v->items.size() > kMaxDims)
    error(std::string(fn) + ": " + what + " has " + std::to_string(v->items.size()) +
          " dimensions");
  out.clear();
  out.reserve(v->items.size());
  for (const Value* d : v->items) {
    const int64_t x = intArg(d, what, fn);
    if (x < 0) error(std::string(fn) + ": negative " + what + " " + std::to_string(x));
    out.push_back(x);
  }
}

bool Machine::boolArg(const Value* v) {
  if (!v) return false;
  if (v->kind == K::Bool) return v->boolean;
  if (v->kind == K::Int) return v->integer != 0;
  return false;
}

Value* Machine::tensorNode(TensorInfo&& info) {
  Value* t = make(K::Tensor);
  t->index = int64_t(m_table->tensors.size());
  m_table->tensors.push_back(std::move(info));
  return t;
}

TensorInfo& Machine::infoOf(const Value* t) {
  return m_table->tensors[size_t(t->index)];
}

template <typename More>
Value* Machine::stridedTensor(const Value* args, std::string_view fn, More&& more) {
  const Value* st = arg(args, 0);
  if (!st || st->kind != K::Storage) error(std::string(fn) + ": argument 1 is not a storage");
  Value* t = make(K::Tensor);
  t->index = int64_t(m_table->tensors.size());
  TensorInfo& info = m_table->tensors.emplace_back();
  try {
    info.storage = int(st->index);
    info.dtype = m_table->storages[size_t(st->index)].dtype;
    info.storageOffset = intArg(arg(args, 1), "storage offset", fn);
    if (info.storageOffset < 0) error(std::string(fn) + ": negative storage offset");
    dimsArg(arg(args, 2), "size", fn, info.shape);
    dimsArg(arg(args, 3), "stride", fn, info.stride);
    if (info.shape.size() != info.stride.size())
      error(std::string(fn) + ": size has " + std::to_string(info.shape.size()) +
            " dimensions, stride " + std::to_string(info.stride.size()));
    more(info);
  } catch (...) {
    m_table->tensors.pop_back();
    throw;
  }
  return t;
}

Value* Machine::torchCall(Known fn, const Value* callable, const Value* args) {
  // Only error messages need the name as a std::string.
  const std::string_view fnName = callable->text;
  auto name = [fnName] { return std::string(fnName); };
  const size_t n = args->items.size();
  switch (fn) {
    case Known::RebuildTensor: {
      if (n < 4) error(name() + ": expected at least 4 arguments, got " + std::to_string(n));
      return stridedTensor(args, fnName,
                           [&](TensorInfo& info) { info.requiresGrad = boolArg(arg(args, 4)); });
    }
    case Known::RebuildTensorV3: {
      if (n < 7) error(name() + ": expected at least 7 arguments, got " + std::to_string(n));
      return stridedTensor(args, fnName, [&](TensorInfo& info) {
        info.requiresGrad = boolArg(arg(args, 4));
        const Value* dt = arg(args, 6);
        auto d = dt && dt->kind == K::Global ? dtypeFromTorchName(dt->text) : std::nullopt;
        if (!d) error(name() + ": unknown dtype " + (dt ? shortRepr(dt, 40) : "?"));
        info.dtype = *d;
      });
    }
    case Known::RebuildParameter: {
      const Value* data = arg(args, 0);
      if (!data || data->kind != K::Tensor) error(name() + ": argument 1 is not a tensor");
      TensorInfo& info = infoOf(data);
      info.isParameter = true;
      info.requiresGrad = boolArg(arg(args, 1));
      return const_cast<Value*>(data);
    }
    case Known::RebuildQTensor: {
      if (n < 5) error(name() + ": expected at least 5 arguments, got " + std::to_string(n));
      return stridedTensor(args, fnName, [&](TensorInfo& info) {
        const Value* q = arg(args, 4);
        if (q && q->isSequence() && !q->items.empty()) {
          const Value* scheme = q->items[0];
          if (scheme->kind == K::Global)
            info.qscheme = std::string(scheme->text.substr(scheme->text.rfind('.') + 1));
          else if (scheme->kind == K::Object)
            info.qscheme = std::string(scheme->text);
          if (q->items.size() >= 3 && q->items[1]->isNumber() && q->items[2]->isInt()) {
            info.qscale = q->items[1]->number();
            info.qzeroPoint = q->items[2]->integer;
          }
        }
        info.requiresGrad = boolArg(arg(args, 5));
      });
    }
    case Known::RebuildMeta: {
      if (n < 3) error(name() + ": expected at least 3 arguments, got " + std::to_string(n));
      const Value* dt = arg(args, 0);
      auto d = dt && dt->kind == K::Global ? dtypeFromTorchName(dt->text) : std::nullopt;
      if (!d) error(name() + ": unknown dtype");
      TensorInfo info;
      info.dtype = *d;
      info.isMeta = true;
      dimsArg(arg(args, 1), "size", fnName, info.shape);
      dimsArg(arg(args, 2), "stride", fnName, info.stride);
      if (info.shape.size() != info.stride.size())
        error(name() + ": size and stride differ in length");
      info.requiresGrad = boolArg(arg(args, 3));
      return tensorNode(std::move(info));
    }
    case Known::RebuildFromType: {
      // (func, new_type, args, state): call func(*args), then note the type.
      const Value* func = arg(args, 0);
      const Value* type = arg(args, 1);
      const Value* inner = arg(args, 2);
      if (!func || !inner || func->kind != K::Global || inner->kind != K::Tuple) return nullptr;
      Value* t = construct(const_cast<Value*>(func), const_cast<Value*>(inner));
      if (t->kind == K::Object && func->text == "torch._utils._rebuild_wrapper_subclass" && type &&
          type->kind == K::Global) {
        // A tensor subclass with no storage of its own (ShardedTensor,
        // DTensor): an opaque object of that class, its arguments (cls,
        // dtype, size, stride, storage offset, layout, device,
        // requires_grad) as items and its state (local shards) kept.
        t->text = type->text;
        if (const Value* state = arg(args, 3)) {
          adopt(t, state);
          t->state = state;
        }
        return t;
      }
      if (t->kind == K::Tensor && type && type->kind == K::Global) {
        if (type->text == "torch.nn.parameter.Parameter")
          infoOf(t).isParameter = true;
        else if (type->text != "torch.Tensor")
          infoOf(t).subclass = std::string(type->text);
      }
      return t;
    }
    default:
      return nullptr;
  }
}

void Machine::build(Value* obj, Value* state) {
  switch (obj->kind) {
    case K::Dict:
    case K::Object:
      adopt(obj, state);
      obj->state = state;
      return;
    case K::Tensor:
      return;  // parameter / subclass state: nothing we show
    default:
      error("BUILD on a " + std::string(kindName(obj->kind)));
  }
}

}  // namespace ckpt::pickle_machine
