#!/usr/bin/python3
"""Many runs of small checkpoints (issue #26's listing of 50,000 files, in
little), and what torch.load reads back from each.

    /usr/bin/python3 make_many_runs.py OUTDIR

OUTDIR/runs/lr{1e-4,3e-4,1e-3}_seed{N}/ (N = 0..11: seed10 after seed2),
each with RUN.json and step_{100..600}.pt written by torch.save ({"model_state":
a tiny state_dict, "step", "loss"}); lr1e-3_seed3 also holds
big_step_700.pt, larger than the 64 KiB a reader reads whole (the pread
path); lr3e-4_seed11 holds only metrics.jsonl (a run without checkpoints).

OUTDIR/expected.json: {"order": [run names in natural order],
  "runs": {name: [[file, step, loss], ...] by step}} with step and loss as
torch.load reads them back from each file.
"""
import collections
import json
import os
import re
import sys

import torch


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def main(out):
    root = os.path.join(out, "runs")
    os.makedirs(root, exist_ok=True)
    g = torch.Generator().manual_seed(7)
    small = collections.OrderedDict([("embed.weight", torch.randn(32, 8, generator=g)),
                                     ("norm.weight", torch.ones(8))])
    big = collections.OrderedDict([("embed.weight", torch.randn(200, 100, generator=g))])
    lrs = ["1e-4", "3e-4", "1e-3"]
    names = []
    for r in range(36):
        name = "lr%s_seed%d" % (lrs[r % 3], r // 3)
        names.append(name)
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "RUN.json"), "w") as f:
            json.dump({"training": {"learning_rate": float(lrs[r % 3]), "seed": r // 3}}, f)
        if name == "lr3e-4_seed11":
            with open(os.path.join(d, "metrics.jsonl"), "w") as f:
                f.write('{"step": 10, "loss": 3.5}\n')
            continue
        for k in range(1, 7):
            torch.save({"model_state": small, "step": 100 * k, "loss": 2.0 + r / 100 + 1.0 / k},
                       os.path.join(d, "step_%d.pt" % (100 * k)))
        if name == "lr1e-3_seed3":
            torch.save({"model_state": big, "step": 700, "loss": 1.25},
                       os.path.join(d, "big_step_700.pt"))
    expected = {"order": sorted(names, key=natural_key), "runs": {}}
    for name in names:
        d = os.path.join(root, name)
        rows = []
        for f in os.listdir(d):
            if f.endswith(".pt"):
                ck = torch.load(os.path.join(d, f))
                rows.append([f, ck["step"], ck["loss"]])
        rows.sort(key=lambda row: row[1])
        expected["runs"][name] = rows
    assert os.path.getsize(os.path.join(root, "lr1e-3_seed3", "big_step_700.pt")) > 64 * 1024
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main(sys.argv[1])
