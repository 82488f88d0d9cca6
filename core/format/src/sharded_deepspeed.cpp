// DeepSpeed tag folders (FORMAT.md section 7): global_step1000/ with
// mp_rank_00_model_states.pt (ZeRO 0-2) or zero_pp_rank_<r>_mp_rank_00_
// model_states.pt (ZeRO-3), and [bf16_]zero_pp_rank_<r>_mp_rank_00_optim_
// states.pt, one per data-parallel rank; `latest` beside the tag folders
// names the newest.
// The logical checkpoint holds
// - "model": the fp32 master weights, rebuilt across the ranks' optimizer
//   files as DeepSpeed's zero_to_fp32.py does (each group's flat partitions
//   concatenated in rank order and split by numel in param_shapes order,
//   the tail padding left out; ZeRO-3: each parameter takes ceil(numel /
//   world) elements from every rank), with the buffers (as saved: not made
//   float as zero_to_fp32 does), frozen parameters and shared parameters;
//   in the order of the model's own state dict.
// - "module": the 16-bit weights of the model states file (ZeRO 0-2).
// - the model states file's other values (global_steps, ds_config, ...).
// A master is a run of a flat buffer, not a box of its shape: each run is
// split into boxes (ShardChunk::sourceOffset says where each starts).
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/input_file.h"
#include "ckpt/format/sharded.h"
#include "sharded_util.h"

namespace fs = std::filesystem;

namespace ckpt {

namespace sharded {

std::optional<DeepSpeedName> parseDeepSpeedName(const std::string& file) {
  DeepSpeedName n;
  std::string_view s = file;
  if (s.rfind("bf16_", 0) == 0) {
    n.bf16 = true;
    s.remove_prefix(5);
  }
  auto number = [&](std::string_view word, int& out) {
    if (s.rfind(word, 0) != 0) return false;
    s.remove_prefix(word.size());
    size_t i = 0;
    out = 0;
    while (i < s.size() && i < 6 && std::isdigit(static_cast<unsigned char>(s[i])))
      out = out * 10 + (s[i++] - '0');
    s.remove_prefix(i);
    return i > 0;
  };
  if (s.rfind("zero_pp_rank_", 0) == 0) {
    if (!number("zero_pp_rank_", n.rank) || s.rfind("_", 0) != 0) return std::nullopt;
    s.remove_prefix(1);
  }
  if (!number("mp_rank_", n.mpRank)) return std::nullopt;
  if (s == "_model_states.pt")
    n.optim = false;
  else if (s == "_optim_states.pt")
    n.optim = true;
  else
    return std::nullopt;
  if (n.bf16 && !n.optim) return std::nullopt;
  return n;
}

std::optional<std::string> deepSpeedTagFolder(const std::string& folder) {
  std::error_code ec;
  for (const char* f : {"mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt"})
    if (fs::is_regular_file(fs::path(folder) / f, ec)) return folder;
  // `latest` names the tag: a short line of text, a folder inside this one.
  const fs::path latest = fs::path(folder) / "latest";
  if (!fs::is_regular_file(latest, ec) || fs::file_size(latest, ec) > 4096 || ec)
    return std::nullopt;
  try {
    InputFile in(latest.string());
    const std::vector<uint8_t> bytes = in.read(0, in.size());
    std::string tag(bytes.begin(), bytes.end());
    while (!tag.empty() && std::isspace(static_cast<unsigned char>(tag.back()))) tag.pop_back();
    if (tag.empty()) return std::nullopt;
    const std::string inside = pathInsideFolder(folder, tag, latest.string());
    for (const char* f :
         {"mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt"})
      if (fs::is_regular_file(fs::path(inside) / f, ec)) return inside;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// Boxes of `shape` covering the row-major elements [first, last), each a
// contiguous run itself, in order.
void flatRangeBoxes(const Dims& shape, uint64_t first, uint64_t last,
                    std::vector<std::pair<Dims, Dims>>& out) {
  const size_t nd = shape.size();
  if (nd == 0) {
    if (first < last) out.emplace_back(Dims{}, Dims{});
    return;
  }
  std::vector<uint64_t> stride(nd, 1);
  for (size_t d = nd - 1; d-- > 0;) stride[d] = stride[d + 1] * uint64_t(shape[d + 1]);
  while (first < last) {
    Dims at(nd, 0);
    uint64_t rem = first;
    for (size_t d = 0; d < nd; ++d) {
      at[d] = int64_t(rem / stride[d]);
      rem %= stride[d];
    }
    // The outermost dimension the position is aligned to, then inwards
    // until a whole step of it fits.
    size_t k = 0;
    while (k + 1 < nd && first % stride[k] != 0) ++k;
    uint64_t n = 0;
    for (;; ++k) {
      n = std::min<uint64_t>(uint64_t(shape[k] - at[k]), (last - first) / stride[k]);
      if (n > 0 || k + 1 == nd) break;
    }
    if (n == 0) break;  // cannot happen for a range inside the shape
    Dims sizes(nd, 1);
    sizes[k] = int64_t(n);
    for (size_t d = k + 1; d < nd; ++d) sizes[d] = shape[d];
    out.emplace_back(at, sizes);
    first += n * stride[k];
  }
}

}  // namespace sharded

namespace {

using K = Value::Kind;
using namespace sharded;

std::optional<int64_t> intOf(const Value* v) {
  if (!v) return std::nullopt;
  if (v->isInt()) return v->integer;
  // An enum (ZeroStageEnum(2)): its value is the call's argument; since
  // Python 3.11 enums pickle by name, getattr(ZeroStageEnum, "gradients").
  if (v->kind == K::Object && v->items.size() == 1 && v->items[0]->isInt())
    return v->items[0]->integer;
  if (v->kind == K::Object && v->items.size() == 2 && v->items[1]->isStr()) {
    constexpr std::string_view kStages[] = {"disabled", "optimizer_states", "gradients", "weights"};
    for (size_t i = 0; i < std::size(kStages); ++i)
      if (v->items[1]->text == kStages[i]) return int64_t(i);
  }
  if (v->isSequence()) {  // partition_count per group: the largest
    std::optional<int64_t> best;
    for (const Value* x : v->items)
      if (x->isInt()) best = std::max(best.value_or(x->integer), x->integer);
    return best;
  }
  return std::nullopt;
}

}  // namespace

void ShardSet::openDeepSpeed(bool metadataOnly) {
  struct File {
    std::string name;
    DeepSpeedName parsed;
  };
  std::vector<File> found;
  std::error_code ec;
  for (fs::directory_iterator it(m_folder, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (auto p = parseDeepSpeedName(name); p && p->rank < kMaxRanks && it->is_regular_file(ec))
      found.push_back(File{name, *p});
  }
  std::sort(found.begin(), found.end(), [](const File& a, const File& b) {
    return std::tie(a.parsed.optim, a.parsed.mpRank, a.parsed.rank, a.name) <
           std::tie(b.parsed.optim, b.parsed.mpRank, b.parsed.rank, b.name);
  });
  int modelPart = -1;
  std::map<int, int> optimOfRank;
  std::string optimPrefix;
  for (const File& f : found) {
    if (f.parsed.mpRank != 0) {
      m_notes.push_back(f.name + ": model-parallel rank " + std::to_string(f.parsed.mpRank) +
                        " is not read (only mp_rank_00)");
      continue;
    }
    const int part = addPart(f.name, f.parsed.optim || f.parsed.rank >= 0 ? f.parsed.rank : -1);
    if (!f.parsed.optim && f.parsed.rank <= 0) modelPart = part;
    if (f.parsed.optim) {
      optimOfRank[f.parsed.rank] = part;
      optimPrefix = f.parsed.bf16 ? "bf16_" : "";
    }
  }
  if (modelPart < 0) fail(m_folder + ": no mp_rank_00_model_states.pt");
  // Ranks below `world` with no optimizer file: parts that are missing (a
  // gap in the numbers is known from the names alone).
  auto addMissing = [&](int world) {
    m_ranks = std::max(1, world);
    for (int r = 0; r < world; ++r)
      if (!optimOfRank.count(r))
        optimOfRank[r] = addPart(
            optimPrefix + "zero_pp_rank_" + std::to_string(r) + "_mp_rank_00_optim_states.pt", r);
  };
  addMissing(optimOfRank.empty() ? 0 : optimOfRank.rbegin()->first + 1);

  // The model states file's values, shown beside the tensors.
  auto addItems = [&](const CheckpointFile& f) {
    const Value* root = f.root();
    if (!root || !root->isDict()) return;
    for (const auto& [k, v] : root->entries)
      if (k->isStr() && k->text != "module" && k->text != "frozen_param_fragments" &&
          k->text != "optimizer")
        m_items.push_back(Item{{std::string(k->text)}, v});
  };
  if (metadataOnly) {
    ReadOptions options;
    options.metadataOnly = true;
    try {
      m_itemFiles.push_back(CheckpointFile::open(m_parts[size_t(modelPart)].path, options));
      addItems(*m_itemFiles.back());
      // A missing last rank's optimizer file is known from dp_world_size.
      const Value* root = m_itemFiles.back()->root();
      if (const auto w = root && root->isDict() ? intOf(root->get("dp_world_size")) : std::nullopt;
          w && *w > m_ranks && *w <= kMaxRanks && !optimOfRank.empty())
        addMissing(int(*w));
    } catch (const FormatError&) {
    }
    return;
  }
  openParts();
  const CheckpointFile* model = m_files[size_t(modelPart)].get();
  if (!model) fail(m_parts[size_t(modelPart)].error);
  addItems(*model);
  const std::string modelFile = m_parts[size_t(modelPart)].file;
  const Value* root = model->root();
  const Value* module = root && root->isDict() ? root->get("module") : nullptr;
  const Value* paramShapes = root && root->isDict() ? root->get("param_shapes") : nullptr;
  if (!paramShapes || !paramShapes->isSequence())
    fail(modelFile + ": no param_shapes (a list of {name: shape} per parameter group)");

  // The optimizer files: ZeRO stage, world size, each rank's flat groups.
  int stage = 0;
  int64_t world = int64_t(optimOfRank.size());
  std::string groupsKey;
  struct RankGroups {
    const CheckpointFile* file = nullptr;
    std::vector<int> tensors;  // tensor index per group
    std::vector<uint64_t> numel;
  };
  std::map<int, RankGroups> ranks;
  for (const auto& [rank, part] : optimOfRank) {
    const CheckpointFile* f = m_files[size_t(part)].get();
    if (!f) continue;
    const std::string& file = m_parts[size_t(part)].file;
    const Value* osd =
        f->root() && f->root()->isDict() ? f->root()->get("optimizer_state_dict") : nullptr;
    if (!osd || !osd->isDict()) {
      m_parts[size_t(part)].error = file + ": no optimizer_state_dict";
      continue;
    }
    if (const auto s = intOf(osd->get("zero_stage"))) stage = int(*s);
    if (const auto w = intOf(osd->get("partition_count")))
      world = std::max<int64_t>(world, std::min<int64_t>(*w, kMaxRanks));
    const Value* groups = osd->get("single_partition_of_fp32_groups");
    groupsKey = "single_partition_of_fp32_groups";
    if (!groups) {
      groups = osd->get("fp32_flat_groups");
      groupsKey = "fp32_flat_groups";
      if (groups && stage == 0) stage = 3;
    } else if (stage == 0) {
      stage = 2;
    }
    if (!groups || !groups->isSequence()) {
      m_parts[size_t(part)].error = file +
                                    ": optimizer_state_dict has no fp32 partitions "
                                    "(single_partition_of_fp32_groups, fp32_flat_groups)";
      continue;
    }
    RankGroups rg{f, {}, {}};
    for (const Value* t : groups->items) {
      if (!t->isTensor()) {
        m_parts[size_t(part)].error =
            file + ": " + groupsKey + " holds something that is not a tensor";
        break;
      }
      const TensorInfo& info = f->tensors()[size_t(t->index)];
      rg.tensors.push_back(int(t->index));
      rg.numel.push_back(info.numel());
      if (!info.error.empty() ||
          (info.storage >= 0 && !f->storages()[size_t(info.storage)].error.empty()))
        m_parts[size_t(part)].error =
            file + ": " + groupsKey + "[" + std::to_string(rg.tensors.size() - 1) +
            "]: " + (info.error.empty() ? f->storages()[size_t(info.storage)].error : info.error);
    }
    if (m_parts[size_t(part)].error.empty()) ranks[rank] = std::move(rg);
  }
  // Ranks partition_count knows and no file is there for.
  addMissing(int(world));

  // The masters: name -> chunks.
  struct Master {
    std::string name;
    Dims shape;
    std::vector<ShardChunk> chunks;
    std::vector<ShardChunk> missing;  // runs a missing or unreadable rank file would hold
    std::string error;
  };
  std::vector<Master> masters;
  DType masterType = DType::Float32;
  if (!ranks.empty()) {
    const TensorInfo& t0 =
        ranks.begin()->second.file->tensors()[size_t(ranks.begin()->second.tensors.at(0))];
    masterType = t0.dtype;
  }
  // Elements [first, last) of a master from rank `rank`'s flat buffer at
  // `local`: of group tensor `group` (ZeRO 1-2), or of the rank's group
  // tensors concatenated (ZeRO-3: `group` is kConcatenated).
  constexpr size_t kConcatenated = SIZE_MAX;
  auto place = [&](Master& m, int rank, uint64_t first, uint64_t last, uint64_t local,
                   size_t group) {
    if (first >= last) return;
    const int part = optimOfRank.at(rank);
    const std::string what = "elements [" + std::to_string(first) + ", " + std::to_string(last) +
                             ") of " + inQuotes(m.name);
    auto r = ranks.find(rank);
    if (r == ranks.end()) {
      // Where the rank's run would be: listed as missing, like DCP's and
      // FSDP's chunks of a missing rank (the other runs are still placed).
      const ShardPart& p = m_parts[size_t(part)];
      if (m.error.empty())
        m.error = (p.error.empty() ? p.file + " cannot be read" : p.error) + " (" + what + ")";
      std::vector<std::pair<Dims, Dims>> boxes;
      flatRangeBoxes(m.shape, first, last, boxes);
      for (auto& [offsets, sizes] : boxes)
        m.missing.push_back(ShardChunk{part, -1, -1, std::move(offsets), std::move(sizes), 0});
      return;
    }
    // Which group tensor of the rank holds `local` (ZeRO-3 concatenates them).
    uint64_t at = local;
    size_t g = group == kConcatenated ? 0 : group;
    if (group == kConcatenated)
      while (g < r->second.numel.size() && at >= r->second.numel[g]) at -= r->second.numel[g++];
    for (uint64_t e = first; e < last;) {
      if (g >= r->second.numel.size() || (group != kConcatenated && g != group)) {
        m.error = m_parts[size_t(part)].file + ": " + groupsKey + " ends before " + what;
        return;
      }
      const uint64_t n = std::min(last - e, r->second.numel[g] - at);
      std::vector<std::pair<Dims, Dims>> boxes;
      flatRangeBoxes(m.shape, e, e + n, boxes);
      uint64_t src = at;
      for (auto& [offsets, sizes] : boxes) {
        uint64_t count = 1;
        for (size_t d = 0; d < sizes.size(); ++d) count *= uint64_t(sizes[d]);
        m.chunks.push_back(
            ShardChunk{part, -1, r->second.tensors[g], offsets, sizes, int64_t(src)});
        src += count;
      }
      e += n;
      at = 0;
      ++g;
    }
  };
  // param_shapes[g][k] = v as a master with its shape (or why not); its numel.
  auto masterFor = [&](size_t g, const Value* k, const Value* v, uint64_t& numel) {
    Master m;
    m.name = k->isStr() ? std::string(k->text) : shortRepr(k, 40);
    const std::optional<Dims> shape = intsOf(v);
    numel = 0;
    if (!shape || !plausibleShape(*shape)) {
      m.error = modelFile + ": param_shapes[" + std::to_string(g) + "][" + inQuotes(m.name) +
                "] is not a shape";
      return m;
    }
    m.shape = *shape;
    numel = 1;
    for (size_t d = 0; d < m.shape.size(); ++d) numel *= uint64_t(m.shape[d]);
    return m;
  };
  // ZeRO 1-2: per group, the ranks' partitions concatenated, parameters in
  // order; ZeRO-3: each parameter takes ceil(numel / world) from every rank.
  uint64_t offset3 = 0;
  for (size_t g = 0; g < paramShapes->items.size(); ++g) {
    const Value* shapes = paramShapes->items[g];
    if (!shapes->isDict()) continue;
    uint64_t partition = 0;
    for (const auto& [rank, rg] : ranks)
      if (g < rg.numel.size()) partition = std::max(partition, rg.numel[g]);
    uint64_t offset = 0;
    for (const auto& [k, v] : shapes->entries) {
      uint64_t numel = 0;
      Master m = masterFor(g, k, v, numel);
      if (!m.error.empty()) {
        masters.push_back(std::move(m));
        continue;
      }
      if (stage == 3) {
        const uint64_t per = (numel + uint64_t(world) - 1) / uint64_t(world);
        for (int r = 0; r < world; ++r) {
          const uint64_t first = std::min(numel, uint64_t(r) * per);
          place(m, r, first, std::min(numel, first + per), offset3, kConcatenated);
        }
        offset3 += per;
      } else if (partition == 0 && numel > 0) {
        m.error = "no rank's " + groupsKey + "[" + std::to_string(g) + "] can be read (" +
                  inQuotes(m.name) + ")";
      } else if (offset + numel > partition * uint64_t(world)) {
        m.error = groupsKey + "[" + std::to_string(g) + "] holds " +
                  std::to_string(partition * uint64_t(world)) + " elements over " +
                  std::to_string(world) + " ranks, " + inQuotes(m.name) + " needs [" +
                  std::to_string(offset) + ", " + std::to_string(offset + numel) + ")";
      } else {
        for (uint64_t e = 0; e < numel;) {
          const uint64_t f = offset + e;
          const int rank = int(f / partition);
          const uint64_t local = f % partition;
          const uint64_t n = std::min(numel - e, partition - local);
          place(m, rank, e, e + n, local, g);
          e += n;
        }
      }
      offset += numel;
      masters.push_back(std::move(m));
    }
  }

  // The model's own order (module keys), buffers and frozen parameters as
  // saved, shared parameters as their source.
  std::map<std::string, size_t> masterOf;
  for (size_t i = 0; i < masters.size(); ++i) masterOf.emplace(masters[i].name, i);
  std::map<std::string, std::string> sharedWith;
  if (const Value* shared = root->get("shared_params");
      shared && (shared->isSequence() || shared->isDict())) {
    if (shared->isDict()) {
      for (const auto& [k, v] : shared->entries)
        if (k->isStr() && v->isStr()) sharedWith[std::string(k->text)] = std::string(v->text);
    } else {
      for (const Value* pair : shared->items)
        if (pair->isSequence() && pair->items.size() == 2 && pair->items[0]->isStr() &&
            pair->items[1]->isStr())
          sharedWith[std::string(pair->items[0]->text)] = std::string(pair->items[1]->text);
    }
  }
  const Value* frozen = root->get("frozen_param_fragments");
  auto wholeTensor = [&](const std::vector<PathElement>& path, const Value* t) {
    LogicalTensor lt;
    lt.path = path;
    lt.name = std::get<std::string>(path.front()) + "." + std::get<std::string>(path.back());
    const TensorInfo& info = model->tensors()[size_t(t->index)];
    lt.dtype = info.dtype;
    lt.shape = info.shape;
    lt.chunks.push_back(
        ShardChunk{modelPart, -1, int(t->index), Dims(info.shape.size(), 0), info.shape, 0});
    if (!info.error.empty()) lt.error = modelFile + ": " + inQuotes(lt.name) + ": " + info.error;
    checkChunks(lt);
    return lt;
  };
  auto masterTensor = [&](const std::string& name, const Master& m) {
    LogicalTensor lt;
    lt.path = {std::string("model"), name};
    lt.name = "model." + name;
    lt.dtype = masterType;
    lt.shape = m.shape;
    lt.chunks = m.chunks;
    lt.missing = m.missing;
    lt.error = m.error;
    checkChunks(lt);
    return lt;
  };
  std::vector<std::string> order;
  std::map<std::string, bool> placed;
  if (module && module->isDict())
    for (const auto& [k, v] : module->entries)
      if (k->isStr()) order.emplace_back(k->text);
  for (const Master& m : masters) order.push_back(m.name);
  for (const auto& [alias, source] : sharedWith) order.push_back(alias);
  for (const std::string& name : order) {
    if (placed[name]) continue;
    placed[name] = true;
    const std::string source = sharedWith.count(name) ? sharedWith[name] : name;
    if (auto it = masterOf.find(source); it != masterOf.end()) {
      m_tensors.push_back(masterTensor(name, masters[it->second]));
    } else if (const Value* f = frozen && frozen->isDict() ? frozen->get(source) : nullptr;
               f && f->isTensor()) {
      m_tensors.push_back(wholeTensor({std::string("model"), name}, f));
    } else if (const Value* b = module && module->isDict() ? module->get(source) : nullptr;
               b && b->isTensor()) {
      // A buffer (or, under ZeRO-3, a parameter's empty placeholder: left out).
      if (stage == 3 && model->tensors()[size_t(b->index)].numel() == 0) continue;
      m_tensors.push_back(wholeTensor({std::string("model"), name}, b));
    }
  }
  // The 16-bit weights DeepSpeed's module holds (ZeRO 0-2: all of them).
  if (stage <= 2 && module && module->isDict())
    for (const auto& [k, v] : module->entries)
      if (k->isStr() && v->isTensor())
        m_tensors.push_back(wholeTensor({std::string("module"), std::string(k->text)}, v));
  if (stage != 0)
    m_notes.push_back("fp32 masters rebuilt from " + std::to_string(world) + " ranks' " +
                      groupsKey + " (ZeRO-" + std::to_string(stage) + ")");
}

}  // namespace ckpt
