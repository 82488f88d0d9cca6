// Which of a console log's lines belong to a run, as Points (moved out of
// metric_readers.cpp, which reads the lines).
#include <algorithm>

#include "ckpt/index/metrics.h"

namespace ckpt {

using Points = std::vector<std::pair<std::string, MetricPoint>>;

bool LogFilter::accepts(const std::string& loggedRun) const {
  if (loggedRun.empty()) return unnamedLines;
  return std::find(names.begin(), names.end(), loggedRun) != names.end();
}

Points readConsoleLog(const std::string& path, const LogFilter& filter, uint64_t offset,
                      uint64_t* end) {
  Points out;
  for (LoggedPoint& p : readConsoleLogLines(path, offset, end))
    if (filter.accepts(p.run)) out.emplace_back(std::move(p.metric), p.point);
  return out;
}

Points readConsoleLog(const std::string& path, uint64_t offset, uint64_t* end) {
  Points out;
  for (LoggedPoint& p : readConsoleLogLines(path, offset, end))
    out.emplace_back(std::move(p.metric), p.point);
  return out;
}

}  // namespace ckpt
