#include "training/trainpanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <climits>
#include <cmath>
#include <functional>

#include "ckpt/format/pickle_safety.h"
#include "ckpt/index/run_plan.h"
#include "training/configform.h"
#include "training/livecurves.h"
#include "training/trainbackendloader.h"

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

QString defaultOutputDir(const QString& runName) {
  return QDir(QDir::homePath())
      .filePath(QStringLiteral("ckptscope-runs/") +
                (runName.isEmpty() ? QStringLiteral("run") : runName));
}

// Why training must not start from `checkpoint`: its pickles name globals
// that would run code if Python loaded them (the same scan as
// `ckptscope-cli scan`); "" when they do not.
QString dangerReason(const QString& checkpoint) {
  const SafetyReport report = scanFile(checkpoint.toStdString());
  if (report.verdict != Verdict::Dangerous) return {};
  return QStringLiteral("checkpoint: refused, %1 would run code if Python loaded it (%2)")
      .arg(QFileInfo(checkpoint).fileName(), QString::fromStdString(report.summary()));
}

// A page that scrolls down, never sideways, when the panel is short.
QScrollArea* scrollingDown(QWidget* page) {
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setWidget(page);
  return scroll;
}

// A line edit with a "…" button that opens a file (or directory) dialog.
QWidget* pathRow(QWidget* parent, QLineEdit* edit, const std::function<void()>& browseFile,
                 const std::function<void()>& browseDir = {}) {
  auto* row = new QWidget(parent);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  h->addWidget(edit, 1);
  if (browseFile) {
    auto* b = new QToolButton(row);
    b->setText(browseDir ? QStringLiteral("File…") : QStringLiteral("…"));
    QObject::connect(b, &QToolButton::clicked, row, browseFile);
    h->addWidget(b);
  }
  if (browseDir) {
    auto* b = new QToolButton(row);
    b->setText(QStringLiteral("Folder…"));
    QObject::connect(b, &QToolButton::clicked, row, browseDir);
    h->addWidget(b);
  }
  return row;
}

const QString kCheckpointFilter = QStringLiteral("Checkpoints (*.pt *.pth *.bin);;All files (*)");

// What a "…" button beside `edit` does: a file (or directory) dialog that
// opens where the edit points; a chosen path replaces the edit's text.
enum class Pick { File, Directory };
std::function<void()> chooser(QWidget* parent, QLineEdit* edit, const QString& title, Pick pick,
                              const QString& filter = {}) {
  return [=] {
    const QString p = pick == Pick::File
                          ? QFileDialog::getOpenFileName(parent, title, edit->text(), filter)
                          : QFileDialog::getExistingDirectory(parent, title, edit->text());
    if (!p.isEmpty()) edit->setText(p);
  };
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
  m_modes->addTab(buildNewRunPage(), tr("New run"));
  m_modes->addTab(scrollingDown(buildResumePage()), tr("Resume"));
  m_modes->addTab(scrollingDown(buildFinetunePage()), tr("Fine-tune"));
  left->addWidget(m_modes, 1);

  auto* deviceRow = new QHBoxLayout;
  deviceRow->addWidget(new QLabel(QStringLiteral("Device"), m_formArea));
  m_device = new QComboBox(m_formArea);
  m_device->setObjectName(QStringLiteral("device"));
  m_device->addItem(QStringLiteral("auto (checking for CUDA…)"), QStringLiteral("auto"));
  m_device->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
  m_device->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));
  // Its longest item ("auto: CUDA (8 GPUs)") need not set the row's
  // minimum: beside the threads and processes boxes it made a 1000x700
  // window's Train tab a pixel too wide.
  m_device->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_device->setMinimumContentsLength(6);
  deviceRow->addWidget(m_device, 1);
  deviceRow->addWidget(new QLabel(QStringLiteral("CPU threads"), m_formArea));
  m_threads = new QSpinBox(m_formArea);
  m_threads->setRange(0, 256);
  m_threads->setSpecialValueText(QStringLiteral("default"));
  m_threads->setToolTip(
      QStringLiteral("LibTorch's intra-op threads for the CPU; default: one per core"));
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
  m_start = new QPushButton(QStringLiteral("Start"), m_formArea);
  m_start->setDefault(true);
  m_stop = new QPushButton(QStringLiteral("Stop"), m_formArea);
  m_stop->setEnabled(false);
  m_stop->setToolTip(
      QStringLiteral("Finish the step in flight, write a resumable checkpoint, stop"));
  buttons->addStretch(1);
  buttons->addWidget(m_start);
  buttons->addWidget(m_stop);
  left->addLayout(buttons);

  m_split->addWidget(m_formArea);
  m_split->addWidget(buildRunView());
  m_form->setColumns(1);
  m_split->setStretchFactor(0, 0);
  m_split->setStretchFactor(1, 1);

  connect(m_split, &QSplitter::splitterMoved, this, [this] { m_splitMovedByHand = true; });
  connect(m_start, &QPushButton::clicked, this, &TrainPanel::start);
  connect(m_stop, &QPushButton::clicked, this, &TrainPanel::stop);
  connect(m_modes, &QTabWidget::currentChanged, this, &TrainPanel::revalidate);
  connect(m_device, &QComboBox::currentIndexChanged, this, &TrainPanel::revalidate);
  connect(m_processes, &QSpinBox::valueChanged, this, &TrainPanel::revalidate);
  connect(m_form, &ConfigForm::edited, this, &TrainPanel::revalidate);
  for (QLineEdit* e : {m_dataPath, m_outputDir, m_resumeCkpt, m_resumeData, m_ftCkpt, m_ftData,
                       m_ftTokenizer, m_ftStage, m_ftLr, m_ftOut})
    connect(e, &QLineEdit::textChanged, this, &TrainPanel::revalidate);
  connect(m_tokenizer, &QComboBox::currentTextChanged, this, &TrainPanel::revalidate);

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

QWidget* TrainPanel::buildNewRunPage() {
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* page = new QWidget;
  auto* v = new QVBoxLayout(page);
  v->setContentsMargins(4, 4, 4, 4);
  m_form = new ConfigForm(page);
  // The fields, their defaults and tooltips come from the config's tables.
  m_form->addGroup(QStringLiteral("Model (ModernLLMConfig)"),
                   ConfigForm::fieldsOf(modelConfigSection()));
  m_form->addGroup(QStringLiteral("Training"), ConfigForm::fieldsOf(trainingConfigSection()));
  v->addWidget(m_form);

  auto* dataBox = new QWidget(page);
  auto* f = new QFormLayout(dataBox);
  f->setContentsMargins(0, 0, 0, 0);
  m_dataPath = new QLineEdit(dataBox);
  m_dataPath->setObjectName(QStringLiteral("path"));
  m_dataPath->setPlaceholderText(
      QStringLiteral("text file, directory of text files, or .bin tokens"));
  f->addRow(QStringLiteral("data"),
            pathRow(dataBox, m_dataPath,
                    chooser(this, m_dataPath, QStringLiteral("Training data"), Pick::File),
                    chooser(this, m_dataPath, QStringLiteral("Training data"), Pick::Directory)));
  m_tokenizer = new QComboBox(dataBox);
  m_tokenizer->setObjectName(QStringLiteral("tokenizer"));
  m_tokenizer->setEditable(true);
  // A long tokenizer path typed in must not widen the form past a small window.
  m_tokenizer->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_tokenizer->setMinimumContentsLength(6);
  m_tokenizer->addItem(QStringLiteral("bytes"));
  m_tokenizer->setToolTip(QStringLiteral(
      "bytes; a Hugging Face tokenizer.json; or a directory with GPT-2's vocab.json + merges.txt"));
  // The editable combo and choosers for a tokenizer.json or a vocabulary directory.
  {
    auto* row = new QWidget(dataBox);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->setSpacing(4);
    h->addWidget(m_tokenizer, 1);
    auto* file = new QToolButton(row);
    file->setText(QStringLiteral("File…"));
    connect(file, &QToolButton::clicked, this, [this] {
      const QString p =
          QFileDialog::getOpenFileName(this, QStringLiteral("tokenizer.json"), QString(),
                                       QStringLiteral("Tokenizer (*.json);;All files (*)"));
      if (!p.isEmpty()) m_tokenizer->setCurrentText(p);
    });
    auto* dir = new QToolButton(row);
    dir->setText(QStringLiteral("Folder…"));
    connect(dir, &QToolButton::clicked, this, [this] {
      const QString p =
          QFileDialog::getExistingDirectory(this, QStringLiteral("GPT-2 vocabulary directory"));
      if (!p.isEmpty()) m_tokenizer->setCurrentText(p);
    });
    h->addWidget(file);
    h->addWidget(dir);
    f->addRow(QStringLiteral("tokenizer"), row);
  }
  m_outputDir = new QLineEdit(dataBox);
  m_outputDir->setObjectName(QStringLiteral("output_dir"));
  f->addRow(
      QStringLiteral("output_dir"),
      pathRow(dataBox, m_outputDir,
              chooser(this, m_outputDir, QStringLiteral("Output directory"), Pick::Directory)));
  connect(m_form, &ConfigForm::edited, this, [this] {
    m_outputDir->setPlaceholderText(
        defaultOutputDir(m_form->value(QStringLiteral("run_name")).toString().trimmed()));
  });
  m_form->addGroup(QStringLiteral("Data and output"), ConfigForm::fieldsOf(dataConfigSection()), 2,
                   dataBox);
  v->addStretch(1);
  scroll->setWidget(page);
  // It scrolls down, never sideways: the panel gives the form one column
  // when two do not fit (fitLayout).
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_formScroll = scroll;
  m_outputDir->setPlaceholderText(defaultOutputDir(QStringLiteral("run")));
  return scroll;
}

QWidget* TrainPanel::buildResumePage() {
  auto* page = new QWidget;
  auto* f = new QFormLayout(page);
  auto* intro = new QLabel(
      tr("Continues the run that wrote the checkpoint from its step: the same optimizer state, "
         "schedule, data position and random state, so the result is what an uninterrupted run "
         "gives. From the run's newest checkpoint it continues in the run's directory; from an "
         "older one it continues as a new run next to it, and the run's later checkpoints stay "
         "as they are."),
      page);
  intro->setWordWrap(true);
  f->addRow(intro);
  m_resumeCkpt = new QLineEdit(page);
  m_resumeCkpt->setObjectName(QStringLiteral("checkpoint"));
  f->addRow(QStringLiteral("checkpoint"),
            pathRow(page, m_resumeCkpt,
                    chooser(this, m_resumeCkpt, QStringLiteral("Checkpoint"), Pick::File,
                            kCheckpointFilter)));
  m_resumeMaxSteps = new QSpinBox(page);
  m_resumeMaxSteps->setRange(0, 1'000'000'000);
  m_resumeMaxSteps->setSpecialValueText(QStringLiteral("as recorded"));
  f->addRow(QStringLiteral("max_steps"), m_resumeMaxSteps);
  m_resumeData = new QLineEdit(page);
  m_resumeData->setPlaceholderText(QStringLiteral("the data the run recorded"));
  f->addRow(QStringLiteral("data"),
            pathRow(page, m_resumeData,
                    chooser(this, m_resumeData, QStringLiteral("Training data"), Pick::File)));
  m_resumeInPlace = new QCheckBox(tr("in place (later checkpoints to .trash/)"), page);
  m_resumeInPlace->setObjectName(QStringLiteral("in_place"));
  m_resumeInPlace->setEnabled(false);
  f->addRow(QString(), m_resumeInPlace);
  m_resumePlan = new QLabel(page);
  m_resumePlan->setObjectName(QStringLiteral("plan"));
  m_resumePlan->setWordWrap(true);
  m_resumePlan->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = m_resumePlan->font();
  bold.setBold(true);
  m_resumePlan->setFont(bold);
  // First on the page: what Start will do is seen without scrolling, at any height.
  f->insertRow(0, m_resumePlan);
  connect(m_resumeCkpt, &QLineEdit::textChanged, this, &TrainPanel::updateResumePlan);
  connect(m_resumeInPlace, &QCheckBox::toggled, this, &TrainPanel::updateResumePlan);
  return page;
}

QWidget* TrainPanel::buildFinetunePage() {
  auto* page = new QWidget;
  auto* f = new QFormLayout(page);
  auto* intro = new QLabel(
      QStringLiteral(
          "Starts a new stage from the checkpoint's weights: a fresh optimizer, a cosine "
          "schedule without warmup, step 0, its own directory. The checkpoint is "
          "recorded as the parent of every checkpoint the stage writes."),
      page);
  intro->setWordWrap(true);
  f->addRow(intro);
  m_ftCkpt = new QLineEdit(page);
  m_ftCkpt->setObjectName(QStringLiteral("checkpoint"));
  f->addRow(QStringLiteral("checkpoint"),
            pathRow(page, m_ftCkpt,
                    chooser(this, m_ftCkpt, QStringLiteral("Checkpoint"), Pick::File,
                            kCheckpointFilter)));
  m_ftData = new QLineEdit(page);
  m_ftData->setObjectName(QStringLiteral("path"));
  m_ftData->setPlaceholderText(QStringLiteral("fine-tuning text or .bin tokens"));
  f->addRow(QStringLiteral("data"),
            pathRow(page, m_ftData,
                    chooser(this, m_ftData, QStringLiteral("Fine-tuning data"), Pick::File),
                    chooser(this, m_ftData, QStringLiteral("Fine-tuning data"), Pick::Directory)));
  m_ftTokenizer = new QLineEdit(page);
  m_ftTokenizer->setPlaceholderText(QStringLiteral("the checkpoint's"));
  f->addRow(QStringLiteral("tokenizer"), m_ftTokenizer);
  m_ftStage = new QLineEdit(QStringLiteral("sft"), page);
  m_ftStage->setObjectName(QStringLiteral("stage"));
  f->addRow(QStringLiteral("stage"), m_ftStage);
  m_ftLr = new QLineEdit(QStringLiteral("1e-05"), page);
  m_ftLr->setObjectName(QStringLiteral("learning_rate"));
  m_ftLr->setToolTip(QStringLiteral("The reference library's SFT rate is 1e-5"));
  f->addRow(QStringLiteral("learning_rate"), m_ftLr);
  m_ftMaxSteps = new QSpinBox(page);
  m_ftMaxSteps->setRange(0, 1'000'000'000);
  m_ftMaxSteps->setSpecialValueText(QStringLiteral("the parent's"));
  f->addRow(QStringLiteral("max_steps"), m_ftMaxSteps);
  m_ftOut = new QLineEdit(page);
  m_ftOut->setObjectName(QStringLiteral("output_dir"));
  m_ftOut->setPlaceholderText(QStringLiteral("<directory above the checkpoint's>/<run>-<stage>"));
  f->addRow(QStringLiteral("output_dir"),
            pathRow(page, m_ftOut,
                    chooser(this, m_ftOut, QStringLiteral("Output directory"), Pick::Directory)));
  return page;
}

QWidget* TrainPanel::buildRunView() {
  auto* view = new QWidget;
  auto* v = new QVBoxLayout(view);
  v->setContentsMargins(4, 0, 0, 0);
  m_runTitle = new QLabel(QStringLiteral("No run yet"), view);
  QFont bold = m_runTitle->font();
  bold.setBold(true);
  m_runTitle->setFont(bold);
  m_runTitle->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_runTitle->setWordWrap(true);
  v->addWidget(m_runTitle);
  m_progress = new QProgressBar(view);
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(QStringLiteral("step %v of %m"));
  m_progress->setTextVisible(false);  // until a run says what its steps are
  v->addWidget(m_progress);

  auto* grid = new QGridLayout;
  grid->setHorizontalSpacing(16);
  auto cell = [&](int row, int col, const QString& name) {
    grid->addWidget(new QLabel(name, view), row, col * 2);
    auto* value = new QLabel(QStringLiteral("–"), view);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setMinimumWidth(90);
    grid->addWidget(value, row, col * 2 + 1);
    return value;
  };
  m_stepLabel = cell(0, 0, QStringLiteral("step"));
  m_lossLabel = cell(0, 1, QStringLiteral("loss"));
  m_lrLabel = cell(0, 2, QStringLiteral("lr"));
  m_speedLabel = cell(1, 0, QStringLiteral("tokens/s"));
  m_etaLabel = cell(1, 1, QStringLiteral("ETA"));
  m_deviceLabel = cell(1, 2, QStringLiteral("device"));
  m_deviceLabel->setObjectName(QStringLiteral("rankDevices"));
  grid->setColumnStretch(5, 1);
  v->addLayout(grid);

  m_status = new QLabel(view);
  m_status->setObjectName(QStringLiteral("status"));
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(m_status);

  auto* split = new QSplitter(Qt::Vertical, view);
  m_curves = new LiveCurves(split);
  m_log = new QPlainTextEdit(split);
  m_log->setReadOnly(true);
  m_log->setMaximumBlockCount(20000);
  m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_log->setPlaceholderText(QStringLiteral("The run's log appears here."));
  m_log->setMinimumHeight(m_log->fontMetrics().height() * 3);
  split->addWidget(m_curves);
  split->addWidget(m_log);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
  // Before the first run there is nothing to chart: the form has the room
  // (a 700-pixel window left the chart 34 pixels high), and the chart and
  // log appear when a run starts (the log alone when something is said).
  m_runCharts = split;
  m_runCharts->hide();
  m_curves->hide();
  v->addStretch(0);
  return view;
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
  if (m_twoColumnWidth == 0) {
    m_oneColumnWidth = m_form->minimumWidthFor(1);
    m_twoColumnWidth = m_form->minimumWidthFor(2);
  }
  const int scrollBar =
      m_formScroll->verticalScrollBar()->sizeHint().width() + 10;  // + the page's 2 x 4 px margins
  const int twoColumns = m_twoColumnWidth + scrollBar;
  constexpr int kRunViewWidth = 460;
  const int available = width() - 8;
  const bool beside = available >= twoColumns + kRunViewWidth;
  const Qt::Orientation orientation = beside ? Qt::Horizontal : Qt::Vertical;
  m_form->setColumns(beside || available >= twoColumns ? 2 : 1);
  // Never more than one column's width as the minimum: a panel held wide by
  // its two columns could not be made narrower, and so never reflow.
  m_formScroll->setMinimumWidth(m_oneColumnWidth + scrollBar);
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
  m_backendWatcher.setFuture(QtConcurrent::run([] { (void)trainBackend(); }));
}

QString TrainPanel::deviceSummary() const {
  const TrainBackendLoad& b = trainBackend();
  if (!b.backend) return QStringLiteral("Training is not available: ") + b.error;
  const TrainDevices d = b.backend->devices();
  QString s = QStringLiteral("LibTorch %1 · CPU: %2 thread%3 · ")
                  .arg(QString::fromStdString(d.torchVersion))
                  .arg(d.cpuThreads)
                  .arg(d.cpuThreads == 1 ? "" : "s");
  s += d.cudaAvailable ? QStringLiteral("CUDA available (%1 GPU%2)")
                             .arg(d.cudaDeviceCount)
                             .arg(d.cudaDeviceCount == 1 ? "" : "s")
                       : QStringLiteral("CUDA not available");
  return s;
}

void TrainPanel::onBackendLoaded() {
  m_backendReady = true;
  const TrainBackendLoad& b = trainBackend();
  auto* model = qobject_cast<QStandardItemModel*>(m_device->model());
  if (b.backend) {
    m_devices = b.backend->devices();
    const TrainDevices& d = *m_devices;
    m_device->setItemText(0, d.cudaAvailable ? QStringLiteral("auto: CUDA (%1 GPU%2)")
                                                   .arg(d.cudaDeviceCount)
                                                   .arg(d.cudaDeviceCount == 1 ? "" : "s")
                                             : QStringLiteral("auto: CPU (CUDA not available)"));
    m_device->setItemText(
        2, d.cudaAvailable ? QStringLiteral("cuda") : QStringLiteral("cuda (not available)"));
    if (model) model->item(2)->setEnabled(d.cudaAvailable);
    if (!d.cudaAvailable && m_device->currentIndex() == 2) m_device->setCurrentIndex(0);
    m_deviceNote->setText(deviceSummary());
    describeProcesses(d);
  } else {
    m_device->setItemText(0, QStringLiteral("auto"));
    m_deviceNote->setText(QString());
    m_runTitle->setText(QStringLiteral("Training is not available"));
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

RunConfig TrainPanel::newRunConfig() const {
  json training = m_form->sectionJson(QStringLiteral("training"));
  QString out = m_outputDir->text().trimmed();
  if (out.isEmpty())
    out = defaultOutputDir(QString::fromStdString(training.value("run_name", std::string())));
  training["output_dir"] = QDir::cleanPath(out).toStdString();
  training["device"] = deviceChoice().toStdString();
  json data = m_form->sectionJson(QStringLiteral("data"));
  data["path"] = m_dataPath->text().trimmed().toStdString();
  data["tokenizer"] = m_tokenizer->currentText().trimmed().toStdString();
  const json model = m_form->sectionJson(QStringLiteral("model"));
  RunConfig c = RunConfig::fromJson(json{{"model", model}, {"training", training}, {"data", data}});
  c.model.validate();
  if (c.model.useMoe)
    throw ConfigError(
        "use_moe: MoE layers cannot be trained (the reference library cannot run them)",
        {"use_moe"});
  if (c.training.seqLen > c.model.maxSeqLen)
    throw ConfigError("seq_len (" + std::to_string(c.training.seqLen) +
                          ") must not exceed max_seq_len (" + std::to_string(c.model.maxSeqLen) +
                          ")",
                      {"seq_len", "max_seq_len"});
  if (c.data.tokenizer == "bytes" && c.model.vocabSize < 256)
    throw ConfigError("vocab_size (" + std::to_string(c.model.vocabSize) +
                          ") must be at least 256 for the bytes tokenizer",
                      {"vocab_size", "tokenizer"});
  if (c.data.tokenizer.empty())
    throw ConfigError("tokenizer: choose bytes, a tokenizer.json or a GPT-2 vocabulary directory",
                      {"tokenizer"});
  if (c.data.path.empty())
    throw ConfigError("path: choose the training data (a text file, a directory or a .bin file)",
                      {"path"});
  if (!QFileInfo::exists(QString::fromStdString(c.data.path)))
    throw ConfigError("path: " + c.data.path + " does not exist", {"path"});
  // Said before Start, as the trainer would refuse it: never a second history in one directory.
  if (const auto clash = existingRunFiles(c.training.outputDir, c.training.runName); !clash.empty())
    throw ConfigError(
        "output_dir: " + clashMessage(c.training.outputDir, c.training.runName, clash),
        {"output_dir"});
  return c;
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
        QStringLiteral(
            "device: CUDA is not available (this LibTorch has no CUDA, or no GPU is visible)"),
        {});
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
    switch (mode()) {
      case Mode::NewRun:
        r.kind = TrainRequest::Kind::NewRun;
        r.config = newRunConfig();
        // An impossible split of the batch over the processes, named before Start.
        if (r.processes > 1) {
          RunConfig split = r.config;
          split.training.adaptToWorld(r.processes);
        }
        break;
      case Mode::Resume: {
        r.kind = TrainRequest::Kind::Resume;
        const QString ckpt = m_resumeCkpt->text().trimmed();
        if (ckpt.isEmpty())
          return fail(QStringLiteral("checkpoint: choose the checkpoint to resume"),
                      {QStringLiteral("checkpoint")});
        if (!QFileInfo(ckpt).isFile())
          return fail(QStringLiteral("checkpoint: %1 does not exist").arg(ckpt),
                      {QStringLiteral("checkpoint")});
        if (const QString danger = dangerReason(ckpt); !danger.isEmpty())
          return fail(danger, {QStringLiteral("checkpoint")});
        r.resume.checkpoint = ckpt.toStdString();
        if (m_resumeMaxSteps->value() > 0) r.resume.maxSteps = m_resumeMaxSteps->value();
        r.resume.dataPath = m_resumeData->text().trimmed().toStdString();
        if (!r.resume.dataPath.empty() && !QFileInfo::exists(m_resumeData->text().trimmed()))
          return fail(QStringLiteral("data: %1 does not exist").arg(m_resumeData->text().trimmed()),
                      {});
        r.resume.device = device;
        r.resume.inPlace = m_resumeInPlace->isEnabled() && m_resumeInPlace->isChecked();
        break;
      }
      case Mode::Finetune: {
        r.kind = TrainRequest::Kind::Finetune;
        const QString ckpt = m_ftCkpt->text().trimmed();
        if (ckpt.isEmpty())
          return fail(QStringLiteral("checkpoint: choose the checkpoint to fine-tune"),
                      {QStringLiteral("checkpoint")});
        if (!QFileInfo(ckpt).isFile())
          return fail(QStringLiteral("checkpoint: %1 does not exist").arg(ckpt),
                      {QStringLiteral("checkpoint")});
        if (const QString danger = dangerReason(ckpt); !danger.isEmpty())
          return fail(danger, {QStringLiteral("checkpoint")});
        const QString data = m_ftData->text().trimmed();
        if (data.isEmpty())
          return fail(QStringLiteral("data: choose the fine-tuning data"),
                      {QStringLiteral("path")});
        if (!QFileInfo::exists(data))
          return fail(QStringLiteral("data: %1 does not exist").arg(data),
                      {QStringLiteral("path")});
        const QString stage = m_ftStage->text().trimmed();
        if (stage.isEmpty() || stage.contains(QLatin1Char('/')))
          return fail(QStringLiteral("stage: a name without '/' (sft, dpo, ...)"),
                      {QStringLiteral("stage")});
        bool ok = false;
        const double lr = QLocale::c().toDouble(m_ftLr->text().trimmed(), &ok);
        if (!ok || !(lr > 0))
          return fail(
              QStringLiteral("learning_rate: expected a number > 0, got '%1'").arg(m_ftLr->text()),
              {QStringLiteral("learning_rate")});
        r.checkpoint = ckpt.toStdString();
        r.finetune.dataPath = data.toStdString();
        r.finetune.tokenizer = m_ftTokenizer->text().trimmed().toStdString();
        r.finetune.outputDir = m_ftOut->text().trimmed().isEmpty()
                                   ? std::string()
                                   : QDir::cleanPath(m_ftOut->text().trimmed()).toStdString();
        r.finetune.stage = stage.toStdString();
        r.finetune.learningRate = lr;
        r.finetune.maxSteps = m_ftMaxSteps->value();
        r.finetune.device = device;
        break;
      }
    }
  } catch (const ConfigError& e) {
    QStringList fields;  // the form frames the fields the error names
    for (const std::string& f : e.fields()) fields << QString::fromStdString(f);
    return fail(QString::fromStdString(e.what()), fields);
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()), {});
  }
  return r;
}

QString TrainPanel::resumePlanText() const {
  return m_resumePlan->text();
}

void TrainPanel::updateResumePlan() {
  const QString ckpt = m_resumeCkpt->text().trimmed();
  if (ckpt.isEmpty() || !QFileInfo(ckpt).isFile()) {
    m_resumePlan->clear();
    m_resumeInPlace->setEnabled(false);
    return;
  }
  // The trainer decides with the same function (ckpt/index/run_plan.h).
  try {
    const ResumePlan plan = planResume(ckpt.toStdString());
    const QString run = QString::fromStdString(plan.runName);
    const QString dir = QString::fromStdString(plan.runDir);
    m_resumeInPlace->setEnabled(!plan.isNewest);
    if (plan.isNewest) {
      m_resumeInPlace->setChecked(false);
      m_resumePlan->setText(
          tr("This is the newest checkpoint of %1: the run continues in %2 from step %3, "
             "adding its checkpoints and metrics.jsonl lines from there.")
              .arg(run, dir)
              .arg(plan.step));
    } else if (m_resumeInPlace->isChecked()) {
      QStringList names;
      for (const std::string& f : plan.laterFiles)
        names << QFileInfo(QString::fromStdString(f)).fileName();
      m_resumePlan->setText(
          tr("In place: %1 later file(s) of %2 move to %3/.trash/ (%4), metrics.jsonl is cut "
             "back to step %5, and the run continues in its directory. Start asks first.")
              .arg(names.size())
              .arg(run, dir, names.join(QStringLiteral(", ")))
              .arg(plan.step));
    } else {
      m_resumePlan->setText(
          tr("This is not the newest checkpoint of %1 (%2 later file(s)): the run continues as a "
             "new run %3 in %4, its history up to step %5 taken from %1. Nothing in %6 changes.")
              .arg(run)
              .arg(plan.laterFiles.size())
              .arg(QString::fromStdString(plan.branchRunName),
                   QString::fromStdString(plan.branchDir))
              .arg(plan.step)
              .arg(dir));
    }
  } catch (const std::exception& e) {
    m_resumeInPlace->setEnabled(false);
    m_resumePlan->setText(tr("Cannot plan the resume: %1").arg(QString::fromStdString(e.what())));
  }
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
  QString error;
  QStringList keys;
  const bool ok = request(&error, &keys).has_value();
  m_validationError = ok ? QString() : error;
  m_error->setText(m_validationError);
  if (mode() == Mode::NewRun)
    m_form->markInvalid(ok ? QStringList() : keys, error);
  else
    m_form->markInvalid({}, {});
  const QWidget* page = m_modes->currentWidget();
  for (QLineEdit* e : page->findChildren<QLineEdit*>()) {
    if (e->objectName().isEmpty() || m_form->editor(e->objectName()) == e)
      continue;  // the form marks its own
    const bool bad = !ok && keys.contains(e->objectName());
    e->setStyleSheet(bad ? QStringLiteral("border: 1px solid #d03030;") : QString());
  }
  const bool backendMissing = m_backendReady && !trainBackend().backend;
  m_start->setEnabled(ok && !isRunning() && !backendMissing);
}

bool TrainPanel::start() {
  if (isRunning()) {
    showStatus(QStringLiteral("A run is going: stop it first."), true);
    return false;
  }
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
  m_lastCheckpoint.clear();
  m_rankDevices.clear();
  m_curves->clear();
  m_log->clear();
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  for (QLabel* l : {m_stepLabel, m_lossLabel, m_lrLabel, m_speedLabel, m_etaLabel, m_deviceLabel})
    l->setText(QStringLiteral("–"));
  const char* what[] = {"new run", "resume", "fine-tune"};
  m_runTitle->setText(QStringLiteral("Preparing the %1…").arg(QLatin1String(what[int(r->kind)])));
  showStatus(QString(), false);
  appendLog(QStringLiteral("preparing the %1 (loading the data and the model)")
                .arg(QLatin1String(what[int(r->kind)])));
  m_runner.start(*r);
  setRunning(true);
  return true;
}

bool TrainPanel::startResume(const QString& checkpoint) {
  m_resumeCkpt->setText(checkpoint);
  m_resumeMaxSteps->setValue(0);
  m_resumeData->clear();
  setMode(Mode::Resume);
  return start();
}

void TrainPanel::prepareResume(const QString& checkpoint) {
  m_resumeCkpt->setText(checkpoint);
  m_resumeMaxSteps->setValue(0);
  m_resumeData->clear();
  setMode(Mode::Resume);
  revalidate();
}

void TrainPanel::setSelectedCheckpoint(const QString& checkpoint) {
  if (isRunning() || checkpoint.isEmpty()) return;
  m_resumeCkpt->setText(checkpoint);
  m_ftCkpt->setText(checkpoint);
}

void TrainPanel::prepareFinetune(const QString& checkpoint) {
  m_ftCkpt->setText(checkpoint);
  if (m_ftData->text().trimmed().isEmpty()) m_ftData->setText(m_dataPath->text().trimmed());
  setMode(Mode::Finetune);
  revalidate();
}

bool TrainPanel::startFinetune(const QString& checkpoint) {
  prepareFinetune(checkpoint);
  if (m_ftData->text().trimmed().isEmpty()) {
    m_ftData->setFocus();
    showStatus(QStringLiteral("Choose the fine-tuning data, then Start."), false);
    return false;
  }
  return start();
}

void TrainPanel::stop() {
  if (!isRunning()) return;
  m_runner.stop();
  m_stop->setEnabled(false);
  m_stop->setText(QStringLiteral("Stopping…"));
  showStatus(QStringLiteral("Stopping after the step in flight (step %1 was the last reported): "
                            "writing a resumable checkpoint…")
                 .arg(m_lastStep),
             false);
  appendLog(QStringLiteral("stop requested: finishing the step in flight"));
}

void TrainPanel::setRunning(bool running) {
  m_modes->setEnabled(!running);
  m_device->setEnabled(!running);
  m_threads->setEnabled(!running);
  m_processes->setEnabled(!running);
  m_stop->setEnabled(running);
  m_stop->setText(QStringLiteral("Stop"));
  if (running)
    m_start->setEnabled(false);
  else
    revalidate();
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
    const json c = json::parse(info.configJson);
    m_logEvery = std::max<int64_t>(1, c.at("training").value("log_every", int64_t(1)));
  } catch (const std::exception&) {
  }
  const QString out = QString::fromStdString(info.outputDir);
  m_runTitle->setText(
      QStringLiteral("%1 (%2) → %3")
          .arg(QString::fromStdString(info.runName), QString::fromStdString(info.stage), out));
  m_progress->setRange(0, int(std::min<int64_t>(info.maxSteps, INT_MAX)));
  m_progress->setTextVisible(true);
  m_progress->setValue(int(info.startStep));
  m_stepLabel->setText(QStringLiteral("%1 / %2").arg(info.startStep).arg(info.maxSteps));
  // A resumed run's curves start with its history, so that they read as one run.
  const int64_t before = info.startStep > 0 ? loadHistory(out, info.startStep) : 0;
  m_curves->setStepRange(before > 0 ? 0.0 : double(info.startStep), double(info.maxSteps));
  const QString where =
      info.worldSize > 1
          ? tr("%1 processes (%2)").arg(info.worldSize).arg(QString::fromStdString(info.backend))
          : QString::fromStdString(info.device);
  appendLog(QStringLiteral("run %1 on %2 from step %3 to %4, writing to %5")
                .arg(QString::fromStdString(info.runName), where)
                .arg(info.startStep)
                .arg(info.maxSteps)
                .arg(out));
  if (!info.notes.empty()) appendLog(QStringLiteral("note: ") + QString::fromStdString(info.notes));
  // Stacked, the form had most of the height while it was filled in; a
  // running job's status, chart and log get it now, unless the person
  // placed the divider themselves.
  m_runCharts->show();
  m_curves->show();
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
  m_deviceLabel->setWordWrap(m_rankDevices.size() > 1);
  m_deviceLabel->setText(deviceText());
}

int64_t TrainPanel::loadHistory(const QString& outputDir, int64_t upToStep) {
  QFile file(QDir(outputDir).filePath(QStringLiteral("metrics.jsonl")));
  if (!file.open(QIODevice::ReadOnly)) return 0;
  QList<StepReport> history;
  while (!file.atEnd()) {
    const QByteArray line = file.readLine().trimmed();
    if (line.isEmpty()) continue;
    try {
      const json j = json::parse(line.constData(), line.constData() + line.size());
      StepReport r;
      r.step = j.at("step").get<int64_t>();
      if (r.step > upToStep || (!history.isEmpty() && r.step <= history.back().step)) continue;
      r.loss = j.at("loss").get<double>();
      r.learningRate = j.value("lr", 0.0);
      if (j.contains("val_loss") && j["val_loss"].is_number())
        r.valLoss = j["val_loss"].get<double>();
      history.append(r);
    } catch (const std::exception&) {
      // A line cut short by a crash: the history is only for show.
    }
  }
  m_curves->append(history);
  return history.size();
}

void TrainPanel::onProgress(const QList<StepReport>& steps) {
  if (steps.isEmpty()) return;
  m_curves->append(steps);
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
      appendLog(from + QStringLiteral("saved %1").arg(m_lastCheckpoint));
      emit checkpointWritten(m_lastCheckpoint);
    }
  }
  const StepReport& r = steps.back();
  m_lastStep = r.step;
  m_progress->setValue(int(std::min<int64_t>(r.step, m_progress->maximum())));
  m_stepLabel->setText(QStringLiteral("%1 / %2").arg(r.step).arg(r.maxSteps));
  m_lossLabel->setText(
      r.valLoss ? QStringLiteral("%1 (val %2)").arg(r.loss, 0, 'f', 4).arg(*r.valLoss, 0, 'f', 4)
                : QString::number(r.loss, 'f', 4));
  m_lrLabel->setText(QString::number(r.learningRate, 'e', 2));
  m_speedLabel->setText(QLocale().toString(qRound64(r.tokensPerSecond)));
  // The pace of this job alone: a resumed run's recorded time includes
  // the steps of earlier jobs (17 min was shown for 94 steps taking 27 s).
  const int64_t done = r.step - m_info.startStep;
  const double seconds = m_wall.isValid() ? m_wall.elapsed() / 1000.0 : 0.0;
  if (done > 0 && seconds > 0)
    m_etaLabel->setText(duration(seconds / double(done) * double(r.maxSteps - r.step)));
}

void TrainPanel::onFinished(const RunResult& result) {
  setRunning(false);
  const bool stopped = result.outcome == RunOutcome::Stopped;
  const QString last = QString::fromStdString(result.lastCheckpoint);
  const QString out =
      QString::fromStdString(result.outputDir.empty() ? m_info.outputDir : result.outputDir);
  if (!last.isEmpty() && last != m_lastCheckpoint) emit checkpointWritten(last);
  m_progress->setValue(int(std::min<int64_t>(result.step, m_progress->maximum())));
  m_etaLabel->setText(stopped ? QStringLiteral("stopped") : QStringLiteral("done"));
  QString text;
  if (stopped) {
    text =
        QStringLiteral("Stopped at step %1. Resumable checkpoint: %2").arg(result.step).arg(last);
    // One click away: the Resume page holds the stop checkpoint.
    m_resumeCkpt->setText(last);
  } else {
    const int64_t ran = result.step - m_info.startStep;
    text = m_info.startStep > 0
               ? QStringLiteral(
                     "Finished at step %1: %2 steps from step %3 in %4. Final checkpoint: %5")
                     .arg(result.step)
                     .arg(ran)
                     .arg(m_info.startStep)
                     .arg(duration(m_wall.elapsed() / 1000.0), last)
               : QStringLiteral("Finished %1 steps in %2. Final checkpoint: %3")
                     .arg(result.step)
                     .arg(duration(m_wall.elapsed() / 1000.0), last);
    if (result.bestValLoss)
      text += QStringLiteral(" (best val loss %1)").arg(number(*result.bestValLoss));
  }
  showStatus(text, false);
  appendLog(text);
  emit runFinished(out, last, stopped);
}

void TrainPanel::onFailed(const QString& message) {
  setRunning(false);
  QString text = QStringLiteral("Training failed: ") + message;
  if (!m_lastCheckpoint.isEmpty())
    text += QStringLiteral("\nThe last checkpoint written is ") + m_lastCheckpoint;
  showStatus(text, true);
  appendLog(QStringLiteral("error: ") + message);
  m_runTitle->setText(m_info.runName.empty() ? QStringLiteral("Not started") : m_runTitle->text());
  emit runFailed(message);
}

void TrainPanel::appendLog(const QString& line) {
  m_runCharts->show();
  m_log->appendPlainText(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss ")) + line);
}

void TrainPanel::showStatus(const QString& text, bool error) {
  m_status->setText(text);
  m_status->setStyleSheet(error ? QStringLiteral("color: #c02020;") : QString());
}

QString TrainPanel::statusText() const {
  return m_status->text();
}
QString TrainPanel::logText() const {
  return m_log->toPlainText();
}

void TrainPanel::saveSettings() const {
  QSettings s;
  s.beginGroup(QLatin1String(kSettingsGroup));
  s.setValue(QStringLiteral("form"), m_form->values());
  s.setValue(QStringLiteral("data"), m_dataPath->text());
  s.setValue(QStringLiteral("tokenizer"), m_tokenizer->currentText());
  s.setValue(QStringLiteral("outputDir"), m_outputDir->text());
  s.setValue(QStringLiteral("device"), deviceChoice());
  s.setValue(QStringLiteral("threads"), m_threads->value());
  s.setValue(QStringLiteral("processes"), m_processes->value());
  s.setValue(QStringLiteral("mode"), int(mode()));
  s.setValue(QStringLiteral("resume/checkpoint"), m_resumeCkpt->text());
  s.setValue(QStringLiteral("finetune/data"), m_ftData->text());
  s.setValue(QStringLiteral("finetune/tokenizer"), m_ftTokenizer->text());
  s.setValue(QStringLiteral("finetune/stage"), m_ftStage->text());
  s.setValue(QStringLiteral("finetune/lr"), m_ftLr->text());
  s.setValue(QStringLiteral("finetune/maxSteps"), m_ftMaxSteps->value());
  s.endGroup();
}

void TrainPanel::restoreSettings() {
  QSettings s;
  s.beginGroup(QLatin1String(kSettingsGroup));
  m_form->setValues(s.value(QStringLiteral("form")).toMap());
  m_dataPath->setText(s.value(QStringLiteral("data")).toString());
  const QString tok = s.value(QStringLiteral("tokenizer"), QStringLiteral("bytes")).toString();
  m_tokenizer->setCurrentText(tok.isEmpty() ? QStringLiteral("bytes") : tok);
  m_outputDir->setText(s.value(QStringLiteral("outputDir")).toString());
  const int dev = m_device->findData(s.value(QStringLiteral("device"), QStringLiteral("auto")));
  if (dev >= 0) m_device->setCurrentIndex(dev);
  m_threads->setValue(s.value(QStringLiteral("threads"), 0).toInt());
  m_processesChosen = s.contains(QStringLiteral("processes"));
  m_processes->setValue(s.value(QStringLiteral("processes"), 1).toInt());
  m_modes->setCurrentIndex(qBound(0, s.value(QStringLiteral("mode"), 0).toInt(), 2));
  m_resumeCkpt->setText(s.value(QStringLiteral("resume/checkpoint")).toString());
  m_ftData->setText(s.value(QStringLiteral("finetune/data")).toString());
  m_ftTokenizer->setText(s.value(QStringLiteral("finetune/tokenizer")).toString());
  m_ftStage->setText(s.value(QStringLiteral("finetune/stage"), QStringLiteral("sft")).toString());
  m_ftLr->setText(s.value(QStringLiteral("finetune/lr"), QStringLiteral("1e-05")).toString());
  m_ftMaxSteps->setValue(s.value(QStringLiteral("finetune/maxSteps"), 0).toInt());
  s.endGroup();
}

}  // namespace ckpt
