#include "browser/cellformat.h"

#include <QApplication>
#include <QDateTime>
#include <map>

#include "ckpt/index/local_minute.h"

namespace ckpt {

QIcon standardIcon(QStyle::StandardPixmap which) {
  if (!qobject_cast<QApplication*>(QCoreApplication::instance())) return {};
  // A fresh QIcon per row would decode its PNG again for every row a view
  // sizes or paints (measured: most of a 200-row reset).
  static std::map<QStyle::StandardPixmap, QIcon> cache;
  auto it = cache.find(which);
  if (it == cache.end())
    it = cache.emplace(which, QApplication::style()->standardIcon(which)).first;
  return it->second;
}

// localtime_r reads the time zone once; QDateTime asked tzset() to stat
// /etc/localtime again for every row (a tenth of the app's time once
// 50,000 rows were listed). The text of the last local minute is kept:
// the files of a run are mostly written within minutes of each other
// (formatting every row's was a third of sizing the columns).
QString timeText(int64_t secs) {
  if (!secs) return {};
  static LocalMinuteText minute;
  static QString kept;
  if (minute.holds(secs)) return kept;
  const std::string* text = minute.of(secs);
  if (!text)
    return QDateTime::fromSecsSinceEpoch(secs).toString(QStringLiteral("yyyy-MM-dd HH:mm"));
  kept = QString::fromStdString(*text);
  return kept;
}

}  // namespace ckpt
