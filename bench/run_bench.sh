#!/usr/bin/env bash
# Reader benchmark: CkptScope against Python anchors measured in the same run.
#
#   bench/run_bench.sh [BUILD_DIR]
#
# Without BUILD_DIR it configures build/bench (Release, no GUI, no tests) and
# builds bench_reader and ckptscope-cli; with one it builds those two targets
# there (incremental). Environment:
#   CKPT_BENCH_DATA  cache folder (default build/bench-data): the 1.8 GB
#                    checkpoint and the 200-link `ls` folder, reused between runs
#   JOBS             build parallelism (default 2)
#   ITERS            in-process iterations (default 2000)
#   LAUNCHES         fresh `ckptscope-cli info` launches (default 20)
#   LOAD_RUNS        fresh torch.load processes (default 3)
#   LS_FILES         checkpoints in the `ls` folder (default 200)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_PY=/usr/bin/python3  # Debian's python3 with python3-torch
JOBS="${JOBS:-2}"
ITERS="${ITERS:-2000}"
LAUNCHES="${LAUNCHES:-20}"
LOAD_RUNS="${LOAD_RUNS:-3}"
LS_FILES="${LS_FILES:-200}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"

# ---- build -------------------------------------------------------------------
if [[ $# -ge 1 ]]; then
  BUILD="$(cd "$1" && pwd)"
else
  BUILD="$REPO/build/bench"
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_BUILD_GUI=OFF -DCKPT_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD" --target bench_reader ckptscope-cli -j "$JOBS" >/dev/null
BENCH="$BUILD/bench/bench_reader"
CLI="$BUILD/app/ckptscope-cli"
for exe in "$BENCH" "$CLI"; do
  [[ -x "$exe" ]] || { echo "run_bench: $exe was not built" >&2; exit 1; }
done
BUILD_TYPE="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)"

# ---- data --------------------------------------------------------------------
mkdir -p "$DATA"
FILE="$DATA/gpt2s-sinks_step12000.pt"
"$TORCH_PY" "$REPO/bench/make_checkpoint.py" "$FILE"

# `ls` folder: hard links to the one file (200 real copies would need ~360 GB).
# make_checkpoint.py replaces the file when it rewrites it (new inode): links
# to an old inode would keep a second 1.8 GB alive, so they are re-made then.
LSDIR="$DATA/ls$LS_FILES"
mkdir -p "$LSDIR"
inode="$(stat -c %i "$FILE")"
stale=0
count=0
for f in "$LSDIR"/*.pt; do
  [[ -e "$f" ]] || continue
  count=$((count + 1))
  [[ "$(stat -c %i "$f")" == "$inode" ]] || stale=1
done
if [[ $stale -eq 1 || $count -ne $LS_FILES ]]; then
  rm -f "$LSDIR"/*.pt
  for i in $(seq 1 "$LS_FILES"); do
    ln "$FILE" "$LSDIR/gpt2s-sinks_step$((i * 500)).pt"
  done
fi
SIZE="$(stat -c %s "$FILE")"
LINKS_NOTE="$(awk -v n="$LS_FILES" -v s="$SIZE" -v d="$LSDIR" 'BEGIN {
  printf "note: `ls` reads %s: %d hard links to ONE %.2f GB file (same inode: its pages are cached once, disk holds one copy); %d real copies would need %.0f GB", d, n, s / 1e9, n, n * s / 1e9 }')"

# ---- machine -----------------------------------------------------------------
echo "== machine"
echo "cpu:      $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores online)"
blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
alt="$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p' || true)"
echo "libblas:  libblas.so.3 -> ${blas:-not installed} (alternative libblas.so.3-x86_64-linux-gnu: ${alt:-none})"
echo "kernel:   $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build:    $BUILD (${BUILD_TYPE:-?}); torch $("$TORCH_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
echo "file:     $FILE ($SIZE bytes; page cache warm: every figure reads the same file again)"
echo "$LINKS_NOTE"

# ---- measure -------------------------------------------------------------------
OUT="$DATA/results"
mkdir -p "$OUT"
echo
echo "== python anchors ($TORCH_PY bench/python_anchors.py)"
"$TORCH_PY" "$REPO/bench/python_anchors.py" "$FILE" --dir "$LSDIR" --load-runs "$LOAD_RUNS" > "$OUT/python.json"
echo "written $OUT/python.json"
echo
echo "== bench_reader"
"$BENCH" "$FILE" --iters "$ITERS" --dir "$LSDIR" --cli "$CLI" --launches "$LAUNCHES" --json "$OUT/cpp.json"
echo
echo "== results (ratio = Python / ours; load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
"$TORCH_PY" "$REPO/bench/report.py" "$OUT/python.json" "$OUT/cpp.json" --links-note "$LINKS_NOTE"
