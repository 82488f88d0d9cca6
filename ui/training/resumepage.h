#pragma once

#include <QWidget>
#include <optional>

#include "training/pathrow.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QSettings;
class QSpinBox;

namespace ckpt {

struct TrainRequest;

// The Train panel's "Resume" page: the checkpoint whose run continues, and
// first on the page, what Start will write where (the same plan the trainer
// follows, ckpt/index/run_plan.h). From the run's newest checkpoint the run
// continues in its directory; from an older one as a new run beside it, or,
// ticked "in place", with the later files moved to .trash/.
class ResumePage : public QWidget {
  Q_OBJECT

 public:
  explicit ResumePage(QWidget* parent = nullptr);

  [[nodiscard]] QLineEdit* checkpointEdit() const { return m_checkpoint; }
  [[nodiscard]] QSpinBox* maxStepsBox() const { return m_maxSteps; }
  [[nodiscard]] QLineEdit* dataEdit() const { return m_data; }
  [[nodiscard]] QCheckBox* inPlaceBox() const { return m_inPlace; }
  [[nodiscard]] QString planText() const;

  // `checkpoint` with the run's recorded max_steps and data.
  void reset(const QString& checkpoint);
  // Fills request.resume for `device`; the problem when it cannot start.
  std::optional<trainui::Problem> fill(TrainRequest& request, const std::string& device) const;

  void saveSettings(QSettings& settings) const;
  void restoreSettings(QSettings& settings);

 signals:
  void changed();

 private:
  void updatePlan();

  QLineEdit* m_checkpoint = nullptr;
  QSpinBox* m_maxSteps = nullptr;
  QLineEdit* m_data = nullptr;
  QCheckBox* m_inPlace = nullptr;
  QLabel* m_plan = nullptr;
};

}  // namespace ckpt
