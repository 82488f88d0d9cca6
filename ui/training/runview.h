#pragma once

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QProgressBar;

namespace ckpt {

class LiveCurves;
struct StepReport;

// The Train panel's run view: the job's title, progress (step of max), the
// last step's values (loss, lr, tokens/s, ETA, each rank's device), a status
// line, and below them the live loss and learning-rate chart and the log.
// Before the first run there is nothing to chart: the chart and the log
// appear when a run starts (the log alone when something is said).
class RunView : public QWidget {
  Q_OBJECT

 public:
  explicit RunView(QWidget* parent = nullptr);

  [[nodiscard]] LiveCurves* curves() const { return m_curves; }
  [[nodiscard]] QProgressBar* progressBar() const { return m_progress; }
  [[nodiscard]] QString title() const;
  [[nodiscard]] QString statusText() const;
  [[nodiscard]] QString logText() const;

  void setTitle(const QString& title);
  // A new job: chart, log, progress and values cleared.
  void clear();
  // The job's steps are known: the progress bar goes from `startStep` to `maxSteps`.
  void setStepRange(int64_t startStep, int64_t maxSteps);
  void setProgress(int64_t step);
  // The newest step's values.
  void showStep(const StepReport& step);
  void setEta(const QString& eta);
  // "cpu", or every rank's ("rank 0: cpu · rank 1: cpu", wrapped).
  void setDevices(const QString& text, bool severalRanks);
  // Plots the steps up to `upToStep` from `outputDir`'s metrics.jsonl (a
  // resumed run's history); how many.
  int64_t loadHistory(const QString& outputDir, int64_t upToStep);
  // A job runs: the chart and the log are shown.
  void showCharts();
  void appendLog(const QString& line);
  void showStatus(const QString& text, bool error);

 private:
  QLabel* m_title = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_step = nullptr;
  QLabel* m_loss = nullptr;
  QLabel* m_lr = nullptr;
  QLabel* m_speed = nullptr;
  QLabel* m_device = nullptr;
  QLabel* m_eta = nullptr;
  QLabel* m_status = nullptr;
  QWidget* m_charts = nullptr;  // the chart and the log
  LiveCurves* m_curves = nullptr;
  QPlainTextEdit* m_log = nullptr;
};

}  // namespace ckpt
