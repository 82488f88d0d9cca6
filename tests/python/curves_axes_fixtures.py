#!/usr/bin/python3
"""Runs for the Curves tab's x axes test (tests/ui/tst_curves_axes.cpp), and
the truth about them computed here, independently of the app.

    /usr/bin/python3 curves_axes_fixtures.py OUTDIR

OUTDIR/curves_axes/<run>/metrics.jsonl, as the trainer writes them (one JSON
object per line: step, wall_time = time.time(), tokens, the metrics):
  base      steps 0..2,000 every 50, from a Unix time T0
  finetune  steps 5,000..6,000 every 25, a day later; val_loss from step 5,250
            every 250 (logged later than loss: it starts at 250 on the
            relative step axis, not at 0)
  notime    steps 0..500 every 50, no wall_time (nor tokens)
  elapsed   steps 0..300 every 50, wall_time in seconds since its start (12.5 s on)
  ft_seed0, ft_seed1  fine-tunes of 500 steps from step 5,000 and from 7,000
            (grouped by name they align on the relative step axis only)
OUTDIR/curves_axes_single/one/metrics.jsonl: one line, step 700 at T0 + 42 s.
OUTDIR/curves_axes_truth.json:
  relative_step[run][metric], relative_time[run][metric], wall_time[run][metric]:
    [[x, value], ...] as each axis must place the points: the step minus the
    run's first step over all its lines; the wall time minus the run's first
    wall time over all its lines (runs without wall times absent)
  no_wall_time: the runs that log none
  elapsed_wall_time: the runs whose wall times are not Unix times
  group_relative: {"steps": [...], "mean": [...], "runs": [...]} of the
    ft_seed runs' loss aligned by relative step (numpy)
"""
import json
import math
import os
import shutil
import sys

import numpy as np

T0 = 1764750000.25  # a Unix time (2025-12-03), with a fraction as time.time() gives


def loss(step, scale=1.0):
    return scale * (2.0 + math.exp(-step / 400.0)) + 0.01 * math.sin(step / 7.0)


def write_jsonl(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def main(out):
    root = os.path.join(out, "curves_axes")
    shutil.rmtree(root, ignore_errors=True)
    runs = {}
    # Seconds per step that vary a little, as a real run's do.
    runs["base"] = [{"step": s, "loss": loss(s), "tokens": s * 4096,
                     "wall_time": T0 + 1.5 * s + 0.125 * math.sin(s)}
                    for s in range(0, 2001, 50)]
    ft = []
    for s in range(5000, 6001, 25):
        row = {"step": s, "loss": loss(s - 5000, 0.8), "tokens": (s - 5000) * 2048,
               "wall_time": T0 + 86400 + 2.0 * (s - 5000) + 0.25 * math.cos(s)}
        ft.append(row)
        if s >= 5250 and s % 250 == 0:
            ft.append({"step": s, "val_loss": loss(s - 5000, 0.9),
                       "wall_time": row["wall_time"] + 3.5})
    runs["finetune"] = ft
    runs["notime"] = [{"step": s, "loss": loss(s, 1.1)} for s in range(0, 501, 50)]
    # Seconds since its start, not Unix times: no place on a clock.
    runs["elapsed"] = [{"step": s, "loss": loss(s, 1.05), "wall_time": 12.5 + 0.5 * s}
                       for s in range(0, 301, 50)]
    runs["ft_seed0"] = [{"step": s, "loss": loss(s - 5000, 0.7),
                         "wall_time": T0 + 3600 + (s - 5000)} for s in range(5000, 5501, 50)]
    runs["ft_seed1"] = [{"step": s, "loss": loss(s - 7000, 0.75),
                         "wall_time": T0 + 7200 + (s - 7000)} for s in range(7000, 7501, 50)]
    for name, rows in runs.items():
        write_jsonl(os.path.join(root, name, "metrics.jsonl"), rows)
    # A run of one logged point, in a folder of its own.
    single = os.path.join(out, "curves_axes_single")
    shutil.rmtree(single, ignore_errors=True)
    write_jsonl(os.path.join(single, "one", "metrics.jsonl"),
                [{"step": 700, "loss": 3.0, "wall_time": T0 + 42.0}])

    truth = {"relative_step": {}, "relative_time": {}, "wall_time": {}, "no_wall_time": []}
    for name, rows in runs.items():
        first_step = min(r["step"] for r in rows)
        walls = [r["wall_time"] for r in rows if "wall_time" in r]
        if not walls:
            truth["no_wall_time"].append(name)
        for metric in ("loss", "val_loss"):
            pts = [r for r in rows if metric in r]
            if not pts:
                continue
            truth["relative_step"].setdefault(name, {})[metric] = [
                [r["step"] - first_step, r[metric]] for r in pts]
            if walls:
                truth["relative_time"].setdefault(name, {})[metric] = [
                    [r["wall_time"] - min(walls), r[metric]] for r in pts]
                truth["wall_time"].setdefault(name, {})[metric] = [
                    [r["wall_time"], r[metric]] for r in pts]

    # The ft_seed group by relative step: both runs log every 50 steps from
    # their start, so every relative step has both runs.
    a = {r["step"] - 5000: r["loss"] for r in runs["ft_seed0"]}
    b = {r["step"] - 7000: r["loss"] for r in runs["ft_seed1"]}
    steps = sorted(set(a) | set(b))
    truth["group_relative"] = {
        "steps": steps,
        "mean": [float(np.mean([d[s] for d in (a, b) if s in d])) for s in steps],
        "runs": [sum(s in d for d in (a, b)) for s in steps],
    }
    truth["single"] = {"step": 700, "wall_time": T0 + 42.0}
    truth["elapsed_wall_time"] = ["elapsed"]
    with open(os.path.join(out, "curves_axes_truth.json"), "w") as f:
        json.dump(truth, f)


if __name__ == "__main__":
    main(sys.argv[1])
