#include "ckpt/format/consolidate.h"

#include <sys/stat.h>

#include <cstring>
#include <memory>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/torch_writer.h"

namespace ckpt {
namespace {

using K = Value::Kind;

bool endsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// float -> bfloat16, round to nearest even; NaN stays a quiet NaN.
uint16_t toBf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu))
    return uint16_t((bits >> 16) | 0x0040u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

DType outputType(DType stored, const std::optional<DType>& wanted) {
  if (!wanted || !dtypeIsFloatingPoint(stored) || dtypeIsComplex(stored)) return stored;
  return *wanted;
}

// Tensor `index` of `file`, contiguous, little-endian, as `out` elements.
ByteRegion tensorBytes(const CheckpointFile& file, size_t index, DType out) {
  const TensorData data = file.tensorData(index);
  const uint64_t numel = data.numel();
  const size_t es = size_t(dtypeSize(out));
  auto buffer = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<uint64_t>(numel * es, 1)]);
  constexpr size_t kBlock = 1 << 16;
  if (out == data.info().dtype) {
    for (uint64_t first = 0; first < numel;)
      first += data.readRaw(first, kBlock, buffer.get() + first * es);
  } else {
    std::vector<double> values(kBlock);
    for (uint64_t first = 0; first < numel;) {
      const size_t n = data.read(first, kBlock, values.data());
      uint8_t* p = buffer.get() + first * es;
      for (size_t i = 0; i < n; ++i) {
        const float f = float(values[i]);
        if (out == DType::Float32) {
          std::memcpy(p + i * 4, &f, 4);
        } else if (out == DType::BFloat16) {
          const uint16_t b = toBf16(f);
          std::memcpy(p + i * 2, &b, 2);
        } else {
          fail("cannot convert to " + std::string(dtypeName(out)));
        }
      }
      first += n;
    }
  }
  return ByteRegion{std::shared_ptr<const void>(buffer, buffer.get()), buffer.get(), numel * es};
}

}  // namespace

ConsolidateResult consolidateCheckpoint(const CheckpointFile& source, const std::string& target,
                                        const ConsolidateOptions& options) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0)
    fail(target + ": exists; consolidate never overwrites a file");
  if (options.dtype && *options.dtype != DType::Float32 && *options.dtype != DType::BFloat16)
    fail("consolidate converts to float32 or bfloat16 only");
  const CheckpointView view(source);
  const bool sharded = source.format() == FileFormat::Sharded;

  // What goes in: the whole tree, or the model state; a sharded
  // checkpoint's "__metadata__" belongs to its description, not its state.
  TreeBuilder tree;
  const Value* root = source.root();
  if (options.modelOnly) {
    if (!view.modelState()) fail(source.path() + ": no model state to write (--model-only)");
    root = view.modelState();
  }
  if (root && root->kind == K::Dict &&
      (sharded || source.format() == FileFormat::Safetensors || options.modelOnly)) {
    Value* copy = tree.orderedDict();
    for (const auto& [k, v] : root->entries)
      if (!(k->isStr() && k->text == "__metadata__" && v->kind != K::Tensor))
        tree.set(copy, k->text, v);
    root = copy;
  }

  // The tensors the tree reaches, each written whole into its own storage.
  std::vector<int> reached;
  walkTensors(root, [&](const Value* t, const TensorPath&) { reached.push_back(int(t->index)); });
  for (const int i : reached) {
    const TensorInfo& t = source.tensors()[size_t(i)];
    if (!t.error.empty())
      fail(source.path() + ": tensor " + std::string(t.name()) + ": " + t.error);
    if (t.isMeta || t.storage < 0)
      fail(source.path() + ": tensor " + std::string(t.name()) + " has no data (meta)");
  }
  ConsolidateResult result;
  size_t done = 0;
  auto fetch = [&](size_t index, DType out) {
    if (options.progress && !options.progress(done, reached.size())) {
      result.cancelled = true;
      fail("cancelled");
    }
    ByteRegion r = tensorBytes(source, index, out);
    ++done;
    result.bytes += r.size;
    return r;
  };

  try {
    if (endsWith(target, ".safetensors")) {
      std::vector<SafetensorsEntry> entries;
      std::vector<int> order;
      std::vector<std::string> names;
      walkTensors(root, [&](const Value* t, const TensorPath& path) {
        const TensorInfo& info = source.tensors()[size_t(t->index)];
        entries.push_back(
            {std::string(path.name()), outputType(info.dtype, options.dtype), info.shape});
        order.push_back(int(t->index));
      });
      std::vector<std::pair<std::string, std::string>> metadata;
      if (const Value* m = view.metadata(); m && m->kind == K::Dict)
        for (const auto& [k, v] : m->entries)
          if (k->isStr())
            metadata.emplace_back(std::string(k->text),
                                  v->isStr() ? std::string(v->text) : shortRepr(v, 1000));
      writeSafetensorsFile(target, entries, metadata,
                           [&](size_t e) { return fetch(size_t(order[e]), entries[e].dtype); });
      result.tensors = entries.size();
      return result;
    }
    TensorTable table;
    for (size_t i = 0; i < source.tensors().size(); ++i) {
      const TensorInfo& t = source.tensors()[i];
      TensorInfo out = t;
      out.dtype = outputType(t.dtype, options.dtype);
      out.stride = contiguousStrides(t.shape.vec());
      out.storageOffset = 0;
      out.storage = int(i);
      out.error.clear();
      table.storages.push_back(storageOf(out, i));
      table.tensors.push_back(std::move(out));
    }
    writeTorchFileFetching(target, root, table, [&](size_t storage) {
      return fetch(storage, table.tensors[storage].dtype);
    });
    result.tensors = reached.size();
  } catch (const FormatError&) {
    if (result.cancelled) return result;
    throw;
  }
  return result;
}

}  // namespace ckpt
