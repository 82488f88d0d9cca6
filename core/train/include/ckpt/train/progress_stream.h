#pragma once
// The ranks' machine-readable progress: with --progress-json, ckptscope-train
// prints what it prepared (every rank), each step and the outcome (rank 0)
// as one line each, "ckptscope-progress {json}", among its other output.
// The Train panel's plugin reads them back from the launcher's merged
// output (runLocalRanks, launch.h). No LibTorch, no Qt.

#include <optional>
#include <string>

#include "ckpt/train/trainer.h"

namespace ckpt {

std::string progressLine(const TrainJobInfo& info);  // {"event": "prepared", ...}
std::string progressLine(const StepReport& step);    // {"event": "step", ...}
std::string progressLine(const RunResult& result);   // {"event": "result", ...}

struct ProgressEvent {
  enum class Kind { Prepared, Step, Result };
  Kind kind = Kind::Step;
  TrainJobInfo info;  // Prepared
  StepReport step;    // Step
  RunResult result;   // Result
};

// The event a line carries; nullopt for any other line (a log line, an
// error message, a progress line cut short).
std::optional<ProgressEvent> parseProgressLine(const std::string& line);

}  // namespace ckpt
