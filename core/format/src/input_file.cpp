#include "ckpt/format/input_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "ckpt/format/error.h"
#include "ckpt/format/file_stamp_of.h"
#include "ckpt/format/offered_file.h"

namespace ckpt {
namespace {

thread_local const OfferedFile* t_offered = nullptr;
thread_local bool t_offerTaken = false;  // by an open since it was made
std::atomic<uint64_t> g_taken{0};

}  // namespace

FileOffer::FileOffer(const OfferedFile* file) {
  t_offered = file;
  t_offerTaken = false;
}

FileOffer::~FileOffer() {
  t_offered = nullptr;
}

uint64_t offeredFilesTaken() {
  return g_taken.load(std::memory_order_relaxed);
}

InputFile::InputFile(const std::string& path) : m_path(path) {
  if (!openPath()) fail("is a directory");
}

std::unique_ptr<InputFile> InputFile::openUnlessDirectory(const std::string& path) {
  std::unique_ptr<InputFile> file(new InputFile(path, nullptr));
  if (!file->openPath()) return nullptr;
  return file;
}

bool InputFile::openPath() {
  if (const OfferedFile* f = t_offered; f && f->path == m_path) {
    m_memory = f->bytes;
    m_size = f->bytes.size;
    m_mtime = f->mtime;
    m_stamp = f->stamp;
    if (!t_offerTaken) g_taken.fetch_add(1, std::memory_order_relaxed);
    t_offerTaken = true;
    return true;
  }
  m_fd = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (m_fd < 0) fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(m_fd, &st) != 0) {
    int err = errno;
    ::close(m_fd);
    m_fd = -1;
    fail(std::string("cannot stat: ") + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(m_fd);
    m_fd = -1;
    return false;
  }
  m_size = static_cast<uint64_t>(st.st_size);
  m_mtime = static_cast<int64_t>(st.st_mtime);
  if (S_ISREG(st.st_mode)) m_stamp = fileStampOf(st);
  if (S_ISREG(st.st_mode) && m_size <= kReadWholeBytes) readWhole();
  return true;
}

void InputFile::readWhole() {
  // One read(2) instead of a pread per structure (sniff, zip end record,
  // central directory, each record's header and bytes): on 50,000 small
  // checkpoints those were four system calls a file. The bytes are a
  // snapshot, as a file read by pread while it is rewritten is not.
  auto buffer = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<uint64_t>(m_size, 1)]);
  uint64_t got = 0;
  while (got < m_size) {
    const ssize_t n = ::read(m_fd, buffer.get() + got, m_size - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(m_fd);  // the constructor throws: no destructor closes it
      m_fd = -1;
      fail(std::string("read error at offset ") + std::to_string(got) + ": " + std::strerror(err));
    }
    if (n == 0) break;  // shrank since fstat: what was there is the file
    got += static_cast<uint64_t>(n);
  }
  m_size = got;
  m_memory.data = buffer.get();
  m_memory.size = got;
  m_memory.owner = std::shared_ptr<const void>(std::move(buffer), m_memory.data);
  ::close(m_fd);
  m_fd = -1;
}

InputFile::InputFile(const std::string& path, uint64_t base, uint64_t length) : InputFile(path) {
  uint64_t end = 0;
  if (addOverflows(base, length, &end) || end > m_size)
    fail("the slice of " + std::to_string(length) + " bytes at offset " + std::to_string(base) +
         " runs past the end of the file (" + std::to_string(m_size) + " bytes)");
  m_base = base;
  m_size = length;
}

InputFile::InputFile(const std::string& name, ByteRegion bytes)
    : m_path(name), m_memory(std::move(bytes)) {
  m_size = m_memory.size;
}

InputFile::~InputFile() {
  if (m_fd >= 0) ::close(m_fd);
}

void InputFile::read(uint64_t offset, uint64_t length, void* out) const {
  uint64_t end = 0;
  if (addOverflows(offset, length, &end) || end > m_size)
    failTruncated("truncated: " + std::to_string(length) + " bytes at offset " +
                  std::to_string(offset) + " lie past the end of the file (" +
                  std::to_string(m_size) + " bytes)");
  auto* dst = static_cast<uint8_t*>(out);
  if (m_memory.data) {
    if (length) std::memcpy(dst, m_memory.data + m_base + offset, length);
    return;
  }
  while (length > 0) {
    ssize_t n = ::pread(m_fd, dst, length, static_cast<off_t>(m_base + offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("read error at offset " + std::to_string(offset) + ": " + std::strerror(errno));
    }
    if (n == 0)
      failTruncated("truncated: file shrank while reading at offset " + std::to_string(offset));
    dst += n;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
}

std::vector<uint8_t> InputFile::read(uint64_t offset, uint64_t length) const {
  uint64_t end = 0;
  if (addOverflows(offset, length, &end) || end > m_size)
    failTruncated("truncated: " + std::to_string(length) + " bytes at offset " +
                  std::to_string(offset) + " lie past the end of the file (" +
                  std::to_string(m_size) + " bytes)");
  std::vector<uint8_t> buf(length);
  read(offset, length, buf.data());
  return buf;
}

ByteRegion InputFile::map(uint64_t offset, uint64_t length) const {
  uint64_t end = 0;
  if (addOverflows(offset, length, &end) || end > m_size)
    failTruncated("truncated: " + std::to_string(length) + " bytes at offset " +
                  std::to_string(offset) + " lie past the end of the file (" +
                  std::to_string(m_size) + " bytes)");
  ByteRegion region;
  if (length == 0) {
    static const uint8_t empty = 0;
    region.data = &empty;
    return region;
  }
  if (m_memory.data) {
    region.owner = m_memory.owner;
    region.data = m_memory.data + m_base + offset;
    region.size = length;
    return region;
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  offset += m_base;
  const uint64_t start = offset - offset % page;
  const uint64_t span = length + (offset - start);
  void* p = ::mmap(nullptr, span, PROT_READ, MAP_PRIVATE, m_fd, static_cast<off_t>(start));
  if (p == MAP_FAILED)
    fail("cannot map " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
         ": " + std::strerror(errno));
  region.owner = std::shared_ptr<const void>(
      p, [span](const void* q) { ::munmap(const_cast<void*>(q), span); });
  region.data = static_cast<const uint8_t*>(p) + (offset - start);
  region.size = length;
  return region;
}

}  // namespace ckpt
