#include "ckpt/index/lightning.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "ascii.h"
#include "flat_yaml.h"
#include "text_cells.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

// One line of Python's csv module (excel dialect): fields split at commas,
// a quoted field's doubled quotes one quote. A line break inside quotes is
// not expected (CSVLogger writes numbers and metric names).
std::vector<std::string> splitCsvLine(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

bool isLightningVersionName(std::string_view name) {
  constexpr std::string_view prefix = "version_";
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return false;
  for (const char c : name.substr(prefix.size()))
    if (c < '0' || c > '9') return false;
  return true;
}

bool isLightningRunFolder(const std::string& dir) {
  const fs::path d(dir);
  if (isLightningVersionName(fs::path(dir).lexically_normal().filename().string())) return true;
  return detail::isRegularFile(d / "metrics.csv") || detail::isRegularFile(d / "hparams.yaml");
}

bool isLightningCheckpointFolder(const std::string& dir) {
  const fs::path d = fs::absolute(fs::path(dir)).lexically_normal();
  const fs::path folder = d.filename().empty() ? d.parent_path() : d;
  return folder.filename() == "checkpoints" && folder.has_parent_path() &&
         isLightningRunFolder(folder.parent_path().string());
}

std::optional<std::string> lightningRunOf(const std::string& checkpointPath) {
  const fs::path p(checkpointPath);
  const fs::path folder = p.parent_path();
  if (folder.filename() != "checkpoints") return std::nullopt;
  const fs::path run = folder.parent_path();
  if (run.empty()) {
    // checkpoints/ opened relative to the working directory: its run is "..".
    if (!isLightningCheckpointFolder(folder.string())) return std::nullopt;
    return (folder / "..").lexically_normal().string();
  }
  if (!isLightningRunFolder(run.string())) return std::nullopt;
  return run.string();
}

std::map<std::string, std::string> readLightningHparams(const std::string& runDir) {
  const fs::path file = fs::path(runDir) / "hparams.yaml";
  if (!detail::isRegularFile(file)) return {};
  return detail::flatYaml(file);
}

std::vector<FileSeries> readLightningMetricsCsv(const std::string& path,
                                                std::vector<std::string>* problems) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be opened");
  std::string line;
  auto readLine = [&] {
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // csv's "\r\n"
    return true;
  };
  if (!readLine()) return {};
  const std::vector<std::string> header = splitCsvLine(line);
  size_t stepColumn = header.size();
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == "step") stepColumn = i;
  if (stepColumn == header.size())
    throw std::runtime_error(path + ": line 1: no `step` column (not a Lightning CSVLogger file)");

  std::map<std::string, FileSeries> byMetric;
  for (int64_t lineNo = 2; readLine(); ++lineNo) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = splitCsvLine(line);
    auto problem = [&](const std::string& why) {
      if (problems) problems->push_back(path + ": line " + std::to_string(lineNo) + ": " + why);
    };
    if (cells.size() != header.size()) {
      problem(std::to_string(cells.size()) + " cells, the header has " +
              std::to_string(header.size()));
      if (cells.size() <= stepColumn) continue;
    }
    const std::optional<int64_t> step = detail::wholeInteger(cells[stepColumn]);
    if (!step) {
      problem("step '" + cells[stepColumn] + "' is not an integer");
      continue;
    }
    for (size_t i = 0; i < cells.size() && i < header.size(); ++i) {
      if (i == stepColumn) continue;
      const std::optional<double> v = detail::pythonFloat(cells[i]);
      if (!v) continue;
      FileSeries& s = byMetric[header[i]];
      s.metric = header[i];
      MetricPoint p;
      p.step = *step;
      p.value = *v;
      addInFileOrder(s.points, s.restarts, p);
    }
  }
  std::vector<FileSeries> out;
  for (auto& [metric, s] : byMetric) out.push_back(std::move(s));
  return out;
}

}  // namespace ckpt
