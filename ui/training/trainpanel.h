#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QMap>
#include <QWidget>
#include <optional>

#include "training/remotelaunch.h"
#include "training/trainrunner.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QResizeEvent;
class QSplitter;
class QSpinBox;
class QTabWidget;

namespace ckpt {

struct CurveRun;

class ConfigForm;
class FinetunePage;
class LiveCurves;
class NewRunPage;
class ResumePage;
class RunView;

// Train from the app: a new run (model config, training fields, data,
// device, output directory), a resume of a checkpoint's run, or a fine-tune
// of a checkpoint into a new stage. The form is validated as it is typed,
// with the config's own checks (ckpt_config, no LibTorch); the run goes to
// TrainRunner's thread, where the LibTorch plugin is loaded on first use.
// While it runs: progress (step of max, ETA), live loss and learning-rate
// curves, tokens/s, the device and a log. Stop finishes the step in flight
// and writes a resumable checkpoint. The last-used values live in QSettings.
class TrainPanel : public QWidget {
  Q_OBJECT

 public:
  enum class Mode { NewRun = 0, Resume = 1, Finetune = 2 };

  explicit TrainPanel(QWidget* parent = nullptr);
  ~TrainPanel() override;  // stops a run (a resumable checkpoint) and waits for it

  // One click on a checkpoint: continue its run in its directory from its
  // step, with its optimizer, schedule and data position. False (with the
  // reason shown) when it cannot start, e.g. while another run is going.
  bool startResume(const QString& checkpoint);
  // One click on a checkpoint: a new stage (<run>-sft next to the parent's
  // directory), lr 1e-5, cosine schedule, the parent recorded as lineage.
  // It needs data: the last fine-tune data, else the new-run data; when
  // there is none the Fine-tune page is shown asking for it and this
  // returns false.
  bool startFinetune(const QString& checkpoint);
  // Shows the Fine-tune page with `checkpoint` filled in, without starting.
  void prepareFinetune(const QString& checkpoint);
  // Shows the Resume page with `checkpoint` filled in and what resuming it
  // will write where, without starting.
  void prepareResume(const QString& checkpoint);
  // The checkpoint selected in the browser: the Resume and Fine-tune pages
  // start from it (not while a run goes).
  void setSelectedCheckpoint(const QString& checkpoint);
  // Starts what the current page describes (the Start button).
  bool start();
  // Stop: the step in flight finishes, a resumable checkpoint is written.
  void stop();

  [[nodiscard]] bool isRunning() const { return m_runner.isRunning(); }
  [[nodiscard]] Mode mode() const;
  void setMode(Mode mode);

  // The form and the widgets a test or the window drives.
  [[nodiscard]] ConfigForm* form() const;
  [[nodiscard]] QLineEdit* dataPathEdit() const;
  [[nodiscard]] QComboBox* tokenizerBox() const;
  [[nodiscard]] QLineEdit* outputDirEdit() const;
  [[nodiscard]] QComboBox* deviceBox() const { return m_device; }
  [[nodiscard]] QSpinBox* threadsBox() const { return m_threads; }
  // Data-parallel processes on this machine (each a ckptscope-train rank);
  // 1: the run goes in the app itself.
  [[nodiscard]] QSpinBox* processesBox() const { return m_processes; }
  [[nodiscard]] QLineEdit* resumeCheckpointEdit() const;
  [[nodiscard]] QSpinBox* resumeMaxStepsBox() const;
  // "Resume in place": the later checkpoints go to .trash/ (after a confirmation).
  [[nodiscard]] QCheckBox* resumeInPlaceBox() const;
  // What Start on the Resume page will do: where it writes, what it leaves alone.
  [[nodiscard]] QString resumePlanText() const;
  [[nodiscard]] QLineEdit* finetuneCheckpointEdit() const;
  [[nodiscard]] QLineEdit* finetuneDataEdit() const;
  [[nodiscard]] QLineEdit* finetuneStageEdit() const;
  [[nodiscard]] QLineEdit* finetuneLrEdit() const;
  [[nodiscard]] QSpinBox* finetuneMaxStepsBox() const;
  [[nodiscard]] QLineEdit* finetuneOutputEdit() const;
  [[nodiscard]] QPushButton* startButton() const { return m_start; }
  [[nodiscard]] QPushButton* stopButton() const { return m_stop; }
  [[nodiscard]] QProgressBar* progressBar() const;
  [[nodiscard]] LiveCurves* curves() const;
  // The job's title, values, chart and log (a resumed run's history loads there).
  [[nodiscard]] RunView* runView() const { return m_run; }
  // The problem with the current page ("" when it can start), as shown.
  [[nodiscard]] QString validationError() const { return m_validationError; }
  // The status line under the progress bar (the outcome, or the error).
  [[nodiscard]] QString statusText() const;
  [[nodiscard]] QString logText() const;
  // The values of the running (or last) job.
  [[nodiscard]] const TrainJobInfo& jobInfo() const { return m_info; }
  // Whether the backend has been loaded (it loads on first show or start).
  [[nodiscard]] bool backendReady() const { return m_backendReady; }
  // The device of every rank of the running (or last) job, as the status
  // area shows it: "cpu"; "rank 0: cpu · rank 1: cpu" for several.
  [[nodiscard]] QString deviceText() const;
  // What the device line says ("LibTorch 1.13.1 · CPU, 2 threads · CUDA not available").
  [[nodiscard]] QString deviceSummary() const;

  void saveSettings() const;

  // Training on the host (trainpanel_remote.cpp): when the Resume or
  // Fine-tune page names a checkpoint on another machine, Start asks the
  // window to start it there (remoteStartRequested), detached from the app;
  // the window answers with remoteStartFinished. `endpoint` is the host
  // of the remote folder shown ("" when none), `sbatch` whether SLURM's
  // sbatch is there (the "as a SLURM job" box is offered then).
  void setRemoteHost(const QString& endpoint, bool sbatch);
  void remoteStartFinished(bool ok, const QString& message);
  [[nodiscard]] bool isRemoteStart() const;
  [[nodiscard]] QCheckBox* sbatchBox() const { return m_sbatch; }
  // A run started (or submitted) on the host: the run view names it and
  // charts what the window reads of its metrics.jsonl (showRemoteRun, each
  // time its curve on the Curves tab grows). `maxSteps` 0: not known here.
  // `location`: the run's folder as ssh://[user@]host[:port]/path; `pid`
  // (launch) or `jobId` (submit): what Stop asks the host to stop.
  void followRemoteRun(const QString& runDir, const QString& title, int64_t maxSteps,
                       const QString& location = {}, int64_t pid = 0, const QString& jobId = {});
  // `finalCheckpoint`: the run's final checkpoint as the browser lists it
  // ("" while it trains): it has finished there.
  void showRemoteRun(const CurveRun& run, const QString& finalCheckpoint);
  // The host's folder of the run followed ("" when none).
  [[nodiscard]] QString remoteRunDir() const { return m_remoteRun; }
  // Stop on a run followed on the host ("Stop on HOST", after a
  // confirmation): the window asks the host's agent (remoteStopRequested)
  // and answers with remoteStopFinished (asked, or the host's refusal),
  // then remoteRunEnded once the trainer has ended there.
  void remoteStopFinished(bool ok, const QString& message);
  // How it ended, from its log there: `outcome` "stopped" or "finished"
  // (empty: the log does not say), its step and the checkpoint written.
  void remoteRunEnded(const QString& outcome, int64_t step, const QString& checkpoint,
                      const QString& log);
  [[nodiscard]] bool isRemoteStopping() const { return m_remoteStopping; }
  // A run started from this tab is followed on its host and has not been
  // seen to end: Start starts no other (one run at a time from the tab,
  // as while one trains here).
  [[nodiscard]] bool isFollowingRemoteRun() const;
  // The window could not ask how it stands (`why`: the connection dropped,
  // SLURM's squeue missing...): said once in the log, until it answers
  // again (`why` empty). The run goes on there; it is asked again.
  void remoteRunUnanswered(const QString& why);
  // "Stop following" (shown while one is followed): the run goes on there,
  // the tab no longer follows it, and Start is free again.
  void stopFollowing();
  [[nodiscard]] QPushButton* stopFollowingButton() const { return m_unfollow; }

 signals:
  // Start on a remote checkpoint: the window starts it on the host.
  void remoteStartRequested(const ckpt::RemoteTrainStart& start);
  // Stop on a run followed on the host: `location` its folder (ssh://...),
  // `pid` or `jobId` what launch or submit answered.
  void remoteStopRequested(const QString& location, qint64 pid, const QString& jobId);
  // The job is prepared and its first step starts; `outputDir` is where its
  // checkpoints and metrics.jsonl go (open it in the browser).
  void runStarted(const QString& outputDir);
  void checkpointWritten(const QString& path);
  // Finished, or stopped on request (`stopped`): `lastCheckpoint` is the
  // final checkpoint or the resumable stop checkpoint.
  void runFinished(const QString& outputDir, const QString& lastCheckpoint, bool stopped);
  // Bad data, a NaN loss, an unwritable directory...: the message as shown.
  void runFailed(const QString& message);
  // The backend finished loading (ok or not); the device box is filled.
  void backendLoaded();

 protected:
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  // The form beside the run view when both fit, else above it (and in one column when narrow).
  void fitLayout();
  void loadBackendAsync();
  void onBackendLoaded();
  void restoreSettings();
  void revalidate();
  // The remote page's checks, the Start button's words, the SLURM box.
  void revalidateRemote();
  // Why Start cannot start another run now ("" when it can): one runs
  // here, is being started on a host, or is followed there.
  [[nodiscard]] QString startBlocker() const;
  // Start enabled when the page is `valid` and nothing blocks it; its
  // tooltip says why not (else `tip`).
  void updateStart(bool valid, const QString& tip = {});
  std::optional<RemoteTrainStart> remoteRequest(QString* error, QStringList* keys) const;
  bool startRemote();
  // Stop on the run followed there (trainpanel_remote.cpp), and the Stop
  // button's state and words for it.
  void stopRemote();
  void updateRemoteStop();
  [[nodiscard]] QString remoteRunHost() const;
  // Asks before a start that moves files to .trash/; false when the person says no.
  bool confirmStart(const TrainRequest& request);
  // The request of the current page, or the message naming what is wrong
  // (and the form keys to mark).
  std::optional<TrainRequest> request(QString* error, QStringList* keys) const;
  QString deviceChoice() const;
  void setRunning(bool running);
  void appendLog(const QString& line);
  void showStatus(const QString& text, bool error);

  void onPrepared(const TrainJobInfo& info);
  void showRankDevices();
  // The Processes field's tooltip and default once the backend says what it sees.
  void describeProcesses(const TrainDevices& devices);
  void onProgress(const QList<StepReport>& steps);
  void onFinished(const RunResult& result);
  void onFailed(const QString& message);

  TrainRunner m_runner;
  QFutureWatcher<void> m_backendWatcher;
  bool m_backendReady = false;
  bool m_backendRequested = false;
  std::optional<TrainDevices> m_devices;  // asked once, when the backend has loaded

  // The three pages in tabs, and the run view beside or below them.
  QTabWidget* m_modes = nullptr;
  NewRunPage* m_newRun = nullptr;
  ResumePage* m_resume = nullptr;
  FinetunePage* m_finetune = nullptr;
  RunView* m_run = nullptr;
  QComboBox* m_device = nullptr;
  QSpinBox* m_threads = nullptr;
  QSpinBox* m_processes = nullptr;
  bool m_processesChosen = false;  // a remembered value: the backend does not change it
  QLabel* m_deviceNote = nullptr;
  QLabel* m_error = nullptr;
  QPushButton* m_start = nullptr;
  QCheckBox* m_sbatch = nullptr;  // a remote start as a SLURM job
  QString m_remoteEndpoint;
  bool m_remoteSbatch = false;  // the host has sbatch
  bool m_remoteBusy = false;    // the window is starting one on the host
  QString m_remoteBusyHost;     // that host
  QString m_remoteRun;          // the host's run followed in the run view
  int64_t m_remoteRunMaxSteps = 0;
  bool m_remoteRunDone = false;   // its final checkpoint has been seen
  QString m_remoteRunLocation;    // ssh://.../RUN_DIR
  int64_t m_remoteRunPid = 0;     // launch's
  QString m_remoteRunJob;         // submit's
  bool m_remoteStopping = false;  // Stop asked the host; its end not seen yet
  QString m_remoteRunUnanswered;  // why the host could not say how it stands, as logged
  QPushButton* m_stop = nullptr;
  QPushButton* m_unfollow = nullptr;  // "Stop following" the run on its host
  QWidget* m_formArea = nullptr;
  QSplitter* m_split = nullptr;
  int m_oneColumnWidth = 0;
  int m_twoColumnWidth = 0;
  bool m_layoutFitted = false;
  bool m_splitMovedByHand = false;  // the divider dragged: its place is the person's

  QString m_validationError;
  TrainJobInfo m_info;
  int64_t m_logEvery = 1;
  QMap<int, QString> m_rankDevices;  // rank -> device, as each rank prepared
  int64_t m_lastStep = 0;
  // A resumed job's history is read once its first steps are reported (the
  // trainer has then cut metrics.jsonl back, or written a branch's lineage).
  bool m_historyPending = false;
  QString m_lastCheckpoint;
  QElapsedTimer m_wall;  // since the job was prepared
};

}  // namespace ckpt
