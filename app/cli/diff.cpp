// ckptscope-cli diff A B [--json] [--top N]
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ckpt/analysis/diff.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "common.h"
#include "documents.h"
#include "remote_commands.h"
#include "trainer_folder.h"

namespace ckpt::cli {
namespace {

constexpr size_t kDefaultTop = 20;

std::string num(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4e", d);
  return buf;
}

// Grid cells: three digits are enough to compare modules at a glance.
std::string shortNum(double d) {
  if (!std::isfinite(d)) return num(d);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", d);
  return buf;
}

std::string cosineText(double d) {
  if (!std::isfinite(d)) return num(d);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.8f", d);
  return buf;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string describe(const CheckpointFile& file) {
  const CheckpointView view(file);
  std::string s;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (view.step()) add("step " + std::to_string(*view.step()));
  if (view.stage()) add(*view.stage());
  if (view.loss()) add("loss " + formatPythonFloat(*view.loss()));
  add(humanBytes(file.fileSize()));
  return " (" + s + ")";
}

std::string blockLabel(int block) {
  return block < 0 ? "-" : std::to_string(block);
}

std::string nonFiniteText(const TensorDiff& t) {
  std::string s;
  auto add = [&s](uint64_t n, const char* what) {
    if (n) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(t.nanA, "NaN in a");
  add(t.infA, "inf in a");
  add(t.nanB, "NaN in b");
  add(t.infB, "inf in b");
  return s;
}

}  // namespace

void printDiffText(const CheckpointDiff& d, const CheckpointFile& a, const CheckpointFile& b) {
  std::printf("a  %s%s\nb  %s%s\n", d.pathA.c_str(), describe(a).c_str(), d.pathB.c_str(),
              describe(b).c_str());
  auto wrappers = [](bool ddp, bool compiled) {
    return std::string(ddp && compiled ? "module. and _orig_mod."
                                       : (ddp ? "module." : "_orig_mod."));
  };
  const bool wrappedA = d.compiledPrefixA || d.ddpPrefixA,
             wrappedB = d.compiledPrefixB || d.ddpPrefixB;
  if (wrappedA && wrappedB && d.compiledPrefixA == d.compiledPrefixB &&
      d.ddpPrefixA == d.ddpPrefixB) {
    std::printf("   keys of both carry %s (stripped)\n",
                wrappers(d.ddpPrefixA, d.compiledPrefixA).c_str());
  } else {
    if (wrappedA)
      std::printf("   keys of a carry %s (stripped)\n",
                  wrappers(d.ddpPrefixA, d.compiledPrefixA).c_str());
    if (wrappedB)
      std::printf("   keys of b carry %s (stripped)\n",
                  wrappers(d.ddpPrefixB, d.compiledPrefixB).c_str());
  }
  if (d.stateKeyA == "(all tensors)" || d.stateKeyB == "(all tensors)")
    std::printf("   no model state dict found: every tensor is compared by its path\n");

  // ---- structure
  std::printf(
      "\nstructure: %zu tensors in both, %zu added, %zu removed, %zu changed shape, %zu changed "
      "dtype\n",
      d.tensors.size(), d.added.size(), d.removed.size(), d.changedShape.size(),
      d.changedDtypeCount());
  for (const std::string& n : d.added) std::printf("  + %s\n", n.c_str());
  for (const std::string& n : d.removed) std::printf("  - %s\n", n.c_str());
  for (const ShapeChange& c : d.changedShape)
    std::printf("  ~ %s  %s %s -> %s %s\n", c.name.c_str(), shapeText(c.shapeA).c_str(),
                std::string(dtypeName(c.dtypeA)).c_str(), shapeText(c.shapeB).c_str(),
                std::string(dtypeName(c.dtypeB)).c_str());
  for (const TensorDiff& t : d.tensors)
    if (t.dtypeA != t.dtypeB)
      std::printf("  ~ %s  %s -> %s (compared in float64)\n", t.name.c_str(),
                  std::string(dtypeName(t.dtypeA)).c_str(),
                  std::string(dtypeName(t.dtypeB)).c_str());
  for (const TensorDiff& t : d.tensors)
    if (!t.tiedTo.empty())
      std::printf("  tied: %s = %s (compared once)\n", t.name.c_str(), t.tiedTo.c_str());
  for (const std::string& n : d.notes) std::printf("  note: %s\n", n.c_str());

  // ---- tensors
  const std::vector<size_t>& order = d.top;
  size_t width = 4;
  for (size_t i : order) width = std::max(width, d.tensors[i].name.size());
  width = std::min<size_t>(width, 56);
  std::printf("\n%s %zu of %zu tensors by relative change ||b-a|| / ||a||\n",
              order.size() < d.tensors.size() ? "top" : "all", order.size(), d.tensors.size());
  if (!order.empty()) {
    std::printf("  %-*s  %11s  %11s  %11s  %11s  %11s  %s\n", int(width), "name", "rel_l2",
                "cosine", "max|b-a|", "mean|b-a|", "||a||", "shape");
    for (size_t i : order) {
      const TensorDiff& t = d.tensors[i];
      std::printf("  %-*s  %11s  %11s  %11s  %11s  %11s  %s%s\n", int(width), t.name.c_str(),
                  num(t.relL2).c_str(), cosineText(t.cosine).c_str(), num(t.maxAbs).c_str(),
                  num(t.meanAbs).c_str(), num(t.normA).c_str(), shapeText(t.shape).c_str(),
                  t.hasNonFinite() ? "  (!)" : "");
    }
  }
  for (const TensorDiff& t : d.tensors)
    if (t.hasNonFinite())
      std::printf("  (!) %s: %s; left out of its metrics (%" PRIu64 " of %" PRIu64
                  " pairs compared)\n",
                  t.name.c_str(), nonFiniteText(t).c_str(), t.finitePairs, t.numel);
  for (const TensorDiff& t : d.tensors)
    if (!t.error.empty()) std::printf("  error: %s\n", t.error.c_str());

  // ---- layers
  if (!d.blocks.empty()) {
    double most = 0;
    for (const LayerAggregate& g : d.blocks)
      if (std::isfinite(g.relL2())) most = std::max(most, g.relL2());
    std::printf(
        "\nper block: sqrt(sum ||b-a||^2) / sqrt(sum ||a||^2)  (block - = embedding, final norm, "
        "head)\n");
    // Modules present anywhere: the columns of the block x module grid.
    std::vector<LayerModule> cols;
    for (const LayerAggregate& g : d.modules)
      if (std::find(cols.begin(), cols.end(), g.module) == cols.end()) cols.push_back(g.module);
    std::sort(cols.begin(), cols.end());
    std::printf("  %5s  %11s  %-24s", "block", "rel_l2", "");
    for (LayerModule m : cols) std::printf(" %10s", std::string(layerModuleName(m)).c_str());
    std::printf("\n");
    for (const LayerAggregate& g : d.blocks) {
      const double r = g.relL2();
      const int bar = (most > 0 && std::isfinite(r)) ? int(std::lround(24.0 * r / most)) : 0;
      std::printf("  %5s  %11s  %-24s", blockLabel(g.block).c_str(), num(r).c_str(),
                  std::string(size_t(bar), '#').c_str());
      for (LayerModule m : cols) {
        auto it = std::find_if(d.modules.begin(), d.modules.end(), [&](const LayerAggregate& x) {
          return x.block == g.block && x.module == m;
        });
        std::printf(" %10s", it == d.modules.end() ? "." : shortNum(it->relL2()).c_str());
      }
      std::printf("\n");
    }
  }

  // ---- metadata
  std::printf("\nmetadata: %zu key%s differ%s\n", d.metadata.size(),
              d.metadata.size() == 1 ? "" : "s", d.metadata.size() == 1 ? "s" : "");
  if (!d.metadata.empty()) {
    size_t kw = 3, aw = 1;
    for (const MetadataChange& c : d.metadata) {
      kw = std::max(kw, c.key.size());
      aw = std::max(aw, c.inA ? c.aText.size() : size_t(9));
    }
    kw = std::min<size_t>(kw, 40);
    aw = std::min<size_t>(aw, 40);
    std::printf("  %-*s  %-*s  %s\n", int(kw), "key", int(aw), "a", "b");
    for (const MetadataChange& c : d.metadata)
      std::printf("  %-*s  %-*s  %s\n", int(kw), c.key.c_str(), int(aw),
                  c.inA ? c.aText.c_str() : "(absent)", c.inB ? c.bText.c_str() : "(absent)");
  }
}

namespace {

// `--top N` / `--top=N` out of argv (up to "--"); everything else goes to parseArgs.
bool takeTop(int argc, char** argv, std::vector<char*>& rest, long& top, std::string& problem) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    if (a == "--") {
      // Every word after "--" is a path, even one named "--top" (the
      // agent's `report` runs diff with its paths there).
      rest.insert(rest.end(), argv + i, argv + argc);
      break;
    }
    if (a == "--top") {
      if (i + 1 >= argc) {
        problem = "--top needs a number";
        return false;
      }
      value = argv[++i];
    } else if (a.rfind("--top=", 0) == 0) {
      value = a.substr(6);
    } else {
      rest.push_back(argv[i]);
      continue;
    }
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || n < 1) {
      problem = "--top needs a positive number, not '" + value + "'";
      return false;
    }
    top = n;
  }
  return true;
}

}  // namespace

int runDiff(int argc, char** argv) {
  std::vector<char*> rest;
  long top = 0;
  std::string problem;
  if (!takeTop(argc, argv, rest, top, problem)) return usageError(problem, "diff");
  Args args;
  if (!parseArgs(int(rest.size()), rest.data(), 2, {"--json"}, args, problem))
    return usageError(problem, "diff");
  if (args.positional.size() != 2) return usageError("diff takes two files, A and B", "diff");
  // On two machines (one here, or two hosts): compared here, each host's
  // tensors fetched where they differ (ckpt/remote/cross_diff.h).
  if (acrossMachines(args.positional))
    return runCrossDiff(args.positional[0], args.positional[1], size_t(top), args.has("--json"));
  if (const auto remote = remotePaths(args.positional, problem))
    return runRemoteDiff((*remote)[0], (*remote)[1], size_t(top), args.has("--json"));
  if (!problem.empty()) return usageError(problem, "diff");
  std::unique_ptr<CheckpointFile> a, b;
  try {
    a = CheckpointFile::open(checkpointArgument(args.positional[0]));
    b = CheckpointFile::open(checkpointArgument(args.positional[1]));
  } catch (const FormatError& e) {
    return failWith(e.what());
  }

  DiffOptions options = diffOptions(size_t(top));
  // A progress line on a terminal: big checkpoints take seconds.
  const bool showProgress = ::isatty(STDERR_FILENO) == 1;
  auto last = std::chrono::steady_clock::now();
  if (showProgress)
    options.progress = [&last](size_t done, size_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last > std::chrono::milliseconds(200) || done == total) {
        last = now;
        std::fprintf(stderr, "\rcomparing: %3d%%",
                     total ? int(100.0 * double(done) / double(total)) : 100);
      }
      return true;
    };
  CheckpointDiff diff;
  try {
    diff = diffCheckpoints(*a, *b, options);
  } catch (const FormatError& e) {
    return failWith(e.what());
  }
  if (showProgress) std::fprintf(stderr, "\r%20s\r", "");

  if (args.has("--json")) {
    printJson(diffToJson(diff, size_t(top)));
  } else {
    printDiffText(diff, *a, *b);
  }
  std::fflush(stdout);
  const std::string failure = diffFailure(diff);
  return failure.empty() ? kExitOk : failWith(failure);
}

DiffOptions diffOptions(size_t top) {
  DiffOptions options;
  options.topN = top > 0 ? top : kDefaultTop;
  return options;
}

std::string diffFailure(const CheckpointDiff& diff) {
  // The numbers of an unreadable tensor are missing: say so and fail, in
  // one line however many there are (the report above, and --json, give
  // each tensor's own error).
  std::vector<const TensorDiff*> unreadable;
  for (const TensorDiff& t : diff.tensors)
    if (!t.error.empty()) unreadable.push_back(&t);
  if (unreadable.empty()) return {};
  if (unreadable.size() == 1) return unreadable.front()->error;
  constexpr size_t kNamed = 3;
  std::string names;
  for (size_t i = 0; i < std::min(kNamed, unreadable.size()); ++i)
    names += (i ? ", " : "") + unreadable[i]->name;
  if (unreadable.size() > kNamed)
    names += " (+" + std::to_string(unreadable.size() - kNamed) + " more)";
  return std::to_string(unreadable.size()) + " tensors could not be read: " + names +
         "; the first: " + unreadable.front()->error;
}

}  // namespace ckpt::cli
