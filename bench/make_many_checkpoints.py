#!/usr/bin/python3
"""Many small checkpoints for bench/run_many_ckpt_bench.sh (issue #26's goal:
1,000 runs x 50 checkpoints, 50,000 small files).

    /usr/bin/python3 bench/make_many_checkpoints.py OUTDIR [RUNS [PER_RUN]]

OUTDIR/lr{1e-4,3e-4,1e-3}_seed{N}/ (named as bench/make_sweep_bench.py names
its runs), each with RUN.json and PER_RUN checkpoints step_{k}.pt,
k = 100, 200, ..., each written by torch.save itself: {"model_state": a tiny
decoder's state_dict (64 x 16 embedding, one 16 x 16 projection, a norm;
about 6 kB a file), "step", "loss", "run_name", "config"}. torch.save of such
a file takes about 0.7 ms on this machine (35 s for 50,000), so every file is
a real torch.save (no copied bytes with a patched step): its zip root folder
is the file's own stem, as torch writes it.

A stamp file OUTDIR/.stamp.json records RUNS, PER_RUN and the generator's
version; when it matches, nothing is written again.
"""
import collections
import json
import os
import sys

import torch

# Bump when the layout or contents change: old folders are then rewritten.
GENERATOR_VERSION = 1

CONFIG = collections.OrderedDict([
    ("vocab_size", 64), ("d_model", 16), ("n_layers", 1), ("n_heads", 2), ("ffn_hidden_size", 32),
    ("max_seq_len", 32),
])
LRS = ["1e-4", "3e-4", "1e-3"]


def run_name(r):
    return "lr%s_seed%d" % (LRS[r % 3], r // 3)


def main(out, runs, per_run):
    stamp_path = os.path.join(out, ".stamp.json")
    stamp = {"version": GENERATOR_VERSION, "runs": runs, "per_run": per_run}
    try:
        with open(stamp_path) as f:
            if json.load(f) == stamp:
                return
    except (OSError, ValueError):
        pass
    os.makedirs(out, exist_ok=True)
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    g = torch.Generator().manual_seed(0)
    d, v = CONFIG["d_model"], CONFIG["vocab_size"]
    sd = collections.OrderedDict()
    sd["token_embed.weight"] = torch.randn(v, d, generator=g) * 0.02
    sd["blocks.0.attn.q_proj.weight"] = torch.randn(d, d, generator=g) * 0.02
    sd["final_norm.weight"] = torch.ones(d)
    for r in range(runs):
        name = run_name(r)
        rd = os.path.join(out, name)
        os.makedirs(rd, exist_ok=True)
        rate = float(LRS[r % 3])
        with open(os.path.join(rd, "RUN.json"), "w") as f:
            json.dump({"training": {"run_name": name, "learning_rate": rate, "seed": r // 3,
                                    "max_steps": 100 * per_run}}, f)
        for k in range(1, per_run + 1):
            step = 100 * k
            torch.save({"model_state": sd, "step": step, "loss": 2.0 + 3.0 / k, "run_name": name,
                        "config": dict(CONFIG)}, os.path.join(rd, "step_%d.pt" % step))
    with open(stamp_path, "w") as f:
        json.dump(stamp, f)


if __name__ == "__main__":
    if len(sys.argv) < 2 or len(sys.argv) > 4:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1000,
         int(sys.argv[3]) if len(sys.argv) > 3 else 50)
