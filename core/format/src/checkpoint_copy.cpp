#include "ckpt/format/checkpoint_copy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <tuple>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
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

// float -> IEEE half, round to nearest even (as c10::Half): overflow to
// infinity, subnormals kept, NaN a quiet NaN with the sign.
uint16_t toF16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  const auto sign = uint16_t((bits >> 16) & 0x8000u);
  bits &= 0x7FFFFFFFu;
  if (bits >= 0x47800000u)  // >= 65536, infinity or NaN
    return uint16_t(sign | (bits > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (bits < 0x38800000u) {  // below 2^-14: a subnormal half or zero
    // Adding 0.5 lines the half's subnormal unit (2^-24) up with the last
    // bit of the float's mantissa: the FPU rounds to nearest even for us.
    float magnitude = 0;
    std::memcpy(&magnitude, &bits, 4);
    magnitude += 0.5f;
    uint32_t r = 0;
    std::memcpy(&r, &magnitude, 4);
    return uint16_t(sign | (r - 0x3F000000u));
  }
  const uint32_t odd = (bits >> 13) & 1u;
  bits += 0xC8000FFFu + odd;  // rebias the exponent (15 - 127) and round
  return uint16_t(sign | (bits >> 13));
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
        // As torch: a double goes to half / bfloat16 through float.
        const float f = float(values[i]);
        if (out == DType::Float32) {
          std::memcpy(p + i * 4, &f, 4);
        } else if (out == DType::BFloat16 || out == DType::Float16) {
          const uint16_t b = out == DType::BFloat16 ? toBf16(f) : toF16(f);
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

bool reachesTensor(const Value* v) {
  bool found = false;
  walkTensors(v, [&](const Value*, const TensorPath&) { found = true; });
  return found;
}

void setEntry(TreeBuilder& tree, Value* dict, const Value* key, const Value* v) {
  if (key->isStr())
    tree.set(dict, key->text, v);
  else if (key->kind == K::Int)
    tree.set(dict, key->integer, v);
  // Other key kinds (tuples, floats) do not occur in the layouts copied here.
}

// A dict's entries without a safetensors-style "__metadata__" description.
Value* withoutDescription(TreeBuilder& tree, const Value* dict) {
  Value* copy = tree.orderedDict();
  for (const auto& [k, v] : dict->entries)
    if (!(k->isStr() && k->text == "__metadata__" && v->kind != K::Tensor))
      setEntry(tree, copy, k, v);
  return copy;
}

Value* sourceRecord(TreeBuilder& tree, const CopySource& s) {
  Value* d = tree.dict();
  tree.set(d, "path", tree.str(s.path));
  tree.set(d, "size", tree.integer(int64_t(s.size)));
  tree.set(d, "mtime", tree.str(s.mtime));
  tree.set(d, "step", s.step ? tree.integer(*s.step) : tree.none());
  return d;
}

// The tree that goes into the copy (see CopyContent).
const Value* contentTree(const CheckpointFile& source, const CheckpointView& view,
                         const CopyOptions& options, TreeBuilder& tree, const Value* record) {
  const Value* root = source.root();
  const bool described =
      source.format() == FileFormat::Sharded || source.format() == FileFormat::Safetensors;
  if (options.content == CopyContent::Whole) {
    // A sharded or safetensors checkpoint's "__metadata__" belongs to its
    // description, not its state.
    return root && root->kind == K::Dict && described ? withoutDescription(tree, root) : root;
  }
  const Value* state = view.modelState();
  if (!state) fail(source.path() + ": no model state to copy (no state dict found in the file)");
  if (options.content == CopyContent::ModelState) return withoutDescription(tree, state);

  Value* metadata = tree.dict();
  if (const Value* m = view.metadata(); m && m->kind == K::Dict)
    for (const auto& [k, v] : m->entries) setEntry(tree, metadata, k, v);
  tree.set(metadata, "exported_from", record);

  Value* out = tree.dict();
  if (root == state || described) {
    // A bare state dict becomes the modern_llm layout.
    tree.set(out, "model_state", withoutDescription(tree, state));
    tree.set(out, "metadata", metadata);
    for (const auto& [k, v] : metadata->entries) setEntry(tree, out, k, v);
    return out;
  }
  bool wroteMetadata = false;
  for (const auto& [k, v] : root->entries) {
    if (v == view.optimizer()) continue;
    if (v == view.metadata() && k->isStr() && k->text == "metadata") {
      tree.set(out, "metadata", metadata);
      wroteMetadata = true;
      continue;
    }
    if (options.content == CopyContent::ModelOnly && v != state && reachesTensor(v)) continue;
    setEntry(tree, out, k, v);
  }
  if (!wroteMetadata) tree.set(out, "metadata", metadata);
  tree.set(out, "exported_from", record);
  return out;
}

// A string as it is (the writer refuses one that is not UTF-8); anything
// else as JSON text, where names from the file are escaped the one way.
std::string metadataText(const Value* v) {
  if (v->isStr()) return std::string(v->text);
  std::string text;
  appendValueJson(text, v, 100000);
  return text;
}

}  // namespace

std::optional<DType> parseCopyDtype(std::string_view name) {
  if (name == "fp32" || name == "float32") return DType::Float32;
  if (name == "bf16" || name == "bfloat16") return DType::BFloat16;
  if (name == "fp16" || name == "float16" || name == "half") return DType::Float16;
  return std::nullopt;
}

CopySource describeCopySource(const CheckpointFile& source) {
  namespace fs = std::filesystem;
  CopySource s;
  std::error_code ec;
  const fs::path path = fs::absolute(source.path(), ec);
  s.path = ec ? source.path() : path.lexically_normal().string();
  struct stat st {};
  if (::stat(source.path().c_str(), &st) == 0) {
    s.size = uint64_t(st.st_size);
    if (S_ISDIR(st.st_mode)) {
      s.size = 0;
      for (const auto& e : fs::directory_iterator(source.path(), ec))
        if (e.is_regular_file(ec)) s.size += e.file_size(ec);
    }
    std::tm utc{};
    const time_t t = st.st_mtime;
    gmtime_r(&t, &utc);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
    s.mtime = buf;
  }
  s.step = CheckpointView(source).step();
  return s;
}

namespace {

// What a copy holds, worked out before anything is written.
struct CopyPlan {
  TreeBuilder tree;
  const Value* record = nullptr;       // exported_from (WithoutOptimizer, ModelOnly)
  const Value* root = nullptr;         // the tree a torch file gets
  const Value* tensorsFrom = nullptr;  // where the tensors are found
  bool safetensors = false;
  std::vector<int> reached;     // tensor indices, in tree order
  std::vector<int> sharedWith;  // per source tensor: the first viewing the same bytes the same way
  size_t fetches = 0;           // tensors read (a shared one once in a torch file)
  uint64_t bytes = 0;           // tensor bytes written
};

void planCopy(const CheckpointFile& source, const CheckpointView& view, const std::string& target,
              const CopyOptions& options, CopyPlan& plan) {
  if (options.dtype && *options.dtype != DType::Float32 && *options.dtype != DType::BFloat16 &&
      *options.dtype != DType::Float16)
    fail("a copy converts to float32, bfloat16 or float16 only, not " +
         std::string(dtypeName(*options.dtype)));
  const bool exported =
      options.content == CopyContent::WithoutOptimizer || options.content == CopyContent::ModelOnly;
  plan.safetensors =
      options.format == CopyFormat::Safetensors ||
      (options.format == CopyFormat::ByExtension && endsWith(target, ".safetensors"));
  if (exported) plan.record = sourceRecord(plan.tree, describeCopySource(source));
  plan.root = contentTree(source, view, options, plan.tree, plan.record);

  // A safetensors file holds the model state alone unless the whole tree
  // was asked for.
  plan.tensorsFrom = plan.root;
  if (plan.safetensors && options.content != CopyContent::Whole) {
    plan.tensorsFrom = plan.root->get("model_state");
    if (!plan.tensorsFrom) plan.tensorsFrom = plan.root;  // ModelState: the root is the state dict
  }
  walkTensors(plan.tensorsFrom,
              [&](const Value* t, const TensorPath&) { plan.reached.push_back(int(t->index)); });
  for (const int i : plan.reached) {
    const TensorInfo& t = source.tensors()[size_t(i)];
    if (!t.error.empty())
      fail(source.path() + ": tensor " + std::string(t.name()) + ": " + t.error);
    if (t.isMeta || t.storage < 0)
      fail(source.path() + ": tensor " + std::string(t.name()) + " has no data (meta)");
  }

  // Tensors viewing the same bytes the same way (a tied embedding) share
  // one storage in a torch file; each other tensor gets its own.
  plan.sharedWith.resize(source.tensors().size());
  std::map<std::tuple<int, int64_t, std::vector<int64_t>, std::vector<int64_t>, DType>, int>
      firstView;
  for (size_t i = 0; i < source.tensors().size(); ++i) {
    const TensorInfo& t = source.tensors()[i];
    plan.sharedWith[i] = int(i);
    if (t.storage < 0 || !t.error.empty()) continue;
    const auto key =
        std::make_tuple(t.storage, t.storageOffset, t.shape.vec(), t.stride.vec(), t.dtype);
    plan.sharedWith[i] = firstView.emplace(key, int(i)).first->second;
  }
  std::vector<int> read;
  for (const int i : plan.reached)
    read.push_back(plan.safetensors ? i : plan.sharedWith[size_t(i)]);
  std::sort(read.begin(), read.end());
  if (!plan.safetensors) read.erase(std::unique(read.begin(), read.end()), read.end());
  plan.fetches = read.size();
  for (const int i : read) {
    const TensorInfo& t = source.tensors()[size_t(i)];
    plan.bytes += t.numel() * uint64_t(dtypeSize(outputType(t.dtype, options.dtype)));
  }
}

}  // namespace

CopyEstimate estimateCopy(const CheckpointFile& source, const CopyOptions& options) {
  const CheckpointView view(source);
  CopyPlan plan;
  const bool safetensors = options.format == CopyFormat::Safetensors;
  planCopy(source, view, safetensors ? "copy.safetensors" : "copy.pt", options, plan);
  return {plan.reached.size(), plan.bytes};
}

CopyResult copyCheckpoint(const CheckpointFile& source, const std::string& target,
                          const CopyOptions& options) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0)
    fail(target + ": exists; a copy never overwrites a file (choose another name)");
  const CheckpointView view(source);
  CopyPlan plan;
  planCopy(source, view, target, options, plan);

  CopyResult result;
  size_t done = 0;
  auto fetch = [&](size_t index, DType out) {
    if (options.progress && !options.progress(done, plan.fetches)) {
      result.cancelled = true;
      fail("cancelled");
    }
    ByteRegion r = tensorBytes(source, index, out);
    ++done;
    result.bytes += r.size;
    return r;
  };

  try {
    if (plan.safetensors) {
      std::vector<SafetensorsEntry> entries;
      std::vector<int> order;
      walkTensors(plan.tensorsFrom, [&](const Value* t, const TensorPath& path) {
        const TensorInfo& info = source.tensors()[size_t(t->index)];
        entries.push_back(
            {std::string(path.name()), outputType(info.dtype, options.dtype), info.shape});
        order.push_back(int(t->index));
      });
      std::vector<std::pair<std::string, std::string>> metadata;
      auto has = [&](std::string_view key) {
        return std::any_of(metadata.begin(), metadata.end(),
                           [&](const auto& kv) { return kv.first == key; });
      };
      if (const Value* m = view.metadata(); m && m->kind == K::Dict)
        for (const auto& [k, v] : m->entries)
          if (k->isStr()) metadata.emplace_back(std::string(k->text), metadataText(v));
      if (plan.record) {
        // The config a loader needs, also when it sits at the top level only.
        if (const Value* c = view.lookup("config"); c && !has("config"))
          metadata.emplace_back("config", metadataText(c));
        metadata.emplace_back("exported_from", metadataText(plan.record));
      }
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
      out.storage = plan.sharedWith[i];
      out.error.clear();
      table.storages.push_back(storageOf(out, i));
      table.tensors.push_back(std::move(out));
    }
    writeTorchFileFetching(target, plan.root, table, [&](size_t storage) {
      return fetch(storage, table.tensors[storage].dtype);
    });
    result.tensors = plan.reached.size();
  } catch (const FormatError&) {
    if (result.cancelled) return result;
    throw;
  }
  return result;
}

}  // namespace ckpt
