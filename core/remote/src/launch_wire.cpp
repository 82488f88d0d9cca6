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
