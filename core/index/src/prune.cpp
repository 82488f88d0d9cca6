#include "ckpt/index/prune.h"

#include "ckpt/format/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

namespace fs = std::filesystem;

namespace ckpt {
namespace {

std::optional<double> metricOf(const CheckpointEntry& e, const std::string& metric) {
  if (const auto it = e.scalars.find(metric); it != e.scalars.end()) return it->second;
  if (metric == "loss" && e.loss) return e.loss;
  return std::nullopt;
}

bool higherIsBetter(const std::string& metric) {
  return metric.find("acc") != std::string::npos;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

PrunePlan planPrune(const RunEntry& run, const PruneRules& rules) {
  if (rules.keepLast < 0) throw std::invalid_argument("--keep-last must be 0 or more");
  if (rules.every < 0) throw std::invalid_argument("--every must be 0 or more");
  if (rules.keepBest.empty() && rules.keepLast == 0 && rules.every == 0)
    throw std::invalid_argument("say what to keep: --keep-best METRIC, --keep-last N or --every K");

  const std::vector<CheckpointEntry>& cps = run.checkpoints;
  std::vector<std::vector<std::string>> reasons(cps.size());
  // Step checkpoints: the only ones a rule may let go.
  std::vector<size_t> steps;
  for (size_t i = 0; i < cps.size(); ++i) {
    const CheckpointEntry& e = cps[i];
    if (!e.error.empty())
      reasons[i].push_back("unreadable");
    else if (e.kind != CheckpointKind::Step || !e.step)
      reasons[i].push_back(e.kind == CheckpointKind::Unknown
                               ? "no step"
                               : std::string(checkpointKindName(e.kind)) + " checkpoint");
    else
      steps.push_back(i);
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [&](size_t a, size_t b) { return *cps[a].step < *cps[b].step; });

  PrunePlan plan;
  plan.runDir = fs::absolute(run.path).lexically_normal().string();
  if (!rules.keepBest.empty()) {
    std::optional<size_t> best;
    for (size_t i = 0; i < cps.size(); ++i) {
      const auto v = cps[i].error.empty() ? metricOf(cps[i], rules.keepBest) : std::nullopt;
      if (!v || std::isnan(*v)) continue;  // a NaN is never the best
      const auto bv = best ? metricOf(cps[*best], rules.keepBest) : std::nullopt;
      if (!best || (higherIsBetter(rules.keepBest) ? *v > *bv : *v < *bv)) best = i;
    }
    if (!best) {
      std::set<std::string> recorded;
      for (const CheckpointEntry& e : cps) {
        for (const auto& [k, v] : e.scalars) recorded.insert(k);
        if (e.loss) recorded.insert("loss");
      }
      std::string names;
      for (const std::string& k : recorded) names += (names.empty() ? "" : ", ") + k;
      throw std::runtime_error(
          run.path + ": no checkpoint records " + rules.keepBest +
          (names.empty() ? " (they record no metric)" : " (they record " + names + ")"));
    }
    plan.bestValue = metricOf(cps[*best], rules.keepBest);
    plan.bestFile = fs::path(cps[*best].path).filename().string();
    reasons[*best].push_back("best " + rules.keepBest + " " + number(*plan.bestValue));
  }
  if (rules.keepLast > 0) {
    const size_t n = std::min(steps.size(), size_t(rules.keepLast));
    for (size_t k = steps.size() - n; k < steps.size(); ++k)
      reasons[steps[k]].push_back("last " + std::to_string(rules.keepLast));
  }
  if (rules.every > 0)
    for (size_t i : steps)
      if (*cps[i].step % rules.every == 0)
        reasons[i].push_back("every " + std::to_string(rules.every));
  // Every stage's final: the highest step of each stage (checkpoints without
  // a stage are one stage of their own).
  std::map<std::string, size_t> stageLast;
  for (size_t i : steps) stageLast[cps[i].stage.value_or("")] = i;  // steps ascend: the last wins
  if (stageLast.size() > 1 || (stageLast.size() == 1 && !stageLast.begin()->first.empty()))
    for (const auto& [stage, i] : stageLast)
      reasons[i].push_back(stage.empty() ? "final of the checkpoints without a stage"
                                         : "final of stage " + stage);
  // The newest: where a resume of the run starts.
  if (!steps.empty()) reasons[steps.back()].push_back("newest");
  // The trainer's own best (trainer_state.json's best_model_checkpoint, a
  // ModelCheckpoint's best_model_path): what load_best_model_at_end, the
  // Trainer's own rotation and Lightning's ckpt_path="best" keep.
  for (size_t i = 0; i < cps.size(); ++i)
    if (cps[i].best) reasons[i].push_back("best by " + cps[i].bestSource);

  // A link to another checkpoint (best.pt -> step_100.pt, Lightning's
  // save_last="link", mmcv's latest.pth): what it names is kept with it, or
  // the kept link would name nothing; the link itself frees nothing.
  std::vector<std::string> target(cps.size());
  std::vector<uint8_t> isLink(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    const std::string& what = cps[i].folder.empty() ? cps[i].path : cps[i].folder;
    std::error_code ec;
    isLink[i] = fs::is_symlink(what, ec);
    const fs::path t = fs::weakly_canonical(what, ec);
    target[i] = ec ? fs::absolute(what).lexically_normal().string() : t.string();
  }
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!isLink[i] || reasons[i].empty()) continue;
    for (size_t j = 0; j < cps.size(); ++j)
      if (j != i && target[j] == target[i])
        reasons[j].push_back("linked to by " + fs::path(cps[i].path).filename().string());
  }

  for (size_t i = 0; i < cps.size(); ++i) {
    PruneFile f;
    // A checkpoint that is a folder (a Trainer's checkpoint-<step>/) goes whole.
    const std::string& what = cps[i].folder.empty() ? cps[i].path : cps[i].folder;
    f.path = fs::absolute(what).lexically_normal().string();
    f.name = fs::path(f.path).filename().string();
    f.step = cps[i].step;
    f.size = isLink[i] ? 0 : cps[i].size;
    f.reasons = reasons[i];
    if (f.reasons.empty()) {
      plan.freedBytes += f.size;
      plan.remove.push_back(std::move(f));
    } else {
      plan.keptBytes += f.size;
      plan.keep.push_back(std::move(f));
    }
  }
  return plan;
}

PrunePlan planPrune(const std::string& runDir, const PruneRules& rules) {
  const fs::path dir = fs::absolute(runDir).lexically_normal();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(runDir + ": not a directory");
  const RunEntry run = scanRunDirectory(dir.parent_path().string(), dir.string());
  if (run.checkpoints.empty()) throw std::runtime_error(runDir + ": no checkpoints");
  return planPrune(run, rules);
}

std::string describePlan(const PrunePlan& plan) {
  // By step, keep and trash interleaved: the run as the browser lists it.
  std::vector<std::pair<const PruneFile*, bool>> rows;
  for (const PruneFile& f : plan.keep) rows.emplace_back(&f, true);
  for (const PruneFile& f : plan.remove) rows.emplace_back(&f, false);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.first->step.value_or(INT64_MAX) < b.first->step.value_or(INT64_MAX);
  });
  std::string out;
  for (const auto& [f, kept] : rows) {
    std::string why;
    for (const std::string& r : f->reasons) why += (why.empty() ? "" : ", ") + r;
    char line[64];
    std::snprintf(line, sizeof line, "%-6s %9s  ", kept ? "keep" : "trash",
                  humanBytes(f->size).c_str());
    out += line + f->name + (why.empty() ? "" : "  (" + why + ")") + "\n";
  }
  out += std::to_string(plan.remove.size()) + " of " +
         std::to_string(plan.keep.size() + plan.remove.size()) + " checkpoints to the trash, " +
         humanBytes(plan.freedBytes) + " freed; " + std::to_string(plan.keep.size()) + " kept (" +
         humanBytes(plan.keptBytes) + ")\n";
  return out;
}

}  // namespace ckpt
