#pragma once

#include <QWidget>

#include "inspector/checkpointsummary.h"

class QLabel;
class QSortFilterProxyModel;
class QTableView;
class QTextBrowser;

namespace ckpt {

class TensorTableModel;

// The right-hand panel: a checkpoint's summary on top, its tensors below.
class SummaryWidget : public QWidget {
  Q_OBJECT

 public:
  explicit SummaryWidget(QWidget* parent = nullptr);

  void showSummary(const CheckpointSummary& summary);
  // A plain message in place of a summary (a run row, "loading", "nothing found").
  void showMessage(const QString& title, const QString& html);

  [[nodiscard]] QString shownPath() const { return m_path; }
  // The summary as plain text (title, fields, sections), for tests and copying.
  [[nodiscard]] QString text() const;
  [[nodiscard]] TensorTableModel* tensorModel() const { return m_tensors; }
  [[nodiscard]] QTableView* tensorView() const { return m_tensorView; }

 signals:
  // A row of the tensor table became current: `tensor` indexes the file's tensors.
  void tensorSelected(int tensor);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  // The summary's fields, kept to lay them out again when the width changes.
  struct Sections {
    QList<SummaryField> fields, config, metadata;
    QStringList notes;
  };
  void renderDetails();

  Sections m_sections;
  int m_pairs = 0;  // label/value pairs per row of the config table
  QLabel* m_title = nullptr;
  QLabel* m_subtitle = nullptr;
  QTextBrowser* m_details = nullptr;
  QLabel* m_tensorHeading = nullptr;
  TensorTableModel* m_tensors = nullptr;
  QSortFilterProxyModel* m_tensorProxy = nullptr;
  QTableView* m_tensorView = nullptr;
  QString m_path;
};

}  // namespace ckpt
