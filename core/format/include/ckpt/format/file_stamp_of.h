#pragma once
// A FileStamp (input_file.h) from what stat(2) or fstat(2) filled in: one
// place that reads the fields, for the open's own fstat (InputFile) and the
// listing cache's stat of a file it has a record of.

#include <sys/stat.h>

#include "ckpt/format/input_file.h"

namespace ckpt {

[[nodiscard]] inline FileStamp fileStampOf(const struct stat& st) {
  return FileStamp{uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size),
                   int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                   int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

}  // namespace ckpt
