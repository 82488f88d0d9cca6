// Hugging Face Trainer output folders: which files make one checkpoint, and
// the run's history in trainer_state.json (hf_trainer.h).
#include "ckpt/index/hf_trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ckpt/format/checkpoint_safety.h"
#include "ckpt/format/input_file.h"
#include "ckpt/format/sharded.h"
#include "ckpt/index/trainers.h"
#include "python_json.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

using detail::integerOf;
using detail::markNonFinite;
using detail::numberOf;

// The Trainer's file names (transformers' trainer.py / utils constants:
// SAFE_WEIGHTS_NAME, WEIGHTS_NAME, their _INDEX_NAME, ADAPTER_*_NAME,
// OPTIMIZER_NAME, SCHEDULER_NAME, SCALER_NAME, TRAINER_STATE_NAME,
// TRAINING_ARGS_NAME, CONFIG_NAME). The weights in the order one is chosen
// when several are there: a shard index names the whole model.
constexpr std::string_view kWeights[] = {
    "model.safetensors.index.json", "model.safetensors",
    "pytorch_model.bin.index.json", "pytorch_model.bin",
    "adapter_model.safetensors",    "adapter_model.bin",
};
constexpr std::string_view kTrainerState = "trainer_state.json";
constexpr std::string_view kTrainingArgs = "training_args.bin";

// A trainer_state.json is read whole; a bigger one is no Trainer's.
constexpr uint64_t kMaxStateBytes = uint64_t(1) << 30;

bool isDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "model-00001-of-00003.safetensors", "pytorch_model-00001-of-00002.bin".
bool isShardName(std::string_view name) {
  for (std::string_view stem : {"model-", "pytorch_model-"}) {
    if (!name.starts_with(stem)) continue;
    std::string_view rest = name.substr(stem.size());
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos) continue;
    const std::string_view ext = rest.substr(dot);
    if (ext != ".safetensors" && ext != ".bin") continue;
    rest = rest.substr(0, dot);
    const size_t of = rest.find("-of-");
    if (of != std::string_view::npos && isDigits(rest.substr(0, of)) &&
        isDigits(rest.substr(of + 4)))
      return true;
  }
  return false;
}

bool isFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string readWhole(const std::string& path) {
  const InputFile in(path);
  if (in.size() > kMaxStateBytes)
    throw std::runtime_error(path + ": " + std::to_string(in.size()) +
                             " bytes, more than a trainer_state.json holds (1 GiB at most)");
  const std::vector<uint8_t> bytes = in.read(0, in.size());
  return std::string(bytes.begin(), bytes.end());
}

// The global_step of a trainer_state.json; nothing when it cannot be read.
std::optional<int64_t> globalStepOf(const fs::path& state) {
  try {
    return readTrainerState(state.string()).globalStep;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<int64_t> hfCheckpointFolderStep(std::string_view folderName) {
  constexpr std::string_view prefix = "checkpoint-";
  if (!folderName.starts_with(prefix)) return std::nullopt;
  const std::string_view digits = folderName.substr(prefix.size());
  // At most 18 digits: a step that fits an int64_t.
  if (!isDigits(digits) || digits.size() > 18) return std::nullopt;
  return std::stoll(std::string(digits));
}

std::string_view hfPartRole(std::string_view name) {
  for (std::string_view w : kWeights)
    if (name == w) return "weights";
  if (isShardName(name)) return "weights-shard";
  if (name == "optimizer.pt" || name == "optimizer.bin") return "optimizer";
  if (name == "scheduler.pt" || name == "scheduler.bin") return "scheduler";
  if (name == "scaler.pt") return "scaler";
  // rng_state.pth, or one per process: rng_state_<rank>.pth.
  if (name == "rng_state.pth" || (name.starts_with("rng_state_") && name.ends_with(".pth") &&
                                  isDigits(name.substr(10, name.size() - 10 - 4))))
    return "rng";
  if (name == kTrainerState) return "trainer_state";
  if (name == kTrainingArgs) return "training_args";
  if (name == "config.json" || name == "generation_config.json" || name == "adapter_config.json")
    return "config";
  return "";
}

namespace {

// A folder's own name, also when written "out/checkpoint-500/" or ".".
std::string folderName(const fs::path& dir) {
  fs::path p = dir.lexically_normal();
  if (p.filename().empty() && p.has_parent_path()) p = p.parent_path();
  const std::string name = p.filename().string();
  if (name != "." && name != "..") return name;
  std::error_code ec;
  p = fs::absolute(p, ec).lexically_normal();
  if (p.filename().empty() && p.has_parent_path()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

bool isHfCheckpointFolder(const std::string& dir) {
  const fs::path d(dir);
  if (!hfCheckpointFolderStep(folderName(d))) return false;
  if (isFile(d / kTrainerState) || isFile(d / "optimizer.pt")) return true;
  return std::any_of(std::begin(kWeights), std::end(kWeights),
                     [&](std::string_view w) { return isFile(d / w); });
}

bool isHfOutputFolder(const std::string& dir) {
  const fs::path d(dir);
  if (isFile(d / kTrainerState) || isFile(d / kTrainingArgs)) return true;
  std::error_code ec;
  for (fs::directory_iterator it(d, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code dec;
    if (it->is_directory(dec) && isHfCheckpointFolder(it->path().string())) return true;
  }
  return false;
}

CheckpointEntry describeHfCheckpoint(const std::string& dir, const std::string& file,
                                     bool finalModel) {
  const fs::path d(dir);
  fs::path weights;
  for (std::string_view w : kWeights)
    if (isFile(d / w)) {
      weights = d / w;
      break;
    }
  // A DeepSpeed run saves global_step<N>/ and `latest` instead (zero stage 3
  // without stage3_gather_16bit_weights_on_model_save): the folder is a
  // DeepSpeed checkpoint (sharded.h).
  if (weights.empty() && !finalModel && probeSharded(dir)) weights = d;

  CheckpointEntry e;
  if (!weights.empty()) {
    e = describeCheckpoint(weights.string(), file);
  } else {
    e.path = dir;
    e.file = file;
    e.error =
        "no weights in the folder (model.safetensors, pytorch_model.bin, their "
        "index, adapter_model.*)";
    // As an unreadable file's: nothing was scanned that could say it is safe.
    e.verdict = "unreadable";
    e.safety = "unreadable: " + e.error;
  }
  e.trainer = std::string(kHfTrainerId);
  if (finalModel) {
    e.kind = CheckpointKind::Final;
    e.step.reset();  // applyTrainerState: the global step the state saved with it says
  } else {
    e.step = hfCheckpointFolderStep(folderName(d));
    e.kind = CheckpointKind::Step;
    e.folder = dir;
  }

  // Every other file the Trainer wrote there; a resume torch.loads the
  // pickles among them, so the checkpoint is as safe as the worst of them.
  addFolderParts(e, dir, hfPartRole);
  return e;
}

std::string newestTrainerState(const std::string& runDir) {
  const fs::path dir(runDir);
  std::vector<std::pair<int64_t, fs::path>> folders;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const auto step = hfCheckpointFolderStep(it->path().filename().string());
    std::error_code dec;
    if (step && it->is_directory(dec)) folders.emplace_back(*step, it->path());
  }
  std::sort(folders.begin(), folders.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  fs::path newest;
  // A live run's newest folder may not have its state yet: the next one down.
  for (const auto& [step, folder] : folders)
    if (isFile(folder / kTrainerState)) {
      newest = folder / kTrainerState;
      break;
    }
  const fs::path own = dir / kTrainerState;
  if (!isFile(own)) return newest.string();
  if (newest.empty()) return own.string();
  const auto ownStep = globalStepOf(own), folderStep = globalStepOf(newest);
  if (!ownStep) return newest.string();
  return !folderStep || *ownStep >= *folderStep ? own.string() : newest.string();
}

std::string hfMetricName(std::string_view key) {
  if (key.starts_with("eval_") && key.size() > 5) return "val_" + std::string(key.substr(5));
  if (key == "learning_rate") return "lr";
  return std::string(key);
}

TrainerStateLog readTrainerState(const std::string& path, std::vector<std::string>* problems) {
  const std::string text = markNonFinite(readWhole(path));
  TrainerStateLog out;
  std::map<std::string, FileSeries> byMetric;
  auto takeRow = [&](const nlohmann::json& r, size_t index) {
    if (!r.is_object()) {
      if (problems)
        problems->push_back(path + ": log_history[" + std::to_string(index) +
                            "] is not an object, skipped");
      return;
    }
    if (r.contains("train_runtime")) {
      for (const auto& [key, value] : r.items())
        if (const auto v = numberOf(value)) out.summary[key] = *v;
      return;
    }
    const auto stepIt = r.find("step");
    const std::optional<int64_t> step = stepIt == r.end() ? std::nullopt : integerOf(*stepIt);
    if (!step) {
      if (problems)
        problems->push_back(path + ": log_history[" + std::to_string(index) +
                            "] has no integer step, skipped");
      return;
    }
    std::optional<int64_t> tokens;
    if (const auto t = r.find("num_input_tokens_seen"); t != r.end()) tokens = integerOf(*t);
    for (const auto& [key, value] : r.items()) {
      if (key == "step") continue;
      const auto v = numberOf(value);
      if (!v) continue;
      MetricPoint p;
      p.step = *step;
      p.value = *v;
      p.tokens = tokens;
      const std::string metric = hfMetricName(key);
      FileSeries& s = byMetric[metric];
      s.metric = metric;
      addInFileOrder(s.points, s.restarts, p);
    }
  };

  // log_history's rows are taken as they are parsed and left out of the
  // document: a long run's history (a million rows) never stands in memory
  // as a JSON tree, one row at a time does.
  using Event = nlohmann::json::parse_event_t;
  std::string topKey;
  bool inHistory = false;
  size_t rows = 0;
  const nlohmann::json::parser_callback_t onEvent = [&](int depth, Event event,
                                                        nlohmann::json& parsed) {
    if (depth == 1 && event == Event::key && parsed.is_string()) topKey = parsed.get<std::string>();
    if (depth == 1 && event == Event::array_start) inHistory = topKey == "log_history";
    if (depth == 1 && event == Event::array_end) inHistory = false;
    if (inHistory && depth == 2 &&
        (event == Event::object_end || event == Event::array_end || event == Event::value)) {
      takeRow(parsed, rows++);
      return false;
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, onEvent);
  } catch (const nlohmann::json::parse_error& e) {
    // The byte is in the marked text; before the first mark it is the file's.
    throw std::runtime_error(path + ": not JSON (byte " + std::to_string(e.byte) + ")");
  }
  if (!j.is_object()) throw std::runtime_error(path + ": not a JSON object");
  if (const auto it = j.find("global_step"); it != j.end()) out.globalStep = integerOf(*it);
  if (const auto it = j.find("best_model_checkpoint"); it != j.end() && it->is_string())
    out.bestModelCheckpoint = it->get<std::string>();
  if (const auto it = j.find("best_metric"); it != j.end()) out.bestMetric = numberOf(*it);
  if (const auto history = j.find("log_history");
      history != j.end() && !history->is_null() && !history->is_array())
    throw std::runtime_error(path + ": log_history is not a list");
  for (auto& [metric, s] : byMetric) out.series.push_back(std::move(s));
  return out;
}

void applyTrainerState(RunEntry& run) {
  const std::string statePath = newestTrainerState(run.path);
  if (statePath.empty()) return;
  TrainerStateLog state;
  try {
    state = readTrainerState(statePath);
  } catch (const std::exception&) {
    return;
  }
  // best_model_checkpoint is the path the Trainer was given ("out/checkpoint-
  // 1000", absolute, or "./..."): the folder is named by its last part.
  std::string best;
  if (state.bestModelCheckpoint)
    best = fs::path(*state.bestModelCheckpoint).lexically_normal().filename().string();
  if (best.empty() && state.bestModelCheckpoint)
    best =
        fs::path(*state.bestModelCheckpoint).lexically_normal().parent_path().filename().string();
  // The run folder's own state (save_state, beside the final model), not a
  // checkpoint folder's.
  const bool ownState =
      !hfCheckpointFolderStep(fs::path(statePath).parent_path().filename().string());
  for (CheckpointEntry& c : run.checkpoints) {
    if (c.trainer != kHfTrainerId) continue;
    if (c.kind == CheckpointKind::Step && !best.empty() &&
        fs::path(c.file).filename().string() == best) {
      c.best = true;
      c.bestSource = "trainer_state.json";
    }
    if (c.kind == CheckpointKind::Final && ownState && state.globalStep) c.step = state.globalStep;
  }
}

}  // namespace ckpt
