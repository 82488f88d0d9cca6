#include "ckpt/index/experiment.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <set>

#include "ascii.h"

namespace ckpt {
namespace {

// Stages in training order. Names on one rank are alternatives.
struct StageWord {
  std::string_view word;
  int rank;
};
constexpr StageWord kStages[] = {
    {"pretrain", 1}, {"pretraining", 1}, {"midtrain", 2}, {"cpt", 2},      {"sft", 3},
    {"instruct", 3}, {"dpo", 4},         {"ipo", 4},      {"kto", 4},      {"orpo", 4},
    {"simpo", 4},    {"rm", 5},          {"reward", 5},   {"verifier", 5}, {"rlhf", 6},
    {"ppo", 6},      {"grpo", 6},        {"rloo", 6},     {"rl", 6},       {"distill", 7},
    {"merge", 8},
};
constexpr int kUnknownRank = 100;

// "@200" or "@200-2" at the end of `name`: its length, 0 when none.
size_t branchSuffixLength(std::string_view name) {
  const size_t at = name.rfind('@');
  if (at == std::string_view::npos || at == 0) return 0;
  std::string_view rest = name.substr(at + 1);
  // At most 18 digits: a step that fits an int64_t (branchKey parses it).
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 18 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const size_t dash = rest.find('-');
  if (dash == std::string_view::npos
          ? !digits(rest)
          : !digits(rest.substr(0, dash)) || !digits(rest.substr(dash + 1)))
    return 0;
  return name.size() - at;
}

// The step of a branch suffix ("@200-2" -> 200, 2), for ordering.
std::pair<int64_t, int64_t> branchKey(const std::string& branch) {
  if (branch.empty()) return {-1, 0};
  const size_t dash = branch.find('-');
  const int64_t step =
      std::stoll(branch.substr(1, dash == std::string::npos ? std::string::npos : dash - 1));
  const int64_t n = dash == std::string::npos ? 1 : std::stoll(branch.substr(dash + 1));
  return {step, n};
}

}  // namespace

bool isStageWord(std::string_view word) {
  const std::string w = detail::asciiLower(word);
  return std::any_of(std::begin(kStages), std::end(kStages),
                     [&](const StageWord& s) { return s.word == w; });
}

int stageRank(std::string_view stage) {
  if (stage.empty()) return 0;
  const std::string w = detail::asciiLower(stage);
  for (const StageWord& s : kStages)
    if (s.word == w) return s.rank;
  return kUnknownRank;
}

StageName splitStageName(std::string_view runName) {
  StageName out;
  const size_t branchLen = branchSuffixLength(runName);
  out.branch = std::string(runName.substr(runName.size() - branchLen));
  const std::string_view base = runName.substr(0, runName.size() - branchLen);
  // The last '-' or '_' of the last path component.
  const size_t slash = base.rfind('/');
  const size_t from = slash == std::string_view::npos ? 0 : slash + 1;
  const size_t sep = base.find_last_of("-_");
  if (sep != std::string_view::npos && sep > from && sep + 1 < base.size() &&
      isStageWord(base.substr(sep + 1))) {
    out.family = std::string(base.substr(0, sep));
    out.stage = detail::asciiLower(base.substr(sep + 1));
  } else {
    out.family = std::string(base);
  }
  return out;
}

std::string stageRunName(std::string_view parentRun, std::string_view stage) {
  return splitStageName(parentRun).family + "-" + std::string(stage);
}

std::vector<std::string> familiesOf(const std::vector<std::string>& runNames) {
  std::map<std::string, int> members, marked;
  std::vector<StageName> split;
  split.reserve(runNames.size());
  for (const std::string& n : runNames) {
    split.push_back(splitStageName(n));
    ++members[split.back().family];
    if (!split.back().stage.empty() || !split.back().branch.empty()) ++marked[split.back().family];
  }
  std::vector<std::string> out;
  out.reserve(runNames.size());
  for (const StageName& s : split)
    out.push_back(members[s.family] >= 2 && marked[s.family] >= 1 ? s.family : std::string());
  return out;
}

bool stageBefore(const StageName& a, const StageName& b) {
  const int ra = stageRank(a.stage), rb = stageRank(b.stage);
  if (ra != rb) return ra < rb;
  if (a.stage != b.stage) return a.stage < b.stage;
  return branchKey(a.branch) < branchKey(b.branch);
}

std::vector<const CheckpointEntry*> checkpointChain(
    const std::vector<CheckpointEntry>& checkpoints) {
  std::set<int64_t> steps;
  auto isCopy = [](const CheckpointEntry& c) {
    return c.kind == CheckpointKind::Best || c.kind == CheckpointKind::Latest;
  };
  for (const CheckpointEntry& c : checkpoints)
    if (c.step && c.error.empty() && !isCopy(c)) steps.insert(*c.step);
  std::vector<const CheckpointEntry*> chain;
  for (const CheckpointEntry& c : checkpoints) {
    if (!c.error.empty()) continue;
    if (isCopy(c) && c.step && steps.count(*c.step)) continue;
    chain.push_back(&c);
  }
  return chain;
}

}  // namespace ckpt
