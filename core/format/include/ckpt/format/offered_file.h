#pragma once
// A file read before it is opened: the listing reads the small files of a
// folder in batches, a few system calls for dozens of files
// (core/index/src/read_ahead.h), and offers each to the reader as it
// describes that file. An InputFile opened by exactly this path on the
// thread that offers it takes these bytes and this stamp instead of
// opening the path: what open, fstat, read and close would have given.

#include <cstdint>
#include <string>
#include <string_view>

#include "ckpt/format/input_file.h"

namespace ckpt {

struct OfferedFile {
  std::string_view path;  // as the open names it (it outlives the offer)
  FileStamp stamp;        // of the open that read it (a regular file)
  int64_t mtime = 0;      // seconds, as InputFile::mtime()
  ByteRegion bytes;       // the whole file: stamp.size bytes, or fewer when it shrank meanwhile
};

// Offers `file` to this thread's opens while it lives (none: nothing
// offered). Offers do not nest: the one made last is withdrawn on its end.
class FileOffer {
 public:
  explicit FileOffer(const OfferedFile* file);
  ~FileOffer();
  FileOffer(const FileOffer&) = delete;
  FileOffer& operator=(const FileOffer&) = delete;
};

// How many offered files an open took (each counted once), in this
// process: for tests.
[[nodiscard]] uint64_t offeredFilesTaken();

}  // namespace ckpt
