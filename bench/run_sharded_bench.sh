#!/usr/bin/env bash
# Sharded-checkpoint benchmark: opening an 8-rank DCP folder of the benchmark
# model against opening the single file (goal: under 8x), and consolidate's
# throughput against `cat` of the rank files into one file, in one run.
#
#   bench/run_sharded_bench.sh BUILD_DIR   (a build with ckptscope-cli built)
# Environment:
#   CKPT_BENCH_DATA  cache folder (default build/bench-data): the 1.8 GB file
#                    bench/make_checkpoint.py writes and its DCP folder
#   RANKS            ranks of the DCP folder (default 8)
#   RUNS             runs of each side; the median is reported (default 5)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:?usage: run_sharded_bench.sh BUILD_DIR}" && pwd)"
CLI="$BUILD/app/ckptscope-cli"
TORCH_PY=/usr/bin/python3
RANKS="${RANKS:-8}"
RUNS="${RUNS:-5}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"
[[ -x "$CLI" ]] || { echo "run_sharded_bench: $CLI is not built" >&2; exit 1; }
mkdir -p "$DATA"
FILE="$DATA/gpt2s-sinks_step12000.pt"
"$TORCH_PY" "$REPO/bench/make_checkpoint.py" "$FILE"
DCP="$DATA/dcp$RANKS"
"$TORCH_PY" "$REPO/bench/make_sharded_bench.py" "$FILE" "$DCP" "$RANKS"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
elapsed() { local t0; t0=$(now); "$@" >/dev/null; echo "$(now) - $t0" | bc -l; }

# Warm the page cache; both must open without error.
"$CLI" info "$FILE" --json >/dev/null
"$CLI" info "$DCP" --json >/dev/null
single=() sharded=()
for _ in $(seq 1 "$RUNS"); do
  single+=("$(elapsed "$CLI" info "$FILE" --json)")
  sharded+=("$(elapsed "$CLI" info "$DCP" --json)")
done
s=$(printf '%s\n' "${single[@]}" | median)
d=$(printf '%s\n' "${sharded[@]}" | median)
files=$(ls -A "$DCP" | grep -c -E '\.distcp$|^\.metadata$')
echo "open (info --json), median of $RUNS:"
printf '  single file    %8.3f s\n' "$s"
printf '  DCP %d ranks    %8.3f s  (%d files)\n' "$RANKS" "$d" "$files"
printf '  ratio          %8.2fx  (goal: under 8x)\n' "$(echo "$d / $s" | bc -l)"

OUT="$DATA/consolidated.pt"
CAT="$DATA/cat.bin"
rm -f "$OUT" "$CAT"
bytes=$(cat "$DCP"/__*.distcp | wc -c)
cons=() cats=()
for _ in $(seq 1 "$RUNS"); do
  cons+=("$(elapsed "$CLI" consolidate "$DCP" "$OUT")")
  rm -f "$OUT"
  t0=$(now); cat "$DCP"/__*.distcp > "$CAT"; sync "$CAT"; cats+=("$(echo "$(now) - $t0" | bc -l)")
  rm -f "$CAT"
done
c=$(printf '%s\n' "${cons[@]}" | median)
k=$(printf '%s\n' "${cats[@]}" | median)
echo "consolidate ($((bytes / 1000000)) MB of rank files), median of $RUNS:"
printf '  consolidate    %8.3f s  %8.1f MB/s\n' "$c" "$(echo "$bytes / $c / 1000000" | bc -l)"
printf '  cat > file     %8.3f s  %8.1f MB/s (+ sync)\n' "$k" "$(echo "$bytes / $k / 1000000" | bc -l)"
printf '  ratio          %8.2fx  of cat'"'"'s time\n' "$(echo "$c / $k" | bc -l)"
