#include "training/trainpanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <cmath>

#include "ckpt/format/json_text.h"
#include "ckpt/index/run_plan.h"
#include "remote/remotefolder.h"
#include "training/configform.h"
#include "training/finetunepage.h"
#include "training/livecurves.h"
#include "training/newrunpage.h"
#include "training/resumepage.h"
#include "training/runview.h"
#include "training/trainbackendloader.h"
#include "workpool.h"

namespace ckpt {
namespace {

using json = nlohmann::ordered_json;

const char* kSettingsGroup = "training";

QString duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("–");
  const qint64 s = qint64(seconds + 0.5);
  if (s >= 3600)
    return QStringLiteral("%1:%2:%3")
        .arg(s / 3600)
        .arg((s / 60) % 60, 2, 10, QLatin1Char('0'))
        .arg(s % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

QString number(double v) {
  return QLocale::c().toString(v, 'g', 5);
}

}  // namespace

TrainPanel::TrainPanel(QWidget* parent) : QWidget(parent) {
  // Stacked and in one column until the panel knows its width (fitLayout):
  // a hidden tab's minimum width still counts in the window's.
  m_split = new QSplitter(Qt::Vertical, this);
  m_split->setChildrenCollapsible(false);
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  outer->addWidget(m_split);

  // Left (or on top, when narrow): the three pages, the device, the error line and Start/Stop.
  m_formArea = new QWidget(m_split);
  auto* left = new QVBoxLayout(m_formArea);
  left->setContentsMargins(0, 0, 0, 0);
  m_modes = new QTabWidget(m_formArea);
  m_newRun = new NewRunPage;
  m_resume = new ResumePage;
  m_finetune = new FinetunePage;
  m_modes->addTab(m_newRun, tr("New run"));
  m_modes->addTab(trainui::scrollingDown(m_resume), tr("Resume"));
  m_modes->addTab(trainui::scrollingDown(m_finetune), tr("Fine-tune"));
  left->addWidget(m_modes, 1);

  auto* deviceRow = new QHBoxLayout;
  deviceRow->addWidget(new QLabel(tr("Device"), m_formArea));
  m_device = new QComboBox(m_formArea);
  m_device->setObjectName(QStringLiteral("device"));
  m_device->addItem(tr("auto (checking for CUDA…)"), QStringLiteral("auto"));
  m_device->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  m_device->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));
  // Its longest item ("auto: CUDA (8 GPUs)") need not set the row's
  // minimum: beside the threads and processes boxes it made a 1000x700
  // window's Train tab a pixel too wide.
  m_device->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_device->setMinimumContentsLength(6);
  deviceRow->addWidget(m_device, 1);
  deviceRow->addWidget(new QLabel(tr("CPU threads"), m_formArea));
  m_threads = new QSpinBox(m_formArea);
  m_threads->setRange(0, 256);
  m_threads->setSpecialValueText(tr("default"));
  m_threads->setToolTip(tr("LibTorch's intra-op threads for the CPU; default: one per core"));
  deviceRow->addWidget(m_threads);
  // Data-parallel ranks, each a ckptscope-train process started as
  // `ckptscope-cli train --nproc N` starts them (the plugin's RanksJob).
  auto* processesLabel = new QLabel(tr("Processes"), m_formArea);
  deviceRow->addWidget(processesLabel);
  m_processes = new QSpinBox(m_formArea);
  m_processes->setObjectName(QStringLiteral("processes"));
  m_processes->setRange(1, 256);
  m_processes->setValue(1);
  m_processes->setToolTip(
      tr("Data-parallel processes on this machine (checking for CUDA…); 1: in the app itself"));
  processesLabel->setBuddy(m_processes);
  deviceRow->addWidget(m_processes);
  left->addLayout(deviceRow);
  m_deviceNote = new QLabel(m_formArea);
  m_deviceNote->setWordWrap(true);
  m_deviceNote->setStyleSheet(QStringLiteral("color: palette(dark);"));
  left->addWidget(m_deviceNote);

  m_error = new QLabel(m_formArea);
  m_error->setObjectName(QStringLiteral("validationError"));
  m_error->setWordWrap(true);
  m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_error->setStyleSheet(QStringLiteral("color: #c02020;"));
  left->addWidget(m_error);

  auto* buttons = new QHBoxLayout;
  m_unfollow = new QPushButton(tr("Stop following"), m_formArea);
  m_unfollow->setObjectName(QStringLiteral("stopFollowing"));
  m_unfollow->setToolTip(
      tr("Leave the run on its host alone: it goes on training there, this tab no longer "
         "follows it, and Start can start another run"));
  m_unfollow->hide();
  buttons->addWidget(m_unfollow);
  m_start = new QPushButton(tr("Start"), m_formArea);
  m_start->setDefault(true);
  m_stop = new QPushButton(tr("Stop"), m_formArea);
  m_stop->setEnabled(false);
  m_stop->setToolTip(tr("Finish the step in flight, write a resumable checkpoint, stop"));
  buttons->addStretch(1);
  m_sbatch = new QCheckBox(tr("as a SLURM job"), m_formArea);
  m_sbatch->setObjectName(QStringLiteral("sbatch"));
  m_sbatch->setToolTip(
      tr("Submit it with sbatch on the host: the batch script is shown to edit first"));
  m_sbatch->hide();
  buttons->addWidget(m_sbatch);
  buttons->addWidget(m_start);
  buttons->addWidget(m_stop);
  left->addLayout(buttons);

  m_run = new RunView;
  m_split->addWidget(m_formArea);
  m_split->addWidget(m_run);
  m_newRun->form()->setColumns(1);
  m_split->setStretchFactor(0, 0);
  m_split->setStretchFactor(1, 1);

  connect(m_split, &QSplitter::splitterMoved, this, [this] { m_splitMovedByHand = true; });
  connect(m_start, &QPushButton::clicked, this, &TrainPanel::start);
  connect(m_stop, &QPushButton::clicked, this, &TrainPanel::stop);
  connect(m_unfollow, &QPushButton::clicked, this, &TrainPanel::stopFollowing);
  connect(m_modes, &QTabWidget::currentChanged, this, &TrainPanel::revalidate);
  connect(m_device, &QComboBox::currentIndexChanged, this, &TrainPanel::revalidate);
  connect(m_processes, &QSpinBox::valueChanged, this, &TrainPanel::revalidate);
  connect(m_newRun, &NewRunPage::changed, this, &TrainPanel::revalidate);
  connect(m_resume, &ResumePage::changed, this, &TrainPanel::revalidate);
  connect(m_finetune, &FinetunePage::changed, this, &TrainPanel::revalidate);
  connect(m_sbatch, &QCheckBox::toggled, this, &TrainPanel::revalidate);

  connect(&m_runner, &TrainRunner::prepared, this, &TrainPanel::onPrepared);
  connect(&m_runner, &TrainRunner::progress, this, &TrainPanel::onProgress);
  connect(&m_runner, &TrainRunner::logLine, this, &TrainPanel::appendLog);
  connect(&m_runner, &TrainRunner::finished, this, &TrainPanel::onFinished);
  connect(&m_runner, &TrainRunner::failed, this, &TrainPanel::onFailed);
  connect(&m_backendWatcher, &QFutureWatcher<void>::finished, this, &TrainPanel::onBackendLoaded);

  restoreSettings();
  revalidate();
}

TrainPanel::~TrainPanel() {
  saveSettings();
  // A run in flight stops after its step with a checkpoint; TrainRunner's
  // destructor waits for it. The backend load (if any) is waited for too.
  m_runner.stop();
  m_backendWatcher.waitForFinished();
}

ConfigForm* TrainPanel::form() const {
  return m_newRun->form();
}
QLineEdit* TrainPanel::dataPathEdit() const {
  return m_newRun->dataPathEdit();
}
QComboBox* TrainPanel::tokenizerBox() const {
  return m_newRun->tokenizerBox();
}
QLineEdit* TrainPanel::outputDirEdit() const {
  return m_newRun->outputDirEdit();
}
QLineEdit* TrainPanel::resumeCheckpointEdit() const {
  return m_resume->checkpointEdit();
}
QSpinBox* TrainPanel::resumeMaxStepsBox() const {
  return m_resume->maxStepsBox();
}
QCheckBox* TrainPanel::resumeInPlaceBox() const {
  return m_resume->inPlaceBox();
}
QString TrainPanel::resumePlanText() const {
  return m_resume->planText();
}
QLineEdit* TrainPanel::finetuneCheckpointEdit() const {
  return m_finetune->checkpointEdit();
}
QLineEdit* TrainPanel::finetuneDataEdit() const {
  return m_finetune->dataEdit();
}
QLineEdit* TrainPanel::finetuneStageEdit() const {
  return m_finetune->stageEdit();
}
QLineEdit* TrainPanel::finetuneLrEdit() const {
  return m_finetune->learningRateEdit();
}
QSpinBox* TrainPanel::finetuneMaxStepsBox() const {
  return m_finetune->maxStepsBox();
}
QLineEdit* TrainPanel::finetuneOutputEdit() const {
  return m_finetune->outputEdit();
}
QProgressBar* TrainPanel::progressBar() const {
  return m_run->progressBar();
}
LiveCurves* TrainPanel::curves() const {
  return m_run->curves();
}

void TrainPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  fitLayout();
  loadBackendAsync();
}

void TrainPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitLayout();
}

void TrainPanel::fitLayout() {
  // Beside the form when both fit: the form at its two-column width, the
  // run's status, charts and log at a readable width. Otherwise the run
  // view goes below the form, which then scrolls down in its part of the
  // height, in two columns or, narrower still, one.
  ConfigForm* form = m_newRun->form();
  if (m_twoColumnWidth == 0) {
    m_oneColumnWidth = form->minimumWidthFor(1);
    m_twoColumnWidth = form->minimumWidthFor(2);
  }
  const int scrollBar =
      m_newRun->verticalScrollBar()->sizeHint().width() + 10;  // + the page's 2 x 4 px margins
  const int twoColumns = m_twoColumnWidth + scrollBar;
  constexpr int kRunViewWidth = 460;
  const int available = width() - 8;
  const bool beside = available >= twoColumns + kRunViewWidth;
  const Qt::Orientation orientation = beside ? Qt::Horizontal : Qt::Vertical;
  form->setColumns(beside || available >= twoColumns ? 2 : 1);
  // Never more than one column's width as the minimum: a panel held wide by
  // its two columns could not be made narrower, and so never reflow.
  m_newRun->setMinimumWidth(m_oneColumnWidth + scrollBar);
  // Sizes once the panel has its real size (a hidden tab has none yet), and
  // again when the orientation changes; in between they are the person's.
  if (!isVisible() || height() < 200) return;
  if (m_split->orientation() != orientation || !m_layoutFitted) {
    m_split->setOrientation(orientation);
    m_layoutFitted = true;
    if (beside)
      m_split->setSizes({twoColumns, std::max(kRunViewWidth, available - twoColumns)});
    else
      m_split->setSizes({height() * 58 / 100, height() * 42 / 100});
  }
}

void TrainPanel::loadBackendAsync() {
  if (m_backendRequested) return;
  m_backendRequested = true;
  // dlopen of LibTorch takes a noticeable moment: not on the GUI thread.
  m_backendWatcher.setFuture(QtConcurrent::run(workPool(), [] { (void)trainBackend(); }));
}

QString TrainPanel::deviceSummary() const {
  const TrainBackendLoad& b = trainBackend();
  if (!b.backend) return tr("Training is not available: ") + b.error;
  const TrainDevices d = b.backend->devices();
  const QString threads = d.cpuThreads == 1 ? tr("1 thread") : tr("%1 threads").arg(d.cpuThreads);
  const QString gpus = d.cudaDeviceCount == 1 ? tr("1 GPU") : tr("%1 GPUs").arg(d.cudaDeviceCount);
  QString s = tr("LibTorch %1 · CPU: %2 · ").arg(QString::fromStdString(d.torchVersion), threads);
  s += d.cudaAvailable ? tr("CUDA available (%1)").arg(gpus) : tr("CUDA not available");
  return s;
}

void TrainPanel::onBackendLoaded() {
  m_backendReady = true;
  const TrainBackendLoad& b = trainBackend();
  auto* model = qobject_cast<QStandardItemModel*>(m_device->model());
  if (b.backend) {
    m_devices = b.backend->devices();
    const TrainDevices& d = *m_devices;
    const QString gpus =
        d.cudaDeviceCount == 1 ? tr("1 GPU") : tr("%1 GPUs").arg(d.cudaDeviceCount);
    m_device->setItemText(0, d.cudaAvailable ? tr("auto: CUDA (%1)").arg(gpus)
                                             : tr("auto: CPU (CUDA not available)"));
    m_device->setItemText(2, d.cudaAvailable ? QStringLiteral("cuda") : tr("cuda (not available)"));
    if (model) model->item(2)->setEnabled(d.cudaAvailable);
    if (!d.cudaAvailable && m_device->currentIndex() == 2) m_device->setCurrentIndex(0);
    m_deviceNote->setText(deviceSummary());
    describeProcesses(d);
  } else {
    m_device->setItemText(0, QStringLiteral("auto"));
    m_deviceNote->setText(QString());
    m_run->setTitle(tr("Training is not available"));
    // The first line where the charts are; the places looked in, in the log.
    QString first = b.error.section(QLatin1Char('\n'), 0, 0).trimmed();
    if (first != b.error.trimmed()) {
      if (first.endsWith(QLatin1String(" Looked in:"))) first.chop(int(qstrlen(" Looked in:")));
      first += tr(" (where it looked: in the log below)");
    }
    showStatus(first, true);
    appendLog(b.error);
    m_start->setEnabled(false);
    m_start->setToolTip(b.error);
  }
  revalidate();
  emit backendLoaded();
}

void TrainPanel::describeProcesses(const TrainDevices& d) {
  if (d.cudaAvailable) {
    m_processes->setToolTip(
        tr("%n GPU(s) visible: one process per GPU (cuda:0, cuda:1, …), NCCL between them; "
           "with the cpu device, CPU processes with Gloo between them. 1: in the app itself.",
           nullptr, d.cudaDeviceCount));
    if (!m_processesChosen) m_processes->setValue(std::max(1, d.cudaDeviceCount));
  } else {
    m_processes->setToolTip(
        tr("CUDA not available: CPU processes, Gloo between them, each taking its share of "
           "every batch with the CPU threads above (default: one each). 1: in the app itself."));
  }
}

TrainPanel::Mode TrainPanel::mode() const {
  return Mode(m_modes->currentIndex());
}
void TrainPanel::setMode(Mode mode) {
  m_modes->setCurrentIndex(int(mode));
}

QString TrainPanel::deviceChoice() const {
  return m_device->currentData().toString();
}

std::optional<TrainRequest> TrainPanel::request(QString* error, QStringList* keys) const {
  TrainRequest r;
  r.cpuThreads = m_threads->value();
  r.processes = m_processes->value();
  const std::string device = deviceChoice().toStdString();
  auto fail = [&](const QString& message, QStringList names) {
    *error = message;
    *keys = std::move(names);
    return std::nullopt;
  };
  if (device == "cuda" && m_devices && !m_devices->cudaAvailable)
    return fail(
        tr("device: CUDA is not available (this LibTorch has no CUDA, or no GPU is visible)"), {});
  if (r.processes > 1) {
    r.trainProgram = trainProgram().toStdString();
    if (r.trainProgram.empty())
      return fail(tr("processes: ckptscope-train, which runs each process, is not installed next "
                     "to the app"),
                  {QStringLiteral("processes")});
    const bool onGpus =
        device == "cuda" || (device == "auto" && m_devices && m_devices->cudaAvailable);
    if (onGpus && m_devices && r.processes > m_devices->cudaDeviceCount)
      return fail(tr("processes: %1 processes need %1 GPUs, %2 visible (or choose the cpu device)")
                      .arg(r.processes)
                      .arg(m_devices->cudaDeviceCount),
                  {QStringLiteral("processes")});
  }
  try {
    std::optional<trainui::Problem> problem;
    switch (mode()) {
      case Mode::NewRun:
        r.kind = TrainRequest::Kind::NewRun;
        r.config = m_newRun->config(deviceChoice());
        // An impossible split of the batch over the processes, named before Start.
        if (r.processes > 1) {
          RunConfig split = r.config;
          split.training.adaptToWorld(r.processes);
        }
        break;
      case Mode::Resume:
        r.kind = TrainRequest::Kind::Resume;
        problem = m_resume->fill(r, device);
        break;
      case Mode::Finetune:
        r.kind = TrainRequest::Kind::Finetune;
        problem = m_finetune->fill(r, device);
        break;
    }
    if (problem) return fail(problem->message, problem->fields);
  } catch (const ConfigError& e) {
    QStringList fields;  // the form frames the fields the error names
    for (const std::string& f : e.fields()) fields << QString::fromStdString(f);
    return fail(QString::fromStdString(e.what()), fields);
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()), {});
  }
  return r;
}

bool TrainPanel::confirmStart(const TrainRequest& r) {
  if (r.kind != TrainRequest::Kind::Resume || !r.resume.inPlace) return true;
  ResumePlan plan;
  try {
    plan = planResume(r.resume.checkpoint);
  } catch (const std::exception& e) {
    showStatus(QString::fromStdString(e.what()), true);
    return false;
  }
  if (plan.isNewest) return true;
  QStringList names;
  for (const std::string& f : plan.laterFiles)
    names << QFileInfo(QString::fromStdString(f)).fileName();
  QMessageBox box(QMessageBox::Warning, tr("Resume in place"),
                  tr("Resuming %1 in place moves %2 later file(s) of the run to %3/.trash/ and "
                     "continues the run "
                     "from step %4 in its directory.")
                      .arg(QFileInfo(QString::fromStdString(plan.checkpoint)).fileName())
                      .arg(names.size())
                      .arg(QString::fromStdString(plan.runDir))
                      .arg(plan.step),
                  QMessageBox::Cancel, this);
  box.setInformativeText(tr("Moved to .trash/: %1").arg(names.join(QStringLiteral(", "))));
  QPushButton* go = box.addButton(tr("Move and Resume"), QMessageBox::DestructiveRole);
  box.setDefaultButton(QMessageBox::Cancel);
  box.exec();
  return box.clickedButton() == go;
}

void TrainPanel::revalidate() {
  if (isRemoteStart()) {
    revalidateRemote();
    return;
  }
  m_sbatch->hide();
  m_start->setText(tr("Start"));
  m_threads->setEnabled(!isRunning());
  m_processes->setEnabled(!isRunning());
  m_deviceNote->show();
  for (QToolButton* b : m_modes->currentWidget()->findChildren<QToolButton*>()) {
    b->setEnabled(true);
    b->setToolTip(QString());
  }
  QString error;
  QStringList keys;
  const bool ok = request(&error, &keys).has_value();
  m_validationError = ok ? QString() : error;
  m_error->setText(m_validationError);
  if (mode() == Mode::NewRun)
    m_newRun->form()->markInvalid(ok ? QStringList() : keys, error);
  else
    m_newRun->form()->markInvalid({}, {});
  const QWidget* page = m_modes->currentWidget();
  for (QLineEdit* e : page->findChildren<QLineEdit*>()) {
    if (e->objectName().isEmpty() || m_newRun->form()->editor(e->objectName()) == e)
      continue;  // the form marks its own
    const bool bad = !ok && keys.contains(e->objectName());
    e->setStyleSheet(bad ? QStringLiteral("border: 1px solid #d03030;") : QString());
  }
  const bool backendMissing = m_backendReady && !trainBackend().backend;
  updateStart(ok && !backendMissing, backendMissing ? trainBackend().error : QString());
}

bool TrainPanel::start() {
  if (const QString busy = startBlocker(); !busy.isEmpty()) {
    showStatus(busy, true);
    return false;
  }
  if (isRemoteStart()) return startRemote();
  m_remoteRun.clear();  // the run view is this job's now
  QString error;
  QStringList keys;
  const std::optional<TrainRequest> r = request(&error, &keys);
  if (!r) {
    revalidate();
    showStatus(error, true);
    return false;
  }
  if (!confirmStart(*r)) {
    showStatus(tr("Not started: nothing was moved."), false);
    return false;
  }
  saveSettings();
  m_info = {};
  m_lastStep = 0;
  m_historyPending = false;
  m_lastCheckpoint.clear();
  m_rankDevices.clear();
  m_run->clear();
  const QString what[] = {tr("new run"), tr("resume"), tr("fine-tune")};
  m_run->setTitle(tr("Preparing the %1…").arg(what[int(r->kind)]));
  showStatus(QString(), false);
  appendLog(tr("preparing the %1 (loading the data and the model)").arg(what[int(r->kind)]));
  m_runner.start(*r);
  setRunning(true);
  return true;
}

bool TrainPanel::startResume(const QString& checkpoint) {
  m_resume->reset(checkpoint);
  setMode(Mode::Resume);
  return start();
}

void TrainPanel::prepareResume(const QString& checkpoint) {
  m_resume->reset(checkpoint);
  setMode(Mode::Resume);
  revalidate();
}

void TrainPanel::setSelectedCheckpoint(const QString& checkpoint) {
  if (isRunning() || checkpoint.isEmpty()) return;
  m_resume->checkpointEdit()->setText(checkpoint);
  m_finetune->checkpointEdit()->setText(checkpoint);
}

void TrainPanel::prepareFinetune(const QString& checkpoint) {
  m_finetune->checkpointEdit()->setText(checkpoint);
  QLineEdit* data = m_finetune->dataEdit();
  // The New run page's data is a path here: a fine-tune on another machine
  // needs one on that host, typed by the person.
  if (data->text().trimmed().isEmpty() && !isRemoteLocation(checkpoint))
    data->setText(m_newRun->dataPathEdit()->text().trimmed());
  setMode(Mode::Finetune);
  revalidate();
}

bool TrainPanel::startFinetune(const QString& checkpoint) {
  prepareFinetune(checkpoint);
  if (m_finetune->dataEdit()->text().trimmed().isEmpty()) {
    m_finetune->dataEdit()->setFocus();
    showStatus(tr("Choose the fine-tuning data, then Start."), false);
    return false;
  }
  return start();
}

void TrainPanel::stop() {
  if (!isRunning()) {
    stopRemote();  // a run followed on a host, if any
    return;
  }
  m_runner.stop();
  m_stop->setEnabled(false);
  m_stop->setText(tr("Stopping…"));
  updateStart(false);  // its tooltip: stopping
  showStatus(tr("Stopping after the step in flight (step %1 was the last reported): "
                "writing a resumable checkpoint…")
                 .arg(m_lastStep),
             false);
  appendLog(tr("stop requested: finishing the step in flight"));
}

void TrainPanel::setRunning(bool running) {
  m_modes->setEnabled(!running);
  m_device->setEnabled(!running);
  m_threads->setEnabled(!running);
  m_processes->setEnabled(!running);
  m_stop->setEnabled(running);
  m_stop->setText(tr("Stop"));
  if (running)
    updateStart(false);
  else
    revalidate();
  updateRemoteStop();
}

void TrainPanel::onPrepared(const TrainJobInfo& info) {
  m_rankDevices[info.rank] = QString::fromStdString(info.device);
  if (info.rank == 0) m_info = info;  // rank 0 speaks for the run
  showRankDevices();
  if (info.rank != 0) return;
  m_wall.start();
  m_lastStep = info.startStep;
  m_logEvery = 1;
  try {
    const json c = parseJsonText(info.configJson);
    m_logEvery = std::max<int64_t>(1, c.at("training").value("log_every", int64_t(1)));
  } catch (const std::exception&) {
  }
  const QString out = QString::fromStdString(info.outputDir);
  m_run->setTitle(
      QStringLiteral("%1 (%2) → %3")
          .arg(QString::fromStdString(info.runName), QString::fromStdString(info.stage), out));
  m_run->setStepRange(info.startStep, info.maxSteps);
  // A resumed run's curves start with its history, so that they read as one
  // run: read once the first steps are reported (onProgress), when what the
  // trainer does to the directory as the job starts (metrics.jsonl cut back
  // to the step, a branch's lineage.json) is done.
  m_historyPending = info.startStep > 0;
  const QString where =
      info.worldSize > 1
          ? tr("%1 processes (%2)").arg(info.worldSize).arg(QString::fromStdString(info.backend))
          : QString::fromStdString(info.device);
  appendLog(tr("run %1 on %2 from step %3 to %4, writing to %5")
                .arg(QString::fromStdString(info.runName), where)
                .arg(info.startStep)
                .arg(info.maxSteps)
                .arg(out));
  if (!info.notes.empty()) appendLog(tr("note: ") + QString::fromStdString(info.notes));
  // Stacked, the form had most of the height while it was filled in; a
  // running job's status, chart and log get it now, unless the person
  // placed the divider themselves.
  m_run->showCharts();
  if (m_split->orientation() == Qt::Vertical && !m_splitMovedByHand)
    m_split->setSizes({m_split->height() * 35 / 100, m_split->height() * 65 / 100});
  emit runStarted(out);
}

QString TrainPanel::deviceText() const {
  if (m_rankDevices.size() == 1 && m_rankDevices.contains(0) && m_info.worldSize <= 1)
    return m_rankDevices.first();
  QStringList ranks;
  for (auto it = m_rankDevices.cbegin(); it != m_rankDevices.cend(); ++it)
    ranks << tr("rank %1: %2").arg(it.key()).arg(it.value());
  return ranks.join(QStringLiteral(" · "));
}

void TrainPanel::showRankDevices() {
  m_run->setDevices(deviceText(), m_rankDevices.size() > 1);
}

void TrainPanel::onProgress(const QList<StepReport>& steps) {
  if (steps.isEmpty()) return;
  if (m_historyPending) {
    m_historyPending = false;
    m_run->loadHistory(QString::fromStdString(m_info.outputDir), m_info.startStep);
  }
  m_run->curves()->append(steps);
  // Several processes: the steps are rank 0's, and the merged log says so.
  const QString from = m_info.worldSize > 1 ? QStringLiteral("[rank0]: ") : QString();
  for (const StepReport& r : steps) {
    if (r.step % m_logEvery == 0 || r.step == r.maxSteps)
      appendLog(from + QStringLiteral("step=%1 loss=%2 lr=%3")
                           .arg(r.step)
                           .arg(r.loss, 0, 'f', 4)
                           .arg(r.learningRate, 0, 'e', 3));
    if (r.valLoss)
      appendLog(from +
                QStringLiteral("step=%1 val_loss=%2").arg(r.step).arg(*r.valLoss, 0, 'f', 4));
    if (!r.message.empty())
      appendLog(from +
                QStringLiteral("step %1: %2").arg(r.step).arg(QString::fromStdString(r.message)));
    if (!r.savedCheckpoint.empty()) {
      m_lastCheckpoint = QString::fromStdString(r.savedCheckpoint);
      appendLog(from + tr("saved %1").arg(m_lastCheckpoint));
      emit checkpointWritten(m_lastCheckpoint);
    }
  }
  const StepReport& r = steps.back();
  m_lastStep = r.step;
  m_run->showStep(r);
  // The pace of this job alone: a resumed run's recorded time includes
  // the steps of earlier jobs (17 min was shown for 94 steps taking 27 s).
  const int64_t done = r.step - m_info.startStep;
  const double seconds = m_wall.isValid() ? m_wall.elapsed() / 1000.0 : 0.0;
  if (done > 0 && seconds > 0)
    m_run->setEta(duration(seconds / double(done) * double(r.maxSteps - r.step)));
}

void TrainPanel::onFinished(const RunResult& result) {
  setRunning(false);
  const bool stopped = result.outcome == RunOutcome::Stopped;
  const QString last = QString::fromStdString(result.lastCheckpoint);
  const QString out =
      QString::fromStdString(result.outputDir.empty() ? m_info.outputDir : result.outputDir);
  if (!last.isEmpty() && last != m_lastCheckpoint) emit checkpointWritten(last);
  m_run->setProgress(result.step);
  m_run->setEta(stopped ? tr("stopped") : tr("done"));
  QString text;
  if (stopped) {
    text = tr("Stopped at step %1. Resumable checkpoint: %2").arg(result.step).arg(last);
    // One click away: the Resume page holds the stop checkpoint.
    m_resume->checkpointEdit()->setText(last);
  } else {
    const int64_t ran = result.step - m_info.startStep;
    text = m_info.startStep > 0
               ? tr("Finished at step %1: %2 steps from step %3 in %4. Final checkpoint: %5")
                     .arg(result.step)
                     .arg(ran)
                     .arg(m_info.startStep)
                     .arg(duration(m_wall.elapsed() / 1000.0), last)
               : tr("Finished %1 steps in %2. Final checkpoint: %3")
                     .arg(result.step)
                     .arg(duration(m_wall.elapsed() / 1000.0), last);
    if (result.bestValLoss) text += tr(" (best val loss %1)").arg(number(*result.bestValLoss));
  }
  showStatus(text, false);
  appendLog(text);
  emit runFinished(out, last, stopped);
}

void TrainPanel::onFailed(const QString& message) {
  setRunning(false);
  QString text = tr("Training failed: ") + message;
  if (!m_lastCheckpoint.isEmpty())
    text += tr("\nThe last checkpoint written is ") + m_lastCheckpoint;
  showStatus(text, true);
  appendLog(tr("error: ") + message);
  if (m_info.runName.empty()) m_run->setTitle(tr("Not started"));
  emit runFailed(message);
}

void TrainPanel::appendLog(const QString& line) {
  m_run->appendLog(line);
}

void TrainPanel::showStatus(const QString& text, bool error) {
  m_run->showStatus(text, error);
}

QString TrainPanel::statusText() const {
  return m_run->statusText();
}
QString TrainPanel::logText() const {
  return m_run->logText();
}

void TrainPanel::saveSettings() const {
  QSettings s;
  s.beginGroup(QLatin1String(kSettingsGroup));
  m_newRun->saveSettings(s);
  s.setValue(QStringLiteral("device"), deviceChoice());
  s.setValue(QStringLiteral("threads"), m_threads->value());
  s.setValue(QStringLiteral("processes"), m_processes->value());
  s.setValue(QStringLiteral("mode"), int(mode()));
  m_resume->saveSettings(s);
  m_finetune->saveSettings(s);
  s.endGroup();
}

void TrainPanel::restoreSettings() {
  QSettings s;
  s.beginGroup(QLatin1String(kSettingsGroup));
  m_newRun->restoreSettings(s);
  const int dev = m_device->findData(s.value(QStringLiteral("device"), QStringLiteral("auto")));
  if (dev >= 0) m_device->setCurrentIndex(dev);
  m_threads->setValue(s.value(QStringLiteral("threads"), 0).toInt());
  m_processesChosen = s.contains(QStringLiteral("processes"));
  m_processes->setValue(s.value(QStringLiteral("processes"), 1).toInt());
  m_modes->setCurrentIndex(qBound(0, s.value(QStringLiteral("mode"), 0).toInt(), 2));
  m_resume->restoreSettings(s);
  m_finetune->restoreSettings(s);
  s.endGroup();
}

}  // namespace ckpt
