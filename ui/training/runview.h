#pragma once

#include <QWidget>

#include "backgroundjob.h"
#include "training/livecurves.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;

namespace ckpt {

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
  // The job's steps are known: the progress bar and the chart's step axis
  // go from `startStep` to `maxSteps` (the chart from 0 once a history is
  // plotted).
  void setStepRange(int64_t startStep, int64_t maxSteps);
  void setProgress(int64_t step);
  // The newest step's values.
  void showStep(const StepReport& step);
  void setEta(const QString& eta);
  // "cpu", or every rank's ("rank 0: cpu · rank 1: cpu", wrapped).
  void setDevices(const QString& text, bool severalRanks);
  // A resumed run's history: the run in `outputDir` read on the thread pool
  // as the Curves tab reads it (collectRunMetrics: its metrics.jsonl, logs,
  // checkpoints and, for a branch, its parent's history; a restarted job's
  // last segment), and its loss, val_loss and lr up to `upToStep` plotted
  // with what the job reports. The newest request wins; clear() drops it.
  // historyLoaded() follows.
  void loadHistory(const QString& outputDir, int64_t upToStep);
  [[nodiscard]] bool isLoadingHistory() const { return m_history.isRunning(); }
  // A job runs: the chart and the log are shown.
  void showCharts();
  void appendLog(const QString& line);
  void showStatus(const QString& text, bool error);

 signals:
  // The history loadHistory() asked for is plotted: its steps of loss (0
  // when the run has none before the job, or it could not be read: the log says why).
  void historyLoaded(qint64 steps);

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
  int64_t m_maxSteps = 0;
  BackgroundJob<LiveCurves::History> m_history{this};
};

}  // namespace ckpt
