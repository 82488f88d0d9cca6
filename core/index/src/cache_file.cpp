#include "cache_file.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace ckpt::detail {
namespace fs = std::filesystem;

std::string absolutePath(const std::string& path) {
  std::error_code ec;
  const fs::path a = fs::absolute(path, ec);
  return ec ? path : a.lexically_normal().string();
}

std::string cacheFileIn(const std::string& dir, const std::string& path) {
  if (dir.empty()) return {};
  uint64_t h = 14695981039346656037ull;
  for (const char c : absolutePath(path)) h = (h ^ uint8_t(c)) * 1099511628211ull;
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(h));
  return (fs::path(dir) / name).string();
}

bool writeCacheFile(const std::string& file, std::initializer_list<std::string_view> parts) {
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  // Unique per process and call: files are written from several threads.
  static std::atomic<uint64_t> serial{0};
  const std::string tmp =
      file + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    for (const std::string_view part : parts) out.write(part.data(), std::streamsize(part.size()));
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace ckpt::detail
