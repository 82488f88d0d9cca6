#pragma once
// A folder and everything below it copied, for tests that change a copy of
// the fixtures (the fixtures themselves are shared by every test).

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QString>

namespace ckpt::test {

inline bool copyTree(const QString& from, const QString& to) {
  if (!QDir().mkpath(to)) return false;
  for (const QFileInfo& f :
       QDir(from).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
    const QString target = to + "/" + f.fileName();
    if (f.isDir() ? !copyTree(f.filePath(), target) : !QFile::copy(f.filePath(), target))
      return false;
  }
  return true;
}

}  // namespace ckpt::test
