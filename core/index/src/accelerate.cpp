#include "ckpt/index/accelerate.h"

#include <algorithm>
#include <filesystem>

#include "checkpoint_values.h"
#include "ckpt/index/trainers.h"

namespace fs = std::filesystem;

namespace ckpt {
namespace {

// save_accelerator_state's names for the first model (MODEL_NAME,
// SAFE_MODEL_NAME, their WEIGHTS_INDEX_NAME when sharded).
constexpr std::string_view kWeights[] = {"model.safetensors", "pytorch_model.bin",
                                         "model.safetensors.index.json",
                                         "pytorch_model.bin.index.json"};

bool isFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool isDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "<stem>.<ext>" or "<stem>_<digits>.<ext>".
bool numbered(std::string_view name, std::string_view stem, std::string_view ext,
              bool bareToo = true) {
  if (!name.starts_with(stem) || !name.ends_with(ext)) return false;
  const std::string_view middle = name.substr(stem.size(), name.size() - stem.size() - ext.size());
  if (middle.empty()) return bareToo;
  return middle.front() == '_' && isDigits(middle.substr(1));
}

// checkpoint_<i> in a folder named checkpoints: automatic_checkpoint_naming.
bool isAutomaticName(const fs::path& folder) {
  const std::string name = folder.filename().string();
  return name.starts_with("checkpoint_") && isDigits(std::string_view(name).substr(11)) &&
         folder.parent_path().filename() == "checkpoints";
}

fs::path normalFolder(const std::string& dir) {
  std::error_code ec;  // (only when the working directory is gone)
  fs::path p = fs::absolute(fs::path(dir), ec).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

// The step optimizer.bin's state says: the first parameter's (Adam's and
// AdamW's `step`, the same for every parameter); nothing when there is none.
std::optional<int64_t> optimizerStep(const fs::path& file) {
  if (!isFile(file)) return std::nullopt;
  try {
    const std::unique_ptr<CheckpointFile> f = CheckpointFile::open(file.string(), ReadOptions{});
    const CheckpointView view(*f);
    const Value* opt = view.optimizer();
    const Value* state = opt ? opt->get("state") : nullptr;
    if (!state || !state->isDict() || state->entries.empty()) return std::nullopt;
    const std::optional<double> s =
        detail::numberOrScalar(*f, state->entries.begin()->second->get("step"));
    if (!s || *s < 0 || *s != double(int64_t(*s))) return std::nullopt;
    return int64_t(*s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

bool isAccelerateStateFolder(const std::string& dir) {
  const fs::path d(dir);
  if (!isFile(d / "random_states_0.pkl")) return false;
  return std::any_of(std::begin(kWeights), std::end(kWeights),
                     [&](std::string_view w) { return isFile(d / w); });
}

std::string accelerateRunOf(const std::string& folder) {
  // In the form the folder was given (a walk from a relative root keeps its
  // runs relative: runNameFor and the metrics files' keys compare them).
  fs::path f = fs::path(folder).lexically_normal();
  if (f.filename().empty()) f = f.parent_path();
  const int up = isAutomaticName(normalFolder(folder)) ? 2 : 1;
  fs::path run = f;
  for (int i = 0; i < up; ++i) {
    if (run.empty()) {
      // Above what was given ("checkpoints/checkpoint_0" from inside it): absolute.
      run = normalFolder(folder);
      for (int j = 0; j < up; ++j) run = run.parent_path();
      return run.string();
    }
    run = run.parent_path();
  }
  // "step_50", walked from its run: the run is ".", as the walk names it.
  return run.empty() ? std::string(".") : run.string();
}

std::string_view acceleratePartRole(std::string_view name) {
  for (std::string_view w : kWeights)
    if (name == w) return "weights";
  if (numbered(name, "model", ".safetensors", false) ||
      numbered(name, "pytorch_model", ".bin", false))
    return "model";
  if (numbered(name, "optimizer", ".bin")) return "optimizer";
  if (numbered(name, "scheduler", ".bin")) return "scheduler";
  if (numbered(name, "sampler", ".bin")) return "sampler";
  if (numbered(name, "dl_state_dict", ".bin")) return "dataloader";
  if (name == "scaler.pt") return "scaler";
  if (numbered(name, "random_states", ".pkl", false)) return "rng";
  if (numbered(name, "custom_checkpoint", ".pkl", false)) return "custom";
  return "";
}

CheckpointEntry describeAccelerateCheckpoint(const std::string& dir, const std::string& file) {
  const fs::path d(dir);
  fs::path weights;
  for (std::string_view w : kWeights)
    if (isFile(d / w)) {
      weights = d / w;
      break;
    }
  CheckpointEntry e = describeCheckpoint(weights.string(), file);
  e.file = file;
  e.trainer = std::string(kAccelerateId);
  e.folder = dir;
  // The folder's name says the step (step_500/), unless it only counts
  // saves (checkpoint_<i>); else the optimizer's own count.
  const fs::path folder = normalFolder(dir);
  std::optional<int64_t> step;
  if (!isAutomaticName(folder)) step = parseCheckpointName(folder.filename().string() + ".d").step;
  if (!step) step = optimizerStep(d / "optimizer.bin");
  e.step = step;
  e.kind = step ? CheckpointKind::Step : CheckpointKind::Unknown;

  addFolderParts(e, dir, acceleratePartRole);
  return e;
}

}  // namespace ckpt
