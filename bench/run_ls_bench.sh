#!/usr/bin/env bash
# `ls` benchmark: a fresh `ckptscope-cli ls DIR` process over the folder of
# 200 checkpoints (what a person waits for; with each file's safety verdict,
# from the reader's own walk: one pass) against Python's lazy loading of the
# same files (bench/python_anchors.py lazy_describe: zip directory and
# data.pkl with a persistent_load that reads no tensor byte), in one run.
#
#   bench/run_ls_bench.sh [BUILD_DIR]   (default: a light Release build, bench/cli_build.sh)
# Environment:
#   CKPT_BENCH_DATA  cache folder (default build/bench-data): the 1.8 GB
#                    checkpoint bench/make_checkpoint.py writes and the folder
#                    of hard links to it that run_bench.sh also uses
#   LS_FILES         checkpoints in the folder (default 200)
#   RUNS             fresh processes of each side; medians reported (default 21)
#   GOAL_MS          the ls median to stay under (default 60, issue #24)
#   CKPT_CLI         time this ckptscope-cli instead of building one
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${CKPT_CLI:-}" ]]; then
  CLI="$CKPT_CLI"  # a binary built elsewhere (another checkout's, for a before/after pair)
  BUILD="$(cd "$(dirname "$CLI")/.." && pwd)"
else
  source "$REPO/bench/cli_build.sh"
  bench_cli_build "$REPO" "$@" -- ckptscope-cli
  CLI="$BUILD/app/ckptscope-cli"
fi
TORCH_PY=/usr/bin/python3
LS_FILES="${LS_FILES:-200}"
RUNS="${RUNS:-21}"
GOAL_MS="${GOAL_MS:-60}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"
[[ -x "$CLI" ]] || { echo "run_ls_bench: $CLI is not built" >&2; exit 1; }

# ---- data: run_bench.sh's folder (hard links to ONE file, re-made when stale)
mkdir -p "$DATA"
FILE="$DATA/gpt2s-sinks_step12000.pt"
"$TORCH_PY" "$REPO/bench/make_checkpoint.py" "$FILE"
DIR="$DATA/ls$LS_FILES"
mkdir -p "$DIR"
inode="$(stat -c %i "$FILE")"
stale=0 count=0
for f in "$DIR"/*.pt; do
  [[ -e "$f" ]] || continue
  count=$((count + 1))
  [[ "$(stat -c %i "$f")" == "$inode" ]] || stale=1
done
if [[ $stale -eq 1 || $count -ne $LS_FILES ]]; then
  rm -f "$DIR"/*.pt
  for i in $(seq 1 "$LS_FILES"); do ln "$FILE" "$DIR/gpt2s-sinks_step$((i * 500)).pt"; done
fi

# ---- machine
echo "== machine"
echo "cpu:      $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores online)"
blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
alt="$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p' || true)"
echo "libblas:  libblas.so.3 -> ${blas:-not installed} (alternative libblas.so.3-x86_64-linux-gnu: ${alt:-none})"
echo "kernel:   $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build:    $BUILD ($(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null))"
echo "folder:   $DIR: $LS_FILES hard links to ONE $(du -h "$FILE" | cut -f1) file (its pages cached once)"

# ---- measure (page cache warm for both sides; both must list every file)
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
listed="$("$CLI" ls --json "$DIR" | "$TORCH_PY" -c '
import json, sys
d = json.load(sys.stdin)
cks = [c for r in d["runs"] for c in r["checkpoints"]]
print(len(cks), sum(1 for c in cks if c["verdict"] == "safe"))')"
read -r n_listed n_safe <<<"$listed"
[[ "$n_listed" == "$LS_FILES" ]] || { echo "run_ls_bench: ls listed $n_listed of $LS_FILES files" >&2; exit 1; }
anchor_once() {
  "$TORCH_PY" - "$DIR" "$REPO/bench" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
import python_anchors
r = python_anchors.lazy_directory(sys.argv[1], 1)
print(r["files"], r["s_median"])
PY
}
read -r py_files _ <<<"$(anchor_once)"
[[ "$py_files" == "$LS_FILES" ]] || { echo "run_ls_bench: the anchor read $py_files files" >&2; exit 1; }
cli_times=() cli_cpu=() py_times=() py_walk=()
cpu_file="$(mktemp)"
trap 'rm -f "$cpu_file"' EXIT
for _ in $(seq 1 "$RUNS"); do
  # The process's CPU time too (user + system, 10 ms resolution): what other
  # load on a shared machine inflates less than the wall time.
  t0=$(now); /usr/bin/time -f '%U %S' -o "$cpu_file" "$CLI" ls "$DIR" >/dev/null; t1=$(now)
  cli_times+=("$(echo "($t1 - $t0) * 1000" | bc -l)")
  cli_cpu+=("$(awk '{print ($1 + $2) * 1000}' "$cpu_file")")
  t0=$(now); out=$(anchor_once); t1=$(now)
  py_times+=("$(echo "($t1 - $t0) * 1000" | bc -l)")
  py_walk+=("$(echo "$(echo "$out" | cut -d' ' -f2) * 1000" | bc -l)")
done
cli=$(printf '%s\n' "${cli_times[@]}" | median)
cli_min=$(printf '%s\n' "${cli_times[@]}" | sort -g | head -1)
cpu=$(printf '%s\n' "${cli_cpu[@]}" | median)
py=$(printf '%s\n' "${py_times[@]}" | median)
walk=$(printf '%s\n' "${py_walk[@]}" | median)
echo
echo "== ls of $LS_FILES checkpoints, median of $RUNS fresh processes (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '  ckptscope-cli ls DIR (process)       %8.1f ms  (min %.1f; CPU %.0f ms; %d verdicts, %d safe)\n' \
  "$cli" "$cli_min" "$cpu" "$n_listed" "$n_safe"
printf '  python lazy loading (process)        %8.1f ms  (its reads alone, in-process: %.1f ms)\n' "$py" "$walk"
printf '  ratio python / ours: %.1fx (processes), %.1fx (against its reads alone)\n' \
  "$(echo "$py / $cli" | bc -l)" "$(echo "$walk / $cli" | bc -l)"
printf '  goal: ls median <= %s ms: %s\n' "$GOAL_MS" "$(echo "$cli <= $GOAL_MS" | bc -l | sed 's/1/PASS/;s/0/FAIL/')"
