#include "checkpoint_io.h"

#include <torch/torch.h>

#include <map>
#include <tuple>

#include "ckpt/format/error.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/torch_writer.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

std::optional<at::ScalarType> scalarTypeOf(DType t) {
  switch (t) {
    case DType::Float64:
      return at::kDouble;
    case DType::Float32:
      return at::kFloat;
    case DType::Float16:
      return at::kHalf;
    case DType::BFloat16:
      return at::kBFloat16;
    case DType::Int64:
      return at::kLong;
    case DType::Int32:
      return at::kInt;
    case DType::Int16:
      return at::kShort;
    case DType::Int8:
      return at::kChar;
    case DType::UInt8:
      return at::kByte;
    case DType::Bool:
      return at::kBool;
    case DType::Complex64:
      return at::kComplexFloat;
    case DType::Complex128:
      return at::kComplexDouble;
    default:
      return std::nullopt;
  }
}

DType dtypeOf(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return DType::Float64;
    case at::kFloat:
      return DType::Float32;
    case at::kHalf:
      return DType::Float16;
    case at::kBFloat16:
      return DType::BFloat16;
    case at::kLong:
      return DType::Int64;
    case at::kInt:
      return DType::Int32;
    case at::kShort:
      return DType::Int16;
    case at::kChar:
      return DType::Int8;
    case at::kByte:
      return DType::UInt8;
    case at::kBool:
      return DType::Bool;
    case at::kComplexFloat:
      return DType::Complex64;
    case at::kComplexDouble:
      return DType::Complex128;
    default:
      throw std::runtime_error(std::string("cannot save tensors of type ") + c10::toString(t));
  }
}

// Everything the writer needs, collected while the tree is built.
struct Collector {
  TreeBuilder tree;
  TensorTable table;
  std::vector<StorageBytes> bytes;
  std::vector<at::Tensor> keepAlive;
  std::map<std::tuple<const void*, at::ScalarType, int64_t>, int>
      storageOf;  // ties share one storage

  const Value* tensor(const at::Tensor& source) {
    const at::Tensor cpu = source.detach().to(at::kCPU).contiguous();
    const auto key = std::make_tuple(source.data_ptr(), source.scalar_type(), source.numel());
    int storage = -1;
    if (auto it = storageOf.find(key); it != storageOf.end() && source.numel() > 0) {
      storage = it->second;
    } else {
      StorageInfo s;
      storage = int(table.storages.size());
      s.key = std::to_string(storage);
      s.dtype = dtypeOf(cpu.scalar_type());
      s.numel = uint64_t(cpu.numel());
      s.location = "cpu";
      table.storages.push_back(std::move(s));
      bytes.push_back({cpu.data_ptr(), uint64_t(cpu.nbytes())});
      keepAlive.push_back(cpu);
      storageOf[key] = storage;
    }
    TensorInfo info;
    info.dtype = dtypeOf(cpu.scalar_type());
    info.shape = cpu.sizes().vec();
    info.stride = contiguousStrides(info.shape);
    info.storage = storage;
    const int64_t index = int64_t(table.tensors.size());
    table.tensors.push_back(std::move(info));
    return tree.tensor(index);
  }

  const Value* value(const json& j) {
    switch (j.type()) {
      case json::value_t::null:
        return tree.none();
      case json::value_t::boolean:
        return tree.boolean(j.get<bool>());
      case json::value_t::number_integer:
        return tree.integer(j.get<int64_t>());
      case json::value_t::number_unsigned:
        if (j.get<uint64_t>() <= uint64_t(INT64_MAX))
          return tree.integer(int64_t(j.get<uint64_t>()));
        return tree.real(double(j.get<uint64_t>()));
      case json::value_t::number_float:
        return tree.real(j.get<double>());
      case json::value_t::string:
        return tree.str(j.get<std::string>());
      case json::value_t::array: {
        Value* list = tree.list();
        for (const json& x : j) tree.append(list, value(x));
        return list;
      }
      case json::value_t::object: {
        Value* dict = tree.dict();
        for (const auto& [k, x] : j.items()) tree.set(dict, k, value(x));
        return dict;
      }
      default:
        return tree.none();
    }
  }
};

}  // namespace

at::Tensor readTensor(const CheckpointFile& file, size_t index) {
  const TensorInfo& info = file.tensors().at(index);
  const auto type = scalarTypeOf(info.dtype);
  const std::string where = file.path() + ": tensor " + joinPath(info.path);
  if (!type)
    throw std::runtime_error(where + ": dtype " + std::string(dtypeName(info.dtype)) +
                             " cannot be loaded into a model");
  if (file.bigEndian())
    throw std::runtime_error(where + ": big-endian data is not supported for training");
  const TensorData data = file.tensorData(index);
  if (info.numel() == 0) return at::empty(info.shape, at::TensorOptions().dtype(*type));
  if (data.chunked()) {
    // A sharded checkpoint's tensor: its chunks copied in, one after another.
    at::Tensor whole = at::empty(info.shape, at::TensorOptions().dtype(*type));
    auto* out = static_cast<uint8_t*>(whole.data_ptr());
    const size_t es = size_t(dtypeSize(info.dtype));
    for (uint64_t first = 0; first < data.numel();)
      first += data.readRaw(first, 1 << 20, out + first * es);
    return whole;
  }
  const uint8_t* first = data.elementPtr(uint64_t(info.storageOffset));
  const at::Tensor view = at::from_blob(const_cast<uint8_t*>(first), info.shape, info.stride,
                                        at::TensorOptions().dtype(*type));
  return view.clone(at::MemoryFormat::Contiguous);
}

CheckpointContent loadCheckpointContent(const std::string& path, ModelConfig* config) {
  const auto file = CheckpointFile::open(path);
  const CheckpointView view(*file);
  CheckpointContent content;
  if (!view.modelState())
    throw std::runtime_error(path + ": no model state (model_state or a state dict) in this file");
  if (config) {
    if (!view.config())
      throw std::runtime_error(path + ": no model config in this file (metadata 'config')");
    try {
      *config = ModelConfig::fromValue(view.config());
    } catch (const ConfigError& e) {
      throw ConfigError(path + ": config: " + e.what(), e.fields());
    }
  }
  const auto& entries = view.entries();
  std::vector<at::Tensor> loaded(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const StateEntry& e = entries[i];
    loaded[i] = e.tiedTo >= 0 ? loaded[size_t(e.tiedTo)] : readTensor(*file, size_t(e.tensor));
    content.modelState.emplace_back(e.name, loaded[i]);
  }
  if (const Value* opt = view.optimizer()) {
    OptimizerSnapshot snap;
    if (const Value* groups = opt->get("param_groups");
        groups && groups->kind == Value::Kind::List && !groups->items.empty()) {
      const json g = plainJson(groups->items.front());
      snap.lr = g.value("lr", snap.lr);
      if (g.contains("betas") && g["betas"].is_array() && g["betas"].size() == 2) {
        snap.beta1 = g["betas"][0].get<double>();
        snap.beta2 = g["betas"][1].get<double>();
      }
      snap.eps = g.value("eps", snap.eps);
      snap.weightDecay = g.value("weight_decay", snap.weightDecay);
      for (const Value* gv : groups->items)
        if (const Value* p = gv->get("params"); p && p->kind == Value::Kind::List)
          snap.paramCount += int64_t(p->items.size());
    }
    for (const OptimizerParam& p : view.optimizerParams()) {
      if (p.expAvg < 0 || p.expAvgSq < 0) continue;
      AdamState s;
      s.index = p.index;
      if (p.stepTensor >= 0)
        s.step = int64_t(readTensor(*file, size_t(p.stepTensor)).item<double>());
      else if (p.step)
        s.step = int64_t(*p.step);
      s.expAvg = readTensor(*file, size_t(p.expAvg));
      s.expAvgSq = readTensor(*file, size_t(p.expAvgSq));
      snap.states.push_back(std::move(s));
    }
    content.optimizer = std::move(snap);
  }
  if (view.metadata()) content.metadata = plainJson(view.metadata());
  const Value* root = file->root();
  if (const Value* ts = root->get("trainer_state"); ts && ts->isDict())
    content.trainerState = plainJson(ts);
  if (const Value* rng = root->get("rng_state"); rng && rng->isTensor())
    content.rngState = readTensor(*file, size_t(rng->index));
  if (const Value* rngs = root->get("rank_rng_states"); rngs && rngs->kind == Value::Kind::List)
    for (const Value* r : rngs->items)
      if (r->isTensor()) content.rankRngStates.push_back(readTensor(*file, size_t(r->index)));
  // Top-level keys the Python library repeats (step, loss, ...) when there
  // is no metadata dict.
  if (content.metadata.empty() && root->isDict() && root != view.modelState())
    for (const auto& [k, v] : root->entries)
      if (k->isStr() && v != view.modelState() && v != view.optimizer() &&
          v->kind != Value::Kind::Tensor)
        content.metadata[k->str()] = plainJson(v);
  return content;
}

void saveCheckpointContent(const std::string& path, const CheckpointContent& content) {
  Collector c;
  Value* root = c.tree.dict();
  Value* state = c.tree.orderedDict();
  for (const auto& [name, t] : content.modelState) c.tree.set(state, name, c.tensor(t));
  c.tree.set(root, "model_state", state);
  if (content.optimizer) {
    const OptimizerSnapshot& o = *content.optimizer;
    Value* opt = c.tree.dict();
    Value* st = c.tree.dict();
    for (const AdamState& s : o.states) {
      Value* one = c.tree.dict();
      c.tree.set(one, "step", c.tensor(torch::tensor(double(s.step), torch::kFloat32).reshape({})));
      c.tree.set(one, "exp_avg", c.tensor(s.expAvg));
      c.tree.set(one, "exp_avg_sq", c.tensor(s.expAvgSq));
      c.tree.set(st, s.index, one);
    }
    c.tree.set(opt, "state", st);
    Value* groups = c.tree.list();
    Value* g = c.tree.dict();
    c.tree.set(g, "lr", c.tree.real(o.lr));
    c.tree.set(g, "betas", c.tree.tuple({c.tree.real(o.beta1), c.tree.real(o.beta2)}));
    c.tree.set(g, "eps", c.tree.real(o.eps));
    c.tree.set(g, "weight_decay", c.tree.real(o.weightDecay));
    c.tree.set(g, "amsgrad", c.tree.boolean(false));
    c.tree.set(g, "foreach", c.tree.none());
    c.tree.set(g, "maximize", c.tree.boolean(false));
    c.tree.set(g, "capturable", c.tree.boolean(false));
    Value* params = c.tree.list();
    for (int64_t i = 0; i < o.paramCount; ++i) c.tree.append(params, c.tree.integer(i));
    c.tree.set(g, "params", params);
    c.tree.append(groups, g);
    c.tree.set(opt, "param_groups", groups);
    c.tree.set(root, "optimizer", opt);
  }
  const Value* meta = c.value(content.metadata);
  c.tree.set(root, "metadata", meta);
  for (const auto& [k, v] : content.metadata.items()) c.tree.set(root, k, c.value(v));
  if (!content.trainerState.is_null())
    c.tree.set(root, "trainer_state", c.value(content.trainerState));
  if (content.rngState) c.tree.set(root, "rng_state", c.tensor(*content.rngState));
  if (!content.rankRngStates.empty()) {
    Value* rngs = c.tree.list();
    for (const at::Tensor& r : content.rankRngStates) c.tree.append(rngs, c.tensor(r));
    c.tree.set(root, "rank_rng_states", rngs);
  }
  writeTorchFile(path, root, c.table, c.bytes);
}

}  // namespace ckpt
