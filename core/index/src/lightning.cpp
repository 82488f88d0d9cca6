#include "ckpt/index/lightning.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>

#include "ascii.h"
#include "checkpoint_values.h"
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

std::map<std::string, double> lightningNameMetrics(std::string_view fileName) {
  std::string_view stem = fileName;
  for (const std::string_view ext : {".ckpt", ".pt", ".pth"})
    if (stem.size() > ext.size() && stem.ends_with(ext)) {
      stem.remove_suffix(ext.size());
      break;
    }
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t dash = stem.find('-', start);
    parts.push_back(stem.substr(start, dash == std::string_view::npos ? dash : dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  // "-v1": ModelCheckpoint's suffix for a name it had saved before.
  if (parts.size() > 1) {
    const std::string_view last = parts.back();
    if (last.size() > 1 && last[0] == 'v' &&
        std::all_of(last.begin() + 1, last.end(), [](char c) { return c >= '0' && c <= '9'; }))
      parts.pop_back();
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string_view part : parts) {
    const size_t eq = part.find('=');
    if (eq != std::string_view::npos && eq > 0) {
      pairs.emplace_back(std::string(part.substr(0, eq)), std::string(part.substr(eq + 1)));
    } else if (!pairs.empty()) {
      pairs.back().second += '-';  // the value went on: a negative number
      pairs.back().second += part;
    }
  }
  std::map<std::string, double> out;
  for (const auto& [name, value] : pairs) {
    if (name == "step") continue;
    // "nan" (a diverged run's name) is no value a "best" can be chosen by.
    if (const std::optional<double> v = detail::pythonFloat(value); v && std::isfinite(*v))
      out[name] = *v;
  }
  return out;
}

namespace detail {

bool describeLightningCheckpoint(const CheckpointFile& file, const CheckpointView& view,
                                 const std::string& fileName, CheckpointEntry& e) {
  const Value* root = file.root();
  if (!root || !root->isDict()) return false;
  const Value* version = root->get("pytorch-lightning_version");
  if (!version || !version->isStr()) return false;
  if (e.trainer.empty()) e.trainer = std::string(kLightningId);
  if (const Value* epoch = view.lookup("epoch"); epoch && epoch->isNumber())
    e.scalars.emplace("epoch", epoch->number());
  for (const auto& [name, value] : lightningNameMetrics(fileName)) e.scalars.emplace(name, value);
  // callbacks: {state key: state}, the key the callback's qualified name and
  // repr of what tells it apart: "ModelCheckpoint{'monitor': 'val_loss',
  // 'mode': 'min', ...}"; its state_dict best_model_path, best_model_score,
  // monitor (ModelCheckpoint.state_dict).
  const Value* callbacks = root->get("callbacks");
  if (!callbacks || !callbacks->isDict()) return true;
  for (const auto& [key, state] : callbacks->entries) {
    if (!key->isStr() || !state->isDict()) continue;
    const Value* path = state->get("best_model_path");
    const Value* monitor = state->get("monitor");
    if (!path || !path->isStr() || path->text.empty() || !monitor || !monitor->isStr() ||
        monitor->text.empty())
      continue;
    CheckpointEntry::RecordedBest best;
    best.path = path->str();
    best.monitor = monitor->str();
    for (const char* mode : {"min", "max"})
      if (key->text.find(std::string("'mode': '") + mode + "'") != std::string_view::npos)
        best.mode = mode;
    best.score = numberOrScalar(file, state->get("best_model_score"));
    e.recordedBest.push_back(std::move(best));
  }
  return true;
}

}  // namespace detail

void applyModelCheckpointBest(RunEntry& run) {
  // The newest record: the highest step, last.ckpt (saved after the top-k
  // files of its step) at a tie, then the newer file.
  const CheckpointEntry* newest = nullptr;
  auto key = [](const CheckpointEntry& c) {
    return std::tuple(c.step.value_or(-1), c.kind == CheckpointKind::Latest, c.mtime);
  };
  for (const CheckpointEntry& c : run.checkpoints)
    if (c.trainer == kLightningId && !c.recordedBest.empty() && (!newest || key(c) > key(*newest)))
      newest = &c;
  if (!newest) return;
  const std::vector<CheckpointEntry::RecordedBest> records = newest->recordedBest;
  for (const CheckpointEntry::RecordedBest& r : records) {
    // The path the callback saved to, maybe on another machine: its file name.
    const std::string name = fs::path(r.path).filename().string();
    // "ModelCheckpoint: lowest val_loss 0.81" (mode min; highest for max).
    std::string source = "ModelCheckpoint: ";
    if (r.mode == "min") source += "lowest ";
    if (r.mode == "max") source += "highest ";
    source += r.monitor;
    if (r.score) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.6g", *r.score);
      source += buf;
    }
    for (CheckpointEntry& c : run.checkpoints)
      if (c.trainer == kLightningId && fs::path(c.path).filename().string() == name) {
        c.best = true;
        c.bestSource = c.bestSource.empty() ? source : c.bestSource + "; " + source;
      }
  }
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
