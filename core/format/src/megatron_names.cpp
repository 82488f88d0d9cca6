#include "ckpt/format/megatron_names.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>

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

bool isMegatronRankFile(const std::string& path) {
  const fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  const std::string file = p.filename().string();
  if (file != "model_optim_rng.pt" && file != "distrib_optim.pt") return false;
  const fs::path rank = p.parent_path();
  if (!isMegatronRankName(rank.filename().string())) return false;
  const std::string save = rank.parent_path().filename().string();
  return save == "release" || megatronIterationOf(save).has_value();
}

bool isMegatronCommonFile(const std::string& path) {
  const fs::path p = fs::absolute(fs::path(path)).lexically_normal();
  if (p.filename() != "common.pt") return false;
  const std::string save = p.parent_path().filename().string();
  return save == "release" || megatronIterationOf(save).has_value();
}

}  // namespace ckpt
