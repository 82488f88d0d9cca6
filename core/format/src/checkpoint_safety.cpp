// The safety of a whole checkpoint: one file's scan, or the worst of the
// scans of every file a sharded checkpoint's layout names. A DCP .distcp
// part is a run of torch.save archives back to back; torch reads each at
// the offset .metadata gives, so each is scanned there.
#include "ckpt/format/checkpoint_safety.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <tuple>

#include "ckpt/format/error.h"
#include "ckpt/format/megatron_names.h"
#include "ckpt/format/sharded.h"
#include "sharded_util.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

// Archives of one .distcp part scanned at most: more is taken for a
// hostile .metadata (the rest make the part unreadable, never safe).
constexpr size_t kMaxSlicesPerPart = 100'000;

int severity(Verdict v) {
  switch (v) {
    case Verdict::Safe:
      return 0;
    case Verdict::Suspicious:
      return 1;
    case Verdict::Unreadable:
      return 2;
    case Verdict::Dangerous:
      return 3;
  }
  return 2;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Adds one archive's report to its part's: records named after the item
// and where it lies, the first error kept (later ones counted).
void addSlice(SafetyReport& into, SafetyReport&& slice, const ShardSet::StorageSlice& s,
              size_t& brokenSlices, const ScanLimits& limits) {
  const std::string where = "'" + s.key.substr(0, 200) + "' at byte " + std::to_string(s.offset);
  for (GlobalUse& g : slice.globals) {
    if (into.globals.size() >= limits.maxGlobals) {
      ++into.leftOut;
      into.leftOutWorst = std::max(into.leftOutWorst, g.level);
      continue;
    }
    g.record = where + ": " + g.record;
    into.globals.push_back(std::move(g));
  }
  into.leftOut += slice.leftOut;
  into.leftOutWorst = std::max(into.leftOutWorst, slice.leftOutWorst);
  into.pickles += slice.pickles;
  if (!slice.error.empty()) {
    if (++brokenSlices == 1) into.error = where + ": " + slice.error;
  }
}

// A .distcp part: every archive .metadata places in it, each once.
SafetyReport scanDistcp(const ShardSet& shards, int part, const ScanLimits& limits) {
  SafetyReport report;
  const ShardPart& p = shards.parts()[size_t(part)];
  std::set<std::pair<uint64_t, uint64_t>> seen;
  size_t broken = 0, scanned = 0;
  for (const ShardSet::StorageSlice& s : shards.storageSlices()) {
    if (s.part != part || !seen.emplace(s.offset, s.length).second) continue;
    if (++scanned > kMaxSlicesPerPart) {
      if (++broken == 1)
        report.error = p.path + ": .metadata places more than " +
                       std::to_string(kMaxSlicesPerPart) + " archives in it; the rest not scanned";
      break;
    }
    addSlice(report, scanFileSlice(p.path, s.offset, s.length, limits), s, broken, limits);
  }
  if (broken > 1)
    report.error += " (and " + plural(broken - 1, "more archive", "more archives") +
                    " that could not be scanned)";
  report.verdict = judgeSafety(report);
  return report;
}

// The profile a layout's part files are judged under (DCP's parts are
// torch.save archives of tensors: no profile; its .metadata has its own).
SafetyProfile partProfile(ShardLayout layout) {
  switch (layout) {
    case ShardLayout::Fsdp:
      return SafetyProfile::Fsdp;
    case ShardLayout::DeepSpeed:
      return SafetyProfile::DeepSpeed;
    case ShardLayout::Megatron:
      return SafetyProfile::Megatron;
    case ShardLayout::HuggingFace:
    case ShardLayout::Dcp:
      break;
  }
  return SafetyProfile::None;
}

// A Hugging Face Trainer's training_args.bin: the name, in a folder the
// Trainer writes (a checkpoint-N/ folder with trainer_state.json, or the
// output folder with the model's config.json).
bool isTrainerArgs(const fs::path& p) {
  if (p.filename() != "training_args.bin") return false;
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  return fs::is_regular_file(folder / "trainer_state.json", ec) ||
         fs::is_regular_file(folder / "config.json", ec);
}

void judge(CheckpointSafety& out) {
  Verdict v = out.error.empty() ? Verdict::Safe : Verdict::Unreadable;
  for (const FileSafety& f : out.files)
    if (severity(f.report.verdict) > severity(v)) v = f.report.verdict;
  out.verdict = v;
}

// Storage entries of .metadata that name no place to scan (a path that
// leaves the folder, a transformed item): what torch would read there is
// unknown, so the checkpoint cannot be called safe.
std::string unplacedStorage(const ShardSet& shards) {
  size_t n = 0;
  std::string first;
  for (const ShardSet::StorageSlice& s : shards.storageSlices())
    if (s.part < 0 && !s.error.empty() && n++ == 0) first = s.error;
  if (n == 0) return {};
  return first +
         (n > 1 ? " (and " + plural(n - 1, "more entry", "more entries") + " like it)" : "") +
         ": not scanned";
}

CheckpointSafety scanSharded(const ShardProbe& probe, const ScanLimits& limits) {
  CheckpointSafety out;
  out.layout = std::string(shardLayoutTitle(probe.layout));
  // DCP's .metadata is a plain pickle torch unpickles first: scanned even
  // when it is no Metadata at all (then the files it would name are unknown).
  if (probe.layout == ShardLayout::Dcp)
    out.files.push_back(FileSafety{".metadata", probe.entry,
                                   scanFile(probe.entry, limits, SafetyProfile::DcpMetadata)});
  try {
    const std::unique_ptr<ShardSet> shards = ShardSet::open(probe, /*metadataOnly=*/true);
    for (size_t i = 0; i < shards->parts().size(); ++i) {
      const ShardPart& p = shards->parts()[i];
      if (!p.present) {
        ++out.missing;
        continue;
      }
      out.files.push_back(FileSafety{p.file, p.path,
                                     probe.layout == ShardLayout::Dcp
                                         ? scanDistcp(*shards, int(i), limits)
                                         : scanFile(p.path, limits, partProfile(probe.layout))});
    }
    if (probe.layout == ShardLayout::Dcp) out.error = unplacedStorage(*shards);
  } catch (const FormatError& e) {
    out.error = e.what();
  } catch (const std::bad_alloc&) {
    out.error = probe.folder + ": out of memory while reading the checkpoint's description";
  } catch (const std::length_error&) {
    out.error = probe.folder + ": a size in the checkpoint's description is too large";
  } catch (const std::exception& e) {
    out.error = probe.folder + ": " + e.what();
  }
  judge(out);
  return out;
}

// A file named on its own that is a part of its folder's layout, judged
// where it sits: a .distcp part by the archives the folder's .metadata
// places in it (what torch reads); a DeepSpeed or FSDP rank file under its
// layout's profile; a Trainer's training_args.bin under the Trainer's.
// Only names a layout gives its parts are looked at (a folder is listed
// for no other file).
// Where a file named on its own sits: the profile it is judged under, or
// (a DCP .distcp part) the archives its folder's .metadata places in it.
struct Place {
  SafetyProfile profile = SafetyProfile::None;
  std::unique_ptr<ShardSet> shards;  // a .distcp part's
  int distcpPart = -1;
};

Place placeOf(const std::string& path) {
  Place place;
  const fs::path p(path);
  if (isTrainerArgs(p)) {
    place.profile = SafetyProfile::HfTrainingArgs;
    return place;
  }
  if (isMegatronRankFile(path) || isMegatronCommonFile(path)) {
    place.profile = SafetyProfile::Megatron;
    return place;
  }
  const bool distcp = p.extension() == ".distcp";
  if (!distcp && p.filename().string().find("rank") == std::string::npos) return place;
  const std::string folder = p.has_parent_path() ? p.parent_path().string() : ".";
  const std::optional<ShardProbe> probe = probeSharded(folder);
  if (!probe || (distcp ? probe->layout != ShardLayout::Dcp
                        : partProfile(probe->layout) == SafetyProfile::None))
    return place;
  if (!distcp) {
    // A DeepSpeed or FSDP part by its name, as ShardSet lists them (by the
    // names in the folder, no file opened: the reader opens this one next,
    // and judges it on that walk).
    const std::string name = p.filename().string();
    bool part = false;
    if (probe->layout == ShardLayout::DeepSpeed) {
      const std::optional<sharded::DeepSpeedName> d = sharded::parseDeepSpeedName(name);
      part =
          d && d->rank < sharded::kMaxRanks && d->mpRank == 0;  // openDeepSpeed reads mp_rank_00's
    } else {
      for (const sharded::RankName& r : sharded::rankFilesIn(folder)) part = part || r.file == name;
    }
    if (part) place.profile = partProfile(probe->layout);
    return place;
  }
  try {
    std::unique_ptr<ShardSet> shards = ShardSet::open(*probe, /*metadataOnly=*/true);
    std::error_code ec;
    for (size_t i = 0; i < shards->parts().size(); ++i) {
      const ShardPart& part = shards->parts()[i];
      if (!part.present || !fs::equivalent(part.path, path, ec)) continue;
      place.distcpPart = int(i);
      place.shards = std::move(shards);
      return place;
    }
  } catch (const std::exception&) {
  }
  return place;
}

CheckpointSafety single(const std::string& path, SafetyReport&& report) {
  CheckpointSafety out;
  out.files.push_back(FileSafety{fs::path(path).filename().string(), path, std::move(report)});
  judge(out);
  return out;
}

}  // namespace

const FileSafety* CheckpointSafety::worstFile() const {
  if (verdict == Verdict::Safe) return nullptr;
  for (const FileSafety& f : files)
    if (f.report.verdict == verdict) return &f;
  return nullptr;
}

size_t CheckpointSafety::filesWithVerdict() const {
  size_t n = 0;
  for (const FileSafety& f : files) n += f.report.verdict == verdict ? 1 : 0;
  return n;
}

std::vector<std::string> CheckpointSafety::offenders(SafetyLevel level) const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const FileSafety& f : files)
    for (const GlobalUse& g : f.report.globals)
      if (g.level == level) {
        std::string n = g.module + "." + g.name;
        if (seen.insert(n).second) out.push_back(std::move(n));
      }
  return out;
}

std::vector<std::string> CheckpointSafety::offenders() const {
  std::vector<std::string> out = offenders(SafetyLevel::Dangerous);
  for (std::string& s : offenders(SafetyLevel::Suspicious)) out.push_back(std::move(s));
  return out;
}

std::string CheckpointSafety::scope() const {
  if (!sharded()) return plural(files.size(), "file", "files");
  const auto is = [this](ShardLayout l) { return layout == shardLayoutTitle(l); };
  size_t parts = 0, distrib = 0;
  bool metadata = false;
  for (const FileSafety& f : files) {
    if (is(ShardLayout::Dcp) && f.file == ".metadata")
      metadata = true;
    else if (is(ShardLayout::Megatron) && fs::path(f.file).filename() == "distrib_optim.pt")
      ++distrib;  // the distributed optimizer's state beside a rank file
    else
      ++parts;
  }
  std::string s = is(ShardLayout::HuggingFace) ? plural(parts, "shard file", "shard files")
                  : is(ShardLayout::DeepSpeed) ? plural(parts, "file", "files")
                                               : plural(parts, "rank file", "rank files");
  if (metadata) s += " and .metadata";
  if (distrib) s += " and " + plural(distrib, "distrib_optim.pt", "distrib_optim.pt files");
  return s;
}

std::string CheckpointSafety::profilesNote() const {
  size_t profiled = 0;
  const FileSafety* first = nullptr;
  bool oneProfile = true;
  for (const FileSafety& f : files) {
    if (f.report.profile == SafetyProfile::None) continue;
    ++profiled;
    if (!first)
      first = &f;
    else
      oneProfile &= f.report.profile == first->report.profile;
  }
  if (!first) return {};
  const std::string title(safetyProfileTitle(first->report.profile));
  if (oneProfile && profiled == files.size()) return " (safe for " + title + ")";
  return " (" + first->file + ": safe for " + title + ")";
}

std::string CheckpointSafety::summary() const {
  if (!sharded() && files.size() == 1 && error.empty()) return files[0].report.summary();
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size() && i < 8; ++i) out += (i ? ", " : "") + v[i];
    if (v.size() > 8) out += ", ... (" + std::to_string(v.size()) + " in all)";
    return out;
  };
  std::string s(verdictName(verdict));
  const FileSafety* worst = worstFile();
  const size_t others = worst ? filesWithVerdict() - 1 : 0;
  const std::string who =
      worst ? worst->file + (others ? " and " + plural(others, "more file", "more files") : "")
            : std::string();
  switch (verdict) {
    case Verdict::Safe:
      s += ": " + scope() + ", only tensors and plain data" + profilesNote();
      break;
    case Verdict::Dangerous:
      s += ": " + who + " would run code: " + list(offenders(SafetyLevel::Dangerous));
      break;
    case Verdict::Suspicious:
      s += ": pickled objects that are not plain data in " + who + ": " +
           list(offenders(SafetyLevel::Suspicious));
      break;
    case Verdict::Unreadable:
      s += ": " + (worst ? worst->report.error : error);
      break;
  }
  if (missing) s += ", " + plural(missing, "missing file", "missing files") + " not scanned";
  return s;
}

CheckpointSafety scanCheckpoint(const std::string& path, const ScanLimits& limits) {
  if (const std::optional<ShardProbe> probe = probeSharded(path))
    return scanSharded(*probe, limits);
  const Place place = placeOf(path);
  if (place.distcpPart >= 0)
    return single(path, scanDistcp(*place.shards, place.distcpPart, limits));
  return single(path, scanFile(path, limits, place.profile));
}

std::optional<SafetyProfile> singleFileProfile(const std::string& path) {
  const Place place = placeOf(path);
  if (place.distcpPart >= 0) return std::nullopt;
  return place.profile;
}

CheckpointSafety singleFileSafety(const std::string& path, SafetyReport report) {
  return single(path, std::move(report));
}

}  // namespace ckpt
