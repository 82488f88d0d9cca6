#pragma once
// The thread pool ui/ runs its own work on (BackgroundJob, the Curves tab's
// reading, the run watcher's polling, the training plugin's loading), as
// many threads as the machine has cores. Not QThreadPool::globalInstance():
// Qt's raster painter splits a large fill over the global pool and waits for
// it on the GUI thread, so with the global pool busy reading checkpoints a
// repaint (a button pressed) waited for the reading to end, and a Cancel
// clicked during a Compare landed after the comparison had finished.

class QThreadPool;

namespace ckpt {

QThreadPool* workPool();

}  // namespace ckpt
