#!/usr/bin/env python3
"""The sweep part of bench/run_gui_bench.sh (`run_gui_bench.sh sweep`): each
open of the sweep by `bench_gui sweep` a fresh process, cold (an empty
metrics cache) then warm (the cache the cold open wrote), REPEAT times,
next to the plain Python reader (sweep_anchor.py) in the same run; the time
to the curves shown, peak RSS (/usr/bin/time), the ratios, the goals.

    gui_sweep.py BENCH_GUI SWEEP_DIR REPEAT RUNS POINTS SWEEP_ANCHOR
"""
import json, os, shutil, statistics, subprocess, sys, tempfile
bench, data, repeat, runs, points, anchor = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]


def measure(cmd, env=None):
    """Wall seconds, peak RSS (MB, /usr/bin/time) and stdout of one run."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name] + cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=dict(os.environ, **(env or {})))
        if p.returncode != 0:
            sys.exit("gui_sweep: %s failed: %s" % (" ".join(cmd), p.stderr.decode()[-2000:]))
        wall, rss = t.read().split()[-2:]
    return float(wall), int(rss) / 1024.0, p.stdout.decode()


cache = tempfile.mkdtemp(prefix="ckptscope-gui-bench-cache-")
env = {"CKPTSCOPE_CACHE_DIR": cache, "XDG_CONFIG_HOME": cache + "/config",
       "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
rows = {"python reader": [], "app cold": [], "app warm": []}
for _ in range(repeat):
    wall, rss, out = measure(["python3", anchor, data])
    assert int(out) == runs * points * 2, out
    rows["python reader"].append((wall, rss, None))
    # An empty cache for each cold open: the metrics cache is the folder
    # CKPTSCOPE_CACHE_DIR names itself (the settings stay in config/). Only
    # the first repeat was cold while a "metrics" subfolder was removed.
    for entry in os.listdir(cache):
        if entry != "config":
            path = os.path.join(cache, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    for name in ("app cold", "app warm"):
        wall, rss, out = measure([bench, "sweep", data], env)
        doc = json.loads(out.strip().splitlines()[-1])
        assert doc["runs"] == runs and doc["points"] == runs * points * 2, doc
        rows[name].append((wall, rss, doc))
        print("%-9s %s" % (name, json.dumps(doc)))
shutil.rmtree(cache, ignore_errors=True)
anchor_wall = statistics.median(w for w, _, _ in rows["python reader"])
anchor_rss = max(r for _, r, _ in rows["python reader"])
summary = {"runs": runs, "points": points}
print()
for name, got in rows.items():
    wall = statistics.median(w for w, _, _ in got)
    rss = max(r for _, r, _ in got)
    line = "%-14s process wall %.2f s  peak RSS %.0f MB" % (name, wall, rss)
    key = name.replace(" ", "_")
    if got[0][2]:
        shown = statistics.median(d["open_to_shown_ms"] for _, _, d in got) / 1e3
        start = statistics.median(d["process_to_shown_ms"] for _, _, d in got) / 1e3
        line += "  curves shown %.2f s after the open (%.2f s after the start)" % (shown, start)
        line += "   vs python: %.3fx time, %.2fx memory" % (shown / anchor_wall, rss / anchor_rss)
        summary[key + "_shown_s"] = round(shown, 3)
    summary[key + "_wall_s"] = round(wall, 3)
    summary[key + "_mb"] = round(rss, 1)
    print(line)
print("goals at 1,000 x 20,000: curves shown <= 3 s cold, <= 0.5 s warm, peak <= 600 MB")
print(json.dumps(summary))
