#pragma once
// A FileStamp (input_file.h) from what stat(2), fstat(2) or statx(2)
// filled in: one place that reads the fields, for the open's own fstat
// (InputFile), the listing cache's stat of a file it has a record of, and
// the listing's batched statx (core/index/src/read_ahead.h).

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ckpt/format/input_file.h"

namespace ckpt {

[[nodiscard]] inline FileStamp fileStampOf(const struct stat& st) {
  return FileStamp{uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size),
                   int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                   int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

// statx gives the device as major and minor numbers; stat's st_dev is
// their makedev().
[[nodiscard]] inline FileStamp fileStampOf(const struct statx& sx) {
  return FileStamp{uint64_t(makedev(sx.stx_dev_major, sx.stx_dev_minor)), sx.stx_ino, sx.stx_size,
                   int64_t(sx.stx_mtime.tv_sec) * 1'000'000'000 + sx.stx_mtime.tv_nsec,
                   int64_t(sx.stx_ctime.tv_sec) * 1'000'000'000 + sx.stx_ctime.tv_nsec};
}

}  // namespace ckpt
