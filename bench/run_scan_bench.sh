#!/usr/bin/env bash
# Safety-scan benchmark: `ckptscope-cli scan --recursive` of the 200-checkpoint
# folder against bench/scan_anchor.py (pickletools.genops over the same
# records), in one run.
#
#   bench/run_scan_bench.sh BUILD_DIR   (a build with ckptscope-cli built)
# Environment:
#   CKPT_BENCH_DATA  cache folder (default build/bench-data): the checkpoint
#                    bench/make_checkpoint.py writes (1.8 GB) and the folder of
#                    200 hard links to it that run_bench.sh also uses
#   LS_FILES         checkpoints in the folder (default 200)
#   RUNS             runs of each side; the median is reported (default 5)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:?usage: run_scan_bench.sh BUILD_DIR}" && pwd)"
CLI="$BUILD/app/ckptscope-cli"
TORCH_PY=/usr/bin/python3
LS_FILES="${LS_FILES:-200}"
RUNS="${RUNS:-5}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"
[[ -x "$CLI" ]] || { echo "run_scan_bench: $CLI is not built" >&2; exit 1; }

mkdir -p "$DATA"
FILE="$DATA/gpt2s-sinks_step12000.pt"
"$TORCH_PY" "$REPO/bench/make_checkpoint.py" "$FILE"
DIR="$DATA/ls$LS_FILES"
mkdir -p "$DIR"
inode="$(stat -c %i "$FILE")"
for i in $(seq 1 "$LS_FILES"); do
  f="$DIR/gpt2s-sinks_step$((i * 100)).pt"
  if [[ ! -e "$f" || "$(stat -c %i "$f")" != "$inode" ]]; then ln -f "$FILE" "$f"; fi
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
# Warm the page cache for both sides, and check that both read every file.
"$CLI" scan --recursive "$DIR" | tail -1
"$TORCH_PY" "$REPO/bench/scan_anchor.py" "$DIR" | tail -2 | head -1
cli_times=() py_times=() py_walk=()
for _ in $(seq 1 "$RUNS"); do
  t0=$(now); "$CLI" scan --recursive "$DIR" >/dev/null; t1=$(now)
  cli_times+=("$(echo "$t1 - $t0" | bc -l)")
  t0=$(now); out=$("$TORCH_PY" "$REPO/bench/scan_anchor.py" "$DIR"); t1=$(now)
  py_times+=("$(echo "$t1 - $t0" | bc -l)")
  py_walk+=("$(echo "$out" | sed -n 's/^anchor-seconds: //p')")
done
cli=$(printf '%s\n' "${cli_times[@]}" | median)
py=$(printf '%s\n' "${py_times[@]}" | median)
walk=$(printf '%s\n' "${py_walk[@]}" | median)
printf 'scan of %d checkpoints (%s each), median of %d runs:\n' "$LS_FILES" "$(du -h "$FILE" | cut -f1)" "$RUNS"
printf '  ckptscope-cli scan --recursive   %8.3f s  (%.2f ms per file, process included)\n' "$cli" "$(echo "$cli * 1000 / $LS_FILES" | bc -l)"
printf '  python genops anchor (process)   %8.3f s  (its walk alone: %.3f s)\n' "$py" "$walk"
printf '  ratio: %.1fx (processes), %.1fx (against the anchor walk alone)\n' "$(echo "$py / $cli" | bc -l)" "$(echo "$walk / $cli" | bc -l)"
