#pragma once
// The command that reaches a host's agent: the system ssh, the options we
// add, and how ssh may put a question to the person (a key's passphrase, a
// password, whether to trust a host key it has not seen). No Qt.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "ckpt/remote/remote_path.h"

namespace ckpt::remote {

// How ssh may ask the person something.
struct SshQuestions {
  enum class Mode {
    // BatchMode=yes: a question fails at once, and the error names what to
    // do instead (ssh-add, `ssh HOST` once, the ssh_config option). For
    // scripts: nothing ever waits on a prompt no one sees.
    Refuse,
    // ssh asks on the terminal it shares with us (/dev/tty), as scp does.
    Terminal,
    // ssh runs in a session of its own (no terminal) and hands every
    // question to SSH_ASKPASS (SSH_ASKPASS_REQUIRE=force, OpenSSH >= 8.4):
    // `askpass` below, unless the person set SSH_ASKPASS themselves.
    // CKPTSCOPE_ASKPASS_HOST names the host ([user@]host[:port]) for it.
    Askpass,
  };
  Mode mode = Mode::Refuse;
  std::string askpass;  // the program for Mode::Askpass (argv[1]: ssh's prompt)
};

// What AgentClient starts: the argv (execvp, no shell), what to add to or
// change in the environment it inherits, and whether it gets a session of
// its own (setsid: no controlling terminal, so ssh cannot ask on one).
struct AgentCommand {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  bool ownSession = false;
  SshQuestions::Mode questions = SshQuestions::Mode::Refuse;
  // Where ssh goes, for the messages (`ssh -p PORT [user@]host`,
  // `ssh-keygen -R '[host]:PORT'`): the ssh program as CKPTSCOPE_SSH names
  // it ("ssh -F /path/config"), "[user@]host" as ssh is given it, the host
  // alone, the port (0: ssh's own). Empty for a program started directly.
  std::string ssh, destination, host;
  int port = 0;
  // How many of argv's first words are the ssh program and the options
  // CKPTSCOPE_SSH gives it (`ssh -G` is run with the same).
  size_t programWords = 0;
  // The ControlPath the app's shared login added (ssh_sharing.h's
  // shareLogin: "DIR/%C"); "" when none was added.
  std::string controlPath;
};

// How to reach a host's agent: the ssh program (CKPTSCOPE_SSH, split on
// spaces: "ssh -F /path/config"; "ssh" when unset) and the program on the
// host (`remoteCli`, else CKPTSCOPE_REMOTE_CLI, else "ckptscope-cli").
// The result is an argv: nothing here goes through a local shell. The
// remote program's name is quoted for the host's login shell (ssh hands
// its command to it); file paths never appear here, they travel inside
// the protocol. Options given in CKPTSCOPE_SSH come first, and ssh keeps
// the first value it is given: `ssh -o BatchMode=yes` there always refuses.
AgentCommand sshAgentCommand(const RemotePath& where, const std::string& remoteCli,
                             const SshQuestions& questions);

// The CLI's choice: Terminal when stdin and stderr are both a terminal (a
// person is there to answer, as with scp), else Refuse.
SshQuestions cliSshQuestions();

}  // namespace ckpt::remote
