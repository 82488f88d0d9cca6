#pragma once
// The walk's part of a listing (scanner.h), shared by scanDirectory and
// scanRunDirectory: what the folders hold before any file is read, the
// items to read, one item described. Internal to ckpt_index.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/listing_cache.h"
#include "ckpt/index/scanner.h"

namespace ckpt::detail {

namespace fs = std::filesystem;

// .bin, .ckpt and .pth.tar files count only when their first bytes say
// torch or safetensors; a writer's temporary file is never listed.
bool isListedFile(const fs::path& path);
// A sharded checkpoint in `dir`, listed once (its index file or its
// folder); the files it is made of go to `parts`.
void collectSharded(const fs::path& dir, std::vector<fs::path>& listed, std::set<fs::path>& parts);
bool isMetricsFileName(std::string_view name);

// What a walk finds, before any file is read.
struct Found {
  std::vector<fs::path> files;              // checkpoint files, listed one by one
  std::set<fs::path> parts;                 // files a sharded checkpoint is made of (not listed)
  std::vector<fs::path> hfFolders;          // Hugging Face Trainer checkpoint-<step>/ folders
  std::vector<fs::path> megatronFolders;    // Megatron-LM iter_<N>/ and release/ folders
  std::vector<fs::path> accelerateFolders;  // Accelerate save_state folders (accelerate.h)
  std::map<fs::path, std::vector<std::string>> metricFiles;  // by directory
  std::map<fs::path, std::vector<std::string>> eventFiles;   // TensorBoard's, by directory
  std::set<fs::path> mlflowRuns;                             // MLflow run folders
  fs::path root;                                             // the folder the walk began at

  // One entry of a directory: a folder that is a Trainer checkpoint is one
  // item (its files are not walked: returns false). (The sharded checkpoint
  // another folder may hold is found when it is listed: walkTree.)
  bool addFolder(const fs::path& dir);
  void addFile(const fs::path& file);
  // A regular file `name` in `dir`, looked at by its name first (no path
  // made for a file of no interest); `path` its path when the caller has it.
  void addFileNamed(const fs::path& dir, std::string_view name, const std::string* path = nullptr);
  // What another walk of other folders found, added to this one.
  void merge(Found&& other);
};

// What the folders below `root` (and it) hold, walked on up to `threads`
// threads, a folder at a time: each folder is listed once, by one thread.
// Folders whose names begin with a dot and links to folders are not
// walked; a folder that cannot be listed for a reason other than
// permission (or its removal during the walk) is an error.
Found walkTree(const fs::path& root, unsigned threads);

// One thing to read: a file, or a Trainer folder's checkpoint.
struct Item {
  fs::path path;
  std::shared_ptr<const fs::path> runDir;  // shared by the items of a folder
  enum class Kind { File, HfFolder, HfFinal, MegatronFolder, AccelerateFolder } kind = Kind::File;
  // The trainer whose layout put it in runDir rather than its own folder:
  // a Lightning run's checkpoints/ file, torchtitan's checkpoint/step-<N>/.
  std::string_view trainer;
};

// A checkpoints/ folder of Accelerate's automatic naming.
bool hasAutomaticAccelerateFolders(const fs::path& dir);
// Whether `dir` is a run by what it holds itself (one listing, nothing read).
bool looksLikeRun(const fs::path& dir);
// torchtitan's <dump>/checkpoint/step-<N>/ folders of a dump folder.
std::vector<fs::path> torchtitanCheckpoints(const std::string& dump);
bool hasTorchtitanCheckpoint(const std::string& checkpointFolder);
// The run a runs/<launch>/ or tb/<launch>/ folder of event files belongs to.
std::optional<fs::path> eventFolderOwner(const fs::path& dir);
// The items to read, folder by folder (the parts of sharded checkpoints
// dropped; a Trainer's own files one final checkpoint).
std::vector<Item> itemsOf(Found& found);
// One item's entry, its path relative to `rootPath`. A file is answered
// from `cache` when the cache knows it unchanged (listing_cache.h); slot
// `slot` of the cache is the item's, `folder` the calling thread's;
// `stamped`, the file's stamp as its batch stat'ed it (ListingCache::entry).
CheckpointEntry describeItem(const Item& item, const fs::path& rootPath,
                             ListingCache* cache = nullptr, size_t slot = 0,
                             ListingCache::Folder* folder = nullptr,
                             const FileStamp* stamped = nullptr);

}  // namespace ckpt::detail
