#!/usr/bin/python3
"""Checkpoints between CkptScope's trainer and Python (Debian's python3-torch).

  train_interop.py check CKPT OUT.json
      torch.load the checkpoint we wrote; check its layout against MODEL.md
      (modern_llm_ref.state_dict_layout), the tied head, the metadata; load
      model_state strictly into the reference model's weights; load
      `optimizer` into torch.optim.AdamW over those parameters and take a
      step. Writes what it found to OUT.json; exits 1 on any mismatch.
  train_interop.py score CKPT DATA T OUT.json
      the reference model's mean loss over consecutive windows of T byte
      tokens of DATA (the last partial window dropped).
  train_interop.py write|write-noopt|write-misfit CKPT CONFIG.json DATA STEPS
      a plain Python training loop (reference model, AdamW) that saves its
      checkpoint in the library's layout: model_state, optimizer, metadata,
      metadata keys repeated at the top level (write-noopt: no optimizer;
      write-misfit: a state dict that does not fit its config).
"""
import collections
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modern_llm_ref as ref  # noqa: E402

torch.set_num_threads(1)


def fail(msg):
    print("train_interop: " + msg, file=sys.stderr)
    sys.exit(1)


def param_names(config):
    """MODEL.md's de-duplicated parameter order (the optimizer's)."""
    names = [name for name, _ in ref.state_dict_layout(config)]
    if ref.full_config(config)["tie_embeddings"]:
        names = [n for n in names if n != "lm_head.weight"]
    return names


def weights_of(sd, config):
    w = {k: v.float() for k, v in sd.items()}
    if ref.full_config(config)["tie_embeddings"]:
        w["lm_head.weight"] = w["token_embed.weight"]
    return w


def byte_tokens(path):
    with open(path, "rb") as f:
        return torch.tensor(list(f.read()), dtype=torch.long)


def check(path, out):
    ck = torch.load(path, map_location="cpu")
    found = {}
    for key in ("model_state", "optimizer", "metadata"):
        if key not in ck:
            fail(f"{path}: no '{key}'")
    sd, meta = ck["model_state"], ck["metadata"]
    if type(sd) is not collections.OrderedDict:
        fail(f"model_state is a {type(sd).__name__}, not an OrderedDict")
    config = meta["config"]
    layout = ref.state_dict_layout(config)
    if [k for k in sd] != [n for n, _ in layout]:
        fail(f"keys {list(sd)} differ from MODEL.md's {[n for n, _ in layout]}")
    for name, shape in layout:
        if list(sd[name].shape) != list(shape):
            fail(f"{name}: shape {list(sd[name].shape)}, MODEL.md says {list(shape)}")
    if ref.full_config(config)["tie_embeddings"]:
        if sd["lm_head.weight"].data_ptr() != sd["token_embed.weight"].data_ptr():
            fail("lm_head.weight does not share token_embed.weight's storage")
    for key, value in meta.items():
        if key not in ck or ck[key] != value:
            fail(f"metadata key {key} is not repeated at the top level")
    # Strict load into the reference model's parameters, then an AdamW step.
    names = param_names(config)
    params = [torch.nn.Parameter(sd[n].clone().float()) for n in names]
    opt = torch.optim.AdamW(params)
    opt.load_state_dict(ck["optimizer"])
    w = dict(zip(names, params))
    if ref.full_config(config)["tie_embeddings"]:
        w["lm_head.weight"] = w["token_embed.weight"]
    ids = torch.arange(min(16, config["max_seq_len"])).remainder(config["vocab_size"])[None, :]
    loss = ref.loss(ref.forward(w, config, ids), ids)
    loss.backward()
    before = params[0].detach().clone()
    opt.step()
    if torch.equal(before, params[0].detach()):
        fail("the optimizer step changed nothing")
    found["optimizer_state_entries"] = len(ck["optimizer"]["state"])
    found["param_count"] = len(names)
    found["step"] = meta["step"]
    for key in ("run_name", "parent", "parent_step"):  # lineage, as Python sees it
        found[key] = meta.get(key)
    found["loss_after_load"] = float(loss)
    try:
        torch.load(path, map_location="cpu", weights_only=True)
        found["weights_only"] = True
    except Exception as e:  # torch 1.13's restricted unpickler rejects floats
        found["weights_only"] = False
        found["weights_only_error"] = str(e)[:200]
    with open(out, "w") as f:
        json.dump(found, f)


def score(path, data, T, out):
    ck = torch.load(path, map_location="cpu")
    config = ck["metadata"]["config"] if "metadata" in ck else ck["config"]
    w = weights_of(ck["model_state"], config)
    tokens = byte_tokens(data)
    n = len(tokens) // T
    total = 0.0
    with torch.no_grad():
        for i in range(n):
            ids = tokens[i * T:(i + 1) * T][None, :]
            total += float(ref.loss(ref.forward(w, config, ids), ids))
    with open(out, "w") as f:
        json.dump({"loss": total / n, "windows": n, "tokens": n * T}, f)


def write(path, config_path, data, steps, misfit=False, optimizer=True):
    with open(config_path) as f:
        config = json.load(f)
    torch.manual_seed(0)
    layout = ref.state_dict_layout(config)
    names = param_names(config)
    sd = collections.OrderedDict()
    for name, shape in layout:
        if name.endswith("norm.weight"):
            sd[name] = torch.ones(shape)
        elif name.endswith(".bias"):
            sd[name] = torch.zeros(shape)
        else:
            sd[name] = torch.randn(shape) * 0.02
    params = [torch.nn.Parameter(sd[n]) for n in names]
    w = dict(zip(names, params))
    if ref.full_config(config)["tie_embeddings"]:
        w["lm_head.weight"] = w["token_embed.weight"]
    opt = torch.optim.AdamW(params, lr=1e-3)
    tokens = byte_tokens(data)
    T = min(32, config["max_seq_len"])
    g = torch.Generator().manual_seed(1)
    loss = None
    for _ in range(steps):
        start = int(torch.randint(0, len(tokens) - T, (1,), generator=g))
        ids = tokens[start:start + T][None, :]
        opt.zero_grad()
        loss = ref.loss(ref.forward(w, config, ids), ids)
        loss.backward()
        opt.step()
    state = collections.OrderedDict((n, w[n].detach()) for n, _ in layout)
    if misfit:  # a state dict that does not fit its own config
        del state["final_norm.weight"]
        state["extra.weight"] = torch.zeros(3)
    metadata = {"step": steps, "loss": float(loss), "config": config, "run_name": "pyrun",
                "learning_rate": 1e-3, "stage": "pretrain"}
    saved = {"model_state": state, "metadata": metadata, **metadata}
    if optimizer:
        saved = {"model_state": state, "optimizer": opt.state_dict(), "metadata": metadata, **metadata}
    torch.save(saved, path)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "check":
        check(sys.argv[2], sys.argv[3])
    elif mode == "score":
        score(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif mode in ("write", "write-misfit", "write-noopt"):
        write(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), misfit=mode == "write-misfit",
              optimizer=mode != "write-noopt")
    else:
        fail("unknown mode " + mode)
