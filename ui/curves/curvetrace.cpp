#include "curves/curvetrace.h"

#include <QtGlobal>
#include <array>
#include <atomic>
#include <cstdio>

namespace ckpt {
namespace {

std::array<std::atomic<int64_t>, size_t(CurveWorkerPhase::Count)> g_worker{};

constexpr std::array<const char*, size_t(CurveWorkerPhase::Count)> kWorkerNames{
    "pool: find sources", "pool: read metrics", "pool: hyperparameters", "pool: summaries"};

}  // namespace

bool curveTraceOn() {
  static const bool on = qEnvironmentVariableIntValue("CKPTSCOPE_TRACE_CURVES") != 0;
  return on;
}

CurveTracePhase::CurveTracePhase(const char* name) : m_name(name) {
  if (curveTraceOn()) m_clock.start();
}

CurveTracePhase::~CurveTracePhase() {
  if (curveTraceOn()) traceNote(m_name, double(m_clock.nsecsElapsed()) / 1e6);
}

void addWorkerNs(CurveWorkerPhase phase, int64_t ns) {
  g_worker[size_t(phase)] += ns;
}

void reportWorkers() {
  if (!curveTraceOn()) return;
  for (size_t i = 0; i < g_worker.size(); ++i)
    traceNote(kWorkerNames[i], double(g_worker[i].exchange(0)) / 1e6);
}

void traceNote(const char* name, double ms) {
  std::fprintf(stderr, "curves: %-32s %9.1f ms\n", name, ms);
}

}  // namespace ckpt
