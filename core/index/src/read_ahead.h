#pragma once
// The listing's small files read in batches (issue #26: a folder of 50,000
// small checkpoints was mostly the system calls of opening, stat'ing,
// reading and closing each, and in a VM each call enters the hypervisor).
// Through io_uring a batch of files costs three system calls, not four a
// file: the opens, then each file's statx and read, then the closes. Each
// file read whole is offered to the reader as it describes that file
// (ckpt/format/offered_file.h), which then opens nothing. What is not read
// whole (larger than InputFile::kReadWholeBytes, not a regular file, any
// error) is opened by the reader as before, which says what is wrong.
// Where the kernel has no io_uring (or refuses it: a container's seccomp
// profile, kernel.io_uring_disabled), or CKPTSCOPE_READ_AHEAD=0, nothing
// is read ahead. One per thread.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/format/offered_file.h"

namespace ckpt::detail {

class ReadAhead {
 public:
  // The most files one read() takes.
  static constexpr size_t kBatch = 32;

  // Off when not `wanted` (a listing of a few files: no ring set up).
  explicit ReadAhead(bool wanted = true);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Whether files are read ahead here (a ring was set up).
  [[nodiscard]] bool on() const { return m_ring != nullptr; }
  // Reads each of `paths` (at most kBatch; a null entry is skipped) that
  // is a regular file of at most InputFile::kReadWholeBytes, whole, and
  // stats (statx, following a symlink as stat(2) does) each of `stat`
  // (as many, null where none: a file the listing cache knows, which is
  // read only when it changed), in the same system calls; what a previous
  // read() gave is let go. Does nothing when off.
  void read(const std::vector<const std::string*>& paths,
            const std::vector<const std::string*>& stat = {});
  // The file at `index` in the last read()'s paths, or null when it was
  // not read whole.
  [[nodiscard]] const OfferedFile* file(size_t index) const;
  // The stamp of the regular file at `index` in the last read()'s `stat`,
  // or null (not asked, not a regular file, an error: stat it again).
  [[nodiscard]] const FileStamp* stamp(size_t index) const;

 private:
  struct Ring;
  // Reads on the ring into m_files and m_stamps (cleared); false when the
  // ring failed (it is no use any more).
  // (Defined only where liburing is: the ring is null elsewhere.)
  bool readOnRing(const std::vector<const std::string*>& paths,
                  const std::vector<const std::string*>& stat);
  std::unique_ptr<Ring> m_ring;
  std::vector<std::optional<OfferedFile>> m_files;  // by index in the last read()'s paths
  std::vector<std::optional<FileStamp>> m_stamps;   // by index in its `stat`
};

}  // namespace ckpt::detail
