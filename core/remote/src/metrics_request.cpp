#include "ckpt/remote/metrics_request.h"

#include "ckpt/remote/metrics_wire.h"

namespace ckpt::remote {

std::vector<RunMetrics> requestRunMetrics(AgentClient& agent, const std::vector<std::string>& paths,
                                          const std::vector<std::string>& logs,
                                          const AgentClient::ProgressFn& progress,
                                          const AgentClient::CancelFn& cancelled) {
  return awaitRunMetrics(agent, postRunMetrics(agent, paths, logs), progress, cancelled);
}

int64_t postRunMetrics(AgentClient& agent, const std::vector<std::string>& paths,
                       const std::vector<std::string>& logs) {
  AgentClient::Json params{{"paths", paths}, {"columns", true}};
  if (!logs.empty()) params["logs"] = logs;
  return agent.post("metrics", std::move(params));
}

std::vector<RunMetrics> awaitRunMetrics(AgentClient& agent, int64_t id,
                                        const AgentClient::ProgressFn& progress,
                                        const AgentClient::CancelFn& cancelled) {
  return metricsResultFromText(agent.awaitText(id, "metrics", progress, cancelled));
}

int64_t postRunHparams(AgentClient& agent, const std::vector<std::string>& paths) {
  return agent.post("hparams", AgentClient::Json{{"paths", paths}});
}

std::vector<RunHparams> awaitRunHparams(AgentClient& agent, int64_t id, std::string& older) {
  older.clear();
  try {
    return hparamsFromWire(agent.await(id, "hparams"));
  } catch (const RemoteError& e) {
    if (e.code() != "unknown_method") throw;
    older = e.what();
    return {};
  }
}

}  // namespace ckpt::remote
