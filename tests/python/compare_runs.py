#!/usr/bin/python3
"""Two training runs that should be the same run, compared by PyTorch.

  compare_runs.py RUN_A_DIR RUN_B_DIR CKPT_NAME RTOL [--bitwise]

Loads RUN_x_DIR/CKPT_NAME with torch.load and compares every model_state
tensor and every AdamW moment: |a - b| <= RTOL * max(|a|, |b|) + 1e-12 (with
--bitwise: torch.equal); compares metrics.jsonl's loss of every step both
runs logged (the last line of a step wins, as a resumed run appends) to the
same tolerance. Prints what it compared; exits 1 on any difference.
"""
import json
import os
import sys

import torch


def fail(msg):
    print("compare_runs: " + msg, file=sys.stderr)
    sys.exit(1)


def close(a, b, rtol, bitwise):
    if a.shape != b.shape:
        return False, float("inf")
    a, b = a.double(), b.double()
    diff = (a - b).abs()
    scale = torch.maximum(a.abs(), b.abs())
    rel = (diff / (scale + 1e-30)).max().item() if a.numel() else 0.0
    if bitwise:
        return torch.equal(a, b), rel
    return bool((diff <= rtol * scale + 1e-12).all()), rel


def losses(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                j = json.loads(line)
                out[j["step"]] = j["loss"]
    return out


def main():
    if len(sys.argv) < 5:
        fail(__doc__)
    dir_a, dir_b, name, rtol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    bitwise = "--bitwise" in sys.argv[5:]
    a = torch.load(os.path.join(dir_a, name), map_location="cpu", weights_only=False)
    b = torch.load(os.path.join(dir_b, name), map_location="cpu", weights_only=False)
    worst = 0.0
    if set(a["model_state"]) != set(b["model_state"]):
        fail("the model_state keys differ")
    for k in a["model_state"]:
        ok, rel = close(a["model_state"][k], b["model_state"][k], rtol, bitwise)
        worst = max(worst, rel)
        if not ok:
            fail("model_state[%s] differs (max relative difference %.3g)" % (k, rel))
    sa, sb = a["optimizer"]["state"], b["optimizer"]["state"]
    if set(sa) != set(sb):
        fail("the optimizer states cover different parameters")
    for i in sa:
        for key in ("exp_avg", "exp_avg_sq"):
            ok, rel = close(sa[i][key], sb[i][key], rtol, bitwise)
            worst = max(worst, rel)
            if not ok:
                fail("optimizer state %s[%s] differs (max relative difference %.3g)" % (key, i, rel))
    if a["step"] != b["step"]:
        fail("steps differ: %s and %s" % (a["step"], b["step"]))
    la = losses(os.path.join(dir_a, "metrics.jsonl"))
    lb = losses(os.path.join(dir_b, "metrics.jsonl"))
    common = sorted(set(la) & set(lb))
    if len(common) < a["step"]:
        fail("metrics.jsonl: only %d steps in common, expected %d" % (len(common), a["step"]))
    for s in common:
        x, y = la[s], lb[s]
        same = x == y if bitwise else abs(x - y) <= rtol * max(abs(x), abs(y))
        if not same:
            fail("step %d: loss %.17g against %.17g" % (s, x, y))
        worst = max(worst, abs(x - y) / max(abs(x), abs(y), 1e-30))
    print(json.dumps({"tensors": len(a["model_state"]), "steps": len(common), "max_relative_difference": worst,
                      "bitwise": bitwise}))


if __name__ == "__main__":
    main()
