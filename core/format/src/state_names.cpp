#include "ckpt/format/state_names.h"

namespace ckpt {
namespace {

constexpr std::string_view kDdp = "module.";
constexpr std::string_view kCompiled = "_orig_mod.";
constexpr int kMaxLevels = 8;

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.size() > prefix.size() && s.substr(0, prefix.size()) == prefix;
}

}  // namespace

StateNames normaliseStateNames(const std::vector<std::string_view>& keys) {
  StateNames out;
  std::vector<std::string_view> rest(keys.begin(), keys.end());
  // Wrapper levels every key shares.
  for (int level = 0; level < kMaxLevels && !rest.empty(); ++level) {
    std::string_view wrapper;
    for (std::string_view w : {kDdp, kCompiled}) {
      bool all = true;
      for (std::string_view k : rest)
        if (!startsWith(k, w)) {
          all = false;
          break;
        }
      if (all) {
        wrapper = w;
        break;
      }
    }
    if (wrapper.empty()) break;
    for (std::string_view& k : rest) k.remove_prefix(wrapper.size());
    (wrapper == kDdp ? out.ddp : out.compiled) = true;
  }
  // A compile wrapper on part of the keys.
  out.names.reserve(rest.size());
  for (std::string_view k : rest) {
    for (int level = 0; level < kMaxLevels && startsWith(k, kCompiled); ++level) {
      k.remove_prefix(kCompiled.size());
      out.compiled = true;
    }
    out.names.emplace_back(k);
  }
  return out;
}

StateNames normaliseStateNames(const std::vector<std::string>& keys) {
  return normaliseStateNames(std::vector<std::string_view>(keys.begin(), keys.end()));
}

std::string describeWrapping(bool ddp, bool compiled) {
  if (ddp && compiled)
    return "saved from a DDP-wrapped / compiled model (module. and _orig_mod. stripped)";
  if (ddp) return "saved from a DDP-wrapped model (module. stripped)";
  if (compiled) return "saved from a compiled model (_orig_mod. stripped)";
  return {};
}

}  // namespace ckpt
