#include "workpool.h"

#include <QThread>
#include <QThreadPool>
#include <algorithm>

namespace ckpt {

QThreadPool* workPool() {
  static QThreadPool* const pool = [] {
    auto* p = new QThreadPool;  // lives as long as the process, like the global pool
    p->setMaxThreadCount(std::max(1, QThread::idealThreadCount()));
    return p;
  }();
  return pool;
}

}  // namespace ckpt
