#!/usr/bin/env bash
# Desktop app benchmark (issue #4's speed goals), offscreen:
#   - cold start: a fresh process to a populated browser for 200 checkpoints
#     of the 1.8 GB benchmark size (goal < 1 s), median of RUNS launches;
#   - statistics, histogram and heat map of the 38.6M-element embedding
#     (goal < 0.5 s);
#   - the longest GUI-thread stall while scanning, showing a checkpoint and
#     computing those statistics (goal < 50 ms).
#
#   bench/run_gui_bench.sh [BUILD_DIR]
#
# Or issue #26's sweep, the whole app on SWEEP_RUNS x SWEEP_POINTS lines of
# metrics.jsonl (bench/make_sweep_bench.py; goal at 1,000 x 20,000: curves
# shown <= 3 s on the first open, <= 0.5 s on the second, <= 600 MB), each
# open a fresh process: cold (an empty metrics cache), then warm (the cache
# the cold open wrote), REPEAT times (default 3, the median and the largest
# RSS reported), next to the plain Python reader (bench/sweep_anchor.py) run
# in the same benchmark. The cache lives in a temporary folder.
#
#   bench/run_gui_bench.sh sweep [BUILD_DIR]
#
# Needs the data of bench/run_bench.sh (build/bench-data: the checkpoint and
# its 200-link folder); run that first. Environment: RUNS (default 7).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE=checkpoints
if [[ "${1:-}" == sweep ]]; then
  MODE=sweep
  shift
fi
RUNS="${RUNS:-7}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"
FILE="$DATA/gpt2s-sinks_step12000.pt"
LSDIR="$DATA/ls200"
TENSOR="model_state.token_embed.weight"

if [[ $MODE == checkpoints && ( ! -f "$FILE" || "$(find "$LSDIR" -name '*.pt' 2>/dev/null | wc -l)" -ne 200 ) ]]; then
  echo "run_gui_bench: no benchmark data in $DATA: run bench/run_bench.sh first" >&2
  exit 1
fi
if [[ $# -ge 1 ]]; then
  BUILD="$(cd "$1" && pwd)"
else
  BUILD="$REPO/build/bench-gui"
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_WITH_TORCH=OFF -DCKPT_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD" --target bench_gui -j "${JOBS:-2}" >/dev/null
BENCH="$BUILD/bench/bench_gui"

if [[ $MODE == sweep ]]; then
  SWEEP_RUNS="${SWEEP_RUNS:-1000}"
  SWEEP_POINTS="${SWEEP_POINTS:-20000}"
  source "$REPO/bench/sweep_data.sh"
  sweep_data "$REPO" "$SWEEP_RUNS" "$SWEEP_POINTS"
  echo "== machine"
  echo "cpu:   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "data:  $SWEEP_RUNS runs x $SWEEP_POINTS lines, $(du -sb "$DATA" | cut -f1) bytes (page cache warm after the first read)"
  echo "build: $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt"); Qt: QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}"
  echo
  exec python3 "$REPO/bench/gui_sweep.py" "$BENCH" "$DATA" "${REPEAT:-3}" "$SWEEP_RUNS" "$SWEEP_POINTS" \
    "$REPO/bench/sweep_anchor.py"
fi

echo "== machine"
echo "cpu:   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data:  $LSDIR: 200 hard links to one $(stat -c %s "$FILE")-byte checkpoint (page cache warm after the first read)"
echo "Qt:    QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}"
echo
echo "== cold start ($RUNS fresh processes; the first warms the page cache and is not counted)"
"$BENCH" cold "$LSDIR" >/dev/null 2>&1
results=()
for i in $(seq 1 "$RUNS"); do
  line="$("$BENCH" cold "$LSDIR" 2>/dev/null)"
  echo "$line"
  results+=("$line")
done
printf '%s\n' "${results[@]}" | python3 "$REPO/bench/gui_report.py" cold
echo
echo "== GUI-thread stalls (2 ms timer on the GUI thread; longest gap per phase)"
line="$("$BENCH" stall "$LSDIR" "$LSDIR/gpt2s-sinks_step500.pt" "$TENSOR" 2>/dev/null)"
echo "$line"
echo "$line" | python3 "$REPO/bench/gui_report.py" stall
echo
echo "== curves: one run of 1,000,000 metrics.jsonl points, then 20,000 more arriving live"
line="$("$BENCH" curves 1000000 2>/dev/null)"
echo "$line"
echo "$line" | python3 "$REPO/bench/gui_report.py" curves
