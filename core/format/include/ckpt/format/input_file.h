#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt {

// A read-only view of some bytes plus whatever keeps them alive: a memory
// mapping of part of a file, or a heap buffer (an inflated zip record).
struct ByteRegion {
  std::shared_ptr<const void> owner;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// What fstat(2) said of a regular file as it was opened: enough to tell
// the same bytes from a rewrite in place, a file moved over it or a
// changed time (the listing cache's key, listing_cache.h).
struct FileStamp {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtimeNs = 0, ctimeNs = 0;
  bool operator==(const FileStamp&) const = default;
};

// An open file. Small reads (zip directory, pickle) copy with pread; tensor
// bytes are memory-mapped only when asked for, and only their extent. A
// regular file of at most kReadWholeBytes is read whole when opened (one
// read, the descriptor closed at once) and served from memory. Or
// bytes already in memory, read through the same calls (the fuzzer's
// inputs: CheckpointFile::openBytes, scanBytes).
class InputFile {
 public:
  // Files this small are read whole when opened: a small checkpoint costs
  // open, fstat, read and close, whatever its reader then looks at.
  static constexpr uint64_t kReadWholeBytes = 64 * 1024;

  explicit InputFile(const std::string& path);  // throws FormatError
  // The same, but nullptr when `path` is a directory (a sharded
  // checkpoint's folder, perhaps): one open tells both, no stat first.
  [[nodiscard]] static std::unique_ptr<InputFile> openUnlessDirectory(const std::string& path);
  // `length` bytes of the file from `base` on, read as if they were the
  // whole file (a torch.save archive inside a DCP .distcp file). A slice
  // that runs past the file's end is a FormatError naming both.
  InputFile(const std::string& path, uint64_t base, uint64_t length);
  // `bytes` as the whole file, named `name` in errors; map() views them
  // (sharing their owner), read() copies them. mtime() is 0.
  InputFile(const std::string& name, ByteRegion bytes);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  [[nodiscard]] const std::string& path() const { return m_path; }
  [[nodiscard]] uint64_t size() const { return m_size; }
  [[nodiscard]] int64_t mtime() const { return m_mtime; }
  // The stamp of a regular file opened by its path, taken by the open's
  // own fstat before any byte was read (a slice's is its whole file's);
  // none for bytes in memory or anything but a regular file.
  [[nodiscard]] const std::optional<FileStamp>& stamp() const { return m_stamp; }

  // Exactly `length` bytes at `offset`; a short file is a TruncatedError that
  // names the offset.
  void read(uint64_t offset, uint64_t length, void* out) const;
  [[nodiscard]] std::vector<uint8_t> read(uint64_t offset, uint64_t length) const;
  // Maps [offset, offset + length) read-only. The region outlives this object.
  [[nodiscard]] ByteRegion map(uint64_t offset, uint64_t length) const;

 private:
  InputFile(const std::string& path, std::nullptr_t) : m_path(path) {}
  // Opens m_path; false (nothing held open) when it is a directory.
  bool openPath();
  void readWhole();

  std::string m_path;
  int m_fd = -1;
  ByteRegion m_memory;  // the bytes, for a file in memory (m_fd stays -1)
  uint64_t m_base = 0;  // of a slice
  uint64_t m_size = 0;
  int64_t m_mtime = 0;
  std::optional<FileStamp> m_stamp;
};

}  // namespace ckpt
