// W&B run folders: which folder is a run, its name, its config.yaml
// (wandb.h). The .wandb file and the summary: wandb_store.cpp; an older
// SDK's wandb-history.jsonl: wandb_history.cpp.
#include "ckpt/index/wandb.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "block_yaml.h"
#include "text_cells.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

// A config.yaml (or a wandb-metadata.json) is a few kB; a bigger file is not one.
constexpr uint64_t kMaxConfigBytes = 16ull << 20;
// A checkpoint saved with wandb.save sits at most this deep in its run folder.
constexpr int kMaxFilesDepth = 16;

bool isDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool isDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The folder's own name; for wandb/latest-run, the name of the run folder
// it links to (the only link read: one lstat for it, none for any other).
std::string folderName(const std::string& dir) {
  fs::path d = fs::path(dir).lexically_normal();
  if (d.filename().empty()) d = d.parent_path();
  if (d.filename() != "latest-run") return d.filename().string();
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(d, ec);
  return ec ? d.filename().string() : target.filename().string();
}

// The prefix of an offline run's folder: "offline-run-" (0.10 and later)
// or "dryrun-" (wandb_run.py's run_dir_path before 0.10); "run-" online.
size_t prefixLength(std::string_view name) {
  if (name.starts_with("offline-run-")) return 12;
  if (name.starts_with("dryrun-")) return 7;
  if (name.starts_with("run-")) return 4;
  return 0;
}

// A run folder's name split: start time ("%Y%m%d_%H%M%S"), run id, offline.
struct FolderName {
  std::string_view timespec, id;
  bool offline = false;
};
std::optional<FolderName> splitFolderName(std::string_view name) {
  if (!isWandbRunFolderName(name)) return std::nullopt;
  FolderName out;
  out.offline = !name.starts_with("run-");
  name.remove_prefix(prefixLength(name));
  out.timespec = name.substr(0, 15);
  out.id = name.substr(16);
  return out;
}

}  // namespace

bool isWandbRunFolderName(std::string_view name) {
  // wandb/sdk/wandb_settings.py: f"{'offline-run' if offline else 'run'}-{timespec}-{run_id}",
  // timespec = start time as "%Y%m%d_%H%M%S"; before 0.10 'dryrun' offline.
  const size_t prefix = prefixLength(name);
  if (prefix == 0) return false;
  name.remove_prefix(prefix);
  if (name.size() < 17 || !isDigits(name.substr(0, 8)) || name[8] != '_' ||
      !isDigits(name.substr(9, 6)) || name[15] != '-')
    return false;
  return name.size() > 16;  // a run id
}

bool isWandbRunFolder(const std::string& dir) {
  if (!isWandbRunFolderName(folderName(dir))) return false;
  if (isDir(fs::path(dir) / "files") || !wandbStoreFile(dir).empty()) return true;
  // wandb before 0.10: the run's files in the folder itself.
  for (const char* f :
       {"wandb-history.jsonl", "wandb-summary.json", "config.yaml", "wandb-metadata.json"})
    if (detail::isRegularFile(fs::path(dir) / f)) return true;
  return false;
}

bool isWandbLatestLink(const std::string& dir) {
  const fs::path d = fs::path(dir).lexically_normal();
  std::error_code ec;
  return d.filename() == "latest-run" && fs::is_symlink(d, ec);
}

std::optional<std::string> wandbRunOf(const std::string& path) {
  // The nearest folder up that is a run folder (its files/, or before 0.10
  // the folder itself, or below).
  fs::path p = fs::path(path).lexically_normal().parent_path();
  for (int depth = 0; depth < kMaxFilesDepth && p.has_parent_path() && p != p.parent_path();
       ++depth, p = p.parent_path())
    if (isWandbRunFolder(p.string())) return wandbRunFolders(p.string()).back();
  return std::nullopt;
}

std::vector<std::string> wandbRunFolders(const std::string& dir) {
  const std::string own = folderName(dir);
  const std::optional<FolderName> mine = splitFolderName(own);
  fs::path parent = fs::path(dir).lexically_normal();
  if (parent.filename().empty()) parent = parent.parent_path();
  parent = parent.parent_path();
  if (!mine) return {dir};
  struct Attempt {
    std::string timespec;
    bool offline;
    std::string path;
  };
  std::vector<Attempt> attempts;
  std::error_code ec;
  for (fs::directory_iterator it(parent.empty() ? fs::path(".") : parent,
                                 fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::optional<FolderName> other = splitFolderName(name);
    if (!other || other->id != mine->id) continue;
    // The folder asked about is in the list as it was named (a link stays a link).
    const std::string path = name == own ? dir : (parent / name).string();
    if (name != own && !isWandbRunFolder(path)) continue;
    attempts.push_back({std::string(other->timespec), other->offline, path});
  }
  if (std::none_of(attempts.begin(), attempts.end(),
                   [&](const Attempt& a) { return a.path == dir; }))
    attempts.push_back({std::string(mine->timespec), mine->offline, dir});
  std::sort(attempts.begin(), attempts.end(), [](const Attempt& a, const Attempt& b) {
    if (a.timespec != b.timespec) return a.timespec < b.timespec;
    if (a.offline != b.offline) return a.offline;
    return a.path < b.path;
  });
  std::vector<std::string> out;
  for (Attempt& a : attempts) out.push_back(std::move(a.path));
  return out;
}

std::string wandbStoreFile(const std::string& dir) {
  // wandb_settings.py: sync_file = "run-{run_id}.wandb" in the run folder.
  std::error_code ec;
  std::string found;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code fec;
    if (name.starts_with("run-") && name.ends_with(".wandb") && it->is_regular_file(fec) &&
        (found.empty() || it->path().string() < found))
      found = it->path().string();
  }
  return found;
}

std::string wandbRunFile(const std::string& dir, std::string_view name) {
  for (const fs::path& p : {fs::path(dir) / "files" / name, fs::path(dir) / name})
    if (detail::isRegularFile(p)) return p.string();
  return {};
}

std::string wandbHistoryFile(const std::string& dir) {
  if (std::string store = wandbStoreFile(dir); !store.empty()) return store;
  return wandbRunFile(dir, "wandb-history.jsonl");
}

std::vector<std::string> wandbMetricFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (std::string f : {wandbHistoryFile(dir), wandbRunFile(dir, "output.log"),
                        wandbRunFile(dir, "wandb-summary.json")})
    if (!f.empty()) out.push_back(std::move(f));
  return out;
}

namespace {

// wandb-metadata.json's `name` (before 0.10 run_manager.py put the run's
// display name there, when it had one); "" when there is none.
std::string metadataName(const std::string& dir) {
  const std::string file = wandbRunFile(dir, "wandb-metadata.json");
  std::error_code ec;
  if (file.empty() || fs::file_size(file, ec) > kMaxConfigBytes || ec) return {};
  std::ifstream in(file, std::ios::binary);
  const nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) return {};
  const auto name = meta.find("name");
  return name != meta.end() && name->is_string() ? name->get<std::string>() : std::string();
}

}  // namespace

std::string wandbRunName(const std::string& dir) {
  if (const std::string store = wandbStoreFile(dir); !store.empty()) {
    if (WandbRunInfo info = readWandbRunInfo(store); !info.displayName.empty())
      return info.displayName;
  } else if (std::string name = metadataName(dir); !name.empty()) {
    return name;
  }
  return folderName(dir);
}

nlohmann::json readWandbConfig(const std::string& dir, std::vector<std::string>* problems) {
  nlohmann::json out = nlohmann::json::object();
  const std::string found = wandbRunFile(dir, "config.yaml");
  if (found.empty()) return out;
  const fs::path file = found;
  auto problem = [&](const std::string& why) {
    if (problems) problems->push_back(file.string() + ": " + why);
  };
  std::error_code ec;
  if (const auto size = fs::file_size(file, ec); !ec && size > kMaxConfigBytes) {
    problem(std::to_string(size) + " bytes, too big for a run config (not read)");
    return out;
  }
  std::ifstream in(file, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::string error;
  const nlohmann::json doc = detail::parseBlockYaml(text, &error);
  if (!error.empty()) problem(error);
  if (!doc.is_object()) {
    if (error.empty()) problem("not a YAML mapping");
    return out;
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    // wandb_version: the file's format; _wandb: the SDK's own (its version,
    // the run's start time, telemetry), not the run's config.
    if (it.key() == "wandb_version" || it.key() == "_wandb") continue;
    // {desc: ..., value: ...} (config_util.dict_add_value_dict), or
    // {value: ...} (wandb-core's runconfig); a bare value from elsewhere as it is.
    const nlohmann::json& v = it.value();
    out[it.key()] = v.is_object() && v.contains("value") ? v["value"] : v;
  }
  return out;
}

}  // namespace ckpt
