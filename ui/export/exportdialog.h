#pragma once

#include <QDialog>
#include <QString>
#include <memory>
#include <optional>

#include "backgroundjob.h"
#include "ckpt/format/checkpoint_copy.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace ckpt {

class CheckpointFile;

// Checkpoint > Export... on one checkpoint: a slim copy without optimizer
// state (core/format checkpoint_copy.h, as `ckptscope-cli export`), as a
// torch file in the modern_llm layout or as safetensors, its floating-point
// tensors kept or converted to bf16 / fp16 / fp32. Prefilled from the
// checkpoint: its format, and a free name beside it ("<stem>_slim.pt").
// A destination that exists is refused (Export disabled, the reason shown),
// never overwritten. The copy runs on a BackgroundJob with a progress bar;
// Cancel stops it and leaves nothing behind; once written, the dialog is
// accepted and destination() names the new file.
class ExportDialog : public QDialog {
  Q_OBJECT

 public:
  explicit ExportDialog(const QString& source, QWidget* parent = nullptr);
  ~ExportDialog() override;

  [[nodiscard]] QString source() const { return m_source; }
  [[nodiscard]] QString destination() const;
  [[nodiscard]] const std::optional<CopyResult>& result() const { return m_result; }

  [[nodiscard]] QComboBox* formatBox() const { return m_format; }
  [[nodiscard]] QComboBox* dtypeBox() const { return m_dtype; }
  [[nodiscard]] QCheckBox* modelOnlyBox() const { return m_modelOnly; }
  [[nodiscard]] QLineEdit* destinationEdit() const { return m_destination; }
  [[nodiscard]] QPushButton* chooseButton() const { return m_choose; }
  [[nodiscard]] QPushButton* exportButton() const { return m_export; }
  [[nodiscard]] QPushButton* cancelButton() const { return m_cancel; }
  [[nodiscard]] QProgressBar* progressBar() const { return m_progress; }
  [[nodiscard]] QLabel* statusLabel() const { return m_status; }

 protected:
  void reject() override;  // Escape and Cancel: stop a running copy first

 private:
  [[nodiscard]] CopyOptions options() const;
  void formatChanged();
  void chooseDestination();
  void updateState();
  void startExport();
  void setRunning(bool running);

  QString m_source;
  std::unique_ptr<CheckpointFile> m_file;  // metadata only, for the estimate
  QString m_openError;
  QComboBox* m_format = nullptr;
  QComboBox* m_dtype = nullptr;
  QCheckBox* m_modelOnly = nullptr;
  QLineEdit* m_destination = nullptr;
  QPushButton* m_choose = nullptr;
  QLabel* m_estimate = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_status = nullptr;
  QPushButton* m_export = nullptr;
  QPushButton* m_cancel = nullptr;
  std::optional<CopyResult> m_result;
  BackgroundJob<CopyResult> m_job{this};
};

}  // namespace ckpt
