#!/usr/bin/env bash
# `ckptscope-cli metrics --json` on the GUI benchmark's million-point run
# (issue #12's goal: under 0.5 s; the desktop app read it in 2.3-2.5 s,
# bench_gui curves). The run is one metrics.jsonl of POINTS lines written
# exactly as bench_gui.cpp's metricsLine writes them (loss, lr, tokens), so
# the two benchmarks read the same bytes.
#
#   bench/run_metrics_bench.sh [BUILD_DIR]
#
# Environment: POINTS (default 1000000), RUNS (default 7). Without BUILD_DIR
# a Release build of ckptscope-cli is made in build/bench-metrics.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POINTS="${POINTS:-1000000}"
RUNS="${RUNS:-7}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}/metrics-$POINTS"
if [[ $# -ge 1 ]]; then
  BUILD="$(cd "$1" && pwd)"
else
  BUILD="$REPO/build/bench-metrics"
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCKPT_WITH_TORCH=OFF -DCKPT_BUILD_TESTS=OFF \
    -DCKPT_BUILD_GUI=OFF >/dev/null
fi
cmake --build "$BUILD" --target ckptscope-cli -j "${JOBS:-2}" >/dev/null
CLI="$BUILD/app/ckptscope-cli"

if [[ ! -s "$DATA/big/metrics.jsonl" ]]; then
  mkdir -p "$DATA/big"
  python3 - "$DATA/big/metrics.jsonl" "$POINTS" <<'PY'
import math, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for step in range(1, n + 1):
        loss = 2.0 + 3.0 * math.exp(-step / 200000.0) + 0.05 * math.sin(step * 0.37)
        f.write('{"step": %d, "loss": %.6f, "lr": %.6g, "tokens": %d}\n' % (step, loss, 3e-4, step * 4096))
PY
fi

echo "== machine"
echo "cpu:   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data:  $DATA/big/metrics.jsonl: $POINTS lines, $(stat -c %s "$DATA/big/metrics.jsonl") bytes (page cache warm after the first run)"
echo
python3 - "$CLI" "$DATA" "$RUNS" "$POINTS" <<'PY'
import json, resource, statistics, subprocess, sys, time
cli, data, runs, points = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

cpu_times = []


def timed(args, capture=False):
    # Timed runs write to /dev/null: the figure is the CLI's, not a pipe reader's.
    # CPU time (user + sys) beside the wall: on a shared VM other processes
    # take the cores for part of the wall time.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        sys.exit("run_metrics_bench: %s failed: %s" % (" ".join(args), p.stderr.decode()))
    return wall, p.stdout

# What the JSON holds: every point of both metrics, the first and last checked.
_, out = timed(["metrics", data, "--json"], capture=True)
doc = json.loads(out)
series = {s["metric"]: s["points"] for s in doc["runs"][0]["series"]}
assert sorted(series) == ["loss", "lr"], sorted(series)
assert all(len(p) == points for p in series.values()), {k: len(v) for k, v in series.items()}
assert series["loss"][0][0] == 1 and series["loss"][-1][0] == points and series["loss"][-1][3] == points * 4096
print("output: %d bytes of JSON, %d points in %d series" % (len(out), sum(map(len, series.values())), len(series)))

summary = {"mode": "metrics", "points": points}
for fmt in ("--json", "--csv"):
    del cpu_times[:]
    walls = [timed(["metrics", data, fmt])[0] for _ in range(runs)]
    print("metrics %-6s wall %s s  (median %.3f s, best %.3f s, %d runs, goal < 0.5 s)"
          % (fmt, " ".join("%.3f" % w for w in walls), statistics.median(walls), min(walls), runs))
    print("               cpu  %s s  (median %.3f s)" % (" ".join("%.3f" % c for c in cpu_times),
                                                          statistics.median(cpu_times)))
    summary[fmt[2:] + "_median_s"] = round(statistics.median(walls), 4)
    summary[fmt[2:] + "_cpu_median_s"] = round(statistics.median(cpu_times), 4)
print(json.dumps(summary))
PY
