#include "training/finetunepage.h"

#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QSettings>
#include <QSpinBox>
#include <QVariantMap>
#include <stdexcept>

#include "ckpt/remote/remote_path.h"
#include "remote/remotefolder.h"
#include "textformat.h"
#include "training/trainrunner.h"

namespace ckpt {

using namespace trainui;

FinetunePage::FinetunePage(QWidget* parent) : QWidget(parent) {
  auto* f = new QFormLayout(this);
  m_checkpoint = addCheckpointRows(
      this, f,
      tr("Starts a new stage from the checkpoint's weights: a fresh optimizer, a cosine "
         "schedule without warmup, step 0, its own directory. The checkpoint is "
         "recorded as the parent of every checkpoint the stage writes."));
  m_data = new QLineEdit(this);
  m_data->setObjectName(QStringLiteral("path"));
  m_data->setPlaceholderText(tr("fine-tuning text or .bin tokens"));
  f->addRow(QStringLiteral("data"),
            pathRow(this, m_data, chooser(this, m_data, tr("Fine-tuning data"), Pick::File),
                    chooser(this, m_data, tr("Fine-tuning data"), Pick::Directory)));
  m_tokenizer = new QLineEdit(this);
  m_tokenizer->setPlaceholderText(tr("the checkpoint's"));
  m_tokenizer->setObjectName(QStringLiteral("tokenizer"));
  f->addRow(QStringLiteral("tokenizer"), m_tokenizer);
  m_stage = new QLineEdit(QStringLiteral("sft"), this);
  m_stage->setObjectName(QStringLiteral("stage"));
  f->addRow(QStringLiteral("stage"), m_stage);
  m_lr = new QLineEdit(QStringLiteral("1e-05"), this);
  m_lr->setObjectName(QStringLiteral("learning_rate"));
  m_lr->setToolTip(tr("The reference library's SFT rate is 1e-5"));
  f->addRow(QStringLiteral("learning_rate"), m_lr);
  m_maxSteps = new QSpinBox(this);
  m_maxSteps->setRange(0, 1'000'000'000);
  m_maxSteps->setSpecialValueText(tr("the parent's"));
  f->addRow(QStringLiteral("max_steps"), m_maxSteps);
  m_out = new QLineEdit(this);
  m_out->setObjectName(QStringLiteral("output_dir"));
  m_out->setPlaceholderText(tr("<directory above the checkpoint's>/<run>-<stage>"));
  f->addRow(QStringLiteral("output_dir"),
            pathRow(this, m_out, chooser(this, m_out, tr("Output directory"), Pick::Directory)));
  for (QLineEdit* e : {m_checkpoint, m_data, m_tokenizer, m_stage, m_lr, m_out})
    connect(e, &QLineEdit::textChanged, this, &FinetunePage::changed);
  m_plan = new QLabel(this);
  m_plan->setObjectName(QStringLiteral("plan"));
  m_plan->setWordWrap(true);
  m_plan->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = m_plan->font();
  bold.setBold(true);
  m_plan->setFont(bold);
  m_plan->hide();
  f->insertRow(0, m_plan);
  connect(m_checkpoint, &QLineEdit::textChanged, this, &FinetunePage::updatePlan);
  connect(m_checkpoint, &QLineEdit::textChanged, this, &FinetunePage::followMachine);
}

namespace {

// "" for a path here, "ssh://[user@]host[:port]" for one on a host.
QString machineOf(const QString& location) {
  if (!isRemoteLocation(location)) return {};
  try {
    if (const auto where = remote::parseRemotePath(pathToStd(location.trimmed())))
      return fromStd("ssh://" + where->endpoint());
  } catch (const std::invalid_argument&) {
  }
  return location.trimmed();  // not a location that parses: its own machine, whatever it is
}

}  // namespace

void FinetunePage::followMachine() {
  const QString machine = machineOf(m_checkpoint->text());
  if (machine == m_dataMachine) return;
  m_dataElsewhere[m_dataMachine] = m_data->text();
  m_dataMachine = machine;
  m_data->setText(m_dataElsewhere.take(machine));
}

QString FinetunePage::planText() const {
  return m_plan->text();
}

void FinetunePage::updatePlan() {
  const QString ckpt = m_checkpoint->text().trimmed();
  const bool remote = isRemoteLocation(ckpt);
  m_plan->setText(remote ? remoteTrainText(ckpt, tr("fine-tune")) + " " +
                               tr("Its output folder must be new.")
                         : QString());
  m_plan->setVisible(remote);
}

std::optional<Problem> FinetunePage::fill(TrainRequest& r, const std::string& device) const {
  const QString ckpt = m_checkpoint->text().trimmed();
  if (auto problem = checkpointProblem(ckpt, tr("checkpoint: choose the checkpoint to fine-tune")))
    return problem;
  const QString data = m_data->text().trimmed();
  if (data.isEmpty())
    return Problem{tr("data: choose the fine-tuning data"), {QStringLiteral("path")}};
  if (!QFileInfo::exists(data))
    return Problem{tr("data: %1 does not exist").arg(data), {QStringLiteral("path")}};
  const QString stage = m_stage->text().trimmed();
  if (stage.isEmpty() || stage.contains(QLatin1Char('/')))
    return Problem{tr("stage: a name without '/' (sft, dpo, ...)"), {QStringLiteral("stage")}};
  bool ok = false;
  const double lr = QLocale::c().toDouble(m_lr->text().trimmed(), &ok);
  if (!ok || !(lr > 0))
    return Problem{tr("learning_rate: expected a number > 0, got '%1'").arg(m_lr->text()),
                   {QStringLiteral("learning_rate")}};
  r.checkpoint = ckpt.toStdString();
  r.finetune.dataPath = data.toStdString();
  r.finetune.tokenizer = m_tokenizer->text().trimmed().toStdString();
  const QString out = m_out->text().trimmed();
  r.finetune.outputDir = out.isEmpty() ? std::string() : QDir::cleanPath(out).toStdString();
  r.finetune.stage = stage.toStdString();
  r.finetune.learningRate = lr;
  r.finetune.maxSteps = m_maxSteps->value();
  r.finetune.device = device;
  return std::nullopt;
}

void FinetunePage::saveSettings(QSettings& s) const {
  QMap<QString, QString> data = m_dataElsewhere;
  data[m_dataMachine] = m_data->text();
  s.setValue(QStringLiteral("finetune/data"), data.take(QString()));
  QVariantMap hosts;
  for (auto it = data.cbegin(); it != data.cend(); ++it)
    if (!it.value().isEmpty()) hosts.insert(it.key(), it.value());
  s.setValue(QStringLiteral("finetune/dataOnHosts"), hosts);
  s.setValue(QStringLiteral("finetune/tokenizer"), m_tokenizer->text());
  s.setValue(QStringLiteral("finetune/stage"), m_stage->text());
  s.setValue(QStringLiteral("finetune/lr"), m_lr->text());
  s.setValue(QStringLiteral("finetune/maxSteps"), m_maxSteps->value());
}

void FinetunePage::restoreSettings(QSettings& s) {
  m_dataElsewhere.clear();
  const QVariantMap hosts = s.value(QStringLiteral("finetune/dataOnHosts")).toMap();
  for (auto it = hosts.cbegin(); it != hosts.cend(); ++it)
    m_dataElsewhere[it.key()] = it.value().toString();
  m_dataElsewhere[QString()] = s.value(QStringLiteral("finetune/data")).toString();
  m_data->setText(m_dataElsewhere.take(m_dataMachine));
  m_tokenizer->setText(s.value(QStringLiteral("finetune/tokenizer")).toString());
  m_stage->setText(s.value(QStringLiteral("finetune/stage"), QStringLiteral("sft")).toString());
  m_lr->setText(s.value(QStringLiteral("finetune/lr"), QStringLiteral("1e-05")).toString());
  m_maxSteps->setValue(s.value(QStringLiteral("finetune/maxSteps"), 0).toInt());
}

}  // namespace ckpt
