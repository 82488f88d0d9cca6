#pragma once
// What ssh asks the person when the app reaches a host (a key's passphrase,
// a password, whether to trust a host key it has not seen), shown by
// ckptscope-askpass: ssh runs it as SSH_ASKPASS with its prompt as the
// argument and reads the answer from its stdout (docs/REMOTE.md).

#include <QByteArray>
#include <QDialog>
#include <QString>
#include <cstdio>

class QLabel;
class QLineEdit;
class QPushButton;

namespace ckpt {

class AskpassDialog : public QDialog {
  Q_OBJECT

 public:
  enum class Kind {
    Secret,    // a password or passphrase: typed, not shown
    Question,  // "... (yes/no/[fingerprint])?": Yes or No
    Notice,    // SSH_ASKPASS_PROMPT=none (touch your security key): nothing to answer
  };

  // `prompt`: ssh's text; `hint`: SSH_ASKPASS_PROMPT ("confirm", "none" or
  // empty); `host`: the host being reached (CKPTSCOPE_ASKPASS_HOST), "" when not known.
  AskpassDialog(const QString& prompt, const QString& hint, const QString& host = {},
                QWidget* parent = nullptr);

  [[nodiscard]] Kind kind() const { return m_kind; }
  // What ssh is told once accepted: the typed text, or "yes" / "no".
  [[nodiscard]] QByteArray answer() const;
  [[nodiscard]] QLineEdit* secretField() const { return m_secret; }  // null unless Secret
  [[nodiscard]] QPushButton* acceptButton() const { return m_accept; }
  [[nodiscard]] QPushButton* rejectButton() const { return m_reject; }

  static Kind kindOf(const QString& prompt, const QString& hint);

 private:
  Kind m_kind;
  QLineEdit* m_secret = nullptr;
  QPushButton* m_accept = nullptr;  // OK or Yes
  QPushButton* m_reject = nullptr;  // Cancel or No
  bool m_saidNo = false;
};

// ckptscope-askpass's work: shows the dialog, modal; once answered writes
// the answer and a newline to `out` and returns 0, the exit status ssh
// reads; returns 1 when the person cancelled or closed it (ssh takes that
// as no answer: the next way to log in, or a failure).
int runAskpass(const QString& prompt, const QString& hint, const QString& host, std::FILE* out);

}  // namespace ckpt
