#!/usr/bin/python3
"""Write a checkpoint and a changed copy for the comparison across machines
(tests/core/tst_cross_diff, ckpt/remote/cross_diff.h).

    /usr/bin/python3 make_cross_diff.py OUTDIR

OUTDIR/base.pt: a modern_llm-shaped checkpoint (model_state, tied head,
step and config); OUTDIR/changed.pt: the same with some tensors changed
(a fine-tune that touched only some of them), one bfloat16 tensor among
them, and a tensor added. OUTDIR/cross.json says which compared tensors
are byte for byte equal and which differ, and how many bytes the changed
ones hold (what a comparison must fetch from a host, and no more):
{"identical": [name], "changed": [name], "changed_bytes": N}
(a tied entry counts once: its storage is compared once).
OUTDIR/sharded_base/ and OUTDIR/sharded_changed/: the same two states as
Hugging Face sharded checkpoints (an index and two torch.save shards each).
"""
import collections
import json
import os
import sys

import torch

torch.manual_seed(27)
OrderedDict = collections.OrderedDict


def hf_shards(folder, sd, shards=2):
    """pytorch_model-0000N-of-0000M.bin files of consecutive keys and
    pytorch_model.bin.index.json naming which holds each."""
    os.makedirs(folder, exist_ok=True)
    names = list(sd)
    per = (len(names) + shards - 1) // shards
    weight_map = OrderedDict()
    total = 0
    for i in range(shards):
        group = names[i * per:(i + 1) * per]
        file = f"pytorch_model-{i + 1:05d}-of-{shards:05d}.bin"
        torch.save(OrderedDict((k, sd[k].clone()) for k in group), os.path.join(folder, file))
        for k in group:
            weight_map[k] = file
            total += sd[k].numel() * sd[k].element_size()
    with open(os.path.join(folder, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    d, ffn, vocab = 64, 128, 256
    sd = OrderedDict()
    embed = torch.randn(vocab, d) * 0.02
    sd["token_embed.weight"] = embed
    for i in range(3):
        b = f"blocks.{i}."
        for p in ("q", "k", "v", "out"):
            sd[b + f"attn.{p}_proj.weight"] = torch.randn(d, d) * 0.02
        sd[b + "attn_norm.weight"] = torch.ones(d)
        sd[b + "ffn_norm.weight"] = torch.ones(d)
        sd[b + "ffn.gate.weight"] = torch.randn(2 * ffn, d) * 0.02
        sd[b + "ffn.proj.weight"] = (torch.randn(d, ffn) * 0.02).to(torch.bfloat16)
    sd["final_norm.weight"] = torch.ones(d)
    sd["lm_head.weight"] = embed  # tied
    base = {"model_state": sd, "step": 100, "stage": "pretrain",
            "config": {"d_model": d, "n_layers": 3, "vocab_size": vocab}}
    torch.save(base, os.path.join(out, "base.pt"))

    # A fine-tune of block 2 and the final norm only.
    touched = {"blocks.2.attn.q_proj.weight", "blocks.2.attn.v_proj.weight",
               "blocks.2.ffn.proj.weight", "final_norm.weight"}
    changed = OrderedDict()
    for name, t in sd.items():
        if name == "lm_head.weight":
            changed[name] = changed["token_embed.weight"]
        elif name in touched:
            changed[name] = (t.float() + torch.randn(t.shape) * 1e-3).to(t.dtype)
        else:
            changed[name] = t.clone()
    changed["blocks.2.attn.sink_states"] = torch.randn(2, d) * 0.02  # added
    torch.save({"model_state": changed, "step": 200, "stage": "sft",
                "config": {"d_model": d, "n_layers": 3, "vocab_size": vocab}},
               os.path.join(out, "changed.pt"))

    # The same two states as a Hugging Face sharded checkpoint each (the
    # index and torch.save shards, as transformers' save_pretrained writes
    # them with safe_serialization=False): a checkpoint of many files on a
    # host compared with one here. Every tensor its own storage (a tie
    # across shards does not survive sharding).
    hf_shards(os.path.join(out, "sharded_base"), sd)
    hf_shards(os.path.join(out, "sharded_changed"), changed)

    identical = [n for n in sd if n not in touched and n != "lm_head.weight"]
    changed_names = [n for n in sd if n in touched]
    changed_bytes = sum(sd[n].numel() * sd[n].element_size() for n in changed_names)
    with open(os.path.join(out, "cross.json"), "w") as f:
        json.dump({"identical": identical, "changed": changed_names,
                   "changed_bytes": changed_bytes}, f, indent=1)


if __name__ == "__main__":
    main()
