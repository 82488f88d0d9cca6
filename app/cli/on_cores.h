#pragma once
// Work on many independent items spread over the machine's cores (the
// safety scan's files, a sweep's hyperparameter files): each thread takes
// the next index until none is left.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ckpt::cli {

// fn(i) once for each i in [0, n), on up to as many threads as there are
// cores (at most 8; this thread is one of them). `stop()`, asked before
// each item, ends it early. The first exception fn throws ends it too and
// is rethrown here once every thread is done.
template <typename Fn, typename Stop>
void forEachOnCores(size_t n, Fn&& fn, Stop&& stop) {
  std::atomic<size_t> next{0};
  std::mutex failureMutex;
  std::exception_ptr failure;
  auto work = [&] {
    for (size_t i; !stop() && (i = next++) < n;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(failureMutex);
        if (!failure) failure = std::current_exception();
        next = n;
      }
    }
  };
  const size_t threads =
      std::min<size_t>(n, std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  if (failure) std::rethrow_exception(failure);
}

template <typename Fn>
void forEachOnCores(size_t n, Fn&& fn) {
  forEachOnCores(n, std::forward<Fn>(fn), [] { return false; });
}

}  // namespace ckpt::cli
