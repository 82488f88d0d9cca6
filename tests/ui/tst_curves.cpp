// The curves view: what it plots is exactly what the runs hold, on the
// experiment curves_sample.h writes; its exports and its place in the main
// window. Following live runs is in tst_curves_live.cpp.
#include <qcustomplot.h>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <QTreeView>
#include <QTreeWidget>
#include <cmath>
#include <vector>

#include "browser/checkpointlistmodel.h"
#include "curves/curvesview.h"
#include "curves_sample.h"
#include "inspector/inspectorwidget.h"
#include "mainwindow.h"
#include "screenshot.h"
#include "textformat.h"

using namespace ckpt;

using namespace curves_sample;

class TestCurves : public QObject, private CurvesSample {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void plotsEveryRunsPoints();
  void smoothingMatchesDebiasedEma_data();
  void smoothingMatchesDebiasedEma();
  void smoothingSlider();
  void checkpointMarkers();
  void otherMetricsAndAxes();
  void logScale();
  void chartSettingsRemembered();
  void chartSettingsIgnoreInvalid();
  void followsPalette();
  void hiddenRunsAndTooltip();
  void csvExport();
  void imageExports();
  void mainWindowCurvesTab();
  void mainWindowViews();
  void screenshotCommand();
  void unknownViewIsAnError();
};

void TestCurves::initTestCase() {
  const QString missing = readManifest();
  QVERIFY2(missing.isEmpty(), qPrintable(missing));
  // ctest points XDG_CONFIG_HOME into the build tree (emptied before the run).
  QCoreApplication::setOrganizationName("CkptScopeTest");
  QCoreApplication::setApplicationName("tst_curves");
}

void TestCurves::init() {
  const QString failed = writeSample();
  QVERIFY2(failed.isEmpty(), qPrintable(failed));
  // Each test starts from the defaults, not from what the last one chose.
  QSettings().remove("curves");
}

void TestCurves::plotsEveryRunsPoints() {
  CurvesView view;
  QVERIFY(load(view));
  QCOMPARE(view.runs().size(), size_t(3));
  const QStringList metrics = view.metrics();
  for (const char* m : {"loss", "lr", "accuracy"})
    QVERIFY2(metrics.contains(m), qPrintable(metrics.join(',')));
  QCOMPARE(view.metric(), QStringLiteral("loss"));
  QCOMPARE(view.findChild<QComboBox*>("metric")->currentText(), QStringLiteral("loss"));
  QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("loss"));

  QString why;
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("alpha")), m_alphaLoss, &why),
           qPrintable("alpha: " + why));
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("beta")), m_betaLoss, &why),
           qPrintable("beta: " + why));
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("gamma")), m_gammaLoss, &why),
           qPrintable("gamma: " + why));

  // One legend row per run (beside the chart), named after it, each in its own colour.
  QTreeWidget* legend = view.legend()->tree();
  QCOMPARE(legend->topLevelItemCount(), 3);
  QSet<QRgb> colours;
  for (const char* run : {"alpha", "beta", "gamma"}) {
    QCOMPARE(legend->findItems(run, Qt::MatchExactly).size(), 1);
    QCOMPARE(view.smoothedGraph(run)->name(), QString(run));
    colours.insert(view.smoothedGraph(run)->pen().color().rgb());
    QCOMPARE(view.rawGraph(run)->pen().color().rgb(), view.smoothedGraph(run)->pen().color().rgb());
    QVERIFY(view.rawGraph(run)->pen().color().alpha() < 255);  // faint behind
    // M4 decimation through the core (tst_curves_sweep), not QCustomPlot's sampling.
    QVERIFY(!view.rawGraph(run)->adaptiveSampling());
  }
  QCOMPARE(colours.size(), 3);

  // The bad jsonl line is reported, with its file.
  QVERIFY2(view.statusText().contains(
               "3 of 3 runs with loss (1 from metrics.jsonl, 1 from logs, 1 from checkpoints)"),
           qPrintable(view.statusText()));
  QVERIFY2(view.statusText().contains("1 problem") && view.statusText().contains("metrics.jsonl"),
           qPrintable(view.statusText()));
  QVERIFY(view.plot()->interactions().testFlag(QCP::iRangeDrag));
  QVERIFY(view.plot()->interactions().testFlag(QCP::iRangeZoom));
}

void TestCurves::smoothingMatchesDebiasedEma_data() {
  QTest::addColumn<double>("weight");
  for (double w : {0.0, 0.3, 0.6, 0.9, 0.99}) QTest::newRow(qPrintable(QString::number(w))) << w;
}

void TestCurves::smoothingMatchesDebiasedEma() {
  QFETCH(double, weight);
  CurvesView view;
  QVERIFY(load(view));
  QCOMPARE(view.smoothing(), 0.6);  // TensorBoard's default
  view.setSmoothing(weight);
  QCOMPARE(view.smoothing(), weight);
  QCOMPARE(view.findChild<QSlider*>("smoothing")->value(), int(std::lround(weight * 100)));
  const std::pair<const char*, const Series*> runs[] = {
      {"alpha", &m_alphaLoss}, {"beta", &m_betaLoss}, {"gamma", &m_gammaLoss}};
  for (const auto& [run, series] : runs) {
    const std::vector<double> expected = debiasedEma(*series, weight);
    const Series shown = graphPoints(view.smoothedGraph(run));
    QCOMPARE(shown.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      QCOMPARE(shown[i].step, (*series)[i].step);
      QVERIFY2(std::abs(shown[i].value - expected[i]) <= 1e-12 * std::abs(expected[i]),
               qPrintable(QString("%1 point %2: %3, expected %4")
                              .arg(run)
                              .arg(i)
                              .arg(shown[i].value, 0, 'g', 17)
                              .arg(expected[i], 0, 'g', 17)));
    }
    // The raw curve stays as it is, drawn only when it differs from the smoothed one.
    QCOMPARE(graphPoints(view.rawGraph(run)).size(), series->size());
    QCOMPARE(view.rawGraph(run)->visible(), weight > 0);
  }
}

void TestCurves::smoothingSlider() {
  CurvesView view;
  QVERIFY(load(view));
  auto* slider = view.findChild<QSlider*>("smoothing");
  QVERIFY(slider);
  QCOMPARE(slider->maximum(), 99);
  slider->setValue(90);
  QCOMPARE(view.smoothing(), 0.9);
  QCOMPARE(graphPoints(view.smoothedGraph("alpha")).back().value,
           debiasedEma(m_alphaLoss, 0.9).back());
  slider->setValue(0);
  QCOMPARE(view.smoothing(), 0.0);
  QString why;
  QVERIFY2(sameSeries(graphPoints(view.smoothedGraph("alpha")), m_alphaLoss, &why),
           qPrintable(why));
}

void TestCurves::checkpointMarkers() {
  CurvesView view;
  view.resize(1000, 640);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view));

  // Markers sit at the value each checkpoint records (Python wrote it: the
  // manifest), at the checkpoints' steps, whatever the smoothing.
  const double recorded[] = {
      m_manifestRuns.value("runs/tiny/tiny_step100.pt").toObject().value("loss").toDouble(),
      m_manifestRuns.value("runs/tiny/tiny_step200.pt").toObject().value("loss").toDouble(),
      m_manifestRuns.value("runs/tiny/tiny_final.pt").toObject().value("loss").toDouble()};
  // alpha: checkpoints at 100, 200, 300, all logged in its metrics.jsonl (with other values).
  const Series alphaMarkers = graphPoints(view.markerGraph("alpha"));
  QCOMPARE(alphaMarkers.size(), size_t(3));
  for (size_t i = 0; i < 3; ++i) {
    QCOMPARE(alphaMarkers[i].step, m_alphaLoss[2 * i + 1].step);
    QCOMPARE(alphaMarkers[i].value, recorded[i]);
    QVERIFY(alphaMarkers[i].value != m_alphaLoss[2 * i + 1].value);
  }
  QCOMPARE(view.markerGraph("alpha")->lineStyle(), QCPGraph::lsNone);
  QVERIFY(view.markerGraph("alpha")->scatterStyle().shape() != QCPScatterStyle::ssNone);
  QCOMPARE(QFileInfo(view.markerFile("alpha", 0)).fileName(), QStringLiteral("tiny_step100.pt"));
  QCOMPARE(QFileInfo(view.markerFile("alpha", 2)).fileName(), QStringLiteral("tiny_final.pt"));
  // gamma's curve is its checkpoints: a marker on every point.
  QCOMPARE(graphKeys(view.markerGraph("gamma")), graphKeys(view.smoothedGraph("gamma")));
  QCOMPARE(graphKeys(view.markerGraph("gamma")), (std::vector<double>{100, 200, 300}));
  // beta: checkpoints at 100 and 200 fall between logged steps (90, 120; 180, 210): at their
  // steps, at the values they record.
  QCOMPARE(graphKeys(view.markerGraph("beta")), (std::vector<double>{100, 200}));
  const Series betaMarkers = graphPoints(view.markerGraph("beta"));
  QCOMPARE(betaMarkers[0].value, recorded[0]);
  QCOMPARE(betaMarkers[1].value, recorded[1]);
  // Smoothing does not move them.
  view.setSmoothing(0);
  QCOMPARE(graphPoints(view.markerGraph("alpha")).size(), size_t(3));
  for (size_t i = 0; i < 3; ++i)
    QCOMPARE(graphPoints(view.markerGraph("alpha"))[i].value, recorded[i]);
  QString why;
  QVERIFY2(sameSeries(graphPoints(view.markerGraph("gamma")), m_gammaLoss, &why), qPrintable(why));
  // None drawn hollow on the x axis: every checkpoint here records a loss.
  QCOMPARE(view.bareMarkerGraph("alpha")->data()->size(), 0);

  // Clicking a marker names its checkpoint. gamma's markers sit on alpha's
  // (the same files): hidden, they are not what the click finds.
  view.setRunVisible("gamma", false);
  view.setRunVisible("beta", false);  // its step-200 checkpoint is the same file too
  QSignalSpy activated(&view, &CurvesView::checkpointActivated);
  view.plot()->replot();
  const QCPGraph* markers = view.markerGraph("alpha");
  const auto point = markers->data()->at(1);
  const QPoint pixel(int(std::lround(view.plot()->xAxis->coordToPixel(point->key))),
                     int(std::lround(view.plot()->yAxis->coordToPixel(point->value))));
  // As a person does it: the mouse comes over the marker (the hover line follows), then clicks.
  QTest::mouseMove(view.plot(), pixel + QPoint(0, 30));
  QTest::mouseMove(view.plot(), pixel);
  QTest::mouseClick(view.plot(), Qt::LeftButton, {}, pixel);
  QCOMPARE(activated.count(), 1);
  QCOMPARE(QFileInfo(activated.at(0).at(0).toString()).fileName(),
           QStringLiteral("tiny_step200.pt"));
  QCOMPARE(QFileInfo(activated.at(0).at(0).toString()).absolutePath(),
           QDir(m_dir->path()).absoluteFilePath("alpha"));
  // Hovering shows a cursor line at the mouse (and the tooltip of valuesAt()).
  QCPItemStraightLine* cursor = nullptr;
  for (int i = 0; i < view.plot()->itemCount(); ++i)
    if (auto* line = qobject_cast<QCPItemStraightLine*>(view.plot()->item(i))) cursor = line;
  QVERIFY(cursor);
  QEvent leave(QEvent::Leave);  // the mouse leaves the chart: no line
  QApplication::sendEvent(view.plot(), &leave);
  QVERIFY(!cursor->visible());
  QTest::mouseMove(view.plot(), pixel + QPoint(0, 30));
  QTRY_VERIFY(cursor->visible());
  QVERIFY(std::abs(cursor->point1->coords().x() - view.plot()->xAxis->pixelToCoord(pixel.x())) <
          1e-9);
  // Clicking empty space does not.
  QTest::mouseClick(view.plot(), Qt::LeftButton, {},
                    view.plot()->axisRect()->topLeft() + QPoint(3, 3));
  QCOMPARE(activated.count(), 1);
}

void TestCurves::otherMetricsAndAxes() {
  CurvesView view;
  QVERIFY(load(view));
  QString why;
  view.setMetric("lr");
  QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("lr"));
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("alpha")), m_alphaLr, &why), qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("beta")), m_betaLr, &why), qPrintable(why));
  // A schedule is drawn as logged: the solid line is the raw one, whatever the smoothing.
  QVERIFY(view.smoothing() > 0);
  QVERIFY2(sameSeries(graphPoints(view.smoothedGraph("alpha")), m_alphaLr, &why), qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view.smoothedGraph("beta")), m_betaLr, &why), qPrintable(why));
  QVERIFY(!view.rawGraph("alpha")->visible());
  QVERIFY(!view.findChild<QSlider*>("smoothing")->isEnabled());
  view.setMetric("accuracy");  // "55.2%" in the log
  QVERIFY(view.findChild<QSlider*>("smoothing")->isEnabled());
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("beta")), m_betaAccuracy, &why), qPrintable(why));
  QVERIFY(!view.rawGraph("alpha"));
  QVERIFY2(view.statusText().contains("1 of 3 runs with accuracy"), qPrintable(view.statusText()));
  view.setMetric("loss");

  // Wall time: the Unix times as logged, on a clock; the line without one is skipped and
  // counted.
  view.setXAxis(CurveAxis::WallTime);
  QCOMPARE(view.findChild<QComboBox*>("xaxis")->currentText(), QStringLiteral("Wall time"));
  std::vector<double> clockKeys;
  for (double w : m_alphaWall)
    if (!std::isnan(w)) clockKeys.push_back(w);
  QCOMPARE(graphKeys(view.rawGraph("alpha")), clockKeys);
  QVERIFY2(view.valuesAt(clockKeys[0])
               .startsWith("wall time " +
                           QDateTime::fromMSecsSinceEpoch(qint64(std::llround(clockKeys[0] * 1000)))
                               .toString("yyyy-MM-dd hh:mm:ss")),
           qPrintable(view.valuesAt(clockKeys[0])));
  // Relative time: seconds since the run's first wall_time.
  view.setXAxis(CurveAxis::RelativeTime);
  std::vector<double> expectedKeys;
  for (double w : m_alphaWall)
    if (!std::isnan(w)) expectedKeys.push_back(w - m_alphaWall[0]);
  QCOMPARE(graphKeys(view.rawGraph("alpha")), expectedKeys);
  QCOMPARE(graphKeys(view.smoothedGraph("alpha")), expectedKeys);
  QCOMPARE(view.rawGraph("beta")->data()->size(), 0);  // logs carry no wall time
  // alpha's one line without a wall time; beta and gamma (logs) have none: named.
  QVERIFY2(view.statusText().contains("1 point without a wall time not drawn") &&
               view.statusText().contains("2 runs have no wall time: not drawn (beta, gamma)"),
           qPrintable(view.statusText()));
  QVERIFY(view.valuesAt(expectedKeys[1]).contains("at step 100"));

  // Tokens: alpha's jsonl has them for every line.
  view.setXAxis(CurveAxis::Tokens);
  std::vector<double> tokenKeys(m_alphaTokens.begin(), m_alphaTokens.end());
  QCOMPARE(graphKeys(view.rawGraph("alpha")), tokenKeys);
  QVERIFY2(view.statusText().contains("2 runs have no token count: not drawn (beta, gamma)") &&
               !view.statusText().contains("points without"),
           qPrintable(view.statusText()));

  view.setXAxis(CurveAxis::Step);
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("alpha")), m_alphaLoss, &why), qPrintable(why));
  QVERIFY(!view.statusText().contains("not drawn"));
}

void TestCurves::logScale() {
  CurvesView view;
  QVERIFY(load(view));
  QCOMPARE(view.plot()->yAxis->scaleType(), QCPAxis::stLinear);
  view.findChild<QCheckBox*>("logscale")->setChecked(true);
  QVERIFY(view.logScale());
  QCOMPARE(view.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
  QVERIFY(view.plot()->yAxis->range().lower > 0);
  QVERIFY(view.plot()->yAxis->range().contains(2.125) &&
          view.plot()->yAxis->range().contains(5.0 * std::exp(-20.0 / 150)));
  // Labelled ticks within the range, although the losses span less than a decade.
  view.plot()->replot();
  const QVector<double> ticks = view.plot()->yAxis->tickVector();
  QVERIFY2(ticks.size() >= 3, qPrintable(QString::number(ticks.size())));
  for (double t : ticks) QVERIFY(view.plot()->yAxis->range().contains(t));
  for (const QString& label : view.plot()->yAxis->tickVectorLabels()) QVERIFY(!label.isEmpty());
  view.setLogScale(false);
  QCOMPARE(view.plot()->yAxis->scaleType(), QCPAxis::stLinear);
}

void TestCurves::chartSettingsRemembered() {
  // Chosen as a person chooses: keys on the slider and the boxes, a click on
  // the log scale box.
  {
    CurvesView view;
    view.resize(1000, 640);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(load(view));
    auto* slider = view.findChild<QSlider*>("smoothing");
    auto* method = view.findChild<QComboBox*>("smoothingMethod");
    auto* axis = view.findChild<QComboBox*>("xaxis");
    auto* logBox = view.findChild<QCheckBox*>("logscale");
    auto* line = view.findChild<QComboBox*>("groupLine");
    auto* band = view.findChild<QComboBox*>("groupBand");
    QWidget* const controls[] = {slider, method, axis, logBox, line, band};
    for (QWidget* c : controls) QVERIFY(c && c->isVisible() && c->isEnabled());
    QCOMPARE(slider->maximum(), 99);
    slider->setFocus();
    QTest::keyClick(slider, Qt::Key_End);
    QCOMPARE(view.smoothing(), 0.99);
    method->setFocus();
    QTest::keyClick(method, Qt::Key_Down);
    QCOMPARE(method->currentText(), QStringLiteral("Time-weighted EMA"));
    QCOMPARE(view.smoothingMethod(), SmoothingMethod::TimeWeightedEma);
    axis->setFocus();
    QTest::keyClick(axis, Qt::Key_Down);
    QCOMPARE(axis->currentText(), QStringLiteral("Rel. step"));
    QCOMPARE(view.xAxis(), CurveAxis::RelativeStep);
    QTest::mouseClick(logBox, Qt::LeftButton, {}, QPoint(6, logBox->height() / 2));
    QVERIFY(logBox->isChecked());
    QVERIFY(view.logScale());
    line->setFocus();
    QTest::keyClick(line, Qt::Key_Down);
    QCOMPARE(line->currentText(), QStringLiteral("Median"));
    band->setFocus();
    QTest::keyClick(band, Qt::Key_Down);
    QCOMPARE(band->currentIndex(), 1);  // mean +- 1 std
  }

  // On disk, where the next start of the app reads them (a copy, read as a
  // new file: not this process's cache of the settings).
  {
    QSettings settings;
    settings.sync();
    QVERIFY(settings.status() == QSettings::NoError);
    const QString copy = QDir(m_dir->path()).filePath("settings-copy.conf");
    QVERIFY2(QFile::copy(settings.fileName(), copy), qPrintable(settings.fileName()));
    const QSettings onDisk(copy, QSettings::IniFormat);
    QCOMPARE(onDisk.value("curves/smoothing").toDouble(), 0.99);
    QCOMPARE(onDisk.value("curves/smoothingMethod").toString(), QStringLiteral("time-ema"));
    QCOMPARE(onDisk.value("curves/xAxis").toString(), QStringLiteral("relative-step"));
    QCOMPARE(onDisk.value("curves/logScale").toString(), QStringLiteral("true"));
    QCOMPARE(onDisk.value("curves/groupLine").toString(), QStringLiteral("median"));
    QCOMPARE(onDisk.value("curves/groupBand").toString(), QStringLiteral("std"));
  }

  // A new view, as the next start of the app makes: the choices shown and used.
  CurvesView view;
  view.resize(1000, 640);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view));
  QCOMPARE(view.findChild<QSlider*>("smoothing")->value(), 99);
  QCOMPARE(view.smoothing(), 0.99);
  QCOMPARE(view.findChild<QComboBox*>("smoothingMethod")->currentText(),
           QStringLiteral("Time-weighted EMA"));
  QCOMPARE(view.smoothingMethod(), SmoothingMethod::TimeWeightedEma);
  QVERIFY2(view.statusText().contains("time-weighted EMA, half-life"),
           qPrintable(view.statusText()));
  QCOMPARE(view.findChild<QComboBox*>("xaxis")->currentText(), QStringLiteral("Rel. step"));
  QCOMPARE(view.xAxis(), CurveAxis::RelativeStep);
  QCOMPARE(view.plot()->xAxis->label(), QStringLiteral("relative step"));
  QCOMPARE(view.rawGraph("alpha")->data()->at(0)->key, 0.0);  // logged from step 50
  QVERIFY(view.findChild<QCheckBox*>("logscale")->isChecked());
  QVERIFY(view.logScale());
  QCOMPARE(view.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
  QCOMPARE(view.findChild<QComboBox*>("groupLine")->currentText(), QStringLiteral("Median"));
  QCOMPARE(view.findChild<QComboBox*>("groupBand")->currentIndex(), 1);

  // Set from code (a test, another part of the app), nothing is remembered:
  // not through the view's setters, nor the slider's value set directly.
  view.setSmoothing(0.3);
  view.setSmoothingMethod(SmoothingMethod::CentredMovingAverage);
  view.setXAxis(CurveAxis::Tokens);
  view.setLogScale(false);
  view.setGroupLine(CurvesView::GroupLine::Mean);
  view.setGroupBand(CurvesView::GroupBand::Percentiles);
  QVERIFY(!view.findChild<QCheckBox*>("logscale")->isChecked());
  view.findChild<QSlider*>("smoothing")->setValue(10);
  QCOMPARE(view.smoothing(), 0.1);
  const CurvesView next;
  QCOMPARE(next.smoothing(), 0.99);
  QCOMPARE(next.smoothingMethod(), SmoothingMethod::TimeWeightedEma);
  QCOMPARE(next.xAxis(), CurveAxis::RelativeStep);
  QVERIFY(next.logScale());
  QCOMPARE(next.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
  QCOMPARE(next.findChild<QComboBox*>("groupLine")->currentText(), QStringLiteral("Median"));
  QCOMPARE(next.findChild<QComboBox*>("groupBand")->currentIndex(), 1);
}

void TestCurves::chartSettingsIgnoreInvalid() {
  // A file edited by hand or written by another version: what is not
  // understood keeps its default.
  QSettings settings;
  settings.setValue("curves/smoothing", "lots");
  settings.setValue("curves/smoothingMethod", "gaussian");
  settings.setValue("curves/xAxis", "sideways");
  settings.setValue("curves/logScale", "maybe");
  settings.setValue("curves/groupLine", 1);  // a row of the box, not a name
  settings.setValue("curves/groupBand", "");
  {
    const CurvesView view;
    QCOMPARE(view.smoothing(), 0.6);
    QCOMPARE(view.smoothingMethod(), SmoothingMethod::DebiasedEma);
    QCOMPARE(view.xAxis(), CurveAxis::Step);
    QVERIFY(!view.logScale());
    QCOMPARE(view.plot()->yAxis->scaleType(), QCPAxis::stLinear);
    QCOMPARE(view.findChild<QComboBox*>("groupLine")->currentIndex(), 0);
    QCOMPARE(view.findChild<QComboBox*>("groupBand")->currentIndex(), 0);
  }
  // Past the slider's range, or "none" (the slider's 0 is the EMA's): ignored too.
  settings.setValue("curves/smoothing", 1.5);
  settings.setValue("curves/smoothingMethod", "none");
  const CurvesView view;
  QCOMPARE(view.smoothing(), 0.6);
  QCOMPARE(view.findChild<QSlider*>("smoothing")->value(), 60);
  QCOMPARE(view.smoothingMethod(), SmoothingMethod::DebiasedEma);
}

void TestCurves::followsPalette() {
  // A dark palette, as a dark desktop theme gives: the chart follows it.
  QPalette dark;
  dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
  dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
  dark.setColor(QPalette::Text, QColor(0xee, 0xee, 0xee));
  dark.setColor(QPalette::WindowText, QColor(0xee, 0xee, 0xee));
  CurvesView view;
  view.resize(900, 600);
  QVERIFY(load(view));
  view.setRunVisible("beta", false);
  view.setPalette(dark);
  QCustomPlot* plot = view.plot();
  const QImage image = plot->toPixmap(600, 400).toImage();
  // The background where nothing is drawn (the top-left corner) is the palette's base.
  QCOMPARE(image.pixelColor(2, 2), dark.color(QPalette::Base));
  QCOMPARE(plot->xAxis->tickLabelColor(), dark.color(QPalette::Text));
  QCOMPARE(plot->yAxis->basePen().color(), dark.color(QPalette::Text));
  // Legend: shown runs ticked, the hidden one not.
  QCOMPARE(view.legend()->tree()->findItems("beta", Qt::MatchExactly).value(0)->checkState(0),
           Qt::Unchecked);
  QCOMPARE(view.legend()->tree()->findItems("alpha", Qt::MatchExactly).value(0)->checkState(0),
           Qt::Checked);
  // And back to light.
  view.setPalette(QPalette(Qt::white));
  QCOMPARE(plot->xAxis->tickLabelColor(), view.palette().color(QPalette::Text));
  if (qEnvironmentVariableIsSet("CKPT_KEEP_SCREENSHOTS")) {
    view.setPalette(dark);
    view.grab().save(qEnvironmentVariable("CKPT_KEEP_SCREENSHOTS") + "/curves-dark.png");
  }
}

void TestCurves::hiddenRunsAndTooltip() {
  CurvesView view;
  QVERIFY(load(view));
  view.setSmoothing(0);
  // At step 205 alpha's nearest point is 200, beta's 210 (logged every 30), gamma's 200.
  const QString text = view.valuesAt(205);
  QVERIFY2(text.startsWith("step 205"), qPrintable(text));
  QVERIFY2(text.contains(QString("alpha: %1 at step 200").arg(m_alphaLoss[3].value)),
           qPrintable(text));
  QVERIFY2(text.contains(
               QString("beta: %1 at step 210").arg(QString::number(m_betaLoss[6].value, 'g', 5))),
           qPrintable(text));
  QVERIFY2(text.contains(QString("gamma: %1 at step 200").arg(m_gammaLoss[1].value)),
           qPrintable(text));
  view.setSmoothing(0.5);
  QVERIFY(view.valuesAt(205).contains(QString("(raw %1)").arg(m_alphaLoss[3].value)));

  view.setRunVisible("beta", false);
  QVERIFY(!view.smoothedGraph("beta")->visible());
  QVERIFY(!view.markerGraph("beta")->visible());
  QVERIFY(!view.valuesAt(205).contains("beta"));
  view.setRunVisible("beta", true);
  QVERIFY(view.valuesAt(205).contains("beta"));
}

void TestCurves::csvExport() {
  CurvesView view;
  QVERIFY(load(view));
  view.setSmoothing(0.3);
  const QString out = QDir(m_dir->path()).filePath("out/loss.csv");
  QVERIFY(QDir().mkpath(QFileInfo(out).path()));
  QString error;
  QVERIFY2(view.exportCsv(out, &error), qPrintable(error));
  QFile f(out);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(lines.value(0), QStringLiteral("run,metric,step,value,smoothed"));
  QCOMPARE(lines.size(), 1 + int(m_alphaLoss.size() + m_betaLoss.size() + m_gammaLoss.size()));
  int row = 1;
  const std::pair<const char*, const Series*> runs[] = {
      {"alpha", &m_alphaLoss}, {"beta", &m_betaLoss}, {"gamma", &m_gammaLoss}};
  for (const auto& [run, series] : runs) {
    const std::vector<double> ema = debiasedEma(*series, 0.3);
    for (size_t i = 0; i < series->size(); ++i, ++row) {
      const QStringList cells = lines[row].split(',');
      QCOMPARE(cells.size(), 5);
      QCOMPARE(cells[0], QString(run));
      QCOMPARE(cells[1], QStringLiteral("loss"));
      QCOMPARE(cells[2].toLongLong(), (*series)[i].step);
      QCOMPARE(cells[3].toDouble(), (*series)[i].value);  // round-trips exactly
      QVERIFY(std::abs(cells[4].toDouble() - ema[i]) <= 1e-12 * std::abs(ema[i]));
    }
  }
  QCOMPARE(lines[1],
           QStringLiteral("alpha,loss,50,4,4"));  // the first smoothed value is the first value

  QVERIFY(!view.exportCsv(QDir(m_dir->path()).filePath("alpha/metrics.jsonl/x.csv"), &error));
  QVERIFY2(error.contains("cannot write"), qPrintable(error));
}

void TestCurves::imageExports() {
  CurvesView view;
  view.resize(900, 600);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QVERIFY(load(view));
  const QString png = QDir(m_dir->path()).filePath("curves.png");
  const QString pdf = QDir(m_dir->path()).filePath("curves.pdf");
  QString error;
  QVERIFY2(view.exportPng(png, &error), qPrintable(error));
  const QImage image(png);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), view.plot()->size());
  QVERIFY(distinctColours(image) > 8);
  QVERIFY2(view.exportPdf(pdf, &error), qPrintable(error));
  QFile f(pdf);
  QVERIFY(f.open(QIODevice::ReadOnly));
  QVERIFY(f.read(5) == "%PDF-");
}

void TestCurves::mainWindowCurvesTab() {
  MainWindow w;
  w.resize(kScreenshotSize);
  w.setView(MainWindow::View::Curves);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.curvesView()));
  QSignalSpy ready(w.curvesView(), &CurvesView::curvesReady);
  w.openPaths({m_dir->path()});
  QVERIFY(ready.wait(kLoadTimeoutMs));
  // Fed by the browser's scan: its runs, under the browser's names.
  QStringList names;
  for (const CurveRun& r : w.curvesView()->runs()) names << r.name;
  QCOMPARE(names, (QStringList{"alpha", "beta", "gamma"}));

  // A marker clicked in the curves selects its checkpoint in the browser.
  CurvesView* view = w.curvesView();
  view->plot()->replot();
  const auto point = view->markerGraph("gamma")->data()->at(2);  // tiny_final.pt
  const QPoint pixel(int(std::lround(view->plot()->xAxis->coordToPixel(point->key))),
                     int(std::lround(view->plot()->yAxis->coordToPixel(point->value))));
  QTest::mouseClick(view->plot(), Qt::LeftButton, {}, pixel);
  const QString expected = QDir(m_dir->path()).filePath("gamma/tiny_final.pt");
  QTRY_COMPARE_WITH_TIMEOUT(
      QDir::cleanPath(
          w.checkpointView()->currentIndex().data(int(CheckpointListModel::Role::Path)).toString()),
      QDir::cleanPath(expected), 5000);
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.inspector()));

  // A new scan starts the curves over.
  QSignalSpy again(w.curvesView(), &CurvesView::curvesReady);
  w.openPaths({QDir(m_dir->path()).filePath("beta")});
  QVERIFY(again.wait(kLoadTimeoutMs));
  QCOMPARE(w.curvesView()->runs().size(), size_t(1));
}

void TestCurves::mainWindowViews() {
  QCOMPARE(MainWindow::viewFromName("browse"), MainWindow::View::Browse);
  QCOMPARE(MainWindow::viewFromName("inspect"), MainWindow::View::Inspect);
  QCOMPARE(MainWindow::viewFromName("curves"), MainWindow::View::Curves);
  QVERIFY(!MainWindow::viewFromName("Curves"));
  // Browse: the first run's overview rather than its first checkpoint.
  MainWindow w;
  w.setView(MainWindow::View::Browse);
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.inspector()));
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths({m_dir->path()});
  QVERIFY(loaded.wait(kLoadTimeoutMs));
  const QModelIndex current = w.checkpointView()->currentIndex();
  QVERIFY(current.data(int(CheckpointListModel::Role::IsGroup)).toBool());
  QCOMPARE(current.data().toString(), QStringLiteral("alpha"));
}

void TestCurves::screenshotCommand() {
  const QString out = QDir(m_dir->path()).filePath("shots/curves.png");
  QProcess p;
  p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  p.start(QStringLiteral(CKPT_GUI_EXE), {"--screenshot", out, "--view", "curves", m_dir->path()});
  QVERIFY2(p.waitForFinished(2 * kLoadTimeoutMs), "ckptscope --screenshot did not finish");
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), 0);
  const QImage image(out);
  QVERIFY2(!image.isNull(), qPrintable(out + " missing or not an image"));
  QCOMPARE(image.size(), kScreenshotSize);
  QVERIFY2(distinctColours(image) > 8, qPrintable(QString::number(distinctColours(image))));
  // The curves are drawn: the three runs' colours (tab10 blue, orange, green) are there.
  for (const QColor c :
       {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c)})
    QVERIFY2(pixelsNear(image, c) > 100,
             qPrintable(c.name() + ": " + QString::number(pixelsNear(image, c))));
}

void TestCurves::unknownViewIsAnError() {
  QProcess p;
  p.start(QStringLiteral(CKPT_GUI_EXE), {"--screenshot", QDir(m_dir->path()).filePath("x.png"),
                                         "--view", "graphs", m_dir->path()});
  QVERIFY(p.waitForFinished(kLoadTimeoutMs));
  QCOMPARE(p.exitCode(), 2);
  QVERIFY(QString::fromLocal8Bit(p.readAllStandardError()).contains("unknown view"));
}

QTEST_MAIN(TestCurves)
#include "tst_curves.moc"
