#!/usr/bin/env bash
# TensorBoard event files (issue #25): a ~1 GB event file read by our
# reader next to `cat` of the same file (MB/s and the ratio, page cache warm,
# both measured in this run), the same through `ckptscope-cli metrics
# --json`, a scalar-only file (the reader's worst case: ~45-byte records),
# and a folder of 300 runs.
#
#   bench/run_tfevents_bench.sh [BUILD_DIR]
#
# Environment: MB (default 1024), SCALAR_MB (default 256), RUNS_N (default
# 300 run folders of STEPS_PER_RUN, default 2000, steps), REPEAT (default 5).
# Without BUILD_DIR a Release build is made in build/bench-metrics. The files
# are written by bench_tfevents (C++: a Python writer spends minutes on the
# checksums) into CKPT_BENCH_DATA (default build/bench-data).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MB="${MB:-1024}"
SCALAR_MB="${SCALAR_MB:-256}"
RUNS_N="${RUNS_N:-300}"
STEPS_PER_RUN="${STEPS_PER_RUN:-2000}"
REPEAT="${REPEAT:-5}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}/tfevents"
source "$REPO/bench/cli_build.sh"
bench_cli_build "$REPO" ${1:+"$1"} -- ckptscope-cli bench_tfevents
CLI="$BUILD/app/ckptscope-cli"
BENCH="$BUILD/bench/bench_tfevents"

MIXED="$DATA/mixed-$MB/run/events.out.tfevents.1700000000.bench.1.0"
SCALARS="$DATA/scalars-$SCALAR_MB/run/events.out.tfevents.1700000000.bench.1.0"
RUNS="$DATA/runs-$RUNS_N-$STEPS_PER_RUN"
if [[ ! -s "$MIXED" ]]; then
  mkdir -p "$(dirname "$MIXED")"
  "$BENCH" write "$MIXED" "$MB" >/dev/null
fi
if [[ ! -s "$SCALARS" ]]; then
  mkdir -p "$(dirname "$SCALARS")"
  "$BENCH" write "$SCALARS" "$SCALAR_MB" scalars >/dev/null
fi
if [[ ! -d "$RUNS/seed$((RUNS_N - 1))" ]]; then
  rm -rf "$RUNS"
  mkdir -p "$RUNS"
  "$BENCH" runs "$RUNS" "$RUNS_N" "$STEPS_PER_RUN"
fi

echo "== machine"
echo "cpu:   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mixed:   $MIXED ($(stat -c %s "$MIXED") bytes)"
echo "scalars: $SCALARS ($(stat -c %s "$SCALARS") bytes)"
echo "runs:    $RUNS ($RUNS_N folders, $(du -sb "$RUNS" | cut -f1) bytes)"
echo
python3 - "$CLI" "$BENCH" "$MIXED" "$SCALARS" "$RUNS" "$REPEAT" "$RUNS_N" <<'PY'
import json, os, statistics, subprocess, sys, time
cli, bench, mixed, scalars, runs, repeat, runs_n = sys.argv[1:8]
repeat, runs_n = int(repeat), int(runs_n)


def wall(args):
    t = time.perf_counter()
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit("run_tfevents_bench: %s failed: %s" % (" ".join(args), p.stderr.decode()))
    return time.perf_counter() - t


def read_seconds(path):
    # In-process time of the reader alone (no process start), and its counts.
    out = subprocess.run([bench, "read", path], capture_output=True, check=True).stdout
    return json.loads(out)


summary = {"mode": "tfevents"}
for label, path in (("mixed", mixed), ("scalars", scalars)):
    size = os.path.getsize(path)
    wall(["cat", path])  # page cache warm for both
    cats, reads, cpus, clis = [], [], [], []
    info = None
    for _ in range(repeat):  # interleaved: a busy stretch slows both
        cats.append(wall(["sh", "-c", 'cat "$0" > /dev/null', path]))
        info = read_seconds(path)
        reads.append(info["seconds"])
        cpus.append(info["cpu_seconds"])
        clis.append(wall([cli, "metrics", os.path.dirname(path), "--json"]))
    mb = size / 1e6
    cat_s, read_s, cli_s = statistics.median(cats), statistics.median(reads), statistics.median(clis)
    print("%-8s %.0f MB, %d records, %d scalars" % (label, mb, info["records"], info["scalars"]))
    print("  cat              median %.3f s  %7.0f MB/s" % (cat_s, mb / cat_s))
    print("  reader           median %.3f s  %7.0f MB/s  (%.2fx cat's time; cpu %.3f s)"
          % (read_s, mb / read_s, read_s / cat_s, statistics.median(cpus)))
    print("  metrics --json   median %.3f s  %7.0f MB/s  (%.2fx cat's time)" % (cli_s, mb / cli_s, cli_s / cat_s))
    summary[label] = {"mb": round(mb, 1), "cat_s": round(cat_s, 4), "reader_s": round(read_s, 4),
                      "metrics_json_s": round(cli_s, 4), "reader_mb_s": round(mb / read_s),
                      "reader_cpu_s": round(statistics.median(cpus), 4),
                      "cat_mb_s": round(mb / cat_s), "reader_over_cat": round(read_s / cat_s, 3)}

# A folder of many runs: every run's files found, read and printed.
size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(runs) for f in fs)
wall(["sh", "-c", 'cat "$0"/*/* > /dev/null', runs])
cats = [wall(["sh", "-c", 'cat "$0"/*/* > /dev/null', runs]) for _ in range(repeat)]
clis = [wall([cli, "metrics", runs, "--json"]) for _ in range(repeat)]
cat_s, cli_s = statistics.median(cats), statistics.median(clis)
print("runs     %d folders, %.0f MB" % (runs_n, size / 1e6))
print("  cat              median %.3f s  %7.0f MB/s" % (cat_s, size / 1e6 / cat_s))
print("  metrics --json   median %.3f s  %7.0f MB/s  (%.2fx cat's time)" % (cli_s, size / 1e6 / cli_s, cli_s / cat_s))
summary["runs"] = {"folders": runs_n, "mb": round(size / 1e6, 1), "cat_s": round(cat_s, 4),
                   "metrics_json_s": round(cli_s, 4)}
print(json.dumps(summary))
PY
