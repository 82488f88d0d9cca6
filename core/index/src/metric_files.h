#pragma once
// What metrics.cpp (reading and merging a run's series) and
// metric_sources.cpp (finding a run's files) both need. Internal to core/index.

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ckpt::detail {

inline bool isJsonlFile(const std::filesystem::path& p) {
  return p.extension() == ".jsonl";
}

// One identity per file, whichever way it was reached (a link, another
// spelling of its path): its device and inode, from one stat (the
// canonical path cost a readlink per component of it, 14 a run); the path
// as given for one that cannot be stat'ed. `regular` says whether it is a
// regular file.
inline std::string fileKey(const std::filesystem::path& p, bool* regular = nullptr) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    if (regular) *regular = false;
    return p.string();
  }
  if (regular) *regular = S_ISREG(st.st_mode);
  return "@" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

// The files an `extraLogs` list names (folders: their log and .jsonl files).
std::vector<std::filesystem::path> expandExtra(const std::vector<std::string>& extraLogs);

}  // namespace ckpt::detail
