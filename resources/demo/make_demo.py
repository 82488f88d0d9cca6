#!/usr/bin/python3
"""Write a small, really trained demo experiment directory for CkptScope.

Usage: /usr/bin/python3 resources/demo/make_demo.py OUTDIR
       (Debian's python3-torch; the `python3` on PATH may have no torch)

OUTDIR gets the modern_llm layout of MODEL.md:

  shakespeare-pretrain/shakespeare-pretrain_step{100,200,300}.pt
  shakespeare-pretrain/shakespeare-pretrain_final.pt
  shakespeare-pretrain/train.log        step=10 loss=5.1234 lr=6.000e-05 ...
  shakespeare-pretrain/metrics.jsonl    {"step", "loss", "lr", "tokens", "wall_time"}
  shakespeare-sft/shakespeare-sft_step{50,100}.pt
  shakespeare-sft/shakespeare-sft_final.pt     (starts from the pretrain model)
  baseline/checkpoint_{100,200,300}.pt, best_checkpoint.pt   (a hand-written loop)
  .complete                             written last; its presence skips all work

The model is a tiny decoder (vocab 256 = bytes, d_model 64, 2 layers, 4 heads)
implementing MODEL.md's forward pass (RMSNorm, the reference's RoPE, attention
sinks, SwiGLU, tied head), trained on a few public-domain Shakespeare passages
so that the losses in the checkpoints really fall. Everything is seeded and
single-threaded; wall_time and file modification times are simulated from a
fixed epoch, so two runs write byte-identical files. Takes ~20-30 s on 2 cores.
"""
import collections
import json
import math
import os
import shutil
import sys
import time

import torch
from torch import nn
import torch.nn.functional as F

torch.set_num_threads(1)  # deterministic and fast enough for a model this small
OrderedDict = collections.OrderedDict

# Simulated clock: the demo runs "started" here, one training step takes STEP_SECONDS.
EPOCH = 1718000000.0
STEP_SECONDS = 0.75
GIT_COMMIT = "5d2c1f0e9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d"

# Public-domain text (Shakespeare): sonnets 18 and 116, "All the world's a
# stage" (As You Like It II.7), the opening of Hamlet's soliloquy, "To-morrow,
# and to-morrow" (Macbeth V.5) and "The quality of mercy" (Merchant of Venice IV.1).
TEXT = """\
Shall I compare thee to a summer's day?
Thou art more lovely and more temperate:
Rough winds do shake the darling buds of May,
And summer's lease hath all too short a date;
Sometime too hot the eye of heaven shines,
And often is his gold complexion dimm'd;
And every fair from fair sometime declines,
By chance or nature's changing course untrimm'd;
But thy eternal summer shall not fade,
Nor lose possession of that fair thou ow'st;
Nor shall Death brag thou wander'st in his shade,
When in eternal lines to time thou grow'st:
So long as men can breathe or eyes can see,
So long lives this, and this gives life to thee.

All the world's a stage,
And all the men and women merely players;
They have their exits and their entrances;
And one man in his time plays many parts,
His acts being seven ages. At first the infant,
Mewling and puking in the nurse's arms;
And then the whining school-boy, with his satchel
And shining morning face, creeping like snail
Unwillingly to school. And then the lover,
Sighing like furnace, with a woeful ballad
Made to his mistress' eyebrow. Then a soldier,
Full of strange oaths, and bearded like the pard,
Jealous in honour, sudden and quick in quarrel,
Seeking the bubble reputation
Even in the cannon's mouth.

To be, or not to be, that is the question:
Whether 'tis nobler in the mind to suffer
The slings and arrows of outrageous fortune,
Or to take arms against a sea of troubles
And by opposing end them. To die: to sleep;
No more; and by a sleep to say we end
The heart-ache and the thousand natural shocks
That flesh is heir to, 'tis a consummation
Devoutly to be wish'd.

Let me not to the marriage of true minds
Admit impediments. Love is not love
Which alters when it alteration finds,
Or bends with the remover to remove:
O no! it is an ever-fixed mark
That looks on tempests and is never shaken;
It is the star to every wandering bark,
Whose worth's unknown, although his height be taken.
Love's not Time's fool, though rosy lips and cheeks
Within his bending sickle's compass come;
Love alters not with his brief hours and weeks,
But bears it out even to the edge of doom.
If this be error and upon me proved,
I never writ, nor no man ever loved.

To-morrow, and to-morrow, and to-morrow,
Creeps in this petty pace from day to day,
To the last syllable of recorded time;
And all our yesterdays have lighted fools
The way to dusty death. Out, out, brief candle!
Life's but a walking shadow, a poor player,
That struts and frets his hour upon the stage,
And then is heard no more. It is a tale
Told by an idiot, full of sound and fury,
Signifying nothing.

The quality of mercy is not strain'd,
It droppeth as the gentle rain from heaven
Upon the place beneath: it is twice blest;
It blesseth him that gives and him that takes:
'Tis mightiest in the mightiest: it becomes
The throned monarch better than his crown.
"""

# Instruction pairs for the SFT stage, in a plain prompt/response format.
SFT_PAIRS = [
    ("What shall I compare thee to?", "A summer's day."),
    ("What do rough winds shake?", "The darling buds of May."),
    ("What is all the world?", "A stage, and all the men and women merely players."),
    ("How many ages has a man?", "Seven ages, and he plays many parts."),
    ("What is the question?", "To be, or not to be."),
    ("What does the school-boy carry?", "His satchel, creeping like snail unwillingly to school."),
    ("What shall not fade?", "Thy eternal summer shall not fade."),
    ("What does the soldier seek?", "The bubble reputation, even in the cannon's mouth."),
]

CONFIG = OrderedDict([
    ("vocab_size", 256), ("d_model", 64), ("n_layers", 2), ("n_heads", 4), ("ffn_hidden_size", 172),
    ("max_seq_len", 128), ("rmsnorm_eps", 1e-5), ("dropout", 0.0), ("initializer_range", 0.02),
    ("rope_theta", 10000.0), ("rope_scaling", None), ("use_rope", True), ("use_attention_sinks", True),
    ("num_attention_sinks", 2), ("use_swiglu", True), ("swiglu_multiplier", 2.0), ("use_gqa", False),
    ("gqa_groups", None), ("use_moe", False), ("moe_config", None), ("tie_embeddings", True),
])

SEQ_LEN = 64      # tokens per training window (<= max_seq_len)
BATCH = 8         # windows per step
LOG_EVERY = 10    # train.log / metrics.jsonl cadence, as the reference trainer logs
VAL_EVERY = 6     # hold out every 6th line of TEXT for validation


# ------------------------------------------------------------------ model ---

class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads = c["n_heads"]
        self.head_dim = c["d_model"] // c["n_heads"]
        self.kv_heads = c["gqa_groups"] if c["use_gqa"] else c["n_heads"]
        self.use_rope = c["use_rope"]
        self.rope_scaling = c["rope_scaling"]
        self.sinks = c["num_attention_sinks"] if c["use_attention_sinks"] else 0
        d, kv = c["d_model"], self.kv_heads * self.head_dim
        # Registration order is the state-dict order of MODEL.md.
        if self.sinks:
            self.sink_states = nn.Parameter(torch.zeros(self.sinks, d))
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv, bias=False)
        self.v_proj = nn.Linear(d, kv, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)
        j = torch.arange(0, self.head_dim // 2, dtype=torch.float32)
        inv_freq = 1.0 / (c["rope_theta"] ** (2.0 * j / self.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def rope(self, x, positions):
        # Angles repeat in place [a0, a0, a1, a1, ...] while rotate_half pairs
        # the halves: the reference's mixed convention, reproduced on purpose.
        angles = positions.to(torch.float32)[:, None] * self.inv_freq[None, :]
        if self.rope_scaling is not None:
            angles = angles * self.rope_scaling
        angles = angles.repeat_interleave(2, dim=-1)
        return x * angles.cos() + rotate_half(x) * angles.sin()

    def forward(self, x, bias):
        B, T, D = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        S = self.sinks
        if self.use_rope:
            q = self.rope(q, torch.arange(S, S + T))
            k = self.rope(k, torch.arange(T))
        if S:
            sk = self.k_proj(self.sink_states).view(S, self.kv_heads, self.head_dim).transpose(0, 1)
            sv = self.v_proj(self.sink_states).view(S, self.kv_heads, self.head_dim).transpose(0, 1)
            if self.use_rope:
                sk = self.rope(sk, torch.arange(S))
            k = torch.cat([sk.unsqueeze(0).expand(B, -1, -1, -1), k], dim=2)
            v = torch.cat([sv.unsqueeze(0).expand(B, -1, -1, -1), v], dim=2)
            bias = torch.cat([bias.new_zeros(B, 1, T, S), bias], dim=-1)
        if self.kv_heads != self.n_heads:
            r = self.n_heads // self.kv_heads
            k = k.repeat_interleave(r, dim=1)
            v = v.repeat_interleave(r, dim=1)
        scores = (q @ k.transpose(-1, -2)).float() / math.sqrt(self.head_dim) + bias
        attn = torch.softmax(scores, dim=-1).to(v.dtype)
        out = (attn @ v).transpose(1, 2).reshape(B, T, D)
        return self.out_proj(out)


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate = nn.Linear(d, 2 * hidden)
        self.proj = nn.Linear(hidden, d)

    def forward(self, x):
        a, b = self.gate(x).chunk(2, dim=-1)
        return self.proj(F.silu(a) * b)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = Attention(c)
        self.attn_norm = RMSNorm(c["d_model"], c["rmsnorm_eps"])
        self.ffn_norm = RMSNorm(c["d_model"], c["rmsnorm_eps"])
        self.ffn = SwiGLU(c["d_model"], c["ffn_hidden_size"])

    def forward(self, h, bias):
        h = h + self.attn(self.attn_norm(h), bias)
        return h + self.ffn(self.ffn_norm(h))


class DemoLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.token_embed = nn.Embedding(c["vocab_size"], c["d_model"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["n_layers"]))
        self.final_norm = RMSNorm(c["d_model"], c["rmsnorm_eps"])
        self.lm_head = nn.Linear(c["d_model"], c["vocab_size"], bias=False)
        std = c["initializer_range"]
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, std)
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)
        for blk in self.blocks:
            if blk.attn.sinks:
                nn.init.normal_(blk.attn.sink_states, 0.0, 0.02)
        if c["tie_embeddings"]:
            self.lm_head.weight = self.token_embed.weight  # one storage, two state-dict keys

    def forward(self, input_ids, labels=None):
        B, T = input_ids.shape
        assert T <= self.config["max_seq_len"], "input longer than max_seq_len"
        h = self.token_embed(input_ids)
        low = torch.finfo(h.dtype).min
        bias = torch.full((T, T), low).triu(1).view(1, 1, T, T).expand(B, 1, T, T)
        for blk in self.blocks:
            h = blk(h, bias)
        logits = self.lm_head(self.final_norm(h))
        if labels is None:
            return logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                               ignore_index=-100)
        return logits, loss


def expected_param_names(c):
    names = ["token_embed.weight"]
    for i in range(c["n_layers"]):
        p = f"blocks.{i}."
        if c["use_attention_sinks"]:
            names.append(p + "attn.sink_states")
        names += [p + "attn.q_proj.weight", p + "attn.k_proj.weight", p + "attn.v_proj.weight",
                  p + "attn.out_proj.weight", p + "attn_norm.weight", p + "ffn_norm.weight",
                  p + "ffn.gate.weight", p + "ffn.gate.bias", p + "ffn.proj.weight", p + "ffn.proj.bias"]
    return names + ["final_norm.weight"]


# ------------------------------------------------------------------- data ---

def encode(text):
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


class Windows:
    """Random fixed-length windows over a token stream, from a seeded generator."""

    def __init__(self, tokens, seed):
        self.tokens = tokens
        self.gen = torch.Generator().manual_seed(seed)

    def batch(self, n=BATCH, length=SEQ_LEN):
        starts = torch.randint(0, len(self.tokens) - length, (n,), generator=self.gen)
        return torch.stack([self.tokens[s:s + length] for s in starts.tolist()])


def evaluate(model, tokens, length=SEQ_LEN):
    """Mean loss over non-overlapping windows of a held-out stream."""
    windows = [tokens[s:s + length] for s in range(0, len(tokens) - length + 1, length // 2)]
    with torch.no_grad():
        _, loss = model(torch.stack(windows), torch.stack(windows))
    return float(loss)


# --------------------------------------------------------------- training ---

def save_checkpoint(path, model, optimizer, mtime, **metadata):
    """What modern_llm's save_checkpoint writes: model_state, optimizer,
    metadata, and every metadata key again at the top level."""
    payload = {"model_state": model.state_dict(), "optimizer": optimizer.state_dict(), "metadata": metadata}
    payload.update(metadata)
    tmp = path + ".tmp"
    torch.save(payload, tmp)
    os.replace(tmp, path)
    os.utime(path, (mtime, mtime))


def run_stage(model, *, outdir, run_name, stage, data, val, steps, save_every, lr, schedule, seed,
              file_name, start_time, log_files=False, keep_best=False):
    """Trains `steps` steps and writes checkpoints; returns the end time."""
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    windows = Windows(data, seed)
    log = open(os.path.join(outdir, "train.log"), "w") if log_files else None
    metrics = open(os.path.join(outdir, "metrics.jsonl"), "w") if log_files else None
    best = None
    smoothed = None
    tokens = 0
    for i in range(steps):
        step = i + 1
        lr_now = schedule(i)
        for g in opt.param_groups:
            g["lr"] = lr_now
        x = windows.batch()
        _, loss = model(x, x)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += x.numel()
        loss_value = float(loss)
        smoothed = loss_value if smoothed is None else 0.9 * smoothed + 0.1 * loss_value
        now = start_time + step * STEP_SECONDS
        if step % LOG_EVERY == 0 and log:
            log.write(f"step={step} loss={loss_value:.4f} lr={lr_now:.3e}\n")
            metrics.write(json.dumps({"step": step, "loss": round(loss_value, 6), "lr": lr_now, "tokens": tokens,
                                      "wall_time": round(now, 3)}) + "\n")
        final = step == steps
        if step % save_every == 0 or final:
            val_loss = evaluate(model, val)
            meta = dict(step=step, loss=round(smoothed, 4), config=dict(CONFIG), run_name=run_name,
                        train_loss=round(smoothed, 4), val_loss=round(val_loss, 4), learning_rate=lr_now,
                        stage=stage, final=False, git_commit=GIT_COMMIT)
            if step % save_every == 0:
                save_checkpoint(os.path.join(outdir, file_name(step)), model, opt, now, **meta)
            if keep_best and (best is None or val_loss < best):
                best = val_loss
                save_checkpoint(os.path.join(outdir, "best_checkpoint.pt"), model, opt, now, **meta)
            if final and not keep_best:
                meta["final"] = True
                save_checkpoint(os.path.join(outdir, f"{run_name}_final.pt"), model, opt, now, **meta)
            print(f"  {run_name}: step {step} loss {smoothed:.4f} val {val_loss:.4f}", flush=True)
    if log:
        log.close()
        metrics.close()
    return start_time + steps * STEP_SECONDS


def warmup_constant(base, warmup):
    """Pretraining LR: linear warmup (step+1)/warmup_steps, then constant."""
    return lambda i: base * min(1.0, (i + 1) / warmup)


def cosine(base, max_steps):
    """SFT LR: cosine annealing over max_steps."""
    return lambda i: base * 0.5 * (1.0 + math.cos(math.pi * i / max_steps))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_demo.py OUTDIR")
    out = sys.argv[1]
    if os.path.exists(os.path.join(out, ".complete")):
        print(f"demo already complete in {out}")
        return
    t0 = time.time()
    # A half-written directory from an interrupted run is rebuilt from scratch.
    for sub in ("shakespeare-pretrain", "shakespeare-sft", "baseline"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    os.makedirs(out, exist_ok=True)

    # Every VAL_EVERY-th line is held out: the validation text is unseen lines
    # of the same passages, so val_loss measures generalisation, not recall.
    lines = TEXT.splitlines(keepends=True)
    train = encode("".join(l for i, l in enumerate(lines) if i % VAL_EVERY != VAL_EVERY - 1))
    val = encode("".join(l for i, l in enumerate(lines) if i % VAL_EVERY == VAL_EVERY - 1))

    torch.manual_seed(1234)
    model = DemoLM(CONFIG)
    assert [n for n, _ in model.named_parameters()] == expected_param_names(CONFIG)
    assert list(model.state_dict()) == expected_param_names(CONFIG) + ["lm_head.weight"]

    end = run_stage(model, outdir=os.path.join(out, "shakespeare-pretrain"), run_name="shakespeare-pretrain",
                    stage="pretrain", data=train, val=val, steps=300, save_every=100, lr=2e-3,
                    schedule=warmup_constant(2e-3, 30), seed=1, start_time=EPOCH, log_files=True,
                    file_name=lambda s: f"shakespeare-pretrain_step{s}.pt")

    # SFT validates on its own prompts (a demo has no held-out instructions).
    sft_text = "".join(f"### Question: {q}\n### Answer: {a}\n\n" for q, a in SFT_PAIRS) * 2
    sft = encode(sft_text)
    run_stage(model, outdir=os.path.join(out, "shakespeare-sft"), run_name="shakespeare-sft", stage="sft",
              data=sft, val=sft, steps=100, save_every=50, lr=1e-3,
              schedule=cosine(1e-3, 100), seed=2, start_time=end + 600.0,
              file_name=lambda s: f"shakespeare-sft_step{s}.pt")

    # A hand-written loop from the library's documentation: checkpoint_<N>.pt and best_checkpoint.pt.
    torch.manual_seed(99)
    baseline = DemoLM(CONFIG)
    run_stage(baseline, outdir=os.path.join(out, "baseline"), run_name="baseline", stage="pretrain", data=train,
              val=val, steps=300, save_every=100, lr=1e-3, schedule=warmup_constant(1e-3, 20), seed=3,
              start_time=EPOCH - 86400.0, keep_best=True, file_name=lambda s: f"checkpoint_{s}.pt")

    with open(os.path.join(out, ".complete"), "w") as f:
        f.write("demo written by make_demo.py\n")
    print(f"demo written to {out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
