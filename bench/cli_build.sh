# Sourced by the metrics benchmarks (run_metrics_bench.sh, run_sweep_bench.sh,
# run_tfevents_bench.sh): `bench_cli_build REPO [BUILD_DIR] -- TARGET...`
# sets BUILD to BUILD_DIR, or to a Release build without LibTorch, the GUI
# or the tests in REPO/build/bench-metrics (configured on first use), and
# builds the targets there. JOBS: parallel jobs (default 2).
bench_cli_build() {
  local repo="$1"
  shift
  if [[ $# -ge 1 && "$1" != "--" ]]; then
    BUILD="$(cd "$1" && pwd)"
    shift
  else
    BUILD="$repo/build/bench-metrics"
    cmake -S "$repo" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_WITH_TORCH=OFF \
      -DCKPT_BUILD_TESTS=OFF -DCKPT_BUILD_GUI=OFF >/dev/null
  fi
  [[ "${1:-}" == "--" ]] && shift
  cmake --build "$BUILD" --target "$@" -j "${JOBS:-2}" >/dev/null
}
