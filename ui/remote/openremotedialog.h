#pragma once

#include <QDialog>
#include <QStringList>

class QComboBox;
class QDialogButtonBox;
class QLabel;

namespace ckpt {

// File > Open Remote...: where the runs are ("ssh://[user@]host[:port]/path"
// or "host:/path"), typed or picked from the remote locations opened before
// (newest first), and the ssh command the app will run to reach the host's
// agent, shown as it is typed (CKPTSCOPE_SSH, CKPTSCOPE_REMOTE_CLI apply).
// Open is enabled once the text is a remote location.
class OpenRemoteDialog : public QDialog {
  Q_OBJECT

 public:
  explicit OpenRemoteDialog(const QStringList& recent, QWidget* parent = nullptr);

  [[nodiscard]] QString location() const;
  [[nodiscard]] QComboBox* locationBox() const { return m_location; }
  // The command line, or why the text is not a remote location.
  [[nodiscard]] QLabel* commandLabel() const { return m_command; }

 private:
  void updateCommand();

  QComboBox* m_location = nullptr;
  QLabel* m_command = nullptr;
  QDialogButtonBox* m_buttons = nullptr;
};

}  // namespace ckpt
