#!/usr/bin/env bash
# Issue #26's sweep: `ckptscope-cli metrics --json` and `runs --json` on
# SWEEP_RUNS runs x SWEEP_POINTS lines of metrics.jsonl, against a plain
# Python reader (bench/sweep_anchor.py: json per line into lists) run in the
# same benchmark. Wall time and peak RSS of each (/usr/bin/time), cold (an
# empty metrics cache, metrics_cache.h), warm (the cache the cold run
# wrote) and without the cache; the bytes a point costs in memory and in
# the cache; the ratios to the Python reader; the issue's goals (1,000 x
# 20,000: <= 3 s cold, <= 0.5 s warm, <= 600 MB). The cache lives in a
# temporary folder, never in the sweep or the user's cache.
#
#   bench/run_sweep_bench.sh [BUILD_DIR]
#
# Environment: SWEEP_RUNS (default 1000), SWEEP_POINTS (default 20000),
# REPEAT (default 3: the median is reported), BEFORE_CLI (another build's
# ckptscope-cli, e.g. main's, measured in the same run for before/after).
# Without BUILD_DIR a Release build of ckptscope-cli is made in
# build/bench-metrics.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${SWEEP_RUNS:-1000}"
POINTS="${SWEEP_POINTS:-20000}"
REPEAT="${REPEAT:-3}"
source "$REPO/bench/cli_build.sh"
bench_cli_build "$REPO" ${1:+"$1"} -- ckptscope-cli
CLI="$BUILD/app/ckptscope-cli"
source "$REPO/bench/sweep_data.sh"
sweep_data "$REPO" "$RUNS" "$POINTS"

echo "== machine"
echo "cpu:   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data:  $RUNS runs x $POINTS lines, $(du -sb "$DATA" | cut -f1) bytes (page cache warm after the first run)"
echo
python3 - "$CLI" "$DATA" "$REPEAT" "$RUNS" "$POINTS" "$REPO/bench/sweep_anchor.py" "${BEFORE_CLI:-}" <<'PY'
import json, os, shutil, statistics, subprocess, sys, tempfile
cli, data, repeat, runs, points, anchor = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
before = sys.argv[7] if len(sys.argv) > 7 and sys.argv[7] else None


def measure(cmd, capture=False, env=None, stderr=False):
    """Wall seconds and peak RSS (MB) of one run, from /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name] + cmd,
                           stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env=dict(os.environ, **(env or {})))
        if p.returncode != 0:
            sys.exit("run_sweep_bench: %s failed: %s" % (" ".join(cmd), p.stderr.decode()[-2000:]))
        wall, rss = t.read().split()[-2:]
    if stderr:
        return float(wall), int(rss) / 1024.0, p.stdout, p.stderr.decode()
    return float(wall), int(rss) / 1024.0, p.stdout


cache = tempfile.mkdtemp(prefix="ckptscope-bench-cache-")
cold_env = {"CKPTSCOPE_CACHE_DIR": cache + "/cold"}
warm_env = {"CKPTSCOPE_CACHE_DIR": cache + "/warm"}

# What the outputs hold, checked once: every point of every run (loss and lr;
# tokens and wall_time are the points' own fields), one row per run; read
# from the cache, the same bytes as read without it.
_, _, out = measure([cli, "metrics", data, "--json", "--no-cache"], True)
doc = json.loads(out)
got = sum(len(s["points"]) for r in doc["runs"] for s in r["series"])
assert len(doc["runs"]) == runs and got == runs * points * 2, (len(doc["runs"]), got)
del doc
# The first read fills the warm cache; --stats: the bytes a point costs.
_, _, first, err = measure([cli, "metrics", data, "--json", "--stats"], True, env=warm_env, stderr=True)
stats = json.loads(err.strip().splitlines()[-1])
assert stats["points"] == runs * points * 2 and stats["cache_misses"] == runs, stats
_, _, second, err = measure([cli, "metrics", data, "--json", "--stats"], True, env=warm_env, stderr=True)
assert json.loads(err.strip().splitlines()[-1])["cache_hits"] == runs, err
assert first == out and second == out, "metrics --json differs with the cache"
del out, first, second
_, _, out = measure([cli, "runs", data, "--json", "--metric", "loss"], True, env=warm_env)
table = json.loads(out)
assert len(table["rows"]) == runs and table["columns"] == ["learning_rate", "seed"], table["columns"]
_, _, out = measure(["python3", anchor, data], True)
assert int(out) == runs * points * 2, out
cache_bytes = sum(os.path.getsize(os.path.join(cache, "warm", f)) for f in os.listdir(cache + "/warm"))

cases = [("python reader", ["python3", anchor, data], None),
         ("metrics --json cold", [cli, "metrics", data, "--json"], cold_env),
         ("metrics --json warm", [cli, "metrics", data, "--json"], warm_env),
         ("metrics --json no cache", [cli, "metrics", data, "--json", "--no-cache"], None),
         ("runs --json cold", [cli, "runs", data, "--json", "--metric", "loss"], cold_env),
         ("runs --json warm", [cli, "runs", data, "--json", "--metric", "loss"], warm_env),
         ("runs --group-by warm", [cli, "runs", data, "--json", "--metric", "loss", "--group-by", "all-but"], warm_env)]
if before:  # the same commands by another build (BEFORE_CLI), measured in the same run
    cases[1:1] = [("before: metrics --json", [before, "metrics", data, "--json"], None),
                  ("before: runs --json", [before, "runs", data, "--json", "--metric", "loss"], None)]
results = {}
for _ in range(repeat):
    for name, cmd, env in cases:  # interleaved: a busy stretch slows all alike
        if env is cold_env:
            shutil.rmtree(cold_env["CKPTSCOPE_CACHE_DIR"], ignore_errors=True)
        results.setdefault(name, []).append(measure(cmd, env=env)[:2])
shutil.rmtree(cache, ignore_errors=True)
summary = {"runs": runs, "points": points}
anchor_wall = statistics.median(w for w, _ in results["python reader"])
anchor_rss = max(r for _, r in results["python reader"])
for name, _, _ in cases:
    walls = [w for w, _ in results[name]]
    rss = max(r for _, r in results[name])
    wall = statistics.median(walls)
    print("%-26s wall %s s (median %.2f s)  peak RSS %.0f MB   vs python: %.2fx time, %.2fx memory"
          % (name, " ".join("%.2f" % w for w in walls), wall, rss, wall / anchor_wall, rss / anchor_rss))
    key = name.replace(" ", "_").replace(":", "").replace("--", "")
    summary[key + "_s"] = round(wall, 3)
    summary[key + "_mb"] = round(rss, 1)
print("points in memory: %d, %.2f bytes a point (the columns; 48 before)"
      % (stats["points"], stats["column_bytes"] / stats["points"]))
print("cache: %.1f MB on disk for %d files, %.2f bytes a point" % (cache_bytes / 1e6, stats["files"], cache_bytes / stats["points"]))
summary["bytes_per_point"] = round(stats["column_bytes"] / stats["points"], 2)
summary["cache_mb"] = round(cache_bytes / 1e6, 1)
print("goals at 1,000 x 20,000: <= 3 s cold, <= 0.5 s warm, <= 600 MB for metrics --json and runs --json")
print(json.dumps(summary))
PY
