// data.pkl for a value tree: pickle protocol 2 as Python 3's pickle and
// torch.save (1.13) write it (FORMAT.md sections 2 and 5).
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "ckpt/format/error.h"
#include "ckpt/format/torch_writer.h"
#include "pickle_opcodes.h"

namespace ckpt::writer {
namespace {

using K = Value::Kind;

// Opcodes: pickle_opcodes.h, shared with the reader and the scan.
using namespace pickle_ops;

constexpr size_t kBatch = 1000;  // items per APPENDS / SETITEMS, as Python
constexpr int kMaxDepth = 2000;  // recursion (the reader caps nesting at 1000)

// Minimal little-endian two's complement, as Python's encode_long.
std::string encodeLong(int64_t v) {
  std::string out;
  uint64_t u = uint64_t(v);
  for (int i = 0; i < 8; ++i) out += char((u >> (8 * i)) & 0xFF);
  // Drop redundant sign bytes.
  while (out.size() > 1) {
    const uint8_t last = uint8_t(out.back()), prev = uint8_t(out[out.size() - 2]);
    if ((last == 0x00 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80)))
      out.pop_back();
    else
      break;
  }
  return out;
}

// Decimal text ("-123...") to minimal little-endian two's complement.
std::string encodeDecimal(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || text.size() > 100000)
    fail("big integer '" + std::string(text.substr(0, 40)) + "' is not a decimal number");
  std::vector<uint8_t> mag;  // little-endian magnitude
  for (char c : text) {
    if (c < '0' || c > '9')
      fail("big integer '" + std::string(text.substr(0, 40)) + "' is not a decimal number");
    unsigned carry = unsigned(c - '0');
    for (uint8_t& b : mag) {
      const unsigned x = unsigned(b) * 10 + carry;
      b = uint8_t(x);
      carry = x >> 8;
    }
    while (carry) {
      mag.push_back(uint8_t(carry));
      carry >>= 8;
    }
  }
  while (!mag.empty() && mag.back() == 0) mag.pop_back();
  if (mag.empty()) return std::string(1, '\0');
  mag.push_back(0);  // room for the sign bit
  if (negative) {    // two's complement: ~x + 1
    unsigned carry = 1;
    for (uint8_t& b : mag) {
      const unsigned x = unsigned(uint8_t(~b)) + carry;
      b = uint8_t(x);
      carry = x >> 8;
    }
  }
  std::string out(mag.begin(), mag.end());
  while (out.size() > 1) {
    const uint8_t last = uint8_t(out.back()), prev = uint8_t(out[out.size() - 2]);
    if ((last == 0x00 && !(prev & 0x80)) || (last == 0xFF && (prev & 0x80)))
      out.pop_back();
    else
      break;
  }
  return out;
}

std::string tensorWhere(const TensorInfo& t, int64_t index) {
  const std::string p = joinPath(t.path);
  return "tensor #" + std::to_string(index) + (p.empty() ? "" : " (" + p + ")");
}

class Writer {
 public:
  explicit Writer(const TensorTable& table) : m_table(table) {}

  PickledTree run(const Value* root) {
    if (!root) fail("no value to write");
    count(root, 0);
    m_out.reserve(4096);
    op(PROTO);
    m_out += char(2);
    write(root, 0);
    op(STOP);
    PickledTree result;
    result.bytes = std::move(m_out);
    result.storages = std::move(m_used);
    return result;
  }

 private:
  struct Node {
    uint32_t refs = 0;
    int64_t memo = -1;
    uint8_t state = 0;  // 0 not written, 1 being written, 2 written
  };

  static bool memoizable(const Value* v) {
    switch (v->kind) {
      case K::List:
      case K::Set:
      case K::Dict:
      case K::Object:
      case K::Tensor:
      case K::Bytes:
        return true;
      case K::Tuple:
        return !v->items.empty();
      default:
        return false;
    }
  }

  // Pass 1: how often each container is referenced (shared ones get a memo slot).
  void count(const Value* v, int depth) {
    if (!v) fail("a null value in the tree");
    if (depth > kMaxDepth)
      fail("the tree nests deeper than " + std::to_string(kMaxDepth) + " levels");
    if (!memoizable(v)) return;
    if (++m_nodes[v].refs > 1) return;
    forEachChild(v, [&](const Value* c) { count(c, depth + 1); });
  }

  template <typename Fn>
  static void forEachChild(const Value* v, Fn&& fn) {
    switch (v->kind) {
      case K::List:
      case K::Tuple:
      case K::Set:
        for (const Value* x : v->items) fn(x);
        break;
      case K::Dict:
        for (const auto& e : v->entries) {
          fn(e.first);
          fn(e.second);
        }
        if (v->tag == Value::kOrderedDict && v->state) fn(v->state);
        break;
      case K::Object:
        if (v->callee) fn(v->callee);
        for (const Value* x : v->items) fn(x);
        for (const Value* x : v->listItems) fn(x);
        for (const auto& e : v->entries) {
          fn(e.first);
          fn(e.second);
        }
        if (v->state) fn(v->state);
        break;
      default:
        break;
    }
  }

  // ---- primitives ---------------------------------------------------------
  void op(uint8_t o) { m_out += char(o); }
  void u32(uint64_t v) {
    for (int i = 0; i < 4; ++i) m_out += char((v >> (8 * i)) & 0xFF);
  }
  void integer(int64_t v) {
    if (v >= 0 && v <= 0xFF) {
      op(BININT1);
      m_out += char(v);
    } else if (v >= 0 && v <= 0xFFFF) {
      op(BININT2);
      m_out += char(v & 0xFF);
      m_out += char(v >> 8);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op(BININT);
      u32(uint64_t(uint32_t(int32_t(v))));
    } else {
      longBytes(encodeLong(v));
    }
  }
  void longBytes(const std::string& b) {
    if (b.size() < 256) {
      op(LONG1);
      m_out += char(b.size());
    } else {
      op(LONG4);
      u32(b.size());
    }
    m_out += b;
  }
  void boolean(bool b) { op(b ? NEWTRUE : NEWFALSE); }
  void real(double d) {
    uint64_t bits = 0;
    std::memcpy(&bits, &d, 8);
    op(BINFLOAT);
    for (int i = 7; i >= 0; --i) m_out += char((bits >> (8 * i)) & 0xFF);
  }
  void str(std::string_view s) {
    if (s.size() > 0xFFFFFFFFull)
      fail("a string of " + std::to_string(s.size()) +
           " bytes (over 4 GiB) cannot be pickled at protocol 2");
    op(BINUNICODE);
    u32(s.size());
    m_out.append(s);
  }
  void global(std::string_view module, std::string_view name) {
    for (std::string_view part : {module, name})
      if (part.empty() || part.find('\n') != std::string_view::npos)
        fail("invalid global name '" + std::string(module) + "." + std::string(name) + "'");
    op(GLOBAL);
    m_out.append(module).append("\n").append(name).append("\n");
  }
  void global(std::string_view qualified) {
    const size_t dot = qualified.rfind('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == qualified.size())
      fail("global '" + std::string(qualified.substr(0, 80)) + "' is not of the form module.name");
    global(qualified.substr(0, dot), qualified.substr(dot + 1));
  }
  void emptyOrderedDict() {
    global("collections", "OrderedDict");
    op(EMPTY_TUPLE);
    op(REDUCE);
  }
  void dims(const std::vector<int64_t>& d) {
    if (d.empty()) {
      op(EMPTY_TUPLE);
      return;
    }
    if (d.size() > 3) op(MARK);
    for (int64_t x : d) integer(x);
    tupleEnd(d.size());
  }
  void tupleEnd(size_t n) {
    switch (n) {
      case 0:
        op(EMPTY_TUPLE);
        break;
      case 1:
        op(TUPLE1);
        break;
      case 2:
        op(TUPLE2);
        break;
      case 3:
        op(TUPLE3);
        break;
      default:
        op(TUPLE);
        break;
    }
  }
  void memoPut(const Value* v) {
    Node& n = m_nodes[v];
    if (n.refs < 2) return;
    n.memo = m_nextMemo++;
    if (n.memo < 256) {
      op(BINPUT);
      m_out += char(n.memo);
    } else {
      op(LONG_BINPUT);
      u32(uint64_t(n.memo));
    }
  }
  void memoGet(int64_t idx) {
    if (idx < 256) {
      op(BINGET);
      m_out += char(idx);
    } else {
      op(LONG_BINGET);
      u32(uint64_t(idx));
    }
  }

  // ---- values ---------------------------------------------------------------
  void write(const Value* v, int depth) {
    if (!v) fail("a null value in the tree");
    if (depth > kMaxDepth)
      fail("the tree nests deeper than " + std::to_string(kMaxDepth) + " levels");
    switch (v->kind) {
      case K::None:
        op(NONE);
        return;
      case K::Bool:
        boolean(v->boolean);
        return;
      case K::Int:
        integer(v->integer);
        return;
      case K::BigInt:
        longBytes(encodeDecimal(v->text));
        return;
      case K::Float:
        real(v->real);
        return;
      case K::Str:
        str(v->text);
        return;
      case K::Global:
        global(v->text);
        return;
      case K::Storage:
        storageRef(v->index, std::nullopt);
        return;
      default:
        break;
    }
    if (!memoizable(v)) {  // the empty tuple
      op(EMPTY_TUPLE);
      return;
    }
    Node& n = m_nodes[v];
    if (n.state != 0) {
      // Met again: a shared reference (written), or a cycle back into a
      // container that is already on the unpickler's stack and memo.
      if (n.memo >= 0) {
        memoGet(n.memo);
        return;
      }
      fail(std::string("cannot write a cycle (through a ") + std::string(kindName(v->kind)) +
           "): pickle can only close cycles through lists, dicts and object state");
    }
    n.state = 1;
    switch (v->kind) {
      case K::Bytes:
        bytes(v);
        break;
      case K::List: {
        op(EMPTY_LIST);
        memoPut(v);
        appends(v->items, depth);
        break;
      }
      case K::Tuple: {
        if (v->items.size() > 3) op(MARK);
        for (const Value* x : v->items) write(x, depth + 1);
        tupleEnd(v->items.size());
        memoPut(v);
        break;
      }
      case K::Set: {
        // Protocol 2 has no set opcodes: builtins.set(list), as Python writes it.
        global("__builtin__", "set");
        op(EMPTY_LIST);
        appends(v->items, depth);
        op(TUPLE1);
        op(REDUCE);
        memoPut(v);
        break;
      }
      case K::Dict: {
        const bool ordered = v->tag == Value::kOrderedDict;
        if (ordered)
          emptyOrderedDict();
        else
          op(EMPTY_DICT);
        memoPut(v);
        setitems(v->entries, depth);
        // Attributes (an OrderedDict's _metadata) via BUILD; a plain dict
        // cannot carry any (Python would fail to load it).
        if (ordered && v->state) {
          write(v->state, depth + 1);
          op(BUILD);
        }
        break;
      }
      case K::Object:
        object(v, depth);
        break;
      case K::Tensor:
        tensor(v);
        break;
      default:
        break;
    }
    m_nodes[v].state = 2;
  }

  void appends(const ArenaArray<const Value*>& items, int depth) {
    for (size_t i = 0; i < items.size(); i += kBatch) {
      op(MARK);
      for (size_t j = i; j < std::min(items.size(), i + kBatch); ++j) write(items[j], depth + 1);
      op(APPENDS);
    }
  }
  void setitems(const ArenaArray<ValuePair>& entries, int depth) {
    for (size_t i = 0; i < entries.size(); i += kBatch) {
      op(MARK);
      for (size_t j = i; j < std::min(entries.size(), i + kBatch); ++j) {
        write(entries[j].first, depth + 1);
        write(entries[j].second, depth + 1);
      }
      op(SETITEMS);
    }
  }

  // bytes at protocol 2, as Python 3 writes them: _codecs.encode(latin-1
  // text, 'latin1'), or bytes() when empty.
  void bytes(const Value* v) {
    if (v->text.empty()) {
      global("__builtin__", "bytes");
      op(EMPTY_TUPLE);
      op(REDUCE);
    } else {
      global("_codecs", "encode");
      std::string utf8;
      utf8.reserve(v->text.size() * 2);
      for (unsigned char c : v->text) {
        if (c < 0x80) {
          utf8 += char(c);
        } else {
          utf8 += char(0xC0 | (c >> 6));
          utf8 += char(0x80 | (c & 0x3F));
        }
      }
      str(utf8);
      str("latin1");
      op(TUPLE2);
      op(REDUCE);
    }
    memoPut(v);
  }

  void object(const Value* v, int depth) {
    if (v->callee)
      write(v->callee, depth + 1);
    else
      global(v->text);
    if (v->items.size() > 3) op(MARK);
    for (const Value* x : v->items) write(x, depth + 1);
    tupleEnd(v->items.size());
    op(v->tag == Value::kMadeByNewObj && !v->callee ? NEWOBJ : REDUCE);
    memoPut(v);
    if (!v->listItems.empty()) appends(v->listItems, depth);
    if (!v->entries.empty()) setitems(v->entries, depth);
    if (v->state) {
      write(v->state, depth + 1);
      op(BUILD);
    }
  }

  // ---- tensors and storages -------------------------------------------------
  static std::string_view storageClass(DType d) {
    switch (d) {
      case DType::Float64:
        return "DoubleStorage";
      case DType::Float32:
        return "FloatStorage";
      case DType::Float16:
        return "HalfStorage";
      case DType::BFloat16:
        return "BFloat16Storage";
      case DType::Int64:
        return "LongStorage";
      case DType::Int32:
        return "IntStorage";
      case DType::Int16:
        return "ShortStorage";
      case DType::Int8:
        return "CharStorage";
      case DType::UInt8:
        return "ByteStorage";
      case DType::Bool:
        return "BoolStorage";
      case DType::Complex64:
        return "ComplexFloatStorage";
      case DType::Complex128:
        return "ComplexDoubleStorage";
      case DType::QInt8:
        return "QInt8Storage";
      case DType::QUInt8:
        return "QUInt8Storage";
      case DType::QInt32:
        return "QInt32Storage";
      case DType::QUInt4x2:
        return "QUInt4x2Storage";
      case DType::QUInt2x4:
        return "QUInt2x4Storage";
      default:
        return {};  // complex32, float8, uint16/32/64: no typed storage in 1.13
    }
  }

  // ('storage', torch.<X>Storage, key, location, numel) BINPERSID. `as`:
  // the dtype the tensors view it as (a storage read as untyped bytes is
  // written typed); none for a bare storage.
  void storageRef(int64_t index, std::optional<DType> as) {
    if (index < 0 || size_t(index) >= m_table.storages.size())
      fail("a storage node (index " + std::to_string(index) +
           ") has no entry in the storage table (was the file opened metadata-only?)");
    const StorageInfo& s = m_table.storages[size_t(index)];
    const DType dtype = as.value_or(s.dtype);
    auto [it, fresh] = m_storageSlot.emplace(index, m_used.size());
    if (fresh) {
      PickledTree::UsedStorage u;
      u.storage = int(index);
      u.key = std::to_string(m_used.size());
      u.dtype = dtype;
      u.nbytes = s.nbytes();
      if (u.nbytes == UINT64_MAX) fail("storage " + s.key + ": size overflows");
      if (storageClass(dtype).empty())
        fail("storage " + s.key + ": dtype " + std::string(dtypeName(dtype)) +
             " has no storage class that PyTorch 1.13 loads (torch." +
             std::string(dtypeName(dtype)) + " tensors cannot be written)");
      const uint64_t elem = uint64_t(dtypeSize(dtype));
      if (u.nbytes % elem)
        fail("storage " + s.key + ": " + std::to_string(u.nbytes) +
             " bytes are not a whole number of " + std::string(dtypeName(dtype)) + " elements");
      u.numel = u.nbytes / elem;
      m_used.push_back(std::move(u));
    } else if (m_used[it->second].dtype != dtype) {
      fail("storage " + s.key + " is viewed as both " +
           std::string(dtypeName(m_used[it->second].dtype)) + " and " +
           std::string(dtypeName(dtype)) + ": a typed storage has one dtype");
    }
    const PickledTree::UsedStorage& u = m_used[it->second];
    if (s.location.find('\n') != std::string::npos) fail("storage " + s.key + ": invalid location");
    op(MARK);
    str("storage");
    global("torch", storageClass(dtype));
    str(u.key);
    str(s.location.empty() ? std::string("cpu") : s.location);
    if (u.numel > uint64_t(INT64_MAX)) fail("storage " + s.key + ": too many elements");
    integer(int64_t(u.numel));
    op(TUPLE);
    op(BINPERSID);
  }

  // The tensor's extent must lie inside its storage, or torch refuses it.
  void checkExtent(const TensorInfo& t, int64_t index) {
    if (t.shape.size() != t.stride.size())
      fail(tensorWhere(t, index) + ": shape has " + std::to_string(t.shape.size()) +
           " dimensions, stride " + std::to_string(t.stride.size()));
    if (t.storageOffset < 0) fail(tensorWhere(t, index) + ": negative storage offset");
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (t.shape[d] < 0 || t.stride[d] < 0)
        fail(tensorWhere(t, index) + ": negative size or stride");
    if (t.isMeta || t.numel() == 0) return;
    const StorageInfo& s = m_table.storages[size_t(t.storage)];
    uint64_t last = uint64_t(t.storageOffset), term = 0;
    bool overflow = false;
    for (size_t d = 0; d < t.shape.size(); ++d)
      overflow |= mulOverflows(uint64_t(t.shape[d] - 1), uint64_t(t.stride[d]), &term) ||
                  addOverflows(last, term, &last);
    const uint64_t end = overflow ? UINT64_MAX : dtypeBytesFor(t.dtype, last + 1);
    if (end == UINT64_MAX || end > s.nbytes())
      fail(tensorWhere(t, index) + ": its extent (offset " + std::to_string(t.storageOffset) +
           ", size " + t.shapeString() + ") does not fit in storage " + s.key + " (" +
           std::to_string(s.nbytes()) + " bytes)");
  }

  // The rebuild function torch 1.13 uses for the tensor.
  static std::string_view tensorFunc(const TensorInfo& t) {
    if (t.isMeta || t.storage < 0) return "_rebuild_meta_tensor_no_storage";
    return dtypeIsQuantized(t.dtype) ? "_rebuild_qtensor" : "_rebuild_tensor_v2";
  }

  // Its argument tuple (MARK ... TUPLE).
  void tensorArgs(const TensorInfo& t, int64_t index, bool requiresGrad) {
    if (t.isMeta || t.storage < 0) {
      if (!t.isMeta) fail(tensorWhere(t, index) + " has no storage");
      op(MARK);
      global("torch", dtypeName(t.dtype));
      dims(t.shape);
      dims(t.stride);
      boolean(requiresGrad);
      op(TUPLE);
      return;
    }
    if (size_t(t.storage) >= m_table.storages.size())
      fail(tensorWhere(t, index) + ": storage index " + std::to_string(t.storage) +
           " is not in the table");
    checkExtent(t, index);
    const bool quantized = dtypeIsQuantized(t.dtype);
    if (quantized && t.qscheme != "per_tensor_affine")
      fail(tensorWhere(t, index) + ": quantization scheme '" + t.qscheme +
           "' cannot be written (only per_tensor_affine keeps its parameters in the tree)");
    op(MARK);
    storageRef(t.storage, t.dtype);
    integer(t.storageOffset);
    dims(t.shape);
    dims(t.stride);
    if (quantized) {
      global("torch", "per_tensor_affine");
      real(t.qscale);
      integer(t.qzeroPoint);
      op(TUPLE3);
    }
    boolean(requiresGrad);
    emptyOrderedDict();  // backward hooks
    op(TUPLE);
  }

  void tensor(const Value* v) {
    const int64_t index = v->index;
    if (index < 0 || size_t(index) >= m_table.tensors.size())
      fail("tensor node #" + std::to_string(index) + " has no entry in the tensor table (" +
           std::to_string(m_table.tensors.size()) + " tensors)");
    const TensorInfo& t = m_table.tensors[size_t(index)];
    if (t.isParameter) {
      // Parameter.__reduce_ex__: _rebuild_parameter(data, requires_grad,
      // OrderedDict()), the data itself saved without requires_grad.
      global("torch._utils", "_rebuild_parameter");
      global("torch._utils", tensorFunc(t));
      tensorArgs(t, index, false);
      op(REDUCE);
      boolean(t.requiresGrad);
      emptyOrderedDict();
      op(TUPLE3);
      op(REDUCE);
    } else if (!t.subclass.empty() && t.subclass != "torch.Tensor") {
      // A tensor subclass: _rebuild_from_type_v2(func, type, args, state);
      // the reader keeps no subclass state, so the state is an empty dict.
      global("torch._tensor", "_rebuild_from_type_v2");
      op(MARK);
      global("torch._utils", tensorFunc(t));
      global(t.subclass);
      tensorArgs(t, index, t.requiresGrad);
      op(EMPTY_DICT);
      op(TUPLE);
      op(REDUCE);
    } else {
      global("torch._utils", tensorFunc(t));
      tensorArgs(t, index, t.requiresGrad);
      op(REDUCE);
    }
    memoPut(v);
  }

  const TensorTable& m_table;
  std::string m_out;
  std::unordered_map<const Value*, Node> m_nodes;
  int64_t m_nextMemo = 0;
  std::unordered_map<int64_t, size_t> m_storageSlot;
  std::vector<PickledTree::UsedStorage> m_used;
};

}  // namespace

PickledTree pickleTree(const Value* root, const TensorTable& table) {
  Writer w(table);
  return w.run(root);
}

}  // namespace ckpt::writer
