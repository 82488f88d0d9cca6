#include "read_ahead.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#ifdef CKPT_HAVE_URING
#include <liburing.h>
#endif

namespace ckpt::detail {

#ifdef CKPT_HAVE_URING

struct ReadAhead::Ring {
  io_uring ring{};
  // A buffer of InputFile::kReadWholeBytes for each file of a batch, read
  // into by the kernel and offered as they are (no copy). One still held
  // when the next batch comes (the reader kept a view of its bytes) is
  // left to its holder and a new one made in its place.
  std::vector<std::shared_ptr<uint8_t[]>> buffers;
  std::vector<struct statx> stats, pathStats;
  std::vector<int> pathStatResult;
  std::vector<int> fds;
  std::vector<int> statResult, readResult;
  bool live = false;    // set up
  bool broken = false;  // a wait failed: requests may be in flight
  ~Ring() {
    if (live) io_uring_queue_exit(&ring);
    // The kernel may still complete what was in flight into these buffers.
    if (broken)
      for (auto& b : buffers) new std::shared_ptr<uint8_t[]>(std::move(b));  // never freed
  }
};

namespace {

constexpr unsigned kEntries = 2 * ReadAhead::kBatch;

// What fileStampOf (file_stamp_of.h) makes of fstat's answer, from statx's.
FileStamp stampOf(const struct statx& sx) {
  return FileStamp{uint64_t(makedev(sx.stx_dev_major, sx.stx_dev_minor)), sx.stx_ino, sx.stx_size,
                   int64_t(sx.stx_mtime.tv_sec) * 1'000'000'000 + sx.stx_mtime.tv_nsec,
                   int64_t(sx.stx_ctime.tv_sec) * 1'000'000'000 + sx.stx_ctime.tv_nsec};
}

// Submits what was queued and reaps `count` completions, each handed to
// `take(user_data, res)`. False when the ring failed (nothing more is sent).
template <typename Take>
bool submitAndReap(io_uring& ring, unsigned count, Take take) {
  if (count == 0) return true;
  int sent = io_uring_submit(&ring);
  if (sent < 0) return false;
  for (unsigned got = 0; got < count;) {
    io_uring_cqe* cqe = nullptr;
    const int r = io_uring_wait_cqe(&ring, &cqe);
    if (r == -EINTR) continue;
    if (r < 0 || !cqe) return false;
    take(cqe->user_data, cqe->res);
    io_uring_cqe_seen(&ring, cqe);
    ++got;
  }
  return true;
}

bool disabledByEnvironment() {
  const char* v = std::getenv("CKPTSCOPE_READ_AHEAD");
  return v && std::strcmp(v, "0") == 0;
}

}  // namespace

ReadAhead::ReadAhead(bool wanted) {
  if (!wanted || disabledByEnvironment()) return;
  auto ring = std::make_unique<Ring>();
  // ENOSYS, EPERM (seccomp, kernel.io_uring_disabled), ENOMEM: off.
  if (io_uring_queue_init(kEntries, &ring->ring, 0) < 0) return;
  ring->live = true;
  ring->buffers.resize(kBatch);
  ring->stats.resize(kBatch);
  ring->pathStats.resize(kBatch);
  ring->pathStatResult.resize(kBatch);
  ring->fds.resize(kBatch);
  ring->statResult.resize(kBatch);
  ring->readResult.resize(kBatch);
  m_ring = std::move(ring);
}

ReadAhead::~ReadAhead() = default;

void ReadAhead::read(const std::vector<const std::string*>& paths,
                     const std::vector<const std::string*>& stat) {
  m_files.clear();
  m_read.assign(paths.size(), false);
  m_stamped.assign(stat.size(), false);
  if (!m_ring) return;
  Ring& r = *m_ring;
  const size_t n = std::min(paths.size(), kBatch);
  const size_t ns = std::min(stat.size(), kBatch);
  m_files.resize(n);
  m_stamps.resize(ns);
  std::fill(r.fds.begin(), r.fds.end(), -1);
  std::fill(r.pathStatResult.begin(), r.pathStatResult.end(), -1);
  // (The ring holds 2 * kBatch entries and is empty at each round's start:
  // a missing entry is a failure all the same.)
  bool ok = true;
  auto entry = [&]() -> io_uring_sqe* {
    io_uring_sqe* sqe = ok ? io_uring_get_sqe(&r.ring) : nullptr;
    if (!sqe) ok = false;
    return sqe;
  };
  // The opens, and the stats by path.
  unsigned queued = 0;
  for (size_t j = 0; j < n && ok; ++j) {
    if (!paths[j]) continue;
    if (io_uring_sqe* sqe = entry()) {
      io_uring_prep_openat(sqe, AT_FDCWD, paths[j]->c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);
      io_uring_sqe_set_data64(sqe, j);
      ++queued;
    }
  }
  for (size_t j = 0; j < ns && ok; ++j) {
    if (!stat[j]) continue;
    if (io_uring_sqe* sqe = entry()) {
      io_uring_prep_statx(sqe, AT_FDCWD, stat[j]->c_str(), AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS,
                          &r.pathStats[j]);
      io_uring_sqe_set_data64(sqe, kBatch + j);
      ++queued;
    }
  }
  ok = submitAndReap(r.ring, queued,
                     [&](uint64_t tag, int res) {
                       if (tag < n)
                         r.fds[tag] = res;
                       else if (tag >= kBatch && tag - kBatch < ns)
                         r.pathStatResult[tag - kBatch] = res;
                     }) &&
       ok;
  // Each open file's statx and read.
  queued = 0;
  for (size_t j = 0; j < n && ok; ++j) {
    if (r.fds[j] < 0) continue;
    r.statResult[j] = r.readResult[j] = -1;
    io_uring_sqe* st = entry();
    io_uring_sqe* rd = entry();
    if (!ok) break;
    io_uring_prep_statx(st, r.fds[j], "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS,
                        &r.stats[j]);
    io_uring_sqe_set_data64(st, 2 * j);
    std::shared_ptr<uint8_t[]>& buffer = r.buffers[j];
    if (!buffer || buffer.use_count() > 1)
      buffer = std::shared_ptr<uint8_t[]>(new uint8_t[InputFile::kReadWholeBytes]);
    io_uring_prep_read(rd, r.fds[j], buffer.get(), unsigned(InputFile::kReadWholeBytes), 0);
    io_uring_sqe_set_data64(rd, 2 * j + 1);
    queued += 2;
  }
  ok = submitAndReap(r.ring, queued,
                     [&](uint64_t tag, int res) {
                       const size_t j = tag / 2;
                       if (j < n) (tag % 2 ? r.readResult[j] : r.statResult[j]) = res;
                     }) &&
       ok;
  // The closes: by the ring while it works, else here. A close handed to
  // the ring is never made again here: the number may be another
  // thread's file by then (a descriptor is left open instead, on a ring
  // that failed).
  std::vector<bool> handed(n, false);
  queued = 0;
  for (size_t j = 0; j < n && ok; ++j) {
    if (r.fds[j] < 0) continue;
    if (io_uring_sqe* sqe = entry()) {
      io_uring_prep_close(sqe, r.fds[j]);
      handed[j] = true;
      ++queued;
    }
  }
  ok = submitAndReap(r.ring, queued, [](uint64_t, int) {}) && ok;
  if (!ok) {
    for (size_t j = 0; j < n; ++j)
      if (r.fds[j] >= 0 && !handed[j]) ::close(r.fds[j]);
    r.broken = true;
    m_ring.reset();
    m_files.clear();
    m_read.assign(paths.size(), false);
    m_stamped.assign(stat.size(), false);
    return;
  }
  for (size_t j = 0; j < ns; ++j)
    if (r.pathStatResult[j] == 0 && S_ISREG(r.pathStats[j].stx_mode)) {
      m_stamps[j] = stampOf(r.pathStats[j]);
      m_stamped[j] = true;
    }
  for (size_t j = 0; j < n; ++j) {
    if (r.fds[j] < 0 || r.statResult[j] != 0 || r.readResult[j] < 0) continue;
    const struct statx& sx = r.stats[j];
    if (!S_ISREG(sx.stx_mode) || sx.stx_size > InputFile::kReadWholeBytes) continue;
    // As InputFile reads a small file: the size its fstat said, or what
    // was there when it shrank meanwhile.
    const uint64_t got = std::min<uint64_t>(uint64_t(r.readResult[j]), sx.stx_size);
    const std::shared_ptr<uint8_t[]>& buffer = r.buffers[j];
    OfferedFile& f = m_files[j];
    f.path = *paths[j];
    f.stamp = stampOf(sx);
    f.mtime = int64_t(sx.stx_mtime.tv_sec);
    f.bytes.data = buffer.get();
    f.bytes.size = got;
    f.bytes.owner = std::shared_ptr<const void>(buffer, f.bytes.data);
    m_read[j] = true;
  }
}

#else  // no liburing at build time: nothing is read ahead

struct ReadAhead::Ring {};
ReadAhead::ReadAhead(bool) {}
ReadAhead::~ReadAhead() = default;
void ReadAhead::read(const std::vector<const std::string*>& paths,
                     const std::vector<const std::string*>& stat) {
  m_files.clear();
  m_read.assign(paths.size(), false);
  m_stamped.assign(stat.size(), false);
}

#endif

const OfferedFile* ReadAhead::file(size_t index) const {
  return index < m_read.size() && m_read[index] ? &m_files[index] : nullptr;
}

const FileStamp* ReadAhead::stamp(size_t index) const {
  return index < m_stamped.size() && m_stamped[index] ? &m_stamps[index] : nullptr;
}

}  // namespace ckpt::detail
