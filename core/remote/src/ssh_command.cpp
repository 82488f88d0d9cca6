#include "ckpt/remote/ssh_command.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace ckpt::remote {
namespace {

std::vector<std::string> splitSpaces(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// One word for a POSIX shell: the host's login shell reads ssh's command.
std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool envSet(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

}  // namespace

AgentCommand sshAgentCommand(const RemotePath& where, const std::string& remoteCli,
                             const SshQuestions& questions) {
  AgentCommand cmd;
  cmd.questions = questions.mode;
  // Askpass without a program to ask with (none found next to the app, and
  // none set by the person): nothing could answer, so refuse at once.
  if (cmd.questions == SshQuestions::Mode::Askpass && questions.askpass.empty() &&
      !envSet("SSH_ASKPASS"))
    cmd.questions = SshQuestions::Mode::Refuse;
  const char* sshEnv = std::getenv("CKPTSCOPE_SSH");
  std::vector<std::string>& argv = cmd.argv;
  argv = splitSpaces(sshEnv && *sshEnv ? sshEnv : "ssh");
  if (argv.empty()) argv.push_back("ssh");
  for (const std::string& w : argv) cmd.ssh += (cmd.ssh.empty() ? "" : " ") + w;
  cmd.programWords = argv.size();
  // -T: no terminal (the protocol is bytes).
  argv.emplace_back("-T");
  // BatchMode: a password or host-key question fails at once instead of
  // hanging on a prompt no one sees.
  if (cmd.questions == SshQuestions::Mode::Refuse) {
    argv.emplace_back("-o");
    argv.emplace_back("BatchMode=yes");
  }
  // ServerAlive: a link that died without a word (a laptop that slept, a
  // dropped VPN) is noticed within 45 s, not when TCP gives up.
  for (const char* a : {"-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"})
    argv.emplace_back(a);
  if (where.port) {
    argv.emplace_back("-p");
    argv.push_back(std::to_string(where.port));
  }
  argv.emplace_back("--");  // a host named "-o..." is a host, not an option
  cmd.destination = where.user.empty() ? where.host : where.user + "@" + where.host;
  cmd.host = where.host;
  cmd.port = where.port;
  argv.push_back(cmd.destination);
  std::string program = remoteCli;
  if (program.empty()) {
    const char* env = std::getenv("CKPTSCOPE_REMOTE_CLI");
    program = env && *env ? env : "ckptscope-cli";
  }
  argv.push_back(shellQuote(program) + " serve --stdio");

  if (cmd.questions == SshQuestions::Mode::Askpass) {
    // No terminal for ssh: it asks through SSH_ASKPASS only. The person's
    // own SSH_ASKPASS (and SSH_ASKPASS_REQUIRE) are theirs to keep.
    cmd.ownSession = true;
    if (!envSet("SSH_ASKPASS")) cmd.env.emplace_back("SSH_ASKPASS", questions.askpass);
    if (!envSet("SSH_ASKPASS_REQUIRE")) cmd.env.emplace_back("SSH_ASKPASS_REQUIRE", "force");
    // For the dialog's heading: a passphrase prompt does not say which host.
    cmd.env.emplace_back(
        "CKPTSCOPE_ASKPASS_HOST",
        where.port ? cmd.destination + ":" + std::to_string(where.port) : cmd.destination);
  }
  return cmd;
}

SshQuestions cliSshQuestions() {
  SshQuestions q;
  if (::isatty(STDIN_FILENO) == 1 && ::isatty(STDERR_FILENO) == 1)
    q.mode = SshQuestions::Mode::Terminal;
  return q;
}

}  // namespace ckpt::remote
