#pragma once

#include <QWidget>
#include <functional>
#include <memory>
#include <vector>

#include "backgroundjob.h"
#include "ckpt/analysis/diff.h"

class QCPColorMap;
class QCheckBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QTableWidget;

namespace ckpt {

class DiffModel;

// Compares two checkpoints: what changed in structure, every matching
// tensor's relative change, cosine similarity and largest / mean absolute
// difference (a sortable, filterable table), the change per block (bars) and
// per block x module (heat map), and the metadata and config keys that
// differ. The diff runs on the thread pool, one tensor at a time from
// mapped bytes, with progress and Cancel.
class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);
  ~CompareView() override;

  // What a comparison computes, on the thread pool: the diff and every
  // metadata key of both (diffMetadata with everyKey).
  struct Computed {
    std::shared_ptr<const CheckpointDiff> diff;
    std::vector<MetadataChange> metadata;
  };
  // Computes the comparison of `a` and `b` somewhere else than from the
  // files here (two checkpoints on a host: ui/remote/remotediff.h).
  using Source = std::function<Computed(const QString& a, const QString& b, JobProgress& progress)>;

  // Starts comparing (a previous comparison still running is cancelled and
  // what it showed is cleared at once). By value: Swap passes the members.
  // Without a `source` the files are opened here; with one (kept for Swap)
  // it computes the comparison.
  void compare(QString a, QString b, Source source = {});
  void cancel();
  // Nothing compared: `text` in place of the results (emits finished(false));
  // with `a` and `b`, the pair that was not compared is the title.
  void showMessage(const QString& text, const QString& a = {}, const QString& b = {});
  [[nodiscard]] bool isRunning() const { return m_job.isRunning(); }
  [[nodiscard]] QString pathA() const { return m_a; }
  [[nodiscard]] QString pathB() const { return m_b; }

  [[nodiscard]] DiffModel* model() const { return m_model; }
  // What the table shows: the model filtered by name and sorted.
  [[nodiscard]] QSortFilterProxyModel* proxy() const { return m_proxy; }
  void setFilter(const QString& text);
  [[nodiscard]] QCustomPlot* blockPlot() const { return m_blockPlot; }
  [[nodiscard]] QCustomPlot* heatPlot() const { return m_heatPlot; }
  [[nodiscard]] QCPColorMap* heatMap() const { return m_heatMap; }
  // Every metadata and config key side by side; the rows that differ are
  // highlighted (their Qt::UserRole is true).
  [[nodiscard]] QTableWidget* metadataTable() const { return m_metadata; }
  [[nodiscard]] QTabWidget* tabs() const { return m_tabs; }
  // The line above the tabs: counts, the largest change, or why it failed.
  [[nodiscard]] QString statusText() const;
  // The same in one plain line, for the window's status bar.
  [[nodiscard]] QString summaryLine() const { return m_summary; }
  [[nodiscard]] QPushButton* swapButton() const { return m_swap; }
  [[nodiscard]] QPushButton* cancelButton() const { return m_cancel; }
  [[nodiscard]] QLineEdit* filterEdit() const { return m_filter; }
  [[nodiscard]] QTableView* table() const { return m_table; }
  [[nodiscard]] QLineEdit* metadataFilterEdit() const { return m_metaFilter; }
  [[nodiscard]] QCheckBox* differencesOnlyBox() const { return m_diffOnly; }

 signals:
  // The comparison is shown; `ok` is false when it failed or was cancelled.
  void finished(bool ok);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  struct Result {
    std::shared_ptr<const CheckpointDiff> diff;
    std::vector<MetadataChange> metadata;  // every key, the changed ones not `same`
    QString error;
  };

  void onFinished(JobOutcome outcome, std::optional<Result> result, const QString& error);
  void showProgress(const JobProgress& progress);
  // Empties the table, the charts and the metadata (a new request, a failure).
  void clearResults();
  void filterMetadata();
  void showLayers(const CheckpointDiff& diff);
  void showMetadata(const std::vector<MetadataChange>& metadata);
  void restyle();

  QLabel* m_title = nullptr;
  QLabel* m_status = nullptr;
  QProgressBar* m_progress = nullptr;
  QPushButton* m_cancel = nullptr;
  QPushButton* m_swap = nullptr;
  QTabWidget* m_tabs = nullptr;
  QLineEdit* m_filter = nullptr;
  DiffModel* m_model = nullptr;
  QSortFilterProxyModel* m_proxy = nullptr;
  QTableView* m_table = nullptr;
  QCustomPlot* m_blockPlot = nullptr;
  QCustomPlot* m_heatPlot = nullptr;
  QCPColorMap* m_heatMap = nullptr;
  QTableWidget* m_metadata = nullptr;
  QLineEdit* m_metaFilter = nullptr;
  QCheckBox* m_diffOnly = nullptr;

  QString m_a, m_b;
  Source m_source;
  QString m_summary;
  BackgroundJob<Result> m_job{this};
};

}  // namespace ckpt
