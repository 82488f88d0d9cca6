#include "ckpt/index/hparams.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/pickle_safety.h"
#include "ckpt/index/experiment.h"
#include "ckpt/index/hf_trainer.h"
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

// A JSON config file (RUN.json, a Trainer's config.json) as an object;
// nothing, and the file named in `problems`, when it cannot be one.
std::optional<nlohmann::json> readJsonConfig(const std::filesystem::path& file,
                                             std::vector<std::string>& problems) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return std::nullopt;
  if (const auto size = std::filesystem::file_size(file, ec); !ec && size > kMaxRunJsonBytes) {
    problems.push_back(file.string() + ": " + std::to_string(size) +
                       " bytes, too big for a run config (not read)");
    return std::nullopt;
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    problems.push_back(file.string() + ": cannot be read");
    return std::nullopt;
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
  nlohmann::json j = nlohmann::json::parse(text.str(), limit, /*allow_exceptions=*/false);
  if (tooDeep) {
    problems.push_back(file.string() + ": nested deeper than " + std::to_string(kMaxRunJsonDepth) +
                       " levels (not read)");
    return std::nullopt;
  }
  if (j.is_discarded() || !j.is_object()) {
    problems.push_back(file.string() + ": not a JSON object");
    return std::nullopt;
  }
  return j;
}

void readRunJson(const RunEntry& run, Hparams& into, std::vector<std::string>& problems) {
  if (auto j = readJsonConfig(std::filesystem::path(run.path) / "RUN.json", problems))
    addJsonHparams(*j, into);
}

// The folder a Hugging Face Trainer's run keeps its configuration in: the
// output folder itself once save_model() wrote config.json /
// training_args.bin there, else its newest checkpoint-<step>/ holding them.
// A Trainer's run by its folder, as the other sources tell theirs: the app's
// Curves tab hands over runs without RunEntry::trainer.
std::string hfConfigFolder(const RunEntry& run) {
  std::error_code ec;
  // A Trainer's run by its checkpoints (a listing names the trainer of a
  // checkpoint-<step>/ folder and of the run holding one), else by the
  // Trainer's own files in its folder (one that has saved no checkpoint
  // yet). Not by isHfOutputFolder, which lists the folder: a tenth of the
  // browser's listing of 1,000 runs asked it of every run.
  if (run.trainer != kHfTrainerId &&
      std::none_of(run.checkpoints.begin(), run.checkpoints.end(),
                   [](const CheckpointEntry& c) { return c.trainer == kHfTrainerId; }) &&
      !std::filesystem::is_regular_file(std::filesystem::path(run.path) / "trainer_state.json",
                                        ec) &&
      !std::filesystem::is_regular_file(std::filesystem::path(run.path) / "training_args.bin", ec))
    return {};
  const auto holds = [&ec](const std::filesystem::path& d) {
    return std::filesystem::is_regular_file(d / "training_args.bin", ec) ||
           std::filesystem::is_regular_file(d / "config.json", ec);
  };
  if (holds(run.path)) return run.path;
  const auto chain = checkpointChain(run.checkpoints);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if (!(*it)->folder.empty() && holds((*it)->folder)) return (*it)->folder;
  return {};
}

std::vector<std::string> hfConfigFiles(const RunEntry& run) {
  std::vector<std::string> out;
  const std::string dir = hfConfigFolder(run);
  if (dir.empty()) return out;
  std::error_code ec;
  for (const char* name : {"training_args.bin", "config.json"})
    if (const auto f = std::filesystem::path(dir) / name; std::filesystem::is_regular_file(f, ec))
      out.push_back(f.string());
  return out;
}

// An enum member as pickle keeps it since Python 3.11: getattr(<class>,
// "<NAME>") (never called here); its text is "<Class>.<NAME>", as Python
// names it. Nothing for any other value.
std::optional<std::string> enumMemberText(const Value* v) {
  if (!v || v->kind != Value::Kind::Object || v->callee || v->items.size() != 2)
    return std::nullopt;
  // The Object's text is "module.name" as the pickle spelt it (__builtin__ too).
  const std::string_view callable = v->text;
  const size_t split = callable.find('.');
  if (split == std::string_view::npos ||
      canonicalGlobal(callable.substr(0, split), callable.substr(split + 1)) != "builtins.getattr")
    return std::nullopt;
  const Value* cls = v->items[0];
  const Value* name = v->items[1];
  if (!cls || cls->kind != Value::Kind::Global || !name || !name->isStr()) return std::nullopt;
  const std::string_view full = cls->text;
  const size_t dot = full.rfind('.');
  return std::string(dot == std::string_view::npos ? full : full.substr(dot + 1)) + "." +
         name->str();
}

// TrainingArguments' fields (its BUILD state, a dict by field name) as JSON,
// an enum field (eval_strategy, lr_scheduler_type, ...) as its member's name.
nlohmann::json argumentsJson(const Value& state) {
  nlohmann::json out = nlohmann::json::object();
  for (const ValuePair& e : state.entries) {
    if (!e.first || !e.first->isStr()) continue;
    if (auto member = enumMemberText(e.second))
      out[e.first->str()] = *member;
    else
      out[e.first->str()] = valueToJson(e.second, 10'000);
  }
  return out;
}

// A Trainer's training_args.bin (a torch.save of TrainingArguments, a
// dataclass: its fields are the BUILD state the reader keeps; nothing is
// run, enums stay their names) and config.json (the model's config, as
// transformers writes it). The arguments come first: a key both name
// (torch_dtype, ...) is the arguments'.
void readHfTrainerConfig(const RunEntry& run, Hparams& into, std::vector<std::string>& problems) {
  const std::string dir = hfConfigFolder(run);
  if (dir.empty()) return;
  const std::filesystem::path args = std::filesystem::path(dir) / "training_args.bin";
  std::error_code ec;
  if (std::filesystem::is_regular_file(args, ec)) try {
      ReadOptions options;
      options.metadataOnly = true;
      const auto file = CheckpointFile::open(args.string(), options);
      const Value* root = file->root();
      if (root && root->kind == Value::Kind::Object && root->state && root->state->isDict())
        addJsonHparams(nlohmann::json{{"training", argumentsJson(*root->state)}}, into);
      else
        problems.push_back(args.string() + ": not a TrainingArguments object (not read)");
    } catch (const std::exception& e) {
      problems.push_back(e.what());
    }
  if (auto j = readJsonConfig(std::filesystem::path(dir) / "config.json", problems))
    addJsonHparams(nlohmann::json{{"model", *j}}, into);
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
      {"HF Trainer config", readHfTrainerConfig, hfConfigFiles},
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
