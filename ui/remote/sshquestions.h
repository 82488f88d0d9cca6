#pragma once
// How the app starts ssh for a host: in a session of its own, its questions
// (a passphrase, a password, a host key) handed to ckptscope-askpass, a
// dialog (docs/REMOTE.md). Without that program it refuses them
// (BatchMode), and the error says what to do.

#include <QString>

#include "ckpt/remote/ssh_command.h"

namespace ckpt {

// The askpass program: the one set with setSshAskpassProgram, else
// ckptscope-askpass next to the app's executable when it is there, else
// empty. From any thread.
[[nodiscard]] QString sshAskpassProgram();
// For tests: another program (empty: none).
void setSshAskpassProgram(const QString& program);

// sshAgentCommand for the app: Askpass with sshAskpassProgram().
[[nodiscard]] remote::AgentCommand appAgentCommand(const remote::RemotePath& where);

}  // namespace ckpt
