# Sourced by the sweep benchmarks (run_sweep_bench.sh, run_gui_bench.sh
# sweep): `sweep_data REPO RUNS POINTS` sets DATA to the sweep of RUNS runs x
# POINTS lines of metrics.jsonl (bench/make_sweep_bench.py) under
# CKPT_BENCH_DATA (default REPO/build/bench-data), written on first use.
sweep_data() {
  local repo="$1" runs="$2" points="$3"
  DATA="${CKPT_BENCH_DATA:-$repo/build/bench-data}/sweep-${runs}x${points}"
  if [[ ! -f "$DATA/.complete" ]]; then
    local start
    start=$(date +%s.%N)
    python3 "$repo/bench/make_sweep_bench.py" "$DATA" "$runs" "$points"
    touch "$DATA/.complete"
    echo "generated $DATA in $(echo "$(date +%s.%N) - $start" | bc) s"
  fi
}
