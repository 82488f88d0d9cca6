#pragma once
// One agent per host (ckpt::remote::AgentClient: `ckptscope-cli serve
// --stdio` started through the system ssh), started on first use, kept open
// and reused by every remote request of the window (connectAppAgent: on
// the host's one login, remote/sshquestions.h). Called from worker
// threads (BackgroundJob): requests to one host wait for each other, those
// to different hosts do not. No widgets here.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckpt/index/metrics.h"
#include "ckpt/remote/agent_client.h"

namespace ckpt {

class RemoteConnections {
 public:
  using Json = nlohmann::ordered_json;

  // `method` on the agent of `where`'s host (its endpoint: [user@]host[:port]),
  // started when there is none. An agent that went away since its last
  // answer (the connection dropped) is started again once, with the roots it
  // had opened; what fails then is thrown (ckpt::remote::RemoteError, whose
  // text says what to do), and the next call starts afresh.
  // `progress` and `cancelled` as AgentClient::call takes them: a cancelled
  // request is cancelled on the agent too, and throws RemoteError("cancelled").
  Json call(const remote::RemotePath& where, const std::string& method, Json params,
            const remote::AgentClient::ProgressFn& progress = {},
            const remote::AgentClient::CancelFn& cancelled = {});

  // Opens `root` on `where`'s host as a root (remembered, as call("open")
  // does) and, before its answer comes, lets `post` send the requests that
  // depend on it (AgentClient::post); `take` then reads their answers, in
  // the order they were posted, once `open` has answered. One round trip
  // for all of them: the host works on the next while an answer is read
  // here. An answer `take` leaves unread is skipped by the next request's
  // wait. Started, started again (`post` and `take` run again then) and
  // failing as call() does; a failed `open` throws before `take` runs.
  void openAndAsk(const remote::RemotePath& where, const std::string& root,
                  const std::function<void(remote::AgentClient& agent)>& post,
                  const std::function<void(remote::AgentClient& agent)>& take);

  // What the agent of `where`'s host said to hello (started when there is
  // none): its version, and whether sbatch is there ("sbatch").
  Json hello(const remote::RemotePath& where);

  // `use` with the agent of `where`'s host, under its lock, started and
  // started again as call() does (so `use` may run twice): work of several
  // requests that must not be interleaved with others (a comparison across
  // machines, remote/remotediff.h).
  void withAgentOf(const remote::RemotePath& where,
                   const std::function<void(remote::AgentClient& agent)>& use);

  // Whether an agent of `where`'s host is running now.
  [[nodiscard]] bool isConnected(const remote::RemotePath& where);

 private:
  struct Host {
    std::mutex mutex;  // one request at a time
    std::unique_ptr<remote::AgentClient> agent;
    std::vector<std::string> roots;  // opened: opened again on a new agent
  };
  std::shared_ptr<Host> host(const std::string& endpoint);
  static void start(Host& h, const remote::RemotePath& where);
  // `ask` on the host's agent, under its lock: started when there is none,
  // and once more on a new agent when the one kept from before is gone.
  // `ask` may run twice: it must not consume what it sends.
  void withAgent(const remote::RemotePath& where,
                 const std::function<void(Host& h, remote::AgentClient& agent)>& ask);

  std::mutex m_mutex;  // guards m_hosts
  std::map<std::string, std::shared_ptr<Host>> m_hosts;
};

}  // namespace ckpt
