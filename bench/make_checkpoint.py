#!/usr/bin/python3
"""Writes a realistic modern_llm checkpoint for the benchmarks (needs torch).

    /usr/bin/python3 bench/make_checkpoint.py OUT.pt [--force]

GPT-2-small sized decoder in the layout of /work/shared/MODEL.md (vocab 50257,
d_model 768, 12 layers, 12 heads, ffn 3072, 2 attention sinks, tied
embeddings), an AdamW state after one step (exp_avg / exp_avg_sq for every
parameter) and the metadata save_checkpoint writes: about 1.8 GB of float32.

A stamp file OUT.pt.stamp.json records the config and the file size; when it
matches, the file is not written again. The checkpoint is written into a
scratch folder next to OUT.pt and renamed into place, so an interrupted run
never leaves a half-written OUT.pt behind (and torch's zip root folder stays
the real file stem).
"""
import json
import os
import shutil
import sys
import time

# Bump when the layout or contents change: old caches are then rewritten.
GENERATOR_VERSION = 1

CONFIG = {
    "vocab_size": 50257,
    "d_model": 768,
    "n_layers": 12,
    "n_heads": 12,
    "ffn_hidden_size": 3072,
    "max_seq_len": 1024,
    "rmsnorm_eps": 1e-5,
    "dropout": 0.0,
    "initializer_range": 0.02,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "use_rope": True,
    "use_attention_sinks": True,
    "num_attention_sinks": 2,
    "use_swiglu": True,
    "swiglu_multiplier": 2.0,
    "use_gqa": False,
    "gqa_groups": None,
    "use_moe": False,
    "moe_config": None,
    "tie_embeddings": True,
}

STEP = 12000


def stamp_for(config):
    return {"generator_version": GENERATOR_VERSION, "config": config, "step": STEP}


def build(out_path):
    import torch
    from torch import nn

    torch.manual_seed(1234)
    cfg = CONFIG
    d, H, S = cfg["d_model"], cfg["ffn_hidden_size"], cfg["num_attention_sinks"]
    kv = d  # no GQA: kv_heads * head_dim == d_model
    meta = torch.device("meta")

    # Attribute names and registration order exactly as MODEL.md lists them.
    # Modules are built on the meta device and materialised once, so no
    # default initialisation runs just to be overwritten.
    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(d, device=meta))

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.sink_states = nn.Parameter(torch.empty(S, d, device=meta))
            self.q_proj = nn.Linear(d, d, bias=False, device=meta)
            self.k_proj = nn.Linear(d, kv, bias=False, device=meta)
            self.v_proj = nn.Linear(d, kv, bias=False, device=meta)
            self.out_proj = nn.Linear(d, d, bias=False, device=meta)

    class SwiGLU(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(d, 2 * H, device=meta)
            self.proj = nn.Linear(H, d, device=meta)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention()
            self.attn_norm = RMSNorm()
            self.ffn_norm = RMSNorm()
            self.ffn = SwiGLU()

    class ModernDecoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.token_embed = nn.Embedding(cfg["vocab_size"], d, device=meta)
            self.blocks = nn.ModuleList([Block() for _ in range(cfg["n_layers"])])
            self.final_norm = RMSNorm()
            self.lm_head = nn.Linear(d, cfg["vocab_size"], bias=False, device=meta)

    t0 = time.perf_counter()
    model = ModernDecoder().to_empty(device="cpu")
    model.lm_head.weight = model.token_embed.weight  # tied: one storage, one parameter
    std = cfg["initializer_range"]
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:  # Linear / embedding weights and sink_states: N(0, 0.02)
                p.normal_(0.0, std)

    params = list(model.parameters())  # de-duplicated: lm_head.weight is not here
    opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    # Small random gradients, all viewing one buffer: filling and faulting in
    # a private 600 MB of gradients would double the build time for nothing.
    noise = torch.empty(max(p.numel() for p in params)).normal_(0.0, 1e-3)
    for p in params:
        p.grad = noise[: p.numel()].view_as(p)
    opt.step()
    for p in params:
        p.grad = None
    t1 = time.perf_counter()

    metadata = {
        "step": STEP,
        "loss": 2.8731,
        "config": dict(cfg),
        "run_name": "gpt2s-sinks",
        "train_loss": 2.8731,
        "val_loss": 2.9412,
        "learning_rate": 3e-4,
        "stage": "pretrain",
        "final": False,
        "git_commit": "3f9c2d1",
    }
    checkpoint = {"model_state": model.state_dict(), "optimizer": opt.state_dict(), "metadata": metadata}
    checkpoint.update(metadata)  # save_checkpoint repeats every metadata key at the top level

    out_dir = os.path.dirname(os.path.abspath(out_path))
    scratch = os.path.join(out_dir, ".partial-%d" % os.getpid())
    os.makedirs(scratch, exist_ok=True)
    tmp = os.path.join(scratch, os.path.basename(out_path))
    try:
        torch.save(checkpoint, tmp)  # writes storages straight from their memory, no copies
        os.replace(tmp, out_path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t2 = time.perf_counter()
    n_params = sum(p.numel() for p in params)
    print("make_checkpoint: %s: %d parameters (%d state_dict keys, %d optimizer states), %.2f GB; "
          "built in %.1f s, saved in %.1f s" % (out_path, n_params, len(checkpoint["model_state"]),
                                                len(checkpoint["optimizer"]["state"]),
                                                os.path.getsize(out_path) / 1e9, t1 - t0, t2 - t1))


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    force = "--force" in argv
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = args[0]
    stamp_path = out + ".stamp.json"
    want = stamp_for(CONFIG)
    if not force and os.path.exists(out) and os.path.exists(stamp_path):
        try:
            with open(stamp_path) as f:
                have = json.load(f)
            if have.get("stamp") == want and have.get("size") == os.path.getsize(out):
                print("make_checkpoint: %s is up to date (%.2f GB), not rewritten" % (out, have["size"] / 1e9))
                return 0
        except (OSError, ValueError):
            pass
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    build(out)
    with open(stamp_path, "w") as f:
        json.dump({"stamp": want, "size": os.path.getsize(out)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
