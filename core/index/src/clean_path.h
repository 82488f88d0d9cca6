#pragma once
// A path as one identity, whichever way it was typed ("ml", "./ml/", an
// absolute path): absolute and lexically normal, without a trailing
// separator (metrics.cpp's sources, mlflow.cpp's metric names).

#include <filesystem>
#include <string>

namespace ckpt::detail {

inline std::filesystem::path cleanPath(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path.empty() ? fs::path(".") : fs::path(path), ec).lexically_normal();
  if (ec) p = fs::path(path).lexically_normal();
  if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

}  // namespace ckpt::detail
