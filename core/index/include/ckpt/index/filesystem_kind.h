#pragma once

#include <optional>
#include <string>

namespace ckpt {

// The filesystem `path` is on, by statfs(2)'s f_type, where inotify cannot
// see what other machines write: "nfs", "cifs", "smb", "smb2", "fuse" (sshfs,
// rclone, ...), "9p", "ceph", "afs", "lustre", "gpfs", "beegfs". nullopt for
// a local filesystem, or when statfs fails (the caller watches as usual).
[[nodiscard]] std::optional<std::string> networkFilesystem(const std::string& path);

}  // namespace ckpt
