#pragma once
// collectMetrics with its runs handed over one at a time, in order, as soon
// as each (and every run before it) is read: a caller that writes runs out
// (the agent's streamed `metrics`, the CLI printing them) starts before the
// last is read, and holds none it has written. No Qt.

#include <functional>
#include <string>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt {

// Called with each run in the order collectMetrics returns them; from the
// threads that read the runs, one call at a time. What it throws ends the
// collection and is rethrown once every thread has stopped.
using RunMetricsFn = std::function<void(RunMetrics&& run)>;

void collectMetrics(const std::vector<RunEntry>& runs, const std::vector<std::string>& extraLogs,
                    const RunMetricsFn& each);

}  // namespace ckpt
