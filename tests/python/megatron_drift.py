#!/usr/bin/python3
"""The change between two Megatron-LM saves of the torch format, with
PyTorch, as a person would compute it by hand.

    /usr/bin/python3 megatron_drift.py ITER_DIR_A ITER_DIR_B

Each save's tensor-parallel slices are joined by megatron_tp_join.py (the
converter's rules), then, over every tensor of the model together, the
relative change ||b - a|| / ||a|| in float64; and per tensor.

Prints JSON: {"total": x, "tensors": n, "elements": N,
"rel_l2": {name: x}}.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

JOIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "megatron_tp_join.py")


def whole(iter_dir):
    out = subprocess.run([sys.executable, JOIN, iter_dir], check=True, capture_output=True).stdout
    tensors = {}
    for name, t in json.loads(out).items():
        dtype = getattr(torch, t["dtype"].split(".")[1])
        raw = bytearray.fromhex(t["hex"])
        tensors[name] = torch.frombuffer(raw, dtype=dtype).reshape(t["shape"]).double()
    return tensors


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b = whole(argv[1]), whole(argv[2])
    assert a.keys() == b.keys(), "the two saves hold different tensors"
    diff_sq = sum(float(((b[n] - a[n]) ** 2).sum()) for n in a)
    a_sq = sum(float((a[n] ** 2).sum()) for n in a)
    rel = {n: float((b[n] - a[n]).norm() / a[n].norm()) if float(a[n].norm()) > 0 else None
           for n in a}
    json.dump({"total": float(np.sqrt(diff_sq) / np.sqrt(a_sq)), "tensors": len(a),
               "elements": sum(t.numel() for t in a.values()), "rel_l2": rel}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
