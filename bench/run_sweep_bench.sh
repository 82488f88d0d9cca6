#!/usr/bin/env bash
# Issue #26's sweep: `ckptscope-cli metrics --json` and `runs --json` on
# SWEEP_RUNS runs x SWEEP_POINTS lines of metrics.jsonl, against a plain
# Python reader (bench/sweep_anchor.py: json per line into lists) run in the
# same benchmark. Wall time and peak RSS of each (/usr/bin/time), the ratios
# to the Python reader, and the issue's goals (1,000 x 20,000: <= 3 s and
# <= 600 MB).
#
#   bench/run_sweep_bench.sh [BUILD_DIR]
#
# Environment: SWEEP_RUNS (default 1000), SWEEP_POINTS (default 20000),
# REPEAT (default 3: the median is reported). Without BUILD_DIR a Release
# build of ckptscope-cli is made in build/bench-metrics.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${SWEEP_RUNS:-1000}"
POINTS="${SWEEP_POINTS:-20000}"
REPEAT="${REPEAT:-3}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}/sweep-${RUNS}x${POINTS}"
source "$REPO/bench/cli_build.sh"
bench_cli_build "$REPO" ${1:+"$1"} -- ckptscope-cli
CLI="$BUILD/app/ckptscope-cli"

if [[ ! -f "$DATA/.complete" ]]; then
  start=$(date +%s.%N)
  python3 "$REPO/bench/make_sweep_bench.py" "$DATA" "$RUNS" "$POINTS"
  touch "$DATA/.complete"
  echo "generated $DATA in $(echo "$(date +%s.%N) - $start" | bc) s"
fi

echo "== machine"
echo "cpu:   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data:  $RUNS runs x $POINTS lines, $(du -sb "$DATA" | cut -f1) bytes (page cache warm after the first run)"
echo
python3 - "$CLI" "$DATA" "$REPEAT" "$RUNS" "$POINTS" "$REPO/bench/sweep_anchor.py" <<'PY'
import json, statistics, subprocess, sys, tempfile
cli, data, repeat, runs, points, anchor = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]


def measure(cmd, capture=False):
    """Wall seconds and peak RSS (MB) of one run, from /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name] + cmd,
                           stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit("run_sweep_bench: %s failed: %s" % (" ".join(cmd), p.stderr.decode()[-2000:]))
        wall, rss = t.read().split()[-2:]
    return float(wall), int(rss) / 1024.0, p.stdout


# What the outputs hold, checked once: every point of every run (loss and lr;
# tokens and wall_time are the points' own fields), one row per run.
_, _, out = measure([cli, "metrics", data, "--json"], True)
doc = json.loads(out)
got = sum(len(s["points"]) for r in doc["runs"] for s in r["series"])
assert len(doc["runs"]) == runs and got == runs * points * 2, (len(doc["runs"]), got)
del doc, out
_, _, out = measure([cli, "runs", data, "--json", "--metric", "loss"], True)
table = json.loads(out)
assert len(table["rows"]) == runs and table["columns"] == ["learning_rate", "seed"], table["columns"]
_, _, out = measure(["python3", anchor, data], True)
assert int(out) == runs * points * 2, out

cases = [("python reader", ["python3", anchor, data]),
         ("metrics --json", [cli, "metrics", data, "--json"]),
         ("runs --json", [cli, "runs", data, "--json", "--metric", "loss"]),
         ("runs --group-by all-but", [cli, "runs", data, "--json", "--metric", "loss", "--group-by", "all-but"])]
results = {}
for _ in range(repeat):
    for name, cmd in cases:  # interleaved: a busy stretch slows all alike
        results.setdefault(name, []).append(measure(cmd)[:2])
summary = {"runs": runs, "points": points}
anchor_wall = statistics.median(w for w, _ in results["python reader"])
anchor_rss = max(r for _, r in results["python reader"])
for name, _ in cases:
    walls = [w for w, _ in results[name]]
    rss = max(r for _, r in results[name])
    wall = statistics.median(walls)
    print("%-24s wall %s s (median %.2f s)  peak RSS %.0f MB   vs python: %.2fx time, %.2fx memory"
          % (name, " ".join("%.2f" % w for w in walls), wall, rss, wall / anchor_wall, rss / anchor_rss))
    summary[name.replace(" ", "_") + "_s"] = round(wall, 3)
    summary[name.replace(" ", "_") + "_mb"] = round(rss, 1)
print("goals at 1,000 x 20,000: <= 3 s and <= 600 MB for metrics --json and runs --json")
print(json.dumps(summary))
PY
