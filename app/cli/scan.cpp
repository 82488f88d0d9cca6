// ckptscope-cli scan PATH... [--json] [--recursive]
// Whether each file would run code if Python unpickled it: every global its
// pickles name, with a level, and a verdict. Nothing in the files is run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "ckpt/format/pickle_safety.h"
#include "common.h"

namespace fs = std::filesystem;

namespace ckpt::cli {
namespace {

constexpr int kExitDangerous = 3;

// Files a directory walk picks up: checkpoints and the files that hold pickles.
bool isScanCandidate(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  // (.distcp shards are torch.save archives back to back: not read yet.)
  static const std::set<std::string> exts = {".pt",  ".pth",    ".bin", ".ckpt", ".safetensors",
                                             ".pkl", ".pickle", ".npy", ".npz"};
  return exts.count(ext) > 0 ||
         p.filename() == ".metadata";  // a distributed checkpoint's plain pickle
}

// Files named directly are scanned whatever their name; a directory gives
// its candidates (all below it with --recursive), sorted.
bool collect(const std::string& arg, bool recursive, std::vector<std::string>& out,
             std::string& problem) {
  std::error_code ec;
  if (!fs::is_directory(arg, ec)) {
    out.push_back(arg);
    return true;
  }
  std::vector<std::string> found;
  if (recursive) {
    fs::recursive_directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec),
        end;
    for (; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec) && isScanCandidate(it->path()))
        found.push_back(it->path().string());
  } else {
    fs::directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec) && isScanCandidate(it->path()))
        found.push_back(it->path().string());
  }
  if (ec) {
    problem = arg + ": " + ec.message();
    return false;
  }
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

std::string where(const GlobalUse& g) {
  return g.record + " @ " + std::to_string(g.offset);
}

void printLine(const std::string& file, const SafetyReport& r) {
  std::string line;
  line += std::string(verdictName(r.verdict));
  line.resize(11, ' ');
  line += file;
  std::vector<std::string> parts[2];  // dangerous, suspicious
  std::set<std::string> seen;
  for (const GlobalUse& g : r.globals) {
    if (g.level == SafetyLevel::Innocuous) continue;
    std::string n = g.module + "." + g.name;
    if (!g.reaches.empty()) n += " -> " + g.reaches;
    if (!seen.insert(n).second) continue;
    const std::string via = g.via.empty() ? "" : ", reached by " + g.via;
    parts[g.level == SafetyLevel::Dangerous ? 0 : 1].push_back(n + " (" + where(g) + via + ")");
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  if (!parts[0].empty()) line += "  dangerous: " + join(parts[0]);
  if (!parts[1].empty()) line += "  suspicious: " + join(parts[1]);
  if (r.leftOut) line += "  (+" + std::to_string(r.leftOut) + " globals not listed)";
  if (!r.error.empty()) line += "  error: " + r.error;
  std::printf("%s\n", line.c_str());
}

nlohmann::ordered_json toJson(const std::string& file, const SafetyReport& r) {
  using json = nlohmann::ordered_json;
  json globals = json::array();
  for (const GlobalUse& g : r.globals) {
    json j{{"module", g.module},
           {"name", g.name},
           {"level", std::string(safetyLevelName(g.level))},
           {"record", g.record},
           {"offset", g.offset},
           {"why", g.why}};
    if (!g.reaches.empty()) j["reaches"] = g.reaches;
    if (!g.via.empty()) j["via"] = g.via;
    globals.push_back(std::move(j));
  }
  json j{{"file", file},
         {"verdict", std::string(verdictName(r.verdict))},
         {"globals", std::move(globals)}};
  if (r.leftOut) j["globals_left_out"] = r.leftOut;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

}  // namespace

int runScan(int argc, char** argv) {
  Args args;
  std::string problem;
  if (!parseArgs(argc, argv, 2, {"--json", "--recursive", "-r"}, args, problem))
    return usageError(problem, "scan");
  if (args.positional.empty()) return usageError("scan needs at least one PATH", "scan");
  const bool recursive = args.has("--recursive") || args.has("-r");
  std::vector<std::string> files;
  for (const std::string& p : args.positional)
    if (!collect(p, recursive, files, problem)) return failWith(problem);

  size_t counts[4] = {};
  nlohmann::ordered_json out{{"files", nlohmann::ordered_json::array()}};
  for (const std::string& f : files) {
    const SafetyReport r = scanFile(f);
    ++counts[size_t(r.verdict)];
    if (args.has("--json"))
      out["files"].push_back(toJson(f, r));
    else
      printLine(f, r);
  }
  if (args.has("--json")) {
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    std::printf("%zu file%s: %zu safe, %zu suspicious, %zu dangerous, %zu unreadable\n",
                files.size(), files.size() == 1 ? "" : "s", counts[0], counts[1], counts[2],
                counts[3]);
  }
  if (counts[size_t(Verdict::Dangerous)]) return kExitDangerous;
  if (counts[size_t(Verdict::Unreadable)]) return kExitFailure;
  return kExitOk;
}

}  // namespace ckpt::cli
