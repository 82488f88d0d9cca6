#include "training/resumepage.h"

#include <QCheckBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>

#include "ckpt/index/run_plan.h"
#include "remote/remotefolder.h"
#include "training/trainrunner.h"

namespace ckpt {

using namespace trainui;

ResumePage::ResumePage(QWidget* parent) : QWidget(parent) {
  auto* f = new QFormLayout(this);
  m_checkpoint = addCheckpointRows(
      this, f,
      tr("Continues the run that wrote the checkpoint from its step: the same optimizer state, "
         "schedule, data position and random state, so the result is what an uninterrupted run "
         "gives. From the run's newest checkpoint it continues in the run's directory; from an "
         "older one it continues as a new run next to it, and the run's later checkpoints stay "
         "as they are."));
  m_maxSteps = new QSpinBox(this);
  m_maxSteps->setRange(0, 1'000'000'000);
  m_maxSteps->setSpecialValueText(tr("as recorded"));
  f->addRow(QStringLiteral("max_steps"), m_maxSteps);
  m_data = new QLineEdit(this);
  m_data->setPlaceholderText(tr("the data the run recorded"));
  f->addRow(QStringLiteral("data"),
            pathRow(this, m_data, chooser(this, m_data, tr("Training data"), Pick::File)));
  m_inPlace = new QCheckBox(tr("in place (later checkpoints to .trash/)"), this);
  m_inPlace->setObjectName(QStringLiteral("in_place"));
  m_inPlace->setEnabled(false);
  f->addRow(QString(), m_inPlace);
  m_plan = new QLabel(this);
  m_plan->setObjectName(QStringLiteral("plan"));
  m_plan->setWordWrap(true);
  m_plan->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = m_plan->font();
  bold.setBold(true);
  m_plan->setFont(bold);
  // First on the page: what Start will do is seen without scrolling, at any height.
  f->insertRow(0, m_plan);
  connect(m_checkpoint, &QLineEdit::textChanged, this, &ResumePage::updatePlan);
  connect(m_inPlace, &QCheckBox::toggled, this, &ResumePage::updatePlan);
  for (QLineEdit* e : {m_checkpoint, m_data})
    connect(e, &QLineEdit::textChanged, this, &ResumePage::changed);
}

QString ResumePage::planText() const {
  return m_plan->text();
}

void ResumePage::reset(const QString& checkpoint) {
  m_checkpoint->setText(checkpoint);
  m_maxSteps->setValue(0);
  m_data->clear();
}

std::optional<Problem> ResumePage::fill(TrainRequest& r, const std::string& device) const {
  const QString ckpt = m_checkpoint->text().trimmed();
  if (auto problem = checkpointProblem(ckpt, tr("checkpoint: choose the checkpoint to resume")))
    return problem;
  r.resume.checkpoint = ckpt.toStdString();
  if (m_maxSteps->value() > 0) r.resume.maxSteps = m_maxSteps->value();
  const QString data = m_data->text().trimmed();
  r.resume.dataPath = data.toStdString();
  if (!data.isEmpty() && !QFileInfo::exists(data))
    return Problem{tr("data: %1 does not exist").arg(data), {}};
  r.resume.device = device;
  r.resume.inPlace = m_inPlace->isEnabled() && m_inPlace->isChecked();
  return std::nullopt;
}

void ResumePage::updatePlan() {
  const QString ckpt = m_checkpoint->text().trimmed();
  if (isRemoteLocation(ckpt)) {
    // The host plans it (the same rules): said here in words.
    m_inPlace->setChecked(false);
    m_inPlace->setEnabled(false);
    // Where it writes is said below (the page's note): the same rules there.
    m_plan->setText(remoteTrainText(ckpt, tr("resume")));
    return;
  }
  if (ckpt.isEmpty() || !QFileInfo(ckpt).isFile()) {
    m_plan->clear();
    m_inPlace->setEnabled(false);
    return;
  }
  // The trainer decides with the same function (ckpt/index/run_plan.h).
  try {
    const ResumePlan plan = planResume(ckpt.toStdString());
    const QString run = QString::fromStdString(plan.runName);
    const QString dir = QString::fromStdString(plan.runDir);
    m_inPlace->setEnabled(!plan.isNewest);
    if (plan.isNewest) {
      m_inPlace->setChecked(false);
      m_plan->setText(
          tr("This is the newest checkpoint of %1: the run continues in %2 from step %3, "
             "adding its checkpoints and metrics.jsonl lines from there.")
              .arg(run, dir)
              .arg(plan.step));
    } else if (m_inPlace->isChecked()) {
      QStringList names;
      for (const std::string& f : plan.laterFiles)
        names << QFileInfo(QString::fromStdString(f)).fileName();
      m_plan->setText(
          tr("In place: %1 later file(s) of %2 move to %3/.trash/ (%4), metrics.jsonl is cut "
             "back to step %5, and the run continues in its directory. Start asks first.")
              .arg(names.size())
              .arg(run, dir, names.join(QStringLiteral(", ")))
              .arg(plan.step));
    } else {
      m_plan->setText(
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
    m_inPlace->setEnabled(false);
    m_plan->setText(tr("Cannot plan the resume: %1").arg(QString::fromStdString(e.what())));
  }
}

void ResumePage::saveSettings(QSettings& s) const {
  s.setValue(QStringLiteral("resume/checkpoint"), m_checkpoint->text());
}

void ResumePage::restoreSettings(QSettings& s) {
  m_checkpoint->setText(s.value(QStringLiteral("resume/checkpoint")).toString());
}

}  // namespace ckpt
