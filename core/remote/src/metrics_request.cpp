#include "ckpt/remote/metrics_request.h"

#include "ckpt/remote/metrics_wire.h"

namespace ckpt::remote {

std::vector<RunMetrics> requestRunMetrics(AgentClient& agent, const std::vector<std::string>& paths,
                                          const std::vector<std::string>& logs,
                                          const AgentClient::ProgressFn& progress,
                                          const AgentClient::CancelFn& cancelled) {
  AgentClient::Json params{{"paths", paths}, {"columns", true}};
  if (!logs.empty()) params["logs"] = logs;
  return metricsResultFromText(agent.callText("metrics", std::move(params), progress, cancelled));
}

}  // namespace ckpt::remote
