#include "training/remotelaunch.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace ckpt {

SbatchDialog::SbatchDialog(const QString& host, const QString& runDir, const QString& script,
                           QWidget* parent)
    : QDialog(parent) {
  setObjectName(QStringLiteral("sbatchDialog"));
  setWindowTitle(tr("Submit to SLURM on %1").arg(host));
  auto* layout = new QVBoxLayout(this);
  auto* note = new QLabel(
      tr("The batch script sbatch gets on %1, for the run in %2. Edit the resources (the "
         "#SBATCH lines) and load modules before the exec; the trainer's command reaches it as "
         "its arguments (\"$@\"). It is kept in the run's folder, and the job's log is "
         "ckptscope-train-JOBID.log there.")
          .arg(host, runDir),
      this);
  note->setWordWrap(true);
  note->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(note);
  m_editor = new QPlainTextEdit(script, this);
  m_editor->setObjectName(QStringLiteral("script"));
  m_editor->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_editor->setLineWrapMode(QPlainTextEdit::NoWrap);
  layout->addWidget(m_editor, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Submit"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(760, 520);
}

QString SbatchDialog::script() const {
  return m_editor->toPlainText();
}

}  // namespace ckpt
