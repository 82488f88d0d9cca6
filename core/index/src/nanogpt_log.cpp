#include "nanogpt_log.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

namespace ckpt::detail {
namespace {

std::optional<double> numberOf(std::string_view s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// "<word> <digits>: " at the line's start: the digits.
std::optional<int64_t> headStep(std::string_view& line, std::string_view word) {
  if (line.substr(0, word.size()) != word) return std::nullopt;
  size_t i = word.size();
  int64_t step = 0;
  const size_t first = i;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9' && i - first < 18)
    step = step * 10 + (line[i++] - '0');
  if (i == first || line.substr(i, 2) != ": ") return std::nullopt;
  line.remove_prefix(i + 2);
  return step;
}

void add(std::vector<LoggedPoint>& out, const char* metric, int64_t step, double value) {
  LoggedPoint p;
  p.metric = metric;
  p.point.step = step;
  p.point.value = value;
  out.push_back(std::move(p));
}

}  // namespace

bool parseNanoGptLine(std::string_view line, std::vector<LoggedPoint>& out) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  std::string_view rest = line;
  const std::optional<int64_t> iter = headStep(rest, "iter ");
  const std::optional<int64_t> step = iter ? std::nullopt : headStep(rest, "step ");
  if (!iter && !step) return false;
  // ", "-separated "<name> <value>" fields; the value is the last word.
  bool any = false;
  std::vector<LoggedPoint> points;
  while (!rest.empty()) {
    const size_t comma = rest.find(", ");
    const std::string_view field = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
    const size_t space = field.rfind(' ');
    if (space == std::string_view::npos) continue;
    const std::string_view name = field.substr(0, space);
    std::string_view text = field.substr(space + 1);
    std::optional<double> value;
    const char* metric = nullptr;
    if (iter && name == "loss") {
      metric = "loss";
    } else if (iter && name == "mfu" && text.ends_with('%')) {
      metric = "mfu";
      text.remove_suffix(1);
    } else if (step && name == "train loss") {
      metric = "train_loss";
    } else if (step && name == "val loss") {
      metric = "val_loss";
    }
    if (metric) value = numberOf(text);
    if (!value) continue;
    if (metric == std::string_view("mfu")) {
      if (*value >= 0) add(points, metric, *iter, *value);
      continue;
    }
    add(points, metric, iter ? *iter : *step, *value);
    any = true;
  }
  // "iter 5: ..." or "step 5: ..." without nanoGPT's losses is someone else's line.
  if (!any) return false;
  for (LoggedPoint& p : points) out.push_back(std::move(p));
  return true;
}

}  // namespace ckpt::detail
