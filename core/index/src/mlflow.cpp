#include "ckpt/index/mlflow.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ascii.h"
#include "ckpt/index/natural_order.h"
#include "clean_path.h"
#include "flat_yaml.h"
#include "small_file.h"
#include "text_cells.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

bool isDir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// Its first `limit` bytes ("" when it cannot be read).
std::string fileText(const fs::path& p, size_t limit = detail::kFlatYamlLimit) {
  const std::optional<detail::SmallFile> f = detail::readSmallFile(p, limit);
  return f ? f->text : std::string();
}

std::vector<std::string> filesUnder(const fs::path& folder) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!isDir(folder)) return out;
  for (fs::recursive_directory_iterator
           it(folder, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec)) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return naturalLess(a, b); });
  return out;
}

}  // namespace

bool isMlflowRunFolder(const std::string& dir) {
  const fs::path d = fs::path(dir);
  if (!detail::isRegularFile(d / "meta.yaml")) return false;
  if (!isDir(d / "metrics") && !isDir(d / "params") && !isDir(d / "tags")) return false;
  const fs::path parent = fs::absolute(d).lexically_normal().parent_path();
  return detail::isRegularFile(parent / "meta.yaml");
}

std::optional<std::string> mlflowRunOf(const std::string& path) {
  const fs::path p = fs::path(path).lexically_normal();
  // Only a path with an artifacts/ folder in it is looked at further.
  bool artifacts = false;
  for (const fs::path& part : p.parent_path()) artifacts |= part == "artifacts";
  if (!artifacts) return std::nullopt;
  // Looked for on the absolute path (a walk begun inside the run folder
  // gives "artifacts/checkpoints/e.pt"), the run returned in the form the
  // path was given: a relative walk's runs stay relative.
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec).lexically_normal();
  if (ec) return std::nullopt;
  int up = 1;  // levels from the file to `dir`
  for (fs::path dir = abs.parent_path(); dir.has_parent_path() && dir != dir.parent_path();
       dir = dir.parent_path(), ++up) {
    if (dir.filename() != "artifacts" || !isMlflowRunFolder(dir.parent_path().string())) continue;
    fs::path run = p;
    for (int i = 0; i <= up; ++i) {
      if (run.empty()) return dir.parent_path().string();  // above what was given
      run = run.parent_path();
    }
    return run.empty() ? std::string(".") : run.string();  // the walk's "." itself
  }
  return std::nullopt;
}

std::string mlflowRunName(const std::string& dir) {
  const fs::path d(dir);
  const std::map<std::string, std::string> meta = detail::flatYaml(d / "meta.yaml");
  if (const auto it = meta.find("run_name"); it != meta.end() && !it->second.empty())
    return it->second;
  if (const fs::path tag = d / "tags" / "mlflow.runName"; detail::isRegularFile(tag))
    if (std::string name = detail::trim(fileText(tag, 4096)); !name.empty()) return name;
  return fs::absolute(d).lexically_normal().filename().string();
}

std::vector<std::string> mlflowMetricFiles(const std::string& dir) {
  return filesUnder(fs::path(dir) / "metrics");
}

std::string mlflowMetricName(const std::string& runDir, const std::string& file) {
  // Both made absolute first: the run's folder as the user typed it
  // ("ml/mlruns/1/abc", "./ml") and its files as listed (absolute) gave ""
  // for every metric, which then merged as one series.
  const std::string name = detail::cleanPath(file)
                               .lexically_relative(detail::cleanPath(runDir) / "metrics")
                               .generic_string();
  if (name.empty() || name == "." || name.rfind("..", 0) == 0)
    return fs::path(file).filename().string();  // not under metrics/: its own name
  return name;
}

FileSeries readMlflowMetric(const std::string& path, const std::string& metric, uint64_t* end,
                            std::vector<std::string>* problems) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be opened");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  FileSeries s;
  s.metric = metric;
  size_t pos = 0;
  for (int64_t lineNo = 1;; ++lineNo) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a line still being written
    const std::string line = detail::trim(std::string_view(text).substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) continue;
    std::vector<std::string_view> parts;
    for (size_t b = 0; b <= line.size();) {
      const size_t sp = std::min(line.find(' ', b), line.size());
      parts.push_back(std::string_view(line).substr(b, sp - b));
      b = sp + 1;
    }
    const std::optional<int64_t> ts =
        parts.size() >= 2 ? detail::wholeInteger(parts[0]) : std::nullopt;
    const std::optional<double> value =
        parts.size() >= 2 ? detail::pythonFloat(parts[1]) : std::nullopt;
    const std::optional<int64_t> step =
        parts.size() == 3 ? detail::wholeInteger(parts[2]) : std::optional<int64_t>(0);
    if (parts.size() < 2 || parts.size() > 3 || !ts || !value || !step) {
      if (problems)
        problems->push_back(path + ": line " + std::to_string(lineNo) +
                            ": not 'timestamp value step'");
      continue;
    }
    MetricPoint p;
    p.step = *step;
    p.value = *value;
    p.wallTime = double(*ts) / 1000.0;
    addInFileOrder(s.points, s.restarts, p);
  }
  if (end) *end = pos;
  return s;
}

namespace {

// <dir>/<folder>/<key> files (params/, tags/): key -> the text written.
std::map<std::string, std::string> keyFiles(const std::string& dir, const char* folder) {
  std::map<std::string, std::string> out;
  const fs::path base = fs::path(dir) / folder;
  for (const std::string& f : filesUnder(base))
    out[fs::path(f).lexically_relative(base).generic_string()] = detail::trim(fileText(f));
  return out;
}

}  // namespace

std::map<std::string, std::string> readMlflowParams(const std::string& dir) {
  return keyFiles(dir, "params");
}

MlflowRunInfo readMlflowRunInfo(const std::string& dir) {
  MlflowRunInfo info;
  const std::map<std::string, std::string> meta = detail::flatYaml(fs::path(dir) / "meta.yaml");
  if (const auto it = meta.find("status"); it != meta.end()) {
    static constexpr const char* kNames[] = {"",         "RUNNING", "SCHEDULED",
                                             "FINISHED", "FAILED",  "KILLED"};
    const std::optional<int64_t> n = detail::wholeInteger(it->second);
    info.status = !n ? it->second : (*n >= 1 && *n <= 5) ? kNames[*n] : "status " + it->second;
  }
  auto time = [&](const char* key) -> std::optional<int64_t> {
    const auto it = meta.find(key);
    return it == meta.end() ? std::nullopt : detail::wholeInteger(it->second);
  };
  info.startMs = time("start_time");
  info.endMs = time("end_time");
  info.tags = keyFiles(dir, "tags");
  return info;
}

}  // namespace ckpt
