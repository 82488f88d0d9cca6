// The curves view: what it plots is exactly what the runs hold. Each test
// builds an experiment directory with a metrics.jsonl and a console log
// written here (their numbers known) and copies of fixture checkpoints
// (their steps and losses from the fixtures' manifest.json).
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
#include "inspector/inspectorwidget.h"
#include "mainwindow.h"
#include "screenshot.h"
#include "textformat.h"

using namespace ckpt;

namespace {

constexpr int kLoadTimeoutMs = 60'000;
constexpr double kUnixStart = 1718000000.0;  // the jsonl's wall_time of step 0

struct Point {
  qint64 step;
  double value;
};
using Series = std::vector<Point>;

// TensorBoard's smoothing, written out independently of ckpt::smoothEma:
// ema_t = w * ema_{t-1} + (1 - w) * x_t with ema_0 = 0, shown debiased as
// ema_t / (1 - w^t).
std::vector<double> debiasedEma(const Series& s, double w) {
  std::vector<double> out;
  double ema = 0;
  int t = 0;
  for (const Point& p : s) {
    ema = w * ema + (1 - w) * p.value;
    ++t;
    out.push_back(w == 0 ? p.value : ema / (1 - std::pow(w, t)));
  }
  return out;
}

// The points of a graph, in order.
Series graphPoints(const QCPGraph* g) {
  Series out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    out.push_back({qint64(it->key), it->value});
  return out;
}

std::vector<double> graphKeys(const QCPGraph* g) {
  std::vector<double> out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) out.push_back(it->key);
  return out;
}

bool samePoint(const Point& a, const Point& b) {
  return a.step == b.step && a.value == b.value;
}

bool samePoint(const MetricPoint& a, const MetricPoint& b) {
  const bool value = a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
  return a.step == b.step && value && a.wallTime == b.wallTime && a.tokens == b.tokens;
}

// Points (steps and values; a MetricPoint's wall time and tokens too) equal, bit for bit.
// `Points`: a std::vector of points, or a series' SeriesPoints.
template <typename Points>
bool sameSeries(const Points& a, const Points& b, QString* why) {
  if (a.size() != b.size()) {
    *why = QString("%1 points, expected %2").arg(a.size()).arg(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (!samePoint(a[i], b[i])) {
      *why = QString("point %1: (%2, %3), expected (%4, %5)")
                 .arg(i)
                 .arg(a[i].step)
                 .arg(a[i].value, 0, 'g', 17)
                 .arg(b[i].step)
                 .arg(b[i].value, 0, 'g', 17);
      return false;
    }
  }
  return true;
}

bool appendText(const QString& file, const QByteArray& text) {
  QFile f(file);
  if (!f.open(QIODevice::Append)) return false;
  const bool ok = f.write(text) == text.size();
  f.close();
  return ok;
}

// `ckptscope-cli metrics DIR --json`: run -> metric -> the points as (step, value).
std::map<QString, std::map<QString, Series>> cliSeries(
    const QString& dir, std::map<QString, std::map<QString, QJsonArray>>* restarts) {
  QProcess cli;
  cli.start(QStringLiteral(CKPT_CLI), {"metrics", dir, "--json"});
  std::map<QString, std::map<QString, Series>> out;
  if (!cli.waitForFinished(60'000) || cli.exitCode() != 0) return out;
  for (const QJsonValue& run :
       QJsonDocument::fromJson(cli.readAllStandardOutput()).object().value("runs").toArray())
    for (const QJsonValue& series : run.toObject().value("series").toArray()) {
      const QString name = run.toObject().value("name").toString();
      const QString metric = series.toObject().value("metric").toString();
      Series& points = out[name][metric];
      for (const QJsonValue& p : series.toObject().value("points").toArray())
        points.push_back({qint64(p.toArray().at(0).toDouble()), p.toArray().at(1).toDouble()});
      if (restarts) (*restarts)[name][metric] = series.toObject().value("restarts").toArray();
    }
  return out;
}

int distinctColours(const QImage& image) {
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
  return int(colours.size());
}

// Pixels within a small distance of `c` (antialiasing blends line edges).
int pixelsNear(const QImage& image, QColor c) {
  int n = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const QColor p = image.pixelColor(x, y);
      if (std::abs(p.red() - c.red()) + std::abs(p.green() - c.green()) +
              std::abs(p.blue() - c.blue()) <
          40)
        ++n;
    }
  return n;
}

}  // namespace

class TestCurves : public QObject {
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
  void followsPalette();
  void hiddenRunsAndTooltip();
  void liveAppend();
  void liveNewFileAndRewrite();
  void liveMergeEqualsReloadAtEveryLine();
  void liveRestartDrawsWhatAReloadDraws();
  void csvExport();
  void imageExports();
  void mainWindowCurvesTab();
  void mainWindowViews();
  void screenshotCommand();
  void unknownViewIsAnError();

 private:
  // Reads the runs of m_dir into `view` and waits for curvesReady().
  bool load(CurvesView& view);

  QJsonObject m_manifestRuns;  // manifest "runs": relative path -> {run, step, kind, loss, error}
  std::unique_ptr<QTemporaryDir> m_dir;
  // What the files written by init() hold.
  Series m_alphaLoss, m_alphaLr, m_betaLoss, m_betaLr, m_betaAccuracy, m_gammaLoss;
  std::vector<double> m_alphaWall;  // wall_time of alpha's loss points; NaN where the line has none
  std::vector<qint64> m_alphaTokens;  // tokens of alpha's loss points
};

void TestCurves::initTestCase() {
  QFile manifest(QStringLiteral(CKPT_FIXTURE_DIR) + "/manifest.json");
  QVERIFY2(manifest.open(QIODevice::ReadOnly),
           "no fixtures: run ctest (make_fixtures sets them up)");
  m_manifestRuns = QJsonDocument::fromJson(manifest.readAll()).object().value("runs").toObject();
  QVERIFY(m_manifestRuns.contains("runs/tiny/tiny_step100.pt"));
}

// root/alpha: metrics.jsonl (steps 50..300, one line without wall_time, one
//             bad line) + tiny_step100/200/final.pt
// root/beta:  train.log (console lines, steps 30..360) + tiny_step100/200.pt
// root/gamma: tiny_step100/200/final.pt only (curves from checkpoint metadata)
void TestCurves::init() {
  m_dir = std::make_unique<QTemporaryDir>();
  QVERIFY(m_dir->isValid());
  const QDir root(m_dir->path());
  const QString fixtures = QStringLiteral(CKPT_FIXTURE_DIR) + "/runs/tiny/";
  const QStringList alphaFiles = {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"};
  for (const char* run : {"alpha", "beta", "gamma"}) QVERIFY(root.mkpath(run));
  for (const QString& f : alphaFiles) {
    QVERIFY(QFile::copy(fixtures + f, root.filePath("alpha/" + f)));
    QVERIFY(QFile::copy(fixtures + f, root.filePath("gamma/" + f)));
  }
  for (const char* f : {"tiny_step100.pt", "tiny_step200.pt"})
    QVERIFY(QFile::copy(fixtures + f, root.filePath(QStringLiteral("beta/") + f)));

  m_alphaLoss.clear();
  m_alphaLr.clear();
  m_alphaWall.clear();
  m_alphaTokens.clear();
  QByteArray jsonl;
  const char* losses[] = {"4.0", "3.5", "3.125", "2.9", "2.6", "2.4375"};
  for (int i = 0; i < 6; ++i) {
    const qint64 step = 50 * (i + 1);
    const QByteArray lr = QByteArray::number(1e-4 * (i + 1), 'g', 17);
    const qint64 tokens = step * 512;
    const double wall = kUnixStart + 0.75 * double(step);
    QByteArray line = "{\"step\": " + QByteArray::number(step) + ", \"loss\": " + losses[i] +
                      ", \"lr\": " + lr + ", \"tokens\": " + QByteArray::number(tokens);
    if (i != 2)
      line += ", \"wall_time\": " + QByteArray::number(wall, 'f', 2);  // step 150 has none
    jsonl += line + "}\n";
    if (i == 3) jsonl += "{this is not json\n";
    m_alphaLoss.push_back({step, QByteArray(losses[i]).toDouble()});
    m_alphaLr.push_back({step, lr.toDouble()});
    m_alphaWall.push_back(i != 2 ? QByteArray::number(wall, 'f', 2).toDouble() : std::nan(""));
    m_alphaTokens.push_back(tokens);
  }
  QFile alpha(root.filePath("alpha/metrics.jsonl"));
  QVERIFY(alpha.open(QIODevice::WriteOnly));
  QVERIFY(alpha.write(jsonl) == jsonl.size());
  alpha.close();

  m_betaLoss.clear();
  m_betaLr.clear();
  m_betaAccuracy.clear();
  QByteArray log = "Loading data...\nEpoch 1 starting\n";
  for (int i = 1; i <= 12; ++i) {
    const qint64 step = 30 * i;
    const QByteArray loss = QByteArray::number(5.0 * std::exp(-double(step) / 150.0), 'f', 4);
    const QByteArray lr = QByteArray::number(6e-5 * i, 'e', 3);
    const QByteArray acc = QByteArray::number(40 + i * 1.5, 'f', 1);
    log += "step=" + QByteArray::number(step) + " loss=" + loss + " lr=" + lr + " accuracy=" + acc +
           "%\n";
    m_betaLoss.push_back({step, loss.toDouble()});
    m_betaLr.push_back({step, lr.toDouble()});
    m_betaAccuracy.push_back({step, acc.toDouble()});
  }
  log += "Training done\n";
  QFile beta(root.filePath("beta/train.log"));
  QVERIFY(beta.open(QIODevice::WriteOnly));
  QVERIFY(beta.write(log) == log.size());
  beta.close();

  m_gammaLoss.clear();
  for (const QString& f : alphaFiles) {
    const QJsonObject e = m_manifestRuns.value("runs/tiny/" + f).toObject();
    m_gammaLoss.push_back({qint64(e.value("step").toDouble()), e.value("loss").toDouble()});
  }
  std::sort(m_gammaLoss.begin(), m_gammaLoss.end(),
            [](const Point& a, const Point& b) { return a.step < b.step; });
}

bool TestCurves::load(CurvesView& view) {
  QSignalSpy ready(&view, &CurvesView::curvesReady);
  view.setRuns(scanDirectory(pathToStd(m_dir->path())).runs);
  if (!ready.wait(kLoadTimeoutMs)) return false;
  return ready.count() == 1 && !view.isLoading();
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

void TestCurves::liveAppend() {
  CurvesView view;
  QVERIFY(load(view));
  const QString jsonl = QDir(m_dir->path()).filePath("alpha/metrics.jsonl");
  const QString log = QDir(m_dir->path()).filePath("beta/train.log");
  const Series before = graphPoints(view.rawGraph("alpha"));

  // A line being written (no newline yet) is not read.
  QVERIFY(appendText(jsonl, "{\"step\": 350, \"loss\": 2.25, \"lr\": 0.0007, \"tok"));
  QTest::qWait(1500);  // longer than the poll
  QCOMPARE(view.rawGraph("alpha")->data()->size(), int(before.size()));

  QVERIFY(appendText(jsonl, "ens\": 179200}\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("alpha")->data()->size(), int(before.size()) + 1, 10'000);
  Series expected = m_alphaLoss;
  expected.push_back({350, 2.25});
  QString why;
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("alpha")), expected, &why), qPrintable(why));
  const std::vector<double> ema = debiasedEma(expected, view.smoothing());
  QVERIFY(std::abs(graphPoints(view.smoothedGraph("alpha")).back().value - ema.back()) < 1e-12);
  QCOMPARE(graphPoints(view.smoothedGraph("alpha")).size(), expected.size());

  // Two more lines at once, in the log of another run.
  QVERIFY(
      appendText(log, "step=390 loss=0.0625 lr=7.800e-04\nstep=420 loss=0.03125 lr=8.400e-04\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("beta")->data()->size(), int(m_betaLoss.size()) + 2,
                            10'000);
  Series betaExpected = m_betaLoss;
  betaExpected.push_back({390, 0.0625});
  betaExpected.push_back({420, 0.03125});
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("beta")), betaExpected, &why), qPrintable(why));
  // alpha did not change meanwhile: nothing read twice.
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("alpha")), expected, &why), qPrintable(why));
  // beta's markers at 100 and 200 stay where they were.
  QCOMPARE(graphKeys(view.markerGraph("beta")), (std::vector<double>{100, 200}));

  // A new metric appears in the choices.
  QVERIFY(!view.metrics().contains("grad_norm"));
  QVERIFY(appendText(jsonl, "{\"step\": 400, \"loss\": 2.0, \"grad_norm\": 0.5}\n"));
  QTRY_VERIFY_WITH_TIMEOUT(view.metrics().contains("grad_norm"), 10'000);
  QCOMPARE(view.rawGraph("alpha")->data()->size(), int(expected.size()) + 1);
  QCOMPARE(view.metric(), QStringLiteral("loss"));
}

void TestCurves::liveNewFileAndRewrite() {
  CurvesView view;
  view.setPollInterval(200);
  QVERIFY(load(view));
  // gamma starts writing a metrics.jsonl: it is preferred over checkpoint metadata,
  // so it replaces gamma's loss curve, as a fresh load would show it.
  const QString jsonl = QDir(m_dir->path()).filePath("gamma/metrics.jsonl");
  QVERIFY(appendText(jsonl, "{\"step\": 10, \"loss\": 6.5}\n{\"step\": 20, \"loss\": 6.0}\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("gamma")->data()->size(), 2, 10'000);
  QString why;
  QVERIFY2(sameSeries(graphPoints(view.rawGraph("gamma")), {{10, 6.5}, {20, 6.0}}, &why),
           qPrintable(why));
  // A resumed run rewrites a step: the last value read wins.
  QVERIFY(appendText(jsonl, "{\"step\": 20, \"loss\": 5.75}\n{\"step\": 30, \"loss\": 5.5}\n"));
  QTRY_COMPARE_WITH_TIMEOUT(view.rawGraph("gamma")->data()->size(), 3, 10'000);
  QVERIFY2(
      sameSeries(graphPoints(view.rawGraph("gamma")), {{10, 6.5}, {20, 5.75}, {30, 5.5}}, &why),
      qPrintable(why));
  QCOMPARE(graphPoints(view.smoothedGraph("gamma")).back().value,
           debiasedEma({{10, 6.5}, {20, 5.75}, {30, 5.5}}, view.smoothing()).back());
}

void TestCurves::liveMergeEqualsReloadAtEveryLine() {
  // A job that restarts twice into its metrics.jsonl (and logs one step
  // twice), and a pipeline log in which two stages restart, with tqdm
  // noise. Whatever line a reload happened to stop at, following the files
  // from there on gives the series a reload of the whole file gives: the
  // same points, the same restarts, the same tooltip note.
  const QDir root(m_dir->path());
  QVERIFY(root.mkpath("job/run-pretrain") && root.mkpath("job/run-sft"));
  QByteArrayList jsonl;
  auto jline = [&](int step, double loss) {
    jsonl
        << QStringLiteral(
               "{\"step\": %1, \"loss\": %2, \"lr\": 0.0003, \"tokens\": %3, \"wall_time\": %4}\n")
               .arg(step)
               .arg(loss, 0, 'g', 17)
               .arg(step * 64)
               .arg(1718000000.0 + jsonl.size(), 0, 'f', 1)
               .toUtf8();
  };
  for (int step = 10; step <= 80; step += 10) jline(step, 5.0 - step / 40.0);
  for (int step = 40; step <= 100; step += 10) jline(step, 4.0 - step / 50.0);  // restarted at 40
  jline(100, 1.75);  // step 100 again: replaced
  for (int step = 70; step <= 120; step += 5) jline(step, 3.0 - step / 100.0);  // restarted at 70
  QByteArrayList log;
  auto lline = [&](const char* stage, int step, double loss) {
    log << QStringLiteral(
               "2025-12-02 10:%1:00 - trainer.run-%2 - INFO - step=%3 loss=%4 lr=3.000e-04\n")
               .arg(log.size() % 60, 2, 10, QChar('0'))
               .arg(stage)
               .arg(step)
               .arg(loss, 0, 'g', 17)
               .toUtf8();
  };
  for (int step = 1; step <= 6; ++step) lline("pretrain", step, 9 - step);
  log << "Loading dataset shards...\n";
  for (int step = 1; step <= 3; ++step) lline("sft", step, 4 - step * 0.5);
  log << "train:  40%|####      | 4/10 [00:01<00:02, step=9 loss=0.5]\r";  // a bar's postfix: not a
                                                                           // point
  for (int step = 3; step <= 8; ++step)
    lline("pretrain", step, 7.5 - step);  // pretrain restarted at 3
  for (int step = 2; step <= 5; ++step)
    lline("sft", step, 3.25 - step * 0.25);  // sft restarted at 2

  const QString jsonlPath = root.filePath("job/run-pretrain/metrics.jsonl");
  const QString logPath = root.filePath("job/pipeline_4711.log");
  auto write = [](const QString& path, const QByteArrayList& lines, qsizetype n) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    for (qsizetype i = 0; i < n; ++i) f.write(lines[i]);
    return true;
  };
  RunEntry pretrain, sft;
  pretrain.name = "run-pretrain";
  pretrain.path = pathToStd(root.filePath("job/run-pretrain"));
  sft.name = "run-sft";
  sft.path = pathToStd(root.filePath("job/run-sft"));

  for (const RunEntry& entry : {pretrain, sft})
    for (qsizetype cut = 0; cut <= std::max(jsonl.size(), log.size()); ++cut) {
      QVERIFY(write(jsonlPath, jsonl, std::min(cut, jsonl.size())));
      QVERIFY(write(logPath, log, std::min(cut, log.size())));
      CurveRun live = loadCurveRun(entry);
      // The rest arrives one line at a time, each read as the follower reads it.
      for (qsizetype n = cut + 1; n <= std::max(jsonl.size(), log.size()); ++n) {
        QVERIFY(write(jsonlPath, jsonl, std::min(n, jsonl.size())));
        QVERIFY(write(logPath, log, std::min(n, log.size())));
        for (LiveSource& source : live.sources)
          (void)mergeLivePoints(live, source, readNewPoints(source, nullptr));
      }
      const RunMetrics reload = collectRunMetrics(entry);
      const CurveRun reloaded = loadCurveRun(entry);
      const std::string context = entry.name + ", reloaded after " + std::to_string(cut) + " lines";
      QVERIFY2(!reload.series.empty(), context.c_str());
      QCOMPARE(live.series.size(), reload.series.size());
      for (const MetricSeries& want : reload.series) {
        const MetricSeries* got = live.find(want.metric);
        QVERIFY2(got, (context + ": no " + want.metric).c_str());
        QString why;
        QVERIFY2(sameSeries(got->points, want.points, &why),
                 qPrintable(fromStd(context) + ": " + why));
        QCOMPARE(got->restarts, want.restarts);
      }
      QCOMPARE(live.restartNotes, reloaded.restartNotes);
    }
  // What the files hold in the end, by hand: the last segment of each restart.
  const RunMetrics m = collectRunMetrics(pretrain);
  QCOMPARE(m.find("loss")->restarts, (std::vector<int64_t>{40, 70}));
  const SeriesPoints& loss = m.find("loss")->points;
  QCOMPARE(loss.size(),
           size_t(3 + 3 + 11));  // 10..30 of the first job, 40..60 of the second, 70..120
  QCOMPARE(loss.front().step, int64_t(10));
  QCOMPARE(loss[2].value, 5.0 - 30 / 40.0);
  QCOMPARE(loss[3].value, 4.0 - 40 / 50.0);
  QCOMPARE(loss[5].step, int64_t(60));
  QCOMPARE(loss[6].step, int64_t(70));
  QCOMPARE(loss[6].value, 3.0 - 70 / 100.0);
  QCOMPARE(loss.back().step, int64_t(120));
  const RunMetrics s = collectRunMetrics(sft);
  QCOMPARE(s.find("loss")->restarts, (std::vector<int64_t>{2}));
  QCOMPARE(s.find("loss")->points.size(), size_t(5));
  QCOMPARE(s.find("loss")->points.back().value, 3.25 - 5 * 0.25);
  QCOMPARE(loadCurveRun(sft).restartNotes.at("loss"),
           QStringLiteral("restarted at step 2: the later job's points are shown"));
}

void TestCurves::liveRestartDrawsWhatAReloadDraws() {
  const QDir root(m_dir->path());
  MainWindow w;
  w.resize(kScreenshotSize);
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  w.activateWindow();
  QSignalSpy loaded(&w, &MainWindow::loaded);
  w.openPaths({m_dir->path()});
  QVERIFY(loaded.wait(kLoadTimeoutMs));
  CurvesView* view = w.curvesView();
  QTest::keySequence(&w, QKeySequence(Qt::CTRL | Qt::Key_2));  // the Curves tab
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
  if (view->isLoading()) {
    QSignalSpy ready(view, &CurvesView::curvesReady);
    QVERIFY(ready.wait(kLoadTimeoutMs));
  }
  view->setPollInterval(200);
  QString why;
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("alpha")), m_alphaLoss, &why), qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("beta")), m_betaLoss, &why), qPrintable(why));

  // alpha's job (it logged 50..300) restarts from its checkpoint at 150 and
  // logs into the same metrics.jsonl; beta's (30..360) from 210 into its
  // console log, behind a progress bar's redraws.
  QSignalSpy reloads(view, &CurvesView::curvesReady);
  QVERIFY(appendText(root.filePath("alpha/metrics.jsonl"),
                     "{\"step\": 150, \"loss\": 3.0, \"lr\": 0.0003, \"tokens\": 76800}\n"
                     "{\"step\": 200, \"loss\": 2.75, \"lr\": 0.0003, \"tokens\": 102400}\n"
                     "{\"step\": 250, \"loss\": 2.5, \"lr\": 0.0003, \"tokens\": 128000}\n"));
  QVERIFY(appendText(root.filePath("beta/train.log"),
                     "Resuming from step 210\n"
                     "train:  50%|#####     | 5/10 [00:01<00:01, step=250 loss=9.5]\r"
                     "step=240 loss=1.25 lr=1.000e-04\n"
                     "step=270 loss=1.125 lr=1.000e-04\n"));
  // By hand: the points before the restart, then the later job's.
  const Series alphaWant{{50, 4.0}, {100, 3.5}, {150, 3.0}, {200, 2.75}, {250, 2.5}};
  Series betaWant(m_betaLoss.begin(), m_betaLoss.begin() + 7);  // 30..210
  QCOMPARE(betaWant.back().step, qint64(210));
  betaWant.push_back({240, 1.25});
  betaWant.push_back({270, 1.125});
  QTRY_VERIFY_WITH_TIMEOUT(sameSeries(graphPoints(view->rawGraph("alpha")), alphaWant, &why) &&
                               sameSeries(graphPoints(view->rawGraph("beta")), betaWant, &why),
                           10'000);
  QCOMPARE(reloads.count(), 0);  // drawn by following the files, not by reading them again

  // The same as `ckptscope-cli metrics --json` reads from the files.
  std::map<QString, std::map<QString, QJsonArray>> restarts;
  const auto cli = cliSeries(m_dir->path(), &restarts);
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("alpha")), cli.at("alpha").at("loss"), &why),
           qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("beta")), cli.at("beta").at("loss"), &why),
           qPrintable(why));
  QCOMPARE(restarts.at("alpha").at("loss"), QJsonArray{150});
  QCOMPARE(restarts.at("beta").at("loss"), QJsonArray{240});
  QCOMPARE(restarts.at("gamma").at("loss"), QJsonArray{});

  // The mouse over the chart at step 210: the tooltip says which runs restarted.
  auto hoverText = [&]() -> QString {
    view->plot()->replot();
    const QRect area = view->plot()->axisRect()->rect();
    const QPoint at(int(std::lround(view->plot()->xAxis->coordToPixel(210))), area.top() + 2);
    QToolTip::hideText();
    QTest::mouseMove(view->plot(), at + QPoint(12, 0));
    QTest::mouseMove(view->plot(), at);
    if (!QTest::qWaitFor([] { return QToolTip::isVisible(); }, 5000)) return {};
    return QToolTip::text();
  };
  const QString live = hoverText();
  const QStringList lines = live.split('\n');
  auto lineOf = [&lines](const QString& run) {
    for (const QString& l : lines)
      if (l.startsWith(run + ": ")) return l;
    return QString();
  };
  QVERIFY2(lineOf("alpha").contains("(restarted at step 150: the later job's points are shown)") &&
               lineOf("alpha").endsWith("at step 200"),
           qPrintable(live));
  QVERIFY2(lineOf("beta").contains("(restarted at step 240: the later job's points are shown)") &&
               lineOf("beta").endsWith("at step 210"),
           qPrintable(live));
  QVERIFY2(!lineOf("gamma").isEmpty() && !lineOf("gamma").contains("restarted"), qPrintable(live));

  // File > Reload (F5) reads the files afresh: the same curves, the same tooltip.
  QSignalSpy reloaded(view, &CurvesView::curvesReady);
  QTest::keyClick(&w, Qt::Key_F5);
  QVERIFY(reloaded.wait(kLoadTimeoutMs));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("alpha")), alphaWant, &why), qPrintable(why));
  QVERIFY2(sameSeries(graphPoints(view->rawGraph("beta")), betaWant, &why), qPrintable(why));
  QCOMPARE(hoverText(), live);
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
