#include "ckpt/index/folder_listing.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstring>

namespace ckpt {

std::vector<FolderEntry> listFolder(const std::string& dir, size_t limit) {
  std::vector<FolderEntry> out;
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (!d) return out;
  const int fd = ::dirfd(d);
  while (out.size() < limit) {
    const dirent* e = ::readdir(d);
    if (!e) break;
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    FolderEntry f;
    f.name = e->d_name;
    unsigned char type = e->d_type;
    if (type == DT_LNK || type == DT_UNKNOWN) {
      struct stat st {};
      type = ::fstatat(fd, e->d_name, &st, 0) != 0 ? DT_UNKNOWN
             : S_ISREG(st.st_mode)                 ? DT_REG
             : S_ISDIR(st.st_mode)                 ? DT_DIR
                                                   : DT_UNKNOWN;
    }
    f.regular = type == DT_REG;
    f.directory = type == DT_DIR;
    out.push_back(std::move(f));
  }
  ::closedir(d);
  return out;
}

const std::vector<FolderEntry>& FolderListings::list(const std::string& dir) {
  Slot* slot;
  {
    const std::lock_guard lock(m_mutex);
    auto& s = m_slots[dir];
    if (!s) s = std::make_unique<Slot>();
    slot = s.get();
  }
  std::call_once(slot->once, [&] { slot->entries = listFolder(dir); });
  return slot->entries;
}

}  // namespace ckpt
