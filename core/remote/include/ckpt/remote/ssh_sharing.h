#pragma once
// One login per host for the app (docs/REMOTE.md, "One login per host"):
// its ssh connections to one host share one authenticated connection
// through OpenSSH's multiplexing (ControlMaster), so a key's passphrase or a
// password is asked once, not once per connection (the window's requests,
// the watch that follows the folder, ...). A person's own multiplexing is
// left alone. Only the app asks for this: the CLI's ssh stays as it was (a
// master that outlives a script by a minute would surprise). No Qt.

#include <string>

#include "ckpt/remote/ssh_command.h"

namespace ckpt::remote {

// How long the shared connection outlives the last of the app's
// connections that use it (ControlPersist): long enough that a connection
// started again (a watch reconnecting after 1 s ... 30 s, the app started
// again at once) finds it and asks nothing, short enough that the login
// does not linger long after the app has gone. It must be set: without it
// the first connection would itself be the master, and ending it (a watch
// stopped) would end every other connection to the host.
inline constexpr int kSharedLoginPersistSeconds = 60;

// The folder for the app's control sockets: $XDG_RUNTIME_DIR/ckptscope-ssh,
// else /tmp/ckptscope-ssh-UID; made with mode 0700 when missing. One is
// used only when it is a real folder (not a symlink) of this user with no
// access for others, and short enough for a socket path (a Unix socket's
// path holds 107 bytes; ssh binds "DIR/<40 hex>.<16 random>" first), and
// holds no character ssh would read as a token or a separator ('%',
// spaces, quotes). "" when neither is (nothing is shared then), with the
// reasons in `why`.
[[nodiscard]] std::string sshControlDir(std::string* why = nullptr);

// Whether ssh as `cmd` runs it multiplexes on its own: CKPTSCOPE_SSH's
// options name ControlMaster or ControlPath (or -M, -S), or the config
// `ssh -G` reads for the destination (the same program, options, port and
// destination; it needs no network) sets ControlMaster to anything but no,
// or a ControlPath. false when `ssh -G` fails or says nothing within 5 s.
// Runs no shell: argv only.
[[nodiscard]] bool sshMultiplexesAlready(const AgentCommand& cmd);

// Makes `cmd` (a command of sshAgentCommand's) share one login per host:
// `-o ControlMaster=auto -o ControlPath=DIR/%C -o ControlPersist=60s`
// added before the destination, and cmd.controlPath set. Adds nothing
// (false) for a program started directly, when sshMultiplexesAlready, or
// when there is no sshControlDir. The first connection to a host logs in
// and stays as the master in the background; the next ones ride on it.
// The caller must let the first finish logging in before it starts
// another to the same host: one started meanwhile finds no master yet and
// logs in (asks) too.
bool shareLogin(AgentCommand& cmd);

}  // namespace ckpt::remote
