#include "ckpt/format/megatron_names.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <tuple>

namespace fs = std::filesystem;

namespace ckpt {
namespace {

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

std::optional<int64_t> megatronIterationOf(std::string_view name) {
  constexpr std::string_view prefix = "iter_";
  if (!name.starts_with(prefix)) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  // The writer pads to 7 digits; an iteration past 9,999,999 has more.
  if (digits.size() < 7 || digits.size() > 18 || !allDigits(digits)) return std::nullopt;
  int64_t v = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return v;
}

bool isMegatronRankName(std::string_view name) {
  constexpr std::string_view prefix = "mp_rank_";
  if (!name.starts_with(prefix)) return false;
  std::string_view rest = name.substr(prefix.size());
  // Tensor rank (2 digits), then up to two _<3 digits> (pipeline, expert).
  if (rest.size() < 2 || !allDigits(rest.substr(0, 2))) return false;
  rest.remove_prefix(2);
  for (int extra = 0; extra < 2 && !rest.empty(); ++extra) {
    if (rest.size() < 4 || rest[0] != '_' || !allDigits(rest.substr(1, 3))) return false;
    rest.remove_prefix(4);
  }
  return rest.empty();
}

std::optional<MegatronRank> parseMegatronRank(std::string_view name) {
  if (!isMegatronRankName(name)) return std::nullopt;
  const auto number = [](std::string_view digits) {
    int v = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return v;
  };
  std::string_view rest = name.substr(std::string_view("mp_rank_").size());
  MegatronRank r;
  r.tensor = number(rest.substr(0, 2));
  if (rest.size() >= 6) r.pipeline = number(rest.substr(3, 3));
  if (rest.size() >= 10) r.expert = number(rest.substr(7, 3));
  return r;
}

std::vector<std::string> megatronRankFolders(const std::string& saveDir) {
  fs::path dir = fs::path(saveDir).lexically_normal();
  if (dir.filename().empty() && dir.has_parent_path()) dir = dir.parent_path();
  const std::string save = dir.filename().string();
  if (save != "release" && !megatronIterationOf(save)) return {};
  std::vector<std::pair<MegatronRank, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(saveDir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::optional<MegatronRank> rank = parseMegatronRank(name);
    std::error_code fec;
    if (rank && fs::is_regular_file(it->path() / "model_optim_rng.pt", fec))
      found.emplace_back(*rank, name);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.pipeline, a.first.tensor, a.first.expert) <
           std::tie(b.first.pipeline, b.first.tensor, b.first.expert);
  });
  std::vector<std::string> out;
  for (auto& [rank, name] : found) out.push_back(std::move(name));
  return out;
}

bool isMegatronRankFile(const std::string& path) {
  // Names first: fs::absolute asks the kernel for the working directory,
  // which every file of a listing paid twice.
  if (path.find("model_optim_rng.pt") == std::string::npos &&
      path.find("distrib_optim.pt") == std::string::npos)
    return false;
  const fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  const std::string file = p.filename().string();
  if (file != "model_optim_rng.pt" && file != "distrib_optim.pt") return false;
  const fs::path rank = p.parent_path();
  if (!isMegatronRankName(rank.filename().string())) return false;
  const std::string save = rank.parent_path().filename().string();
  return save == "release" || megatronIterationOf(save).has_value();
}

bool isMegatronCommonFile(const std::string& path) {
  if (path.find("common.pt") == std::string::npos) return false;  // (as isMegatronRankFile)
  const fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  if (p.filename() != "common.pt") return false;
  const std::string save = p.parent_path().filename().string();
  return save == "release" || megatronIterationOf(save).has_value();
}

}  // namespace ckpt
