#pragma once
// MLflow's file store (mlflow.store.tracking.file_store.FileStore), as
// `mlflow.log_metric` / `log_param` / `set_tag` leave it:
//
//   mlruns/<experiment_id>/meta.yaml            the experiment (name, ...)
//   mlruns/<experiment_id>/<run_id>/meta.yaml   run_name, start_time, end_time, status, ...
//   mlruns/<experiment_id>/<run_id>/metrics/<key>   a line per logged value:
//                                               "<timestamp ms> <value> <step>"
//                                               (a key with '/' is a subfolder)
//   mlruns/<experiment_id>/<run_id>/params/<key>    the value, as text
//   mlruns/<experiment_id>/<run_id>/tags/mlflow.runName
//   mlruns/.trash/                              deleted runs (never listed)
//
// A run folder is a run without checkpoints (artifacts/ are not read); its
// curves are its metrics/ files. No Qt, no LibTorch; no YAML library: the
// run's meta.yaml is read as the flat `key: value` lines FileStore writes.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/index/metrics.h"

namespace ckpt {

// RunEntry::trainer of a run these rules find.
inline constexpr std::string_view kMlflowId = "mlflow";

// A folder FileStore made for a run: a meta.yaml and a metrics/, params/
// or tags/ folder in it, and a meta.yaml in its parent (the experiment).
[[nodiscard]] bool isMlflowRunFolder(const std::string& dir);

// The run a file logged as an artifact belongs to (mlflow.log_artifact,
// mlflow.pytorch.log_model: <run>/artifacts/<anything>/<file>): that run's
// folder, so that a checkpoint saved there is the run's, not a run of its
// own; nothing for any other file.
[[nodiscard]] std::optional<std::string> mlflowRunOf(const std::string& path);

// The run's name as the MLflow UI shows it: meta.yaml's run_name, else
// tags/mlflow.runName, else the folder's name (the run id).
[[nodiscard]] std::string mlflowRunName(const std::string& dir);

// Every file under <dir>/metrics, by path; the metric of each is its path
// relative to that folder ("train/loss").
[[nodiscard]] std::vector<std::string> mlflowMetricFiles(const std::string& dir);

// The metric a file under <runDir>/metrics holds: its relative path, '/'-separated.
[[nodiscard]] std::string mlflowMetricName(const std::string& runDir, const std::string& file);

// One metrics/<key> file: each line "timestamp value step" (or the old
// "timestamp value", step 0) a point through addInFileOrder, its wall time
// the timestamp in seconds (ms / 1000). A line that is not that is skipped
// and named ("file: line N: why") in `problems`. `*end` gets the byte just
// after the last complete line. Throws std::runtime_error naming the file
// when it cannot be opened.
[[nodiscard]] FileSeries readMlflowMetric(const std::string& path, const std::string& metric,
                                          uint64_t* end = nullptr,
                                          std::vector<std::string>* problems = nullptr);

// params/<key> files: key (with '/' for subfolders) -> the text written.
[[nodiscard]] std::map<std::string, std::string> readMlflowParams(const std::string& dir);

// What a run's meta.yaml and tags/ say beside its name: its status as
// MLflow names it (FileStore writes RunStatus's number: 1 RUNNING,
// 2 SCHEDULED, 3 FINISHED, 4 FAILED, 5 KILLED; a name is taken as it is),
// its start and end (ms since the epoch; end_time is null while it runs),
// and every tags/<key> file (mlflow.user, mlflow.source.name, the person's
// own; '/' for subfolders) with its text.
struct MlflowRunInfo {
  std::string status;  // "" when meta.yaml says none
  std::optional<int64_t> startMs, endMs;
  std::map<std::string, std::string> tags;
};
[[nodiscard]] MlflowRunInfo readMlflowRunInfo(const std::string& dir);

}  // namespace ckpt
