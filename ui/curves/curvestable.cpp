// CurvesView's runs table: built by the core (ckpt::buildRunsTable, as
// `ckptscope-cli runs` builds it) from a summary of each run, for the metric
// the chart shows and grouped as the chart is; the chart then draws only
// the runs the table's filter keeps (and groups those alone).
#include <qcustomplot.h>
#include <QHash>
#include <QScopeGuard>
#include <QTableView>
#include <stdexcept>

#include "ckpt/index/run_filter.h"
#include "curves/curverun.h"
#include "curves/curvesview.h"
#include "curves/runstable.h"
#include "textformat.h"

namespace ckpt {

RunSummary summarizeCurveRun(const CurveRun& run) {
  RunSummary s;
  s.name = pathToStd(run.name);
  s.path = pathToStd(run.path);
  s.hparams = run.hparams;
  for (const auto& [metric, series] : run.series)
    s.metrics[metric] = summarizeMetric(series.points);
  for (const auto& [step, file] : run.checkpointFiles) {
    CheckpointMarker m;
    m.step = step;
    m.path = pathToStd(file);
    s.markers.push_back(std::move(m));
  }
  return s;
}

bool CurvesView::keptByFilter(size_t run) const {
  return m_kept.empty() || (run < m_kept.size() && m_kept[run]);
}

void CurvesView::updateRunsTable() {
  // Not while runs are read (it is built once they all are), nor from the
  // rebuildGraphs() it calls itself when the filter keeps other runs.
  if (m_updatingTable || m_loadPending) return;
  m_updatingTable = true;
  const auto done = qScopeGuard([this] { m_updatingTable = false; });
  m_tableTimer.stop();

  RunsTableOptions options;
  options.metric = pathToStd(m_metric);
  const bool grouped = groupingActive();
  if (grouped) {
    try {
      options.group = parseGroupSpec(pathToStd(m_groupBy));
    } catch (const std::invalid_argument&) {
      options.group = {};  // the box offers valid ones only
    }
  }
  options.filter = pathToStd(m_runsTable->filterText());
  options.sort = pathToStd(m_runsTable->sortKey());

  QString filterError;
  const auto build = [&] {
    // A group's row is the chart's group line (its mean, computed once for
    // both); a group the chart draws as its run alone is computed from that
    // run's points, lent to the summaries for the build and given back,
    // not copied (a sweep's metric is 160 MB of values). All on this
    // thread: nothing reads them meanwhile.
    options.groupStats.clear();
    const std::string& metric = options.metric;
    if (options.group.by != GroupSpec::By::None) {
      // Not on the relative step axis: the chart's lines are aligned by
      // relative step there, and the table's step of the best is a step.
      for (const GroupPlot& gp : m_groups) {
        if (!gp.line || m_axis != CurveAxis::Step) continue;
        GroupStats& st = options.groupStats[pathToStd(gp.label)];
        st.steps = gp.steps;
        st.runs = gp.counts;
        st.mean = gp.mean;
      }
      for (size_t i = 0; i < m_runs.size(); ++i)
        if (const auto it = m_runs[i].series.find(metric); it != m_runs[i].series.end())
          m_summaries[i].curves[metric] = std::move(it->second.points);
    }
    const auto giveBack = qScopeGuard([&] {
      for (size_t i = 0; i < m_summaries.size(); ++i) {
        const auto lent = m_summaries[i].curves.find(metric);
        if (lent == m_summaries[i].curves.end()) continue;
        m_runs[i].series[metric].points = std::move(lent->second);
        m_summaries[i].curves.erase(lent);
      }
    });
    // A filter that does not apply (a typo, a name these runs lack) filters
    // nothing: every run is shown with the error above them. A remembered
    // sort by a hyperparameter these runs lack sorts by name.
    filterError.clear();
    for (int attempt = 0; attempt < 3; ++attempt) {
      try {
        return buildRunsTable(m_summaries, options);
      } catch (const FilterError& e) {
        filterError = fromStd(e.what());
        options.filter.clear();
      } catch (const std::invalid_argument& e) {
        if (options.sort.empty()) {  // no metric to show: an empty table, and why
          filterError = fromStd(e.what());
          break;
        }
        options.sort.clear();
      } catch (const std::exception& e) {
        filterError = fromStd(e.what());
        break;
      }
    }
    return RunsTable{};
  };
  const std::string filter = options.filter, sort = options.sort;
  RunsTable table = build();

  // The runs the filter keeps, by name (a group's row lists its runs).
  std::vector<bool> kept;
  if (table.runsShown < table.runsTotal) {
    QHash<QString, size_t> index;
    for (size_t i = 0; i < m_runs.size(); ++i) index.insert(m_runs[i].name, i);
    kept.assign(m_runs.size(), false);
    for (const RunsTableRow& row : table.rows) {
      if (row.runs.empty()) {
        if (const auto it = index.constFind(fromStd(row.name)); it != index.cend())
          kept[*it] = true;
      }
      for (const std::string& run : row.runs)
        if (const auto it = index.constFind(fromStd(run)); it != index.cend()) kept[*it] = true;
    }
  }
  if (kept != m_kept) {
    m_kept = std::move(kept);
    if (groupingActive()) {
      rebuildGraphs();  // other groups: their lines, and their runs' colours
      // The groups' rows again, from the chart's new group lines.
      options.filter = filter;
      options.sort = sort;
      table = build();
    } else {
      // The runs' graphs stay; those the filter drops are hidden (drawing
      // every run again took seconds for 1,000 runs).
      computeGroups();
      applyVisibility();
      rebuildLegend();
      refreshHighlight();
    }
    updateStatus();
    fitToData();
    m_plot->replot();
  }
  m_runsTable->setTable(std::move(table), options.group.by != GroupSpec::By::None, filterError);
  m_runsTable->setHighlightedRow(tableRowOf(m_highlight));
}

LegendKey CurvesView::keyOfTableRow(int row) const {
  const RunsTableModel* model = m_runsTable->model();
  if (row < 0 || row >= model->rowCount()) return {};
  const RunsTableRow& r = model->row(row);
  if (!model->grouped()) return {false, runIndex(fromStd(r.name))};
  // A group of one run is drawn as that run.
  const int g = groupIndex(fromStd(r.name));
  if (g >= 0 && m_groups[size_t(g)].line) return {true, g};
  if (r.runs.size() == 1) return {false, runIndex(fromStd(r.runs.front()))};
  return {};
}

int CurvesView::tableRowOf(const LegendKey& key) const {
  if (key.index < 0) return -1;
  const RunsTableModel* model = m_runsTable->model();
  for (int row = 0; row < model->rowCount(); ++row)
    if (keyOfTableRow(row) == key) return row;
  // A run of an expanded group: its group's row.
  if (!key.group && model->grouped() && size_t(key.index) < m_groupOf.size() &&
      m_groupOf[size_t(key.index)] != kNoGroup)
    return tableRowOf({true, int(m_groupOf[size_t(key.index)])});
  return -1;
}

}  // namespace ckpt
