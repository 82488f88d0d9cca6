// Megatron-LM saves in the torch format (megatron/training/checkpointing.py,
// ckpt_format "torch") read as one model: iter_<N>/mp_rank_<tp>[_<pp>]/
// model_optim_rng.pt, each rank's `model` holding its slice of every
// tensor-parallel weight and, under pipeline parallelism, its stage's layers
// numbered from 0. The slices are joined as Megatron's own checkpoint
// converter joins them (tools/checkpoint/loader_base.py
// send_llm_over_queue, with the names of schema_core.py and the legacy
// schema): column-parallel weights (QKV, fc1, the word embeddings, the
// output layer; QKV's and fc1's biases) along dim 0, row-parallel weights
// (proj / dense, fc2 / dense_4h_to_h) along dim 1, under SwiGLU each rank's
// fc1 [gate; up] halves apart (the gates of all ranks, then the ups), and
// what is replicated (norms, position embeddings, the row-parallel biases)
// from the first rank, checked equal on the others. A stage's layers follow
// the previous stages' (decoder.layers.0 of stage 1 is layer 2 when stage 0
// has two). A name no rule knows, or slices whose shapes disagree, is not
// joined: the tensor says so. Nothing is assembled: each joined tensor is
// chunks of the rank files' tensors (ShardChunk), read where they lie.
#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <string_view>
#include <variant>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/megatron_names.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/tensor_data.h"
#include "megatron_optimizer.h"
#include "sharded_util.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using K = Value::Kind;
using namespace sharded;
using megatron::kMoments;
using megatron::RankOptimizer;
using megatron::rankOptimizer;

constexpr std::string_view kRankFile = "model_optim_rng.pt";
// DistributedOptimizer.save_parameter_state's file beside it.
constexpr std::string_view kDistribFile = "distrib_optim.pt";
// Replicated tensors are compared this many elements at a time, up to
// kMaxCompared elements (norms and biases are far smaller).
constexpr size_t kCompareRun = 1 << 14;
constexpr uint64_t kMaxCompared = 1ull << 24;

enum class Split { Replicated, Dim0, Dim1, GatedDim0, Unknown };

// A name ends with `tail` as whole components ("x.linear_qkv.weight" ends
// with "linear_qkv.weight"; "xlinear_qkv.weight" does not).
bool endsWithComponents(std::string_view name, std::string_view tail) {
  return name == tail || (name.size() > tail.size() && name.ends_with(tail) &&
                          name[name.size() - tail.size() - 1] == '.');
}

// Which rule joins `name`'s tensor-parallel slices (mcore's names, then the
// legacy model's).
Split splitOf(std::string_view name) {
  for (std::string_view t :
       {"linear_qkv.weight", "linear_qkv.bias", "word_embeddings.weight", "output_layer.weight",
        "query_key_value.weight", "query_key_value.bias"})
    if (endsWithComponents(name, t)) return Split::Dim0;
  for (std::string_view t :
       {"linear_fc1.weight", "linear_fc1.bias", "dense_h_to_4h.weight", "dense_h_to_4h.bias"})
    if (endsWithComponents(name, t)) return Split::GatedDim0;
  for (std::string_view t : {"linear_proj.weight", "linear_fc2.weight",
                             "self_attention.dense.weight", "dense_4h_to_h.weight"})
    if (endsWithComponents(name, t)) return Split::Dim1;
  for (std::string_view t : {"linear_proj.bias", "linear_fc2.bias", "self_attention.dense.bias",
                             "dense_4h_to_h.bias", "position_embeddings.weight"})
    if (endsWithComponents(name, t)) return Split::Replicated;
  // Norms: TE's fused layer_norm_weight / _bias, mcore's input_layernorm,
  // pre_mlp_layernorm, final_layernorm, the legacy input_norm,
  // post_attention_norm, final_norm (and their *_layernorm spellings).
  const size_t dot = name.rfind('.');
  const std::string_view leaf = dot == std::string_view::npos ? name : name.substr(dot + 1);
  const std::string_view module =
      dot == std::string_view::npos ? std::string_view{} : name.substr(0, dot);
  const std::string_view owner = module.substr(module.rfind('.') + 1);
  if (leaf == "layer_norm_weight" || leaf == "layer_norm_bias") return Split::Replicated;
  if ((leaf == "weight" || leaf == "bias") &&
      (owner.ends_with("layernorm") || owner.ends_with("_norm") || owner == "norm"))
    return Split::Replicated;
  return Split::Unknown;
}

// The model's tensors by dotted name, nested dicts flattened (the legacy
// model nests language_model.encoder...; mcore's is flat).
void flattenModel(const Value* v, const std::string& prefix, int depth,
                  std::vector<std::pair<std::string, int>>& out) {
  if (!v || v->kind != K::Dict || depth > 16) return;
  for (const auto& [k, x] : v->entries) {
    if (!k->isStr()) continue;
    const std::string name = prefix.empty() ? k->str() : prefix + "." + k->str();
    if (x->kind == K::Tensor)
      out.emplace_back(name, int(x->index));
    else
      flattenModel(x, name, depth + 1, out);
  }
}

// "decoder.layers.3.mlp..." with the layer number moved by `offset`; the
// stage's highest local layer number goes to `highest`.
std::string renumberLayer(const std::string& name, int64_t offset, int64_t& highest) {
  size_t at = 0;
  while ((at = name.find("layers.", at)) != std::string::npos) {
    if (at == 0 || name[at - 1] == '.') {
      const size_t digits = at + 7;
      size_t end = digits;
      while (end < name.size() && end - digits < 9 && name[end] >= '0' && name[end] <= '9') ++end;
      if (end > digits && (end == name.size() || name[end] == '.')) {
        const int64_t local = std::stoll(name.substr(digits, end - digits));
        highest = std::max(highest, local);
        return name.substr(0, digits) + std::to_string(local + offset) + name.substr(end);
      }
    }
    at += 7;
  }
  return name;
}

bool holdsTensor(const Value* v, int depth) {
  if (!v || depth > 32) return false;
  if (v->kind == K::Tensor) return true;
  for (const Value* x : v->items)
    if (holdsTensor(x, depth + 1)) return true;
  for (const auto& [k, x] : v->entries)
    if (holdsTensor(x, depth + 1)) return true;
  return holdsTensor(v->state, depth + 1);
}

// args.swiglu of a rank file (an argparse.Namespace: its BUILD state).
bool swigluOf(const CheckpointFile& f) {
  const Value* args = f.root() ? f.root()->get("args") : nullptr;
  if (args && args->kind == K::Object) args = args->state;
  const Value* s = args && args->isDict() ? args->get("swiglu") : nullptr;
  return s && s->kind == K::Bool && s->boolean;
}

// One tensor's slices, one per tensor rank of a stage (in rank order).
struct Slice {
  int part = -1, tensor = -1;
  const TensorInfo* info = nullptr;
  std::string folder;
};

// Joins `slices` into `t` by `split` (chunks, the note saying how, or the
// error saying why not): the model's tensors and, by their parameter's
// rule, its optimizer moments.
void joinSlices(const ShardSet& set, LogicalTensor& t, const std::vector<Slice>& slices,
                Split split, bool swiglu) {
  const TensorInfo& info0 = *slices.front().info;
  t.dtype = info0.dtype;
  t.shape = info0.shape;
  for (const Slice& s : slices)
    if (!s.info->error.empty() && t.error.empty()) t.error = s.folder + ": " + s.info->error;
  if (!t.error.empty()) return;
  std::string from;
  for (const Slice& s : slices) from += (from.empty() ? "" : ", ") + s.folder;
  auto shapes = [&] {
    std::string out;
    for (const Slice& s : slices)
      out += (out.empty() ? "" : ", ") + s.folder + " " + s.info->shapeString();
    return out;
  };
  for (const Slice& s : slices)
    if (s.info->dtype != t.dtype && t.error.empty())
      t.error = "its slices' dtypes disagree (" + s.folder + " " +
                std::string(dtypeName(s.info->dtype)) + ", " + slices.front().folder + " " +
                std::string(dtypeName(t.dtype)) + "): not joined";
  const auto whole = [&](const Slice& s) {
    return ShardChunk{s.part, -1, s.tensor, Dims(s.info->shape.size(), 0), s.info->shape};
  };
  if (!t.error.empty()) {
    // said above
  } else if (split == Split::Unknown) {
    t.error = "no tensor-parallel rule is known for this name: " + std::to_string(slices.size()) +
              " slices (" + shapes() + "), not joined";
  } else if (split == Split::Replicated) {
    t.chunks.push_back(whole(slices.front()));
    for (size_t i = 1; i < slices.size() && t.error.empty(); ++i) {
      const Slice& s = slices[i];
      if (s.info->shape != info0.shape) {
        t.error =
            "a replicated tensor whose copies' shapes disagree (" + shapes() + "), not joined";
        break;
      }
      ++t.replicas;
    }
    if (t.error.empty() && slices.size() > 1) {
      // Megatron keeps the first rank's; a copy that differs is worth knowing.
      std::string differs;
      if (info0.numel() > kMaxCompared) {
        t.note = "replicated on " + std::to_string(slices.size()) +
                 " tensor-parallel ranks; shown: " + slices.front().folder +
                 "'s (too large to compare the copies)";
      } else {
        try {
          const TensorData a =
              set.partFile(slices.front().part)->tensorData(size_t(slices.front().tensor));
          const size_t width = dtypeBytesFor(t.dtype, 1);
          std::vector<uint8_t> ab(kCompareRun * width), bb(kCompareRun * width);
          for (size_t i = 1; i < slices.size() && differs.empty(); ++i) {
            const TensorData b = set.partFile(slices[i].part)->tensorData(size_t(slices[i].tensor));
            for (uint64_t at = 0; at < a.numel() && differs.empty(); at += kCompareRun) {
              const size_t n = a.readRaw(at, kCompareRun, ab.data());
              (void)b.readRaw(at, kCompareRun, bb.data());
              if (!std::equal(ab.begin(), ab.begin() + ptrdiff_t(n * width), bb.begin()))
                differs = slices[i].folder;
            }
          }
        } catch (const FormatError& e) {
          differs = std::string("(cannot be compared: ") + e.what() + ")";
        }
        t.note = "replicated on " + std::to_string(slices.size()) + " tensor-parallel ranks (" +
                 from + ")" +
                 (differs.empty() ? ", the copies equal"
                                  : "; " + differs + "'s copy DIFFERS from " +
                                        slices.front().folder + "'s, which is shown");
      }
    }
  } else {
    const size_t dim = split == Split::Dim1 ? 1 : 0;
    const bool gated = split == Split::GatedDim0 && swiglu;
    for (const Slice& s : slices) {
      bool agree = s.info->shape.size() == info0.shape.size() && info0.shape.size() > dim;
      for (size_t d = 0; agree && d < info0.shape.size(); ++d)
        agree = d == dim || s.info->shape[d] == info0.shape[d];
      if (agree && gated) agree = s.info->shape[0] % 2 == 0;
      if (!agree) {
        t.error = std::string(gated ? "its SwiGLU slices ([gate; up] per rank, an even "
                                      "number of rows each)"
                                    : "its slices") +
                  " cannot be joined along dim " + std::to_string(dim) +
                  ": their shapes disagree (" + shapes() + ")";
        break;
      }
    }
    if (t.error.empty()) {
      int64_t total = 0;
      for (const Slice& s : slices) total += s.info->shape[dim];
      t.shape = info0.shape;
      t.shape[dim] = total;
      int64_t at = 0;
      for (const Slice& s : slices) {
        if (!gated) {
          ShardChunk c = whole(s);
          c.offsets[dim] = at;
          t.chunks.push_back(std::move(c));
        } else {
          // Rank r's gate rows go after the gates of ranks < r, its up
          // rows after all the gates and the ups of ranks < r.
          const int64_t half = s.info->shape[0] / 2;
          int64_t row = 1;
          for (size_t d = 1; d < s.info->shape.size(); ++d) row *= s.info->shape[d];
          Dims sizes = s.info->shape;
          sizes[0] = half;
          Dims offsets(s.info->shape.size(), 0);
          offsets[0] = at / 2;
          t.chunks.push_back(ShardChunk{s.part, -1, s.tensor, offsets, sizes, 0});
          offsets[0] = total / 2 + at / 2;
          t.chunks.push_back(ShardChunk{s.part, -1, s.tensor, offsets, sizes, half * row});
        }
        at += s.info->shape[dim];
      }
      t.note = (gated ? "SwiGLU: each rank's [gate; up] halves joined apart along dim 0, "
                        "[gates; ups], from "
                      : "joined along dim " + std::to_string(dim) + " from ") +
               std::to_string(slices.size()) + " tensor-parallel ranks (" + from + ")";
    }
  }
}

}  // namespace

void ShardSet::openMegatron(bool metadataOnly) {
  struct Rank {
    MegatronRank rank;
    std::string folder;
    int part = -1;
  };
  std::vector<Rank> ranks;
  for (const std::string& folder : megatronRankFolders(m_folder)) {
    Rank r{*parseMegatronRank(folder), folder, -1};
    r.part = addPart(folder + "/" + std::string(kRankFile), int(ranks.size()));
    ranks.push_back(std::move(r));
  }
  m_ranks = int(ranks.size());
  if (ranks.empty()) fail(m_folder + ": no mp_rank_*/model_optim_rng.pt in the folder");
  // The distributed optimizer's state beside a rank's file: its own part,
  // read for what it holds (flat buffers), not joined. Listed by a
  // metadataOnly open too: torch.load unpickles it as it does the rank
  // file, so the safety scan walks it.
  std::vector<std::pair<int, std::string>> distrib;  // part, rank folder
  for (const Rank& r : ranks) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(m_folder) / r.folder / std::string(kDistribFile), ec))
      distrib.emplace_back(addPart(r.folder + "/" + std::string(kDistribFile), -1), r.folder);
  }
  if (metadataOnly) return;
  openParts();

  // The grid of (pipeline stage, tensor rank) -> part; experts beyond the
  // first are not joined (their experts are other tensors, not slices).
  int tpSize = 0, ppSize = 0, experts = 0;
  for (const Rank& r : ranks) {
    if (r.rank.expert > 0) {
      ++experts;
      continue;
    }
    tpSize = std::max(tpSize, r.rank.tensor + 1);
    ppSize = std::max(ppSize, r.rank.pipeline + 1);
  }
  if (experts)
    m_notes.push_back(std::to_string(experts) +
                      " expert-parallel rank files (mp_rank_*_*_<expert>) are listed, not joined: "
                      "the tensors are expert rank 0's");
  std::vector<std::vector<int>> grid(static_cast<size_t>(ppSize));
  for (auto& stage : grid) stage.assign(size_t(tpSize), -1);
  std::vector<std::vector<std::string>> names(static_cast<size_t>(ppSize));
  for (auto& stage : names) stage.resize(size_t(tpSize));
  for (const Rank& r : ranks)
    if (r.rank.expert <= 0) {
      grid[size_t(r.rank.pipeline)][size_t(r.rank.tensor)] = r.part;
      names[size_t(r.rank.pipeline)][size_t(r.rank.tensor)] = r.folder;
    }

  // What the first rank's file holds besides its model: args, iteration, ...
  const CheckpointFile* first = partFile(grid[0][0]);
  if (grid[0][0] < 0) fail("no mp_rank_00 (tensor rank 0 of stage 0) in " + m_folder);
  if (!first) {
    const ShardPart& p = m_parts[size_t(grid[0][0])];
    fail(p.file + (p.error.empty() ? " cannot be read" : ": " + p.error));
  }
  const bool swiglu = swigluOf(*first);
  if (first->root() && first->root()->isDict()) {
    for (const auto& [k, v] : first->root()->entries) {
      if (!k->isStr() || k->text == "model") continue;
      if (!holdsTensor(v, 0)) {
        m_items.push_back(Item{{k->str()}, v});
        continue;
      }
      Value* s = m_arena.make(K::Str);
      s->text = m_arena.copy("(each rank's own, holding tensors: not joined; in " +
                             m_parts[size_t(grid[0][0])].file + ")");
      m_items.push_back(Item{{k->str()}, s});
    }
  }

  int64_t layerOffset = 0;
  // The joined optimizer state: torch's layout over the joined model (state
  // index = the parameter's place in the model), shown after the model.
  int64_t modelTensors = 0;
  std::vector<LogicalTensor> optimizerTensors;
  std::map<int64_t, size_t> paramGroup;  // joined parameter -> its group on its stage's first rank
  const Value* firstGroups = nullptr;
  {
    std::vector<std::pair<std::string, int>> flat;
    flattenModel(first->root() ? first->root()->get("model") : nullptr, "", 0, flat);
    firstGroups = rankOptimizer(*first, flat).groups;
  }
  for (int pp = 0; pp < ppSize; ++pp) {
    // Each tensor rank's model, by name.
    std::vector<std::map<std::string, int, std::less<>>> byName;
    byName.resize(size_t(tpSize));
    std::vector<std::pair<std::string, int>> order;  // the first rank's, in file order
    int firstTp = -1;  // the rank whose names (and their order) are shown
    std::vector<RankOptimizer> opts(static_cast<size_t>(tpSize));
    for (int tp = 0; tp < tpSize; ++tp) {
      const int part = grid[size_t(pp)][size_t(tp)];
      const CheckpointFile* f = part >= 0 ? partFile(part) : nullptr;
      if (!f) continue;  // its tensors say so, one by one
      std::vector<std::pair<std::string, int>> flat;
      flattenModel(f->root() ? f->root()->get("model") : nullptr, "", 0, flat);
      opts[size_t(tp)] = rankOptimizer(*f, flat);
      if (const std::string& why = opts[size_t(tp)].problem; !why.empty())
        m_notes.push_back(names[size_t(pp)][size_t(tp)] +
                          ": its optimizer state is not joined: " + why);
      if (order.empty()) {
        order = flat;
        firstTp = tp;
      }
      for (auto& [n, i] : flat) byName[size_t(tp)].emplace(n, i);
    }
    if (order.empty()) {
      // Virtual pipeline stages keep model0, model1, ... instead of `model`.
      const CheckpointFile* f = partFile(grid[size_t(pp)][0]);
      const bool virtualStages = f && f->root() && f->root()->get("model0");
      m_notes.push_back("pipeline stage " + std::to_string(pp) +
                        (virtualStages
                             ? ": its virtual pipeline stages (model0, model1, ...) are not joined"
                             : ": no rank file with a model can be read") +
                        "; its tensors are not shown");
      continue;
    }
    int64_t highest = -1;
    for (const auto& [local, firstIndex] : order) {
      (void)firstIndex;
      LogicalTensor t;
      t.name = renumberLayer(local, layerOffset, highest);
      t.path = {std::string("model"), t.name};
      // Every tensor rank's slice, or why not.
      std::vector<Slice> slices;
      for (int tp = 0; tp < tpSize; ++tp) {
        const int part = grid[size_t(pp)][size_t(tp)];
        const std::string& folder = names[size_t(pp)][size_t(tp)];
        const CheckpointFile* f = part >= 0 ? partFile(part) : nullptr;
        auto it = byName[size_t(tp)].find(local);
        if (!f || it == byName[size_t(tp)].end()) {
          if (t.error.empty()) {
            std::string why = f ? folder + " has no " + inQuotes(local)
                              : part < 0
                                  ? "there is no rank folder for tensor rank " +
                                        std::to_string(tp) + " of stage " + std::to_string(pp)
                                  : m_parts[size_t(part)].file + " cannot be read (" +
                                        m_parts[size_t(part)].error + ")";
            t.error = why + ": the slices are not joined (the shape shown is one slice's)";
          }
          if (part >= 0) t.missing.push_back(ShardChunk{part, -1, -1, {}, {}});
          continue;
        }
        slices.push_back(Slice{part, it->second, &f->tensors()[size_t(it->second)], folder});
      }
      if (slices.empty()) {  // the error says why
        m_tensors.push_back(std::move(t));
        ++modelTensors;
        continue;
      }
      const Split split = slices.size() == 1 ? Split::Replicated : splitOf(local);
      joinSlices(*this, t, slices, split, swiglu);
      checkChunks(t);
      // Its optimizer state, joined by its own rule: the moments of a
      // parameter split along a dim are split like it.
      const int64_t param = modelTensors++;
      if (t.error.empty() && int(slices.size()) == tpSize)
        for (size_t m = 0; m < kMoments.size(); ++m) {
          std::vector<Slice> parts;
          for (int tp = 0; tp < tpSize; ++tp) {
            const RankOptimizer& o = opts[size_t(tp)];
            const auto it = o.moments.find(local);
            if (!o.problem.empty() || it == o.moments.end() || it->second[m] < 0) break;
            const Slice& p = slices[size_t(tp)];
            const CheckpointFile* f = partFile(p.part);
            parts.push_back(
                Slice{p.part, it->second[m], &f->tensors()[size_t(it->second[m])], p.folder});
          }
          if (int(parts.size()) != tpSize) continue;
          LogicalTensor o;
          o.name = "optimizer.state." + t.name + "." + std::string(kMoments[m]);
          o.path = {std::string("optimizer"), std::string("state"), param,
                    std::string(kMoments[m])};
          for (const Slice& p : parts)
            if (p.info->shape != slices[size_t(&p - parts.data())].info->shape && o.error.empty())
              o.error = p.folder + "'s " + std::string(kMoments[m]) + " " + p.info->shapeString() +
                        " is not the shape of its parameter " +
                        slices[size_t(&p - parts.data())].info->shapeString() + ": not joined";
          if (o.error.empty()) joinSlices(*this, o, parts, split, swiglu);
          checkChunks(o);
          optimizerTensors.push_back(std::move(o));
          if (m == 0) {
            const RankOptimizer& first = opts[size_t(firstTp)];
            const auto g = first.group.find(local);
            paramGroup[param] = g == first.group.end() ? 0 : g->second;
            if (const auto st = first.steps.find(local); st != first.steps.end())
              m_items.push_back(
                  Item{{std::string("optimizer"), std::string("state"), param, std::string("step")},
                       st->second});
          }
        }
      m_tensors.push_back(std::move(t));
    }
    layerOffset += highest + 1;
    // Names a later rank holds that the first does not.
    for (int tp = 0; tp < tpSize; ++tp)
      for (const auto& [n, i] : byName[size_t(tp)])
        if (tp != firstTp && !byName[size_t(firstTp)].count(n))
          m_notes.push_back(names[size_t(pp)][size_t(tp)] + " holds " + inQuotes(n) + ", which " +
                            names[size_t(pp)][size_t(firstTp)] + " does not (not shown)");
  }
  if (!optimizerTensors.empty() && firstGroups) {
    // param_groups: the first rank's groups (their hyperparameters), each
    // listing the joined parameters it holds; a parameter whose state was
    // not joined is listed in the first group, with no state.
    Value* groups = m_arena.make(K::List);
    for (size_t g = 0; g < firstGroups->items.size(); ++g) {
      Value* group = m_arena.make(K::Dict);
      for (const auto& [k, v] : firstGroups->items[g]->entries)
        if (!(k->isStr() && k->text == "params")) m_arena.append(group->entries, ValuePair{k, v});
      Value* ids = m_arena.make(K::List);
      for (int64_t i = 0; i < modelTensors; ++i) {
        const auto it = paramGroup.find(i);
        if ((it == paramGroup.end() ? 0 : it->second) != g) continue;
        Value* id = m_arena.make(K::Int);
        id->integer = i;
        m_arena.append(ids->items, static_cast<const Value*>(id));
      }
      Value* key = m_arena.make(K::Str);
      key->text = m_arena.copy("params");
      m_arena.append(group->entries, ValuePair{key, ids});
      m_arena.append(groups->items, static_cast<const Value*>(group));
    }
    std::erase_if(m_items, [](const Item& i) {
      return i.path.size() == 1 && i.path[0] == PathElement(std::string("optimizer"));
    });
    m_items.push_back(Item{{std::string("optimizer"), std::string("param_groups")}, groups});
    for (LogicalTensor& t : optimizerTensors) m_tensors.push_back(std::move(t));
    m_notes.push_back(
        "the ranks' optimizer state (Adam's moments, the fp32 masters) is joined per "
        "parameter by its parameter's rule, for " +
        std::to_string(paramGroup.size()) + " of " + std::to_string(modelTensors) +
        " parameters (optimizer.state.<i>: the model's i-th)");
  }
  // What each rank keeps of its own (rng_state: Python's, torch's and the
  // CUDA generators' states), shown per rank: rng_state.<rank folder>....
  // Its tensors are the rank file's, read where they lie.
  // `flat`: a distributed optimizer's buffer, many parameters' state
  // concatenated (named by no parameter).
  std::function<void(std::vector<PathElement>, const Value*, const Rank&, int, bool)> addOwn =
      [&](std::vector<PathElement> path, const Value* v, const Rank& r, int depth, bool flat) {
        if (!v || !holdsTensor(v, 0)) {
          m_items.push_back(Item{std::move(path), v});
          return;
        }
        const CheckpointFile* f = partFile(r.part);
        if (v->kind == K::Tensor && f && v->index >= 0 && size_t(v->index) < f->tensors().size()) {
          const TensorInfo& info = f->tensors()[size_t(v->index)];
          LogicalTensor t;
          for (const PathElement& e : path)
            t.name += (t.name.empty() ? "" : ".") + (std::holds_alternative<std::string>(e)
                                                         ? std::get<std::string>(e)
                                                         : std::to_string(std::get<int64_t>(e)));
          t.path = std::move(path);
          t.dtype = info.dtype;
          t.shape = info.shape;
          t.error = info.error;
          t.chunks.push_back(
              ShardChunk{r.part, -1, int(v->index), Dims(info.shape.size(), 0), info.shape});
          t.flat = flat;
          t.note = flat ? "the distributed optimizer's flat buffer (" +
                              m_parts[size_t(r.part)].file +
                              "): its parameters' state concatenated, not mapped to parameters"
                        : r.folder + "'s own (one per rank, not joined)";
          checkChunks(t);
          m_tensors.push_back(std::move(t));
          return;
        }
        if (depth < 16 && v->isDict()) {
          for (const auto& [k, x] : v->entries) {
            std::vector<PathElement> p = path;
            if (k->isStr())
              p.emplace_back(k->str());
            else if (k->isInt())
              p.emplace_back(k->integer);
            else  // save_parameter_state's (param dtype, grad dtype) tuples
              p.emplace_back(shortRepr(k, 80));
            addOwn(std::move(p), x, r, depth + 1, flat);
          }
          return;
        }
        if (depth < 16 && v->isSequence()) {
          for (size_t i = 0; i < v->items.size(); ++i) {
            std::vector<PathElement> p = path;
            p.emplace_back(int64_t(i));
            addOwn(std::move(p), v->items[i], r, depth + 1, flat);
          }
          return;
        }
        Value* s = m_arena.make(K::Str);
        s->text =
            m_arena.copy("(holds tensors: not shown; in " + m_parts[size_t(r.part)].file + ")");
        m_items.push_back(Item{std::move(path), s});
      };
  bool anyRng = false;
  for (const Rank& r : ranks) {
    const CheckpointFile* f = partFile(r.part);
    const Value* rng = f && f->root() ? f->root()->get("rng_state") : nullptr;
    if (!rng) continue;
    anyRng = true;
    addOwn({std::string("rng_state"), r.folder}, rng, r, 0, false);
  }
  for (const auto& [part, folder] : distrib) {
    const CheckpointFile* f = partFile(part);
    if (!f || !f->root()) continue;  // the part says why
    const size_t before = m_tensors.size();
    addOwn({std::string("distrib_optim"), folder}, f->root(), Rank{{}, folder, part}, 0, true);
    // What a person wants to know of it: which states, how many elements, how many bytes.
    std::map<std::string, uint64_t> elements;
    uint64_t bytes = 0;
    for (size_t i = before; i < m_tensors.size(); ++i) {
      const LogicalTensor& t = m_tensors[i];
      uint64_t n = 1;
      for (const int64_t d : t.shape.vec()) n *= uint64_t(d);
      const PathElement& leaf = t.path.back();
      elements[std::holds_alternative<std::string>(leaf) ? std::get<std::string>(leaf) : "?"] += n;
      bytes += n * dtypeBytesFor(t.dtype, 1);
    }
    std::string what;
    for (const auto& [name, n] : elements)
      what += (what.empty() ? "" : ", ") + name + " " + std::to_string(n);
    m_notes.push_back(
        m_parts[size_t(part)].file +
        ": the distributed optimizer's state, stored flat (per model chunk and "
        "dtype, each bucket's parameters concatenated): " +
        (what.empty() ? std::string("no tensors") : what + " elements, " + humanBytes(bytes)) +
        "; not mapped to parameters");
  }
  if (anyRng)
    std::erase_if(m_items, [](const Item& i) {
      return i.path.size() == 1 && i.path[0] == PathElement(std::string("rng_state"));
    });
}

}  // namespace ckpt
