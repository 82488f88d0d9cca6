#pragma once
// A run's hyperparameters, for grouping runs and for the runs table's
// columns. They come from sources tried in order (hparamSources()): a
// source adds the keys no earlier one gave. Built in: the run directory's
// RUN.json, then the newest checkpoint's `training_config` and `config`
// (what our trainer records; nanoGPT's `model_args` too), then a Lightning
// run's hparams.yaml and an MLflow run's params/ (lightning.h, mlflow.h; a
// number when the text is one), then a W&B run's config.yaml (wandb.h).
// Other trainers' files register a source of their own. No Qt.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/index/scanner.h"

namespace ckpt {

struct HparamValue {
  bool isNumber = false;  // a JSON number: compared by value (3e-4 == 0.0003)
  double number = 0;
  std::string text;  // shown: the shortest text of the number, or the string / true / null
  friend bool operator==(const HparamValue& a, const HparamValue& b) {
    return a.isNumber == b.isNumber && (a.isNumber ? a.number == b.number : a.text == b.text);
  }
};
using Hparams = std::map<std::string, HparamValue>;

HparamValue numberHparam(double v);
HparamValue textHparam(std::string text);

// A source: adds to `into` the keys it knows that are not there yet; a file
// it cannot read goes to `problems` ("path: why"), it never throws.
using HparamSource =
    std::function<void(const RunEntry& run, Hparams& into, std::vector<std::string>& problems)>;
struct NamedHparamSource {
  std::string name;  // "RUN.json", "checkpoint config", ...
  HparamSource read;
  // The files `read` reads for a run, those that exist: the Summary names
  // them. Unset for a source that reads the run's checkpoints.
  std::function<std::vector<std::string>(const RunEntry& run)> files = {};
};
// The sources in the order they are asked; register another by appending.
std::vector<NamedHparamSource>& hparamSources();

// Every source's keys for one run.
Hparams readHparams(const RunEntry& run, std::vector<std::string>* problems = nullptr);

// Every source's files for one run (RUN.json, hparams.yaml, MLflow's
// params/ folder, W&B's files/config.yaml), in the sources' order.
std::vector<std::string> hparamFiles(const RunEntry& run);

// A config object as hyperparameters: nested objects flatten to dotted keys
// ("optimizer.betas"), arrays to their JSON text; a RUN.json section name
// ("model", "training", "data") is dropped so RUN.json and a checkpoint's
// training_config give the same keys ("learning_rate", "seed"). Keys that
// only name the run (run_name, output_dir) are left out: the name column
// shows them. Existing keys are kept.
void addJsonHparams(const nlohmann::json& config, Hparams& into);

// The keys whose values are not the same in all of `runs` (a key some runs
// lack differs too), sorted.
std::vector<std::string> differingKeys(const std::vector<const Hparams*>& runs);

// The keys a filter or --group-by may spell differently from a config:
// "lr" -> "learning_rate". Returns the key as the configs spell it.
std::string canonicalHparamKey(std::string_view key);

}  // namespace ckpt
