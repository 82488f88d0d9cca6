// CurvesView's groups: runs grouped by a hyperparameter, by all but the
// seed, or by their name without its number (ckpt::groupRuns); a group of
// two runs or more drawn as one line (mean or median) with a band
// (ckpt::groupStatistics on the raw points aligned by step, or by relative
// step on that axis), coloured by
// group, its runs drawn when its legend row is expanded. And the legend
// beside the chart, with hover highlighting both ways.
#include <qcustomplot.h>
#include <QComboBox>
#include <QSignalBlocker>
#include <QTreeWidget>
#include <QtConcurrent/QtConcurrentMap>
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <span>
#include <tuple>

#include "ckpt/index/hparams.h"
#include "ckpt/index/run_groups.h"
#include "curves/curvedrawing.h"
#include "curves/curvesview.h"
#include "curves/runstable.h"
#include "plotstyle.h"
#include "textformat.h"

namespace ckpt {
namespace {

constexpr int kBandAlpha = 45;

// What a group's legend row says. The legend is narrow: "learning_rate=
// 0.001, warmup_steps=(none) (4 runs)" showed as "learning_r...(4 runs)".
// The keys the group lacks ("warmup_steps=(none)") are left out, and the
// first key, the same in every label (groupRuns writes the keys in one
// order), is the legend's heading: the row starts with its value
// ("0.001"). Labels of two groups stay apart: their key=value lists
// differ. The whole label is the row's tooltip.
struct LegendText {
  QString heading;  // the first key, or empty (name patterns, no grouping)
  QString row(const QString& label) const {
    QStringList kept;
    for (const QString& part : label.split(QStringLiteral(", ")))
      if (!part.endsWith(QStringLiteral("=(none)"))) kept << part;
    QString text = kept.isEmpty() ? label : kept.join(QStringLiteral(", "));
    const QString prefix = heading + QLatin1Char('=');
    if (!heading.isEmpty() && text.startsWith(prefix)) text.remove(0, prefix.size());
    return text;
  }
};

LegendText legendText(const QString& groupBy, const QStringList& labels) {
  LegendText t;
  GroupSpec spec;
  try {
    spec = parseGroupSpec(pathToStd(groupBy));
  } catch (const std::invalid_argument&) {
    return t;
  }
  if (spec.by != GroupSpec::By::Key && spec.by != GroupSpec::By::AllBut) return t;
  for (const QString& label : labels) {
    const QString key = label.section(QLatin1Char('='), 0, 0);
    if (key == label || (!t.heading.isEmpty() && key != t.heading)) return {};
    t.heading = key;
  }
  return t;
}

}  // namespace

bool CurvesView::groupingActive() const {
  // Not while runs are still read: the groups form once all are there.
  return m_groupBy != QLatin1String("none") && stepAxis() && !m_loadPending;
}

bool CurvesView::foldedInGroup(size_t run) const {
  if (!groupingActive() || run >= m_groupOf.size() || m_groupOf[run] == kNoGroup) return false;
  const GroupPlot& gp = m_groups[m_groupOf[run]];
  return gp.runs.size() >= 2 && !gp.expanded;  // fillGroups draws such a group as a line
}

void CurvesView::computeGroups() {
  // The runs the table's filter keeps: a group's statistics are of those.
  std::vector<GroupableRun> runs;
  std::vector<size_t> members;
  runs.reserve(m_runs.size());
  for (size_t i = 0; i < m_runs.size(); ++i) {
    if (!keptByFilter(i)) continue;
    runs.push_back({pathToStd(m_runs[i].name), m_runs[i].hparams});
    members.push_back(i);
  }
  GroupSpec spec;
  if (groupingActive()) {
    try {
      spec = parseGroupSpec(pathToStd(m_groupBy));
    } catch (const std::invalid_argument&) {
      spec = {};  // the box offers valid ones only
    }
  }
  // A group hidden or expanded stays so (by label) when it is formed again.
  std::map<QString, std::pair<bool, bool>> kept;
  for (const GroupPlot& gp : m_groups) kept[gp.label] = {gp.visible, gp.expanded};
  m_groups.clear();
  m_groupOf.assign(m_runs.size(), kNoGroup);
  for (const RunGroup& g : groupRuns(runs, spec)) {
    GroupPlot gp;
    gp.label = fromStd(g.label);
    if (const auto it = kept.find(gp.label); it != kept.end())
      std::tie(gp.visible, gp.expanded) = it->second;
    for (size_t r : g.runs) {
      gp.runs.push_back(members[r]);
      m_groupOf[members[r]] = m_groups.size();
    }
    m_groups.push_back(std::move(gp));
  }
}

QColor CurvesView::runColour(size_t index) const {
  // By group when grouped (a group's runs share its colour), else by run.
  if (groupingActive() && index < m_groupOf.size() && m_groupOf[index] != kNoGroup)
    return seriesColour(m_groupOf[index]);
  return seriesColour(index);
}

void CurvesView::fillGroups() {
  const std::string metric = pathToStd(m_metric);
  const Smoothing smoothing = smoothingParameters();
  for (size_t g = 0; g < m_groups.size(); ++g) {
    GroupPlot& gp = m_groups[g];
    if (!groupingActive() || gp.runs.size() < 2) continue;
    std::vector<const SeriesPoints*> series;
    std::vector<int64_t> origins;  // relative step: each run aligned on its first step
    for (size_t r : gp.runs)
      if (const MetricSeries* s = m_runs[r].find(metric); s && !s->points.empty()) {
        series.push_back(&s->points);
        origins.push_back(m_axis == CurveAxis::RelativeStep ? m_runs[r].firstStep.value_or(0) : 0);
      }
    if (series.empty()) continue;
    // Only what is drawn: the line, its band's edges, and the mean (the
    // runs table's); in blocks of steps on the thread pool.
    GroupStatsOptions wanted;
    wanted.stdev = m_groupBand == GroupBand::Std;
    wanted.minMax = m_groupBand == GroupBand::MinMax;
    wanted.median = m_groupLine == GroupLine::Median;
    wanted.percentiles = m_groupBand == GroupBand::Percentiles;
    wanted.forEach = [](size_t n, const std::function<void(size_t)>& work) {
      std::vector<size_t> blocks(n);
      std::iota(blocks.begin(), blocks.end(), size_t(0));
      QtConcurrent::blockingMap(blocks, [&work](size_t b) { work(b); });
    };
    const GroupStats st = groupStatistics(series, 25, 75, origins, wanted);
    gp.steps = st.steps;
    gp.counts = st.runs;
    gp.xs.assign(st.steps.begin(), st.steps.end());
    gp.rawLine = m_groupLine == GroupLine::Mean ? st.mean : st.median;
    gp.mean = st.mean;
    std::vector<double> low, high;
    if (m_groupBand == GroupBand::MinMax) {
      low = st.min;
      high = st.max;
    } else if (m_groupBand == GroupBand::Percentiles) {
      low = st.low;
      high = st.high;
    } else {
      low.resize(st.mean.size());
      high.resize(st.mean.size());
      for (size_t i = 0; i < st.mean.size(); ++i) {
        low[i] = st.mean[i] - st.stdev[i];
        high[i] = st.mean[i] + st.stdev[i];
      }
    }
    // The line and the band's edges smoothed as the runs are (on the
    // group's steps), so the band stays around its line.
    auto smooth = [&](const std::vector<double>& ys) {
      if (smoothing.method == SmoothingMethod::None) return ys;
      try {
        return smoothCurve(gp.xs, ys, smoothing);
      } catch (const std::invalid_argument&) {
        return ys;
      }
    };
    gp.lineYs = smooth(gp.rawLine);
    gp.lowYs = smooth(low);
    gp.highYs = smooth(high);

    const QColor colour = seriesColour(g);
    QColor fill = colour;
    fill.setAlpha(kBandAlpha);
    gp.low = m_plot->addGraph();
    gp.low->setName(gp.label + tr(" (band low)"));
    gp.low->setPen(Qt::NoPen);
    gp.high = m_plot->addGraph();
    gp.high->setName(gp.label + tr(" (band high)"));
    gp.high->setPen(Qt::NoPen);
    gp.high->setBrush(fill);
    gp.high->setChannelFillGraph(gp.low);
    gp.line = m_plot->addGraph();
    gp.line->setName(gp.label);
    gp.line->setPen(QPen(colour, 2.5));
    for (QCPGraph* graph : {gp.low, gp.high, gp.line}) {
      graph->setSelectable(QCP::stNone);
      graph->removeFromLegend();
    }
    drawGroup(gp);
  }
}

void CurvesView::refillGroups() {
  for (GroupPlot& gp : m_groups) {
    for (QCPGraph* g : {gp.line, gp.low, gp.high})
      if (g) m_plot->removeGraph(g);
    gp.line = gp.low = gp.high = nullptr;
  }
  fillGroups();
  applyVisibility();
  refreshHighlight();
}

void CurvesView::drawGroup(GroupPlot& gp) {
  if (!gp.line) return;
  gp.drawn = viewNow();
  const auto [lower, upper, pixels] = gp.drawn;
  showDecimated(gp.line, gp.xs, gp.lineYs, lower, upper, pixels);
  showDecimated(gp.low, gp.xs, gp.lowYs, lower, upper, pixels);
  showDecimated(gp.high, gp.xs, gp.highYs, lower, upper, pixels);
}

void CurvesView::applyVisibility() {
  const bool grouped = groupingActive();
  size_t shownRuns = 0;
  for (size_t i = 0; i < m_plots.size(); ++i) {
    RunPlot& rp = m_plots[i];
    if (!rp.smoothed) continue;
    const GroupPlot* gp =
        i < m_groupOf.size() && m_groupOf[i] != kNoGroup ? &m_groups[m_groupOf[i]] : nullptr;
    const bool inLine = grouped && gp && gp->line;  // drawn as its group's line
    const bool shown =
        keptByFilter(i) && rp.visible && (!gp || gp->visible) && (!inLine || gp->expanded);
    rp.smoothed->setVisible(shown);
    rp.raw->setVisible(shown && effectiveSmoothing() > 0);
    rp.markers->setVisible(shown);
    rp.bare->setVisible(shown);
    shownRuns += shown ? 1 : 0;
  }
  // Many runs drawn apart are drawn with thin lines: a 2 px antialiased
  // line costs the painter several times a 1 px one (1,000 runs: 4.1 s a
  // repaint against 0.3-0.7 s), and a thousand of them are a blob anyway.
  // The run under the mouse is drawn thick (the highlight) either way.
  const qreal width = shownRuns > kThinLinesAbove ? 1 : 2;
  for (RunPlot& rp : m_plots)
    if (rp.smoothed && rp.smoothed->pen().widthF() != width) {
      QPen pen = rp.smoothed->pen();
      pen.setWidthF(width);
      rp.smoothed->setPen(pen);
    }
  for (GroupPlot& gp : m_groups)
    for (QCPGraph* g : {gp.line, gp.low, gp.high})
      if (g) g->setVisible(gp.visible);
  redrawIfViewChanged();  // hidden curves are not decimated on zoom
}

void CurvesView::updateGroupChoices() {
  std::vector<const Hparams*> all;
  bool seed = false;
  for (const CurveRun& r : m_runs) {
    all.push_back(&r.hparams);
    seed = seed || r.hparams.count("seed");
  }
  const std::vector<std::string> keys = differingKeys(all);
  const QSignalBlocker block(m_groupBox);
  m_groupBox->clear();
  m_groupBox->addItem(tr("None"), QStringLiteral("none"));
  if (seed) m_groupBox->addItem(tr("All but seed"), QStringLiteral("all-but"));
  m_groupBox->addItem(tr("Name without its number"), QStringLiteral("name"));
  for (const std::string& k : keys) m_groupBox->addItem(fromStd(k), fromStd(k));
  if (!m_groupChosen && !m_savedGroupBy.isEmpty() && m_groupBox->findData(m_savedGroupBy) >= 0) {
    m_groupBy = m_savedGroupBy;  // the choice of an earlier start, which these runs offer
  } else if (!m_groupChosen) {
    // Seeds of one setting are grouped; a run and its resumed branches
    // (one config, one seed) are each their own line.
    std::vector<GroupableRun> groupable;
    if (seed)
      for (const CurveRun& r : m_runs) groupable.push_back({pathToStd(r.name), r.hparams});
    m_groupBy =
        seed && hasReplicates(groupable) ? QStringLiteral("all-but") : QStringLiteral("none");
  }
  int at = m_groupBox->findData(m_groupBy);
  if (at < 0) {  // a key these runs lack: kept, shown as typed
    m_groupBox->addItem(m_groupBy, m_groupBy);
    at = m_groupBox->count() - 1;
  }
  m_groupBox->setCurrentIndex(at);
}

void CurvesView::setGroupBy(const QString& spec) {
  m_groupChosen = true;
  {
    const QSignalBlocker block(m_groupBox);
    const int at = m_groupBox->findData(spec);
    if (at >= 0) m_groupBox->setCurrentIndex(at);
  }
  if (spec == m_groupBy) return;
  m_groupBy = spec;
  rebuildGraphs();
  fitToData();
  m_plot->replot();
}

void CurvesView::setGroupLine(GroupLine line) {
  {
    const QSignalBlocker block(m_groupLineBox);
    m_groupLineBox->setCurrentIndex(int(line));
  }
  if (line == m_groupLine) return;
  m_groupLine = line;
  rebuildGraphs();
  m_plot->replot();
}

void CurvesView::setGroupBand(GroupBand band) {
  {
    const QSignalBlocker block(m_groupBandBox);
    m_groupBandBox->setCurrentIndex(int(band));
  }
  if (band == m_groupBand) return;
  m_groupBand = band;
  rebuildGraphs();
  m_plot->replot();
}

int CurvesView::groupIndex(const QString& label) const {
  for (size_t g = 0; g < m_groups.size(); ++g)
    if (m_groups[g].label == label) return int(g);
  return -1;
}

QStringList CurvesView::groupLabels() const {
  QStringList out;
  for (const GroupPlot& gp : m_groups)
    if (gp.line) out << gp.label;
  return out;
}

QCPGraph* CurvesView::groupLine(const QString& label) const {
  const int g = groupIndex(label);
  return g < 0 ? nullptr : m_groups[size_t(g)].line;
}

std::pair<QCPGraph*, QCPGraph*> CurvesView::groupBandGraphs(const QString& label) const {
  const int g = groupIndex(label);
  if (g < 0) return {};
  return {m_groups[size_t(g)].low, m_groups[size_t(g)].high};
}

std::vector<int> CurvesView::groupRunCounts(const QString& label) const {
  const int g = groupIndex(label);
  return g < 0 ? std::vector<int>{} : m_groups[size_t(g)].counts;
}

void CurvesView::setGroupExpanded(const QString& label, bool expanded) {
  const int g = groupIndex(label);
  if (g < 0) return;
  m_groups[size_t(g)].expanded = expanded;
  if (QTreeWidgetItem* row = m_legend->item({true, g})) {
    const QSignalBlocker block(m_legend->tree());
    row->setExpanded(expanded);
  }
  // Its runs' own curves are made when it opens and dropped when it closes.
  for (size_t r : m_groups[size_t(g)].runs) fillRun(r);
  applyVisibility();
  m_plot->replot();
}

void CurvesView::rebuildLegend() {
  std::vector<LegendEntry> entries;
  entries.reserve(m_groups.size());
  auto runEntry = [this](size_t r) {
    LegendEntry e;
    e.key = {false, int(r)};
    e.label = m_runs[r].name;
    e.colour = runColour(r);
    e.visible = m_plots[r].visible;
    return e;
  };
  QStringList labels;
  for (const GroupPlot& gp : m_groups)
    if (gp.line) labels << gp.label;
  const LegendText text = legendText(m_groupBy, labels);
  for (size_t g = 0; g < m_groups.size(); ++g) {
    const GroupPlot& gp = m_groups[g];
    if (!gp.line) {
      // Runs drawn one by one (a group of one, or no grouping).
      for (size_t r : gp.runs)
        if (m_plots[r].smoothed) entries.push_back(runEntry(r));
      continue;
    }
    LegendEntry e;
    e.key = {true, int(g)};
    const QString runs = countText(gp.runs.size(), "run", "runs");
    e.label = tr("%1 (%2)").arg(text.row(gp.label), runs);
    e.toolTip = tr("%1 (%2)").arg(gp.label, runs);
    e.colour = seriesColour(g);
    e.visible = gp.visible;
    e.expanded = gp.expanded;
    for (size_t r : gp.runs) e.children.push_back(runEntry(r));
    entries.push_back(std::move(e));
  }
  m_legend->setEntries(entries, text.heading);
}

void CurvesView::onLegendToggled(const LegendKey& key, bool visible) {
  if (key.group) {
    if (key.index < 0 || size_t(key.index) >= m_groups.size()) return;
    m_groups[size_t(key.index)].visible = visible;
    applyVisibility();
    m_plot->replot();
  } else if (key.index >= 0 && size_t(key.index) < m_runs.size()) {
    setRunVisible(m_runs[size_t(key.index)].name, visible);
  }
}

void CurvesView::onLegendExpanded(const LegendKey& key, bool expanded) {
  if (!key.group || key.index < 0 || size_t(key.index) >= m_groups.size()) return;
  setGroupExpanded(m_groups[size_t(key.index)].label, expanded);
}

void CurvesView::setHighlight(const LegendKey& key) {
  if (key == m_highlight) return;
  m_highlight = key;
  m_legend->setHighlighted(key);
  m_runsTable->setHighlightedRow(tableRowOf(key));
  refreshHighlight();
  m_plot->layer("overlay")->replot();
}

void CurvesView::refreshHighlight() {
  const LegendKey& key = m_highlight;
  const QCPGraph* source = nullptr;
  if (key.group && key.index >= 0 && size_t(key.index) < m_groups.size())
    source = m_groups[size_t(key.index)].line;
  else if (!key.group && key.index >= 0 && size_t(key.index) < m_plots.size())
    source = m_plots[size_t(key.index)].smoothed;
  if (source && source->visible()) {
    QVector<double> keys, values;
    for (auto it = source->data()->constBegin(); it != source->data()->constEnd(); ++it) {
      keys << it->key;
      values << it->value;
    }
    m_highlightCurve->setData(keys, values);
    QPen pen = source->pen();
    pen.setWidthF(pen.widthF() + 2.5);
    m_highlightCurve->setPen(pen);
    m_highlightCurve->setVisible(true);
  } else {
    m_highlightCurve->setVisible(false);
  }
}

LegendKey CurvesView::curveAt(const QPointF& pos) const {
  constexpr double kHitPixels = 6;
  const double key = m_plot->xAxis->pixelToCoord(pos.x());
  double best = kHitPixels;
  LegendKey found;
  // The curve's height at the mouse's x, on the straight line between the
  // points either side (what is drawn there).
  auto distance = [&](const std::vector<double>& xs, const std::vector<double>& ys) {
    if (xs.empty()) return qInf();
    auto it = std::lower_bound(xs.begin(), xs.end(), key);
    double y;
    if (it == xs.begin() || it == xs.end()) {
      if (it == xs.end()) --it;
      if (std::abs(m_plot->xAxis->coordToPixel(*it) - pos.x()) > kHitPixels) return qInf();
      y = ys[size_t(it - xs.begin())];
    } else {
      const size_t j = size_t(it - xs.begin());
      const double t = (key - xs[j - 1]) / (xs[j] - xs[j - 1]);
      y = ys[j - 1] + t * (ys[j] - ys[j - 1]);
    }
    const double d = std::abs(m_plot->yAxis->coordToPixel(y) - pos.y());
    return std::isfinite(d) ? d : qInf();
  };
  for (size_t i = 0; i < m_plots.size(); ++i) {
    const RunPlot& rp = m_plots[i];
    if (!rp.smoothed || !rp.smoothed->visible()) continue;
    if (const double d = distance(rp.xs, rp.smoothYs); d < best) {
      best = d;
      found = {false, int(i)};
    }
  }
  for (size_t g = 0; g < m_groups.size(); ++g) {
    const GroupPlot& gp = m_groups[g];
    if (!gp.line || !gp.line->visible()) continue;
    if (const double d = distance(gp.xs, gp.lineYs); d < best) {
      best = d;
      found = {true, int(g)};
    }
  }
  return found;
}

}  // namespace ckpt
