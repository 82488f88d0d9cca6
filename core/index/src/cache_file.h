#pragma once
// What the metrics cache (metrics_cache.h) and the listing cache
// (listing_cache.h) do alike with their files: texts as a length and their
// bytes, a file's name from the absolute path it caches, a file written
// beside and renamed over. Internal to ckpt_index.

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "raw_bytes.h"

namespace ckpt::detail {

inline void putText(std::string& out, std::string_view s) {
  putRaw(out, uint64_t(s.size()));
  out.append(s);
}

// False when fewer bytes are left than the length says.
inline bool getText(std::string_view& in, std::string& s) {
  uint64_t n = 0;
  if (!getRaw(in, n) || n > in.size()) return false;
  s.assign(in.data(), size_t(n));
  in.remove_prefix(size_t(n));
  return true;
}

// `path` made absolute and normal ("" paths and errors: as given).
[[nodiscard]] std::string absolutePath(const std::string& path);

// DIR/<FNV-1a of the absolute path, 16 hex digits>.bin: stable across
// builds (std::hash is not promised to be); the cache keeps the path
// inside to catch a collision. "" when `dir` is "".
[[nodiscard]] std::string cacheFileIn(const std::string& dir, const std::string& path);

// `parts` written to a file beside `file`, then renamed over it: a reader
// never sees half a file. False (nothing left behind) when it cannot be.
bool writeCacheFile(const std::string& file, std::initializer_list<std::string_view> parts);
// The same for any number of parts, written as they lie (writev), not
// gathered into one buffer first.
bool writeCacheFile(const std::string& file, std::span<const std::string_view> parts);

}  // namespace ckpt::detail
