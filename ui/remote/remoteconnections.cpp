#include "remote/remoteconnections.h"

#include <algorithm>

#include "ckpt/version.h"

namespace ckpt {

std::shared_ptr<RemoteConnections::Host> RemoteConnections::host(const std::string& endpoint) {
  std::lock_guard lock(m_mutex);
  std::shared_ptr<Host>& h = m_hosts[endpoint];
  if (!h) h = std::make_shared<Host>();
  return h;
}

void RemoteConnections::start(Host& h, const remote::RemotePath& where) {
  h.agent.reset();
  h.agent = std::make_unique<remote::AgentClient>(remote::sshAgentArgv(where), "host " + where.host,
                                                  std::string("ckptscope ") + CKPT_VERSION);
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

RemoteConnections::Json RemoteConnections::call(const remote::RemotePath& where,
                                                const std::string& method, Json params,
                                                const remote::AgentClient::ProgressFn& progress,
                                                const remote::AgentClient::CancelFn& cancelled) {
  const std::shared_ptr<Host> h = host(where.endpoint());
  std::lock_guard lock(h->mutex);
  const Json asked = params;
  auto remember = [&h, &method, &asked](Json result) {
    if (method == "open" && asked.contains("path") && asked["path"].is_string() &&
        std::find(h->roots.begin(), h->roots.end(), asked["path"].get<std::string>()) ==
            h->roots.end())
      h->roots.push_back(asked["path"].get<std::string>());
    return result;
  };
  const bool fresh = !h->agent;
  try {
    if (fresh) start(*h, where);
    return remember(h->agent->call(method, std::move(params), progress, cancelled));
  } catch (const remote::RemoteError& e) {
    if (e.code() != "connection" && e.code() != "not_installed" && e.code() != "version")
      throw;  // the agent's answer (not_found, ...): the connection is fine
    h->agent.reset();
    if (fresh) throw;
  }
  // The agent kept from before is gone (the connection dropped while idle): once more, anew.
  try {
    start(*h, where);
    return remember(h->agent->call(method, asked, progress, cancelled));
  } catch (const remote::RemoteError& e) {
    if (e.code() == "connection" || e.code() == "not_installed" || e.code() == "version")
      h->agent.reset();
    throw;
  }
}

RemoteConnections::Json RemoteConnections::hello(const remote::RemotePath& where) {
  const std::shared_ptr<Host> h = host(where.endpoint());
  std::lock_guard lock(h->mutex);
  if (!h->agent) start(*h, where);
  return h->agent->hello();
}

bool RemoteConnections::isConnected(const remote::RemotePath& where) {
  const std::shared_ptr<Host> h = host(where.endpoint());
  std::lock_guard lock(h->mutex);
  return h->agent != nullptr;
}

}  // namespace ckpt
