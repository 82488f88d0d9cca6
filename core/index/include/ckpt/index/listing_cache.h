#pragma once
// A listing cache, so that opening the same folder again does not read
// every small checkpoint in it again. One cache file per folder opened
// (its absolute path hashed), in the user's cache folder
// ($CKPTSCOPE_CACHE_DIR/listings, else $XDG_CACHE_HOME/ckptscope/listings,
// else ~/.cache/ckptscope/listings; never in the experiment directory),
// holding for each checkpoint file listed from it: its path, device, inode,
// size, modification and change times (to the nanosecond), and its entry
// as describeCheckpoint gave it (step, loss, sizes, safety verdict, ...).
//
// A listing through the cache stats each file (one system call instead of
// an open, a read, a parse and a close) and takes its entry from the cache
// only when all five of those are what the cache recorded; anything else
// (a rewrite in place, as torch.save to the same path does, a file moved
// over it, a changed time) is read as before. A file changed less than two
// seconds before the listing began is not recorded (timestamps are coarse:
// a second rewrite within the same tick would not show). Only what a file
// says on its own is kept: a file that could not be read, a sharded
// checkpoint and a rank's file (whose verdict depends on its folder) are
// read every time. The cache is also tied to the sources of the reader and
// the index (core/format, core/index: a hash taken at build time, the same
// in the app, the CLI and a host's agent built from them): another
// version reads every file again.
//
// A cache file is trusted only with the right magic, version, byte order,
// build, folder and CRC-32C over its contents; a damaged or foreign one is
// ignored and rewritten. Written beside and renamed over. Off with
// CKPTSCOPE_NO_CACHE=1, as the metrics cache (metrics_cache.h). No Qt, no
// LibTorch.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ckpt/index/scanner.h"

namespace ckpt {

// What listing caches did since the last reset (for tests and benchmarks).
struct ListingCacheStats {
  uint64_t hits = 0;      // files whose entry came from the cache
  uint64_t misses = 0;    // files read (not in the cache, changed, or never kept)
  uint64_t rejected = 0;  // cache files found damaged or foreign
  uint64_t writes = 0;    // cache files written
  uint64_t stamped = 0;   // files whose stamp the caller took (entry()'s `stamped`)
};
[[nodiscard]] ListingCacheStats listingCacheStats();
void resetListingCacheStats();

// The folder listing caches live in ("" when no variable says one: none).
[[nodiscard]] std::string listingCacheDir();
// The cache file for a folder opened (its absolute path hashed).
[[nodiscard]] std::string listingCacheFile(const std::string& root);

class ListingCache {
 public:
  // The cache of listings of `root`, loaded (empty when missing, damaged
  // or foreign); nullptr when caching is off or there is no cache folder.
  [[nodiscard]] static std::unique_ptr<ListingCache> open(const std::string& root);
  ~ListingCache();

  // The folder a thread last looked in while it takes entries: its files
  // are stat'ed by name in the folder held open, not by a path walked
  // again for each (a listing's files come folder by folder). One per
  // thread, for one listing only (a folder renamed since would be looked
  // in by its old handle).
  class Folder {
   public:
    Folder() = default;
    ~Folder();
    Folder(const Folder&) = delete;
    Folder& operator=(const Folder&) = delete;

   private:
    friend class ListingCache;
    std::string m_path;
    int m_fd = -1;
  };

  // Slots for a listing of `items` files (one per item; entry() fills them).
  void resize(size_t items);
  // How a file is read when the cache cannot give its entry; it sets its
  // argument to the file's stamp as it opened it (describeCheckpoint's).
  using Read = std::function<CheckpointEntry(std::optional<FileStamp>* stamp)>;
  // The entry of the file at `path`: the cached one (its path and `file`
  // set to these) when the file is unchanged, else read(), kept for the
  // next listing when it can be, under the stamp read() took as it opened
  // the file. A file the cache has no record of is not stat'ed first
  // (a folder listed for the first time costs what a listing without the
  // cache costs, and the cache's writing). Safe on several threads, a slot
  // and a `folder` each (none: the path is stat'ed). `stamped`: the
  // file's stamp as a stat of its path took it just now (a regular file:
  // the listing's batches, read_ahead.h), so it is not stat'ed again.
  CheckpointEntry entry(size_t slot, const std::string& path, const std::string& file,
                        const Read& read, Folder* folder = nullptr,
                        const FileStamp* stamped = nullptr);
  // Whether the cache has a record of the file at `path` (slot `slot`):
  // entry() then stats the file before anything of it is read.
  [[nodiscard]] bool knows(size_t slot, const std::string& path) {
    return find(slot, path) != nullptr;
  }
  // Writes the cache file when the listing differs from what was loaded:
  // the files of this listing only (a file gone is dropped).
  void save();

 private:
  explicit ListingCache(std::string root, std::string file);
  struct Record {
    std::string_view path;  // in m_loaded
    FileStamp stat;
    std::string_view entry;  // encoded, in m_loaded
    std::string_view whole;  // the record's bytes, in m_loaded
  };
  void load();
  // The record of `path`: the one at `slot` when it is that file (the same
  // folder listed again: the files come in the order they were saved),
  // else looked up by path. nullptr when none.
  const Record* find(size_t slot, std::string_view path);

  std::string m_root, m_file;
  std::string m_loaded;
  std::vector<Record> m_records;  // in the file's order
  // Path -> index in m_records, made the first time a slot's record is not its file.
  std::once_flag m_indexOnce;
  std::unordered_map<std::string_view, size_t> m_index;
  // Each slot's record, encoded: a view of m_loaded (the file's own bytes,
  // unchanged) or of its m_read string (a file read this time); empty when
  // not kept.
  std::vector<std::string_view> m_slots;
  std::vector<std::string> m_read;
  std::atomic<bool> m_changed{false};
  int64_t m_startNs = 0;
};

}  // namespace ckpt
