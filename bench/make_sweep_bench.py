#!/usr/bin/env python3
"""A sweep for bench/run_sweep_bench.sh: RUNS runs x POINTS lines of
metrics.jsonl (issue #26's goal: 1,000 x 20,000), named
lr{1e-4,3e-4,1e-3}_seed{N} with a RUN.json each, written fast (a line
template per run, one write per file; plain python3, no numpy).

    python3 make_sweep_bench.py OUTDIR RUNS POINTS
"""
import json
import math
import os
import sys


def main(out, runs, points):
    lrs = ["1e-4", "3e-4", "1e-3"]
    os.makedirs(out, exist_ok=True)
    for r in range(runs):
        lr, seed = lrs[r % 3], r // 3
        name = "lr%s_seed%d" % (lr, seed)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        rate = float(lr)
        # The same curve shape per run, a cheap per-run wobble instead of a
        # random generator (the parser's cost does not depend on the digits).
        lines = ['{"step": %d, "loss": %.6f, "lr": %s, "tokens": %d, "wall_time": %.3f}\n'
                 % (s, 2.0 + 3.0 * math.exp(-s * rate) + 0.01 * ((s * 7919 + seed * 104729) % 97) / 97,
                    lr, s * 4096, s * 0.25)
                 for s in range(1, points + 1)]
        with open(os.path.join(d, "metrics.jsonl"), "w") as f:
            f.write("".join(lines))
        with open(os.path.join(d, "RUN.json"), "w") as f:
            json.dump({"training": {"run_name": name, "learning_rate": rate, "seed": seed, "max_steps": points}}, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
