#!/bin/sh
# Runs fuzz_reader (fuzz_reader.cpp: the reader, the one-pass verdict and
# the safety scan, in memory) for SECONDS on a corpus made from the files
# the test suite writes, with fuzz_reader.dict, and prints what it did:
# executions, executions a second, coverage (cov: edges, ft: features),
# crashes, and the machine's load before and after.
#   tests/fuzz/run_fuzz_reader.sh [SECONDS] [FIXTURES_DIR] [WORK_DIR]
# SECONDS defaults to 120; FIXTURES_DIR to build/dev/tests/fixtures (run
# `ctest --preset dev` first); WORK_DIR (corpus/, crashes/, fuzz.log) to a
# new temporary folder, kept. FUZZ_BUILD_DIR (default build/fuzz) holds the
# `fuzz` preset's build:
#   cmake --preset fuzz && cmake --build build/fuzz --target fuzz_reader
# A crash's input is left in WORK_DIR/crashes/ (rerun: fuzz_reader FILE).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-120}
fixtures=${2:-$root/build/dev/tests/fixtures}
work=${3:-$(mktemp -d "${TMPDIR:-/tmp}/fuzz_reader.XXXXXX")}
bin=${FUZZ_BUILD_DIR:-$root/build/fuzz}/tests/fuzz/fuzz_reader
max_len=65536

if [ ! -x "$bin" ]; then
  echo "no $bin: cmake --preset fuzz && cmake --build build/fuzz --target fuzz_reader" >&2
  exit 2
fi
if [ ! -d "$fixtures" ]; then
  echo "no $fixtures: run the test suite first (ctest --preset dev)" >&2
  exit 2
fi
mkdir -p "$work/corpus" "$work/crashes"

# The seeds: every checkpoint-like file up to max_len bytes, and the pickles
# inside each zip archive on their own (what the bare pickle paths read),
# named by their content's hash (no duplicates).
python3 - "$fixtures" "$work/corpus" "$max_len" <<'EOF'
import hashlib, os, sys, zipfile
src, out, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
exts = {".pt", ".pth", ".bin", ".ckpt", ".pkl", ".pickle", ".safetensors", ".distcp", ".npy", ".npz"}
def put(data):
    if 0 < len(data) <= limit:
        with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
for d, _, files in os.walk(src):
    for name in files:
        path = os.path.join(d, name)
        if os.path.splitext(name)[1].lower() not in exts and name != ".metadata":
            continue
        try:
            if os.path.getsize(path) > 16 * limit:
                continue
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        put(data)
        try:
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    if info.filename.endswith(".pkl") and info.file_size <= limit:
                        put(z.read(info))
        except Exception:
            pass
EOF
seeds=$(ls "$work/corpus" | wc -l)
echo "corpus: $seeds files in $work/corpus (from $fixtures)"
echo "load before: $(uptime)"
"$bin" -max_len=$max_len -timeout=5 -rss_limit_mb=2048 -max_total_time="$secs" \
  -print_final_stats=1 -dict="$here/fuzz_reader.dict" -artifact_prefix="$work/crashes/" \
  "$work/corpus" >"$work/fuzz.log" 2>&1 || true
echo "load after:  $(uptime)"
# The last status line ("#N ... cov: C ft: F corp: ... exec/s: E") and the final stats.
grep -E '^#[0-9]+' "$work/fuzz.log" | tail -1
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$work/fuzz.log"
crashes=$(ls "$work/crashes" | wc -l)
echo "crashes: $crashes (in $work/crashes); log: $work/fuzz.log"
[ "$crashes" -eq 0 ]
