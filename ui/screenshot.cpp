#include "screenshot.h"

#include <QDir>
#include <QFileInfo>
#include <QImageWriter>
#include <QPixmap>
#include <QWidget>

namespace ckpt {

bool saveScreenshot(QWidget* widget, const QString& fileName, QString* error) {
  const QPixmap pixmap = widget->grab();
  auto failed = [&](const QString& why) {
    if (error) *error = QObject::tr("cannot write %1: %2").arg(fileName, why);
    return false;
  };
  if (pixmap.isNull()) return failed(QObject::tr("the window rendered to an empty image"));
  const QString dir = QFileInfo(fileName).absolutePath();
  if (!QDir().mkpath(dir)) return failed(QObject::tr("cannot create directory %1").arg(dir));
  QImageWriter writer(fileName, "png");
  if (!writer.write(pixmap.toImage())) return failed(writer.errorString());
  return true;
}

}  // namespace ckpt
