#!/usr/bin/env bash
# Many small checkpoints (issue #26): RUNS runs x PER_RUN torch.save files
# (default 1,000 x 50 = 50,000, bench/make_many_checkpoints.py), page cache
# warm. Measures, in one run:
#   - a fresh `ckptscope-cli ls DIR` and `ls --json DIR` process: wall and
#     peak RSS, median of REPEAT;
#   - the browser (`bench_gui manyckpt DIR`, a fresh process each): from the
#     open to its first rows and to the scan finished, median of REPEAT;
#   each twice: cold (an empty listing cache: every file read, the cache
#   written) and warm (the cache a listing of DIR left: the folder opened
#   again; listing_cache.h), CKPTSCOPE_CACHE_DIR pointing at a temp folder;
#   - the anchor: a plain Python loop that lists each zip's names
#     (zipfile.ZipFile(f).namelist() for every .pt under DIR), a fresh
#     process, median of REPEAT;
#   - a cold `ls DIR` with CKPTSCOPE_READ_AHEAD=0: the files read one by
#     one, not in io_uring batches (core/index/src/read_ahead.h), median of
#     REPEAT, taken in turn with the others;
#   - `scan --recursive DIR` (the safety scan: every file's pickles walked,
#     no cache), median of REPEAT, taken in turn with the others;
#   - the system calls of one `ls` (strace -f -c), per checkpoint.
# and prints the ratios against the anchor and issue #26's goals (ls <= 0.5 s,
# first rows <= 0.3 s, complete <= 1 s).
#
#   bench/run_many_ckpt_bench.sh [BUILD_DIR]   (default build/dev; builds
#                                               ckptscope-cli and bench_gui there)
# Environment:
#   CKPT_BENCH_DATA  data folder (default build/bench-data)
#   MANY_RUNS, MANY_PER_RUN   the folder's shape (default 1000, 50)
#   REPEAT           fresh processes of each measurement (default 5)
#   CKPT_CLI, BENCH_GUI  time these binaries instead of building (a before/after pair)
#   NO_GUI=1         skip the browser; NO_STRACE=1 skip the system-call count
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$REPO/build/dev}"
if [[ -z "${CKPT_CLI:-}" ]]; then
  targets=(ckptscope-cli)
  [[ -n "${BENCH_GUI:-}" || "${NO_GUI:-0}" == 1 ]] || targets+=(bench_gui)
  cmake --build "$BUILD" --target "${targets[@]}" -j "${JOBS:-2}" >/dev/null
fi
CLI="${CKPT_CLI:-$BUILD/app/ckptscope-cli}"
GUI="${BENCH_GUI:-$BUILD/bench/bench_gui}"
TORCH_PY=/usr/bin/python3
RUNS="${MANY_RUNS:-1000}"
PER_RUN="${MANY_PER_RUN:-50}"
REPEAT="${REPEAT:-5}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"
DIR="$DATA/many${RUNS}x${PER_RUN}"
FILES=$((RUNS * PER_RUN))
[[ -x "$CLI" ]] || { echo "run_many_ckpt_bench: $CLI is not built" >&2; exit 1; }

"$TORCH_PY" "$REPO/bench/make_many_checkpoints.py" "$DIR" "$RUNS" "$PER_RUN"

echo "== machine"
echo "cpu:      $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores online)"
echo "kernel:   $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "cli:      $CLI ($(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$(dirname "$CLI")/../CMakeCache.txt" 2>/dev/null))"
echo "folder:   $DIR: $RUNS runs x $PER_RUN checkpoints, $(du -sh "$DIR" | cut -f1)"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Both sides must list every file (and this warms the page cache).
n_listed="$("$CLI" ls --json "$DIR" | "$TORCH_PY" -c '
import json, sys
d = json.load(sys.stdin)
print(sum(len(r["checkpoints"]) for r in d["runs"]))')"
[[ "$n_listed" == "$FILES" ]] || { echo "run_many_ckpt_bench: ls listed $n_listed of $FILES" >&2; exit 1; }
cat >"$tmp/anchor.py" <<'PY'
import os, sys, zipfile
n = names = 0
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.endswith(".pt"):
            with zipfile.ZipFile(os.path.join(d, f)) as z:
                names += len(z.namelist())
            n += 1
print(n, names)
PY
read -r py_files _ <<<"$(python3 "$tmp/anchor.py" "$DIR")"
[[ "$py_files" == "$FILES" ]] || { echo "run_many_ckpt_bench: the anchor read $py_files" >&2; exit 1; }

# One measurement: wall (ms) and peak RSS (MB) of a fresh process.
timed() {
  local t0 t1
  t0=$(now)
  /usr/bin/time -f '%M' -o "$tmp/rss" "$@" >/dev/null
  t1=$(now)
  echo "$(echo "($t1 - $t0) * 1000" | bc -l) $(awk '{print $1 / 1024}' "$tmp/rss")"
}
# The warm cache: what a listing of DIR leaves (every file is older than
# the 2 s a listing waits before keeping a file).
CKPTSCOPE_CACHE_DIR="$tmp/warm" "$CLI" ls "$DIR" >/dev/null
py_t=() py_m=() one_t=() scan_t=() scan_m=()
for state in cold warm; do
  declare -a "ls_t_$state=()" "ls_m_$state=()" "js_t_$state=()" "js_m_$state=()" \
    "gui_first_$state=()" "gui_done_$state=()" "gui_m_$state=()"
done
for i in $(seq 1 "$REPEAT"); do
  for state in cold warm; do
    if [[ "$state" == cold ]]; then
      cache() { echo "$tmp/cold-$i-$1"; }  # empty: a folder never listed
    else
      cache() { echo "$tmp/warm"; }
    fi
    read -r t m <<<"$(CKPTSCOPE_CACHE_DIR="$(cache ls)" timed "$CLI" ls "$DIR")"
    eval "ls_t_$state+=($t) ls_m_$state+=($m)"
    read -r t m <<<"$(CKPTSCOPE_CACHE_DIR="$(cache json)" timed "$CLI" ls --json "$DIR")"
    eval "js_t_$state+=($t) js_m_$state+=($m)"
    if [[ "${NO_GUI:-0}" != 1 ]]; then
      CKPTSCOPE_CACHE_DIR="$(cache gui)" QT_QPA_PLATFORM=offscreen "$GUI" manyckpt "$DIR" >"$tmp/gui.json"
      read -r f c m <<<"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["first_rows_ms"], d["complete_ms"], d["peak_rss_mb"])' "$tmp/gui.json")"
      eval "gui_first_$state+=($f) gui_done_$state+=($c) gui_m_$state+=($m)"
    fi
  done
  read -r t m <<<"$(CKPTSCOPE_CACHE_DIR="$tmp/cold-$i-one" CKPTSCOPE_READ_AHEAD=0 timed "$CLI" ls "$DIR")"
  one_t+=("$t")
  read -r t m <<<"$(timed "$CLI" scan --recursive "$DIR")"
  scan_t+=("$t") scan_m+=("$m")
  read -r t m <<<"$(timed python3 "$tmp/anchor.py" "$DIR")"
  py_t+=("$t") py_m+=("$m")
done
med() { printf '%s\n' "$@" | median; }
py_ms=$(med "${py_t[@]}")
echo
echo "== $FILES checkpoints in $RUNS runs, median of $REPEAT fresh processes (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
verdict() { echo "$1 <= $2" | bc -l | sed 's/1/PASS/;s/0/not met/'; }
printf '  python: zipfile namelist of each file  %8.1f ms  peak RSS %6.1f MB  (all: %s)\n' \
  "$py_ms" "$(med "${py_m[@]}")" "$(printf '%.0f ' "${py_t[@]}")"
scan_ms=$(med "${scan_t[@]}")
printf '  ckptscope-cli scan --recursive DIR     %8.1f ms  peak RSS %6.1f MB  %.2fx the anchor  (the safety scan; all: %s)\n' \
  "$scan_ms" "$(med "${scan_m[@]}")" "$(echo "$scan_ms / $py_ms" | bc -l)" "$(printf '%.0f ' "${scan_t[@]}")"
for state in cold warm; do
  declare -n lt="ls_t_$state" lm="ls_m_$state" jt="js_t_$state" jm="js_m_$state"
  echo "  -- $state: $([[ $state == cold ]] && echo 'an empty listing cache (every file read)' || echo 'the folder opened again (the listing cache)')"
  ls_ms=$(med "${lt[@]}") js_ms=$(med "${jt[@]}")
  printf '  ckptscope-cli ls DIR                   %8.1f ms  peak RSS %6.1f MB  %.2fx the anchor  goal <= 500 ms: %s  (all: %s)\n' \
    "$ls_ms" "$(med "${lm[@]}")" "$(echo "$ls_ms / $py_ms" | bc -l)" "$(verdict "$ls_ms" 500)" \
    "$(printf '%.0f ' "${lt[@]}")"
  printf '  ckptscope-cli ls --json DIR            %8.1f ms  peak RSS %6.1f MB  %.2fx the anchor  (all: %s)\n' \
    "$js_ms" "$(med "${jm[@]}")" "$(echo "$js_ms / $py_ms" | bc -l)" "$(printf '%.0f ' "${jt[@]}")"
  if [[ "${NO_GUI:-0}" != 1 ]]; then
    declare -n gf="gui_first_$state" gd="gui_done_$state" gm="gui_m_$state"
    first=$(med "${gf[@]}") done_ms=$(med "${gd[@]}")
    printf '  browser: open -> first rows            %8.1f ms  %.2fx the anchor  goal <= 300 ms: %s  (all: %s)\n' \
      "$first" "$(echo "$first / $py_ms" | bc -l)" "$(verdict "$first" 300)" "$(printf '%.0f ' "${gf[@]}")"
    printf '  browser: open -> scan finished         %8.1f ms  %.2fx the anchor  goal <= 1000 ms: %s  peak RSS %.1f MB  (all: %s)\n' \
      "$done_ms" "$(echo "$done_ms / $py_ms" | bc -l)" "$(verdict "$done_ms" 1000)" "$(med "${gm[@]}")" \
      "$(printf '%.0f ' "${gd[@]}")"
    unset -n gf gd gm
  fi
  if [[ "$state" == cold ]]; then
    one_ms=$(med "${one_t[@]}")
    printf '  ls DIR, files read one by one          %8.1f ms  (CKPTSCOPE_READ_AHEAD=0; read in batches: %.2fx faster)  (all: %s)\n' \
      "$one_ms" "$(echo "$one_ms / $ls_ms" | bc -l)" "$(printf '%.0f ' "${one_t[@]}")"
  fi
  unset -n lt lm jt jm
done

if [[ "${NO_STRACE:-0}" != 1 ]] && command -v strace >/dev/null; then
  # Every system call of every thread of one `ls` (startup included), and
  # the file ones per checkpoint.
  CKPTSCOPE_NO_CACHE=1 strace -f -c -o "$tmp/strace" "$CLI" ls "$DIR" >/dev/null
  echo
  echo "== system calls of one \`ls DIR\` without the cache (strace -f -c; all threads, start-up included), per checkpoint"
  awk -v n="$FILES" '
    $1 ~ /^[0-9.]+$/ && NF >= 5 { calls = $4; name = $NF; if (name == "total") next;
      tot += calls; per[name] = calls }
    END { printf "  total %d calls, %.2f per checkpoint\n", tot, tot / n;
      for (k in per) if (per[k] >= n / 10) printf "  %-14s %8d  %.2f per checkpoint\n", k, per[k], per[k] / n }' \
    "$tmp/strace" | sort -k2 -n -r
fi
