#include "read_ahead.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ckpt/format/file_stamp_of.h"

#ifdef CKPT_HAVE_URING
#include <liburing.h>
#endif

namespace ckpt::detail {

#ifdef CKPT_HAVE_URING

struct ReadAhead::Ring {
  // What the ring did for the file at one index of a batch.
  struct Slot {
    int fd = -1;                           // opened to be read (-errno: not)
    int statResult = -1, readResult = -1;  // of that descriptor
    struct statx stat {};
    // A buffer of InputFile::kReadWholeBytes read into by the kernel and
    // offered as it is (no copy). One still held when the next batch
    // comes (the reader kept a view of its bytes) is left to its holder
    // and a new one made in its place.
    std::shared_ptr<uint8_t[]> buffer;
    int pathStatResult = -1;  // of the stat by path
    struct statx pathStat {};
  };
  io_uring ring{};
  std::array<Slot, kBatch> slots;
  bool live = false;    // set up
  bool broken = false;  // a wait failed: requests may be in flight
  ~Ring() {
    if (live) io_uring_queue_exit(&ring);
    // The kernel may still complete what was in flight into these buffers.
    if (broken)
      for (Slot& s : slots) new std::shared_ptr<uint8_t[]>(std::move(s.buffer));  // never freed
  }
};

namespace {

constexpr unsigned kEntries = 2 * ReadAhead::kBatch;

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
  m_ring = std::move(ring);
}

bool ReadAhead::readOnRing(const std::vector<const std::string*>& paths,
                           const std::vector<const std::string*>& stat) {
  Ring& r = *m_ring;
  const size_t n = std::min(paths.size(), kBatch);
  const size_t ns = std::min(stat.size(), kBatch);
  for (Ring::Slot& s : r.slots) s.fd = s.pathStatResult = -1;
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
                          &r.slots[j].pathStat);
      io_uring_sqe_set_data64(sqe, kBatch + j);
      ++queued;
    }
  }
  ok = submitAndReap(r.ring, queued,
                     [&](uint64_t tag, int res) {
                       if (tag < n)
                         r.slots[tag].fd = res;
                       else if (tag >= kBatch && tag - kBatch < ns)
                         r.slots[tag - kBatch].pathStatResult = res;
                     }) &&
       ok;
  // Each open file's statx and read.
  queued = 0;
  for (size_t j = 0; j < n && ok; ++j) {
    Ring::Slot& s = r.slots[j];
    if (s.fd < 0) continue;
    s.statResult = s.readResult = -1;
    io_uring_sqe* st = entry();
    io_uring_sqe* rd = entry();
    if (!ok) break;
    io_uring_prep_statx(st, s.fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS,
                        &s.stat);
    io_uring_sqe_set_data64(st, 2 * j);
    if (!s.buffer || s.buffer.use_count() > 1)
      s.buffer = std::shared_ptr<uint8_t[]>(new uint8_t[InputFile::kReadWholeBytes]);
    io_uring_prep_read(rd, s.fd, s.buffer.get(), unsigned(InputFile::kReadWholeBytes), 0);
    io_uring_sqe_set_data64(rd, 2 * j + 1);
    queued += 2;
  }
  ok = submitAndReap(r.ring, queued,
                     [&](uint64_t tag, int res) {
                       const size_t j = tag / 2;
                       if (j < n) (tag % 2 ? r.slots[j].readResult : r.slots[j].statResult) = res;
                     }) &&
       ok;
  // The closes: by the ring while it works, else here. A close handed to
  // the ring is never made again here: the number may be another
  // thread's file by then (a descriptor is left open instead, on a ring
  // that failed).
  std::array<bool, kBatch> handed{};
  queued = 0;
  for (size_t j = 0; j < n && ok; ++j) {
    if (r.slots[j].fd < 0) continue;
    if (io_uring_sqe* sqe = entry()) {
      io_uring_prep_close(sqe, r.slots[j].fd);
      handed[j] = true;
      ++queued;
    }
  }
  ok = submitAndReap(r.ring, queued, [](uint64_t, int) {}) && ok;
  if (!ok) {
    for (size_t j = 0; j < n; ++j)
      if (r.slots[j].fd >= 0 && !handed[j]) ::close(r.slots[j].fd);
    return false;
  }
  for (size_t j = 0; j < ns; ++j)
    if (r.slots[j].pathStatResult == 0 && S_ISREG(r.slots[j].pathStat.stx_mode))
      m_stamps[j] = fileStampOf(r.slots[j].pathStat);
  for (size_t j = 0; j < n; ++j) {
    const Ring::Slot& s = r.slots[j];
    if (s.fd < 0 || s.statResult != 0 || s.readResult < 0) continue;
    if (!S_ISREG(s.stat.stx_mode) || s.stat.stx_size > InputFile::kReadWholeBytes) continue;
    // As InputFile reads a small file: the size its fstat said, or what
    // was there when it shrank meanwhile.
    OfferedFile& f = m_files[j].emplace();
    f.path = *paths[j];
    f.stamp = fileStampOf(s.stat);
    f.mtime = int64_t(s.stat.stx_mtime.tv_sec);
    f.bytes.data = s.buffer.get();
    f.bytes.size = std::min<uint64_t>(uint64_t(s.readResult), s.stat.stx_size);
    f.bytes.owner = std::shared_ptr<const void>(s.buffer, f.bytes.data);
  }
  return true;
}

#else  // no liburing at build time: nothing is read ahead

struct ReadAhead::Ring {};
ReadAhead::ReadAhead(bool) {}

#endif

ReadAhead::~ReadAhead() = default;

void ReadAhead::read(const std::vector<const std::string*>& paths,
                     const std::vector<const std::string*>& stat) {
  m_files.assign(paths.size(), std::nullopt);
  m_stamps.assign(stat.size(), std::nullopt);
#ifdef CKPT_HAVE_URING
  if (m_ring && !readOnRing(paths, stat)) {
    m_ring->broken = true;
    m_ring.reset();
    m_files.assign(paths.size(), std::nullopt);
    m_stamps.assign(stat.size(), std::nullopt);
  }
#endif
}

const OfferedFile* ReadAhead::file(size_t index) const {
  return index < m_files.size() && m_files[index] ? &*m_files[index] : nullptr;
}

const FileStamp* ReadAhead::stamp(size_t index) const {
  return index < m_stamps.size() && m_stamps[index] ? &*m_stamps[index] : nullptr;
}

}  // namespace ckpt::detail
