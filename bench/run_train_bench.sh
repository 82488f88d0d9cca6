#!/usr/bin/env bash
# Training-speed benchmark: `ckptscope-cli resume` (our C++ loop over LibTorch)
# against a Python/PyTorch loop over the same model math (tests/python/
# modern_llm_ref.py) on the same LibTorch (Debian's python3-torch), same
# threads, batch and sequence length, same starting weights and data order,
# in one run. bench/train_bench.py documents how both runs are matched.
#
#   bench/run_train_bench.sh [BUILD_DIR]
#
# Without BUILD_DIR it configures build/bench (Release, no GUI, no tests) and
# builds ckptscope-cli and ckptscope-train; with one it builds those two
# targets there (incremental), or uses them as they are with NO_BUILD=1.
# Environment:
#   DEVICE         cpu (default) or cuda: bf16 autocast, the 768-wide, 12-layer,
#                  1024-token config, and MFU when PEAK_TFLOPS is given
#   THREADS        K for torch.set_num_threads and OMP/MKL/OPENBLAS_NUM_THREADS
#                  (default: nproc)
#   CKPT_TRAIN_BENCH_DATA  work folder (default build/train-bench): corpus,
#                  starting checkpoint, one folder per run, results-DEVICE.json
#   JOBS           build parallelism (default 2)
#   D_MODEL N_LAYERS N_HEADS FFN SEQ BATCH MICRO STEPS SKIP LR LR_WARMUP
#   SAMPLER_SEED INIT_SEED REPEATS CORPUS PEAK_TFLOPS: see bench/train_bench.py
#   OMP_WAIT_POLICY  passed to both sides unchanged (PASSIVE speeds both up on
#                  2 cores: LibTorch's OpenMP workers otherwise spin while
#                  OpenBLAS's own threads run the GEMMs)
# Exit status 0 when ours reaches 1.0x Python's tokens/s and the loss curves
# match; 1 otherwise.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_PY=/usr/bin/python3  # Debian's python3 with python3-torch
JOBS="${JOBS:-2}"
DEVICE="${DEVICE:-cpu}"
THREADS="${THREADS:-$(nproc)}"
WORK="${CKPT_TRAIN_BENCH_DATA:-$REPO/build/train-bench}"

# ---- build -------------------------------------------------------------------
if [[ $# -ge 1 ]]; then
  BUILD="$(cd "$1" && pwd)"
else
  BUILD="$REPO/build/bench"
  [[ "${NO_BUILD:-0}" == 1 ]] ||
    cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_BUILD_GUI=OFF -DCKPT_BUILD_TESTS=OFF >/dev/null
fi
[[ "${NO_BUILD:-0}" == 1 ]] || cmake --build "$BUILD" --target ckptscope-cli ckptscope-train -j "$JOBS" >/dev/null
CLI="$BUILD/app/ckptscope-cli"
for exe in "$CLI" "$BUILD/app/ckptscope-train"; do
  [[ -x "$exe" ]] || { echo "run_train_bench: $exe was not built" >&2; exit 1; }
done
BUILD_TYPE="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)"

export OMP_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS"

# ---- machine -----------------------------------------------------------------
echo "== machine"
echo "cpu:      $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores online)"
blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
alt="$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p' || true)"
echo "libblas:  libblas.so.3 -> ${blas:-not installed} (alternative libblas.so.3-x86_64-linux-gnu: ${alt:-none})"
torchlib="$(ldd "$BUILD/app/ckptscope-train" | sed -n 's/^[[:space:]]*libtorch_cpu\.so[.0-9]* => \([^ ]*\).*/\1/p')"
pytorchlib="$("$TORCH_PY" -c 'import torch, os; print(os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")))' 2>/dev/null || true)"
echo "libtorch: ours $(readlink -f "${torchlib:-?}" 2>/dev/null || echo "${torchlib:-?}"); python ${pytorchlib:-?}"
echo "kernel:   $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build:    $BUILD (${BUILD_TYPE:-?}); torch $("$TORCH_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
echo "threads:  $THREADS (OMP_NUM_THREADS=MKL_NUM_THREADS=OPENBLAS_NUM_THREADS=$THREADS); OMP_WAIT_POLICY ${OMP_WAIT_POLICY:-unset (libgomp default: workers spin before sleeping)}"
if [[ "$DEVICE" == cuda ]]; then
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu:      /' || echo "gpu:      nvidia-smi not found"
fi

# ---- measure -------------------------------------------------------------------
echo
exec "$TORCH_PY" "$REPO/bench/train_bench.py" bench --cli "$CLI" --work "$WORK" --device "$DEVICE" --threads "$THREADS"
