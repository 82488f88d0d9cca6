#pragma once

#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>
#include <memory>

#include "ckpt/trainapi/train_backend.h"

namespace ckpt {

// What the Train panel asks for: one of a new run, a resume, a fine-tune.
struct TrainRequest {
  enum class Kind { NewRun, Resume, Finetune };
  Kind kind = Kind::NewRun;
  RunConfig config;          // NewRun
  ResumeOptions resume;      // Resume
  std::string checkpoint;    // Finetune: the parent
  FinetuneOptions finetune;  // Finetune
  int cpuThreads = 0;  // LibTorch's intra-op threads for this run (each rank's); 0: its default
  int processes = 1;   // data-parallel ranks on this machine, each a ckptscope-train process
  std::string trainProgram;  // ckptscope-train (trainProgram()), when processes > 1
};

// The worker object of one run; lives on TrainRunner's thread. The whole
// run is one blocking call (run()); the only way in while it runs is the
// stop flag, which the GUI thread sets directly.
class TrainWorker : public QObject {
  Q_OBJECT

 public:
  TrainWorker(TrainRequest request, std::shared_ptr<std::atomic<bool>> stop);
  // Reports are batched and sent at most every this many ms, except those
  // that carry an event (a checkpoint, an evaluation, the last step).
  static constexpr int kProgressIntervalMs = 80;

  void run();

 signals:
  // Once per rank (rank 0's carries the run's values).
  void prepared(const ckpt::TrainJobInfo& info);
  void progress(const QList<ckpt::StepReport>& steps);
  // A line the ranks of several processes print, "[rankN]: " in front.
  void logLine(const QString& line);
  // Finished or Stopped (result.outcome); failures come as failed().
  void finished(const ckpt::RunResult& result);
  void failed(const QString& message);

 private:
  TrainRequest m_request;
  std::shared_ptr<std::atomic<bool>> m_stop;
};

// Runs one training job at a time on its own QThread (the QThread
// worker-object pattern). Owned by the Train panel; its destructor stops the
// run (the step in flight finishes and a resumable checkpoint is written)
// and waits for the thread.
class TrainRunner : public QObject {
  Q_OBJECT

 public:
  explicit TrainRunner(QObject* parent = nullptr);
  ~TrainRunner() override;

  // False (and nothing happens) when a run is going.
  bool start(const TrainRequest& request);
  // Asks the run to stop after the step in flight; returns at once.
  void stop();
  [[nodiscard]] bool isRunning() const { return m_running; }
  [[nodiscard]] bool stopRequested() const { return m_stop && m_stop->load(); }

 signals:
  void prepared(const ckpt::TrainJobInfo& info);
  void progress(const QList<ckpt::StepReport>& steps);
  void logLine(const QString& line);
  void finished(const ckpt::RunResult& result);
  void failed(const QString& message);

 private:
  void onDone();

  QThread m_thread;
  std::shared_ptr<std::atomic<bool>> m_stop;
  bool m_running = false;
};

// Registers the value types above for queued connections (called by
// TrainRunner's constructor; harmless to call again).
void registerTrainMetaTypes();

}  // namespace ckpt

Q_DECLARE_METATYPE(ckpt::TrainJobInfo)
Q_DECLARE_METATYPE(ckpt::StepReport)
Q_DECLARE_METATYPE(ckpt::RunResult)
