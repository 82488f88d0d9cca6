// ckptscope-cli scan PATH... [--json] [--recursive]
// Whether each file would run code if Python unpickled it: every global its
// pickles name, with a level, and a verdict. A sharded checkpoint (a folder
// or index named, or a folder met on the way down) is also judged as one:
// its files, each a line, then the checkpoint's verdict, the worst of them,
// naming the file that carries it. A file a layout names (DCP's .metadata,
// a rank file, a Trainer's training_args.bin) is judged under that layout's
// profile, said on its line ("safe for ..."). Nothing in the files is run.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/input_file.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/format/sharded.h"
#include "ckpt/format/zip_archive.h"
#include "common.h"
#include "documents.h"
#include "on_cores.h"
#include "remote_commands.h"

namespace fs = std::filesystem;

namespace ckpt::cli {
namespace {

// Files a directory walk picks up: checkpoints and the files that hold pickles.
bool isScanCandidate(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  // (.distcp parts are torch.save archives back to back: each is scanned
  // where its folder's .metadata places it.)
  static const std::set<std::string> exts = {".pt",  ".pth",    ".bin", ".ckpt", ".safetensors",
                                             ".pkl", ".pickle", ".npy", ".npz",  ".distcp"};
  return exts.count(ext) > 0 ||
         p.filename() == ".metadata";  // a distributed checkpoint's plain pickle
}

// What a directory walk did not examine, and why (said under the counts).
struct NotExamined {
  size_t archives = 0;     // tar archives: only PyTorch before 0.1.10 wrote those
  size_t zipArchives = 0;  // zip archives with no pickle record (a dataset's .zip)
  size_t other = 0;        // neither pickle, zip nor safetensors by their first bytes
  size_t unopened = 0;     // could not be opened to look
  size_t folders = 0;      // folders in a directory named, not entered (no --recursive)
};

// A file a walk meets whose name says nothing: by its first bytes, would
// torch.load or pickle.load read it? A pickle, a torch zip or legacy file
// (checkpoint.pth.tar, a name without extension, a.pt.bak), safetensors.
bool sniffsLoadable(const fs::path& p, NotExamined& skipped) {
  try {
    const InputFile in(p.string());
    switch (sniffFile(in)) {
      case Sniff::Zip: {
        // torch.load reads a zip through its data.pkl (numpy's .npz: .npy
        // records); a dataset's archive is not examined, only counted.
        bool pickles = false;
        try {
          const ZipArchive zip(in);
          for (const ZipEntry& e : zip.entries())
            pickles |= e.name.ends_with(".pkl") || e.name.ends_with(".npy");
        } catch (const std::exception&) {
          pickles = true;  // a damaged zip: examined, and said unreadable
        }
        if (!pickles) ++skipped.zipArchives;
        return pickles;
      }
      case Sniff::TorchLegacy:
      case Sniff::Pickle:
      case Sniff::Safetensors:
        return true;
      case Sniff::Tar:
        ++skipped.archives;
        return false;
      case Sniff::Unknown:
        break;
    }
  } catch (const std::exception&) {
    ++skipped.unopened;
    return false;
  }
  ++skipped.other;
  return false;
}

// Files named directly are scanned whatever their name; a directory gives
// every file under it (all below it with --recursive) that its name or its
// first bytes say a load would read, sorted: a pickle renamed (a.pth.tar,
// a.pt.bak, no extension) is examined, not passed over as if safe.
// Sharded checkpoints met below a directory go to `checkpoints`.
bool collect(const std::string& arg, bool recursive, std::vector<std::string>& out,
             std::string& problem, std::vector<std::string>* checkpoints, NotExamined& skipped) {
  std::error_code ec;
  if (!fs::is_directory(arg, ec)) {
    out.push_back(arg);
    return true;
  }
  std::vector<std::string> found;
  auto consider = [&](const fs::directory_entry& e) {
    std::error_code fec;
    if (!e.is_regular_file(fec)) return;
    if (isScanCandidate(e.path()) || sniffsLoadable(e.path(), skipped))
      found.push_back(e.path().string());
  };
  if (recursive) {
    fs::recursive_directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec),
        end;
    for (; !ec && it != end; it.increment(ec)) {
      if (checkpoints && it->is_directory(ec) && probeSharded(it->path().string()))
        checkpoints->push_back(it->path().string());
      else
        consider(*it);
    }
  } else {
    fs::directory_iterator it(arg, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code dec;
      if (it->is_directory(dec))
        ++skipped.folders;  // said under the totals: its files were not looked at
      else
        consider(*it);
    }
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
  // The layout profile the file was judged under: "safe for a DCP
  // checkpoint's metadata" holds there only.
  if (r.profile != SafetyProfile::None)
    line += std::string(r.verdict == Verdict::Safe ? "  (safe for " : "  (judged as ") +
            std::string(safetyProfileTitle(r.profile)) + ")";
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

// "dangerous  DIR  [sharded: DCP] __2_0.distcp would run code: posix.system".
void printCheckpointLine(const std::string& path, const CheckpointSafety& c) {
  std::string line(verdictName(c.verdict));
  line.resize(11, ' ');
  std::string summary = c.summary();
  const std::string verdict = std::string(verdictName(c.verdict)) + ": ";
  if (summary.rfind(verdict, 0) == 0) summary.erase(0, verdict.size());
  line += path + "  [sharded: " + c.layout + "] " + summary;
  std::printf("%s\n", line.c_str());
}

nlohmann::ordered_json checkpointJson(const std::string& path, const CheckpointSafety& c) {
  using json = nlohmann::ordered_json;
  json files = json::array();
  for (const FileSafety& f : c.files) files.push_back(f.file);
  const FileSafety* worst = c.worstFile();
  json j{{"path", path},
         {"layout", c.layout},
         {"verdict", std::string(verdictName(c.verdict))},
         {"summary", c.summary()},
         {"file", worst ? json(worst->file) : json(nullptr)},
         {"files", std::move(files)},
         {"missing", c.missing}};
  if (!c.error.empty()) j["error"] = c.error;
  return j;
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
  json j{{"file", file}, {"verdict", std::string(verdictName(r.verdict))}};
  if (r.profile != SafetyProfile::None) j["profile"] = std::string(safetyProfileTitle(r.profile));
  j["globals"] = std::move(globals);
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
  const bool asJson = args.has("--json");
  if (acrossMachines(args.positional))
    return runScanAcrossMachines(args.positional, args.has("--recursive") || args.has("-r"),
                                 asJson);
  if (const auto remote = remotePaths(args.positional, problem))
    return runRemoteScan(*remote, args.has("--recursive") || args.has("-r"), asJson);
  if (!problem.empty()) return usageError(problem, "scan");
  const SafetyScan scan =
      scanSafety(args.positional, args.has("--recursive") || args.has("-r"), !asJson);
  if (!scan.problem.empty()) return failWith(scan.problem);
  if (asJson) printJson(scan.document);
  return scan.exit;
}

namespace {

// Files scanned at once: what a batch's reports hold, a moment's output.
constexpr size_t kScanBatch = 512;

// Each of `n` files' verdict, on the machine's cores. A .distcp file is
// scanned where its folder's .metadata places its archives; a file that is
// itself a sharded checkpoint's description, met here only when its folder
// was not recognised, gets the plain scan.
std::vector<SafetyReport> scanInParallel(const std::string* files, size_t n) {
  std::vector<SafetyReport> reports(n);
  forEachOnCores(n, [&](size_t i) {
    const CheckpointSafety c = scanCheckpoint(files[i]);
    reports[i] = c.sharded() ? scanFile(files[i]) : c.files.front().report;
  });
  return reports;
}

}  // namespace

SafetyScan scanSafety(const std::vector<std::string>& paths, bool recursive, bool printText) {
  const bool asJson = !printText;
  SafetyScan result;
  std::string problem;
  size_t counts[4] = {}, checkpointCounts[4] = {};
  size_t scannedFiles = 0;
  NotExamined skipped;
  nlohmann::ordered_json out{{"files", nlohmann::ordered_json::array()},
                             {"checkpoints", nlohmann::ordered_json::array()}};
  // Files already scanned as part of a checkpoint, by where they really are.
  std::set<std::string> covered;
  std::map<std::string, std::string> realFolders;  // a folder's real path, asked once
  auto key = [&realFolders](const std::string& path) {
    auto real = [](const std::string& p) {
      std::error_code ec;
      const fs::path c = fs::weakly_canonical(p, ec);
      return ec ? fs::path(p).lexically_normal().string() : c.string();
    };
    // A file that is no symlink is where its real folder says: one lstat,
    // not a readlink per component of its path (50,000 files of 1,000
    // folders: 350,000 readlinks).
    const fs::path p(path);
    const std::string name = p.filename().string();
    struct stat st {};
    if (name.empty() || name == "." || name == ".." ||
        (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)))
      return real(path);
    const std::string folder = p.parent_path().string();
    auto it = realFolders.find(folder);
    if (it == realFolders.end())
      it = realFolders.emplace(folder, real(folder.empty() ? "." : folder)).first;
    return (fs::path(it->second) / name).string();
  };
  auto report = [&](const std::string& file, const SafetyReport& r) {
    ++counts[size_t(r.verdict)];
    ++scannedFiles;
    if (asJson)
      out["files"].push_back(toJson(file, r));
    else
      printLine(file, r);
  };
  // A sharded checkpoint: its files (those not scanned yet), then its verdict.
  auto checkpoint = [&](const std::string& path) {
    const CheckpointSafety c = scanCheckpoint(path);
    bool fresh = c.files.empty();
    for (const FileSafety& f : c.files) fresh |= !covered.count(key(f.path));
    if (!fresh) return;  // met twice (DeepSpeed's `latest` and its tag folder)
    for (const FileSafety& f : c.files)
      if (covered.insert(key(f.path)).second) report(f.path, f.report);
    ++checkpointCounts[size_t(c.verdict)];
    if (asJson)
      out["checkpoints"].push_back(checkpointJson(path, c));
    else
      printCheckpointLine(path, c);
  };

  for (const std::string& p : paths) {
    std::vector<std::string> files, checkpoints;
    if (probeSharded(p)) checkpoints.push_back(p);
    if (!collect(p, recursive, files, problem, &checkpoints, skipped)) {
      result.problem = problem;
      result.exit = kExitFailure;
      return result;
    }
    // A sharded checkpoint's index or .metadata named on its own is the checkpoint.
    std::error_code ec;
    if (!fs::is_directory(p, ec) && !checkpoints.empty()) files.clear();
    for (const std::string& c : checkpoints) checkpoint(c);
    if (!covered.empty())
      files.erase(std::remove_if(files.begin(), files.end(),
                                 [&](const std::string& f) { return covered.count(key(f)) > 0; }),
                  files.end());
    // Many files at once on the machine's cores, reported in their order.
    for (size_t from = 0; from < files.size(); from += kScanBatch) {
      const size_t n = std::min(kScanBatch, files.size() - from);
      const std::vector<SafetyReport> reports = scanInParallel(files.data() + from, n);
      for (size_t i = 0; i < n; ++i) report(files[from + i], reports[i]);
    }
  }
  const size_t nCheckpoints =
      checkpointCounts[0] + checkpointCounts[1] + checkpointCounts[2] + checkpointCounts[3];
  if (!asJson) {
    std::printf("%zu file%s: %zu safe, %zu suspicious, %zu dangerous, %zu unreadable\n",
                scannedFiles, scannedFiles == 1 ? "" : "s", counts[0], counts[1], counts[2],
                counts[3]);
    if (nCheckpoints)
      std::printf(
          "%zu sharded checkpoint%s: %zu safe, %zu suspicious, %zu dangerous, %zu unreadable\n",
          nCheckpoints, nCheckpoints == 1 ? "" : "s", checkpointCounts[0], checkpointCounts[1],
          checkpointCounts[2], checkpointCounts[3]);
    // What the walk passed over, so that "0 dangerous" is never read as
    // "this folder is safe" where files went unexamined.
    const size_t notExamined =
        skipped.archives + skipped.zipArchives + skipped.other + skipped.unopened;
    if (notExamined) {
      std::string why;
      auto add = [&why](size_t n, const char* what) {
        if (n) why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + what;
      };
      add(skipped.other, "neither pickle, zip nor safetensors by their first bytes");
      add(skipped.zipArchives, "zip archives holding no pickle");
      add(skipped.archives, "tar archives (PyTorch before 0.1.10 wrote those: not read)");
      add(skipped.unopened, "could not be opened");
      std::printf("%zu other file%s not examined: %s\n", notExamined, notExamined == 1 ? "" : "s",
                  why.c_str());
    }
    if (skipped.folders)
      std::printf("%zu folder%s not entered (--recursive goes below)\n", skipped.folders,
                  skipped.folders == 1 ? "" : "s");
  }
  out["not_examined"] = {{"not_pickles", skipped.other},
                         {"tar_archives", skipped.archives},
                         {"zip_archives", skipped.zipArchives},
                         {"unopened", skipped.unopened},
                         {"folders", skipped.folders}};
  const size_t dangerous = size_t(Verdict::Dangerous), unreadable = size_t(Verdict::Unreadable);
  result.document = std::move(out);
  if (counts[dangerous] || checkpointCounts[dangerous])
    result.exit = kExitDangerous;
  else if (counts[unreadable] || checkpointCounts[unreadable] || skipped.unopened)
    result.exit = kExitFailure;
  return result;
}

}  // namespace ckpt::cli
