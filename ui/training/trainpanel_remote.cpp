// TrainPanel and checkpoints on another machine (docs/REMOTE.md, "Training
// on the host"): the Resume or Fine-tune page's fields become a launch
// request (structured fields, paths on the host), which the window sends to
// the host's agent; the trainer runs there, detached from the app, and its
// run is followed like any remote run. Nothing here talks to the host.
#include <QCheckBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QToolButton>
#include <stdexcept>

#include "ckpt/remote/launch_wire.h"
#include "ckpt/remote/remote_path.h"
#include "ckpt/trainapi/job_types.h"
#include "curves/curverun.h"
#include "remote/remotefolder.h"
#include "training/configform.h"
#include "training/finetunepage.h"
#include "training/newrunpage.h"
#include "training/resumepage.h"
#include "training/runview.h"
#include "training/trainpanel.h"

namespace ckpt {

bool TrainPanel::isRemoteStart() const {
  QLineEdit* checkpoint = mode() == Mode::Resume     ? m_resume->checkpointEdit()
                          : mode() == Mode::Finetune ? m_finetune->checkpointEdit()
                                                     : nullptr;
  return checkpoint && isRemoteLocation(checkpoint->text().trimmed());
}

void TrainPanel::setRemoteHost(const QString& endpoint, bool sbatch) {
  m_remoteEndpoint = endpoint;
  m_remoteSbatch = sbatch;
  revalidate();
}

std::optional<RemoteTrainStart> TrainPanel::remoteRequest(QString* error, QStringList* keys) const {
  auto fail = [&](const QString& message, const QString& key) {
    *error = message;
    *keys = key.isEmpty() ? QStringList() : QStringList{key};
    return std::nullopt;
  };
  const bool finetune = mode() == Mode::Finetune;
  RemoteTrainStart s;
  s.location =
      (finetune ? m_finetune->checkpointEdit() : m_resume->checkpointEdit())->text().trimmed();
  std::optional<remote::RemotePath> where;
  try {
    where = remote::parseRemotePath(s.location.toStdString());
  } catch (const std::invalid_argument& e) {
    return fail(tr("checkpoint: %1").arg(QString::fromStdString(e.what())),
                QStringLiteral("checkpoint"));
  }
  if (!where) return fail(tr("checkpoint: not on another machine"), QStringLiteral("checkpoint"));
  remote::LaunchRequest& r = s.request;
  r.command = finetune ? "finetune" : "resume";
  r.checkpoint = where->path;
  // A path on that host (remote::pathOnHost).
  auto hostPath = [&](const QString& text, std::string& into) -> std::optional<QString> {
    const std::string wrong = remote::pathOnHost(text.toStdString(), *where, into);
    if (wrong.empty()) return std::nullopt;
    return QString::fromStdString(wrong);
  };
  const QString data = (finetune ? m_finetune->dataEdit() : m_resume->dataEdit())->text().trimmed();
  if (!data.isEmpty())
    if (const auto problem = hostPath(data, r.data))
      return fail(tr("data: %1").arg(*problem), QStringLiteral("path"));
  if (finetune) {
    if (data.isEmpty())
      return fail(
          tr("data: the fine-tuning data, a path on %1").arg(QString::fromStdString(where->host)),
          QStringLiteral("path"));
    // The agent has no tokenizer field: the trainer uses the checkpoint's.
    // Said rather than dropped.
    if (!m_finetune->tokenizerEdit()->text().trimmed().isEmpty())
      return fail(tr("tokenizer: a run on %1 uses the checkpoint's tokenizer; clear the field")
                      .arg(QString::fromStdString(where->host)),
                  QStringLiteral("tokenizer"));
    r.stage = m_finetune->stageEdit()->text().trimmed().toStdString();
    bool ok = false;
    const double lr = m_finetune->learningRateEdit()->text().trimmed().toDouble(&ok);
    if (!ok || !(lr > 0))
      return fail(tr("learning_rate: a positive number is needed"),
                  QStringLiteral("learning_rate"));
    r.learningRate = lr;
    if (m_finetune->maxStepsBox()->value() > 0) r.maxSteps = m_finetune->maxStepsBox()->value();
    const QString out = m_finetune->outputEdit()->text().trimmed();
    if (!out.isEmpty())
      if (const auto problem = hostPath(out, r.out))
        return fail(tr("output_dir: %1").arg(*problem), QStringLiteral("output_dir"));
  } else if (m_resume->maxStepsBox()->value() > 0) {
    r.maxSteps = m_resume->maxStepsBox()->value();
  }
  const QString device = deviceChoice();
  if (device == QLatin1String("cpu") || device == QLatin1String("cuda"))
    r.device = device.toStdString();
  // SLURM is offered where the host of the folder shown has sbatch.
  s.sbatch = m_remoteSbatch && m_sbatch->isChecked() &&
             QString::fromStdString(where->endpoint()) == m_remoteEndpoint;
  return s;
}

void TrainPanel::revalidateRemote() {
  QString error;
  QStringList keys;
  const std::optional<RemoteTrainStart> s = remoteRequest(&error, &keys);
  m_validationError = s ? QString() : error;
  m_error->setText(m_validationError);
  m_newRun->form()->markInvalid({}, {});
  for (QLineEdit* e : m_modes->currentWidget()->findChildren<QLineEdit*>()) {
    if (e->objectName().isEmpty()) continue;
    e->setStyleSheet(!s && keys.contains(e->objectName())
                         ? QStringLiteral("border: 1px solid #d03030;")
                         : QString());
  }
  QString host;
  bool slurm = false;
  try {
    if (const auto where = remote::parseRemotePath(
            (mode() == Mode::Finetune ? m_finetune->checkpointEdit() : m_resume->checkpointEdit())
                ->text()
                .trimmed()
                .toStdString())) {
      host = QString::fromStdString(where->host);
      slurm = m_remoteSbatch && QString::fromStdString(where->endpoint()) == m_remoteEndpoint;
    }
  } catch (const std::invalid_argument&) {
  }
  m_sbatch->setVisible(slurm);
  // This machine's file dialogs cannot browse the host: its paths are typed.
  QLineEdit* checkpoint =
      (mode() == Mode::Finetune ? m_finetune->checkpointEdit() : m_resume->checkpointEdit());
  for (QToolButton* b : m_modes->currentWidget()->findChildren<QToolButton*>()) {
    if (b->parentWidget() == checkpoint->parentWidget()) continue;  // a local one may be picked
    b->setEnabled(false);
    b->setToolTip(
        tr("A path on %1: typed here (this machine's file dialog cannot browse it)").arg(host));
  }
  // This machine's threads and processes are not the host's: not sent.
  m_threads->setEnabled(false);
  m_processes->setEnabled(false);
  m_deviceNote->hide();  // this machine's LibTorch and devices
  // The trainer is the host's: this machine lacking its training plugin
  // (said when the tab was first shown) does not matter here.
  if (!host.isEmpty() && m_remoteRun.isEmpty() && !isRunning() &&
      m_run->title() == tr("Training is not available")) {
    m_run->setTitle(tr("Runs on %1").arg(host));
    showStatus(tr("ckptscope-cli on %1 trains it: this machine's training plugin is not needed.")
                   .arg(host),
               false);
  }
  const bool sbatch = slurm && m_sbatch->isChecked();
  m_start->setText(host.isEmpty() ? tr("Start")
                   : sbatch       ? tr("Submit on %1…").arg(host)
                                  : tr("Start on %1").arg(host));
  // The trainer runs on the host: this machine's LibTorch is not needed.
  updateStart(s.has_value());
}

bool TrainPanel::isFollowingRemoteRun() const {
  return !m_remoteRun.isEmpty() && !m_remoteRunLocation.isEmpty() && !m_remoteRunDone;
}

QString TrainPanel::startBlocker() const {
  if (isRunning())
    return m_stop->isEnabled()
               ? tr("A run is training here: Stop it, or let it finish, before starting another")
               : tr("The run here is stopping: Start comes back once its checkpoint is written");
  if (m_remoteBusy)
    return tr("Starting a run on %1: Start comes back if the host does not start it")
        .arg(m_remoteBusyHost);
  if (!isFollowingRemoteRun()) return {};
  const QString host = remoteRunHost();
  if (m_remoteStopping)
    return tr("The run on %1 is stopping: Start comes back once it has ended").arg(host);
  const QString which = m_remoteRunJob.isEmpty() ? tr("pid %1").arg(m_remoteRunPid)
                                                 : tr("SLURM job %1").arg(m_remoteRunJob);
  // Two short lines: a tooltip does not wrap, and the run's whole path is
  // in the title and the log.
  return tr("The run started from this tab is training on %1 (%2, %3).\nStop on %1, or Stop "
            "following, before starting another.")
      .arg(host, which, QFileInfo(m_remoteRun).fileName());
}

void TrainPanel::remoteRunUnanswered(const QString& why) {
  if (!isFollowingRemoteRun() || why == m_remoteRunUnanswered) return;
  const QString host = remoteRunHost();
  appendLog(why.isEmpty() ? tr("%1 answers again").arg(host)
                          : tr("Cannot tell how the run on %1 stands: %2 (asked again every few "
                               "seconds; it goes on there)")
                                .arg(host, why));
  m_remoteRunUnanswered = why;
}

void TrainPanel::updateStart(bool valid, const QString& tip) {
  const QString busy = startBlocker();
  m_start->setEnabled(valid && busy.isEmpty());
  m_start->setToolTip(busy.isEmpty() ? tip : busy);
}

void TrainPanel::stopFollowing() {
  if (!isFollowingRemoteRun()) return;
  const QString host = remoteRunHost();
  const QString which = m_remoteRunJob.isEmpty() ? tr("pid %1").arg(m_remoteRunPid)
                                                 : tr("SLURM job %1").arg(m_remoteRunJob);
  const QString said = tr("Not following the run in %1 any more: it keeps training on %2 (%3)")
                           .arg(m_remoteRun, host, which);
  m_run->setTitle(tr("%1 · not followed").arg(m_run->title()));
  m_remoteRun.clear();
  m_remoteRunLocation.clear();
  m_remoteRunPid = 0;
  m_remoteRunJob.clear();
  m_remoteStopping = false;
  showStatus(said, false);
  appendLog(said);
  updateRemoteStop();
  revalidate();
}

bool TrainPanel::startRemote() {
  QString error;
  QStringList keys;
  const std::optional<RemoteTrainStart> s = remoteRequest(&error, &keys);
  if (!s) {
    revalidate();
    showStatus(error, true);
    return false;
  }
  if (m_remoteBusy) return false;
  m_remoteBusy = true;
  m_remoteBusyHost.clear();
  try {
    if (const auto where = remote::parseRemotePath(s->location.toStdString()))
      m_remoteBusyHost = QString::fromStdString(where->host);
  } catch (const std::invalid_argument&) {
  }
  revalidate();
  saveSettings();
  const QString what = s->request.command == "resume" ? tr("resume") : tr("fine-tune");
  const QString message = s->sbatch
                              ? tr("Asking the host for the batch script of the %1…").arg(what)
                              : tr("Starting the %1 on the host…").arg(what);
  showStatus(message, false);
  appendLog(message);
  emit remoteStartRequested(*s);
  return true;
}

void TrainPanel::remoteStartFinished(bool ok, const QString& message) {
  m_remoteBusy = false;
  showStatus(message, !ok);
  appendLog(message);
  revalidate();
}

void TrainPanel::followRemoteRun(const QString& runDir, const QString& title, int64_t maxSteps,
                                 const QString& location, int64_t pid, const QString& jobId) {
  m_remoteRun = runDir;
  m_remoteRunMaxSteps = maxSteps;
  m_remoteRunDone = false;
  m_remoteRunLocation = location;
  m_remoteRunPid = pid;
  m_remoteRunJob = jobId;
  m_remoteStopping = false;
  m_remoteRunUnanswered.clear();
  const QString said = statusText();  // how it started, kept in the log
  m_run->clear();
  m_run->progressBar()->setTextVisible(false);  // no step yet (a job may wait in the queue)
  m_run->setTitle(title);
  m_run->showCharts();
  // As for a run here (onPrepared): stacked, the run's status, chart and
  // log get most of the height now, unless the person placed the divider.
  if (m_split->orientation() == Qt::Vertical && !m_splitMovedByHand)
    m_split->setSizes({m_split->height() * 35 / 100, m_split->height() * 65 / 100});
  appendLog(said);
  updateRemoteStop();
  revalidate();  // Start waits for this run
}

void TrainPanel::showRemoteRun(const CurveRun& run, const QString& finalCheckpoint) {
  if (m_remoteRun.isEmpty() || run.path != m_remoteRun) return;
  LiveCurves::History h;
  int64_t first = -1;
  int64_t last = -1;
  auto take = [&](const char* metric, QVector<double>& steps, QVector<double>& values) {
    const MetricSeries* s = run.find(metric);
    if (!s) return false;
    for (size_t i = 0; i < s->points.size(); ++i) {
      const MetricPoint p = s->points[i];
      steps.push_back(double(p.step));
      values.push_back(p.value);
      first = first < 0 ? p.step : std::min(first, p.step);
      last = std::max(last, p.step);
    }
    return true;
  };
  take("loss", h.lossSteps, h.loss);
  take("val_loss", h.valLossSteps, h.valLoss);
  if (!take("lr", h.lrSteps, h.lr)) take("learning_rate", h.lrSteps, h.lr);
  if (last < 0) return;  // nothing logged yet
  // The whole series each time (a few thousand points at most): what the
  // Curves tab holds is the truth, appended or reread.
  const int64_t maxSteps = std::max(m_remoteRunMaxSteps, last);
  m_run->setStepRange(first, maxSteps);
  LiveCurves* curves = m_run->curves();
  curves->clear();
  // max_steps not known here (a resume without one typed): the axis just follows.
  curves->setStepRange(double(first), m_remoteRunMaxSteps > 0 ? double(maxSteps) : 0.0);
  curves->addHistory(h);
  StepReport r;
  r.step = last;
  r.maxSteps = maxSteps;
  if (!h.loss.isEmpty()) r.loss = h.loss.back();
  if (!h.lr.isEmpty()) r.learningRate = h.lr.back();
  if (!h.valLoss.isEmpty() && int64_t(h.valLossSteps.back()) == last) r.valLoss = h.valLoss.back();
  if (const MetricSeries* speed = run.find("tokens_per_sec"); speed && speed->points.size())
    r.tokensPerSecond = speed->points[speed->points.size() - 1].value;
  m_run->showStep(r);
  if (!finalCheckpoint.isEmpty() && !m_remoteRunDone && !m_remoteStopping) {
    m_remoteRunDone = true;
    const QString done = tr("Finished on the host at step %1: %2").arg(last).arg(finalCheckpoint);
    showStatus(done, false);
    appendLog(done);
    updateRemoteStop();
    revalidate();  // Start is free again
  }
}

QString TrainPanel::remoteRunHost() const {
  try {
    if (const auto where = remote::parseRemotePath(m_remoteRunLocation.toStdString()))
      return QString::fromStdString(where->host);
  } catch (const std::invalid_argument&) {
  }
  return {};
}

void TrainPanel::updateRemoteStop() {
  m_unfollow->setVisible(isFollowingRemoteRun() && !isRunning());
  if (isRunning()) return;  // a run here: setRunning's
  const bool followed = !m_remoteRun.isEmpty() && !m_remoteRunLocation.isEmpty() &&
                        (m_remoteRunPid > 0 || !m_remoteRunJob.isEmpty());
  if (!followed) {
    m_stop->setText(tr("Stop"));
    m_stop->setEnabled(false);
    m_stop->setToolTip(tr("Finish the step in flight, write a resumable checkpoint, stop"));
    return;
  }
  const QString host = remoteRunHost();
  m_stop->setText(m_remoteStopping ? tr("Stopping…") : tr("Stop on %1").arg(host));
  m_stop->setEnabled(!m_remoteStopping && !m_remoteRunDone);
  m_stop->setToolTip(
      m_remoteRunDone ? tr("The run on %1 has ended").arg(host)
      : m_remoteRunJob.isEmpty()
          ? tr("Ask %1 to stop the trainer (pid %2): it finishes the step in flight, writes a "
               "checkpoint to resume from and ends")
                .arg(host)
                .arg(m_remoteRunPid)
          : tr("Ask %1 to stop SLURM job %2: it finishes the step in flight, writes a checkpoint "
               "to resume from and ends (a job still queued is taken out of the queue)")
                .arg(host, m_remoteRunJob));
}

void TrainPanel::stopRemote() {
  if (m_remoteRun.isEmpty() || m_remoteRunDone || m_remoteStopping ||
      (m_remoteRunPid <= 0 && m_remoteRunJob.isEmpty()))
    return;
  const QString host = remoteRunHost();
  const QString what = m_remoteRunJob.isEmpty() ? tr("the trainer (pid %1)").arg(m_remoteRunPid)
                                                : tr("SLURM job %1").arg(m_remoteRunJob);
  // A run of hours: asked first. Cancel is the default.
  QMessageBox box(QMessageBox::Question, tr("Stop on %1").arg(host),
                  tr("Stop %1 on %2?").arg(what, host), QMessageBox::Cancel, this);
  box.setObjectName(QStringLiteral("stopRemoteBox"));
  box.setInformativeText(
      tr("It finishes the step in flight, writes a checkpoint to resume from in %1 and ends. "
         "Resume it later from that checkpoint.")
          .arg(m_remoteRun));
  QPushButton* go = box.addButton(tr("Stop on %1").arg(host), QMessageBox::AcceptRole);
  box.setDefaultButton(QMessageBox::Cancel);
  box.exec();
  if (box.clickedButton() != go) return;
  m_remoteStopping = true;
  updateRemoteStop();
  revalidate();  // Start's tooltip: stopping
  const QString message =
      tr("Stopping on %1: the step in flight finishes, then a checkpoint is written…").arg(host);
  showStatus(message, false);
  appendLog(message);
  emit remoteStopRequested(m_remoteRunLocation, m_remoteRunPid, m_remoteRunJob);
}

void TrainPanel::remoteStopFinished(bool ok, const QString& message) {
  if (!ok) m_remoteStopping = false;
  showStatus(message, !ok);
  appendLog(message);
  updateRemoteStop();
  revalidate();  // Start's tooltip: stopping, or training again
}

void TrainPanel::remoteRunEnded(const QString& outcome, int64_t step, const QString& checkpoint,
                                const QString& log) {
  if (!isFollowingRemoteRun()) return;  // ended before, or no longer followed
  m_remoteRunDone = true;
  m_remoteStopping = false;
  const QString said =
      outcome == QLatin1String("stopped")
          ? tr("Stopped on the host at step %1: %2").arg(step).arg(checkpoint)
      : outcome == QLatin1String("finished")
          ? tr("Finished on the host at step %1: %2").arg(step).arg(checkpoint)
          : tr("Ended on the host; its log does not say where it saved (%1)").arg(log);
  showStatus(said, outcome.isEmpty());
  appendLog(said);
  // The title named it running there ("..., detached"): now how it ended.
  if (!outcome.isEmpty())
    m_run->setTitle(tr("%1 · %2 at step %3")
                        .arg(m_run->title(),
                             outcome == QLatin1String("stopped") ? tr("stopped") : tr("finished"))
                        .arg(step));
  updateRemoteStop();
  revalidate();  // Start is free again
}

}  // namespace ckpt
