#include "ckpt/index/metrics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ckpt/index/run_plan.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using Points = std::vector<std::pair<std::string, MetricPoint>>;

// Files grow while a run trains: cap what one call reads.
constexpr uint64_t kMaxRead = 256ull << 20;

// The complete lines of `path` from `offset` on; `*end` is where the next
// read continues (just after the last newline).
std::string completeLines(const std::string& path, uint64_t offset, uint64_t* end) {
  if (end) *end = offset;
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(std::max<std::streamoff>(0, in.tellg()));
  if (size < offset) offset = 0;  // truncated and rewritten: start over
  const uint64_t length = std::min(size - offset, kMaxRead);
  std::string text(length, '\0');
  in.seekg(std::streamoff(offset));
  in.read(text.data(), std::streamsize(length));
  text.resize(size_t(in.gcount()));
  const size_t lastNewline = text.rfind('\n');
  text.resize(lastNewline == std::string::npos ? 0 : lastNewline + 1);
  if (end) *end = offset + text.size();
  return text;
}

std::string canonicalMetric(std::string key) {
  if (key == "learning_rate") return "lr";
  return key;
}

std::optional<double> parseNumber(std::string_view s) {
  while (!s.empty() && (s.back() == '%' || s.back() == ',' || s.back() == ';')) s.remove_suffix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    if (s == "nan" || s == "NaN") return std::nan("");
    return std::nullopt;
  }
  return v;
}

void addPoints(std::map<std::string, std::vector<MetricPoint>>& into, const Points& points) {
  for (const auto& [metric, p] : points) into[metric].push_back(p);
}

// Sorted by step; the last point read for a step wins (a resumed run
// rewrites the steps after its checkpoint).
void normalise(std::vector<MetricPoint>& points) {
  std::stable_sort(points.begin(), points.end(), [](const MetricPoint& a, const MetricPoint& b) { return a.step < b.step; });
  std::vector<MetricPoint> out;
  out.reserve(points.size());
  for (const MetricPoint& p : points) {
    if (!out.empty() && out.back().step == p.step) out.back() = p;
    else out.push_back(p);
  }
  points = std::move(out);
}

bool isLogFile(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".log" || ext == ".out" || ext == ".err";
}

}  // namespace

std::string_view metricSourceName(MetricSource s) {
  switch (s) {
    case MetricSource::MetricsJsonl: return "metrics.jsonl";
    case MetricSource::ConsoleLog: return "log";
    case MetricSource::Checkpoint: return "checkpoint";
  }
  return "";
}

const MetricSeries* RunMetrics::find(const std::string& metric) const {
  for (const MetricSeries& s : series)
    if (s.metric == metric) return &s;
  return nullptr;
}

Points readMetricsJsonl(const std::string& path, uint64_t offset, uint64_t* end, std::vector<std::string>* problems) {
  Points out;
  const std::string text = completeLines(path, offset, end);
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    const size_t nl = text.find('\n', lineStart);
    const std::string_view line(text.data() + lineStart, nl - lineStart);
    const uint64_t at = offset + lineStart;
    lineStart = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
      if (problems) problems->push_back(path + ": byte " + std::to_string(at) + ": not a JSON object with an integer \"step\"");
      continue;
    }
    MetricPoint base;
    base.step = j["step"].get<int64_t>();
    if (j.contains("wall_time") && j["wall_time"].is_number()) base.wallTime = j["wall_time"].get<double>();
    if (j.contains("tokens") && j["tokens"].is_number()) base.tokens = j["tokens"].get<int64_t>();
    for (const auto& [key, value] : j.items()) {
      if (key == "step" || key == "wall_time" || key == "tokens" || !value.is_number()) continue;
      MetricPoint p = base;
      p.value = value.get<double>();
      out.emplace_back(canonicalMetric(key), p);
    }
  }
  return out;
}

Points readConsoleLog(const std::string& path, uint64_t offset, uint64_t* end) {
  Points out;
  const std::string text = completeLines(path, offset, end);
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    const size_t nl = text.find('\n', lineStart);
    const std::string_view line(text.data() + lineStart, nl - lineStart);
    lineStart = nl + 1;
    if (line.find("step=") == std::string_view::npos) continue;
    // key=value pairs separated by spaces (or commas / pipes).
    std::vector<std::pair<std::string, std::string_view>> pairs;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ',' || line[i] == '|' || line[i] == '\r')) ++i;
      const size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != ',' && line[i] != '|' && line[i] != '\r') ++i;
      const std::string_view token = line.substr(start, i - start);
      const size_t eq = token.find('=');
      if (eq == std::string_view::npos || eq == 0) continue;
      std::string key(token.substr(0, eq));
      if (!std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
        continue;
      pairs.emplace_back(std::move(key), token.substr(eq + 1));
    }
    std::optional<int64_t> step;
    for (const auto& [k, v] : pairs)
      if (k == "step")
        if (const auto n = parseNumber(v); n && *n >= 0 && *n == std::floor(*n)) step = int64_t(*n);
    if (!step) continue;
    for (const auto& [k, v] : pairs) {
      if (k == "step") continue;
      if (const auto n = parseNumber(v)) {
        MetricPoint p;
        p.step = *step;
        p.value = *n;
        out.emplace_back(canonicalMetric(k), p);
      }
    }
  }
  return out;
}

RunMetrics collectRunMetrics(const RunEntry& run) {
  RunMetrics m;
  m.run = run.name;
  m.path = run.path;
  std::map<std::string, std::vector<MetricPoint>> bySource[3];
  const fs::path dir(run.path);
  std::error_code ec;

  const fs::path jsonl = dir / "metrics.jsonl";
  if (fs::is_regular_file(jsonl, ec)) addPoints(bySource[0], readMetricsJsonl(jsonl.string(), 0, nullptr, &m.problems));
  // A branch (lineage.json, run_plan.h): its history before the branch point
  // is its parent's metrics.jsonl up to parent_step, and so on up the chain.
  try {
    std::optional<Lineage> lineage = readLineage(run.path);
    int64_t limit = lineage ? lineage->parentStep : 0;
    for (int depth = 0; lineage && depth < 16; ++depth) {
      std::vector<std::pair<std::string, MetricPoint>> earlier;
      const fs::path parentJsonl = fs::path(lineage->parentDir) / "metrics.jsonl";
      if (fs::is_regular_file(parentJsonl, ec))
        for (auto& point : readMetricsJsonl(parentJsonl.string(), 0, nullptr, &m.problems))
          if (point.second.step <= limit) earlier.push_back(std::move(point));
      addPoints(bySource[0], earlier);
      lineage = readLineage(lineage->parentDir);
      if (lineage) limit = std::min(limit, lineage->parentStep);
    }
  } catch (const std::exception& e) {
    m.problems.push_back(e.what());
  }

  // Logs in the run's directory, and next to it when named after the run.
  std::vector<fs::path> logs;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && isLogFile(e.path())) logs.push_back(e.path());
  const std::string base = dir.filename().string();
  if (!base.empty() && dir.has_parent_path())
    for (const auto& e : fs::directory_iterator(dir.parent_path(), ec))
      if (e.is_regular_file(ec) && isLogFile(e.path()) && e.path().filename().string().rfind(base, 0) == 0)
        logs.push_back(e.path());
  std::sort(logs.begin(), logs.end());
  for (const fs::path& log : logs) addPoints(bySource[1], readConsoleLog(log.string()));

  for (const CheckpointEntry& c : run.checkpoints) {
    if (!c.error.empty() || !c.step) continue;
    m.checkpointSteps.push_back(*c.step);
    for (const auto& [key, value] : c.scalars) {
      if (key == "tokens_seen") continue;
      MetricPoint p;
      p.step = *c.step;
      p.value = value;
      if (const auto t = c.scalars.find("tokens_seen"); t != c.scalars.end()) p.tokens = int64_t(t->second);
      bySource[2][canonicalMetric(key)].push_back(p);
    }
  }
  std::sort(m.checkpointSteps.begin(), m.checkpointSteps.end());
  m.checkpointSteps.erase(std::unique(m.checkpointSteps.begin(), m.checkpointSteps.end()), m.checkpointSteps.end());

  // One series per metric, from the most detailed source that has it.
  const MetricSource order[3] = {MetricSource::MetricsJsonl, MetricSource::ConsoleLog, MetricSource::Checkpoint};
  for (int s = 0; s < 3; ++s) {
    for (auto& [metric, points] : bySource[s]) {
      if (m.find(metric)) continue;
      MetricSeries series;
      series.metric = metric;
      series.source = order[s];
      series.points = std::move(points);
      normalise(series.points);
      m.series.push_back(std::move(series));
    }
  }
  std::sort(m.series.begin(), m.series.end(), [](const MetricSeries& a, const MetricSeries& b) { return a.metric < b.metric; });
  return m;
}

EmaSmoother::EmaSmoother(double smoothing)
    : m_w(std::clamp(smoothing, 0.0, 0.999999)), m_debiasing(m_w > 0) {}

double EmaSmoother::next(double x) {
  if (!std::isfinite(x)) return x;
  m_last = m_last * m_w + (1 - m_w) * x;
  ++m_count;
  double debias = 1.0;
  // Once w^count is below half an ulp of 1, 1 - w^count is exactly 1: stop
  // calling pow (deep in its underflow path it is slow: most of a live
  // update of a million-point curve was spent there).
  if (m_debiasing) {
    const double wn = std::pow(m_w, double(m_count));
    debias = 1.0 - wn;
    if (wn < 1e-17) m_debiasing = false;
  }
  return m_last / debias;
}

std::vector<double> smoothEma(const std::vector<double>& values, double smoothing) {
  std::vector<double> out;
  out.reserve(values.size());
  EmaSmoother ema(smoothing);
  for (double x : values) out.push_back(ema.next(x));
  return out;
}

}  // namespace ckpt
