#pragma once

#include <QString>
#include <QStringList>
#include <functional>
#include <optional>

class QFormLayout;
class QLineEdit;
class QScrollArea;
class QWidget;

// Small pieces the Train panel's pages share: path fields with their
// File…/Folder… buttons, a page that scrolls down, and the checks a
// checkpoint field makes.
namespace ckpt::trainui {

// What is wrong with a page's values: the message as shown, and the fields
// (form keys or the object names of the page's line edits) to frame in red.
struct Problem {
  QString message;
  QStringList fields;
};

// A page that scrolls down, never sideways, when the panel is short.
QScrollArea* scrollingDown(QWidget* page);

// A line edit with a "…" button that opens a file (or directory) dialog;
// with both, the buttons say "File…" and "Folder…".
QWidget* pathRow(QWidget* parent, QLineEdit* edit, const std::function<void()>& browseFile,
                 const std::function<void()>& browseDir = {});

// What a "…" button beside `edit` does: a file (or directory) dialog that
// opens where the edit points; a chosen path replaces the edit's text.
enum class Pick { File, Directory };
std::function<void()> chooser(QWidget* parent, QLineEdit* edit, const QString& title, Pick pick,
                              const QString& filter = {});

// The file dialogs' filter for checkpoints.
QString checkpointFilter();

// The Resume and Fine-tune pages' first rows: a wrapped `intro`, then the
// "checkpoint" field with its file chooser (object name "checkpoint").
QLineEdit* addCheckpointRows(QWidget* page, QFormLayout* form, const QString& intro);

// What is wrong with a checkpoint field's `path`, if anything: `choose`
// when it is empty, a missing file, or pickles that would run code if
// Python loaded them (the same scan as `ckptscope-cli scan`). The problem
// names the field "checkpoint".
std::optional<Problem> checkpointProblem(const QString& path, const QString& choose);

// What the Resume and Fine-tune pages say of a checkpoint on another
// machine (`location`, ssh://...): `what` ("resume") starts there, detached
// from the app, and is followed here; paths are the host's.
QString remoteTrainText(const QString& location, const QString& what);

// ~/ckptscope-runs/<run name>: where a new run writes when no directory is given.
QString defaultOutputDir(const QString& runName);

}  // namespace ckpt::trainui
