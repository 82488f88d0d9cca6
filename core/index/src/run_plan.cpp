#include "ckpt/index/run_plan.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/json_text.h"
#include "ckpt/index/scanner.h"
#include "small_file.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

std::string absoluteNormal(const std::string& path) {
  return fs::absolute(path).lexically_normal().string();
}

// A file given to the trash functions: a bare name is inside `dir`.
fs::path inDir(const std::string& dir, const std::string& f) {
  return fs::path(f).is_absolute() || fs::path(f).has_parent_path() ? fs::path(f)
                                                                    : fs::path(dir) / f;
}

std::string regexEscape(const std::string& s) {
  return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

// Now, in UTC (or local time: the trash spec's DeletionDate).
std::string utcStamp(const char* format, bool local = false) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  if (local)
    localtime_r(&t, &tm);
  else
    gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string stripPath(const std::string& message, const std::string& path) {
  if (message.rfind(path + ": ", 0) == 0) return message.substr(path.size() + 2);
  return message;
}

// Whether a listed checkpoint belongs to `runName`: its metadata says so, or
// it says no run at all (an unreadable file, a hand-written loop's file).
bool ofRun(const CheckpointEntry& e, const std::string& runName) {
  return !e.runName || *e.runName == runName;
}

// fsync a directory after a rename in it; failures are not fatal (the rename is done).
void syncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// Writes all of `text` to `fd` (through short writes and EINTR); 0, or the errno.
int writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += size_t(n);
  }
  return 0;
}

// Writes `text` to `path` atomically: a temporary file named as the
// checkpoint writer names its own (so a killed writer's leftover is found by
// removeStaleTempFiles), fsync, rename, fsync the directory.
void writeFileAtomically(const std::string& path, const std::string& text) {
  const fs::path p(path);
  std::random_device rd;
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%08x", long(::getpid()), unsigned(rd()));
  const std::string temp = (p.parent_path() / ("." + p.filename().string() + suffix)).string();
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    throw std::runtime_error(path + ": cannot create temporary file " + temp + ": " +
                             std::strerror(errno));
  if (const int err = writeAll(fd, text)) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw std::runtime_error(path + ": cannot write " + temp + ": " + std::strerror(err));
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(path + ": cannot sync " + temp + ": " + std::strerror(err));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(path + ": cannot rename " + temp + " over it: " + std::strerror(err));
  }
  syncDirectory(p.parent_path().empty() ? "." : p.parent_path().string());
}

// Appends and syncs; throws naming the file.
void appendDurably(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error(path + ": cannot open to append: " + std::strerror(errno));
  if (const int err = writeAll(fd, text)) {
    ::close(fd);
    throw std::runtime_error(path + ": cannot append: " + std::strerror(err));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error(path + ": cannot sync: " + std::strerror(err));
}

}  // namespace

ResumePlan planResume(const std::string& checkpoint) {
  ResumePlan plan;
  plan.checkpoint = absoluteNormal(checkpoint);
  plan.runDir = fs::path(plan.checkpoint).parent_path().string();
  const CheckpointEntry self =
      describeCheckpoint(plan.checkpoint, fs::path(plan.checkpoint).filename().string());
  if (!self.error.empty()) throw std::runtime_error(checkpoint + ": " + self.error);
  plan.step = self.step.value_or(0);
  plan.runName = self.runName ? *self.runName : fs::path(plan.runDir).filename().string();
  if (plan.runName.empty()) plan.runName = "run";

  // Later: a checkpoint of the run past this step, or one of unknown step
  // (unreadable) at a path the continued run would write over.
  const RunEntry run = scanRunDirectory(plan.runDir, plan.runDir);
  const std::vector<std::string> written = existingRunFiles(plan.runDir, plan.runName);
  for (const CheckpointEntry& e : run.checkpoints) {
    if (absoluteNormal(e.path) == plan.checkpoint || !ofRun(e, plan.runName)) continue;
    const std::string name = fs::path(e.path).filename().string();
    const bool overwritten = std::find(written.begin(), written.end(), name) != written.end();
    if (e.step ? *e.step > plan.step : overwritten)
      plan.laterFiles.push_back(absoluteNormal(e.path));
  }
  // Newest first: the order a reader of the list wants.
  std::reverse(plan.laterFiles.begin(), plan.laterFiles.end());
  plan.isNewest = plan.laterFiles.empty();
  if (!plan.isNewest) {
    const fs::path parent = fs::path(plan.runDir).parent_path();
    const std::string base = plan.runName + "@" + std::to_string(plan.step);
    for (int n = 1;; ++n) {
      const std::string name = n == 1 ? base : base + "-" + std::to_string(n);
      const std::string dir = (parent / name).string();
      std::error_code ec;
      const bool empty = !fs::exists(dir, ec) ||
                         (fs::is_directory(dir, ec) && existingRunFiles(dir, name).empty());
      if (empty) {
        plan.branchRunName = name;
        plan.branchDir = dir;
        break;
      }
    }
  }
  return plan;
}

std::vector<std::string> existingRunFiles(const std::string& dir, const std::string& runName) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  const std::regex ours(regexEscape(runName) + R"(_(step\d+|final|final_step\d+)\.pt)");
  static const std::set<std::string> shared{"best_checkpoint.pt", "metrics.jsonl",
                                            "metrics.superseded.jsonl", "lineage.json"};
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file(ec)) continue;
    if (shared.count(name) || std::regex_match(name, ours)) files.push_back(name);
  }
  if (ec) throw std::runtime_error(dir + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

std::string clashMessage(const std::string& dir, const std::string& runName,
                         const std::vector<std::string>& files) {
  std::string list;
  for (size_t i = 0; i < files.size() && i < 3; ++i) list += (i ? ", " : "") + files[i];
  if (files.size() > 3) list += " and " + std::to_string(files.size() - 3) + " more";
  return dir + " already holds run '" + runName + "' (" + list +
         "): continue it with `ckptscope-cli resume " + dir +
         "`, train under another run_name or --out DIR, or pass --overwrite to move these files "
         "to " +
         (fs::path(dir) / ".trash").string() + "/";
}

IntactCheckpoint newestIntactCheckpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": not a directory");
  RunEntry run = scanRunDirectory(dir, dir);
  if (run.checkpoints.empty())
    throw std::runtime_error(dir + ": no checkpoint to resume in this directory");
  std::set<std::string> names;
  for (const CheckpointEntry& e : run.checkpoints)
    if (e.runName) names.insert(*e.runName);
  if (names.size() > 1) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw std::runtime_error(dir + ": holds checkpoints of several runs (" + list +
                             "): resume one file");
  }
  // Newest first: an end-of-run or latest file whose step cannot be read
  // (damaged) is the newest by its nature; then by step, at one step the
  // end-of-run file, the step file, the latest and best copies; other files
  // of unknown step last.
  auto newestByName = [](const CheckpointEntry& e) {
    return !e.step && (e.kind == CheckpointKind::Final || e.kind == CheckpointKind::Latest);
  };
  auto rank = [](CheckpointKind k) {
    switch (k) {
      case CheckpointKind::Final:
        return 0;
      case CheckpointKind::Step:
        return 1;
      case CheckpointKind::Latest:
        return 2;
      case CheckpointKind::Best:
        return 3;
      default:
        return 4;
    }
  };
  std::stable_sort(run.checkpoints.begin(), run.checkpoints.end(),
                   [&](const CheckpointEntry& a, const CheckpointEntry& b) {
                     if (newestByName(a) != newestByName(b)) return newestByName(a);
                     if (a.step.has_value() != b.step.has_value()) return a.step.has_value();
                     if (a.step && *a.step != *b.step) return *a.step > *b.step;
                     return rank(a.kind) < rank(b.kind);
                   });
  IntactCheckpoint result;
  for (const CheckpointEntry& e : run.checkpoints) {
    const std::string name = fs::path(e.path).filename().string();
    std::string reason;
    try {
      const auto file = CheckpointFile::open(e.path);
      const std::vector<std::string> problems = file->verify();
      if (!problems.empty()) {
        reason = problems.front();
        if (problems.size() > 1)
          reason += " (and " + std::to_string(problems.size() - 1) + " more problems)";
      }
    } catch (const std::exception& err) {
      reason = stripPath(err.what(), e.path);
    }
    if (reason.empty()) {
      result.checkpoint = e.path;
      return result;
    }
    result.skipped.push_back({name, reason});
  }
  return result;
}

std::string moveToTrash(const std::string& dir, const std::vector<std::string>& files) {
  const fs::path trashRoot = fs::path(dir) / ".trash";
  const std::string stamp = utcStamp("%Y%m%d-%H%M%S");
  fs::path folder;
  std::error_code ec;
  fs::create_directories(trashRoot, ec);
  if (ec) throw std::runtime_error(trashRoot.string() + ": cannot create: " + ec.message());
  for (int n = 1;; ++n) {
    folder = trashRoot / (n == 1 ? stamp : stamp + "-" + std::to_string(n));
    if (::mkdir(folder.c_str(), 0777) == 0) break;
    if (errno != EEXIST)
      throw std::runtime_error(folder.string() + ": cannot create: " + std::strerror(errno));
  }
  for (const std::string& f : files) {
    const fs::path from = inDir(dir, f);
    const fs::path to = folder / from.filename();
    if (::rename(from.c_str(), to.c_str()) != 0)
      throw std::runtime_error(from.string() + ": cannot move to " + folder.string() + ": " +
                               std::strerror(errno));
  }
  syncDirectory(dir);
  return folder.string();
}

namespace {

// The trash spec's Path: percent-encoded (RFC 2396), '/' kept.
std::string percentEncode(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

void makeDirs(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) throw std::runtime_error(p.string() + ": cannot create: " + ec.message());
  (void)::chmod(p.c_str(), 0700);
}

}  // namespace

std::string desktopTrashDir() {
  const char* data = std::getenv("XDG_DATA_HOME");
  if (data && *data && fs::path(data).is_absolute()) return (fs::path(data) / "Trash").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/") / ".local/share/Trash").string();
}

std::vector<TrashedFile> trashFiles(const std::string& dir, const std::vector<std::string>& files) {
  const fs::path trash = desktopTrashDir();
  std::vector<TrashedFile> moved;
  std::vector<size_t> elsewhere;  // indexes of files for dir/.trash/
  struct stat trashStat {};
  bool haveTrash = false, haveTrashDirs = false;
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path from = fs::absolute(inDir(dir, files[i])).lexically_normal();
    moved.push_back({from.string(), "", ""});
    struct stat st {};
    if (::stat(from.c_str(), &st) != 0)
      throw std::runtime_error(from.string() +
                               ": cannot move to the trash: " + std::strerror(errno));
    if (!haveTrash) {
      // The home trash lives on the filesystem of its parent folder; it is
      // made only when a file can go there.
      std::error_code ec;
      const fs::path parent = trash.parent_path();
      fs::create_directories(parent, ec);
      if (ec || ::stat(parent.c_str(), &trashStat) != 0)
        throw std::runtime_error(parent.string() +
                                 ": cannot create: " + (ec ? ec.message() : std::strerror(errno)));
      haveTrash = true;
    }
    if (st.st_dev != trashStat.st_dev) {
      elsewhere.push_back(i);
      continue;
    }
    if (!haveTrashDirs) {
      makeDirs(trash / "files");
      makeDirs(trash / "info");
      haveTrashDirs = true;
    }
    // Reserve the name with its .trashinfo (O_EXCL), as the spec asks, then move.
    const std::string stem = from.stem().string(), ext = from.extension().string();
    for (int n = 1;; ++n) {
      const std::string name =
          n == 1 ? from.filename().string() : stem + "." + std::to_string(n) + ext;
      const fs::path info = trash / "info" / (name + ".trashinfo");
      const fs::path to = trash / "files" / name;
      const int fd = ::open(info.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) {
        if (errno == EEXIST) continue;
        throw std::runtime_error(info.string() + ": cannot create: " + std::strerror(errno));
      }
      if (::access(to.c_str(), F_OK) ==
          0) {  // a file without its info: leave it, take the next name
        ::close(fd);
        ::unlink(info.c_str());  // the info reserved just now
        continue;
      }
      const std::string text = "[Trash Info]\nPath=" + percentEncode(from.string()) +
                               "\nDeletionDate=" + utcStamp("%Y-%m-%dT%H:%M:%S", /*local=*/true) +
                               "\n";
      int err = writeAll(fd, text);
      if (!err && ::fsync(fd) != 0) err = errno;
      ::close(fd);
      if (!err && ::rename(from.c_str(), to.c_str()) != 0) err = errno;
      if (err) {
        ::unlink(info.c_str());
        throw std::runtime_error(from.string() + ": cannot move to " + to.string() + ": " +
                                 std::strerror(err));
      }
      moved[i].to = to.string();
      moved[i].trashInfo = info.string();
      break;
    }
  }
  if (!elsewhere.empty()) {
    std::vector<std::string> rest;
    for (size_t i : elsewhere) rest.push_back(moved[i].from);
    const fs::path folder = moveToTrash(dir, rest);
    for (size_t i : elsewhere) moved[i].to = (folder / fs::path(moved[i].from).filename()).string();
  }
  syncDirectory(dir);
  return moved;
}

bool isTempFileName(std::string_view fileName) {
  static const std::regex re(R"(\..+\.tmp-\d+-[0-9a-f]{8})");
  return std::regex_match(fileName.begin(), fileName.end(), re);
}

std::vector<std::string> removeStaleTempFiles(const std::string& dir) {
  std::vector<std::string> removed;
  static const std::regex re(R"(\..+\.tmp-(\d+)-[0-9a-f]{8})");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, re) || !it->is_regular_file(ec)) continue;
    long pid = 0;
    try {
      pid = std::stol(m[1].str());
    } catch (const std::exception&) {
      continue;
    }
    if (pid <= 0 || pid == long(::getpid())) continue;
    // Gone: no such process. EPERM means it runs (under another user): keep it.
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    if (::unlink(it->path().c_str()) == 0) removed.push_back(name);
  }
  return removed;
}

MetricsTrim trimMetrics(const std::string& dir, int64_t step) {
  MetricsTrim trim;
  const std::string path = (fs::path(dir) / "metrics.jsonl").string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return trim;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  in.close();
  // The history of the checkpoint at `step` ends at the last line logged
  // for that step (else the last line before it); from there back, a line
  // stays when its step is below every step kept after it: the restart rule
  // of Curves (addInFileOrder), so what stays is what Curves drew up to it,
  // and a restart logged after it (a job that went back and died before
  // `step`) is superseded with the later steps.
  std::vector<std::optional<int64_t>> steps(lines.size());
  std::optional<size_t> lastAt, lastBefore;
  for (size_t i = 0; i < lines.size(); ++i) {
    const json j = json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer())
      steps[i] = j["step"].get<int64_t>();
    if (steps[i] && *steps[i] == step) lastAt = i;
    if (steps[i] && *steps[i] < step) lastBefore = i;
  }
  std::vector<bool> keeps(lines.size(), false);
  if (const std::optional<size_t> end = lastAt ? lastAt : lastBefore) {
    int64_t below = step + 1;
    for (size_t i = *end + 1; i-- > 0;) {
      if (steps[i] && *steps[i] < below) {
        keeps[i] = true;
        below = *steps[i];
      }
    }
  }
  std::string kept, superseded;
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool keep = keeps[i];
    (keep ? kept : superseded) += lines[i] + '\n';
    ++(keep ? trim.kept : trim.superseded);
  }
  if (trim.superseded == 0) return trim;
  // Superseded lines are safe before metrics.jsonl loses them: a kill in
  // between leaves a line in both files, never in neither.
  appendDurably((fs::path(dir) / "metrics.superseded.jsonl").string(), superseded);
  writeFileAtomically(path, kept);
  return trim;
}

void writeLineage(const std::string& dir, const Lineage& l) {
  const json j{{"run", l.run},
               {"parent_run", l.parentRun},
               {"parent_dir", l.parentDir},
               {"parent_checkpoint", l.parentCheckpoint},
               {"parent_step", l.parentStep},
               {"created", l.created.empty() ? utcStamp("%Y-%m-%dT%H:%M:%SZ") : l.created}};
  // Folder and run names are bytes: dumpJson writes one that is not UTF-8
  // as \udcXY (nlohmann's dump() threw: no branch in such a folder).
  writeFileAtomically((fs::path(dir) / "lineage.json").string(), dumpJson(j, 2) + "\n");
}

std::optional<Lineage> readLineage(const std::string& dir) {
  const std::string path = (fs::path(dir) / "lineage.json").string();
  // A few hundred bytes as written; a file far larger is not a lineage.
  constexpr size_t kMaxBytes = 1 << 20;
  const std::optional<detail::SmallFile> file = detail::readSmallFile(path, kMaxBytes);
  if (!file) return std::nullopt;
  if (file->larger)
    throw std::runtime_error(path + ": larger than " + std::to_string(kMaxBytes) + " bytes");
  json j;
  try {
    j = parseJsonText(file->text);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
  Lineage l;
  try {
    l.run = j.at("run").get<std::string>();
    l.parentRun = j.at("parent_run").get<std::string>();
    l.parentDir = j.at("parent_dir").get<std::string>();
    l.parentCheckpoint = j.at("parent_checkpoint").get<std::string>();
    l.parentStep = j.at("parent_step").get<int64_t>();
    l.created = j.value("created", std::string());
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return l;
}

}  // namespace ckpt
