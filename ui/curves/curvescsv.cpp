#include "curves/curvescsv.h"

#include <QLocale>
#include <QObject>
#include <QSaveFile>

#include "textformat.h"

namespace ckpt {
namespace {

QString csvField(const QString& s) {
  if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) &&
      !s.contains(QLatin1Char('\n')) && !s.contains(QLatin1Char('\r')))
    return s;
  QString quoted = s;
  quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString csvNumber(double v) {
  return QString::number(v, 'g', QLocale::FloatingPointShortest);
}

}  // namespace

bool writeCurvesCsv(const QString& fileName, const std::vector<CurveRun>& runs,
                    const std::string& metric, double smoothing, QString* error) {
  QSaveFile file(fileName);
  auto failed = [&] {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(fileName, file.errorString());
    return false;
  };
  if (!file.open(QIODevice::WriteOnly)) return failed();
  QByteArray out = "run,metric,step,value,smoothed\n";
  for (const CurveRun& run : runs) {
    const MetricSeries* series = run.find(metric);
    if (!series) continue;
    std::vector<double> values;
    values.reserve(series->points.size());
    for (const MetricPoint& p : series->points) values.push_back(p.value);
    const std::vector<double> smoothed = smoothEma(values, smoothing);
    const QString prefix = csvField(run.name) + ',' + csvField(fromStd(metric)) + ',';
    for (size_t j = 0; j < values.size(); ++j)
      out += (prefix + QString::number(series->points.step(j)) + ',' + csvNumber(values[j]) + ',' +
              csvNumber(smoothed[j]) + '\n')
                 .toUtf8();
  }
  if (file.write(out) != out.size()) return failed();
  if (!file.commit()) return failed();
  return true;
}

}  // namespace ckpt
