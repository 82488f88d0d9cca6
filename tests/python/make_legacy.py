#!/usr/bin/python3
"""Legacy (non-zip) torch files in every pickle protocol, and what torch
says they hold, for tests/core/tst_legacy.cpp.

Usage: /usr/bin/python3 make_legacy.py OUTDIR   (Debian's python3-torch, 1.13)

OUTDIR/legacy_p<P>.pt: torch.save(checkpoint, _use_new_zipfile_serialization=
False, pickle_protocol=P) for P = 0..5, one realistic checkpoint (a model
state dict in several dtypes with a tied weight, a view and a transposed
tensor; AdamW-like optimizer state keyed by int; metadata; a nested list).
OUTDIR/legacy.json:
  {"tensors": [{"path": [...], "dtype", "shape", "nbytes", "crc32"}, ...]
       every tensor of the checkpoint, in the order a depth-first walk in
       file order meets it (a tensor object reached twice counts once);
       crc32 of its bytes, row-major and little-endian, as torch has them;
   "files": {"legacy_p<P>.pt": {"protocol": P, "torch_loads": bool,
             "magic": [first, end) byte range of the magic number's own
             bytes (the LONG1 payload or the decimal digits),
             "magic_pickle_end": offset just past the magic number pickle}}}
torch_loads is what torch.load (the full unpickler: these are our own
files, written just now from plain tensors) made of each file: protocol 0
it writes but cannot read back.
"""
import io
import json
import os
import sys
from collections import OrderedDict

import torch

from tensor_walk import describe

MAGIC = 0x1950A86A20F9469CFC6C


def checkpoint():
    g = torch.Generator().manual_seed(24)
    embed = torch.randn(16, 8, generator=g)
    qkv = torch.randn(24, 8, generator=g).to(torch.bfloat16)
    base = torch.randn(6, 5, generator=g, dtype=torch.float64)
    model = OrderedDict()
    model["embed.weight"] = embed
    model["blocks.0.attn.qkv.weight"] = qkv
    model["blocks.0.attn.qkv.bias"] = torch.randn(24, generator=g).half()
    model["blocks.0.mlp.w"] = base
    model["blocks.0.mlp.w_rows"] = base[2:5]  # a view: storage offset 10
    model["blocks.0.mlp.w_t"] = base.t()  # strides (1, 5)
    model["blocks.0.mask"] = torch.tensor([True, False, True, True])
    model["positions"] = torch.arange(-3, 9, dtype=torch.int64)
    model["codes"] = torch.tensor([[1, -2], [3, -4]], dtype=torch.int8)
    model["pixels"] = torch.tensor([0, 7, 255], dtype=torch.uint8)
    model["counts"] = torch.tensor([70000, -5], dtype=torch.int32)
    model["small"] = torch.tensor([-300, 2], dtype=torch.int16)
    model["phase"] = torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64)
    model["scale"] = torch.tensor(0.125)  # 0-dim
    model["empty"] = torch.zeros(0, 3)
    model["lm_head.weight"] = embed.detach()  # tied: another tensor, same storage
    model._metadata = OrderedDict({"": {"version": 1}})
    params = [embed, qkv]
    state = {i: {"step": torch.tensor(3.0), "exp_avg": torch.randn(p.shape, generator=g).to(p.dtype),
                 "exp_avg_sq": torch.rand(p.shape, generator=g).to(p.dtype)} for i, p in enumerate(params)}
    optimizer = {"state": state,
                 "param_groups": [{"lr": 3e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1,
                                   "amsgrad": False, "params": [0, 1]}]}
    rng = torch.arange(5, dtype=torch.uint8)
    return {"model_state": model, "optimizer": optimizer,
            "metadata": {"step": 100, "loss": 2.5, "run": "legacy", "stage": "pretrain"},
            "extras": [rng, (rng, 5), {"deep": [torch.ones(2, 2, dtype=torch.float16)]}]}


def magic_range(data, protocol):
    """[first, end) of the magic number's own bytes, and the end of its pickle."""
    if protocol < 2:
        digits = str(MAGIC).encode()
        assert data[:1] == b"L" and data[1:1 + len(digits)] == digits
        return 1, 1 + len(digits), data.index(b".") + 1
    raw = MAGIC.to_bytes(10, "little")
    at = data.index(b"\x8a\x0a" + raw) + 2
    return at, at + 10, at + 11


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_legacy.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    ckpt = checkpoint()
    expected = describe(ckpt)
    files = {}
    for protocol in range(6):
        name = f"legacy_p{protocol}.pt"
        buf = io.BytesIO()
        torch.save(ckpt, buf, _use_new_zipfile_serialization=False, pickle_protocol=protocol)
        data = buf.getvalue()
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
        try:
            loaded = torch.load(io.BytesIO(data))
            assert describe(loaded) == expected, f"{name}: torch reads back something else"
            loads = True
        except Exception:  # noqa: BLE001 - protocol 0: torch cannot read its own text ids
            loads = False
        first, end, pickle_end = magic_range(data, protocol)
        files[name] = {"protocol": protocol, "torch_loads": loads, "magic": [first, end],
                       "magic_pickle_end": pickle_end}
    assert all(files[f"legacy_p{p}.pt"]["torch_loads"] for p in range(1, 6))
    with open(os.path.join(outdir, "legacy.json"), "w") as f:
        json.dump({"tensors": expected, "files": files}, f, indent=1)
    print(f"make_legacy: wrote {len(files)} files with {len(expected)} tensors each to {outdir}")


if __name__ == "__main__":
    main()
