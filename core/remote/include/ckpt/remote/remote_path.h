#pragma once
// Where a path lives: here, or on a host reached through ssh.
//   ssh://[user@]host[:port]/path   always remote ("ssh://host/~/x": x in the
//                                   home folder, as scp reads it)
//   [user@]host:/path               remote only when no local file or folder
//                                   of that name exists and `host` has no '/'
//                                   (so "./a:b" and "dir/x:y" stay local)

#include <optional>
#include <string>

namespace ckpt::remote {

struct RemotePath {
  std::string user;  // "" when not given (ssh's own default)
  std::string host;
  int port = 0;  // 0 when not given
  std::string path;

  // "[user@]host[:port]": two remote paths with the same endpoint share one agent.
  [[nodiscard]] std::string endpoint() const;
  // "ssh://..." as a person would write it back.
  [[nodiscard]] std::string display() const;
  // The same for another path on this host ("ssh://host/~/x" for one in
  // the home folder, which parseRemotePath reads back as "x").
  [[nodiscard]] std::string locationOf(const std::string& other) const;
};

// The remote path `arg` names, or nothing when it is a local path. Throws
// std::invalid_argument naming what is wrong with an ssh:// URL (no host,
// a bad port).
std::optional<RemotePath> parseRemotePath(const std::string& arg);

}  // namespace ckpt::remote
