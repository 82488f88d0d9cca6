#pragma once
// Pruning a run directory: which checkpoints a user's rules keep (the best by
// a metric, the last N, every K-th step, every stage's final, the newest),
// which go, and how many bytes that frees. The plan is the one home of the
// rules: ckptscope-cli prune and the app's Prune dialog both show it and
// carry it out with trashFiles (run_plan.h), never by deleting. No Qt, no
// LibTorch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/index/scanner.h"

namespace ckpt {

struct PruneRules {
  // Keep the checkpoint with the best recorded value of this metric (lowest;
  // highest for names containing "acc"): "val_loss", "loss", ... "" = no such rule.
  std::string keepBest;
  int keepLast = 0;   // keep the N step checkpoints of highest step
  int64_t every = 0;  // keep steps that are multiples of K (0: no such rule)
  // Always kept: every stage's final (its highest step), the newest
  // checkpoint (where a resume starts), files that are not step checkpoints
  // (final, best, latest), files that cannot be read and the best by the
  // trainer's own record (CheckpointEntry::best). A checkpoint that is a
  // folder (CheckpointEntry::folder) is pruned whole.
};

struct PruneFile {
  std::string path;  // absolute
  std::string name;  // file name
  std::optional<int64_t> step;
  uint64_t size = 0;
  // Why it is kept ("best val_loss 1.1000", "last 3", "every 500",
  // "final of stage sft", "newest", "final checkpoint", "unreadable"); empty
  // for a file that goes.
  std::vector<std::string> reasons;
};

struct PrunePlan {
  std::string runDir;
  std::vector<PruneFile> keep;    // by step, as the browser lists them
  std::vector<PruneFile> remove;  // by step
  uint64_t freedBytes = 0;        // sum of remove's sizes
  uint64_t keptBytes = 0;
  std::optional<double> bestValue;  // of rules.keepBest, when a rule
  std::string bestFile;             // file name of the best checkpoint
};

// Throws std::invalid_argument for rules that keep nothing by choice (no
// rule at all, keepLast or every negative) and std::runtime_error when
// keepBest names a metric that no checkpoint of the run records (the
// metrics they do record are named).
PrunePlan planPrune(const RunEntry& run, const PruneRules& rules);
// Scans `runDir` (its checkpoints, not below it) first.
PrunePlan planPrune(const std::string& runDir, const PruneRules& rules);

// The plan as ckptscope-cli prints it: one line per file ("keep"/"trash",
// size, name, reasons), then the totals.
std::string describePlan(const PrunePlan& plan);

}  // namespace ckpt
