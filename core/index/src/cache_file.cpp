#include "cache_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <vector>

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
  return writeCacheFile(file, std::span<const std::string_view>(parts.begin(), parts.size()));
}

namespace {

// Every byte of `parts` to `fd`, IOV_MAX of them a call.
bool writeParts(int fd, std::span<const std::string_view> parts) {
  std::vector<iovec> iov;
  iov.reserve(std::min<size_t>(parts.size(), IOV_MAX));
  size_t next = 0, skip = 0;  // the part to write next, and its bytes already written
  while (next < parts.size()) {
    iov.clear();
    for (size_t i = next; i < parts.size() && iov.size() < IOV_MAX; ++i) {
      const std::string_view part = i == next ? parts[i].substr(skip) : parts[i];
      if (!part.empty()) iov.push_back({const_cast<char*>(part.data()), part.size()});
    }
    if (iov.empty()) return true;
    const ssize_t n = ::writev(fd, iov.data(), int(iov.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return false;
    // Past what was written: whole parts, then into the one it stopped in.
    size_t left = size_t(n);
    while (next < parts.size() && left >= parts[next].size() - skip) {
      left -= parts[next].size() - skip;
      skip = 0;
      ++next;
    }
    skip += left;
  }
  return true;
}

}  // namespace

bool writeCacheFile(const std::string& file, std::span<const std::string_view> parts) {
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  // Unique per process and call: files are written from several threads.
  static std::atomic<uint64_t> serial{0};
  const std::string tmp =
      file + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool written = writeParts(fd, parts);
  if (::close(fd) != 0 || !written) {
    fs::remove(tmp, ec);
    return false;
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace ckpt::detail
