// The Curves tab's controls: the metric, axis, smoothing and group rows
// above the chart, the chart and its legend in a splitter, the runs table
// and the status line (CurvesView::buildControls; split from curvesview.cpp
// by concern).
#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSettings>
#include <QSlider>
#include <QSplitter>
#include <QVBoxLayout>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "curves/curveslegend.h"
#include "curves/curvesview.h"
#include "curves/runstable.h"

namespace ckpt {
namespace {

// The person's choices on the tab, remembered (QSettings) when they make
// them with the controls, and shown again by the next view: the next start
// of the app (restoreChartSettings). Set from code (a test, another view)
// they are not remembered. Choices are saved by name, not by their row in a
// box, so that a box reordered or grown later reads an old file alike.
constexpr const char* kSmoothingKey = "curves/smoothing";              // 0 .. 0.99
constexpr const char* kSmoothingMethodKey = "curves/smoothingMethod";  // smoothingMethodName()
constexpr const char* kXAxisKey = "curves/xAxis";                      // kAxisNames
constexpr const char* kLogScaleKey = "curves/logScale";                // true, false
constexpr const char* kGroupLineKey = "curves/groupLine";              // kGroupLineNames
constexpr const char* kGroupBandKey = "curves/groupBand";              // kGroupBandNames
// The metric and the grouping are names the runs of the next open may not
// have: they are used when they do, else the default is (updateMetricChoices,
// updateGroupChoices).
constexpr const char* kMetricKey = "curves/metric";    // a metric's name
constexpr const char* kGroupByKey = "curves/groupBy";  // parseGroupSpec's text
// The splitters' sizes in pixels, "chart,legend" and "chart,table".
constexpr const char* kChartSplitterKey = "curves/chartSplitter";
constexpr const char* kTableSplitterKey = "curves/tableSplitter";

constexpr std::pair<CurveAxis, const char*> kAxisNames[] = {
    {CurveAxis::Step, "step"},
    {CurveAxis::RelativeStep, "relative-step"},
    {CurveAxis::Tokens, "tokens"},
    {CurveAxis::WallTime, "wall-time"},
    {CurveAxis::RelativeTime, "relative-time"}};
constexpr std::pair<CurvesView::GroupLine, const char*> kGroupLineNames[] = {
    {CurvesView::GroupLine::Mean, "mean"}, {CurvesView::GroupLine::Median, "median"}};
constexpr std::pair<CurvesView::GroupBand, const char*> kGroupBandNames[] = {
    {CurvesView::GroupBand::MinMax, "min-max"},
    {CurvesView::GroupBand::Std, "std"},
    {CurvesView::GroupBand::Percentiles, "percentiles"}};

template <typename E, size_t N>
QString nameOf(const std::pair<E, const char*> (&names)[N], E value) {
  for (const auto& [v, name] : names)
    if (v == value) return QString::fromLatin1(name);
  return {};
}

// The choice saved under `key`; nothing when it is missing or not one of `names`.
template <typename E, size_t N>
std::optional<E> savedChoice(const QSettings& settings, const char* key,
                             const std::pair<E, const char*> (&names)[N]) {
  const QString saved = settings.value(key).toString();
  for (const auto& [v, name] : names)
    if (saved == QLatin1String(name)) return v;
  return std::nullopt;
}

// Sizes saved as "680,240": two panes, each at least a pixel and at most
// a large screen's width (a damaged file must not ask for a giant pane).
QString sizesText(const QList<int>& sizes) {
  QStringList parts;
  for (int s : sizes) parts << QString::number(s);
  return parts.join(QLatin1Char(','));
}

std::optional<QList<int>> savedSizes(const QSettings& settings, const char* key) {
  const QVariant v = settings.value(key);
  if (v.typeId() != QMetaType::QString) return std::nullopt;
  const QStringList parts = v.toString().split(QLatin1Char(','));
  if (parts.size() != 2) return std::nullopt;
  QList<int> sizes;
  for (const QString& part : parts) {
    bool ok = false;
    const int n = part.trimmed().toInt(&ok);
    if (!ok || n < 1 || n > 20000) return std::nullopt;
    sizes << n;
  }
  return sizes;
}

QString methodName(SmoothingMethod method) {
  const std::string_view name = smoothingMethodName(method);
  return QString::fromLatin1(name.data(), qsizetype(name.size()));
}

}  // namespace

void CurvesView::buildControls() {
  m_metricBox = new QComboBox(this);
  m_metricBox->setObjectName("metric");
  m_metricBox->setMinimumContentsLength(10);
  m_metricBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  connect(m_metricBox, &QComboBox::activated, this, [this](int i) {
    setMetric(m_metricBox->itemText(i));
    QSettings().setValue(kMetricKey, m_metric);
  });

  m_smoothSlider = new QSlider(Qt::Horizontal, this);
  m_smoothSlider->setObjectName("smoothing");
  m_smoothSlider->setRange(0, kSliderSteps);
  m_smoothSlider->setValue(int(std::lround(m_smoothing * 100)));
  // The smoothing row is the tab's widest: at 90 px the tab asked for 550
  // and, beside the browser, pushed a 1000 px window wider (it stretches).
  m_smoothSlider->setMinimumWidth(60);
  m_smoothSlider->setToolTip(
      tr("Exponential moving average weight, debiased as TensorBoard does (0: raw values)"));
  m_smoothLabel = new QLabel(this);
  m_smoothLabel->setMinimumWidth(m_smoothLabel->fontMetrics().horizontalAdvance("0.00  "));
  connect(m_smoothSlider, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  // Remembered when the person moves it (a key, the wheel, a drag, a click
  // beside the handle): actionTriggered, not valueChanged, which setValue()
  // from code emits too. The position is already the new one; the value
  // (and valueChanged) follows it.
  connect(m_smoothSlider, &QSlider::actionTriggered, this, [this](int) {
    QSettings().setValue(kSmoothingKey, m_smoothSlider->sliderPosition() / 100.0);
  });
  m_smoothMethodBox = new QComboBox(this);
  m_smoothMethodBox->setObjectName("smoothingMethod");
  // Narrower than "Time-weighted EMA": the row leaves the browser its width
  // at 1000x700; the list that opens shows every choice whole.
  m_smoothMethodBox->setMinimumContentsLength(8);
  m_smoothMethodBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_smoothMethodBox->addItem(tr("EMA"), int(SmoothingMethod::DebiasedEma));
  m_smoothMethodBox->addItem(tr("Time-weighted EMA"), int(SmoothingMethod::TimeWeightedEma));
  m_smoothMethodBox->addItem(tr("Moving average"), int(SmoothingMethod::CentredMovingAverage));
  m_smoothMethodBox->setItemData(
      0,
      tr("Debiased exponential moving average, as TensorBoard's: the slider is the weight of "
         "the past per logged point"),
      Qt::ToolTipRole);
  m_smoothMethodBox->setItemData(
      1,
      tr("Exponential moving average over the x distance: runs logged every step and every "
         "10 steps are smoothed alike"),
      Qt::ToolTipRole);
  m_smoothMethodBox->setItemData(
      2, tr("Mean of the curve over a window centred on each point (it looks ahead)"),
      Qt::ToolTipRole);
  // activated: the person's choice (setCurrentIndex from code does not emit it).
  connect(m_smoothMethodBox, &QComboBox::activated, this, [this](int i) {
    const auto method = SmoothingMethod(m_smoothMethodBox->itemData(i).toInt());
    setSmoothingMethod(method);
    QSettings().setValue(kSmoothingMethodKey, methodName(method));
  });

  m_axisBox = new QComboBox(this);
  m_axisBox->setObjectName("xaxis");
  // "Rel. step", not "Relative step": the box stays as wide as "Wall time"
  // made it, so the tab still fits beside the browser at 1000x700.
  m_axisBox->addItem(tr("Step"), int(CurveAxis::Step));
  m_axisBox->addItem(tr("Rel. step"), int(CurveAxis::RelativeStep));
  m_axisBox->addItem(tr("Tokens"), int(CurveAxis::Tokens));
  m_axisBox->addItem(tr("Wall time"), int(CurveAxis::WallTime));
  m_axisBox->addItem(tr("Rel. time"), int(CurveAxis::RelativeTime));
  m_axisBox->setItemData(
      1,
      tr("Relative step: each run's step minus its first step (a fine-tune that starts at "
         "step 5,000 is drawn from 0)"),
      Qt::ToolTipRole);
  m_axisBox->setItemData(3, tr("The time of day each point was logged at"), Qt::ToolTipRole);
  m_axisBox->setItemData(4, tr("Relative time: time since each run's first logged point"),
                         Qt::ToolTipRole);
  connect(m_axisBox, &QComboBox::activated, this, [this](int i) {
    const auto axis = CurveAxis(m_axisBox->itemData(i).toInt());
    setXAxis(axis);
    QSettings().setValue(kXAxisKey, nameOf(kAxisNames, axis));
  });

  m_logBox = new QCheckBox(tr("Log scale"), this);
  m_logBox->setObjectName("logscale");
  // toggled applies the scale whoever checks the box; clicked (a click, the
  // space bar) is the person's choice, the one remembered.
  connect(m_logBox, &QCheckBox::toggled, this, &CurvesView::setLogScale);
  connect(m_logBox, &QCheckBox::clicked, this,
          [](bool on) { QSettings().setValue(kLogScaleKey, on); });

  auto* fit = new QPushButton(tr("Fit"), this);
  fit->setToolTip(tr("Fit the axes to the data and follow new points (after zooming or panning)"));
  connect(fit, &QPushButton::clicked, this, [this] {
    fitToData();
    m_plot->replot();
  });
  // One button for the three formats keeps the row narrow enough to leave
  // the checkpoint list its width.
  // A push button with a menu: it makes room for its arrow (a tool button's
  // arrow was drawn over its text).
  auto* exportButton = new QPushButton(tr("Export"), this);
  exportButton->setObjectName("export");
  auto* exportMenu = new QMenu(exportButton);
  auto addExport = [this, exportMenu](const QString& label, const QString& format) {
    QAction* a = exportMenu->addAction(label);
    connect(a, &QAction::triggered, this, [this, format] { chooseExport(format); });
  };
  addExport(tr("Chart as PNG image..."), "png");
  addExport(tr("Chart as PDF (vector)..."), "pdf");
  addExport(tr("Shown metric as CSV..."), "csv");
  exportButton->setMenu(exportMenu);

  // Two rows: narrow enough to leave the experiments browser its width.
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Metric"), this));
  controls->addWidget(m_metricBox);
  controls->addSpacing(8);
  controls->addWidget(new QLabel(tr("X axis"), this));
  controls->addWidget(m_axisBox);
  controls->addSpacing(8);
  controls->addWidget(m_logBox);
  controls->addStretch(1);
  auto* smoothing = new QHBoxLayout;
  smoothing->addWidget(new QLabel(tr("Smoothing"), this));
  smoothing->addWidget(m_smoothMethodBox);
  smoothing->addWidget(m_smoothSlider, 1);
  smoothing->addWidget(m_smoothLabel);
  smoothing->addSpacing(8);
  smoothing->addWidget(fit);
  smoothing->addWidget(exportButton);

  m_groupBox = new QComboBox(this);
  m_groupBox->setObjectName("groupBy");
  m_groupBox->setToolTip(
      tr("Draw runs that share a setting as one line with a band: by a hyperparameter, by all "
         "hyperparameters but the seed, or by the name without its number"));
  // As wide as 10 characters, not as its longest choice ("Name without its
  // number", a long hyperparameter): the row must leave the browser its
  // width at 1000x700. The list that opens is as wide as its longest choice.
  m_groupBox->setMinimumContentsLength(10);
  m_groupBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_groupBox->addItem(tr("None"), QStringLiteral("none"));
  connect(m_groupBox, &QComboBox::activated, this, [this](int i) {
    setGroupBy(m_groupBox->itemData(i).toString());
    m_savedGroupBy = m_groupBy;
    QSettings().setValue(kGroupByKey, m_groupBy);
  });
  m_groupLineBox = new QComboBox(this);
  m_groupLineBox->setObjectName("groupLine");
  m_groupLineBox->addItems({tr("Mean"), tr("Median")});
  connect(m_groupLineBox, &QComboBox::activated, this, [this](int i) {
    setGroupLine(GroupLine(i));
    QSettings().setValue(kGroupLineKey, nameOf(kGroupLineNames, GroupLine(i)));
  });
  m_groupBandBox = new QComboBox(this);
  m_groupBandBox->setObjectName("groupBand");
  m_groupBandBox->addItems(
      {tr("Min to max"), tr("Mean \u00b1 1 std"), tr("25th to 75th percentile")});
  m_groupBandBox->setMinimumContentsLength(12);
  m_groupBandBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  connect(m_groupBandBox, &QComboBox::activated, this, [this](int i) {
    setGroupBand(GroupBand(i));
    QSettings().setValue(kGroupBandKey, nameOf(kGroupBandNames, GroupBand(i)));
  });
  auto* groups = new QHBoxLayout;
  groups->addWidget(new QLabel(tr("Group by"), this));
  groups->addWidget(m_groupBox);
  groups->addSpacing(8);
  groups->addWidget(new QLabel(tr("Line"), this));
  groups->addWidget(m_groupLineBox);
  groups->addSpacing(8);
  groups->addWidget(new QLabel(tr("Band"), this));
  groups->addWidget(m_groupBandBox);
  groups->addStretch(1);

  m_plot = new QCustomPlot(this);
  m_plot->setObjectName("curves");
  m_plot->setMinimumSize(320, 200);
  m_legend = new CurvesLegend(this);
  m_legend->setMinimumWidth(120);
  connect(m_legend, &CurvesLegend::visibilityToggled, this, &CurvesView::onLegendToggled);
  connect(m_legend, &CurvesLegend::expandedChanged, this, &CurvesView::onLegendExpanded);
  connect(m_legend, &CurvesLegend::hovered, this, &CurvesView::setHighlight);
  m_splitter = new QSplitter(Qt::Horizontal, this);
  m_splitter->setObjectName("curvesSplitter");
  m_splitter->setChildrenCollapsible(false);
  m_splitter->addWidget(m_plot);
  m_splitter->addWidget(m_legend);
  m_splitter->setStretchFactor(0, 1);
  m_splitter->setStretchFactor(1, 0);
  // The legend a quarter of the chart: group rows ("learning_rate=0.0003
  // (5 runs)") readable at 1280x800 beside the browser.
  m_splitter->setSizes({680, 240});
  // splitterMoved: a drag of the handle (setSizes from code does not emit it).
  connect(m_splitter, &QSplitter::splitterMoved, this,
          [this] { QSettings().setValue(kChartSplitterKey, sizesText(m_splitter->sizes())); });
  m_runsTable = new RunsTablePanel(this);
  connect(m_runsTable, &RunsTablePanel::filterChanged, this, &CurvesView::updateRunsTable);
  connect(m_runsTable, &RunsTablePanel::sorted, this,
          [this] { m_runsTable->setHighlightedRow(tableRowOf(m_highlight)); });
  connect(m_runsTable, &RunsTablePanel::checkpointClicked, this, &CurvesView::checkpointActivated);
  connect(m_runsTable, &RunsTablePanel::rowHovered, this,
          [this](int row) { setHighlight(keyOfTableRow(row)); });
  // The table below the chart, in a splitter the person can drag: the chart
  // keeps most of the height (at 1000x700 the table shows about six rows).
  m_tableSplitter = new QSplitter(Qt::Vertical, this);
  m_tableSplitter->setObjectName("runsTableSplitter");
  m_tableSplitter->setChildrenCollapsible(false);
  m_tableSplitter->addWidget(m_splitter);
  m_tableSplitter->addWidget(m_runsTable);
  m_tableSplitter->setStretchFactor(0, 3);
  m_tableSplitter->setStretchFactor(1, 1);
  m_tableSplitter->setSizes({420, 180});
  connect(m_tableSplitter, &QSplitter::splitterMoved, this,
          [this] { QSettings().setValue(kTableSplitterKey, sizesText(m_tableSplitter->sizes())); });
  m_status = new QLabel(this);
  m_status->setObjectName("status");
  m_status->setWordWrap(true);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_cancelButton = new QPushButton(tr("Cancel"), this);
  m_cancelButton->setObjectName("cancelReading");
  m_cancelButton->setToolTip(tr("Stop reading runs: the runs read so far are drawn"));
  m_cancelButton->hide();
  connect(m_cancelButton, &QPushButton::clicked, this, &CurvesView::cancelLoading);
  auto* statusRow = new QHBoxLayout;
  statusRow->addWidget(m_status, 1);
  statusRow->addWidget(m_cancelButton, 0, Qt::AlignTop);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(controls);
  layout->addLayout(smoothing);
  layout->addLayout(groups);
  layout->addWidget(m_tableSplitter, 1);
  layout->addLayout(statusRow);
  m_smoothLabel->setText(QString::number(m_smoothing, 'f', 2));
}

void CurvesView::restoreChartSettings() {
  // Through the setters, as a person's change: the widgets show the choice
  // and the chart applies it. Nothing is drawn yet (no runs), so each is cheap.
  const QSettings settings;
  bool ok = false;
  const double weight = settings.value(kSmoothingKey).toDouble(&ok);
  if (ok && weight >= 0 && weight <= kSliderSteps / 100.0)
    setSmoothing(double(std::lround(weight * 100)) / 100.0);  // on one of the slider's steps
  SmoothingMethod method = SmoothingMethod::None;
  if (parseSmoothingMethod(settings.value(kSmoothingMethodKey).toString().toStdString(), method) &&
      method != SmoothingMethod::None)
    setSmoothingMethod(method);
  if (const auto axis = savedChoice(settings, kXAxisKey, kAxisNames)) setXAxis(*axis);
  const QString logY = settings.value(kLogScaleKey).toString();
  if (logY == QLatin1String("true") || logY == QLatin1String("false"))
    setLogScale(logY == QLatin1String("true"));
  if (const auto line = savedChoice(settings, kGroupLineKey, kGroupLineNames)) setGroupLine(*line);
  if (const auto band = savedChoice(settings, kGroupBandKey, kGroupBandNames)) setGroupBand(*band);
  // The metric: preferred when the runs have it (as if chosen), else the
  // training loss. The grouping: used when the runs offer it.
  if (const QVariant metric = settings.value(kMetricKey);
      metric.typeId() == QMetaType::QString && !metric.toString().isEmpty()) {
    m_metric = metric.toString();
    m_metricChosen = true;
  }
  if (const QVariant groupBy = settings.value(kGroupByKey);
      groupBy.typeId() == QMetaType::QString) {
    try {
      (void)parseGroupSpec(groupBy.toString().toStdString());
      m_savedGroupBy = groupBy.toString();
    } catch (const std::invalid_argument&) {
      // not a grouping: the default
    }
  }
  if (const auto sizes = savedSizes(settings, kChartSplitterKey)) m_splitter->setSizes(*sizes);
  if (const auto sizes = savedSizes(settings, kTableSplitterKey)) m_tableSplitter->setSizes(*sizes);
}

}  // namespace ckpt
