#!/usr/bin/python3
"""A run whose checkpoints take a moment to compare, for Cancel buttons.

    /usr/bin/python3 make_large_run.py OUTDIR

OUTDIR/big/big_step{100,200,300}.pt: the modern_llm layout (model_state,
metadata with step, run_name, loss), 8 float32 matrices of 1024 x 2048
(64 MiB a file), each step's weights the last one's plus noise.
OUTDIR/expected.json: {"rows": {name: {row: [first 6 values]}}} of step 100's
weights for a few rows, and each file's metadata, read back by torch.
"""
import collections
import json
import os
import sys

import torch


def main(out):
    run = os.path.join(out, "big")
    os.makedirs(run, exist_ok=True)
    g = torch.Generator().manual_seed(7)
    names = [f"blocks.{i}.mlp.w{k}.weight" for i in range(4) for k in (1, 2)]
    model = collections.OrderedDict((n, torch.randn(1024, 2048, generator=g)) for n in names)
    expected = {"rows": {}, "metadata": {}}
    for step, loss in ((100, 3.25), (200, 2.75), (300, 2.5)):
        if step > 100:
            for n in names:
                model[n] = model[n] + 0.01 * torch.randn(1024, 2048, generator=g)
        path = os.path.join(run, f"big_step{step}.pt")
        meta = {"step": step, "run_name": "big", "loss": loss}
        torch.save({"model_state": model, "metadata": meta}, path)
        expected["metadata"][os.path.basename(path)] = meta
        if step == 100:
            back = torch.load(path)["model_state"]
            for n in names[:2]:
                expected["rows"][n] = {str(r): back[n][r, :6].tolist() for r in (0, 777, 1023)}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main(sys.argv[1])
