#include "remote/openremotedialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>
#include <stdexcept>

#include "ckpt/remote/agent_client.h"
#include "remote/sshquestions.h"
#include "textformat.h"

namespace ckpt {

OpenRemoteDialog::OpenRemoteDialog(const QStringList& recent, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Open Remote"));
  m_location = new QComboBox(this);
  m_location->setObjectName(QStringLiteral("remoteLocation"));
  m_location->setEditable(true);
  m_location->setInsertPolicy(QComboBox::NoInsert);
  m_location->addItems(recent);
  m_location->setCurrentIndex(-1);
  m_location->lineEdit()->setPlaceholderText(tr("ssh://user@host/path/to/runs  or  host:/path"));
  m_location->setMinimumWidth(520);
  m_command = new QLabel(this);
  m_command->setObjectName(QStringLiteral("remoteCommand"));
  m_command->setWordWrap(true);
  m_command->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Room for a command of three lines: a word-wrapped label does not make
  // a shown dialog taller, so a longer one would be cut off.
  m_command->setMinimumHeight(3 * m_command->fontMetrics().lineSpacing());
  m_command->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  auto* note = new QLabel(
      tr("The host needs ckptscope-cli on its PATH; your ~/.ssh/config, keys and agent apply, "
         "and what ssh asks (a key's passphrase, a password, a host key not seen before) is "
         "asked in a dialog. Nothing is copied: the host reads its files and sends what is "
         "shown."),
      this);
  note->setWordWrap(true);
  m_buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
  auto* form = new QFormLayout;
  form->addRow(tr("&Location:"), m_location);
  form->addRow(tr("Runs:"), m_command);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(note);
  layout->addWidget(m_buttons);
  connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(m_location, &QComboBox::editTextChanged, this, &OpenRemoteDialog::updateCommand);
  updateCommand();
}

QString OpenRemoteDialog::location() const {
  return m_location->currentText().trimmed();
}

void OpenRemoteDialog::updateCommand() {
  QString text;
  bool ok = false;
  try {
    const auto where = remote::parseRemotePath(pathToStd(location()));
    if (where) {
      QStringList words;
      for (const std::string& w : appAgentCommand(*where).argv) words << fromStd(w);
      text = words.join(' ');
      ok = true;
    } else if (!location().isEmpty()) {
      text = tr("Not a remote location (ssh://host/path or host:/path)");
    }
  } catch (const std::invalid_argument& e) {
    text = fromStd(e.what());
  }
  m_command->setText(text);
  m_buttons->button(QDialogButtonBox::Open)->setEnabled(ok);
}

}  // namespace ckpt
