#!/usr/bin/python3
"""The curves of Lightning CSVLogger files, read independently of CkptScope.

    python3 trainer_layouts_reader.py ROOT

Prints JSON: {"runs": {RUN: {METRIC: [[step, value|null, null, null], ...]}}}
where RUN is the folder holding a metrics.csv, relative to ROOT.

Written from Lightning's documentation of CSVLogger (and what
lightning.fabric.loggers.csv_logs writes): metrics.csv is a CSV file
(Python's csv module, excel dialect) whose header names every logged key,
`step` among them; each row is one log_metrics call at that row's step, a
key it did not log an empty cell. Every non-empty cell of another column is
a point (step, float(cell)) of the metric its header names; non-finite
values are null, as in JSON. A key logged again at the same step (epoch in
the training and the validation row) keeps the later row's value; a
metric's steps must not go back in these fixtures (the reader refuses that
rather than guess).
"""
import csv
import json
import math
import os
import sys


def read_csv(path):
    series = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            step = int(row["step"])
            for key, cell in row.items():
                if key == "step" or cell == "":
                    continue
                value = float(cell)
                points = series.setdefault(key, [])
                point = [step, value if math.isfinite(value) else None, None, None]
                if points and points[-1][0] > step:
                    raise SystemExit(f"{path}: {key} goes back to step {step}")
                if points and points[-1][0] == step:
                    points[-1] = point  # logged again at one step: the later row
                else:
                    points.append(point)
    return series


def main(argv):
    root = argv[1]
    runs = {}
    for folder, _dirs, files in os.walk(root):
        if "metrics.csv" in files:
            runs[os.path.relpath(folder, root)] = read_csv(os.path.join(folder, "metrics.csv"))
    json.dump({"runs": runs}, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
