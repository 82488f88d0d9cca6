#include "ckpt/index/hparams.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/json_export.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/lightning.h"
#include "ckpt/index/megatron.h"
#include "ckpt/index/mlflow.h"
#include "ckpt/index/wandb.h"

namespace ckpt {
namespace {

// Keys that name the run rather than configure it: every run differs in
// them, and the name column already says it.
bool namesTheRun(std::string_view key) {
  return key == "run_name" || key == "output_dir";
}

bool isSection(std::string_view key) {
  return key == "model" || key == "training" || key == "data";
}

// Deeper than this, an object is one value (its JSON text): a hostile
// config cannot make the walk recurse without end.
constexpr int kMaxDepth = 16;
// A RUN.json is a few kB; a bigger file is not one.
constexpr uintmax_t kMaxRunJsonBytes = 16u << 20;
constexpr int kMaxRunJsonDepth = 64;

void flatten(const nlohmann::json& j, const std::string& prefix, Hparams& into, int depth = 0) {
  // {"$tuple": [...]} and the like (a pickle's value as JSON) are one value.
  const bool tagged = j.is_object() && j.size() == 1 && j.begin().key().starts_with("$");
  if (j.is_object() && !tagged && depth < kMaxDepth) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const bool dropSection = prefix.empty() && isSection(k) && it.value().is_object();
      flatten(it.value(),
              dropSection      ? ""
              : prefix.empty() ? k
                               : prefix + "." + k,
              into, depth + 1);
    }
    return;
  }
  if (prefix.empty() || namesTheRun(prefix) || into.count(prefix)) return;
  if (j.is_number())
    into.emplace(prefix, numberHparam(j.get<double>()));
  else if (j.is_string())
    into.emplace(prefix, textHparam(j.get<std::string>()));
  else
    into.emplace(prefix,
                 textHparam(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

void readRunJson(const RunEntry& run, Hparams& into, std::vector<std::string>& problems) {
  const std::filesystem::path file = std::filesystem::path(run.path) / "RUN.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return;
  if (const auto size = std::filesystem::file_size(file, ec); !ec && size > kMaxRunJsonBytes) {
    problems.push_back(file.string() + ": " + std::to_string(size) +
                       " bytes, too big for a run config (not read)");
    return;
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    problems.push_back(file.string() + ": cannot be read");
    return;
  }
  // Values nested deeper than a config ever is are dropped while parsing
  // (and the file reported): writing such a tree back as text would recurse
  // once per level.
  bool tooDeep = false;
  const nlohmann::json::parser_callback_t limit =
      [&tooDeep](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxRunJsonDepth) tooDeep = true;
        return depth <= kMaxRunJsonDepth;
      };
  const nlohmann::json j = nlohmann::json::parse(text.str(), limit, /*allow_exceptions=*/false);
  if (tooDeep) {
    problems.push_back(file.string() + ": nested deeper than " + std::to_string(kMaxRunJsonDepth) +
                       " levels (not read)");
    return;
  }
  if (j.is_discarded() || !j.is_object()) {
    problems.push_back(file.string() + ": not a JSON object");
    return;
  }
  addJsonHparams(j, into);
}

// What our trainer records in every checkpoint: the run's training config
// and the model config. The newest readable checkpoint of the run is read
// (its pickle only).
void readCheckpointConfig(const RunEntry& run, Hparams& into, std::vector<std::string>& problems) {
  const auto chain = checkpointChain(run.checkpoints);
  if (chain.empty()) return;
  const CheckpointEntry& newest = *chain.back();
  // A sharded checkpoint's pickles hold tensors; a Megatron torch_dist
  // save's args are in its common.pt.
  const std::string path = newest.sharded.empty() ? newest.path : megatronCommonFile(newest);
  if (path.empty()) return;
  try {
    ReadOptions options;
    options.metadataOnly = true;
    const auto file = CheckpointFile::open(path, options);
    const CheckpointView view(*file);
    nlohmann::json sections = nlohmann::json::object();
    if (const Value* training = view.lookup("training_config"); training && training->isDict())
      sections["training"] = valueToJson(training, 10'000);
    if (const Value* model = view.config(); model && model->isDict())
      sections["model"] = valueToJson(model, 10'000);
    // nanoGPT's ckpt.pt: the model's model_args beside train.py's config.
    if (const Value* args = view.lookup("model_args"); args && args->isDict())
      sections["data"] = valueToJson(args, 10'000);  // a dropped section name, as model's
    addJsonHparams(sections, into);
    // Megatron-LM saves its parsed command line, an argparse.Namespace: its
    // attributes are the BUILD state the reader kept (the class is never run).
    if (const Value* args = view.lookup("args");
        args && args->kind == Value::Kind::Object && args->state && args->state->isDict())
      addJsonHparams(valueToJson(args->state, 10'000), into);
  } catch (const std::exception& e) {
    problems.push_back(e.what());
  }
}

}  // namespace

HparamValue numberHparam(double v) {
  HparamValue h;
  h.isNumber = true;
  h.number = v;
  // The shortest %g that reads back exactly: "0.0003" as a config shows
  // it, not to_chars's "3e-04".
  char b[40];
  if (std::abs(v) < 1e15 && v == std::trunc(v)) {
    std::snprintf(b, sizeof b, "%.0f", v);  // 100, not 1e+02
    h.text = b;
    return h;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(b, sizeof b, "%.*g", precision, v);
    if (std::strtod(b, nullptr) == v || !std::isfinite(v)) break;
  }
  h.text = b;
  return h;
}

HparamValue textHparam(std::string text) {
  HparamValue h;
  h.text = std::move(text);
  return h;
}

namespace {

// Values written as text (hparams.yaml, MLflow's params/): a number when
// the whole text is one, else the text.
void addTextHparams(const std::map<std::string, std::string>& values, Hparams& into) {
  for (const auto& [key, text] : values) {
    if (into.count(key)) continue;
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    into[key] = !text.empty() && ec == std::errc() && end == text.data() + text.size()
                    ? numberHparam(v)
                    : textHparam(text);
  }
}

void readLightningHparamsSource(const RunEntry& run, Hparams& into, std::vector<std::string>&) {
  addTextHparams(readLightningHparams(run.path), into);
}

void readMlflowParamsSource(const RunEntry& run, Hparams& into, std::vector<std::string>&) {
  if (isMlflowRunFolder(run.path)) addTextHparams(readMlflowParams(run.path), into);
}

// A W&B run's config.yaml (in files/, before wandb 0.10 in the run folder):
// each key's value (wandb.h), flattened as RUN.json's are.
void readWandbConfigSource(const RunEntry& run, Hparams& into, std::vector<std::string>& problems) {
  if (isWandbRunFolder(run.path)) addJsonHparams(readWandbConfig(run.path, &problems), into);
}

std::vector<std::string> wandbConfigFile(const RunEntry& run) {
  if (!isWandbRunFolder(run.path)) return {};
  std::string file = wandbRunFile(run.path, "config.yaml");
  return file.empty() ? std::vector<std::string>{} : std::vector<std::string>{std::move(file)};
}

// `name` in the run's folder, when it is there.
std::function<std::vector<std::string>(const RunEntry&)> fileInRun(
    std::string name, std::function<bool(const std::string& dir)> applies = {}) {
  return [name = std::move(name), applies = std::move(applies)](const RunEntry& run) {
    std::vector<std::string> out;
    const std::filesystem::path file = std::filesystem::path(run.path) / name;
    std::error_code ec;
    if ((!applies || applies(run.path)) && std::filesystem::exists(file, ec))
      out.push_back(file.string());
    return out;
  };
}

}  // namespace

std::vector<NamedHparamSource>& hparamSources() {
  static std::vector<NamedHparamSource> sources = {
      {"RUN.json", readRunJson, fileInRun("RUN.json")},
      {"checkpoint config", readCheckpointConfig, {}},
      {"hparams.yaml", readLightningHparamsSource, fileInRun("hparams.yaml")},
      {"MLflow params", readMlflowParamsSource, fileInRun("params", isMlflowRunFolder)},
      {"W&B config", readWandbConfigSource, wandbConfigFile},
  };
  return sources;
}

std::vector<std::string> hparamFiles(const RunEntry& run) {
  std::vector<std::string> out;
  for (const NamedHparamSource& s : hparamSources())
    if (s.files)
      for (std::string& f : s.files(run)) out.push_back(std::move(f));
  return out;
}

Hparams readHparams(const RunEntry& run, std::vector<std::string>* problems) {
  Hparams out;
  std::vector<std::string> ignored;
  for (const NamedHparamSource& s : hparamSources())
    s.read(run, out, problems ? *problems : ignored);
  return out;
}

void addJsonHparams(const nlohmann::json& config, Hparams& into) {
  flatten(config, "", into);
}

std::vector<std::string> differingKeys(const std::vector<const Hparams*>& runs) {
  std::vector<std::string> out;
  if (runs.empty()) return out;
  std::map<std::string, bool> differs;  // every key any run has
  for (const Hparams* h : runs)
    for (const auto& [k, v] : *h) differs.emplace(k, false);
  for (auto& [key, d] : differs) {
    const auto first = runs.front()->find(key);
    for (const Hparams* h : runs) {
      const auto it = h->find(key);
      const bool same = (it == h->end()) == (first == runs.front()->end()) &&
                        (it == h->end() || it->second == first->second);
      if (!same) {
        d = true;
        break;
      }
    }
    if (d) out.push_back(key);
  }
  return out;
}

std::string canonicalHparamKey(std::string_view key) {
  if (key == "lr") return "learning_rate";
  return std::string(key);
}

}  // namespace ckpt
