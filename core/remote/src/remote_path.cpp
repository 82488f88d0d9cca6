#include "ckpt/remote/remote_path.h"

#include <charconv>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ckpt::remote {

std::string RemotePath::endpoint() const {
  std::string s = user.empty() ? host : user + "@" + host;
  if (port) s += ":" + std::to_string(port);
  return s;
}

std::string RemotePath::display() const {
  return locationOf(path);
}

std::string RemotePath::locationOf(const std::string& other) const {
  // A path that is not absolute is in the home folder (where the agent
  // starts): ssh://host/~/x, which parseRemotePath reads back as "x".
  if (other.rfind('/', 0) == 0) return "ssh://" + endpoint() + other;
  if (other.empty() || other == ".") return "ssh://" + endpoint() + "/~";
  return "ssh://" + endpoint() + "/~/" + (other.rfind("./", 0) == 0 ? other.substr(2) : other);
}

namespace {

// "user@host" -> user, host.
void splitUser(const std::string& s, RemotePath& out) {
  const size_t at = s.rfind('@');
  if (at == std::string::npos) {
    out.host = s;
  } else {
    out.user = s.substr(0, at);
    out.host = s.substr(at + 1);
  }
}

}  // namespace

std::optional<RemotePath> parseRemotePath(const std::string& arg) {
  RemotePath r;
  if (arg.rfind("ssh://", 0) == 0) {
    const std::string rest = arg.substr(6);
    const size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    r.path = slash == std::string::npos ? "." : rest.substr(slash);
    // ssh://host/~/x: relative to the home folder, where the agent starts.
    if (r.path.rfind("/~/", 0) == 0) r.path = r.path.substr(3);
    if (r.path == "/~") r.path = ".";
    const size_t colon = authority.rfind(':');
    if (colon != std::string::npos && authority.find(']') == std::string::npos) {
      const std::string port = authority.substr(colon + 1);
      int p = 0;
      const auto res = std::from_chars(port.data(), port.data() + port.size(), p);
      if (res.ec != std::errc() || res.ptr != port.data() + port.size() || p < 1 || p > 65535)
        throw std::invalid_argument(arg + ": '" + port + "' is not a port (1-65535)");
      r.port = p;
      authority = authority.substr(0, colon);
    }
    splitUser(authority, r);
    if (r.host.empty()) throw std::invalid_argument(arg + ": no host after ssh://");
    return r;
  }
  // scp's host:path, only when nothing of that name is here.
  const size_t colon = arg.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  const std::string hostPart = arg.substr(0, colon);
  if (hostPart.find('/') != std::string::npos) return std::nullopt;
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(arg, ec))) return std::nullopt;
  splitUser(hostPart, r);
  if (r.host.empty()) return std::nullopt;
  r.path = arg.substr(colon + 1);
  if (r.path.empty()) r.path = ".";
  return r;
}

}  // namespace ckpt::remote
