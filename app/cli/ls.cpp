// ckptscope-cli ls DIR [--json] [--no-cache]
#include <charconv>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "ckpt/format/error.h"
#include "ckpt/format/value.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/local_minute.h"
#include "ckpt/index/metrics_cache.h"
#include "ckpt/index/scanner.h"
#include "ckpt/remote/scan_wire.h"
#include "common.h"
#include "documents.h"
#include "remote_commands.h"

namespace ckpt::cli {
namespace {

// (The text of a minute is made once: a run's files are saved within minutes.)
std::string_view localTime(int64_t t) {
  static LocalMinuteText minute;
  if (const std::string* text = minute.of(t)) return *text;
  static std::string outOfRange;
  const std::time_t tt = std::time_t(t);
  std::tm tm{};
  localtime_r(&tt, &tm);
  char buf[32];
  outOfRange.assign(buf, std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm));
  return outOfRange;
}

// Each run's stage family (experiment.h), "" when it stands alone.
std::vector<std::string> runFamilies(const ScanResult& r) {
  std::vector<std::string> names;
  for (const RunEntry& run : r.runs) names.push_back(run.name);
  return familiesOf(names);
}

// `text` in a field of `width`, padded on the right (`left`) or the left, as printf's %-Ns / %Ns.
void appendField(std::string& out, std::string_view text, size_t width, bool left) {
  const size_t pad = text.size() < width ? width - text.size() : 0;
  if (!left) out.append(pad, ' ');
  out.append(text);
  if (left) out.append(pad, ' ');
}

// The listing's text, made in one buffer and written in large pieces (a
// printf per row, its loss and size printed by printf's own float code,
// took a tenth of listing 50,000 cached files).
void printText(const ScanResult& r) {
  std::string out;
  const auto flush = [&](bool always) {
    if (!always && out.size() < (size_t(1) << 20)) return;
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  };
  const auto line = [&](const char* format, auto... args) {
    char buf[512];
    const int n = std::snprintf(buf, sizeof buf, format, args...);
    if (n < 0) return;
    if (size_t(n) < sizeof buf) {
      out.append(buf, size_t(n));
      return;
    }
    std::string big(size_t(n) + 1, '\0');
    std::snprintf(big.data(), big.size(), format, args...);
    out.append(big.data(), size_t(n));
  };
  size_t total = 0;
  uint64_t lastSize = 0;
  std::string sizeText = humanBytes(0);
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
    line("%s  (%zu checkpoint%s)%s%s\n", run.name.c_str(), run.checkpoints.size(),
         run.checkpoints.size() == 1 ? "" : "s", place.c_str(), trainer.c_str());
    if (run.checkpoints.empty()) {
      // A run that logs but has not saved yet: what it is listed for.
      for (const std::string& f : run.metricFiles) line("  metrics: %s\n", f.c_str());
      continue;
    }
    line("  %8s  %-6s  %-10s  %9s  %-16s  %s\n", "step", "kind", "loss", "size", "modified",
         "file");
    for (const CheckpointEntry& c : run.checkpoints) {
      char step[24] = "-", loss[64] = "-";
      if (c.step) *std::to_chars(step, step + sizeof step - 1, *c.step).ptr = '\0';
      // (to_chars and printf both round the exact binary value: the same digits.)
      if (c.loss) {
        const auto [end, ec] =
            std::to_chars(loss, loss + sizeof loss - 1, *c.loss, std::chars_format::fixed, 4);
        if (ec == std::errc())
          *end = '\0';
        else
          std::snprintf(loss, sizeof loss, "%.4f", *c.loss);
      }
      if (c.size != lastSize) {
        lastSize = c.size;
        sizeText = humanBytes(c.size);
      }
      out.append("  ");
      appendField(out, step, 8, false);
      out.append("  ");
      appendField(out, c.kind == CheckpointKind::Unknown ? "-" : checkpointKindName(c.kind), 6,
                  true);
      out.append("  ");
      appendField(out, loss, 10, true);
      out.append("  ");
      appendField(out, sizeText, 9, false);
      out.append("  ");
      appendField(out, localTime(c.mtime), 16, true);
      out.append("  ");
      out.append(c.file);
      out.push_back('\n');
      if (!c.sharded.empty()) line("  %8s  %s\n", "", c.sharded.c_str());
      if (c.best) line("  %8s  best (%s)\n", "", c.bestSource.c_str());
      if (c.latest)
        line("  %8s  latest (%s)\n", "",
             c.trainer == "megatron" ? "latest_checkpointed_iteration.txt"
                                     : "DeepSpeed's latest file");
      if (!c.parts.empty()) {
        std::string parts;
        for (const CheckpointPart& p : c.parts) parts += (parts.empty() ? "" : ", ") + p.file;
        line("  %8s  with %s\n", "", parts.c_str());
      }
      if (!c.error.empty()) line("  %8s  error: %s\n", "", c.error.c_str());
      ++total;
      flush(false);
    }
  }
  line("%zu checkpoint%s in %zu run%s\n", total, total == 1 ? "" : "s", r.runs.size(),
       r.runs.size() == 1 ? "" : "s");
  flush(true);
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
