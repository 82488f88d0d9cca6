#include "remote/askpassdialog.h"

#include <QDialogButtonBox>
#include <QFont>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace ckpt {

AskpassDialog::Kind AskpassDialog::kindOf(const QString& prompt, const QString& hint) {
  if (hint == QLatin1String("none")) return Kind::Notice;
  // The host-key question ("Are you sure you want to continue connecting
  // (yes/no/[fingerprint])?", then "Please type 'yes', 'no' ...") and
  // ssh-agent's confirmations.
  if (hint == QLatin1String("confirm") || prompt.contains(QLatin1String("(yes/no")) ||
      prompt.contains(QLatin1String("'yes' or 'no'")) ||
      prompt.contains(QLatin1String("'yes', 'no'")))
    return Kind::Question;
  return Kind::Secret;
}

AskpassDialog::AskpassDialog(const QString& prompt, const QString& hint, const QString& host,
                             QWidget* parent)
    : QDialog(parent), m_kind(kindOf(prompt, hint)) {
  setWindowTitle(tr("CkptScope: ssh asks"));
  setObjectName(QStringLiteral("askpassDialog"));
  // Who asks, and for what: ssh's prompt alone may not name the host (a
  // key's passphrase), and the app may be opening more than one.
  auto* heading =
      new QLabel(host.isEmpty() ? tr("CkptScope is connecting to a host; ssh asks:")
                                : tr("CkptScope is connecting to %1; ssh asks:").arg(host),
                 this);
  heading->setObjectName(QStringLiteral("askpassHeading"));
  heading->setTextFormat(Qt::PlainText);
  QFont bold = heading->font();
  bold.setBold(true);
  heading->setFont(bold);
  auto* text = new QLabel(prompt.trimmed(), this);
  text->setObjectName(QStringLiteral("askpassPrompt"));
  text->setTextFormat(Qt::PlainText);  // the prompt is ssh's (and the host's) text, not markup
  text->setWordWrap(true);
  text->setTextInteractionFlags(Qt::TextSelectableByMouse);  // a fingerprint to compare
  text->setMinimumWidth(560);  // a host-key line with its fingerprint on one line
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(heading);
  layout->addWidget(text);
  auto* buttons = new QDialogButtonBox(this);
  switch (m_kind) {
    case Kind::Secret:
      m_secret = new QLineEdit(this);
      m_secret->setObjectName(QStringLiteral("askpassSecret"));
      m_secret->setEchoMode(QLineEdit::Password);
      layout->addWidget(m_secret);
      m_accept = buttons->addButton(QDialogButtonBox::Ok);
      m_reject = buttons->addButton(QDialogButtonBox::Cancel);
      break;
    case Kind::Question:
      m_accept = buttons->addButton(QDialogButtonBox::Yes);
      m_reject = buttons->addButton(QDialogButtonBox::No);
      // A host key is trusted by a choice, never by a stray Enter.
      m_accept->setAutoDefault(false);
      m_reject->setDefault(true);
      break;
    case Kind::Notice:
      m_accept = buttons->addButton(QDialogButtonBox::Ok);
      break;
  }
  layout->addWidget(buttons);
  connect(m_accept, &QPushButton::clicked, this, &QDialog::accept);
  if (m_reject)
    connect(m_reject, &QPushButton::clicked, this, [this] {
      // No to a question is an answer ("no"); Cancel on a secret is none.
      m_saidNo = m_kind == Kind::Question;
      if (m_saidNo)
        accept();
      else
        reject();
    });
  if (m_secret) m_secret->setFocus();
}

QByteArray AskpassDialog::answer() const {
  switch (m_kind) {
    case Kind::Secret:
      return m_secret->text().toUtf8();
    case Kind::Question:
      return m_saidNo ? QByteArrayLiteral("no") : QByteArrayLiteral("yes");
    case Kind::Notice:
      break;
  }
  return {};
}

int runAskpass(const QString& prompt, const QString& hint, const QString& host, std::FILE* out) {
  AskpassDialog dialog(prompt, hint, host);
  // It comes from another program (ssh): above the window that opened the host.
  dialog.setWindowFlag(Qt::WindowStaysOnTopHint);
  if (dialog.exec() != QDialog::Accepted) return 1;
  QByteArray answer = dialog.answer() + '\n';
  const bool written =
      std::fwrite(answer.constData(), 1, size_t(answer.size()), out) == size_t(answer.size()) &&
      std::fflush(out) == 0;
  answer.fill('\0');  // a password lives no longer than it must
  return written ? 0 : 1;
}

}  // namespace ckpt
