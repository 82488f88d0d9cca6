#pragma once

#include <QWidget>
#include <functional>
#include <memory>
#include <vector>

#include "backgroundjob.h"
#include "inspector/checkpointsummary.h"
#include "inspector/optimizermodel.h"

class QAbstractItemView;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QTreeView;

namespace ckpt {

class MetadataModel;
class ParameterModel;
class ShardView;
class SummaryWidget;
class TensorTableModel;
class TensorView;

// The checkpoint inspector: Summary, Metadata, Parameters, Optimizer and
// Tensor tabs. Same public face as SummaryWidget (the window hands it a
// CheckpointSummary computed off the GUI thread); the tabs add what a
// summary does not: the whole value tree, the parameter hierarchy, Adam
// state per parameter, and one tensor's numbers. Tensor bytes are only ever
// read on pool threads.
class InspectorWidget : public QWidget {
  Q_OBJECT

 public:
  // Shards: only for a checkpoint written by many ranks (hidden otherwise).
  enum class Tab { Summary, Metadata, Parameters, Optimizer, Tensor, Shards };

  explicit InspectorWidget(QWidget* parent = nullptr);
  ~InspectorWidget() override;

  // SummaryWidget's API.
  void showSummary(const CheckpointSummary& summary);
  void showMessage(const QString& title, const QString& html);
  [[nodiscard]] QString shownPath() const;
  [[nodiscard]] QString text() const;
  [[nodiscard]] TensorTableModel* tensorModel() const;

  [[nodiscard]] SummaryWidget* summaryWidget() const { return m_summary; }
  [[nodiscard]] MetadataModel* metadataModel() const { return m_metadata; }
  [[nodiscard]] ParameterModel* parameterModel() const { return m_params; }
  // The Parameters tab's search: the proxy over parameterModel() the tree shows.
  [[nodiscard]] QSortFilterProxyModel* parameterProxy() const { return m_paramProxy; }
  [[nodiscard]] QTreeView* parameterView() const { return m_paramView; }
  [[nodiscard]] OptimizerModel* optimizerModel() const { return m_optimizer; }
  [[nodiscard]] QTableView* optimizerView() const { return m_optView; }
  [[nodiscard]] TensorView* tensorView() const { return m_tensorView; }
  [[nodiscard]] ShardView* shardView() const { return m_shardView; }
  [[nodiscard]] QTabWidget* tabs() const { return m_tabs; }
  void setCurrentTab(Tab tab);
  void setParameterFilter(const QString& text);
  // Shows tensor `index` of the current file in the Tensor tab.
  void inspectTensor(int index);
  // Statistics of every exp_avg / exp_avg_sq, in the background (the
  // Optimizer tab starts this when first shown).
  void computeOptimizerStats();
  [[nodiscard]] bool optimizerStatsDone() const { return m_optDone; }

 signals:
  void optimizerStatsReady();

 private:
  QWidget* makeMetadataTab();
  QWidget* makeParametersTab();
  QWidget* makeOptimizerTab();
  void clearTabs();
  void showShardsTab(bool shown);
  // Shows in the Tensor tab the tensor a row of `view` stands for, when the
  // person clicks it or moves the selection onto it.
  void followSelection(QAbstractItemView* view, std::function<int(const QModelIndex&)> tensorOf);
  void onOptimizerStats(std::vector<OptimizerModel::Stats> stats);
  [[nodiscard]] QString tensorName(int index) const;

  QTabWidget* m_tabs = nullptr;
  SummaryWidget* m_summary = nullptr;
  MetadataModel* m_metadata = nullptr;
  QTreeView* m_metaView = nullptr;
  ParameterModel* m_params = nullptr;
  QSortFilterProxyModel* m_paramProxy = nullptr;
  QTreeView* m_paramView = nullptr;
  QLineEdit* m_paramSearch = nullptr;
  QLabel* m_paramHeading = nullptr;
  OptimizerModel* m_optimizer = nullptr;
  QSortFilterProxyModel* m_optProxy = nullptr;
  QTableView* m_optView = nullptr;
  QLabel* m_optHeading = nullptr;
  TensorView* m_tensorView = nullptr;
  ShardView* m_shardView = nullptr;

  std::shared_ptr<const CheckpointFile> m_file;
  std::shared_ptr<const CheckpointFile> m_optimizerFile;  // m_file, or a Trainer's optimizer.pt
  std::shared_ptr<const RemoteTensors> m_remote;          // a checkpoint on another machine
  std::vector<QString> m_tensorNames;                     // display names per tensor index
  bool m_optStarted = false;
  bool m_optDone = false;
  BackgroundJob<std::vector<OptimizerModel::Stats>> m_optJob{this};
};

}  // namespace ckpt
