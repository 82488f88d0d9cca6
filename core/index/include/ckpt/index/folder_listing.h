#pragma once
// A folder's entries, listed once and shared. findMetricSources looks at a
// run's folder (its logs and its event files: one listing, not one each),
// its parent's logs and the logs/ folders of its ancestors; the 1,000 runs
// of a sweep share their parent, which was listed once per run (a million
// entries for the sweep: a second of a warm open). FolderListings keeps
// the listings of one open (the Curves tab's setRuns, one
// collectMetrics), for the threads reading its runs. No Qt.

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ckpt {

struct FolderEntry {
  std::string name;
  bool regular = false;    // a regular file (a link is followed)
  bool directory = false;  // a folder (a link is followed)
};

// The entries of `dir` but "." and "..", in the order the file system
// gives them, at most `limit` of them; empty when `dir` cannot be listed
// (no such folder, no permission). One opendir, readdir until the end: the
// kind from the entry's d_type, a stat only for links and file systems
// that do not say.
std::vector<FolderEntry> listFolder(const std::string& dir, size_t limit = size_t(-1));

// Listings kept by folder (the path as given), each read on first use.
// Safe to use from several threads: one that asks for a folder another is
// listing waits for that listing.
class FolderListings {
 public:
  const std::vector<FolderEntry>& list(const std::string& dir);

 private:
  struct Slot {
    std::once_flag once;
    std::vector<FolderEntry> entries;
  };
  std::mutex m_mutex;
  std::unordered_map<std::string, std::unique_ptr<Slot>> m_slots;
};

}  // namespace ckpt
