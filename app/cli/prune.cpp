// ckptscope-cli prune RUN_DIR [--keep-best METRIC] [--keep-last N] [--every K] [--dry-run|--apply]
// [--json] Which checkpoints of a run the rules keep and which go (core/index/prune.h); a dry run
// unless --apply, which moves them to the desktop trash (or, on another filesystem,
// RUN_DIR/.trash/): never deleted.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "ckpt/index/prune.h"
#include "ckpt/index/run_plan.h"
#include "common.h"

namespace ckpt::cli {
namespace {

bool toCount(const std::string& flag, const std::string& text, int64_t& out, std::string& problem) {
  size_t used = 0;
  try {
    out = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || out < 0) {
    problem = flag + " needs a whole number of 0 or more, not '" + text + "'";
    return false;
  }
  return true;
}

nlohmann::ordered_json filesJson(const std::vector<PruneFile>& files) {
  auto a = nlohmann::ordered_json::array();
  for (const PruneFile& f : files) {
    nlohmann::ordered_json o{{"file", f.path}, {"size", f.size}};
    o["step"] = f.step ? nlohmann::ordered_json(*f.step) : nlohmann::ordered_json();
    o["reasons"] = f.reasons;
    a.push_back(o);
  }
  return a;
}

}  // namespace

int runPrune(int argc, char** argv) {
  PruneRules rules;
  std::string dir, problem;
  bool apply = false, dryRun = false, json = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--keep-best" || a == "--keep-last" || a == "--every") {
      if (i + 1 >= argc) return usageError(a + " needs a value", "prune");
      const std::string v = argv[++i];
      int64_t n = 0;
      if (a == "--keep-best")
        rules.keepBest = v;
      else if (!toCount(a, v, n, problem))
        return usageError(problem, "prune");
      else if (a == "--keep-last")
        rules.keepLast = int(std::min<int64_t>(n, 1 << 30));
      else
        rules.every = n;
    } else if (a == "--apply") {
      apply = true;
    } else if (a == "--dry-run") {
      dryRun = true;
    } else if (a == "--json") {
      json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return usageError("unknown option " + a, "prune");
    } else if (dir.empty()) {
      dir = a;
    } else {
      return usageError("prune takes one RUN_DIR", "prune");
    }
  }
  if (dir.empty()) return usageError("prune needs a RUN_DIR", "prune");
  if (apply && dryRun) return usageError("--apply and --dry-run contradict each other", "prune");
  PrunePlan plan;
  try {
    plan = planPrune(dir, rules);
  } catch (const std::invalid_argument& e) {
    return usageError(e.what(), "prune");
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
  std::vector<TrashedFile> trashed;
  if (apply && !plan.remove.empty()) {
    std::vector<std::string> files;
    for (const PruneFile& f : plan.remove) files.push_back(f.path);
    try {
      trashed = trashFiles(plan.runDir, files);
    } catch (const std::exception& e) {
      return failWith(e.what());
    }
  }
  if (json) {
    nlohmann::ordered_json o{{"run", plan.runDir},
                             {"applied", apply},
                             {"keep", filesJson(plan.keep)},
                             {"trash", filesJson(plan.remove)},
                             {"freed_bytes", plan.freedBytes},
                             {"kept_bytes", plan.keptBytes}};
    auto moved = nlohmann::ordered_json::array();
    for (const TrashedFile& t : trashed)
      moved.push_back({{"from", t.from}, {"to", t.to}, {"trashinfo", t.trashInfo}});
    o["moved"] = moved;
    printJson(o, 2);
    return kExitOk;
  }
  std::fputs(describePlan(plan).c_str(), stdout);
  if (!apply) {
    if (!plan.remove.empty()) std::puts("dry run: nothing moved (--apply moves them to the trash)");
  } else {
    for (const TrashedFile& t : trashed)
      std::printf("moved %s -> %s\n", t.from.c_str(), t.to.c_str());
  }
  return kExitOk;
}

}  // namespace ckpt::cli
