// ckptscope-cli info FILE [--json]
#include <cinttypes>
#include <cstdio>
#include <string>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "ckpt/format/error.h"
#include "ckpt/format/json_export.h"
#include "ckpt/format/state_names.h"
#include "ckpt/index/hf_optimizer.h"
#include "common.h"
#include "documents.h"
#include "remote_commands.h"
#include "trainer_folder.h"

namespace ckpt::cli {
namespace {

std::string withThousands(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

void line(const char* label, const std::string& value) {
  std::printf("%-11s %s\n", label, value.c_str());
}

std::string configSummary(const Value* config) {
  std::string s;
  for (const auto& [k, v] : config->entries) {
    if (!s.empty()) s += ' ';
    s += (k->isStr() ? k->str() : shortRepr(k, 30)) + "=" + shortRepr(v, 40);
  }
  return s;
}

// The Summary's Optimizer line, in the same words.
std::string optimizerSummary(const OptimizerSummary& o) {
  std::string s = std::to_string(o.withState) + " parameters with state";
  if (o.groups > 1) s += ", " + std::to_string(o.groups) + " groups";
  std::string hyper;
  for (const auto& [key, value] : o.hyper) hyper += (hyper.empty() ? "" : ", ") + key + " " + value;
  if (!hyper.empty()) s += " (" + hyper + ")";
  if (o.params)
    s += "; " + std::to_string(o.mapped) + " of " + std::to_string(o.params) +
         " mapped to parameters";
  return s;
}

// Where a logical tensor of a sharded checkpoint lies: "3 chunks, 2
// replicas"; a flat buffer's share per rank: "flat buffer, per rank: 0: 82, 1: 81".
std::string chunksText(const ShardSet& shards, size_t logical) {
  const LogicalTensor& lt = shards.tensors()[logical];
  std::string s = std::to_string(lt.chunks.size()) + (lt.chunks.size() == 1 ? " chunk" : " chunks");
  if (lt.replicas)
    s += ", " + std::to_string(lt.replicas) + (lt.replicas == 1 ? " replica" : " replicas");
  if (lt.flat) {
    s += ", flat buffer, per rank:";
    for (size_t i = 0; i < lt.chunks.size(); ++i) {
      const ShardChunk& c = lt.chunks[i];
      uint64_t n = 1;
      for (const int64_t d : c.sizes.vec()) n *= uint64_t(d);
      const int rank = shards.parts()[size_t(c.part)].rank;
      s += std::string(i ? ", " : " ") +
           (rank >= 0 ? std::to_string(rank) : shards.parts()[size_t(c.part)].file) + ": " +
           withThousands(n);
    }
  }
  return s;
}

// The optimizer state of a checkpoint whose weights and optimizer are two
// files (a Trainer's checkpoint-<step>/: optimizer.pt beside the weights).
struct OtherOptimizer {
  std::unique_ptr<CheckpointFile> file;
  std::string name;  // its name in the checkpoint's folder
};

void printText(const CheckpointFile& file, const OtherOptimizer& other) {
  const CheckpointView view(file);
  line("file", file.path());
  line("format", std::string(formatName(file.format())) + ", " + humanBytes(file.fileSize()));
  if (const ShardSet* shards = file.shards()) {
    line("sharded", shards->summary());
    for (const std::string& n : shards->notes()) line("note", n);
  }
  if (view.step())
    line("step", std::to_string(*view.step()) +
                     (view.stepSource().empty() ? "" : " (from " + view.stepSource() + ")"));
  if (view.loss()) line("loss", formatPythonFloat(*view.loss()));
  if (view.run()) line("run", *view.run());
  if (view.stage()) line("stage", *view.stage());
  if (view.config()) line("config", configSummary(view.config()));
  if (view.modelState()) {
    std::string p = withThousands(view.parameterCount()) + " in " +
                    std::to_string(view.entries().size()) + " tensors";
    if (view.ddpPrefix() || view.compiledPrefix())
      p += "; " + describeWrapping(view.ddpPrefix(), view.compiledPrefix());
    line("parameters", p);
    for (const StateEntry& e : view.entries())
      if (e.tiedTo >= 0) line("tied", e.name + " = " + view.entries()[size_t(e.tiedTo)].name);
  }
  if (const auto o = summarizeOptimizer(view)) line("optimizer", optimizerSummary(*o));
  for (const std::string& n : view.notes()) line("note", n);
  if (other.file && !view.optimizer()) {
    const CheckpointView opt(*other.file);
    const TrainerOptimizerNames named = trainerOptimizerNames(view, opt);
    if (auto o = summarizeOptimizer(opt)) {
      if (!named.names.empty())
        o->mapped = o->params;  // every moment checked against its parameter
      line("optimizer", optimizerSummary(*o) + " (from " + other.name + ")");
      // Instead of the view's "without its model" notes: how its
      // parameters were named, or why not.
      line("note", other.name + ": " + named.note);
    }
  }

  // Every metadata key: the `metadata` dict, or the top level's plain values.
  const Value* meta = view.metadata();
  const Value* root = file.root();
  std::printf("\nmetadata\n");
  if (meta) {
    for (const auto& [k, v] : meta->entries)
      std::printf("  %s = %s\n", (k->isStr() ? k->str() : shortRepr(k, 40)).c_str(),
                  shortRepr(v, 100).c_str());
  } else if (root && root->isDict() && root != view.modelState() && root != view.optimizer()) {
    for (const auto& [k, v] : root->entries)
      if (v != view.modelState() && v != view.optimizer())
        std::printf("  %s = %s\n", (k->isStr() ? k->str() : shortRepr(k, 40)).c_str(),
                    shortRepr(v, 100).c_str());
  } else {
    std::printf("  (none)\n");
  }

  const auto& tensors = file.tensors();
  const auto& storages = file.storages();
  // Model-state tensors by their state-dict name (wrapper prefixes
  // stripped), under the key that holds the state dict; the rest by path.
  std::vector<std::string> names(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) names[i] = std::string(tensors[i].name());
  const std::string stateKey = view.modelStateKey().empty() ? "" : view.modelStateKey() + ".";
  for (const StateEntry& e : view.entries())
    if (e.tensor >= 0 && size_t(e.tensor) < names.size())
      names[size_t(e.tensor)] = stateKey + e.name;
  size_t nameWidth = 4;
  for (const std::string& n : names) nameWidth = std::max(nameWidth, n.size());
  nameWidth = std::min<size_t>(nameWidth, 60);
  std::printf("\ntensors\n  %-*s  %-9s  %-18s %12s %10s  %s\n", int(nameWidth), "name", "dtype",
              "shape", "elements", "bytes", "storage");
  uint64_t elements = 0, bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    std::string storage = "-";
    if (t.storage >= 0) {
      const StorageInfo& s = storages[size_t(t.storage)];
      storage = s.key;
      if (s.useCount > 1) storage += " (shared by " + std::to_string(s.useCount) + ")";
      if (s.location != "cpu") storage += " " + s.location;
    } else if (t.isMeta) {
      storage = "meta";
    }
    if (file.shards() && t.storage >= 0) {
      storage = chunksText(*file.shards(), size_t(t.storage));
      // How a Megatron tensor's slices were joined, per tensor.
      if (const std::string& note = file.shards()->tensors()[size_t(t.storage)].note; !note.empty())
        storage += "; " + note;
    }
    if (!t.error.empty()) storage += "  ERROR: " + t.error;
    std::printf("  %-*s  %-9s  %-18s %12s %10s  %s\n", int(nameWidth), names[i].c_str(),
                std::string(dtypeName(t.dtype)).c_str(), t.shapeString().c_str(),
                withThousands(t.numel()).c_str(), humanBytes(t.nbytes()).c_str(), storage.c_str());
    elements += t.numel();
    bytes += t.nbytes();
  }
  uint64_t storageBytes = 0;
  for (const StorageInfo& s : storages) storageBytes += s.nbytes();
  std::printf("\ntotal       %zu tensors, %s elements, %s; %zu storages holding %s\n",
              tensors.size(), withThousands(elements).c_str(), humanBytes(bytes).c_str(),
              storages.size(), humanBytes(storageBytes).c_str());
}

}  // namespace

int runInfo(int argc, char** argv) {
  Args args;
  std::string problem;
  if (!parseArgs(argc, argv, 2, {"--json"}, args, problem)) return usageError(problem, "info");
  if (args.positional.size() != 1) return usageError("info takes exactly one FILE", "info");
  if (const auto remote = remotePaths(args.positional, problem))
    return runRemoteInfo(remote->front(), args.has("--json"));
  if (!problem.empty()) return usageError(problem, "info");
  // A Trainer's checkpoint-<step>/ folder: its weights, as Inspect opens
  // them, with its optimizer.pt's state.
  std::string path = args.positional[0];
  std::string optimizerPath, optimizerName;
  std::unique_ptr<CheckpointFile> file;
  OtherOptimizer other;
  try {
    if (const auto folder = trainerFolder(path)) {
      path = folder->weights;
      for (const CheckpointPart& p : folder->parts)
        if (p.role == "optimizer") {
          optimizerPath = p.path;
          optimizerName = p.file;
        }
    }
    file = CheckpointFile::open(path);
    if (!optimizerPath.empty()) other = {CheckpointFile::open(optimizerPath), optimizerName};
  } catch (const FormatError& e) {
    return failWith(e.what());
  }
  if (args.has("--json")) {
    nlohmann::ordered_json doc = infoDocument(*file);
    if (other.file && !doc.contains("optimizer")) {
      nlohmann::ordered_json o =
          infoDocument(*other.file).value("optimizer", nlohmann::ordered_json());
      if (!o.is_null()) {
        o["file"] = other.file->path();
        const CheckpointView weights(*file), opt(*other.file);
        const TrainerOptimizerNames named = trainerOptimizerNames(weights, opt);
        if (!named.names.empty()) o["mapped"] = o.value("params", 0);
        o["note"] = named.note;
        doc["optimizer"] = std::move(o);
      }
    }
    printJson(doc);
  } else {
    printText(*file, other);
  }
  const std::string failure = infoFailure(*file);
  return failure.empty() ? kExitOk : failWith(failure);
}

nlohmann::ordered_json infoDocument(const CheckpointFile& file) {
  nlohmann::ordered_json doc = toJson(file);
  // The state dict as the rest of the app names it: wrapper prefixes
  // ("module.", "_orig_mod.") stripped, and whether there were any.
  const CheckpointView view(file);
  if (view.modelState()) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const StateEntry& e : view.entries()) {
      names.push_back(e.name);
      if (e.tensor >= 0 && size_t(e.tensor) < doc["tensors"].size())
        doc["tensors"][size_t(e.tensor)]["name"] = e.name;
    }
    doc["model_state"] = {{"key", view.modelStateKey()},
                          {"ddp_wrapped", view.ddpPrefix()},
                          {"compiled", view.compiledPrefix()},
                          {"names", std::move(names)}};
  }
  // The Summary's "N of N mapped to parameters", and what it counts.
  if (const auto o = summarizeOptimizer(view)) {
    nlohmann::ordered_json hyper = nlohmann::ordered_json::object();
    for (const auto& [key, value] : o->hyper) hyper[key] = value;
    doc["optimizer"] = {{"with_state", o->withState},
                        {"groups", o->groups},
                        {"hyperparameters", std::move(hyper)},
                        {"params", o->params},
                        {"mapped", o->mapped}};
  }
  return doc;
}

std::string infoFailure(const CheckpointFile& file) {
  // Everything readable is printed; a tensor whose bytes are not there (a
  // missing storage record, an extent past its storage) still fails the
  // command, as diff and verify do.
  for (const StorageInfo& s : file.storages())
    if (!s.error.empty()) return file.path() + ": storage " + s.key + ": " + s.error;
  for (const TensorInfo& t : file.tensors())
    if (!t.error.empty()) return file.path() + ": tensor " + joinPath(t.path) + ": " + t.error;
  return {};
}

}  // namespace ckpt::cli
