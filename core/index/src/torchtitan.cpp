#include "ckpt/index/torchtitan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace fs = std::filesystem;

namespace ckpt {

std::optional<std::string> torchtitanRunOf(const std::string& checkpointFolder) {
  const fs::path p = fs::path(checkpointFolder).lexically_normal();
  // checkpoint_id = os.path.join(dump_folder, checkpoint.folder ("checkpoint"), f"step-{step}")
  const std::string name = p.filename().string();
  constexpr std::string_view prefix = "step-";
  if (!name.starts_with(prefix) || name.size() == prefix.size() ||
      !std::all_of(name.begin() + std::ptrdiff_t(prefix.size()), name.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  if (!p.has_parent_path() || p.parent_path().filename() != "checkpoint" ||
      !p.parent_path().has_parent_path())
    return std::nullopt;
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return std::nullopt;
  return p.parent_path().parent_path().string();
}

}  // namespace ckpt
