#pragma once
// The agent (`ckptscope-cli serve --stdio`, docs/REMOTE.md) started by a
// test and spoken to over a pipe, a message at a time.

#include <QElapsedTimer>
#include <QProcess>
#include <QString>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ckpt::test {

class AgentPipe {
 public:
  using json = nlohmann::json;

  // `cli` started as the agent, in `cwd` (where relative paths are read from).
  explicit AgentPipe(const QString& cli, const QString& cwd = {}) {
    if (!cwd.isEmpty()) m_p.setWorkingDirectory(cwd);
    m_p.start(cli, {"serve", "--stdio"});
    m_p.waitForStarted();
  }
  ~AgentPipe() {
    m_p.closeWriteChannel();
    if (!m_p.waitForFinished(5000)) m_p.kill();
    m_p.waitForFinished();
  }
  AgentPipe(const AgentPipe&) = delete;
  AgentPipe& operator=(const AgentPipe&) = delete;

  void sendLine(const QByteArray& line) {
    m_p.write(line + "\n");
    m_p.waitForBytesWritten();
  }
  void send(const json& j) { sendLine(QByteArray::fromStdString(j.dump())); }
  json call(int id, const std::string& method, const json& params = json::object()) {
    send(json{{"id", id}, {"method", method}, {"params", params}});
    return next();
  }
  // The next message (null after `timeoutMs` without one).
  json next(int timeoutMs = 20000) {
    QElapsedTimer t;
    t.start();
    while (!m_p.canReadLine() && t.elapsed() < timeoutMs)
      m_p.waitForReadyRead(int(std::max<qint64>(1, timeoutMs - t.elapsed())));
    if (!m_p.canReadLine()) return json();
    return json::parse(m_p.readLine().toStdString());
  }
  // The messages of request `id` up to its result or error (the last);
  // messages of other requests are skipped.
  std::vector<json> answer(const json& id, int timeoutMs = 60000) {
    std::vector<json> out;
    for (json m = next(timeoutMs); !m.is_null(); m = next(timeoutMs)) {
      if (!m.contains("id") || m["id"] != id) continue;
      out.push_back(m);
      if (m.contains("result") || m.contains("error")) break;
    }
    return out;
  }
  QProcess& process() { return m_p; }

 private:
  QProcess m_p;
};

}  // namespace ckpt::test
