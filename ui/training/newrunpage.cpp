#include "training/newrunpage.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QSettings>
#include <QToolButton>
#include <QVBoxLayout>

#include "ckpt/index/run_plan.h"
#include "training/configform.h"
#include "training/pathrow.h"

namespace ckpt {

using json = nlohmann::ordered_json;
using namespace trainui;

NewRunPage::NewRunPage(QWidget* parent) : QScrollArea(parent) {
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  auto* page = new QWidget;
  auto* v = new QVBoxLayout(page);
  v->setContentsMargins(4, 4, 4, 4);
  m_form = new ConfigForm(page);
  // The fields, their defaults and tooltips come from the config's tables.
  m_form->addGroup(tr("Model (ModernLLMConfig)"), ConfigForm::fieldsOf(modelConfigSection()));
  m_form->addGroup(tr("Training"), ConfigForm::fieldsOf(trainingConfigSection()));
  v->addWidget(m_form);

  // The rows' labels are the config's keys, as in run.json and the CLI's help.
  auto* dataBox = new QWidget(page);
  auto* f = new QFormLayout(dataBox);
  f->setContentsMargins(0, 0, 0, 0);
  m_dataPath = new QLineEdit(dataBox);
  m_dataPath->setObjectName(QStringLiteral("path"));
  m_dataPath->setPlaceholderText(tr("text file, directory of text files, or .bin tokens"));
  f->addRow(QStringLiteral("data"),
            pathRow(dataBox, m_dataPath, chooser(this, m_dataPath, tr("Training data"), Pick::File),
                    chooser(this, m_dataPath, tr("Training data"), Pick::Directory)));
  m_tokenizer = new QComboBox(dataBox);
  m_tokenizer->setObjectName(QStringLiteral("tokenizer"));
  m_tokenizer->setEditable(true);
  // A long tokenizer path typed in must not widen the form past a small window.
  m_tokenizer->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_tokenizer->setMinimumContentsLength(6);
  m_tokenizer->addItem(QStringLiteral("bytes"));
  m_tokenizer->setToolTip(
      tr("bytes; a Hugging Face tokenizer.json; or a directory with GPT-2's vocab.json + "
         "merges.txt"));
  // The editable combo and choosers for a tokenizer.json or a vocabulary directory.
  {
    auto* row = new QWidget(dataBox);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->setSpacing(4);
    h->addWidget(m_tokenizer, 1);
    auto* file = new QToolButton(row);
    file->setText(tr("File…"));
    connect(file, &QToolButton::clicked, this, [this] {
      const QString p = QFileDialog::getOpenFileName(this, tr("tokenizer.json"), QString(),
                                                     tr("Tokenizer (*.json);;All files (*)"));
      if (!p.isEmpty()) m_tokenizer->setCurrentText(p);
    });
    auto* dir = new QToolButton(row);
    dir->setText(tr("Folder…"));
    connect(dir, &QToolButton::clicked, this, [this] {
      const QString p = QFileDialog::getExistingDirectory(this, tr("GPT-2 vocabulary directory"));
      if (!p.isEmpty()) m_tokenizer->setCurrentText(p);
    });
    h->addWidget(file);
    h->addWidget(dir);
    f->addRow(QStringLiteral("tokenizer"), row);
  }
  m_outputDir = new QLineEdit(dataBox);
  m_outputDir->setObjectName(QStringLiteral("output_dir"));
  f->addRow(QStringLiteral("output_dir"),
            pathRow(dataBox, m_outputDir,
                    chooser(this, m_outputDir, tr("Output directory"), Pick::Directory)));
  connect(m_form, &ConfigForm::edited, this, [this] {
    m_outputDir->setPlaceholderText(
        defaultOutputDir(m_form->value(QStringLiteral("run_name")).toString().trimmed()));
  });
  m_form->addGroup(tr("Data and output"), ConfigForm::fieldsOf(dataConfigSection()), 2, dataBox);
  v->addStretch(1);
  setWidget(page);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_outputDir->setPlaceholderText(defaultOutputDir(QStringLiteral("run")));

  connect(m_form, &ConfigForm::edited, this, &NewRunPage::changed);
  for (QLineEdit* e : {m_dataPath, m_outputDir})
    connect(e, &QLineEdit::textChanged, this, &NewRunPage::changed);
  connect(m_tokenizer, &QComboBox::currentTextChanged, this, &NewRunPage::changed);
}

RunConfig NewRunPage::config(const QString& device) const {
  json training = m_form->sectionJson(QStringLiteral("training"));
  QString out = m_outputDir->text().trimmed();
  if (out.isEmpty())
    out = defaultOutputDir(QString::fromStdString(training.value("run_name", std::string())));
  training["output_dir"] = QDir::cleanPath(out).toStdString();
  training["device"] = device.toStdString();
  json data = m_form->sectionJson(QStringLiteral("data"));
  data["path"] = m_dataPath->text().trimmed().toStdString();
  data["tokenizer"] = m_tokenizer->currentText().trimmed().toStdString();
  const json model = m_form->sectionJson(QStringLiteral("model"));
  RunConfig c = RunConfig::fromJson(json{{"model", model}, {"training", training}, {"data", data}});
  c.model.validate();
  if (c.model.useMoe)
    throw ConfigError(
        tr("use_moe: MoE layers cannot be trained (the reference library cannot run them)")
            .toStdString(),
        {"use_moe"});
  if (c.training.seqLen > c.model.maxSeqLen)
    throw ConfigError(tr("seq_len (%1) must not exceed max_seq_len (%2)")
                          .arg(c.training.seqLen)
                          .arg(c.model.maxSeqLen)
                          .toStdString(),
                      {"seq_len", "max_seq_len"});
  if (c.data.tokenizer == "bytes" && c.model.vocabSize < 256)
    throw ConfigError(tr("vocab_size (%1) must be at least 256 for the bytes tokenizer")
                          .arg(c.model.vocabSize)
                          .toStdString(),
                      {"vocab_size", "tokenizer"});
  if (c.data.tokenizer.empty())
    throw ConfigError(
        tr("tokenizer: choose bytes, a tokenizer.json or a GPT-2 vocabulary directory")
            .toStdString(),
        {"tokenizer"});
  if (c.data.path.empty())
    throw ConfigError(tr("path: choose the training data (a text file, a directory or a .bin file)")
                          .toStdString(),
                      {"path"});
  if (!QFileInfo::exists(QString::fromStdString(c.data.path)))
    throw ConfigError(
        tr("path: %1 does not exist").arg(QString::fromStdString(c.data.path)).toStdString(),
        {"path"});
  // Said before Start, as the trainer would refuse it: never a second history in one directory.
  if (const auto clash = existingRunFiles(c.training.outputDir, c.training.runName); !clash.empty())
    throw ConfigError(tr("output_dir: %1")
                          .arg(QString::fromStdString(
                              clashMessage(c.training.outputDir, c.training.runName, clash)))
                          .toStdString(),
                      {"output_dir"});
  return c;
}

void NewRunPage::saveSettings(QSettings& s) const {
  s.setValue(QStringLiteral("form"), m_form->values());
  s.setValue(QStringLiteral("data"), m_dataPath->text());
  s.setValue(QStringLiteral("tokenizer"), m_tokenizer->currentText());
  s.setValue(QStringLiteral("outputDir"), m_outputDir->text());
}

void NewRunPage::restoreSettings(QSettings& s) {
  m_form->setValues(s.value(QStringLiteral("form")).toMap());
  m_dataPath->setText(s.value(QStringLiteral("data")).toString());
  const QString tok = s.value(QStringLiteral("tokenizer"), QStringLiteral("bytes")).toString();
  m_tokenizer->setCurrentText(tok.isEmpty() ? QStringLiteral("bytes") : tok);
  m_outputDir->setText(s.value(QStringLiteral("outputDir")).toString());
}

}  // namespace ckpt
