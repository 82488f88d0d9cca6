#!/usr/bin/python3
"""Join a Megatron-LM save's tensor-parallel slices with PyTorch, as
Megatron's checkpoint converter does, and print the whole tensors.

    /usr/bin/python3 megatron_tp_join.py ITER_DIR [--optimizer]

ITER_DIR is an iter_<N>/ folder of the torch format (mp_rank_<tp>[_<pp>]/
model_optim_rng.pt). Each rank file is read with torch.load; per pipeline
stage, in order, each tensor of the first tensor rank's model is joined
across the tensor ranks by tools/checkpoint/loader_base.py's rules
(send_llm_over_queue): QKV weight and bias, fc1 weight and bias, the word
embeddings and the output layer torch.cat along dim 0 (under args.swiglu
fc1 as torch.cat of the ranks' first halves, then of their second halves),
proj and fc2 weights along dim 1, everything else (norms, position
embeddings, the proj and fc2 biases) the first rank's. A stage's layers
are numbered after the previous stages' (total_layer_num).

Prints JSON: {name: {"shape": [...], "dtype": "torch.float32",
"hex": the tensor's bytes}}.

With --optimizer, each rank's optimizer state joined by its parameter's
rule instead: {name: {"exp_avg" | "exp_avg_sq" | "fp32_param": {...}}}.
A rank's state is named as Megatron numbers it (megatron/core/optimizer
get_param_groups): the model's parameters in order, those named *.bias or
1-dimensional in the wd_mult 0 group, the others in the wd_mult 1 group;
torch's Optimizer.state_dict numbers the groups' parameters in group
order (the ids in each group's "params"); Float16OptimizerWithFloat16Params
keeps the fp32 masters as fp32_from_fp16_params[group][position].
"""
import glob
import json
import os
import re
import sys

import torch

DIM0 = ("self_attention.linear_qkv.weight", "self_attention.linear_qkv.bias")
GATED = ("mlp.linear_fc1.weight", "mlp.linear_fc1.bias")
DIM1 = ("self_attention.linear_proj.weight", "mlp.linear_fc2.weight")
WHOLE_DIM0 = ("embedding.word_embeddings.weight", "output_layer.weight")


def join(name, leaf, slices, swiglu):
    if leaf in GATED and swiglu:
        halves = [torch.chunk(s, 2, dim=0) for s in slices]
        return torch.cat([torch.cat([h[0] for h in halves], dim=0),
                          torch.cat([h[1] for h in halves], dim=0)], dim=0)
    if leaf in DIM0 or leaf in GATED or name in WHOLE_DIM0:
        return torch.cat(slices, dim=0)
    if leaf in DIM1:
        return torch.cat(slices, dim=1)
    return slices[0]


def as_json(t):
    return {"shape": list(t.shape), "dtype": str(t.dtype), "hex": t.contiguous().numpy().tobytes().hex()}


def rank_moments(sd):
    """{local parameter name: {moment: tensor}} of one rank file."""
    model = sd["model"]
    opt = sd["optimizer"]
    inner = opt["optimizer"]
    out = {}
    for g, group in enumerate(inner["param_groups"]):
        names = [n for n, p in model.items()
                 if (n.endswith(".bias") or p.dim() == 1) == (group["wd_mult"] == 0)]
        assert len(names) == len(group["params"]), (g, names, group["params"])
        for j, (n, i) in enumerate(zip(names, group["params"])):
            out[n] = {"exp_avg": inner["state"][i]["exp_avg"], "exp_avg_sq": inner["state"][i]["exp_avg_sq"],
                      "fp32_param": opt["fp32_from_fp16_params"][g][j]}
    return out


def main(argv):
    optimizer = "--optimizer" in argv
    argv = [a for a in argv if a != "--optimizer"]
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ranks = {}
    for path in glob.glob(os.path.join(argv[1], "mp_rank_*", "model_optim_rng.pt")):
        m = re.fullmatch(r"mp_rank_(\d{2})(?:_(\d{3}))?", os.path.basename(os.path.dirname(path)))
        ranks[(int(m.group(2) or 0), int(m.group(1)))] = torch.load(path, map_location="cpu")
    tp = 1 + max(t for _, t in ranks)
    pp = 1 + max(p for p, _ in ranks)
    swiglu = bool(getattr(ranks[(0, 0)]["args"], "swiglu", False))
    out = {}
    offset = 0
    for stage in range(pp):
        models = [ranks[(stage, r)]["model"] for r in range(tp)]
        named = [rank_moments(ranks[(stage, r)]) for r in range(tp)] if optimizer else None
        highest = -1
        for name in models[0]:
            slices = [m[name] for m in models]
            local = name
            m = re.match(r"decoder\.layers\.(\d+)\.(.*)", name)
            leaf = m.group(2) if m else name
            if m:
                highest = max(highest, int(m.group(1)))
                name = f"decoder.layers.{int(m.group(1)) + offset}.{leaf}"
            if not optimizer:
                out[name] = as_json(join(name, leaf, slices, swiglu))
            else:
                out[name] = {m: as_json(join(name, leaf, [n[local][m] for n in named], swiglu))
                             for m in ("exp_avg", "exp_avg_sq", "fp32_param")}
        offset += highest + 1
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
