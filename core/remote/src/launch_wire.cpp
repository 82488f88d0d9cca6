#include "ckpt/remote/launch_wire.h"

#include <cctype>
#include <filesystem>
#include <stdexcept>

namespace ckpt::remote {

using Json = nlohmann::ordered_json;

Json launchParams(const LaunchRequest& r) {
  Json p{{"command", r.command}, {"checkpoint", r.checkpoint}};
  if (!r.data.empty()) p["data"] = r.data;
  if (!r.out.empty()) p["out"] = r.out;
  if (!r.stage.empty()) p["stage"] = r.stage;
  if (r.learningRate) p["lr"] = *r.learningRate;
  if (r.maxSteps) p["max_steps"] = *r.maxSteps;
  if (!r.device.empty()) p["device"] = r.device;
  p["wait_ms"] = r.waitMs;
  return p;
}

namespace {

std::string text(const Json& j, const char* field, bool required = true) {
  if (j.contains(field) && j[field].is_string()) return j[field].get<std::string>();
  if (required) throw std::runtime_error(std::string("the agent's answer has no ") + field);
  return {};
}

}  // namespace

LaunchPlan launchPlanFromJson(const Json& j) {
  LaunchPlan p;
  p.host = text(j, "host", false);
  p.runDir = text(j, "run_dir");
  p.runName = text(j, "run_name", false);
  p.metrics = text(j, "metrics");
  if (j.contains("argv") && j["argv"].is_array())
    for (const Json& a : j["argv"])
      if (a.is_string()) p.argv.push_back(a.get<std::string>());
  p.script = text(j, "script", false);
  p.sbatchPath = j.contains("sbatch") && j["sbatch"].is_string() ? j["sbatch"].get<std::string>()
                                                                 : std::string();
  p.sbatch = !p.sbatchPath.empty();
  return p;
}

LaunchResult launchResultFromJson(const Json& j) {
  LaunchResult r;
  r.runDir = text(j, "run_dir");
  r.runName = text(j, "run_name", false);
  r.metrics = text(j, "metrics");
  r.log = text(j, "log", false);
  if (j.contains("pid") && j["pid"].is_number_integer()) r.pid = j["pid"].get<int64_t>();
  r.started = j.value("started", false);
  r.jobId = text(j, "job_id", false);
  r.scriptFile = text(j, "script_file", false);
  return r;
}

Json stopParams(const StopRequest& r) {
  Json p{{"run_dir", r.runDir}};
  if (r.pid > 0) p["pid"] = r.pid;
  if (!r.jobId.empty()) p["job_id"] = r.jobId;
  if (!r.signal) p["signal"] = false;
  if (r.waitMs > 0) p["wait_ms"] = r.waitMs;
  return p;
}

StopResult stopResultFromJson(const Json& j) {
  StopResult r;
  r.runDir = text(j, "run_dir");
  if (j.contains("pid") && j["pid"].is_number_integer()) r.pid = j["pid"].get<int64_t>();
  r.jobId = text(j, "job_id", false);
  r.signalled = j.value("signalled", false);
  r.alreadyStopping = j.value("already_stopping", false);
  r.running = j.value("running", false);
  r.state = text(j, "state", false);
  r.log = text(j, "log", false);
  if (j.contains("ended") && j["ended"].is_object()) {
    const Json& e = j["ended"];
    r.outcome = text(e, "outcome", false);
    if (e.contains("step") && e["step"].is_number_integer()) r.step = e["step"].get<int64_t>();
    r.checkpoint = text(e, "checkpoint", false);
  }
  return r;
}

bool trainerEnding(const std::string& log, std::string& outcome, int64_t& step,
                   std::string& checkpoint) {
  // The trainer's last line (app/train/main.cpp runTrainer): "%s at step %lld: %s".
  size_t end = log.size();
  while (end > 0) {
    const size_t start = log.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string line = log.substr(from, end - from);
    for (const char* word : {"stopped", "finished"}) {
      const std::string head = std::string(word) + " at step ";
      if (line.rfind(head, 0) != 0) continue;
      size_t i = head.size();
      size_t digits = i;
      while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits])))
        ++digits;
      if (digits == i || line.compare(digits, 2, ": ") != 0) continue;
      outcome = word;
      step = std::stoll(line.substr(i, digits - i));
      checkpoint = line.substr(digits + 2);
      return true;
    }
    if (start == std::string::npos) break;
    end = start;
  }
  return false;
}

std::string sbatchJobId(const std::string& out) {
  static const std::string kSays = "Submitted batch job ";
  const size_t at = out.find(kSays);
  if (at == std::string::npos) return {};
  size_t end = at + kSays.size();
  while (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) ++end;
  return out.substr(at + kSays.size(), end - at - kSays.size());
}

namespace {

std::string parentOf(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

}  // namespace

std::vector<std::string> launchRoots(const LaunchRequest& request) {
  std::vector<std::string> roots{parentOf(parentOf(request.checkpoint))};
  if (!request.data.empty()) roots.push_back(request.data);
  if (!request.out.empty()) roots.push_back(parentOf(request.out));
  return roots;
}

std::string pathOnHost(const std::string& text, const RemotePath& on, std::string& path) {
  std::optional<RemotePath> r;
  try {
    r = parseRemotePath(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (r && r->endpoint() != on.endpoint())
    return text + " is on " + r->endpoint() + ", the checkpoint on " + on.endpoint() +
           ": both must be on one host";
  path = r ? r->path : text;
  return {};
}

}  // namespace ckpt::remote
