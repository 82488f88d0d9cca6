#include "training/trainbackendloader.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QLibrary>
#include <QMutex>

#include "ckpt/trainapi/train_backend.h"

#ifndef CKPT_TRAIN_BACKEND_BUILT
#define CKPT_TRAIN_BACKEND_BUILT 0
#endif

namespace ckpt {

namespace {
// What the loader says is read by a person (the Train and Generate panels show it).
QString tr(const char* text) {
  return QCoreApplication::translate("ckpt::TrainBackend", text);
}
}  // namespace
namespace {

const char* kFileName = "ckptscope-train-backend.so";
const char* kEnvVar = "CKPTSCOPE_TRAIN_BACKEND";

}  // namespace

bool trainBackendBuilt() {
  return CKPT_TRAIN_BACKEND_BUILT != 0;
}

QStringList trainBackendCandidates() {
  const QString env = qEnvironmentVariable(kEnvVar);
  if (!env.isEmpty()) return {env};  // an explicit choice is not second-guessed
  const QString exeDir = QCoreApplication::applicationDirPath();
  return {QDir(exeDir).filePath(kFileName),
          QDir(exeDir).filePath(QStringLiteral("../lib/ckptscope/") + kFileName),
          QDir(exeDir).filePath(QStringLiteral("../lib/x86_64-linux-gnu/ckptscope/") + kFileName),
          QDir(exeDir).filePath(QStringLiteral("../lib64/ckptscope/") + kFileName)};
}

QString trainProgram() {
  const QString env = qEnvironmentVariable("CKPTSCOPE_TRAIN_PROGRAM");
  if (!env.isEmpty()) return env;
  const QDir exeDir(QCoreApplication::applicationDirPath());
  for (const QString& candidate : {exeDir.filePath(QStringLiteral("ckptscope-train")),
                                   exeDir.filePath(QStringLiteral("../ckptscope-train"))}) {
    const QFileInfo f(candidate);
    if (f.isFile() && f.isExecutable()) return f.canonicalFilePath();
  }
  return {};
}

TrainBackendLoad loadTrainBackendFrom(const QString& file) {
  TrainBackendLoad r;
  r.path = QFileInfo(file).absoluteFilePath();
  if (!QFileInfo::exists(file)) {
    r.error = tr("%1 does not exist").arg(r.path);
    return r;
  }
  // LibTorch's OpenMP workers spin between steps unless told otherwise,
  // which starves the GUI thread on small machines; the OpenMP runtime reads
  // this when the plugin pulls it in (ckptscope-cli does the same for
  // ckptscope-train).
  if (qEnvironmentVariableIsEmpty("OMP_WAIT_POLICY")) qputenv("OMP_WAIT_POLICY", "PASSIVE");
  QLibrary lib(r.path);
  // Every symbol resolved now: a broken install fails here, with a message,
  // not in the middle of a run. (Qt loads it RTLD_LOCAL: the plugin's own
  // copies of the ckpt libraries stay out of the app's way.)
  lib.setLoadHints(QLibrary::ResolveAllSymbolsHint);
  if (!lib.load()) {
    r.error = tr("cannot load %1: %2").arg(r.path, lib.errorString());
    return r;
  }
  const auto create =
      reinterpret_cast<CkptCreateTrainBackendFn>(lib.resolve(CKPT_TRAIN_BACKEND_FACTORY));
  if (!create) {
    r.error =
        tr("%1 is not a CkptScope training plugin (no %2)").arg(r.path, CKPT_TRAIN_BACKEND_FACTORY);
    return r;
  }
  r.backend = create(kTrainBackendAbiVersion);
  if (!r.backend) r.error = tr("%1 was built for another version of CkptScope").arg(r.path);
  // Never unloaded: `lib` going out of scope does not unload (only unload() does).
  return r;
}

const TrainBackendLoad& trainBackend() {
  static QMutex mutex;
  static TrainBackendLoad loaded;
  static bool tried = false;
  const QMutexLocker lock(&mutex);
  if (tried) return loaded;
  tried = true;
  const QStringList candidates = trainBackendCandidates();
  for (const QString& file : candidates) {
    if (!QFileInfo::exists(file) && candidates.size() > 1) continue;
    loaded = loadTrainBackendFrom(file);
    return loaded;
  }
  loaded.path = candidates.value(0);
  loaded.error = trainBackendBuilt()
                     ? tr("The training plugin (%1) was not found. Looked in:\n  %2")
                           .arg(QLatin1String(kFileName), candidates.join(QStringLiteral("\n  ")))
                     : tr("No training in this build: CkptScope was built without LibTorch "
                          "(CKPT_WITH_TORCH=OFF), so there is no %1.")
                           .arg(QLatin1String(kFileName));
  return loaded;
}

}  // namespace ckpt
