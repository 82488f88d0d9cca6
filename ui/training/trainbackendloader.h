#pragma once

#include <QString>
#include <QStringList>

namespace ckpt {

class TrainBackend;

// Finding and loading ckptscope-train-backend, the LibTorch plugin
// (ckpt/trainapi/train_backend.h). Where it looks, in order:
//   1. $CKPTSCOPE_TRAIN_BACKEND (a file; tests and odd installs),
//   2. next to the executable (the build tree and a relocatable install),
//   3. ../lib/ckptscope/ and ../lib/<multiarch>/ckptscope/ from the executable (an FHS install).
struct TrainBackendLoad {
  TrainBackend* backend = nullptr;  // null when it could not be loaded; never unloaded
  QString path;                     // the file loaded (or the first one tried)
  QString error;                    // for the user, when backend is null
};

// The process-wide backend: loaded on the first call (from any thread;
// dlopen of LibTorch takes ~0.4 s, so the panel calls it off the GUI
// thread), the same answer after.
const TrainBackendLoad& trainBackend();

// Loads the plugin from one file, without caching (tests).
TrainBackendLoad loadTrainBackendFrom(const QString& file);

// The files trainBackend() tries, in order.
QStringList trainBackendCandidates();

// ckptscope-train, which the plugin starts once per rank when a job has
// several processes: $CKPTSCOPE_TRAIN_PROGRAM, else beside the executable
// (an install: both in bin/), else one folder up (the build tree:
// app/gui/ckptscope, app/ckptscope-train). "" when none is there.
QString trainProgram();

// Whether this build made the plugin at all (CKPT_WITH_TORCH).
bool trainBackendBuilt();

}  // namespace ckpt
