#!/usr/bin/python3
"""Runs to prune, written by torch.save in the modern_llm layout.

    /usr/bin/python3 make_prune_fixtures.py OUTDIR

OUTDIR/run/ (run "tiny"):
  tiny_step{100,200,...,1000}.pt  metadata step, run_name, stage ("pretrain"
      up to step 500, "sft" after), loss, val_loss (lowest, 1.1, at step 300);
      model_state and an Adam optimizer state (exp_avg, exp_avg_sq)
  tiny_final.pt                   the final weights (metadata final: True, step 1000)
  best_checkpoint.pt              a copy of step 300's
  tiny_step1100.pt                truncated: unreadable
OUTDIR/noval/ (run "plain"): plain_step{10,20,30}.pt with loss only.
OUTDIR/expected.json: each checkpoint's size in bytes (os.stat), and for each
readable one the bytes of its tensors' storages and of those under
"optimizer" (each storage once, as torch.load sees them), for the tests.
"""
import collections
import json
import os
import shutil
import sys

import torch

VAL = {100: 2.0, 200: 1.5, 300: 1.1, 400: 1.3, 500: 1.4, 600: 1.2, 700: 1.25, 800: 1.3, 900: 1.35, 1000: 1.4}


def payload(step, run, **meta):
    g = torch.Generator().manual_seed(step)
    model = collections.OrderedDict(
        [("token_embed.weight", torch.randn(16, 8, generator=g)), ("lm_head.weight", torch.randn(16, 8, generator=g))])
    optimizer = {
        "state": {i: {"step": torch.tensor(float(step)), "exp_avg": torch.zeros_like(t), "exp_avg_sq": torch.zeros_like(t)}
                  for i, t in enumerate(model.values())},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1, "params": [0, 1]}],
    }
    metadata = {"step": step, "run_name": run, **meta}
    return {"model_state": model, "optimizer": optimizer, "metadata": metadata}


def storage_bytes(obj):
    """Bytes of the storages the tensors in `obj` view, each storage once."""
    seen = {}

    def walk(v):
        if isinstance(v, torch.Tensor):
            seen[v.storage().data_ptr()] = v.storage().nbytes()
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(obj)
    return sum(seen.values())


def main(out):
    run = os.path.join(out, "run")
    noval = os.path.join(out, "noval")
    for d in (run, noval):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for step, val in VAL.items():
        stage = "pretrain" if step <= 500 else "sft"
        torch.save(payload(step, "tiny", stage=stage, loss=3.0 - step / 1000, val_loss=val),
                   os.path.join(run, "tiny_step%d.pt" % step))
    torch.save(payload(1000, "tiny", stage="sft", loss=2.0, val_loss=1.4, final=True), os.path.join(run, "tiny_final.pt"))
    shutil.copyfile(os.path.join(run, "tiny_step300.pt"), os.path.join(run, "best_checkpoint.pt"))
    with open(os.path.join(run, "tiny_step200.pt"), "rb") as f:
        head = f.read(300)
    with open(os.path.join(run, "tiny_step1100.pt"), "wb") as f:
        f.write(head)
    for step in (10, 20, 30):
        torch.save(payload(step, "plain", loss=1.0 / step), os.path.join(noval, "plain_step%d.pt" % step))
    sizes = {}
    for d in (run, noval):
        for name in sorted(os.listdir(d)):
            sizes[os.path.relpath(os.path.join(d, name), out)] = os.stat(os.path.join(d, name)).st_size
    tensor_bytes, optimizer_bytes = {}, {}
    for rel in sizes:
        try:
            obj = torch.load(os.path.join(out, rel))
        except Exception:
            continue  # the truncated file
        tensor_bytes[rel] = storage_bytes(obj)
        optimizer_bytes[rel] = storage_bytes(obj.get("optimizer"))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"sizes": sizes, "tensor_bytes": tensor_bytes, "optimizer_bytes": optimizer_bytes}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
