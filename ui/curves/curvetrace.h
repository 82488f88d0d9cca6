#pragma once
// CKPTSCOPE_TRACE_CURVES=1: the Curves tab prints where the time of an open
// goes, one line a phase on stderr ("curves: read runs (pool) 812.4 ms"), so
// the phases of a sweep's open can be measured (bench/run_gui_bench.sh
// sweep). Phases on the GUI thread are timed as they run (CurveTracePhase);
// the work of the pool's threads is summed over the runs read (addWorker)
// and printed when the runs are all read (reportWorkers). Off: nothing is
// timed, nothing printed.

#include <QElapsedTimer>
#include <cstdint>

namespace ckpt {

[[nodiscard]] bool curveTraceOn();

// Prints "curves: NAME  MS ms" when it goes out of scope (trace on).
class CurveTracePhase {
 public:
  explicit CurveTracePhase(const char* name);
  ~CurveTracePhase();
  CurveTracePhase(const CurveTracePhase&) = delete;
  CurveTracePhase& operator=(const CurveTracePhase&) = delete;

 private:
  const char* m_name;
  QElapsedTimer m_clock;
};

// What the pool's threads do per run, summed over the runs of an open.
enum class CurveWorkerPhase { Sources, Metrics, Hparams, Summary, Count };
// Times f() and adds it to `phase` (just f() when the trace is off).
template <typename F>
auto traceWorker(CurveWorkerPhase phase, F&& f) -> decltype(f());
void addWorkerNs(CurveWorkerPhase phase, int64_t ns);
// Prints the sums since the last report and starts them again at 0.
void reportWorkers();
// A line of its own ("curves: NAME  VALUE").
void traceNote(const char* name, double ms);

template <typename F>
auto traceWorker(CurveWorkerPhase phase, F&& f) -> decltype(f()) {
  if (!curveTraceOn()) return f();
  QElapsedTimer clock;
  clock.start();
  struct Add {
    CurveWorkerPhase phase;
    QElapsedTimer& clock;
    ~Add() { addWorkerNs(phase, clock.nsecsElapsed()); }
  } add{phase, clock};
  return f();
}

}  // namespace ckpt
