#include "remote/remoteconnections.h"

#include <algorithm>

#include "ckpt/version.h"
#include "remote/sshquestions.h"

namespace ckpt {

std::shared_ptr<RemoteConnections::Host> RemoteConnections::host(const std::string& endpoint) {
  std::lock_guard lock(m_mutex);
  std::shared_ptr<Host>& h = m_hosts[endpoint];
  if (!h) h = std::make_shared<Host>();
  return h;
}

void RemoteConnections::start(Host& h, const remote::RemotePath& where) {
  h.agent.reset();
  h.agent = connectAppAgent(where, std::string("ckptscope ") + CKPT_VERSION);
  // A new agent knows no roots: the ones the window opened are opened again
  // (one that is gone now fails when it is asked for, with its own message).
  for (const std::string& root : h.roots) {
    try {
      h.agent->call("open", Json{{"path", root}});
    } catch (const remote::RemoteError& e) {
      if (e.code() == "connection") throw;
    }
  }
}

void RemoteConnections::withAgent(
    const remote::RemotePath& where,
    const std::function<void(Host& h, remote::AgentClient& agent)>& ask) {
  const std::shared_ptr<Host> h = host(where.endpoint());
  std::lock_guard lock(h->mutex);
  // What means the connection is gone (or never was); any other error is
  // the agent's answer (not_found, ...) and the connection is fine.
  const auto lost = [](const remote::RemoteError& e) {
    return e.code() == "connection" || e.code() == "login" || e.code() == "not_installed" ||
           e.code() == "version";
  };
  const bool fresh = !h->agent;
  try {
    if (fresh) start(*h, where);
    ask(*h, *h->agent);
    return;
  } catch (const remote::RemoteError& e) {
    if (!lost(e)) throw;
    h->agent.reset();
    if (fresh) throw;
  }
  // The agent kept from before is gone (the connection dropped while idle): once more, anew.
  try {
    start(*h, where);
    ask(*h, *h->agent);
  } catch (const remote::RemoteError& e) {
    if (lost(e)) h->agent.reset();
    throw;
  }
}

RemoteConnections::Json RemoteConnections::call(const remote::RemotePath& where,
                                                const std::string& method, Json params,
                                                const remote::AgentClient::ProgressFn& progress,
                                                const remote::AgentClient::CancelFn& cancelled) {
  Json result;
  withAgent(where, [&](Host& h, remote::AgentClient& agent) {
    result = agent.call(method, params, progress, cancelled);
    if (method == "open" && params.contains("path") && params["path"].is_string() &&
        std::find(h.roots.begin(), h.roots.end(), params["path"].get<std::string>()) ==
            h.roots.end())
      h.roots.push_back(params["path"].get<std::string>());
  });
  return result;
}

void RemoteConnections::openAndAsk(const remote::RemotePath& where, const std::string& root,
                                   const std::function<void(remote::AgentClient& agent)>& post,
                                   const std::function<void(remote::AgentClient& agent)>& take) {
  withAgent(where, [&](Host& h, remote::AgentClient& agent) {
    const int64_t opened = agent.post("open", Json{{"path", root}});
    post(agent);
    agent.await(opened, "open");
    if (std::find(h.roots.begin(), h.roots.end(), root) == h.roots.end()) h.roots.push_back(root);
    take(agent);
  });
}

RemoteConnections::Json RemoteConnections::hello(const remote::RemotePath& where) {
  // Started, started again and failing as call() does.
  Json said;
  withAgent(where, [&](Host&, remote::AgentClient& agent) { said = agent.hello(); });
  return said;
}

void RemoteConnections::withAgentOf(const remote::RemotePath& where,
                                    const std::function<void(remote::AgentClient& agent)>& use) {
  withAgent(where, [&](Host&, remote::AgentClient& agent) { use(agent); });
}

bool RemoteConnections::isConnected(const remote::RemotePath& where) {
  const std::shared_ptr<Host> h = host(where.endpoint());
  std::lock_guard lock(h->mutex);
  return h->agent != nullptr;
}

}  // namespace ckpt
