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
# a Release build of ckptscope-cli is made in build/bench-metrics. REF_CLI:
# another build's ckptscope-cli (say main's, before a change): its runs are
# interleaved with this build's, its --json and --csv output must be the
# same bytes, and the ratios of the medians are printed.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POINTS="${POINTS:-1000000}"
RUNS="${RUNS:-7}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}/metrics-$POINTS"
source "$REPO/bench/cli_build.sh"
bench_cli_build "$REPO" ${1:+"$1"} -- ckptscope-cli
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
python3 - "$CLI" "$DATA" "$RUNS" "$POINTS" "${REF_CLI:-}" <<'PY'
import json, resource, statistics, subprocess, sys, time
cli, data, runs, points, ref = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]


def run(binary, args, capture=False):
    # Timed runs write to /dev/null: the figure is the CLI's, not a pipe reader's.
    # CPU time (user + sys) beside the wall: on a shared VM other processes
    # take the cores for part of the wall time.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.run([binary] + args, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if p.returncode != 0:
        sys.exit("run_metrics_bench: %s %s failed: %s" % (binary, " ".join(args), p.stderr.decode()))
    return wall, cpu, p.stdout


def timed(args, capture=False):
    wall, _, out = run(cli, args, capture)
    return wall, out

# What the JSON holds: every point of both metrics, the first and last checked.
_, out = timed(["metrics", data, "--json"], capture=True)
doc = json.loads(out)
series = {s["metric"]: s["points"] for s in doc["runs"][0]["series"]}
assert sorted(series) == ["loss", "lr"], sorted(series)
assert all(len(p) == points for p in series.values()), {k: len(v) for k, v in series.items()}
assert series["loss"][0][0] == 1 and series["loss"][-1][0] == points and series["loss"][-1][3] == points * 4096
print("output: %d bytes of JSON, %d points in %d series" % (len(out), sum(map(len, series.values())), len(series)))

if ref:
    # The reference build must write the same bytes.
    for fmt in ("--json", "--csv"):
        ours = run(cli, ["metrics", data, fmt], True)[2]
        theirs = run(ref, ["metrics", data, fmt], True)[2]
        if ours != theirs:
            sys.exit("run_metrics_bench: %s output differs from REF_CLI's (%d vs %d bytes)" % (fmt, len(ours), len(theirs)))
    print("REF_CLI %s: the same --json and --csv bytes" % ref)

summary = {"mode": "metrics", "points": points}
for fmt in ("--json", "--csv"):
    builds = [("this", cli)] + ([("ref", ref)] if ref else [])
    walls = {name: [] for name, _ in builds}
    cpus = {name: [] for name, _ in builds}
    for _ in range(runs):
        for name, binary in builds:  # interleaved: a busy stretch slows both
            wall, cpu, _ = run(binary, ["metrics", data, fmt])
            walls[name].append(wall)
            cpus[name].append(cpu)
    for name, _ in builds:
        w, c = walls[name], cpus[name]
        label = "metrics %-6s" % fmt if name == "this" else "  REF_CLI     "
        print("%s wall %s s  (median %.3f s, best %.3f s, %d runs%s)"
              % (label, " ".join("%.3f" % x for x in w), statistics.median(w), min(w), runs,
                 ", goal < 0.5 s" if name == "this" and fmt == "--json" else ""))
        print("               cpu  %s s  (median %.3f s)" % (" ".join("%.3f" % x for x in c), statistics.median(c)))
        key = fmt[2:] + ("" if name == "this" else "_ref")
        summary[key + "_median_s"] = round(statistics.median(w), 4)
        summary[key + "_cpu_median_s"] = round(statistics.median(c), 4)
    if ref:
        print("               REF_CLI / this: wall median %.2fx, cpu median %.2fx"
              % (statistics.median(walls["ref"]) / statistics.median(walls["this"]),
                 statistics.median(cpus["ref"]) / statistics.median(cpus["this"])))
print(json.dumps(summary))
PY
