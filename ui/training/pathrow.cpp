#include "training/pathrow.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QToolButton>
#include <stdexcept>

#include "ckpt/format/pickle_safety.h"
#include "ckpt/remote/remote_path.h"

namespace ckpt::trainui {

namespace {
QString tr(const char* text) {
  return QCoreApplication::translate("ckpt::TrainPanel", text);
}
}  // namespace

QScrollArea* scrollingDown(QWidget* page) {
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setWidget(page);
  return scroll;
}

QWidget* pathRow(QWidget* parent, QLineEdit* edit, const std::function<void()>& browseFile,
                 const std::function<void()>& browseDir) {
  auto* row = new QWidget(parent);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  h->setSpacing(4);
  h->addWidget(edit, 1);
  if (browseFile) {
    auto* b = new QToolButton(row);
    b->setText(browseDir ? tr("File…") : QStringLiteral("…"));
    QObject::connect(b, &QToolButton::clicked, row, browseFile);
    h->addWidget(b);
  }
  if (browseDir) {
    auto* b = new QToolButton(row);
    b->setText(tr("Folder…"));
    QObject::connect(b, &QToolButton::clicked, row, browseDir);
    h->addWidget(b);
  }
  return row;
}

std::function<void()> chooser(QWidget* parent, QLineEdit* edit, const QString& title, Pick pick,
                              const QString& filter) {
  return [=] {
    const QString p = pick == Pick::File
                          ? QFileDialog::getOpenFileName(parent, title, edit->text(), filter)
                          : QFileDialog::getExistingDirectory(parent, title, edit->text());
    if (!p.isEmpty()) edit->setText(p);
  };
}

QString checkpointFilter() {
  return tr("Checkpoints (*.pt *.pth *.bin);;All files (*)");
}

QLineEdit* addCheckpointRows(QWidget* page, QFormLayout* form, const QString& intro) {
  auto* label = new QLabel(intro, page);
  label->setWordWrap(true);
  form->addRow(label);
  auto* edit = new QLineEdit(page);
  edit->setObjectName(QStringLiteral("checkpoint"));
  form->addRow(
      QStringLiteral("checkpoint"),
      pathRow(page, edit, chooser(page, edit, tr("Checkpoint"), Pick::File, checkpointFilter())));
  return edit;
}

std::optional<Problem> checkpointProblem(const QString& path, const QString& choose) {
  const QStringList field{QStringLiteral("checkpoint")};
  if (path.isEmpty()) return Problem{choose, field};
  if (!QFileInfo(path).isFile())
    return Problem{tr("checkpoint: %1 does not exist").arg(path), field};
  const SafetyReport report = scanFile(path.toStdString());
  if (report.verdict == Verdict::Dangerous)
    return Problem{tr("checkpoint: refused, %1 would run code if Python loaded it (%2)")
                       .arg(QFileInfo(path).fileName(), QString::fromStdString(report.summary())),
                   field};
  return std::nullopt;
}

QString remoteTrainText(const QString& location, const QString& what) {
  QString host = location;
  try {
    if (const auto where = remote::parseRemotePath(location.toStdString()))
      host = QString::fromStdString(where->host);
  } catch (const std::invalid_argument&) {
  }
  return QCoreApplication::translate(
             "ckpt::trainui",
             "On %1: Start runs the %2 there, detached from this app (closing it does not stop "
             "the run); its curves are followed here. Paths are %1's.")
      .arg(host, what);
}

QString defaultOutputDir(const QString& runName) {
  return QDir(QDir::homePath())
      .filePath(QStringLiteral("ckptscope-runs/") +
                (runName.isEmpty() ? QStringLiteral("run") : runName));
}

}  // namespace ckpt::trainui
