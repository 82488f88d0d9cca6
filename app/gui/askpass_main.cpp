// ckptscope-askpass PROMPT: what the app's ssh asks the person (SSH_ASKPASS,
// docs/REMOTE.md). Shows PROMPT in a dialog (a password field, or Yes / No
// for a host-key question), prints the answer and a newline on stdout and
// exits 0; exits 1 when cancelled. SSH_ASKPASS_PROMPT ("confirm", "none")
// is ssh's hint of what kind of question it is; CKPTSCOPE_ASKPASS_HOST the
// host the app is reaching.
#include <QApplication>
#include <cstdio>

#include "remote/askpassdialog.h"

namespace {

// Our stderr is ssh's, which the app shows when the login fails: Qt's
// notes (no XDG_RUNTIME_DIR, ...) would stand where ssh's reason should.
void keepQuiet(QtMsgType type, const QMessageLogContext&, const QString& message) {
  if (type == QtCriticalMsg || type == QtFatalMsg)
    std::fprintf(stderr, "ckptscope-askpass: %s\n", qPrintable(message));
}

}  // namespace

int main(int argc, char** argv) {
  qInstallMessageHandler(keepQuiet);
  // Taken before QApplication, which removes the arguments it knows.
  const QString prompt = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("CkptScope"));
  return ckpt::runAskpass(prompt, qEnvironmentVariable("SSH_ASKPASS_PROMPT"),
                          qEnvironmentVariable("CKPTSCOPE_ASKPASS_HOST"), stdout);
}
