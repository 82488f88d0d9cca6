#include "browser/cellformat.h"

#include <ctime>

#include <QApplication>
#include <QDateTime>
#include <map>

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
  static int64_t minuteStart = 1, minuteEnd = 0;  // [start, end): the kept text's seconds
  static QString kept;
  if (secs >= minuteStart && secs < minuteEnd) return kept;
  const time_t t = static_cast<time_t>(secs);
  struct tm local {};
  if (!localtime_r(&t, &local))
    return QDateTime::fromSecsSinceEpoch(secs).toString(QStringLiteral("yyyy-MM-dd HH:mm"));
  kept = QString::asprintf("%04d-%02d-%02d %02d:%02d", local.tm_year + 1900, local.tm_mon + 1,
                           local.tm_mday, local.tm_hour, local.tm_min);
  // The same minute on the clock, unless the zone's offset changes in it
  // (a leap second's 60 ends it a second later: kept to 60 s after its start).
  minuteStart = secs - local.tm_sec;
  minuteEnd = minuteStart + 60;
  const time_t last = static_cast<time_t>(minuteEnd - 1);
  struct tm end {};
  if (local.tm_sec > 59 || !localtime_r(&last, &end) || end.tm_gmtoff != local.tm_gmtoff ||
      end.tm_min != local.tm_min)
    minuteEnd = secs + 1;  // this second only
  return kept;
}

}  // namespace ckpt
