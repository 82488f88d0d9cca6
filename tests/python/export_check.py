#!/usr/bin/python3
"""Checkpoints to export, and a check of what `ckptscope-cli export` wrote.

    /usr/bin/python3 export_check.py make OUTDIR
    /usr/bin/python3 export_check.py check SRC OUT [--dtype bf16|fp16|fp32] [--model-only]

make writes, with torch.save:
  trained.pt  the modern_llm layout after two AdamW steps: model_state (a tied
              embedding, and buffers with float16 edge values, float64,
              bfloat16 and int64), optimizer, metadata (config, step 250, ...)
              with its keys repeated at the top level, and rng_state
  state.pt    the same model's bare state dict
check loads SRC with torch.load and OUT with torch.load (or a .safetensors
file parsed by hand: python3-safetensors is not in Debian 12) and compares:
every model tensor equal (torch.equal and byte for byte) to SRC's after the
same .to(dtype) in torch; the layout (no optimizer; --model-only: no other
tensors either); metadata and config; `exported_from` against os.stat(SRC);
a tie kept as one storage; the file size ratio against the tensor bytes.
Prints "OK <tensors> ratio=<OUT size / SRC size>", else the first
difference, exiting 1.
"""
import collections
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sharded import read_safetensors_with_metadata  # noqa: E402

torch.set_num_threads(1)

CONFIG = collections.OrderedDict([
    ("vocab_size", 1000), ("d_model", 64), ("n_layers", 2), ("n_heads", 4), ("ffn_hidden_size", 256),
    ("max_seq_len", 128), ("rmsnorm_eps", 1e-5), ("tie_embeddings", True),
])


class Block(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.attn = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, hidden)
        self.down = nn.Linear(hidden, d)
        self.norm = nn.Parameter(torch.ones(d))


class Tiny(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.token_embed = nn.Embedding(c["vocab_size"], c["d_model"])
        self.blocks = nn.ModuleList([Block(c["d_model"], c["ffn_hidden_size"]) for _ in range(c["n_layers"])])
        self.lm_head = nn.Linear(c["d_model"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.token_embed.weight
        # Buffers a dtype conversion must get exactly right.
        f16_edges = [65504.0, 65519.0, 65520.0, 1e5, -1e5, 6.1e-5, 6.0e-8, 5.96e-8, 2.98e-8, 2.99e-8, 1e-9,
                     -0.0, 0.1, 1.0009765625, 1.00048828125, 1.00146484375, 3.14159265,
                     float("inf"), float("-inf"), float("nan"), 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -9]
        self.register_buffer("special", torch.tensor(f16_edges, dtype=torch.float32))
        self.register_buffer("wide", torch.linspace(-3, 3, 37, dtype=torch.float64) / 7)
        self.register_buffer("brain", (torch.arange(24, dtype=torch.float32) / 9).to(torch.bfloat16).reshape(4, 6))
        self.register_buffer("count", torch.arange(5, dtype=torch.int64) * 1000)


def make(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(17)
    model = Tiny(CONFIG)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    for _ in range(2):
        opt.zero_grad()
        loss = sum((p ** 2).mean() for p in model.parameters())
        loss.backward()
        opt.step()
    meta = dict(step=250, loss=2.125, config=dict(CONFIG), run_name="tiny", train_loss=2.125, val_loss=2.25,
                learning_rate=1e-3, stage="pretrain", final=False, git_commit="0123456789abcdef")
    payload = {"model_state": model.state_dict(), "optimizer": opt.state_dict(), "metadata": meta}
    payload.update(meta)
    payload["rng_state"] = torch.get_rng_state()
    torch.save(payload, os.path.join(out, "trained.pt"))
    torch.save(model.state_dict(), os.path.join(out, "state.pt"))


def storages_bytes(tensors):
    seen = {}
    for t in tensors:
        s = t.storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def tensors_in(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from tensors_in(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from tensors_in(v)


def same(got, want):
    """torch.equal, and the same bytes, except that a NaN need only be a NaN
    (torch 1.13 itself turns NaN into bfloat16 0x7FC0 or 0xFFFF, depending
    on whether its vectorised path runs)."""
    if got.dtype != want.dtype or list(got.shape) != list(want.shape):
        return False
    if want.is_floating_point():
        nan = torch.isnan(want.float())
        if not torch.equal(nan, torch.isnan(got.float())):
            return False
        got, want = got[~nan], want[~nan]
    if not torch.equal(got, want):
        return False
    as_bytes = lambda t: t.contiguous().view(torch.uint8) if t.dim() else t.reshape(1).view(torch.uint8)
    return torch.equal(as_bytes(got), as_bytes(want))


def fail(message):
    print(message)
    sys.exit(1)


def check(src, out, dtype=None, model_only=False):
    want_type = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, None: None}[dtype]
    conv = lambda t: t.to(want_type) if want_type is not None and t.is_floating_point() else t
    source = torch.load(src)
    modern = isinstance(source, dict) and "model_state" in source
    state = source["model_state"] if modern else source
    src_meta = source["metadata"] if modern else {}

    st = os.stat(src)
    record = {"path": os.path.abspath(src), "size": st.st_size,
              "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime)),
              "step": src_meta.get("step")}

    if out.endswith(".safetensors"):
        meta, got_state = read_safetensors_with_metadata(out)
        if json.loads(meta["exported_from"]) != record:
            fail(f"exported_from {meta['exported_from']} != {record}")
        for k, v in src_meta.items():
            if k not in meta or (meta[k] if isinstance(v, str) else json.loads(meta[k])) != v:
                fail(f"__metadata__[{k}] = {meta.get(k)!r}, want {v!r}")
        if modern and json.loads(meta["config"]) != dict(CONFIG):
            fail(f"config {meta['config']}")
        out_tensors = list(got_state.values())
    else:
        got = torch.load(out)
        if not isinstance(got, dict) or "model_state" not in got:
            fail(f"not the modern_llm layout: {type(got)}")
        if modern:
            keys = [k for k in source if k != "optimizer" and not (
                model_only and k != "model_state" and any(True for _ in tensors_in(source[k])))]
        else:
            keys = ["model_state", "metadata"]
        keys.append("exported_from")
        if list(got) != keys:
            fail(f"top-level keys {list(got)}, want {keys}")
        if got["metadata"] != dict(src_meta, exported_from=record):
            fail(f"metadata {got['metadata']}, want {dict(src_meta, exported_from=record)}")
        if got["exported_from"] != record:
            fail(f"exported_from {got['exported_from']} != {record}")
        for k in keys:
            if k not in ("model_state", "metadata", "exported_from"):
                a, b = got[k], source[k]
                if (isinstance(b, torch.Tensor) and not same(a, b)) or (not isinstance(b, torch.Tensor) and a != b):
                    fail(f"{k}: {a!r} != {b!r}")
        got_state = got["model_state"]
        g, s = got_state, state
        if (s["lm_head.weight"].data_ptr() == s["token_embed.weight"].data_ptr()) != \
                (g["lm_head.weight"].data_ptr() == g["token_embed.weight"].data_ptr()):
            fail("the tie between lm_head.weight and token_embed.weight is not kept")
        out_tensors = list(tensors_in(got))

    if list(got_state) != list(state):
        fail(f"model keys {list(got_state)}, want {list(state)}")
    for k, t in state.items():
        if not same(got_state[k], conv(t)):
            fail(f"{k}: got {got_state[k].dtype} {list(got_state[k].shape)} {got_state[k].flatten()[:6].tolist()}, "
                 f"want {conv(t).dtype} {list(t.shape)} {conv(t).flatten()[:6].tolist()}")

    # The file shrinks as its tensor bytes do (what the copy keeps over all
    # the source held), give or take the archive's own overhead.
    ratio = os.path.getsize(out) / st.st_size
    expected = storages_bytes(out_tensors) / storages_bytes(tensors_in(source))
    if abs(ratio - expected) > 0.02:
        fail(f"size ratio {ratio:.4f}, tensor bytes say {expected:.4f}")
    print(f"OK {len(state)} ratio={ratio:.4f}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        args = sys.argv[2:]
        model_only = "--model-only" in args
        args = [a for a in args if a != "--model-only"]
        dtype = args[args.index("--dtype") + 1] if "--dtype" in args else None
        check(args[0], args[1], dtype, model_only)
