#!/usr/bin/env bash
# Data-parallel scaling on the CPU (bench/dist_bench.py): tokens/s of one
# process with one thread, one process with two threads, and two Gloo ranks
# of one thread each (ckptscope-cli train --nproc 2); the scaling efficiency;
# the exposed gradient all-reduce time per step against the step time, with
# the all-reduce overlapping backward and after it (allreduce_overlap=false).
#
#   bench/run_dist_bench.sh BUILD_DIR     (ckptscope-cli and ckptscope-train built there)
# Environment: CKPT_DIST_BENCH_DATA work folder (default BUILD_DIR/dist-bench),
# D_MODEL N_LAYERS N_HEADS FFN SEQ MICRO STEPS SKIP BUCKET_MB REPEAT (see dist_bench.py).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ $# -ge 1 ]] || { echo "usage: bench/run_dist_bench.sh BUILD_DIR" >&2; exit 2; }
BUILD="$(cd "$1" && pwd)"
CLI="$BUILD/app/ckptscope-cli"
[[ -x "$CLI" && -x "$BUILD/app/ckptscope-train" ]] || { echo "run_dist_bench: build ckptscope-cli and ckptscope-train in $BUILD" >&2; exit 1; }
echo "== machine"
echo "cpu:      $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores online); load average $(cut -d' ' -f1-3 /proc/loadavg)"
blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
echo "BLAS:     libblas.so.3 -> ${blas:-not installed}; ckptscope-train loads: $(ldd "$BUILD/app/ckptscope-train" | grep -oE '(lib(open)?blas[^ ]*|libmkl[^ ]*) => [^ ]*' | tr '\n' ' ')"
echo "build:    $BUILD ($(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt"))"
exec /usr/bin/python3 "$REPO/bench/dist_bench.py" --cli "$CLI" --work "${CKPT_DIST_BENCH_DATA:-$BUILD/dist-bench}"
