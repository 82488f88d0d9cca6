// FSDP checkpoints saved with torch.save, one file per rank (FORMAT.md
// section 7): model_rank0.pt, model_rank1.pt, ... Each holds the rank's
// state dict, where a sharded tensor is a ShardedTensor or a DTensor:
// _rebuild_from_type_v2(_rebuild_wrapper_subclass, <class>, (cls, dtype,
// size, ...), state), which the safe pickle reader leaves as an opaque object
// of that class with its arguments and state. Nothing of the classes runs:
// their fields are read by name here.
// - ShardedTensor (SHARDED_STATE_DICT, and LOCAL_STATE_DICT's `_flat_param`
//   buffers): state (local shards, ShardedTensorMetadata, ...); each Shard
//   has its tensor and ShardMetadata(shard_offsets, shard_sizes, placement),
//   and the metadata lists every rank's shards, so a missing rank's chunks
//   are known.
// - DTensor: state {_local_tensor, _spec}, the spec's placements (Shard(dim),
//   Replicate()) over its device mesh say where the local tensor lies:
//   torch.chunk's split along each sharded dimension.
// A plain tensor (a buffer) is on every rank: kept once, counted as replicas.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/error.h"
#include "ckpt/format/sharded.h"
#include "sharded_util.h"

namespace fs = std::filesystem;

namespace ckpt {

namespace sharded {

std::string RankName::group() const {
  std::string g = prefix;
  while (!g.empty() && (g.back() == '_' || g.back() == '-' || g.back() == '.')) g.pop_back();
  return g.empty() ? "rank" : g;
}

std::optional<RankName> parseRankName(const std::string& file) {
  std::string lower = file;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const size_t dot = lower.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string ext = lower.substr(dot);
  if (ext != ".pt" && ext != ".pth" && ext != ".bin") return std::nullopt;
  if (lower.find("mp_rank_") != std::string::npos) return std::nullopt;  // DeepSpeed
  for (size_t pos = lower.find("rank"); pos != std::string::npos;
       pos = lower.find("rank", pos + 1)) {
    if (pos > 0 && std::isalpha(static_cast<unsigned char>(lower[pos - 1]))) continue;
    size_t i = pos + 4;
    if (i < dot && (lower[i] == '_' || lower[i] == '-')) ++i;
    size_t j = i;
    while (j < dot && std::isdigit(static_cast<unsigned char>(lower[j])) && j - i < 6) ++j;
    if (j == i || (j < dot && std::isdigit(static_cast<unsigned char>(lower[j])))) continue;
    RankName r;
    r.file = file;
    r.prefix = file.substr(0, i);
    r.digits = file.substr(i, j - i);
    r.suffix = file.substr(j);
    r.rank = std::stoi(r.digits);
    return r;
  }
  return std::nullopt;
}

std::vector<RankName> rankFilesIn(const std::string& folder) {
  std::vector<RankName> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (auto r = parseRankName(it->path().filename().string()); r && r->rank < kMaxRanks)
      out.push_back(std::move(*r));
  }
  std::sort(out.begin(), out.end(), [](const RankName& a, const RankName& b) {
    return std::tie(a.prefix, a.suffix, a.rank) < std::tie(b.prefix, b.suffix, b.rank);
  });
  return out;
}

}  // namespace sharded

namespace {

using K = Value::Kind;
using namespace sharded;

std::optional<PathElement> keyOf(const Value* k) {
  if (k->isStr()) return PathElement(std::string(k->text));
  if (k->isInt()) return PathElement(k->integer);
  return std::nullopt;
}

std::string pathText(const std::vector<PathElement>& path) {
  std::string s;
  for (const PathElement& e : path) {
    if (!s.empty()) s += '.';
    if (const auto* str = std::get_if<std::string>(&e))
      s += *str;
    else
      s += std::to_string(std::get<int64_t>(e));
  }
  return s;
}

uint64_t numelOf(const Dims& d) {
  uint64_t n = 1;
  for (size_t i = 0; i < d.size(); ++i) n *= uint64_t(d[i]);
  return n;
}

// ShardMetadata.placement: a _remote_device ("rank:1/cuda:1"); its state
// keeps the rank as `_rank`.
int placementRank(const Value* placement) {
  if (const Value* r = field(placement, "_rank"); r && r->isInt())
    return r->integer >= 0 && r->integer < kMaxRanks ? int(r->integer) : -1;
  const Value* s = placement && placement->isStr() ? placement : nullptr;
  if (!s && placement && placement->kind == K::Object && !placement->items.empty() &&
      placement->items[0]->isStr())
    s = placement->items[0];
  if (s && s->text.rfind("rank:", 0) == 0) {
    int rank = 0;
    for (size_t i = 5; i < s->text.size() && std::isdigit(static_cast<unsigned char>(s->text[i]));
         ++i) {
      rank = rank * 10 + (s->text[i] - '0');
      if (rank >= kMaxRanks) return -1;
    }
    return rank;
  }
  return -1;
}

// The world a rank's file knows of without its tensors being read: the
// largest placement rank of any ShardMetadata in it (every ShardedTensor
// lists every rank's shards) plus one; 0 when it holds none. Bounded walk.
int worldFromShardMetadata(const Value* root) {
  int world = 0;
  size_t budget = 1u << 20;
  std::vector<std::pair<const Value*, int>> stack{{root, 0}};
  while (!stack.empty() && budget) {
    const auto [v, depth] = stack.back();
    stack.pop_back();
    if (!v || depth > 64) continue;
    --budget;
    if (v->kind == K::Object && endsWith(v->text, ".ShardMetadata") &&
        !endsWith(v->text, "ShardedTensorMetadata")) {
      world = std::max(world, placementRank(field(v, "placement")) + 1);
      continue;
    }
    for (const Value* x : v->items) stack.emplace_back(x, depth + 1);
    for (const auto& [k, x] : v->entries) stack.emplace_back(x, depth + 1);
    for (const Value* x : v->listItems) stack.emplace_back(x, depth + 1);
    if (v->state) stack.emplace_back(v->state, depth + 1);
  }
  return world;
}

// The wrapper's arguments (cls, dtype, size, stride, storage_offset, ...).
std::optional<DType> wrapperDtype(const Value* v) {
  if (v->items.size() > 1 && v->items[1]->kind == K::Global)
    return dtypeFromTorchName(v->items[1]->text);
  return std::nullopt;
}
std::optional<Dims> wrapperSize(const Value* v) {
  return v->items.size() > 2 ? intsOf(v->items[2]) : std::nullopt;
}

// Why a tensor of a rank's file cannot be read: its own error or its storage's.
std::string tensorError(const CheckpointFile& f, const TensorInfo& info) {
  if (!info.error.empty()) return info.error;
  if (info.storage >= 0 && size_t(info.storage) < f.storages().size())
    return f.storages()[size_t(info.storage)].error;
  return {};
}

// A chunk a rank holds or should hold.
struct Expected {
  Dims offsets, sizes;
  int rank = -1;
};

// Where a DTensor's local tensor lies on mesh coordinate `coord`: along each
// mesh dimension with Shard(d), torch.chunk's split of what is left.
std::optional<std::pair<Dims, Dims>> dtensorChunk(const Dims& global, const Value* placements,
                                                  const Dims& meshShape, const Dims& coord,
                                                  std::string& error) {
  Dims offsets(global.size(), 0), sizes = global;
  for (size_t i = 0; i < placements->items.size(); ++i) {
    const Value* p = placements->items[i];
    if (isClass(p, "Replicate")) continue;
    const Value* dim = field(p, "dim");
    if (!isClass(p, "Shard") || !dim || !dim->isInt()) {
      error = "placement " + shortRepr(p, 60) + " is not read (Shard(dim) and Replicate() are)";
      return std::nullopt;
    }
    int64_t d = dim->integer;
    if (d < 0) d += int64_t(global.size());
    if (d < 0 || size_t(d) >= global.size()) {
      error = "placement Shard(" + std::to_string(dim->integer) + ") names no dimension of " +
              dimsText(global);
      return std::nullopt;
    }
    const int64_t n = meshShape[i], full = sizes[size_t(d)];
    const int64_t per = n > 0 ? (full + n - 1) / n : full;
    const int64_t start = std::min(coord[i] * per, full);
    offsets[size_t(d)] += start;
    sizes[size_t(d)] = std::max<int64_t>(0, std::min(per, full - start));
  }
  return std::make_pair(offsets, sizes);
}

}  // namespace

void ShardSet::openFsdp(bool metadataOnly) {
  const std::vector<RankName> files = rankFilesIn(m_folder);
  if (files.empty()) fail(m_folder + ": no per-rank files (model_rank0.pt, ...)");
  struct Group {
    std::string prefix, suffix, name;
    size_t width = 1;
    std::map<int, int> partOfRank;
  };
  std::vector<Group> groups;
  int maxRank = -1;
  for (const RankName& r : files) {
    if (groups.empty() || groups.back().prefix != r.prefix || groups.back().suffix != r.suffix)
      groups.push_back(Group{r.prefix,
                             r.suffix,
                             r.group(),
                             r.digits.size() > 1 && r.digits[0] == '0' ? r.digits.size() : 1,
                             {}});
    groups.back().partOfRank[r.rank] = addPart(r.file, r.rank);
    maxRank = std::max(maxRank, r.rank);
  }
  // Ranks below `world` with no file in a group: parts that are missing
  // (a gap in the numbers is known from the names alone).
  auto addMissing = [&](int world) {
    m_ranks = world;
    for (Group& g : groups)
      for (int r = 0; r < world && r < kMaxRanks; ++r)
        if (!g.partOfRank.count(r)) {
          std::string digits = std::to_string(r);
          if (digits.size() < g.width) digits.insert(0, g.width - digits.size(), '0');
          g.partOfRank[r] = addPart(g.prefix + digits + g.suffix, r);
        }
  };
  addMissing(maxRank + 1);
  const bool prefixed = groups.size() > 1;
  auto fullPath = [&](const Group& g, const std::vector<PathElement>& path) {
    std::vector<PathElement> full;
    if (prefixed) full.emplace_back(g.name);
    full.insert(full.end(), path.begin(), path.end());
    return full;
  };
  // Dicts are entered; anything else is a leaf.
  std::function<void(const Value*, std::vector<PathElement>&, int,
                     const std::function<void(const Value*, const std::vector<PathElement>&)>&)>
      walk = [&](const Value* v, std::vector<PathElement>& path, int depth, const auto& leaf) {
        if (v->isDict() && !v->entries.empty() && depth < 32) {
          for (const auto& [k, x] : v->entries) {
            const std::optional<PathElement> key = keyOf(k);
            path.push_back(key ? *key : PathElement(shortRepr(k, 40)));
            walk(x, path, depth + 1, leaf);
            path.pop_back();
          }
          return;
        }
        leaf(v, path);
      };

  if (metadataOnly) {
    // A listing wants the step and such: rank 0's non-tensor values, read
    // with tensors left as rebuild calls.
    for (const Group& g : groups) {
      const ShardPart& p = m_parts[size_t(g.partOfRank.begin()->second)];
      ReadOptions options;
      options.metadataOnly = true;
      try {
        m_itemFiles.push_back(CheckpointFile::open(p.path, options));
      } catch (const FormatError&) {
        continue;  // said when the checkpoint is opened whole
      }
      // A missing last rank is known from the shard metadata, not the names.
      if (const int world = worldFromShardMetadata(m_itemFiles.back()->root()); world > m_ranks)
        addMissing(world);
      std::vector<PathElement> path;
      walk(m_itemFiles.back()->root(), path, 0,
           [&](const Value* v, const std::vector<PathElement>& at) {
             if (v->kind == K::Object && v->text.rfind("torch.", 0) == 0) return;
             if (v->isTensor() || at.empty()) return;
             m_items.push_back(Item{fullPath(g, at), v});
           });
    }
    return;
  }
  openParts();

  struct Pending {
    LogicalTensor t;
    std::vector<Expected> expected;
    const Group* group = nullptr;
  };
  std::vector<Pending> pending;
  std::map<std::vector<PathElement>, size_t> byPath;
  int world = maxRank + 1;

  for (const Group& g : groups) {
    bool first = true;
    for (const auto& rankPart : g.partOfRank) {
      // Plain names, not structured bindings: the lambdas below capture
      // them (clang 14, the fuzz preset's compiler, does not allow that).
      const int rank = rankPart.first, part = rankPart.second;
      const CheckpointFile* f = m_files[size_t(part)].get();
      if (!f) continue;
      const std::string& file = m_parts[size_t(part)].file;
      const bool itemsHere = first;
      first = false;
      std::vector<PathElement> path;
      walk(f->root(), path, 0, [&](const Value* v, const std::vector<PathElement>& at) {
        const bool tensorLike =
            v->isTensor() || isClass(v, "ShardedTensor") || isClass(v, "DTensor");
        if (!tensorLike) {
          if (itemsHere && !at.empty()) m_items.push_back(Item{fullPath(g, at), v});
          return;
        }
        const std::vector<PathElement> full = fullPath(g, at);
        auto [it, added] = byPath.emplace(full, pending.size());
        if (added) {
          Pending p;
          p.t.name = pathText(full);
          p.t.path = full;
          p.group = &g;
          pending.push_back(std::move(p));
        }
        Pending& pe = pending[it->second];
        LogicalTensor& t = pe.t;
        const std::string key = inQuotes(t.name);
        auto setError = [&](const std::string& e) {
          if (t.error.empty()) t.error = e;
        };
        auto localTensor = [&](const Value* node, const Dims& offsets, const Dims& sizes) -> int {
          if (!node || !node->isTensor()) {
            setError(file + ": a shard of " + key + " holds no tensor");
            return -1;
          }
          const TensorInfo& info = f->tensors()[size_t(node->index)];
          if (const std::string e = tensorError(*f, info); !e.empty())
            setError(file + ": " + key + ": " + e);
          if (info.shape != sizes || info.dtype != t.dtype)
            setError(file + ": the chunk at offsets " + dimsText(offsets) + " of " + key +
                     " holds a " + std::string(dtypeName(info.dtype)) + " " + info.shapeString() +
                     " tensor, its metadata says " + std::string(dtypeName(t.dtype)) + " " +
                     dimsText(sizes));
          return int(node->index);
        };
        if (v->isTensor()) {
          // A plain tensor: the same on every rank (a buffer, a replicated value).
          const TensorInfo& info = f->tensors()[size_t(v->index)];
          if (added) {
            t.dtype = info.dtype;
            t.shape = info.shape;
          } else if (t.shape != info.shape || t.dtype != info.dtype) {
            setError(file + " holds " + key + " as a " + std::string(dtypeName(info.dtype)) + " " +
                     info.shapeString() + " tensor, an earlier rank's file as a " +
                     std::string(dtypeName(t.dtype)) + " " + dimsText(t.shape));
            return;
          }
          if (const std::string e = tensorError(*f, info); !e.empty())
            setError(file + ": " + key + ": " + e);
          t.chunks.push_back(
              ShardChunk{part, -1, int(v->index), Dims(info.shape.size(), 0), info.shape, 0});
          return;
        }
        const std::optional<DType> dtype = wrapperDtype(v);
        const std::optional<Dims> size = wrapperSize(v);
        if (!dtype || !size || !plausibleShape(*size)) {
          setError(file + ": " + key + " is a " + std::string(v->text) +
                   " without the dtype and size this reader knows");
          return;
        }
        if (added) {
          t.dtype = *dtype;
          t.shape = *size;
        } else if (t.shape != *size || t.dtype != *dtype) {
          setError(file + " says " + key + " is " + std::string(dtypeName(*dtype)) + " " +
                   dimsText(*size) + ", an earlier rank's file " + std::string(dtypeName(t.dtype)) +
                   " " + dimsText(t.shape));
          return;
        }
        if (isClass(v, "ShardedTensor")) {
          const Value* st = v->state;
          if (!st || !st->isSequence() || st->items.size() < 2 || !st->items[0]->isSequence()) {
            setError(file + ": " + key +
                     " is a ShardedTensor without (local shards, metadata) state");
            return;
          }
          if (!at.empty())
            if (const auto* last = std::get_if<std::string>(&at.back());
                last && endsWith(*last, "_flat_param"))
              t.flat = true;
          for (const Value* shard : st->items[0]->items) {
            const Value* md = field(shard, "metadata");
            const std::optional<Dims> offsets = intsOf(field(md, "shard_offsets"));
            const std::optional<Dims> sizes = intsOf(field(md, "shard_sizes"));
            if (!offsets || !sizes) {
              setError(file + ": a shard of " + key + " has no shard_offsets and shard_sizes");
              return;
            }
            const int index = localTensor(field(shard, "tensor"), *offsets, *sizes);
            if (index >= 0) t.chunks.push_back(ShardChunk{part, -1, index, *offsets, *sizes, 0});
          }
          // Every rank's shards, as the writer knew them.
          if (pe.expected.empty()) {
            const Value* all = field(st->items[1], "shards_metadata");
            if (all && all->isSequence() && all->items.size() <= kMaxChunks)
              for (const Value* md : all->items) {
                const std::optional<Dims> offsets = intsOf(field(md, "shard_offsets"));
                const std::optional<Dims> sizes = intsOf(field(md, "shard_sizes"));
                if (!offsets || !sizes) continue;
                const int r = placementRank(field(md, "placement"));
                world = std::max(world, r + 1);
                pe.expected.push_back(Expected{*offsets, *sizes, r});
              }
          }
          return;
        }
        // DTensor: its local tensor and where the placements put it.
        const Value* spec = field(v, "_spec");
        const Value* placements = field(spec, "placements");
        if (!placements || !placements->isSequence() || placements->items.empty()) {
          setError(file + ": " + key + " is a DTensor without placements");
          return;
        }
        Dims meshShape;
        if (const Value* m = field(field(spec, "mesh"), "mesh"); m && m->isTensor())
          meshShape = f->tensors()[size_t(m->index)].shape;
        else if (placements->items.size() == 1)
          meshShape = Dims{int64_t(g.partOfRank.rbegin()->first + 1)};
        if (meshShape.size() != placements->items.size()) {
          setError(file + ": " + key + " has " + std::to_string(placements->items.size()) +
                   " placements for a device mesh of shape " + dimsText(meshShape));
          return;
        }
        const uint64_t meshSize = numelOf(meshShape);
        if (meshSize > uint64_t(kMaxRanks)) {
          setError(file + ": " + key + "'s device mesh " + dimsText(meshShape) + " has more than " +
                   std::to_string(kMaxRanks) + " ranks");
          return;
        }
        world = std::max<int>(world, int(meshSize));
        // Mesh coordinates of a rank (the mesh as torch.arange(n).view(shape)).
        auto coordOf = [&](uint64_t r) {
          Dims c(meshShape.size(), 0);
          for (size_t d = meshShape.size(); d-- > 0;) {
            c[d] = int64_t(r % uint64_t(meshShape[d]));
            r /= uint64_t(meshShape[d]);
          }
          return c;
        };
        std::string error;
        if (uint64_t(rank) >= meshSize) {
          setError(file + ": rank " + std::to_string(rank) + " lies outside the device mesh " +
                   dimsText(meshShape));
          return;
        }
        const auto mine =
            dtensorChunk(t.shape, placements, meshShape, coordOf(uint64_t(rank)), error);
        if (!mine) {
          setError(file + ": " + key + ": " + error);
          return;
        }
        const int index = localTensor(field(v, "_local_tensor"), mine->first, mine->second);
        if (index >= 0)
          t.chunks.push_back(ShardChunk{part, -1, index, mine->first, mine->second, 0});
        if (pe.expected.empty())
          for (uint64_t r = 0; r < meshSize; ++r)
            if (const auto c = dtensorChunk(t.shape, placements, meshShape, coordOf(r), error))
              pe.expected.push_back(Expected{c->first, c->second, int(r)});
      });
    }
  }

  // Ranks the metadata knows and no file is there for: parts that are missing.
  addMissing(world);

  for (Pending& pe : pending) {
    LogicalTensor& t = pe.t;
    for (const Expected& e : pe.expected) {
      if (numelOf(e.sizes) == 0) continue;
      const bool held = std::any_of(t.chunks.begin(), t.chunks.end(), [&](const ShardChunk& c) {
        return c.offsets == e.offsets && c.sizes == e.sizes;
      });
      if (held) continue;
      const std::string what = "the chunk at offsets " + dimsText(e.offsets) + " sizes " +
                               dimsText(e.sizes) + " of " + inQuotes(t.name);
      const auto part = pe.group->partOfRank.find(e.rank);
      // The first problem is the tensor's error; every chunk a missing or
      // unreadable rank's file should hold is listed.
      if (part == pe.group->partOfRank.end()) {
        if (t.error.empty()) t.error = "no rank's file holds " + what;
      } else {
        const ShardPart& p = m_parts[size_t(part->second)];
        if (t.error.empty())
          t.error =
              !p.error.empty() ? p.error + " (" + what + ")" : p.file + " does not hold " + what;
        if (!p.error.empty())
          t.missing.push_back(ShardChunk{part->second, -1, -1, e.offsets, e.sizes, 0});
      }
    }
    checkChunks(t);
    m_tensors.push_back(std::move(t));
  }
}

}  // namespace ckpt
