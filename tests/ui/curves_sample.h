#pragma once
// The experiment the Curves tests draw (tst_curves, tst_curves_live), and
// how they compare what is drawn with what was written. Each test builds an
// experiment directory with a metrics.jsonl and a console log written here
// (their numbers known) and copies of fixture checkpoints (their steps and
// losses from the fixtures' manifest.json).
#include <qcustomplot.h>

#include <QColor>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "ckpt/index/scanner.h"
#include "curves/curvesview.h"
#include "curves_fixture.h"
#include "textformat.h"

namespace curves_sample {

using namespace ckpt;

constexpr int kLoadTimeoutMs = 60'000;
constexpr double kUnixStart = 1718000000.0;  // the jsonl's wall_time of step 0

using curves_fixture::graphPoints;
using curves_fixture::Point;
using curves_fixture::Series;

// TensorBoard's smoothing, written out independently of ckpt::smoothEma:
// ema_t = w * ema_{t-1} + (1 - w) * x_t with ema_0 = 0, shown debiased as
// ema_t / (1 - w^t).
inline std::vector<double> debiasedEma(const Series& s, double w) {
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

inline std::vector<double> graphKeys(const QCPGraph* g) {
  std::vector<double> out;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) out.push_back(it->key);
  return out;
}

inline bool samePoint(const Point& a, const Point& b) {
  return a.step == b.step && a.value == b.value;
}

inline bool samePoint(const MetricPoint& a, const MetricPoint& b) {
  const bool value = a.value == b.value || (std::isnan(a.value) && std::isnan(b.value));
  return a.step == b.step && value && a.wallTime == b.wallTime && a.tokens == b.tokens;
}

// Points (steps and values; a MetricPoint's wall time and tokens too) equal, bit for bit.
// `Points`: a std::vector of points, or a series' SeriesPoints.
template <typename Points>
inline bool sameSeries(const Points& a, const Points& b, QString* why) {
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

inline bool appendText(const QString& file, const QByteArray& text) {
  QFile f(file);
  if (!f.open(QIODevice::Append)) return false;
  const bool ok = f.write(text) == text.size();
  f.close();
  return ok;
}

// `ckptscope-cli metrics DIR --json`: run -> metric -> the points as (step, value).
inline std::map<QString, std::map<QString, Series>> cliSeries(
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

inline int distinctColours(const QImage& image) {
  QSet<QRgb> colours;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
  return int(colours.size());
}

// Pixels within a small distance of `c` (antialiasing blends line edges).
inline int pixelsNear(const QImage& image, QColor c) {
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

// A condition of writing the sample: its text is the failure.
#define SAMPLE_CHECK(cond) \
  if (!(cond)) return QStringLiteral(#cond)

struct CurvesSample {
  // The fixtures' manifest; "" or what is missing.
  QString readManifest() {
    QFile manifest(QStringLiteral(CKPT_FIXTURE_DIR) + "/manifest.json");
    if (!manifest.open(QIODevice::ReadOnly))
      return QStringLiteral("no fixtures: run ctest (make_fixtures sets them up)");
    m_manifestRuns = QJsonDocument::fromJson(manifest.readAll()).object().value("runs").toObject();
    SAMPLE_CHECK(m_manifestRuns.contains("runs/tiny/tiny_step100.pt"));
    return {};
  }

  // Writes the experiment into a new m_dir; "" or the step that failed.
  // root/alpha: metrics.jsonl (steps 50..300, one line without wall_time, one
  //             bad line) + tiny_step100/200/final.pt
  // root/beta:  train.log (console lines, steps 30..360) + tiny_step100/200.pt
  // root/gamma: tiny_step100/200/final.pt only (curves from checkpoint metadata)
  QString writeSample() {
    m_dir = std::make_unique<QTemporaryDir>();
    SAMPLE_CHECK(m_dir->isValid());
    const QDir root(m_dir->path());
    const QString fixtures = QStringLiteral(CKPT_FIXTURE_DIR) + "/runs/tiny/";
    const QStringList alphaFiles = {"tiny_step100.pt", "tiny_step200.pt", "tiny_final.pt"};
    for (const char* run : {"alpha", "beta", "gamma"}) SAMPLE_CHECK(root.mkpath(run));
    for (const QString& f : alphaFiles) {
      SAMPLE_CHECK(QFile::copy(fixtures + f, root.filePath("alpha/" + f)));
      SAMPLE_CHECK(QFile::copy(fixtures + f, root.filePath("gamma/" + f)));
    }
    for (const char* f : {"tiny_step100.pt", "tiny_step200.pt"})
      SAMPLE_CHECK(QFile::copy(fixtures + f, root.filePath(QStringLiteral("beta/") + f)));

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
    SAMPLE_CHECK(alpha.open(QIODevice::WriteOnly));
    SAMPLE_CHECK(alpha.write(jsonl) == jsonl.size());
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
      log += "step=" + QByteArray::number(step) + " loss=" + loss + " lr=" + lr +
             " accuracy=" + acc + "%\n";
      m_betaLoss.push_back({step, loss.toDouble()});
      m_betaLr.push_back({step, lr.toDouble()});
      m_betaAccuracy.push_back({step, acc.toDouble()});
    }
    log += "Training done\n";
    QFile beta(root.filePath("beta/train.log"));
    SAMPLE_CHECK(beta.open(QIODevice::WriteOnly));
    SAMPLE_CHECK(beta.write(log) == log.size());
    beta.close();

    m_gammaLoss.clear();
    for (const QString& f : alphaFiles) {
      const QJsonObject e = m_manifestRuns.value("runs/tiny/" + f).toObject();
      m_gammaLoss.push_back({qint64(e.value("step").toDouble()), e.value("loss").toDouble()});
    }
    std::sort(m_gammaLoss.begin(), m_gammaLoss.end(),
              [](const Point& a, const Point& b) { return a.step < b.step; });
    return {};
  }

  // Reads the runs of m_dir into `view` and waits for curvesReady().
  bool load(CurvesView& view) {
    QSignalSpy ready(&view, &CurvesView::curvesReady);
    view.setRuns(scanDirectory(pathToStd(m_dir->path())).runs);
    if (!ready.wait(kLoadTimeoutMs)) return false;
    return ready.count() == 1 && !view.isLoading();
  }

  QJsonObject m_manifestRuns;  // manifest "runs": relative path -> {run, step, kind, loss, error}
  std::unique_ptr<QTemporaryDir> m_dir;
  // What the files written by writeSample() hold.
  Series m_alphaLoss, m_alphaLr, m_betaLoss, m_betaLr, m_betaAccuracy, m_gammaLoss;
  std::vector<double> m_alphaWall;  // wall_time of alpha's loss points; NaN where the line has none
  std::vector<qint64> m_alphaTokens;  // tokens of alpha's loss points
};

#undef SAMPLE_CHECK

}  // namespace curves_sample
