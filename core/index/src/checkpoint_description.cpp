#include "ckpt/index/checkpoint_description.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <map>
#include <unordered_set>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/tensor_data.h"
#include "ckpt/format/value.h"
#include "ckpt/index/scanner.h"

namespace ckpt {
namespace {

std::string keyText(const Value* k) {
  return k->isStr() ? k->str() : shortRepr(k, 40);
}

// The value tree for the Metadata tab. Shared nodes are shown wherever they
// occur; a node that contains itself is cut at the repeat; past
// kMaxDescribedValues nodes the rest is left out (a pickle can hold millions).
struct TreeBuilder {
  const CheckpointFile& file;
  size_t budget = kMaxDescribedValues;
  std::unordered_set<const Value*> onPath;

  static std::string typeName(const Value* v) {
    if (v->kind == Value::Kind::Dict && v->tag == Value::kOrderedDict) return "OrderedDict";
    return std::string(kindName(v->kind));
  }

  void fill(DescribedValue& n, const Value* v, int depth) {
    if (!v) {
      n.type = "None";
      return;
    }
    n.type = typeName(v);
    if (budget == 0) {
      n.truncated = true;
      return;
    }
    --budget;
    using K = Value::Kind;
    switch (v->kind) {
      case K::Tensor:
        n.tensor = int(v->index);
        if (v->index >= 0 && size_t(v->index) < file.tensors().size()) {
          const TensorInfo& t = file.tensors()[size_t(v->index)];
          n.text = std::string(dtypeName(t.dtype)) + " " + t.shapeString();
        }
        return;
      case K::Object:
        n.text = std::string(v->text);
        break;
      case K::List:
      case K::Tuple:
      case K::Set:
        n.count = int64_t(v->items.size());
        break;
      case K::Dict:
        n.count = int64_t(v->entries.size());
        break;
      default:
        n.text = shortRepr(v, 200);
        return;
    }
    if (depth > 200 || !onPath.insert(v).second) {
      n.repeats = true;
      return;
    }
    auto add = [&](std::string key, const Value* x) -> DescribedValue& {
      n.children.emplace_back();
      n.children.back().key = std::move(key);
      fill(n.children.back(), x, depth + 1);
      return n.children.back();
    };
    switch (v->kind) {
      case K::List:
      case K::Tuple:
      case K::Set:
        for (size_t i = 0; i < v->items.size(); ++i) add(std::to_string(i), v->items[i]);
        break;
      case K::Dict:
        for (const auto& [k, x] : v->entries) add(keyText(k), x);
        break;
      case K::Object:
        // Opaque Python objects: the class, then what the pickle gave it.
        if (v->callee) add("callee", v->callee);
        if (!v->items.empty()) {
          n.children.emplace_back();
          DescribedValue& a = n.children.back();
          a.key = "args";
          a.type = "tuple";
          a.count = int64_t(v->items.size());
          for (size_t i = 0; i < v->items.size(); ++i) {
            a.children.emplace_back();
            a.children.back().key = std::to_string(i);
            fill(a.children.back(), v->items[i], depth + 2);
          }
        }
        if (v->state) add("state", v->state);
        for (size_t i = 0; i < v->listItems.size(); ++i) {
          n.children.emplace_back();
          DescribedValue& item = n.children.back();
          item.keyKind = DescribedValue::Key::ListItem;
          item.item = int64_t(i);
          fill(item, v->listItems[i], depth + 1);
        }
        for (const auto& [k, x] : v->entries) add(keyText(k), x);
        break;
      default:
        break;
    }
    onPath.erase(v);
  }
};

void describeOptimizer(const CheckpointFile& file, const CheckpointView& view,
                       CheckpointDescription& out) {
  // The counts the Summary and `info` show, from core's one summary.
  if (const auto o = summarizeOptimizer(view)) {
    out.hasOptimizer = true;
    out.optimizerWithState = o->withState;
    out.optimizerGroups = o->groups;
    out.optimizerHyper = o->hyper;
  }
  for (const OptimizerParam& p : view.optimizerParams()) {
    DescribedOptimizerRow r;
    r.index = p.index;
    r.name = p.name;
    if (p.step) {
      r.step = formatPythonFloat(*p.step);
    } else if (p.stepTensor >= 0) {
      // A 0-dim tensor of 4 or 8 bytes.
      try {
        r.step = formatPythonFloat(file.tensorData(size_t(p.stepTensor)).at(0));
      } catch (const std::exception&) {
        r.stepUnreadable = true;
      }
    }
    if (p.expAvg >= 0) r.shape = file.tensors()[size_t(p.expAvg)].shapeString();
    r.expAvg = p.expAvg;
    r.expAvgSq = p.expAvgSq;
    r.problem = p.problem;
    out.optimizer.push_back(std::move(r));
  }
}

void describeTensors(const CheckpointFile& file, const CheckpointView& view,
                     CheckpointDescription& out) {
  // Which parameter an optimizer tensor belongs to, which tensors share bytes.
  std::map<int, std::pair<DescribedTensor::Owner, std::string>> owner;
  for (const OptimizerParam& p : view.optimizerParams()) {
    if (p.name.empty()) continue;
    for (int t : {p.expAvg, p.expAvgSq, p.stepTensor, p.master})
      if (t >= 0) owner[t] = {DescribedTensor::Owner::OptimizerOf, p.name};
  }
  for (const StateEntry& e : view.entries())
    if (e.tiedTo >= 0 && e.tensor >= 0)
      owner[e.tensor] = {DescribedTensor::Owner::TiedTo, view.entries()[size_t(e.tiedTo)].name};

  const auto& tensors = file.tensors();
  const auto& storages = file.storages();
  out.tensors.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    DescribedTensor row;
    row.name = std::string(t.name());
    row.dtype = std::string(dtypeName(t.dtype));
    row.shape = t.shapeString();
    row.sizes = t.shape.vec();
    row.elements = t.numel();
    row.bytes = t.nbytes();
    if (auto it = owner.find(int(i)); it != owner.end()) {
      row.ownerKind = it->second.first;
      row.owner = it->second.second;
    }
    if (t.storage >= 0 && storages[size_t(t.storage)].location != "cpu")
      row.location = storages[size_t(t.storage)].location;
    row.meta = t.isMeta;
    if (const ShardSet* shards = file.shards(); shards && t.storage >= 0)
      row.joined = shards->tensors()[size_t(t.storage)].note;
    row.error = t.error;
    out.tensors.push_back(std::move(row));
  }
}

}  // namespace

DescribedSafety describeSafety(const CheckpointSafety& c) {
  DescribedSafety s;
  s.verdict = c.verdict;
  s.sharded = c.sharded();
  s.dangerous = c.offenders(SafetyLevel::Dangerous);
  s.suspicious = c.offenders(SafetyLevel::Suspicious);
  const FileSafety* worst = c.worstFile();
  if (!c.sharded())
    s.error = c.files.empty() ? c.error : c.files[0].report.error;
  else
    s.error = worst ? worst->report.error : c.error;
  if (c.sharded()) {
    if (worst) s.worstFile = worst->file;
    s.filesWithVerdict = c.filesWithVerdict();
    s.scope = c.scope();
    s.missing = c.missing;
  }
  return s;
}

CheckpointDescription describeCheckpoint(const CheckpointFile& file,
                                         const CheckpointSafety& safety) {
  CheckpointDescription out;
  const CheckpointView view(file);
  out.path = file.path();
  out.format = std::string(formatName(file.format()));
  out.bigEndian = file.bigEndian();
  out.fileSize = file.fileSize();
  out.mtime = file.mtime();
  out.safety = describeSafety(safety);
  out.sharded = file.shards() != nullptr;

  out.step = view.step();
  out.stepSource = view.stepSource();
  if (!view.step())
    // As the listing does: a hand-written loop's checkpoint_50.pt may not store its step.
    out.stepFromName =
        parseCheckpointName(std::filesystem::path(file.path()).filename().string()).step;
  out.loss = view.loss();
  out.run = view.run();
  out.stage = view.stage();
  out.final = view.isFinal();

  out.hasModelState = view.modelState() != nullptr;
  if (out.hasModelState) {
    out.parameterCount = view.parameterCount();
    out.modelStateKey = view.modelStateKey();
    out.ddpPrefix = view.ddpPrefix();
    out.compiledPrefix = view.compiledPrefix();
    const auto& entries = view.entries();
    for (const StateEntry& e : entries) {
      DescribedEntry d;
      d.name = e.name;
      d.tensor = e.tensor;
      if (e.tensor >= 0) {
        const TensorInfo& t = file.tensors()[size_t(e.tensor)];
        d.dtype = std::string(dtypeName(t.dtype));
        d.shape = t.shapeString();
        d.numel = t.numel();
        d.nbytes = t.nbytes();
      }
      if (e.tiedTo >= 0) d.tiedTo = entries[size_t(e.tiedTo)].name;
      out.entries.push_back(std::move(d));
    }
  }
  describeOptimizer(file, view, out);

  if (const Value* config = view.config())
    for (const auto& [k, v] : config->entries)
      out.config.emplace_back(keyText(k), shortRepr(v, 80));
  // Every metadata key: the `metadata` dict, or else the top level's plain values.
  auto addMeta = [&](const Value* k, const Value* v) {
    out.metadataKeys.push_back(keyText(k));
    if (v != view.config()) out.metadata.emplace_back(keyText(k), shortRepr(v, 100));
  };
  if (const Value* meta = view.metadata()) {
    for (const auto& [k, v] : meta->entries) addMeta(k, v);
  } else if (const Value* root = file.root();
             root && root->isDict() && root != view.modelState() && root != view.optimizer()) {
    for (const auto& [k, v] : root->entries)
      if (v != view.modelState() && v != view.optimizer()) addMeta(k, v);
  }
  out.notes = view.notes();
  describeTensors(file, view, out);

  out.tree.keyKind = DescribedValue::Key::Root;
  TreeBuilder{file, kMaxDescribedValues, {}}.fill(out.tree, file.root(), 0);
  if (const CheckpointFile* common = view.megatronCommon()) {
    // What a torch_dist save keeps beside its tensors (args, iteration, ...).
    out.tree.children.emplace_back();
    out.tree.children.back().key = "common.pt";
    TreeBuilder{*common, kMaxDescribedValues, {}}.fill(out.tree.children.back(), common->root(), 1);
  }
  return out;
}

CheckpointDescription describeCheckpointAt(const std::string& path, DescribedSafety* safety) {
  // An opcode walk of the file's pickles (a sharded checkpoint: of every
  // file its layout names); nothing in them is run.
  const CheckpointSafety scanned = scanCheckpoint(path);
  if (safety) *safety = describeSafety(scanned);
  const std::unique_ptr<CheckpointFile> file = CheckpointFile::open(path);
  return describeCheckpoint(*file, scanned);
}

}  // namespace ckpt
