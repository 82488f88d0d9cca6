#!/usr/bin/python3
"""Runs for the Curves tab's drawing tests (tests/ui/tst_curves_sweep.cpp),
and the truth about them computed here, independently of the app.

    /usr/bin/python3 curves_drawing_fixtures.py OUTDIR

OUTDIR/curves_spike/spike/metrics.jsonl: 200,000 points of a quiet "loss"
  (steps 0..199,999) with one spike (value 50) at step SPIKE_STEP.
OUTDIR/curves_density/{dense,sparse}/metrics.jsonl: the same smooth curve
  logged every step (0..2,000) and every 10 steps.
OUTDIR/curves_drawing_truth.json:
  spike: {step, value, first: [step, value], last: [step, value]}
  time_ema: for slider weight 0.6, the span (half-life) the Curves tab is
    documented to use (the shown runs' median spacing, the upper middle
    of an even count: 10 here, spacing * ln 2 / -ln(weight)) and per run
    the time-weighted EMA of its points (s0 = y0, si = a*s(i-1) + (1-a)*yi,
    a = 2^-((xi - x(i-1)) / half-life)) as [step, smoothed] pairs.
"""
import json
import math
import os
import shutil
import sys

SPIKE_STEP = 123457
N_SPIKE = 200000
WEIGHT = 0.6


def curve(step):
    return 2.0 + math.exp(-step / 300.0) + 0.05 * math.sin(step / 40.0)


def write_jsonl(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def time_ema(points, half_life):
    out = []
    s = None
    prev = None
    for x, y in points:
        if s is None:
            s = y
        else:
            a = 2.0 ** (-(x - prev) / half_life)
            s = a * s + (1 - a) * y
        prev = x
        out.append([x, s])
    return out


def main(out):
    spike_root = os.path.join(out, "curves_spike")
    density_root = os.path.join(out, "curves_density")
    shutil.rmtree(spike_root, ignore_errors=True)
    shutil.rmtree(density_root, ignore_errors=True)
    rows = []
    for step in range(N_SPIKE):
        v = 50.0 if step == SPIKE_STEP else 1.0 + 0.001 * math.sin(step / 50.0)
        rows.append({"step": step, "loss": v})
    write_jsonl(os.path.join(spike_root, "spike", "metrics.jsonl"), rows)

    dense = [(s, curve(s)) for s in range(0, 2001)]
    sparse = [(s, curve(s)) for s in range(0, 2001, 10)]
    write_jsonl(os.path.join(density_root, "dense", "metrics.jsonl"),
                [{"step": s, "loss": v} for s, v in dense])
    write_jsonl(os.path.join(density_root, "sparse", "metrics.jsonl"),
                [{"step": s, "loss": v} for s, v in sparse])
    spacings = sorted((pts[-1][0] - pts[0][0]) / (len(pts) - 1) for pts in (dense, sparse))
    spacing = spacings[len(spacings) // 2]
    half_life = spacing * math.log(2) / -math.log(WEIGHT)
    truth = {
        "spike": {"step": SPIKE_STEP, "value": 50.0, "first": [0, rows[0]["loss"]],
                  "last": [N_SPIKE - 1, rows[-1]["loss"]]},
        "time_ema": {"weight": WEIGHT, "half_life": half_life,
                     "dense": time_ema(dense, half_life), "sparse": time_ema(sparse, half_life)},
    }
    with open(os.path.join(out, "curves_drawing_truth.json"), "w") as f:
        json.dump(truth, f)


if __name__ == "__main__":
    main(sys.argv[1])
