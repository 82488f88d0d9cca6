// The agent's methods (docs/REMOTE.md): each calls what the matching
// command computes (documents.h), so a remote answer is the local one.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <thread>

#include "ckpt/analysis/diff.h"
#include "ckpt/analysis/tensor_stats.h"
#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/value.h"
#include "ckpt/index/checkpoint_description.h"
#include "ckpt/index/hparams.h"
#include "ckpt/index/metrics.h"
#include "ckpt/index/scanner.h"
#include "ckpt/index/wandb.h"
#include "ckpt/remote/describe_wire.h"
#include "ckpt/remote/diff_wire.h"
#include "ckpt/remote/hparams_wire.h"
#include "ckpt/remote/metrics_wire.h"
#include "ckpt/remote/protocol.h"
#include "ckpt/remote/scan_wire.h"
#include "ckpt/remote/shards_wire.h"
#include "documents.h"
#include "on_cores.h"
#include "serve.h"

namespace fs = std::filesystem;

namespace ckpt::cli::serve {
namespace {

Json orNull(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

// JSON has no NaN: as on the metrics wire, "nan", "inf", "-inf".
Json real(double d) {
  return remote::numberToWire(d);
}

std::unique_ptr<CheckpointFile> openCheckpoint(const std::string& path) {
  return CheckpointFile::open(path);  // FormatError names the file and byte
}

// params.tensor: an index into the file's tensors, or a tensor's name (its
// path in the file, "model_state.wte.weight", or its state-dict name).
size_t tensorIndex(const CheckpointFile& file, const Call& call) {
  const Json& t = call.params.contains("tensor") ? call.params["tensor"] : Json();
  const auto& tensors = file.tensors();
  if (t.is_number_unsigned() || t.is_number_integer()) {
    const int64_t i = t.get<int64_t>();
    if (i < 0 || size_t(i) >= tensors.size())
      throw ProtocolError("bad_field", "tensor: " + std::to_string(i) + " is not one of the " +
                                           std::to_string(tensors.size()) + " tensors of " +
                                           file.path());
    return size_t(i);
  }
  if (!t.is_string()) throw ProtocolError("bad_field", "tensor: an index or a name is needed");
  const std::string name = t.get<std::string>();
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name() == name || joinPath(tensors[i].path) == name) return i;
  const Json names = infoDocument(file)["tensors"];
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].contains("name") && names[i]["name"] == name) return i;
  throw ProtocolError("not_found", "tensor: " + file.path() + " has no tensor '" + name + "'");
}

Json statsJson(const TensorStats& s) {
  return Json{{"count", s.count},   {"finite", s.finite},      {"zeros", s.zeros},
              {"nans", s.nans},     {"pos_inf", s.posInf},     {"neg_inf", s.negInf},
              {"min", real(s.min)}, {"max", real(s.max)},      {"mean", real(s.mean)},
              {"std", real(s.std)}, {"l2norm", real(s.l2norm)}};
}

bool isLog(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".log" || ext == ".out" || ext == ".err" || ext == ".txt";
}

// `metrics` with `since`: what each followed file gained after its offset,
// read from there (nothing before it is read again).
Json metricsSince(const Call& call) {
  const Json& since = call.params["since"];
  if (!since.is_object())
    throw ProtocolError("bad_field", "since: an object {file: byte offset} is needed");
  Json files = Json::array();
  for (auto it = since.begin(); it != since.end(); ++it) {
    throwIfCancelled(call);
    const std::string file = call.roots.checkFollowed(it.key(), "since");
    if (!it.value().is_number_unsigned() && !it.value().is_number_integer())
      throw ProtocolError("bad_field", "since: the offset of " + it.key() + " is not a number");
    const int64_t from = it.value().get<int64_t>();
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    Json f{{"file", it.key()}, {"from", from}};
    if (ec || from < 0 || uint64_t(from) > size) {
      // Rewritten or cut short: the client reads the run again.
      f["truncated"] = true;
      files.push_back(std::move(f));
      continue;
    }
    uint64_t end = uint64_t(from);
    Json points = Json::array();
    std::vector<std::string> problems;
    if (isLog(file)) {
      for (const LoggedPoint& p : readConsoleLogLines(file, uint64_t(from), &end)) {
        Json w = remote::pointToWire(p.point);
        points.push_back(Json{{"run", p.run}, {"metric", p.metric}, {"point", std::move(w)}});
      }
    } else if (isWandbHistoryJsonl(file)) {
      // An older W&B SDK's history: its rows are keyed by `_step`, not `step`.
      for (auto& [metric, p] : readWandbPoints(file, uint64_t(from), &end, &problems))
        points.push_back(Json{{"metric", metric}, {"point", remote::pointToWire(p)}});
    } else if (fs::path(file).extension() == ".jsonl") {
      for (auto& [metric, p] : readMetricsJsonl(file, uint64_t(from), &end, &problems))
        points.push_back(Json{{"metric", metric}, {"point", remote::pointToWire(p)}});
    } else {
      // Read whole (trainer_state.json, metrics.csv, event files): whether
      // it changed; the client reads its run again then.
      f["reread"] = size != uint64_t(from);
      end = size;
    }
    f["to"] = end;
    f["points"] = std::move(points);
    f["problems"] = problems;
    files.push_back(std::move(f));
  }
  return Json{{"files", std::move(files)}};
}

// A folder's files (path -> size, mtime in ns), for watch.
using Snapshot = std::map<std::string, std::pair<uint64_t, int64_t>>;
constexpr size_t kMaxWatchedFiles = 200000;

Snapshot snapshot(const std::string& root) {
  Snapshot s;
  std::error_code ec;
  struct stat st {};
  if (::stat(root.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    s[root] = {uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    return s;
  }
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end && s.size() < kMaxWatchedFiles; it.increment(ec)) {
    const std::string p = it->path().string();
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    s[p] = {uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  }
  return s;
}

Json watch(Call& call) {
  const std::string path = call.path("path");
  const int64_t intervalMs = call.integer("interval_ms", 1000, 100, 3600 * 1000);
  // `recent_ms`: the client listed the folder that long ago (at most a day):
  // what was written since is reported at once, as changed (a checkpoint
  // saved between the listing and this first look would go unreported).
  const int64_t recentMs = call.integer("recent_ms", 0, 0, 86400 * 1000);
  Snapshot before = snapshot(path);
  call.event(Json{{"watching", path}, {"files", before.size()}, {"interval_ms", intervalMs}});
  if (recentMs > 0) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const int64_t since = int64_t(now.tv_sec) * 1000000000 + now.tv_nsec - recentMs * 1000000;
    Json recent = Json::array();
    for (const auto& [p, st] : before)
      if (st.second >= since) recent.push_back(p);
    if (!recent.empty())
      call.event(Json{
          {"added", Json::array()}, {"changed", std::move(recent)}, {"removed", Json::array()}});
  }
  for (;;) {
    // Sleep in short steps: cancel (or the client leaving) ends the watch at once.
    const auto due = std::chrono::steady_clock::now() + std::chrono::milliseconds(intervalMs);
    while (std::chrono::steady_clock::now() < due) {
      if (call.cancelled) return Json{{"stopped", true}};
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Snapshot now = snapshot(path);
    Json added = Json::array(), changed = Json::array(), removed = Json::array();
    for (const auto& [p, st] : now) {
      const auto it = before.find(p);
      if (it == before.end())
        added.push_back(p);
      else if (it->second != st)
        changed.push_back(p);
    }
    for (const auto& [p, st] : before)
      if (!now.count(p)) removed.push_back(p);
    if (!added.empty() || !changed.empty() || !removed.empty())
      call.event(Json{{"added", std::move(added)},
                      {"changed", std::move(changed)},
                      {"removed", std::move(removed)}});
    before = std::move(now);
  }
}

// The runs under `path` as findMetricRuns finds them, a folder's listing
// shared with the requests that came with this one (ScanShare).
std::vector<RunEntry> runsUnder(const Call& call, const std::string& path) {
  return call.scans ? call.scans->runs(path, call.received) : findMetricRuns(path);
}

// Each run's hyperparameters under `paths` (the runs `metrics` reads
// there), read on the host's cores: a sweep's RUN.json files are a thousand
// small reads.
Json hparams(Call& call) {
  std::vector<std::string> paths = call.texts("paths", true);
  for (std::string& p : paths) p = call.roots.check(p, "paths");
  std::vector<RunEntry> runs;
  for (const std::string& p : paths)
    for (RunEntry& r : runsUnder(call, p)) runs.push_back(std::move(r));
  std::vector<remote::RunHparams> out(runs.size());
  forEachOnCores(
      runs.size(),
      [&](size_t i) {
        out[i].run = runs[i].name;
        out[i].path = runs[i].path;
        try {
          out[i].hparams = readHparams(runs[i], &out[i].problems);
        } catch (const std::exception& e) {  // (its sources say what they could not read)
          out[i].problems.push_back(runs[i].path + ": " + e.what());
        }
      },
      [&call] { return bool(call.cancelled); });
  throwIfCancelled(call);
  return remote::hparamsToWire(out);
}

}  // namespace

std::shared_ptr<const ScanResult> ScanShare::scan(const std::string& path,
                                                  Clock::time_point received) {
  {
    const std::lock_guard lock(m_mutex);
    if (m_scan && m_path == path && received <= m_done) return m_scan;
  }
  auto made = std::make_shared<const ScanResult>(scanDirectory(path));
  const std::lock_guard lock(m_mutex);
  m_path = path;
  m_scan = made;
  m_done = Clock::now();
  return made;
}

std::vector<RunEntry> ScanShare::runs(const std::string& path, Clock::time_point received) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return findMetricRuns(path);
  return scan(path, received)->runs;
}

void ScanShare::clear() {
  const std::lock_guard lock(m_mutex);
  m_scan.reset();
  m_path.clear();
}

Json runMethod(const std::string& method, Call& call) {
  if (method == "open") return Json{{"root", call.roots.open(call.text("path"))}};
  if (method == "scan") {
    // `full`: every field of the scan (the app lists remote runs with it), not only ls --json's.
    const Json full = call.params.contains("full") ? call.params["full"] : Json(false);
    if (!full.is_boolean()) throw ProtocolError("bad_field", "full: must be true or false");
    // `file`: a path that is one file (ssh://host/run/step_100.pt opened in
    // the app) is listed as that file in its folder, as the app lists a
    // file opened here, and the answer says so ({file: true}); without it
    // such a path is refused, as `ls FILE` refuses it.
    const Json file = call.params.contains("file") ? call.params["file"] : Json(false);
    if (!file.is_boolean()) throw ProtocolError("bad_field", "file: must be true or false");
    if (file.get<bool>()) {
      const std::string path = call.path("path");
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        const fs::path p(path);
        RunEntry run;
        run.path = run.root = p.parent_path().string();
        run.name = p.parent_path().filename().string();
        run.checkpoints.push_back(describeCheckpoint(path, p.filename().string()));
        ScanResult one;
        one.root = run.path;
        one.runs.push_back(std::move(run));
        return Json{{"scan", remote::scanToWire(one, full.get<bool>())}, {"file", true}};
      }
    }
    const std::shared_ptr<const ScanResult> scanned =
        call.scans ? call.scans->scan(call.path("path"), call.received)
                   : std::make_shared<const ScanResult>(scanDirectory(call.path("path")));
    return full.get<bool>() ? Json{{"scan", remote::scanToWire(*scanned, /*full=*/true)}}
                            : Json{{"document", lsDocument(*scanned)}};
  }
  if (method == "info") {
    const auto file = openCheckpoint(call.path("path"));
    return Json{{"document", infoDocument(*file)}, {"failure", orNull(infoFailure(*file))}};
  }
  if (method == "describe") {
    // What the app's Inspect tab shows of it (checkpoint_description.h).
    return Json{{"description", remote::describeToWire(describeCheckpointAt(call.path("path")))}};
  }
  if (method == "shards") {
    // What the app's Shards tab shows of a checkpoint written by many ranks
    // (ckpt/remote/shards_wire.h): its parts, logical tensors and chunks,
    // read from the description and the parts' headers, never their bytes.
    const std::string path = call.path("path");
    const auto file = openCheckpoint(path);
    if (!file->shards())
      throw ProtocolError("bad_field", "path: " + path + " is one file, not a sharded checkpoint");
    return Json{{"shards", remote::shardsToWire(listShards(*file->shards()))}};
  }
  if (method == "stats") {
    const auto file = openCheckpoint(call.path("path"));
    const size_t i = tensorIndex(*file, call);
    // `bins`, `heat_rows`, `heat_cols`: the Tensor tab's histogram and heat
    // map too, computed as it computes them here (analyzeTensor).
    AnalysisOptions options;
    options.bins = int(call.integer("bins", 0, 0, 100000));
    options.heatRows = int(call.integer("heat_rows", 0, 0, 4096));
    options.heatCols = int(call.integer("heat_cols", 0, 0, 4096));
    const auto progress = [&call](uint64_t done, uint64_t total) {
      call.progress(done, total);
      return !call.cancelled;
    };
    if (options.bins > 0 || (options.heatRows > 0 && options.heatCols > 0)) {
      const auto a = analyzeTensor(file->tensorData(i), options, progress);
      throwIfCancelled(call);
      if (!a) throw ProtocolError("cancelled", "cancelled");
      Json out{{"tensor", i}, {"stats", statsJson(a->stats)}};
      if (options.bins > 0) {
        Json counts = Json::array();
        for (uint64_t c : a->histogram.counts) counts.push_back(c);
        out["histogram"] =
            Json{{"lo", real(a->histogram.lo)}, {"hi", real(a->histogram.hi)}, {"counts", counts}};
      }
      if (options.heatRows > 0 && options.heatCols > 0) {
        const HeatMap& h = a->heatMap;
        Json values = Json::array();
        for (double v : h.values) values.push_back(real(v));
        out["heat_map"] = Json{{"source_rows", h.sourceRows},
                               {"source_cols", h.sourceCols},
                               {"rows", h.rows},
                               {"cols", h.cols},
                               {"values", std::move(values)}};
      }
      return out;
    }
    options.bins = 0;
    const auto stats = computeStats(file->tensorData(i), progress);
    throwIfCancelled(call);
    if (!stats) throw ProtocolError("cancelled", "cancelled");
    return Json{{"tensor", i}, {"stats", statsJson(*stats)}};
  }
  if (method == "slice") {
    const auto file = openCheckpoint(call.path("path"));
    const size_t i = tensorIndex(*file, call);
    const TensorData data = file->tensorData(i);
    const int64_t first = call.integer("first", 0, 0, INT64_MAX);
    const int64_t count = call.integer("count", 1000, 0, int64_t(remote::kMaxSliceElements));
    std::vector<double> values(static_cast<size_t>(count), 0.0);
    const size_t n = uint64_t(first) < data.numel()
                         ? data.read(uint64_t(first), values.size(), values.data())
                         : 0;
    Json out = Json::array();
    for (size_t k = 0; k < n; ++k) out.push_back(real(values[k]));
    return Json{
        {"tensor", i}, {"numel", data.numel()}, {"first", first}, {"values", std::move(out)}};
  }
  if (method == "metrics") {
    if (call.params.contains("since")) return metricsSince(call);
    std::vector<std::string> paths = call.texts("paths", false), logs = call.texts("logs", false);
    if (paths.empty() && logs.empty())
      throw ProtocolError("missing_field",
                          "paths: at least one folder or file (or logs) is needed");
    for (std::string& p : paths) p = call.roots.check(p, "paths");
    for (std::string& p : logs) p = call.roots.check(p, "logs");
    // `columns`: the client reads the compact form (docs/REMOTE.md).
    const Json columns = call.params.contains("columns") ? call.params["columns"] : Json(false);
    if (!columns.is_boolean()) throw ProtocolError("bad_field", "columns: must be true or false");
    // `stream`: each run an event as soon as it is read, the result none
    // (docs/REMOTE.md): the client decodes and prints one while the next is read.
    const Json stream = call.params.contains("stream") ? call.params["stream"] : Json(false);
    if (!stream.is_boolean()) throw ProtocolError("bad_field", "stream: must be true or false");
    const FindRunsFn find = [&call](const std::string& p) { return runsUnder(call, p); };
    // Written as text: a tree of a sweep's points cost more than reading them.
    // Each source a run was read from may be followed (`since`), inside
    // the roots or not (a log beside the run folder opened).
    const auto followed = [&call](const RunMetrics& run) {
      for (const auto& [file, end] : run.readEnds) call.roots.follow(file);
    };
    if (!stream.get<bool>()) {
      const std::vector<RunMetrics> runs = metricsOf(paths, logs, find);
      for (const RunMetrics& run : runs) followed(run);
      remote::appendMetricsResultText(call.resultText, runs, columns.get<bool>());
      return Json();
    }
    std::vector<RunMetrics> one(1);
    std::string text;
    metricsOf(paths, logs, find, [&](RunMetrics&& run) {
      followed(run);
      one.front() = std::move(run);
      text.clear();
      remote::appendMetricsResultText(text, one, columns.get<bool>());
      call.eventText(text);
    });
    remote::appendMetricsResultText(call.resultText, {}, columns.get<bool>());
    return Json();
  }
  if (method == "diff") {
    // `full`: every field of the diff and every metadata key (the app's
    // Compare tab shows them, diff_wire.h), not only diff --json's document.
    const Json full = call.params.contains("full") ? call.params["full"] : Json(false);
    if (!full.is_boolean()) throw ProtocolError("bad_field", "full: must be true or false");
    const auto a = openCheckpoint(call.path("a"));
    const auto b = openCheckpoint(call.path("b"));
    const int64_t top = call.integer("top", 0, 0, 1 << 20);
    DiffOptions options = diffOptions(size_t(top));
    options.progress = [&call](size_t done, size_t total) {
      call.progress(done, total);
      return !call.cancelled;
    };
    const CheckpointDiff d = diffCheckpoints(*a, *b, options);
    throwIfCancelled(call);
    if (full.get<bool>())
      return Json{{"diff", remote::diffToWire(d, diffMetadata(*a, *b, /*everyKey=*/true))},
                  {"failure", orNull(diffFailure(d))}};
    return Json{{"document", diffToJson(d, size_t(top))}, {"failure", orNull(diffFailure(d))}};
  }
  if (method == "scanSafety") {
    std::vector<std::string> paths = call.texts("paths", true);
    for (std::string& p : paths) p = call.roots.check(p, "paths");
    const bool recursive = call.params.value("recursive", false);
    const SafetyScan s = scanSafety(paths, recursive, /*printText=*/false);
    return Json{{"document", s.document}, {"exit", s.exit}, {"failure", orNull(s.problem)}};
  }
  if (method == "hparams") return hparams(call);
  if (method == "skeleton") return skeleton(call);
  if (method == "tensorBytes") return tensorBytes(call);
  if (method == "watch") return watch(call);
  if (method == "report") return report(call);
  if (method == "launchPlan") return launchPlan(call);
  if (method == "launch") return launch(call);
  if (method == "submit") return submit(call);
  if (method == "stop") return stop(call);
  throw ProtocolError("unknown_method", "unknown method '" + method + "'");
}

}  // namespace ckpt::cli::serve
