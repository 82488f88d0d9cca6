// ckptscope-cli ls DIR [--json] [--no-cache]
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "ckpt/format/error.h"
#include "ckpt/format/value.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/metrics_cache.h"
#include "ckpt/index/scanner.h"
#include "ckpt/remote/scan_wire.h"
#include "common.h"
#include "documents.h"
#include "remote_commands.h"

namespace ckpt::cli {
namespace {

std::string localTime(int64_t t) {
  const std::time_t tt = std::time_t(t);
  std::tm tm{};
  localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

// Each run's stage family (experiment.h), "" when it stands alone.
std::vector<std::string> runFamilies(const ScanResult& r) {
  std::vector<std::string> names;
  for (const RunEntry& run : r.runs) names.push_back(run.name);
  return familiesOf(names);
}

void printText(const ScanResult& r) {
  size_t total = 0;
  const std::vector<std::string> families = runFamilies(r);
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const RunEntry& run = r.runs[i];
    std::string place;
    if (!families[i].empty()) {
      const StageName s = splitStageName(run.name);
      place = "  [family " + families[i] + (s.stage.empty() ? "" : ", stage " + s.stage) +
              (s.branch.empty() ? "" : ", branch " + s.branch) + "]";
    }
    const std::string trainer = run.trainer.empty() ? "" : "  [" + run.trainer + "]";
    std::printf("%s  (%zu checkpoint%s)%s%s\n", run.name.c_str(), run.checkpoints.size(),
                run.checkpoints.size() == 1 ? "" : "s", place.c_str(), trainer.c_str());
    if (run.checkpoints.empty()) {
      // A run that logs but has not saved yet: what it is listed for.
      for (const std::string& f : run.metricFiles) std::printf("  metrics: %s\n", f.c_str());
      continue;
    }
    std::printf("  %8s  %-6s  %-10s  %9s  %-16s  %s\n", "step", "kind", "loss", "size", "modified",
                "file");
    for (const CheckpointEntry& c : run.checkpoints) {
      const std::string step = c.step ? std::to_string(*c.step) : "-";
      const std::string kind =
          c.kind == CheckpointKind::Unknown ? "-" : std::string(checkpointKindName(c.kind));
      std::string loss = "-";
      if (c.loss) {
        char b[32];
        std::snprintf(b, sizeof b, "%.4f", *c.loss);
        loss = b;
      }
      std::printf("  %8s  %-6s  %-10s  %9s  %-16s  %s\n", step.c_str(), kind.c_str(), loss.c_str(),
                  humanBytes(c.size).c_str(), localTime(c.mtime).c_str(), c.file.c_str());
      if (!c.sharded.empty()) std::printf("  %8s  %s\n", "", c.sharded.c_str());
      if (c.best) std::printf("  %8s  best (%s)\n", "", c.bestSource.c_str());
      if (c.latest)
        std::printf("  %8s  latest (%s)\n", "",
                    c.trainer == "megatron" ? "latest_checkpointed_iteration.txt"
                                            : "DeepSpeed's latest file");
      if (!c.parts.empty()) {
        std::string parts;
        for (const CheckpointPart& p : c.parts) parts += (parts.empty() ? "" : ", ") + p.file;
        std::printf("  %8s  with %s\n", "", parts.c_str());
      }
      if (!c.error.empty()) std::printf("  %8s  error: %s\n", "", c.error.c_str());
      ++total;
    }
  }
  std::printf("%zu checkpoint%s in %zu run%s\n", total, total == 1 ? "" : "s", r.runs.size(),
              r.runs.size() == 1 ? "" : "s");
}

}  // namespace

nlohmann::ordered_json lsDocument(const ScanResult& result) {
  // One writer for the command and the agent's `scan` (ckpt/remote/scan_wire.h).
  return remote::scanToWire(result, /*full=*/false);
}

int runLs(int argc, char** argv) {
  Args args;
  std::string problem;
  if (!parseArgs(argc, argv, 2, {"--json", "--no-cache"}, args, problem))
    return usageError(problem, "ls");
  if (args.positional.size() != 1) return usageError("ls takes exactly one DIR", "ls");
  if (const auto remote = remotePaths(args.positional, problem))
    return runRemoteLs(remote->front(), args.has("--json"));
  if (!problem.empty()) return usageError(problem, "ls");
  // Every file read again, without the listing cache (listing_cache.h).
  if (args.has("--no-cache")) setMetricsCacheEnabled(false);
  ScanResult result;
  try {
    result = scanDirectory(args.positional[0]);
  } catch (const std::exception& e) {
    return failWith(e.what());
  }
  if (args.has("--json")) {
    printJson(lsDocument(result));
  } else {
    printText(result);
  }
  return kExitOk;
}

}  // namespace ckpt::cli
