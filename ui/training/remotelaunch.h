#pragma once
// Training on the host from the Train tab (docs/REMOTE.md, "Training on
// the host"): what the Resume or Fine-tune page asks for a checkpoint on
// another machine, and the dialog that shows the SLURM batch script to edit
// before it is submitted. The agent's calls themselves are made by the
// window (mainwindow_remote_train.cpp), which holds the host's connection.

#include <QDialog>
#include <QString>

#include "ckpt/remote/launch_wire.h"

class QPlainTextEdit;

namespace ckpt {

struct RemoteTrainStart {
  QString location;               // the checkpoint, ssh://[user@]host[:port]/path
  remote::LaunchRequest request;  // request.checkpoint: the path on the host
  bool sbatch = false;            // submit it as a SLURM job (the script shown first)
};

// The batch script the host proposed, editable; Submit accepts it.
class SbatchDialog : public QDialog {
  Q_OBJECT

 public:
  SbatchDialog(const QString& host, const QString& runDir, const QString& script,
               QWidget* parent = nullptr);
  [[nodiscard]] QString script() const;
  [[nodiscard]] QPlainTextEdit* editor() const { return m_editor; }

 private:
  QPlainTextEdit* m_editor = nullptr;
};

}  // namespace ckpt
