#!/usr/bin/env python3
"""The plain Python reader the sweep benchmark compares against: every run's
metrics.jsonl, json.loads per line, each metric's steps and values into
lists (tokens and wall_time into lists of their own); then (like `runs`) each run's last and lowest loss. Prints the count
of points read, for the benchmark to check.

    python3 sweep_anchor.py SWEEP_DIR
"""
import json
import os
import sys


def main(root):
    total = 0
    table = []
    kept = []  # every run's lists stay, as a dashboard holding the curves keeps them
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, "metrics.jsonl")
        if not os.path.isfile(path):
            continue
        series = {}
        extra = {"tokens": [], "wall_time": []}  # per point, as ckptscope keeps them
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                step = rec["step"]
                for k, v in rec.items():
                    if k in extra:
                        extra[k].append(v)
                    elif k != "step":
                        s = series.setdefault(k, ([], []))
                        s[0].append(step)
                        s[1].append(v)
        total += sum(len(s[0]) for s in series.values())
        kept.append((series, extra))
        steps, values = series["loss"]
        i = min(range(len(values)), key=values.__getitem__)
        table.append((name, values[-1], values[i], steps[i]))
    print(total)


if __name__ == "__main__":
    main(sys.argv[1])
