#include "ckpt/index/filesystem_kind.h"

#include <sys/vfs.h>

#include <cstdint>
#include <utility>

namespace ckpt {

std::optional<std::string> networkFilesystem(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return std::nullopt;
  // The magic numbers of linux/magic.h (and of the out-of-tree Lustre,
  // GPFS and BeeGFS modules), as coreutils' `stat -f` names them.
  static constexpr std::pair<uint32_t, const char*> kRemote[] = {
      {0x6969, "nfs"},        {0xFF534D42, "cifs"}, {0x517B, "smb"},        {0xFE534D42, "smb2"},
      {0x65735546, "fuse"},   {0x01021997, "9p"},   {0x00C36400, "ceph"},   {0x5346414F, "afs"},
      {0x0BD00BD0, "lustre"}, {0x47504653, "gpfs"}, {0x19830326, "beegfs"},
  };
  const auto type = uint32_t(fs.f_type);
  for (const auto& [magic, name] : kRemote)
    if (type == magic) return std::string(name);
  return std::nullopt;
}

}  // namespace ckpt
