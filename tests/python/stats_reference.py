#!/usr/bin/python3
"""Torch's numbers for the tensor statistics tests.

  stats_reference.py tensors OUTDIR
      writes OUTDIR/stats.pt (a dict of tensors: every dtype the inspector
      meets, non-contiguous views, NaN / Inf / zeros, empty, scalar) and
      OUTDIR/stats.json {name: EXPECT}.
  stats_reference.py checkpoint FILE OUT.json [BINS]
      for the model state of a modern_llm checkpoint: {"numel": {name: n},
      "tensors": {name: EXPECT}} over every state-dict entry, and
      "optimizer": {name: {"step", "exp_avg": EXPECT, "exp_avg_sq": EXPECT}}
      with names by MODEL.md's order (named_parameters without the tied
      lm_head.weight).

EXPECT: {"count", "finite", "zeros", "nans", "posinf", "neginf", "min",
"max", "mean", "std", "norm", "torch_norm", "hist": {"bins", "lo", "hi", "counts"}} with
the statistics over the finite values in float64 (torch.std's default,
unbiased), NaN written as null, "norm" summed exactly (math.fsum: torch.norm
is off by ~2e-12 relative on a million float64 values), and torch.histc over [min, max] of them.
"""
import json
import math
import os
import sys

import torch

torch.set_num_threads(1)
BINS = 64


def expect(t, bins=BINS):
    if t.is_quantized:
        t = t.int_repr()
    if t.is_complex():
        t = t.real
    flat = t.detach().reshape(-1).to(torch.float64)
    fin = flat[torch.isfinite(flat)]
    num = lambda x: None if (x is None or math.isnan(x)) else float(x)
    out = {"count": flat.numel(), "finite": fin.numel(), "zeros": int((flat == 0).sum()),
           "nans": int(torch.isnan(flat).sum()), "posinf": int((flat == math.inf).sum()),
           "neginf": int((flat == -math.inf).sum())}
    if fin.numel():
        lo, hi = float(fin.min()), float(fin.max())
        out.update(min=lo, max=hi, mean=float(fin.mean()), std=num(float(fin.std())), norm=math.sqrt(math.fsum((fin * fin).tolist())),
                   torch_norm=float(fin.norm()))
        counts = torch.histc(fin, bins=bins, min=lo, max=hi)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        out["hist"] = {"bins": bins, "lo": lo, "hi": hi, "counts": [int(c) for c in counts]}
    else:
        out.update(min=None, max=None, mean=None, std=None, norm=0.0, hist=None)
    return out


def tensors():
    g = torch.Generator().manual_seed(7)
    d = {}
    m = torch.randn(300, 200, generator=g)
    m[3, 4] = math.nan
    m[10, 0] = math.inf
    m[20, 199] = -math.inf
    m[5, :17] = 0.0
    d["fp32_specials"] = m
    d["fp32_transposed"] = m.t()  # non-contiguous
    d["fp32_step_slice"] = m[::3, 1::7]
    d["bf16"] = (torch.randn(64, 48, generator=g) * 3).to(torch.bfloat16)
    h = torch.randn(1000, generator=g) * 10
    h[7] = math.inf
    d["fp16"] = h.to(torch.float16)
    d["fp64"] = torch.randn(40, 30, generator=g, dtype=torch.float64) * 1e5 + 3e6
    d["int64"] = torch.randint(-1000, 1000, (123, 7), generator=g)
    d["int32"] = torch.randint(-5, 5, (500,), generator=g, dtype=torch.int32)
    d["uint8"] = torch.randint(0, 256, (32, 32), generator=g, dtype=torch.uint8)
    d["int8"] = torch.randint(-128, 128, (3, 4, 5), generator=g, dtype=torch.int8)
    d["bool"] = torch.rand(77, generator=g) > 0.3
    d["empty"] = torch.empty(0, 5)
    d["scalar"] = torch.tensor(2.5)
    d["single"] = torch.tensor([-4.0])
    d["constant"] = torch.full((10, 10), 0.75)
    d["all_nan"] = torch.full((6,), math.nan)
    # Values on histogram bin edges: 0..64 over 64 bins.
    d["edges"] = torch.arange(65, dtype=torch.float32).repeat(3)
    d["permuted3d"] = torch.randn(4, 5, 6, generator=g).permute(2, 0, 1)
    # Large enough that several threads share it, with a far-off mean.
    d["large"] = torch.randn(1536, 1024, generator=g) * 0.02 + 1000.0
    return d


def main():
    mode = sys.argv[1]
    if mode == "tensors":
        out = sys.argv[2]
        os.makedirs(out, exist_ok=True)
        d = tensors()
        torch.save(d, os.path.join(out, "stats.pt"))
        with open(os.path.join(out, "stats.json"), "w") as f:
            json.dump({k: expect(v) for k, v in d.items()}, f, allow_nan=False)
    elif mode == "checkpoint":
        path, out = sys.argv[2], sys.argv[3]
        bins = int(sys.argv[4]) if len(sys.argv) > 4 else BINS
        ck = torch.load(path)
        sd = ck["model_state"] if isinstance(ck, dict) and "model_state" in ck else ck
        strip = lambda k: k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k
        res = {"numel": {strip(k): v.numel() for k, v in sd.items()},
               "tensors": {strip(k): expect(v, bins) for k, v in sd.items()}}
        opt = ck.get("optimizer") if isinstance(ck, dict) else None
        if opt:
            seen, names = set(), []
            for k, v in sd.items():  # registration order, tied storage once
                key = (v.data_ptr(), v.shape)
                if key not in seen:
                    seen.add(key)
                    names.append(strip(k))
            res["optimizer"] = {}
            for i, st in opt["state"].items():
                step = st["step"]
                res["optimizer"][names[int(i)]] = {
                    "index": int(i),
                    "step": float(step) if not torch.is_tensor(step) else float(step.item()),
                    "exp_avg": expect(st["exp_avg"], bins), "exp_avg_sq": expect(st["exp_avg_sq"], bins)}
        with open(out, "w") as f:
            json.dump(res, f, allow_nan=False)
    else:
        sys.exit("usage: stats_reference.py tensors OUTDIR | checkpoint FILE OUT.json [BINS]")


if __name__ == "__main__":
    main()
