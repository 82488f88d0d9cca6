#include "textformat.h"

#include <QCoreApplication>
#include <QFile>
#include <cmath>

#include "ckpt/format/error.h"

namespace ckpt {

QString fromStd(const std::string& s) {
  return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

QString pathFromStd(const std::string& path) {
  return QFile::decodeName(QByteArray::fromStdString(path));
}

std::string pathToStd(const QString& path) {
  return QFile::encodeName(path).toStdString();
}

QString groupedNumber(uint64_t n) {
  QString s = QString::number(n);
  for (qsizetype i = s.size() - 3; i > 0; i -= 3) s.insert(i, QLatin1Char(','));
  return s;
}

QString lossText(double loss) {
  return QString::number(loss, 'f', 4);
}

QString sizeText(uint64_t bytes) {
  return fromStd(humanBytes(bytes));
}

QString countText(uint64_t n, const char* singular, const char* plural) {
  return groupedNumber(n) + " " + QString::fromLatin1(n == 1 ? singular : plural);
}

QString optimizerShareText(uint64_t optimizerBytes, uint64_t total) {
  if (!optimizerBytes || !total) return {};
  const int percent = int(std::lround(100.0 * double(optimizerBytes) / double(total)));
  return QCoreApplication::translate("ckpt", "%1 optimizer state (%2%)")
      .arg(sizeText(optimizerBytes))
      .arg(percent);
}

}  // namespace ckpt
