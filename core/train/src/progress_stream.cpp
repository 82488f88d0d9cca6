#include "ckpt/train/progress_stream.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "ckpt/format/json_export.h"
#include "ckpt/format/json_text.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kPrefix = "ckptscope-progress ";

// Paths are bytes: dumpJson writes a byte that is not UTF-8 as \udcXY
// (nlohmann's dump() threw, ending the run mid-step), parseJsonText reads
// it back as that byte.
std::string line(const json& j) {
  return std::string(kPrefix) + dumpJson(j);
}

}  // namespace

std::string progressLine(const TrainJobInfo& i) {
  return line({{"event", "prepared"},
               {"rank", i.rank},
               {"world_size", i.worldSize},
               {"backend", i.backend},
               {"device", i.device},
               {"run_name", i.runName},
               {"stage", i.stage},
               {"output_dir", i.outputDir},
               {"start_step", i.startStep},
               {"max_steps", i.maxSteps},
               {"tokens_per_step", i.tokensPerStep},
               {"notes", i.notes},
               {"config", i.configJson}});
}

std::string progressLine(const StepReport& r) {
  json j{{"event", "step"},
         {"step", r.step},
         {"max_steps", r.maxSteps},
         {"loss", r.loss},
         {"lr", r.learningRate},
         {"tokens_seen", r.tokensSeen},
         {"tokens_per_second", r.tokensPerSecond},
         {"elapsed", r.elapsedSeconds},
         {"allreduce_seconds", r.allReduceSeconds}};
  if (r.allReduceBuckets > 0) {
    j["allreduce_buckets"] = r.allReduceBuckets;
    j["allreduce_buckets_in_backward"] = r.allReduceBucketsInBackward;
  }
  if (r.valLoss) j["val_loss"] = *r.valLoss;
  if (!r.savedCheckpoint.empty()) j["saved"] = r.savedCheckpoint;
  if (!r.message.empty()) j["message"] = r.message;
  return line(j);
}

std::string progressLine(const RunResult& r) {
  json j{{"event", "result"},
         {"outcome", r.outcome == RunOutcome::Finished ? "finished" : "stopped"},
         {"step", r.step},
         {"last_checkpoint", r.lastCheckpoint},
         {"output_dir", r.outputDir}};
  if (r.bestValLoss) j["best_val_loss"] = *r.bestValLoss;
  return line(j);
}

std::optional<ProgressEvent> parseProgressLine(const std::string& text) {
  if (text.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  try {
    const json j = parseJsonText(std::string_view(text).substr(kPrefix.size()));
    const std::string event = j.at("event").get<std::string>();
    ProgressEvent e;
    if (event == "prepared") {
      e.kind = ProgressEvent::Kind::Prepared;
      TrainJobInfo& i = e.info;
      i.rank = j.at("rank").get<int>();
      i.worldSize = j.at("world_size").get<int>();
      i.backend = j.at("backend").get<std::string>();
      i.device = j.at("device").get<std::string>();
      i.runName = j.at("run_name").get<std::string>();
      i.stage = j.at("stage").get<std::string>();
      i.outputDir = j.at("output_dir").get<std::string>();
      i.startStep = j.at("start_step").get<int64_t>();
      i.maxSteps = j.at("max_steps").get<int64_t>();
      i.tokensPerStep = j.at("tokens_per_step").get<int64_t>();
      i.notes = j.at("notes").get<std::string>();
      i.configJson = j.at("config").get<std::string>();
    } else if (event == "step") {
      e.kind = ProgressEvent::Kind::Step;
      StepReport& r = e.step;
      r.step = j.at("step").get<int64_t>();
      r.maxSteps = j.at("max_steps").get<int64_t>();
      r.loss = j.at("loss").get<double>();
      r.learningRate = j.at("lr").get<double>();
      r.tokensSeen = j.at("tokens_seen").get<int64_t>();
      r.tokensPerSecond = j.at("tokens_per_second").get<double>();
      r.elapsedSeconds = j.at("elapsed").get<double>();
      r.allReduceSeconds = j.at("allreduce_seconds").get<double>();
      r.allReduceBuckets = j.value("allreduce_buckets", 0);
      r.allReduceBucketsInBackward = j.value("allreduce_buckets_in_backward", 0);
      if (j.contains("val_loss")) r.valLoss = j["val_loss"].get<double>();
      r.savedCheckpoint = j.value("saved", std::string());
      r.message = j.value("message", std::string());
    } else if (event == "result") {
      e.kind = ProgressEvent::Kind::Result;
      RunResult& r = e.result;
      r.outcome = j.at("outcome").get<std::string>() == "stopped" ? RunOutcome::Stopped
                                                                  : RunOutcome::Finished;
      r.step = j.at("step").get<int64_t>();
      r.lastCheckpoint = j.at("last_checkpoint").get<std::string>();
      r.outputDir = j.at("output_dir").get<std::string>();
      if (j.contains("best_val_loss")) r.bestValLoss = j["best_val_loss"].get<double>();
    } else {
      return std::nullopt;
    }
    return e;
  } catch (const std::exception&) {
    return std::nullopt;  // not ours after all, or cut short
  }
}

}  // namespace ckpt
