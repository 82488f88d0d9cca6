#include "inspector/inspectorwidget.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>
#include <QVBoxLayout>

#include "ckpt/format/checkpoint_file.h"
#include "ckpt/format/tensor_data.h"
#include "inspector/metadatamodel.h"
#include "inspector/parametermodel.h"
#include "inspector/shardview.h"
#include "inspector/summarywidget.h"
#include "inspector/tensortablemodel.h"
#include "inspector/tensorview.h"
#include "textformat.h"

namespace ckpt {
namespace {

QTreeView* makeTree(QWidget* parent) {
  auto* v = new QTreeView(parent);
  v->setAlternatingRowColors(true);
  v->setUniformRowHeights(true);
  v->setSelectionBehavior(QAbstractItemView::SelectRows);
  v->header()->setStretchLastSection(true);
  return v;
}

void collectLeaves(const ParamNode& n, std::vector<QString>& names) {
  if (n.tensor >= 0 && size_t(n.tensor) < names.size()) names[size_t(n.tensor)] = n.fullName;
  for (const ParamNode& c : n.children) collectLeaves(c, names);
}

// Statistics of every optimizer tensor, by `statsOf` (read here, or computed
// by a host's agent); stops early when the job is cancelled.
using StatsOf = std::function<std::optional<TensorStats>(int tensor, JobProgress& progress)>;
std::vector<OptimizerModel::Stats> optimizerStats(const StatsOf& statsOf,
                                                  const std::vector<OptimizerRow>& rows,
                                                  JobProgress& progress) {
  std::vector<OptimizerModel::Stats> out(rows.size());
  for (size_t i = 0; i < rows.size() && progress.report(i, rows.size()); ++i) {
    // A tensor that cannot be read leaves its cells empty; the tensor table
    // already says why.
    try {
      if (rows[i].expAvg >= 0) out[i].expAvg = statsOf(rows[i].expAvg, progress);
      if (rows[i].expAvgSq >= 0) out[i].expAvgSq = statsOf(rows[i].expAvgSq, progress);
    } catch (const std::exception&) {
    }
  }
  if (progress.cancelled()) return {};
  return out;
}

}  // namespace

InspectorWidget::InspectorWidget(QWidget* parent) : QWidget(parent) {
  m_tabs = new QTabWidget(this);
  m_tabs->setDocumentMode(true);
  m_summary = new SummaryWidget(this);
  m_tensorView = new TensorView(this);
  m_tabs->addTab(m_summary, tr("Summary"));
  m_tabs->addTab(makeMetadataTab(), tr("Metadata"));
  m_tabs->addTab(makeParametersTab(), tr("Parameters"));
  m_tabs->addTab(makeOptimizerTab(), tr("Optimizer"));
  m_tabs->addTab(m_tensorView, tr("Tensor"));
  m_shardView = new ShardView(this);
  m_tabs->addTab(m_shardView, tr("Shards"));
  m_tabs->setTabVisible(int(Tab::Shards), false);
  m_tabs->setTabToolTip(
      int(Tab::Shards),
      tr("How each tensor is split across the ranks' files, and what is missing"));
  // Picking a tensor there also computes its numbers for the Tensor tab.
  followSelection(m_shardView->tensorView(), [](const QModelIndex& i) { return i.row(); });
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_tabs);

  connect(m_summary, &SummaryWidget::tensorSelected, this, &InspectorWidget::inspectTensor);
  connect(m_tabs, &QTabWidget::currentChanged, this, [this](int i) {
    if (Tab(i) == Tab::Optimizer) computeOptimizerStats();
  });
  // Selecting shows a tensor in the background; Enter or a double click goes to it.
  const auto toTensor = [this](const QModelIndex& index) {
    if (m_tensorView->tensorIndex() >= 0 && index.isValid()) setCurrentTab(Tab::Tensor);
  };
  for (QAbstractItemView* v : std::initializer_list<QAbstractItemView*>{
           m_metaView, m_paramView, m_optView, m_summary->tensorView(), m_shardView->tensorView()})
    connect(v, &QAbstractItemView::activated, this, toTensor);
}

// The statistics job stops after the tensor it reads (BackgroundJob's destructor waits).
InspectorWidget::~InspectorWidget() = default;

QWidget* InspectorWidget::makeMetadataTab() {
  m_metadata = new MetadataModel(this);
  m_metaView = makeTree(this);
  m_metaView->setModel(m_metadata);
  followSelection(m_metaView, [](const QModelIndex& i) {
    return i.data(int(MetadataModel::Role::TensorIndex)).toInt();
  });
  return m_metaView;
}

QWidget* InspectorWidget::makeParametersTab() {
  auto* page = new QWidget(this);
  m_params = new ParameterModel(this);
  m_paramProxy = new QSortFilterProxyModel(this);
  m_paramProxy->setSourceModel(m_params);
  m_paramProxy->setRecursiveFilteringEnabled(true);  // a match keeps its ancestors
  m_paramProxy->setFilterRole(int(ParameterModel::Role::FullName));
  m_paramProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_paramProxy->setSortRole(int(ParameterModel::Role::SortKey));
  m_paramSearch = new QLineEdit(page);
  m_paramSearch->setPlaceholderText(tr("Search parameters by name (e.g. attn.q_proj)"));
  m_paramSearch->setClearButtonEnabled(true);
  m_paramHeading = new QLabel(page);
  m_paramView = makeTree(page);
  m_paramView->setModel(m_paramProxy);
  m_paramView->setSortingEnabled(true);
  m_paramView->sortByColumn(-1, Qt::AscendingOrder);  // file order until a header is clicked
  connect(m_paramSearch, &QLineEdit::textChanged, this, &InspectorWidget::setParameterFilter);
  followSelection(m_paramView, [](const QModelIndex& i) {
    return i.data(int(ParameterModel::Role::TensorIndex)).toInt();
  });
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(m_paramSearch);
  layout->addWidget(m_paramHeading);
  layout->addWidget(m_paramView, 1);
  return page;
}

QWidget* InspectorWidget::makeOptimizerTab() {
  auto* page = new QWidget(this);
  m_optimizer = new OptimizerModel(this);
  m_optProxy = new QSortFilterProxyModel(this);
  m_optProxy->setSourceModel(m_optimizer);
  m_optProxy->setSortRole(int(OptimizerModel::Role::SortKey));
  m_optHeading = new QLabel(page);
  m_optHeading->setWordWrap(true);
  m_optView = new QTableView(page);
  m_optView->setModel(m_optProxy);
  m_optView->setSortingEnabled(true);
  m_optView->sortByColumn(-1, Qt::AscendingOrder);
  m_optView->setAlternatingRowColors(true);
  m_optView->setWordWrap(false);
  m_optView->verticalHeader()->hide();
  m_optView->verticalHeader()->setDefaultSectionSize(m_optView->fontMetrics().height() + 6);
  m_optView->horizontalHeader()->setStretchLastSection(true);
  // A click on an exp_avg_sq column inspects exp_avg_sq, anywhere else exp_avg.
  followSelection(m_optView, [](const QModelIndex& i) {
    const auto role = OptimizerModel::isSquareColumn(i.column())
                          ? OptimizerModel::Role::ExpAvgSqTensor
                          : OptimizerModel::Role::ExpAvgTensor;
    return i.data(int(role)).toInt();
  });
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(m_optHeading);
  layout->addWidget(m_optView, 1);
  return page;
}

void InspectorWidget::followSelection(QAbstractItemView* view,
                                      std::function<int(const QModelIndex&)> tensorOf) {
  // Only what the person picks changes the Tensor tab's subject: a click
  // (also on the row already current) or moving the selection with the
  // keyboard. A view that merely gets focus sets a current row without
  // selecting it (NoUpdate): that must not replace the tensor shown.
  auto show = [this, tensorOf](const QModelIndex& index) {
    if (!index.isValid()) return;
    const int t = tensorOf(index);
    if (t >= 0) inspectTensor(t);
  };
  connect(view, &QAbstractItemView::clicked, this, show);
  connect(view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          [view, show](const QItemSelection& selected) {
            if (selected.isEmpty()) return;
            const QModelIndex current = view->selectionModel()->currentIndex();
            show(current.isValid() && selected.contains(current) ? current
                                                                 : selected.indexes().front());
          });
}

void InspectorWidget::clearTabs() {
  m_optJob.drop();  // statistics of a file no longer shown are not wanted
  m_optStarted = m_optDone = false;
  m_file.reset();
  m_optimizerFile.reset();
  m_remote.reset();
  m_tensorNames.clear();
  m_metadata->setTree(nullptr);
  m_params->setTree(nullptr);
  m_paramHeading->clear();
  m_optimizer->setRows({});
  m_optHeading->setText(tr("No optimizer state"));
  m_tensorView->setFile(nullptr);
  m_shardView->setListing(nullptr);
}

// The Shards tab stays current from one sharded checkpoint to the next; a
// file without it goes back to the Summary (not to whichever tab is next).
void InspectorWidget::showShardsTab(bool shown) {
  if (!shown && m_tabs->currentIndex() == int(Tab::Shards)) setCurrentTab(Tab::Summary);
  m_tabs->setTabVisible(int(Tab::Shards), shown);
}

void InspectorWidget::showMessage(const QString& title, const QString& html) {
  clearTabs();
  showShardsTab(false);
  m_summary->showMessage(title, html);
}

void InspectorWidget::showSummary(const CheckpointSummary& s) {
  clearTabs();
  m_summary->showSummary(s);
  if (!s.ok()) {
    showShardsTab(false);
    return;
  }
  m_file = s.file;
  m_optimizerFile = s.optimizerFile ? s.optimizerFile : s.file;
  m_tensorNames.resize(s.tensors.size());
  for (size_t i = 0; i < s.tensors.size(); ++i) m_tensorNames[i] = s.tensors[i].name;
  m_metadata->setTree(s.metaTree);
  m_metaView->expandToDepth(0);
  m_metaView->resizeColumnToContents(0);

  if (s.paramTree) collectLeaves(*s.paramTree, m_tensorNames);
  m_params->setTree(s.paramTree);
  if (s.paramTree) {
    m_paramHeading->setText(
        tr("%1 parameters, %2 (tied weights counted once)")
            .arg(groupedNumber(s.paramTree->parameters), sizeText(s.paramTree->bytes)));
    m_paramView->expandToDepth(0);
    for (int c = 0; c < int(ParameterModel::Column::Tied); ++c)
      m_paramView->resizeColumnToContents(c);
    m_paramView->setColumnWidth(0, std::max(m_paramView->columnWidth(0), 220));
  } else {
    m_paramHeading->setText(tr("No model state found"));
  }
  setParameterFilter(m_paramSearch->text());

  // Optimizer tensors of another file (a Trainer's optimizer.pt) are not
  // rows of this file's tensor table.
  if (!s.optimizerFile) {
    for (const OptimizerRow& r : s.optimizer) {
      const QString owner = r.name.isEmpty() ? tr("state %1").arg(r.index) : r.name;
      if (r.expAvg >= 0 && size_t(r.expAvg) < m_tensorNames.size())
        m_tensorNames[size_t(r.expAvg)] = tr("exp_avg of %1").arg(owner);
      if (r.expAvgSq >= 0 && size_t(r.expAvgSq) < m_tensorNames.size())
        m_tensorNames[size_t(r.expAvgSq)] = tr("exp_avg_sq of %1").arg(owner);
    }
  }
  m_optimizer->setRows(s.optimizer);
  m_optHeading->setText(s.optimizer.empty()
                            ? tr("No optimizer state")
                            : tr("%1 parameters with Adam state").arg(s.optimizer.size()));
  for (int c = 0; c < int(OptimizerModel::Column::AvgNorm); ++c)
    m_optView->resizeColumnToContents(c);
  m_optView->setColumnWidth(0, std::min(m_optView->columnWidth(0), 320));
  m_tensorView->setFile(s.file);
  if (s.remote) {
    m_remote = s.remote;
    m_tensorView->setRemote(s.remote);
  }
  // A checkpoint written by many ranks, here or on a host (its agent's `shards`).
  if (s.shards)
    m_shardView->setListing(s.shards);
  else if (!s.shardsProblem.isEmpty())
    m_shardView->showProblem(s.shardsProblem);
  else
    m_shardView->setListing(nullptr);
  showShardsTab(s.shards || !s.shardsProblem.isEmpty());
  if (m_tabs->currentIndex() == int(Tab::Optimizer)) computeOptimizerStats();
}

QString InspectorWidget::shownPath() const {
  return m_summary->shownPath();
}
QString InspectorWidget::text() const {
  return m_summary->text();
}
TensorTableModel* InspectorWidget::tensorModel() const {
  return m_summary->tensorModel();
}

void InspectorWidget::setCurrentTab(Tab tab) {
  m_tabs->setCurrentIndex(int(tab));
}

void InspectorWidget::setParameterFilter(const QString& text) {
  if (m_paramSearch->text() != text) m_paramSearch->setText(text);  // comes back here once
  m_paramProxy->setFilterFixedString(text);
  if (!text.isEmpty()) m_paramView->expandAll();
}

QString InspectorWidget::tensorName(int index) const {
  return index >= 0 && size_t(index) < m_tensorNames.size() ? m_tensorNames[size_t(index)]
                                                            : QString();
}

void InspectorWidget::inspectTensor(int index) {
  if (!m_file && !m_remote) return;
  m_tensorView->showTensor(index, tensorName(index));
}

void InspectorWidget::computeOptimizerStats() {
  if ((!m_optimizerFile && !(m_remote && m_remote->stats)) || m_optStarted ||
      m_optimizer->rows().empty())
    return;
  m_optStarted = true;
  StatsOf statsOf;
  if (m_optimizerFile) {
    statsOf = [file = m_optimizerFile](int tensor, JobProgress& progress) {
      return computeStats(file->tensorData(size_t(tensor)),
                          [&progress](uint64_t, uint64_t) { return !progress.cancelled(); });
    };
  } else {
    // On the host: the agent's `stats` of each exp_avg / exp_avg_sq (a request each).
    statsOf = [remote = m_remote](int tensor, JobProgress& progress) {
      return std::optional<TensorStats>(remote->stats(tensor, progress));
    };
  }
  m_optHeading->setText(
      tr("%1 parameters with Adam state; computing exp_avg / exp_avg_sq statistics%2...")
          .arg(m_optimizer->rows().size())
          .arg(m_optimizerFile ? QString() : tr(" on the host")));
  m_optJob.start([statsOf = std::move(statsOf), rows = m_optimizer->rows()](
                     JobProgress& progress) { return optimizerStats(statsOf, rows, progress); },
                 [this](JobOutcome outcome, std::optional<std::vector<OptimizerModel::Stats>> stats,
                        const QString&) {
                   if (outcome == JobOutcome::Done && stats) onOptimizerStats(std::move(*stats));
                 });
}

void InspectorWidget::onOptimizerStats(std::vector<OptimizerModel::Stats> stats) {
  if (stats.size() != m_optimizer->rows().size()) return;
  m_optimizer->setStats(std::move(stats));
  m_optDone = true;
  m_optHeading->setText(tr("%1 parameters with Adam state (m = exp_avg, v = exp_avg_sq; statistics "
                           "over finite values)")
                            .arg(m_optimizer->rows().size()));
  for (int c = int(OptimizerModel::Column::AvgNorm); c < int(OptimizerModel::Column::Note); ++c)
    m_optView->resizeColumnToContents(c);
  emit optimizerStatsReady();
}

}  // namespace ckpt
