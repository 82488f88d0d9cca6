#pragma once
// A small file read whole, for the index's sidecar files (Megatron's
// tracker and metadata.json, a branch's lineage.json, an MLflow meta.yaml):
// at most `limit` bytes kept, and whether the file holds more. Allocates
// what the file holds, not the limit: a limit of 1 MB allocated and zeroed
// a megabyte for every meta.yaml of a few hundred bytes.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

namespace ckpt::detail {

struct SmallFile {
  std::string text;     // the first `limit` bytes at most
  bool larger = false;  // the file holds more than `limit` bytes
};

// Nothing when the file cannot be opened.
inline std::optional<SmallFile> readSmallFile(const std::filesystem::path& p, size_t limit) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(p, ec);
  // One byte past what it holds tells a file that grew; a size not known
  // (not a regular file) reads up to the limit and one byte more.
  const size_t want = size_t(std::min<uintmax_t>(ec ? uintmax_t(limit) : size, limit)) + 1;
  SmallFile f;
  f.text.resize(want);
  in.read(f.text.data(), std::streamsize(want));
  f.text.resize(size_t(in.gcount()));
  if (f.text.size() > limit) {
    f.larger = true;
    f.text.resize(limit);
  }
  return f;
}

}  // namespace ckpt::detail
