#pragma once
// How the app starts ssh for a host: in a session of its own, its questions
// (a passphrase, a password, a host key) handed to ckptscope-askpass, a
// dialog (docs/REMOTE.md). Without that program it refuses them
// (BatchMode), and the error says what to do. Its connections to one host
// share one login, so a passphrase is asked once (connectAppAgent).

#include <QString>
#include <functional>
#include <memory>
#include <string>

#include "ckpt/remote/agent_client.h"
#include "ckpt/remote/ssh_command.h"

namespace ckpt {

// The askpass program: the one set with setSshAskpassProgram, else
// ckptscope-askpass next to the app's executable when it is there, else
// empty. From any thread.
[[nodiscard]] QString sshAskpassProgram();
// For tests: another program (empty: none).
void setSshAskpassProgram(const QString& program);

// sshAgentCommand for the app: Askpass with sshAskpassProgram(). What the
// Open Remote dialog shows; connectAppAgent adds the shared login to it.
[[nodiscard]] remote::AgentCommand appAgentCommand(const remote::RemotePath& where);

// The app's agent for `where` (every connection the app makes: a window's
// requests, remote/remoteconnections.h; the watch, remote/remotewatch.h):
// appAgentCommand with one login shared by all connections to the host
// (remote::shareLogin: ssh's ControlMaster, unless the person's ssh config
// multiplexes already), connected and past hello. One connection to a host
// is made at a time in the process: while one logs in (ssh may be waiting
// for the person to type a passphrase), another to the same
// [user@]host[:port] waits, then rides on the login made, instead of
// logging in (asking) a second time. `abandoned` is asked while it waits;
// true: it gives up and returns null. Throws what AgentClient throws.
[[nodiscard]] std::unique_ptr<remote::AgentClient> connectAppAgent(
    const remote::RemotePath& where, const std::string& clientVersion,
    const std::function<bool()>& abandoned = {});

}  // namespace ckpt
