#include "remote/sshquestions.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <mutex>
#include <optional>

#include "textformat.h"

namespace ckpt {
namespace {

std::mutex g_mutex;
std::optional<QString> g_program;  // set, or found once

}  // namespace

QString sshAskpassProgram() {
  std::lock_guard lock(g_mutex);
  if (!g_program) {
    const QFileInfo next(QCoreApplication::applicationDirPath() +
                         QStringLiteral("/ckptscope-askpass"));
    g_program = next.isExecutable() ? next.absoluteFilePath() : QString();
  }
  return *g_program;
}

void setSshAskpassProgram(const QString& program) {
  std::lock_guard lock(g_mutex);
  g_program = program;
}

remote::AgentCommand appAgentCommand(const remote::RemotePath& where) {
  remote::SshQuestions q;
  q.mode = remote::SshQuestions::Mode::Askpass;
  q.askpass = pathToStd(sshAskpassProgram());
  return remote::sshAgentCommand(where, {}, q);
}

}  // namespace ckpt
