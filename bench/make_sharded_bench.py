#!/usr/bin/python3
"""Writes an N-rank torch.distributed.checkpoint folder of a checkpoint file
(the benchmark model bench/make_checkpoint.py writes), for run_sharded_bench.sh.

    /usr/bin/python3 bench/make_sharded_bench.py SRC.pt OUTDIR [RANKS]

{"model": model_state, "optim": optimizer, "step": step}, every tensor of
two or more dimensions split along dim 0 over the ranks as FSDP does, the
rest on rank 0 (tests/python/make_sharded.py's stand-in writer). A stamp
OUTDIR/.stamp.json keeps a finished folder from being written again.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import make_sharded  # noqa: E402


def main():
    src, out = sys.argv[1], sys.argv[2]
    ranks = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    stamp = os.path.join(out, ".stamp.json")
    want = {"src": os.path.abspath(src), "size": os.path.getsize(src), "ranks": ranks, "version": 1}
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                return
    ck = torch.load(src)
    state = {"model": ck["model_state"], "step": int(ck.get("step", 0))}
    if ck.get("optimizer"):
        state["optim"] = ck["optimizer"]
    make_sharded.write_dcp(out, state, ranks, replicate=())
    with open(stamp, "w") as f:
        json.dump(want, f)


if __name__ == "__main__":
    main()
