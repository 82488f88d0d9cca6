#include "ckpt/format/input_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ckpt/format/error.h"

namespace ckpt {

InputFile::InputFile(const std::string& path) : m_path(path) {
  m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
    fail("is a directory");
  }
  m_size = static_cast<uint64_t>(st.st_size);
  m_mtime = static_cast<int64_t>(st.st_mtime);
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
