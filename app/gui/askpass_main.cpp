// ckptscope-askpass PROMPT: what the app's ssh asks the person (SSH_ASKPASS,
// docs/REMOTE.md). Shows PROMPT in a dialog (a password field, or Yes / No
// for a host-key question), prints the answer and a newline on stdout and
// exits 0; exits 1 when cancelled. SSH_ASKPASS_PROMPT ("confirm", "none")
// is ssh's hint of what kind of question it is.
#include <QApplication>
#include <cstdio>

#include "remote/askpassdialog.h"

int main(int argc, char** argv) {
  // Taken before QApplication, which removes the arguments it knows.
  const QString prompt = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("CkptScope"));
  return ckpt::runAskpass(prompt, qEnvironmentVariable("SSH_ASKPASS_PROMPT"), stdout);
}
