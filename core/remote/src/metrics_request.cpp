#include "ckpt/remote/metrics_request.h"

#include <stdexcept>

#include "ckpt/remote/metrics_wire.h"

namespace ckpt::remote {

int64_t postRunMetrics(AgentClient& agent, const std::vector<std::string>& paths,
                       const std::vector<std::string>& logs) {
  AgentClient::Json params{{"paths", paths}, {"columns", true}, {"stream", true}};
  if (!logs.empty()) params["logs"] = logs;
  return agent.post("metrics", std::move(params));
}

std::vector<RunMetrics> awaitRunMetrics(AgentClient& agent, int64_t id,
                                        const AgentClient::ProgressFn& progress,
                                        const AgentClient::CancelFn& cancelled) {
  std::vector<RunMetrics> runs;
  awaitRunMetrics(
      agent, id, [&runs](RunMetrics&& run) { runs.push_back(std::move(run)); }, progress,
      cancelled);
  return runs;
}

void awaitRunMetrics(AgentClient& agent, int64_t id, const RunMetricsFn& each,
                     const AgentClient::ProgressFn& progress,
                     const AgentClient::CancelFn& cancelled) {
  // Each event is a result of its own ({runs: [RUN]}), read as the answer
  // is; what cannot be read is named by its place in the stream.
  size_t handed = 0;
  const auto handOver = [&each, &handed](std::string_view text) {
    std::vector<RunMetrics> runs;
    try {
      runs = metricsResultFromText(text);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string(e.what()) + ", after " + std::to_string(handed) +
                               " runs were read");
    }
    handed += runs.size();
    for (RunMetrics& run : runs) each(std::move(run));
  };
  handOver(agent.awaitText(id, "metrics", progress, cancelled, handOver));
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
