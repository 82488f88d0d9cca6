// SkeletonFolder: a host's sharded checkpoint here as sparse files.
#include "skeleton_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ckpt::remote {
namespace {

bool plainComponent(const std::string& c) {
  return !c.empty() && c != "." && c != ".." && c.find('/') == std::string::npos &&
         c.find('\0') == std::string::npos;
}

std::string errnoText() {
  return std::strerror(errno);
}

}  // namespace

SkeletonFolder::SkeletonFolder(const std::string& what, const std::string& name) : m_what(what) {
  if (!plainComponent(name) || name.size() > 255)
    throw std::runtime_error(what + ": the host names its folder '" + name.substr(0, 100) +
                             "', which is not a plain folder name");
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ckptscope-skeleton-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error(what + ": cannot make a folder for it in " + pattern + ": " +
                             errnoText());
  m_root = pattern;
  m_folders.push_back(m_root);
  m_folder = m_root + "/" + name;
  if (::mkdir(m_folder.c_str(), 0700) != 0) {
    const std::string why = errnoText();
    ::rmdir(m_root.c_str());  // (no destructor runs for a constructor that throws)
    throw std::runtime_error(what + ": cannot make " + m_folder + ": " + why);
  }
  m_folders.push_back(m_folder);
}

SkeletonFolder::~SkeletonFolder() {
  for (const std::string& f : m_files) ::unlink(f.c_str());
  for (auto it = m_folders.rbegin(); it != m_folders.rend(); ++it) ::rmdir(it->c_str());
}

std::string SkeletonFolder::path(const std::string& rel) const {
  return rel.empty() ? m_folder : m_folder + "/" + rel;
}

void SkeletonFolder::add(const std::string& file, uint64_t size,
                         const std::vector<SkeletonPart>& parts) {
  const std::string what = m_what + ": the file '" + file.substr(0, 200) + "'";
  // Its folders, made as needed; every component plain.
  std::string at = m_folder;
  size_t from = 0;
  while (true) {
    const size_t slash = file.find('/', from);
    const std::string c = file.substr(from, slash == std::string::npos ? slash : slash - from);
    if (!plainComponent(c) || c.size() > 255)
      throw std::runtime_error(what + " is not a plain path inside the checkpoint's folder");
    at += "/" + c;
    if (slash == std::string::npos) break;
    if (::mkdir(at.c_str(), 0700) == 0) {
      m_folders.push_back(at);
    } else if (errno != EEXIST) {
      throw std::runtime_error(what + ": cannot make " + at + ": " + errnoText());
    }
    from = slash + 1;
  }
  checkSkeletonParts(what, size, parts);
  // A folder of ours, made above: O_EXCL refuses a name sent twice (or a
  // folder's name as a file), O_NOFOLLOW anything that is not our own.
  const int fd = ::open(at.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::runtime_error(
        what + (errno == EEXIST ? " is sent twice" : ": cannot write " + at + ": " + errnoText()));
  m_files.push_back(at);
  auto failed = [&](const char* doing) {
    const std::string why = errnoText();
    ::close(fd);
    throw std::runtime_error(what + ": cannot " + doing + " " + at + ": " + why);
  };
  // Its size first: what did not travel is a hole, not written.
  if (::ftruncate(fd, off_t(size)) != 0) failed("size");
  for (const SkeletonPart& p : parts) {
    size_t done = 0;
    while (done < p.bytes.size()) {
      const ssize_t n =
          ::pwrite(fd, p.bytes.data() + done, p.bytes.size() - done, off_t(p.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) failed("write");
      done += size_t(n);
    }
  }
  if (::close(fd) != 0)
    throw std::runtime_error(what + ": cannot write " + at + ": " + errnoText());
}

std::string SkeletonFolder::asHost(std::string text, const std::string& hostBase) const {
  if (m_folder.empty() || hostBase.empty()) return text;
  for (size_t at = text.find(m_folder); at != std::string::npos;
       at = text.find(m_folder, at + hostBase.size()))
    text.replace(at, m_folder.size(), hostBase);
  return text;
}

}  // namespace ckpt::remote
