#!/usr/bin/env bash
# Diff benchmark: `ckptscope-cli diff` of two 1.8 GB checkpoints against the
# page-cache read bandwidth (`cat a b > /dev/null`) and a Python anchor
# (torch.load both + a per-tensor float64 loop), all measured in this run.
#
#   bench/run_diff_bench.sh [BUILD_DIR]
#
# Without BUILD_DIR it configures build/bench-diff (Release, no GUI, no tests,
# no LibTorch) and builds ckptscope-cli; with one it builds that target there.
# Environment:
#   CKPT_BENCH_DATA  cache folder (default build/bench-data): the benchmark
#                    checkpoint of run_bench.sh (made by bench/make_checkpoint.py
#                    only when missing or stale) and its perturbed copy
#   JOBS             build parallelism (default 2)
#   RUNS             timed runs of cat and of the diff (default 3; best is reported)
#   PY_RUNS          Python anchor runs (default 1)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_PY=/usr/bin/python3  # Debian's python3 with python3-torch
JOBS="${JOBS:-2}"
RUNS="${RUNS:-3}"
PY_RUNS="${PY_RUNS:-1}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"

# ---- build -------------------------------------------------------------------
if [[ $# -ge 1 ]]; then
  BUILD="$(cd "$1" && pwd)"
else
  BUILD="$REPO/build/bench-diff"
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_BUILD_GUI=OFF -DCKPT_BUILD_TESTS=OFF \
    -DCKPT_WITH_TORCH=OFF >/dev/null
fi
cmake --build "$BUILD" --target ckptscope-cli -j "$JOBS" >/dev/null
CLI="$BUILD/app/ckptscope-cli"
[[ -x "$CLI" ]] || { echo "run_diff_bench: $CLI was not built" >&2; exit 1; }
BUILD_TYPE="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)"

# ---- data --------------------------------------------------------------------
mkdir -p "$DATA"
A="$DATA/gpt2s-sinks_step12000.pt"
B="$DATA/gpt2s-sinks_step13000-perturbed.pt"
"$TORCH_PY" "$REPO/bench/make_checkpoint.py" "$A"   # kept when its stamp matches
"$TORCH_PY" "$REPO/bench/diff_bench.py" perturb "$A" "$B"
SIZE_A="$(stat -c %s "$A")"
SIZE_B="$(stat -c %s "$B")"

# ---- machine -----------------------------------------------------------------
echo "== machine"
echo "cpu:      $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores online)"
echo "memory:   $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
echo "kernel:   $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build:    $BUILD (${BUILD_TYPE:-?}); torch $("$TORCH_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
echo "libblas:  ${blas:-not installed} (only the Python anchor could use it: its loop is element-wise, no BLAS call)"
echo "files:    $A ($SIZE_A bytes)"
echo "          $B ($SIZE_B bytes)"

OUT="$DATA/results"
mkdir -p "$OUT"
M="$TORCH_PY $REPO/bench/diff_bench.py measure"

# ---- measure -------------------------------------------------------------------
echo
echo "== page cache: warm-up read, then cat a b > /dev/null x $RUNS"
cat "$A" "$B" > /dev/null
$M "$RUNS" cat "$A" "$B" > "$OUT/diff_cat.json"
echo
echo "== ckptscope-cli diff A B --json x $RUNS (one uncounted run first)"
"$CLI" diff "$A" "$B" --json > "$OUT/diff_ours.json"
$M "$RUNS" "$CLI" diff "$A" "$B" --json > "$OUT/diff_time.json"
echo
echo "== Python: torch.load both + per-tensor float64 loop x $PY_RUNS"
: > "$OUT/diff_python.jsonl"
for _ in $(seq 1 "$PY_RUNS"); do
  "$TORCH_PY" "$REPO/bench/diff_bench.py" python "$A" "$B" --out "$OUT/diff_python_tensors.json" >> "$OUT/diff_python.jsonl"
done

# ---- report --------------------------------------------------------------------
echo
echo "== results (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
"$TORCH_PY" - "$OUT" "$SIZE_A" "$SIZE_B" <<'EOF'
import json, sys
out, size_a, size_b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cat = json.load(open(out + "/diff_cat.json"))
ours = json.load(open(out + "/diff_time.json"))
doc = json.load(open(out + "/diff_ours.json"))
py = [json.loads(l) for l in open(out + "/diff_python.jsonl") if l.strip()]
files = size_a + size_b
compared = doc["bytes_compared"]
t_cat, t_ours = min(cat["wall_s"]), min(ours["wall_s"])
t_py = min(p["total_s"] for p in py)
bw_cat = files / t_cat
bw_ours = compared / t_ours
GB, MiB = 1e9, 1024 * 1024
print("tensors compared:          %d (model state; the optimizer state is not diffed)" % len(doc["tensors"]))
print("bytes compared:            %.2f GB of %.2f GB in the two files" % (compared / GB, files / GB))
print()
print("%-34s %10s %14s" % ("figure", "wall (best)", "bandwidth"))
print("%-34s %9.3f s %9.2f GB/s" % ("cat a b > /dev/null (all bytes)", t_cat, bw_cat / GB))
print("%-34s %9.3f s %9.2f GB/s" % ("ckptscope-cli diff --json", t_ours, bw_ours / GB))
print("%-34s %9.3f s   (load %.2f s + loop %.2f s)" % ("Python torch.load + float64 loop", t_py,
      min(p["load_s"] for p in py), min(p["loop_s"] for p in py)))
print()
print("diff bandwidth / cat bandwidth:   %.2f   (goal >= 0.5; bytes the diff reads per second vs cat)" % (bw_ours / bw_cat))
c_cat, c_ours = min(cat["cpu_s"]), min(ours["cpu_s"])
print("CPU time (user+sys, best):        cat %.3f s, diff %.3f s: %.2f GB/CPU-s vs %.2f GB/CPU-s (load-independent view)" % (
    c_cat, c_ours, files / c_cat / GB, compared / c_ours / GB))
print("diff wall / cat wall:             %.2f   (both files: the diff reads only the model state)" % (t_ours / t_cat))
print("Python / ours:                    %.1fx wall  (goal >= 5x); %.1fx in CPU time (Python %.2f CPU-s)" % (
    t_py / t_ours, min(p["cpu_s"] for p in py) / c_ours, min(p["cpu_s"] for p in py)))
print("peak RSS ckptscope-cli diff:      %.1f MiB   (goal < 300 MB)" % (ours["peak_rss"] / MiB))
print("peak RSS Python:                  %.1f MiB" % (max(p["peak_rss"] for p in py) / MiB))
ref = json.load(open(out + "/diff_python_tensors.json"))
worst = 0.0
for t in doc["tensors"]:
    r = ref[t["name"]]
    for k in ("rel_l2", "cosine", "max_abs", "mean_abs"):
        a, b = t[k], r[k]
        worst = max(worst, abs(a - b) / max(abs(a), abs(b), 1e-300))
print("numbers vs Python (float64):      largest relative difference %.1e over %d tensors x 4 metrics" % (worst, len(doc["tensors"])))
print("all runs (s): cat %s; diff %s; python %s" % (
    " ".join("%.3f" % t for t in cat["wall_s"]), " ".join("%.3f" % t for t in ours["wall_s"]),
    " ".join("%.2f" % p["total_s"] for p in py)))
EOF
