#!/usr/bin/python3
"""Write pairs of checkpoints for the diff tests, and what a diff must report.

    /usr/bin/python3 make_diff_fixtures.py OUTDIR

OUTDIR/expected.json: {"pairs": [{"name", "a", "b", "description",
"expected": diff_reference.diff_objects(torch.load(a), torch.load(b))}]}
with file names relative to OUTDIR and non-finite floats as {"$float": ...}.
The expectations are computed from the files as written (loaded back), in
float64, by diff_reference.py.
"""
import collections
import json
import math
import os
import shutil
import struct
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diff_reference  # noqa: E402
from fixture_types import RunInfo  # noqa: E402

torch.set_num_threads(1)
OrderedDict = collections.OrderedDict

CONFIG = OrderedDict([
    ("vocab_size", 64), ("d_model", 16), ("n_layers", 3), ("n_heads", 2), ("ffn_hidden_size", 32),
    ("max_seq_len", 32), ("rmsnorm_eps", 1e-5), ("dropout", 0.0), ("initializer_range", 0.02),
    ("rope_theta", 10000.0), ("rope_scaling", None), ("use_rope", True), ("use_attention_sinks", True),
    ("num_attention_sinks", 2), ("use_swiglu", True), ("swiglu_multiplier", 2.0), ("use_gqa", False),
    ("gqa_groups", None), ("use_moe", False), ("moe_config", None), ("tie_embeddings", True),
])


def model_state(seed, cfg=CONFIG):
    """A modern_llm state dict (MODEL.md order), lm_head tied to token_embed."""
    g = torch.Generator().manual_seed(seed)
    d, H, S, V = cfg["d_model"], cfg["ffn_hidden_size"], cfg["num_attention_sinks"], cfg["vocab_size"]

    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    sd = OrderedDict()
    embed = normal(V, d)
    sd["token_embed.weight"] = embed
    for i in range(cfg["n_layers"]):
        b = f"blocks.{i}."
        sd[b + "attn.sink_states"] = normal(S, d)
        for p in ("q", "k", "v", "out"):
            sd[b + f"attn.{p}_proj.weight"] = normal(d, d)
        sd[b + "attn_norm.weight"] = 1 + normal(d, std=0.1)
        sd[b + "ffn_norm.weight"] = 1 + normal(d, std=0.1)
        sd[b + "ffn.gate.weight"] = normal(2 * H, d)
        sd[b + "ffn.gate.bias"] = normal(2 * H, std=0.01)
        sd[b + "ffn.proj.weight"] = normal(d, H)
        sd[b + "ffn.proj.bias"] = normal(d, std=0.01)
    sd["final_norm.weight"] = 1 + normal(d, std=0.1)
    sd["lm_head.weight"] = embed  # tied: the same tensor, one storage
    return sd


def perturbed(sd, seed, scales):
    """A copy with noise whose size depends on the block, so that the
    per-block bars differ; tied entries stay tied."""
    g = torch.Generator().manual_seed(seed)
    out, done = OrderedDict(), {}
    for name, t in sd.items():
        if id(t) in done:
            out[name] = done[id(t)]
            continue
        block, _ = diff_reference.classify(name)
        scale = scales.get(block, 1e-3)
        n = t + torch.randn(t.shape, generator=g) * scale * (t.abs().mean() + 1e-3)
        done[id(t)] = n
        out[name] = n
    return out


def metadata(step, loss, **extra):
    m = dict(step=step, loss=loss, config=dict(CONFIG), run_name="tiny", train_loss=loss, val_loss=loss + 0.125,
             learning_rate=6e-4, stage="pretrain", final=False, git_commit="0123456789abcdef")
    m.update(extra)
    return {k: v for k, v in m.items() if v is not _DROP}


_DROP = object()


def checkpoint(sd, meta, optimizer=True):
    out = {"model_state": sd}
    if optimizer:
        params = []
        seen = set()
        for t in sd.values():
            if id(t) not in seen:
                seen.add(id(t))
                params.append(nn.Parameter(t.clone()))
        opt = torch.optim.AdamW(params, lr=meta.get("learning_rate", 1e-3))
        for p in params:
            p.grad = torch.ones_like(p) * 1e-3
        opt.step()
        out["optimizer"] = opt.state_dict()
    out["metadata"] = meta
    out.update(meta)
    return out


def write_safetensors(path, tensors, meta):
    """A safetensors file by hand (the package is not installed)."""
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64"}
    header, blobs, offset = {"__metadata__": meta}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.dtype != torch.bfloat16 else \
            t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)


def load_safetensors(path):
    codes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        raw = bytearray(data[lo:hi])
        t = torch.frombuffer(raw, dtype=torch.uint8).view(codes[info["dtype"]]).reshape(info["shape"])
        out[name] = t.clone()
    return out  # the metadata strings are not state: the reference sees the tensors only


class Pairs:
    def __init__(self, root):
        self.root = root
        self.pairs = []

    def path(self, rel):
        p = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def save(self, rel, obj, **kw):
        torch.save(obj, self.path(rel), **kw)

    def add(self, name, a, b, description, loaded_a=None, loaded_b=None):
        la = loaded_a if loaded_a is not None else diff_reference.load(self.path(a))
        lb = loaded_b if loaded_b is not None else diff_reference.load(self.path(b))
        self.pairs.append({"name": name, "a": a, "b": b, "description": description,
                           "expected": diff_reference.diff_objects(la, lb)})


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[1]
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    fx = Pairs(root)
    base = model_state(1)

    # Weights moved by a different amount per block; metadata as a trainer writes it.
    b = perturbed(base, 2, {-1: 1e-4, 0: 1e-3, 1: 1e-2, 2: 1e-1})
    fx.save("perturbed/a.pt", checkpoint(base, metadata(100, 2.5, parent=_DROP)))
    fx.save("perturbed/b.pt", checkpoint(b, metadata(200, 2.25, learning_rate=3e-4, git_commit=_DROP,
                                                     parent="runs/tiny_step100.pt")))
    fx.add("perturbed", "perturbed/a.pt", "perturbed/b.pt", "per-block noise, tied head, metadata changes")

    # Structure: removed / added keys, a shape change, dtype changes, and a
    # compiled model's "_orig_mod." keys on one side.
    s = OrderedDict()
    for name, t in perturbed(base, 3, {}).items():
        if name == "blocks.2.ffn.proj.bias":
            continue  # removed
        if name == "blocks.1.attn.sink_states":
            t = torch.cat([t, t[:1] * 2])  # [3, d]
        if name == "blocks.0.ffn.gate.weight":
            t = t.to(torch.bfloat16)
        if name == "blocks.1.ffn.gate.weight":
            t = t.to(torch.float16)
        if name == "blocks.2.ffn.gate.weight":
            t = t.to(torch.float64)
        s[name] = t
    s["lm_head.weight"] = s["token_embed.weight"]
    s["blocks.0.attn.extra_scale"] = torch.ones(4)  # added
    cfg = dict(CONFIG, num_attention_sinks=3)
    compiled = OrderedDict(("_orig_mod." + k, v) for k, v in s.items())
    fx.save("structure/a.pt", checkpoint(base, metadata(100, 2.5)))
    fx.save("structure/b.pt", checkpoint(compiled, metadata(100, 2.5, config=cfg, stage="sft"), optimizer=False))
    fx.add("structure", "structure/a.pt", "structure/b.pt", "added/removed/shape/dtype, _orig_mod. keys")

    # Saved from wrapped models without unwrapping: DistributedDataParallel
    # ("module."), DDP around a compiled model ("module._orig_mod."), and a
    # compiled DDP model ("_orig_mod.module."), against the plain checkpoint.
    # Every name must match: nothing added or removed.
    for name, prefix in (("ddp", "module."), ("ddp_compiled", "module._orig_mod."),
                         ("compiled_ddp", "_orig_mod.module.")):
        w = perturbed(base, 8, {})
        wrapped = OrderedDict((prefix + k, v) for k, v in w.items())
        fx.save(f"{name}/plain.pt", checkpoint(base, metadata(100, 2.5)))
        fx.save(f"{name}/wrapped.pt", checkpoint(wrapped, metadata(200, 2.25)))
        fx.add(name, f"{name}/plain.pt", f"{name}/wrapped.pt", f"keys prefixed {prefix} in b")
        exp = fx.pairs[-1]["expected"]
        assert not exp["added"] and not exp["removed"] and set(exp["tensors"]) == set(base.keys()), name
        fx.pairs[-1]["plain_names"] = list(base.keys())
        fx.pairs[-1]["raw_keys_b"] = list(wrapped.keys())

    # Zero tensors, NaN / inf, an all-NaN tensor, a non-contiguous view, an
    # int buffer, a head tied in a only; bare state dicts (no metadata).
    sa = OrderedDict((k, v.clone()) for k, v in base.items() if k != "lm_head.weight")
    sa["lm_head.weight"] = sa["token_embed.weight"]
    sb = perturbed(sa, 4, {})
    sb["lm_head.weight"] = sb["token_embed.weight"].clone() * 1.5  # untied in b
    sa["blocks.0.ffn.gate.bias"] = torch.zeros(2 * CONFIG["ffn_hidden_size"])
    sb["blocks.0.ffn.gate.bias"] = torch.zeros(2 * CONFIG["ffn_hidden_size"])
    sa["blocks.0.ffn.proj.bias"] = torch.zeros(CONFIG["d_model"])
    sa["blocks.1.ffn.proj.bias"] = torch.full((CONFIG["d_model"],), 0.5)
    sb["blocks.1.ffn.proj.bias"] = torch.zeros(CONFIG["d_model"])
    sb["blocks.1.attn_norm.weight"][3] = math.nan
    sb["blocks.1.attn_norm.weight"][7] = math.nan
    sa["final_norm.weight"][0] = math.inf
    sb["final_norm.weight"][5] = -math.inf
    sb["blocks.2.attn_norm.weight"] = torch.full((CONFIG["d_model"],), math.nan)
    q = sb["blocks.0.attn.q_proj.weight"]
    sb["blocks.0.attn.q_proj.weight"] = q.t().contiguous().t()  # same values, column-major strides
    assert not sb["blocks.0.attn.q_proj.weight"].is_contiguous()
    sa["blocks.0.attn.count"] = torch.tensor([3, 5, 7], dtype=torch.int64)
    sb["blocks.0.attn.count"] = torch.tensor([3, 6, 9], dtype=torch.int64)
    sa["blocks.1.attn.mask"] = torch.tensor([True, False, True])
    sb["blocks.1.attn.mask"] = torch.tensor([True, True, False])
    fx.save("special/a.pt", sa)
    fx.save("special/b.pt", sb)
    fx.add("special", "special/a.pt", "special/b.pt", "zeros, NaN/inf, strided view, ints, tie in a only")

    # A slice of a bigger storage (storage offset, shared storage that is no tie).
    big = torch.randn(4, CONFIG["d_model"], CONFIG["d_model"], generator=torch.Generator().manual_seed(5)) * 0.02
    sv = OrderedDict((k, v) for k, v in base.items())
    sv["blocks.0.attn.q_proj.weight"] = big[1]
    sv["blocks.0.attn.k_proj.weight"] = big[2]
    fx.save("views/a.pt", base)
    fx.save("views/b.pt", sv)
    fx.add("views", "views/a.pt", "views/b.pt", "tensors viewing parts of one storage")

    # Legacy (pre-1.6) serialisation against a zip, with a dataclass in the metadata.
    la = checkpoint(base, metadata(100, 2.5, run_info=RunInfo("tiny", 1e-3)), optimizer=False)
    lb = checkpoint(perturbed(base, 6, {}), metadata(300, 2.0, run_info=RunInfo("tiny", 2e-3)), optimizer=False)
    fx.save("legacy/a.pt", la, _use_new_zipfile_serialization=False)
    fx.save("legacy/b.pt", lb)
    fx.add("legacy", "legacy/a.pt", "legacy/b.pt", "torch legacy file against a zip, dataclass metadata")

    # safetensors (untied: the format has no shared storages) against a .pt.
    st = OrderedDict((k, v.clone()) for k, v in base.items())
    write_safetensors(fx.path("safetensors/a.safetensors"), st, {"step": "100", "format": "pt"})
    fx.save("safetensors/b.pt", checkpoint(perturbed(base, 7, {}), metadata(200, 2.0), optimizer=False))
    la = load_safetensors(fx.path("safetensors/a.safetensors"))
    fx.add("safetensors", "safetensors/a.safetensors", "safetensors/b.pt", "safetensors against torch zip",
           loaded_a=la)
    # The reference cannot see safetensors metadata: the C++ side reads it as
    # `__metadata__` (strings). Add those keys by hand: every metadata key of b
    # differs in type or is missing in a.
    exp = fx.pairs[-1]["expected"]
    b_meta = diff_reference.flatten_metadata(diff_reference.load(fx.path("safetensors/b.pt")))
    a_meta = {"step": "100", "format": "pt"}
    exp["metadata"] = []
    for k, v in a_meta.items():
        exp["metadata"].append({"key": k, "a": v, "b": b_meta.get(k), "in_a": True, "in_b": k in b_meta})
    for k, v in b_meta.items():
        if k not in a_meta:
            exp["metadata"].append({"key": k, "a": None, "b": v, "in_a": False, "in_b": True})

    # No state dict at all: tensors in lists, compared by path.
    fx.save("plain/a.pt", {"weights": [base["blocks.0.attn.q_proj.weight"], base["final_norm.weight"]], "note": "x"})
    fx.save("plain/b.pt", {"weights": [base["blocks.0.attn.q_proj.weight"] * 2, base["final_norm.weight"]],
                           "note": "y", "extra": [torch.zeros(2)]})
    fx.add("plain", "plain/a.pt", "plain/b.pt", "no state dict: every tensor by its path")

    # The same checkpoint twice (a copy): nothing changed.
    shutil.copyfile(fx.path("perturbed/a.pt"), fx.path("same/b.pt"))
    fx.add("same", "perturbed/a.pt", "same/b.pt", "identical files")

    with open(os.path.join(root, "expected.json"), "w") as f:
        json.dump({"pairs": diff_reference._json_safe(fx.pairs)}, f, indent=1)
    print("make_diff_fixtures: %d pairs in %s" % (len(fx.pairs), root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
