#include "export/exportdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/checkpoint_view.h"
#include "textformat.h"

namespace ckpt {
namespace {

QString extensionFor(CopyFormat format) {
  return format == CopyFormat::Safetensors ? QStringLiteral(".safetensors") : QStringLiteral(".pt");
}

// "<dir>/<stem>_slim<ext>", or "_slim-2", "-3", ... while that name is taken.
QString freeName(const QString& source, const QString& ext) {
  const QFileInfo info(source);
  const QString base = info.absolutePath() + "/" + info.completeBaseName() + "_slim";
  QString name = base + ext;
  for (int n = 2; QFileInfo::exists(name); ++n) name = base + "-" + QString::number(n) + ext;
  return name;
}

}  // namespace

ExportDialog::ExportDialog(const QString& source, QWidget* parent)
    : QDialog(parent), m_source(source) {
  setWindowTitle(tr("Export %1").arg(QFileInfo(source).fileName()));
  try {
    m_file = CheckpointFile::open(pathToStd(source));
  } catch (const std::exception& e) {
    m_openError = fromStd(e.what());
  }

  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("A copy of %1 without its optimizer state, for inference or "
                              "sharing. It records where it came from; the original stays "
                              "as it is.")
                               .arg(QDir::toNativeSeparators(source)));
  intro->setWordWrap(true);
  layout->addWidget(intro);

  auto* form = new QFormLayout;
  m_format = new QComboBox;
  m_format->addItem(tr("PyTorch (.pt, modern_llm layout)"), int(CopyFormat::Torch));
  m_format->addItem(tr("safetensors (model weights, config in __metadata__)"),
                    int(CopyFormat::Safetensors));
  if (m_file && m_file->format() == FileFormat::Safetensors) m_format->setCurrentIndex(1);
  form->addRow(tr("&Format:"), m_format);
  m_dtype = new QComboBox;
  m_dtype->addItem(tr("as stored"), QString());
  m_dtype->addItem(tr("bfloat16 (bf16)"), QStringLiteral("bf16"));
  m_dtype->addItem(tr("float16 (fp16)"), QStringLiteral("fp16"));
  m_dtype->addItem(tr("float32 (fp32)"), QStringLiteral("fp32"));
  form->addRow(tr("Floating-point &type:"), m_dtype);
  m_modelOnly =
      new QCheckBox(tr("&Model weights only (also leave out RNG state and other tensors)"));
  form->addRow(QString(), m_modelOnly);
  auto* where = new QHBoxLayout;
  m_destination =
      new QLineEdit(freeName(source, extensionFor(CopyFormat(m_format->currentData().toInt()))));
  m_choose = new QPushButton(tr("&Choose..."));
  where->addWidget(m_destination, 1);
  where->addWidget(m_choose);
  form->addRow(tr("&Save as:"), where);
  layout->addLayout(form);

  m_estimate = new QLabel;
  m_estimate->setWordWrap(true);
  layout->addWidget(m_estimate);
  m_progress = new QProgressBar;
  m_progress->setRange(0, 1000);
  m_progress->setValue(0);
  m_progress->setVisible(false);
  layout->addWidget(m_progress);
  m_status = new QLabel;
  m_status->setWordWrap(true);
  layout->addWidget(m_status);
  layout->addStretch(1);

  auto* buttons = new QDialogButtonBox;
  m_export = buttons->addButton(tr("&Export"), QDialogButtonBox::AcceptRole);
  m_cancel = buttons->addButton(QDialogButtonBox::Cancel);
  m_export->setDefault(true);
  layout->addWidget(buttons);
  connect(m_export, &QPushButton::clicked, this, &ExportDialog::startExport);
  connect(m_cancel, &QPushButton::clicked, this, &ExportDialog::reject);
  connect(m_choose, &QPushButton::clicked, this, &ExportDialog::chooseDestination);
  connect(m_format, &QComboBox::currentIndexChanged, this, &ExportDialog::formatChanged);
  connect(m_dtype, &QComboBox::currentIndexChanged, this, &ExportDialog::updateState);
  connect(m_modelOnly, &QCheckBox::toggled, this, &ExportDialog::updateState);
  connect(m_destination, &QLineEdit::textChanged, this, &ExportDialog::updateState);
  resize(640, 320);
  updateState();
}

ExportDialog::~ExportDialog() = default;

QString ExportDialog::destination() const {
  return m_destination->text().trimmed();
}

CopyOptions ExportDialog::options() const {
  CopyOptions o;
  o.content = m_modelOnly->isChecked() ? CopyContent::ModelOnly : CopyContent::WithoutOptimizer;
  o.format = CopyFormat(m_format->currentData().toInt());
  o.dtype = parseCopyDtype(m_dtype->currentData().toString().toStdString());
  return o;
}

// The destination follows the format: its extension is swapped.
void ExportDialog::formatChanged() {
  const QString ext = extensionFor(CopyFormat(m_format->currentData().toInt()));
  const QString other = ext == ".pt" ? QStringLiteral(".safetensors") : QStringLiteral(".pt");
  QString d = destination();
  if (d.endsWith(other)) {
    d.chop(int(other.size()));
    const QFileInfo info(d + ext);
    m_destination->setText(QFileInfo::exists(info.filePath()) ? freeName(m_source, ext)
                                                              : info.filePath());
  }
  updateState();
}

void ExportDialog::chooseDestination() {
  const bool st = CopyFormat(m_format->currentData().toInt()) == CopyFormat::Safetensors;
  // Qt's own question would offer to replace the file: the check below
  // refuses an existing one instead.
  const QString chosen = QFileDialog::getSaveFileName(
      this, tr("Export To"), destination(),
      st ? tr("safetensors (*.safetensors)") : tr("PyTorch checkpoints (*.pt *.pth)"), nullptr,
      QFileDialog::DontConfirmOverwrite);
  if (!chosen.isEmpty()) m_destination->setText(chosen);
}

void ExportDialog::updateState() {
  if (m_job.isRunning()) return;
  QString problem;
  const QString d = destination();
  const QFileInfo target(d);
  if (!m_openError.isEmpty())
    problem = m_openError;
  else if (d.isEmpty())
    problem = tr("Choose where to save the copy.");
  else if (target.exists() || target.isSymLink())
    problem = tr("%1 exists: choose another name (a file is never overwritten).")
                  .arg(QDir::toNativeSeparators(d));
  else if (!QFileInfo(target.absolutePath()).isDir())
    problem =
        tr("The folder %1 does not exist.").arg(QDir::toNativeSeparators(target.absolutePath()));
  m_estimate->clear();
  if (m_file) {
    try {
      const CopyEstimate e = estimateCopy(*m_file, options());
      const QFileInfo src(m_source);
      m_estimate->setText(tr("%1 tensors, %2 of tensor data (the checkpoint: %3 on disk).")
                              .arg(e.tensors)
                              .arg(sizeText(e.bytes))
                              .arg(sizeText(uint64_t(src.size()))));
    } catch (const std::exception& e) {
      if (problem.isEmpty()) problem = fromStd(e.what());
    }
  }
  m_status->setText(problem);
  m_export->setEnabled(problem.isEmpty());
}

void ExportDialog::setRunning(bool running) {
  for (QWidget* w :
       std::initializer_list<QWidget*>{m_format, m_dtype, m_modelOnly, m_destination, m_choose})
    w->setEnabled(!running);
  m_export->setEnabled(!running);
  m_progress->setVisible(running || m_progress->value() > 0);
}

void ExportDialog::startExport() {
  updateState();
  if (!m_export->isEnabled()) return;
  const std::string source = pathToStd(m_source);
  const std::string target = pathToStd(destination());
  CopyOptions copy = options();
  m_progress->setValue(0);
  m_status->setText(tr("Writing %1...").arg(QDir::toNativeSeparators(destination())));
  setRunning(true);
  m_job.start(
      [source, target, copy](JobProgress& progress) mutable {
        copy.progress = [&progress](size_t done, size_t total) {
          return progress.report(done, total);
        };
        const auto file = CheckpointFile::open(source);
        CopyResult r = copyCheckpoint(*file, target, copy);
        if (!r.cancelled) progress.report(r.tensors, r.tensors);
        return r;
      },
      [this](JobOutcome outcome, std::optional<CopyResult> result, const QString& error) {
        setRunning(false);
        if (outcome == JobOutcome::Done && result && !result->cancelled) {
          m_result = result;
          m_progress->setValue(m_progress->maximum());
          accept();
          return;
        }
        m_progress->setValue(0);
        m_progress->setVisible(false);
        updateState();
        m_status->setText(outcome == JobOutcome::Failed ? tr("Export failed: %1").arg(error)
                                                        : tr("Cancelled: nothing was written."));
      },
      [this](const JobProgress& p) {
        m_progress->setValue(int(p.fraction() * m_progress->maximum()));
      });
}

void ExportDialog::reject() {
  if (m_job.isRunning()) {
    m_job.cancel();  // the finish above says so; the dialog stays open
    return;
  }
  QDialog::reject();
}

}  // namespace ckpt
