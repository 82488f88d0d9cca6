#pragma once

#include <QMap>
#include <QString>
#include <QWidget>
#include <optional>

#include "training/pathrow.h"

class QLabel;
class QLineEdit;
class QSettings;
class QSpinBox;

namespace ckpt {

struct TrainRequest;

// The Train panel's "Fine-tune" page: a new stage (sft, dpo, ...) from a
// checkpoint's weights, with its own data, learning rate and directory.
class FinetunePage : public QWidget {
  Q_OBJECT

 public:
  explicit FinetunePage(QWidget* parent = nullptr);

  [[nodiscard]] QLineEdit* checkpointEdit() const { return m_checkpoint; }
  [[nodiscard]] QLineEdit* dataEdit() const { return m_data; }
  [[nodiscard]] QLineEdit* tokenizerEdit() const { return m_tokenizer; }
  [[nodiscard]] QLineEdit* stageEdit() const { return m_stage; }
  [[nodiscard]] QLineEdit* learningRateEdit() const { return m_lr; }
  [[nodiscard]] QSpinBox* maxStepsBox() const { return m_maxSteps; }
  [[nodiscard]] QLineEdit* outputEdit() const { return m_out; }
  [[nodiscard]] QString planText() const;

  // Fills request.checkpoint and request.finetune for `device`; the problem
  // when it cannot start.
  std::optional<trainui::Problem> fill(TrainRequest& request, const std::string& device) const;

  void saveSettings(QSettings& settings) const;
  void restoreSettings(QSettings& settings);

 signals:
  void changed();

 private:
  void updatePlan();
  // The data field belongs to the machine the checkpoint is on: a path on a
  // host is kept for that host, one here for here, each restored when a
  // checkpoint of that machine is chosen again (and when the app starts).
  void followMachine();

  QLabel* m_plan = nullptr;  // a checkpoint on another machine: where it runs
  QLineEdit* m_checkpoint = nullptr;
  QLineEdit* m_data = nullptr;
  QLineEdit* m_tokenizer = nullptr;
  QLineEdit* m_stage = nullptr;
  QLineEdit* m_lr = nullptr;
  QSpinBox* m_maxSteps = nullptr;
  QLineEdit* m_out = nullptr;
  QString m_dataMachine;                   // "" (here) or the host's ssh://[user@]host[:port]
  QMap<QString, QString> m_dataElsewhere;  // the data typed for the other machines
};

}  // namespace ckpt
