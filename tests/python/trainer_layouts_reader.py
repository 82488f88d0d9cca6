#!/usr/bin/python3
"""The curves of Lightning CSVLogger files and of MLflow's file store, read
independently of CkptScope.

    python3 trainer_layouts_reader.py ROOT

Prints JSON: {"runs": {RUN: {METRIC: [[step, value|null, wall_time|null,
null], ...]}}} where RUN is the folder holding a metrics.csv, relative to
ROOT, or an MLflow run's name.

MLflow (the FileStore's documented layout and _get_metric_from_line):
mlruns/<experiment_id>/<run_id>/ with meta.yaml; folders starting with '.'
(.trash) are deleted runs. The run's name is meta.yaml's run_name, else
tags/mlflow.runName, else the run id. Each file under metrics/ is the metric
named by its path there ("train/loss"); each line "timestamp value step"
(ms; an old line "timestamp value" is step 0); wall time timestamp / 1000.

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

import yaml


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


def add_point(points, step, value, wall, where):
    point = [step, value if math.isfinite(value) else None, wall, None]
    if points and points[-1][0] > step:
        raise SystemExit(f"{where} goes back to step {step}")
    if points and points[-1][0] == step:
        points[-1] = point
    else:
        points.append(point)


def read_mlflow_run(run_dir):
    with open(os.path.join(run_dir, "meta.yaml")) as f:
        meta = yaml.safe_load(f)
    name = meta.get("run_name") or ""
    tag = os.path.join(run_dir, "tags", "mlflow.runName")
    if not name and os.path.isfile(tag):
        with open(tag) as f:
            name = f.read().strip()
    name = name or os.path.basename(run_dir)
    series = {}
    metrics = os.path.join(run_dir, "metrics")
    for folder, _dirs, files in os.walk(metrics):
        for fname in files:
            path = os.path.join(folder, fname)
            key = os.path.relpath(path, metrics).replace(os.sep, "/")
            points = series.setdefault(key, [])
            with open(path) as f:
                for line in f:
                    parts = line.strip().split(" ")
                    step = int(parts[2]) if len(parts) == 3 else 0
                    add_point(points, step, float(parts[1]), int(parts[0]) / 1000, path)
    return name, series


def main(argv):
    root = argv[1]
    runs = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        parent = os.path.dirname(folder)
        if "meta.yaml" in files and os.path.isfile(os.path.join(parent, "meta.yaml")):
            name, series = read_mlflow_run(folder)
            runs[name] = series
            dirs[:] = []
            continue
        if "metrics.csv" in files:
            runs[os.path.relpath(folder, root)] = read_csv(os.path.join(folder, "metrics.csv"))
    json.dump({"runs": runs}, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
