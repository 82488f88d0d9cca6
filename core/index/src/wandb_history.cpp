// An older W&B SDK's wandb-history.jsonl (wandb.h): wandb before 0.10 wrote
// the run's history as one JSON object a line (wandb/history.py
// History._write: the logged keys, then `_runtime`, `_timestamp` and
// `_step`, through json.dumps, so NaN and Infinity bare), appended and
// flushed row by row while the run trains.
#include <fstream>
#include <nlohmann/json.hpp>

#include "ckpt/index/wandb.h"
#include "metric_text.h"
#include "python_json.h"
#include "wandb_values.h"

namespace ckpt {
namespace {

using Points = std::vector<std::pair<std::string, MetricPoint>>;

// How a line failed; "" for a row read (or one left out on purpose).
std::string readRow(std::string_view line, Points& out) {
  const nlohmann::json row = nlohmann::json::parse(detail::markNonFinite(line), nullptr, false);
  if (row.is_discarded()) return "not JSON";
  if (!row.is_object()) return "not a JSON object";
  // History.stream(name): rows of another series of steps, in the same file.
  if (row.contains("_stream")) return {};
  const auto step = row.find("_step");
  const std::optional<int64_t> s = step == row.end() ? std::nullopt : detail::integerOf(*step);
  if (!s) return "no integer \"_step\"";
  MetricPoint base;
  base.step = *s;
  if (const auto t = row.find("_timestamp"); t != row.end())
    if (const std::optional<double> wall = detail::numberOf(*t)) base.wallTime = *wall;
  for (auto it = row.begin(); it != row.end(); ++it) {
    if (it.key().empty() || detail::isWandbInternalKey(it.key())) continue;
    detail::flattenWandbNumbers(it.value(), it.key(), [&](const std::string& metric, double v) {
      MetricPoint p = base;
      p.value = v;
      out.emplace_back(metric, p);
    });
  }
  return {};
}

}  // namespace

bool isWandbHistoryJsonl(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1) ==
         "wandb-history.jsonl";
}

Points readWandbHistoryJsonl(const std::string& path, uint64_t offset, uint64_t* end,
                             std::vector<std::string>* problems, uint64_t* damaged) {
  Points out;
  uint64_t lineNumber = 0, bad = 0, readEnd = offset;
  auto problem = [&](uint64_t at, const std::string& why) {
    ++bad;
    if (problems)
      problems->push_back(path + ": byte " + std::to_string(at) + " (line " +
                          std::to_string(lineNumber) + (offset ? " from there" : "") + "): " + why +
                          ", skipped");
  };
  detail::forEachLineBlock(
      path, offset, &readEnd,
      [&](std::string_view text, uint64_t base) {
        for (size_t lineStart = 0; lineStart < text.size();) {
          const size_t nl = text.find('\n', lineStart);
          const std::string_view line = text.substr(lineStart, nl - lineStart);
          ++lineNumber;
          if (line.find_first_not_of(" \t\r") != std::string_view::npos)
            if (const std::string why = readRow(line, out); !why.empty())
              problem(base + lineStart, why);
          lineStart = nl + 1;
        }
      },
      [&](uint64_t at) {
        ++lineNumber;
        problem(at, "a line longer than " + std::to_string(detail::kMaxJsonlLine >> 20) + " MiB");
      });
  // What follows the last newline: a row cut short (a crash, a copy taken
  // while it was written) or one the SDK is still writing. Said once, on a
  // read from the start; a later read from `end` takes it when it is whole.
  if (offset == 0) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    const std::streamoff size = in ? std::streamoff(in.tellg()) : 0;
    if (size > 0 && uint64_t(size) > readEnd) {
      ++lineNumber;
      problem(readEnd, std::string(kWandbHistoryCutShort));
    }
  }
  if (end) *end = readEnd;
  if (damaged) *damaged += bad;
  return out;
}

}  // namespace ckpt
