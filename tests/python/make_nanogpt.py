"""A nanoGPT run as karpathy/nanoGPT's train.py leaves it, and what an
independent reader of it finds (expected.json).

OUTDIR/out/ckpt.pt: torch.save of train.py's checkpoint dict, exactly its
keys: 'model' (the compiled model's state dict: every key under
'_orig_mod.'), 'optimizer' (AdamW's state_dict after a step), 'model_args',
'iter_num', 'best_val_loss' (losses['val'], a 0-dim tensor), 'config'.
OUTDIR/out/train.log: the console of `python train.py > out/train.log`,
its lines printed with train.py's own format strings (mfu -100.00% until
local_iter_num reaches 5, as running_mfu starts at -1.0), between the
messages train.py prints around them.

expected.json: the metric points a regex reader of train.log finds, the
checkpoint's iter_num and best_val_loss read back with torch.load, and the
model's parameter names without the prefix.
"""
import json
import math
import os
import re
import sys

import torch


def tiny_gpt(n_layer=2, n_embd=8, vocab=16, block=8):
    sd = {}
    g = torch.Generator().manual_seed(7)
    def t(*shape):
        return torch.randn(*shape, generator=g)
    sd["transformer.wte.weight"] = t(vocab, n_embd)
    sd["transformer.wpe.weight"] = t(block, n_embd)
    for i in range(n_layer):
        p = f"transformer.h.{i}."
        sd[p + "ln_1.weight"] = torch.ones(n_embd)
        sd[p + "attn.c_attn.weight"] = t(3 * n_embd, n_embd)
        sd[p + "attn.c_proj.weight"] = t(n_embd, n_embd)
        sd[p + "ln_2.weight"] = torch.ones(n_embd)
        sd[p + "mlp.c_fc.weight"] = t(4 * n_embd, n_embd)
        sd[p + "mlp.c_proj.weight"] = t(n_embd, 4 * n_embd)
    sd["transformer.ln_f.weight"] = torch.ones(n_embd)
    sd["lm_head.weight"] = sd["transformer.wte.weight"]  # weight tying
    return sd


def write_run(out):
    os.makedirs(out, exist_ok=True)
    plain = tiny_gpt()
    params = [torch.nn.Parameter(v.clone()) for v in plain.values()]
    opt = torch.optim.AdamW(params, lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    sum(p.sum() for p in params).backward()
    opt.step()
    model_args = dict(n_layer=2, n_head=2, n_embd=8, block_size=8, bias=False,
                      vocab_size=16, dropout=0.0)
    config = dict(out_dir="out", eval_interval=4, log_interval=1, eval_iters=2,
                  always_save_checkpoint=True, init_from="scratch", dataset="shakespeare_char",
                  gradient_accumulation_steps=1, batch_size=4, block_size=8,
                  n_layer=2, n_head=2, n_embd=8, dropout=0.0, bias=False,
                  learning_rate=6e-4, max_iters=12, weight_decay=0.1, beta1=0.9,
                  beta2=0.95, grad_clip=1.0, decay_lr=True, warmup_iters=2,
                  lr_decay_iters=12, min_lr=6e-5, backend="nccl", device="cpu",
                  dtype="float32", compile=True)

    lines = ["Overriding config with config/train_shakespeare_char.py:",
             "tokens per iteration will be: 32",
             "found vocab_size = 16 (inside data/shakespeare_char/meta.pkl)",
             "Initializing a new model from scratch",
             "number of parameters: 0.00M",
             "num decayed parameter tensors: 10, with 1,664 parameters",
             "num non-decayed parameter tensors: 5, with 40 parameters",
             "using fused AdamW: False",
             "compiling the model... (takes a ~minute)"]
    best_val_loss = 1e9
    running_mfu = -1.0
    local_iter_num = 0
    iter_num = 0
    saved = None
    while True:
        if iter_num % config["eval_interval"] == 0:
            losses = {"train": torch.tensor(2.8 - 0.1 * iter_num + 0.00001234),
                      "val": torch.tensor(2.9 - 0.09 * iter_num - 0.00004321)}
            print_ = f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}"
            lines.append(print_)
            if losses["val"] < best_val_loss or config["always_save_checkpoint"]:
                best_val_loss = losses["val"]
                if iter_num > 0:
                    lines.append(f"saving checkpoint to {config['out_dir']}")
                    saved = (iter_num, best_val_loss)
        if iter_num == config["max_iters"]:
            break
        lossf = 2.75 - 0.095 * iter_num + 0.0000678 * (iter_num % 3)
        dt = 0.0123 + 0.001 * iter_num
        if local_iter_num >= 5:
            mfu = 0.0123 + 0.0004 * iter_num
            running_mfu = mfu if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * mfu
        lines.append(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%")
        iter_num += 1
        local_iter_num += 1

    iter_num, best_val_loss = saved
    checkpoint = {
        "model": {"_orig_mod." + k: v for k, v in plain.items()},
        "optimizer": opt.state_dict(),
        "model_args": model_args,
        "iter_num": iter_num,
        "best_val_loss": best_val_loss,
        "config": config,
    }
    torch.save(checkpoint, os.path.join(out, "ckpt.pt"))
    with open(os.path.join(out, "train.log"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- the independent reader: regular expressions for train.py's two lines.
ITER = re.compile(r"^iter (\d+): loss ([-+0-9.eEnaif]+), time [0-9.]+ms, mfu (-?[0-9.]+)%")
STEP = re.compile(r"^step (\d+): train loss ([-+0-9.eEnaif]+), val loss ([-+0-9.eEnaif]+)")


def read_log(path):
    series = {}
    with open(path) as f:
        for line in f:
            m = ITER.match(line)
            if m:
                step = int(m.group(1))
                series.setdefault("loss", []).append([step, float(m.group(2))])
                mfu = float(m.group(3))
                if mfu >= 0:  # -100.00%: running_mfu's -1.0, no estimate yet
                    series.setdefault("mfu", []).append([step, mfu])
                continue
            m = STEP.match(line)
            if m:
                step = int(m.group(1))
                series.setdefault("train_loss", []).append([step, float(m.group(2))])
                series.setdefault("val_loss", []).append([step, float(m.group(3))])
    return series


def main(outdir):
    out = os.path.join(outdir, "out")
    write_run(out)
    ck = torch.load(os.path.join(out, "ckpt.pt"))
    names = [k[len("_orig_mod."):] for k in ck["model"].keys()]
    expected = {
        "run": "out",
        "iter_num": ck["iter_num"],
        "best_val_loss": float(ck["best_val_loss"]),
        "names": names,
        # train.py's config and model_args as a run's hyperparameters
        # (out_dir names the run: not one).
        "hparams": {k: v for k, v in {**ck["model_args"], **ck["config"]}.items()
                    if k != "out_dir"},
        "series": read_log(os.path.join(out, "train.log")),
    }
    assert all(math.isfinite(p[1]) for s in expected["series"].values() for p in s)
    with open(os.path.join(outdir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
