#!/usr/bin/python3
"""Training-speed benchmark: `ckptscope-cli resume` against a Python/PyTorch
loop over the same model math, on the same LibTorch, in one run.

Run it through bench/run_train_bench.sh (it builds, sets the thread
variables and prints the machine). Needs /usr/bin/python3 (Debian's
python3-torch: the same LibTorch build as libtorch-dev).

    train_bench.py bench --cli CKPTSCOPE_CLI --work DIR [--device cpu|cuda] [--threads K]
    train_bench.py loop  --run DIR      (one Python training run; used by `bench`)
    train_bench.py selftest             (the window generator against tst_dataset.cpp)

How both runs do the same work from the same start
---------------------------------------------------
`bench` initialises the weights in Python (MODEL.md's init, torch.manual_seed
(INIT_SEED), registration order) and saves them as a checkpoint in the Python
library's layout: {"model_state": OrderedDict (lm_head.weight over the same
storage as token_embed.weight), "metadata": {step 0, loss, config, run_name,
learning_rate}, the metadata keys again at the top level}, no optimizer.
Ours trains from it with `ckptscope-cli resume INIT.pt --max-steps N --data
CORPUS --device D`. Trainer::resume, for a checkpoint without
`training_config` metadata, keeps TrainingConfig's defaults and takes
learning_rate from the metadata, seq_len = min(max_seq_len, 256):
batch 8 = micro-batch 8 (no accumulation), constant LR after 0 warm-up steps,
AdamW betas (0.9, 0.999), eps 1e-8, weight decay 0.01, clipping at 1.0,
sampler seed 1337 starting at window 0 (no sampler position in the file),
eval every 100 steps, save every 500 steps, a final <run>_final.pt. The
Python loop uses exactly those (see implied_training()). When the requested
settings differ from them (other batch or sequence length, >= 100 steps, LR
warm-up, another sampler seed, the GPU config), the checkpoint carries a
`training_config` metadata dict instead, which resume applies verbatim, with
eval_every 0 and save_every 0; the report says which route was taken.

The Python loop imports tests/python/modern_llm_ref.py (the functional
reference: weights dict, plain torch ops) for forward and loss, and uses
torch.optim.AdamW, torch.nn.utils.clip_grad_norm_, the same LR schedule as
trainer.cpp's learningRateAt, the same gradient accumulation (loss / accum,
backward per micro-batch, step loss = mean of micro losses), and windows from
a reimplementation of WindowSampler (splitmix64 + Lemire multiply-shift over
the train split; the validation tail is floor(tokens * val_fraction)).

Environment (defaults: the CPU config; --device cuda switches to the GPU one)
  D_MODEL 256|768  N_LAYERS 4|12  N_HEADS 4|12  FFN 688|2048  SEQ 256|1024
  BATCH 8|16  MICRO (= BATCH)  STEPS 32|30  SKIP 2|5 (first steps not timed)
  LR 3e-4  LR_WARMUP 0  SAMPLER_SEED 1337  INIT_SEED 0  REPEATS 2|1
  CORPUS (a UTF-8 text file; default: a generated 4 MB English-like text)
  PEAK_TFLOPS (GPU only: the chip's dense bf16 peak, for MFU)
"""

import argparse
import collections
import hashlib
import json
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


# ---- the window generator (dataset.h) -----------------------------------------

def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def splitmix64_at(seed, index):
    return mix64((seed + (index + 1) * GAMMA) & MASK64)


class WindowSampler:
    """WindowSampler over the train split: window k starts at
    (splitmix64(seed, k) * (train - T + 1)) >> 64."""

    def __init__(self, train_tokens, seq_len, seed):
        if len(train_tokens) < seq_len:
            raise SystemExit("train split (%d tokens) is shorter than one window of %d" % (len(train_tokens), seq_len))
        self.tokens = train_tokens
        self.T = seq_len
        self.seed = seed
        self.starts = len(train_tokens) - seq_len + 1
        self.position = 0

    def window_start(self, k):
        return (splitmix64_at(self.seed, k) * self.starts) >> 64

    def next(self, batch):
        import numpy as np
        out = np.empty((batch, self.T), dtype=np.int32)
        for b in range(batch):
            s = self.window_start(self.position)
            out[b] = self.tokens[s:s + self.T]
            self.position += 1
        return out


def train_split(path, val_fraction):
    """Byte tokens of the text file (a leading BOM dropped, like TokenDataset)
    and the size of the train split: total - floor(total * val_fraction)."""
    import numpy as np
    data = open(path, "rb").read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    data.decode("utf-8")  # TokenDataset rejects invalid UTF-8; so do we
    tokens = np.frombuffer(data, dtype=np.uint8).astype(np.int32)
    val = math.floor(Fraction(len(tokens)) * Fraction(val_fraction))
    return tokens[:len(tokens) - val], len(tokens), val


def selftest():
    # tests/train/tst_dataset.cpp: generatorIsSplitmix64
    assert splitmix64_at(0, 0) == 0xE220A8397B1DCDAF
    assert splitmix64_at(0, 1) == 0x6E789E6AA1B965F4
    assert splitmix64_at(0, 2) == 0x06C45D188009454F
    import numpy as np
    s = WindowSampler(np.arange(100, dtype=np.int32), 10, 42)
    assert [s.window_start(k) for k in range(8)] == [67, 14, 25, 31, 3, 79, 19, 72]
    b = s.next(2)
    assert b[0, 0] == 67 and b[0, 9] == 76 and b[1, 0] == 14 and s.position == 2
    return "window generator matches tst_dataset.cpp's vectors"


# ---- settings ------------------------------------------------------------------

def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v.strip() else default


def env_float(name, default):
    v = os.environ.get(name, "")
    return float(v) if v.strip() else default


def settings_from_env(device):
    gpu = device == "cuda"
    seq = env_int("SEQ", 1024 if gpu else 256)
    batch = env_int("BATCH", 16 if gpu else 8)
    micro = env_int("MICRO", batch)
    if micro <= 0 or batch % micro:
        raise SystemExit("BATCH (%d) must be a multiple of MICRO (%d)" % (batch, micro))
    model = {
        "vocab_size": 256,  # the byte tokenizer
        "d_model": env_int("D_MODEL", 768 if gpu else 256),
        "n_layers": env_int("N_LAYERS", 12 if gpu else 4),
        "n_heads": env_int("N_HEADS", 12 if gpu else 4),
        "ffn_hidden_size": env_int("FFN", 2048 if gpu else 688),
        "max_seq_len": seq,
        "rmsnorm_eps": 1e-5, "dropout": 0.0, "initializer_range": 0.02, "rope_theta": 10000.0,
        "rope_scaling": None, "use_rope": True, "use_attention_sinks": True, "num_attention_sinks": 2,
        "use_swiglu": True, "swiglu_multiplier": 2.0, "use_gqa": False, "gqa_groups": None,
        "use_moe": False, "moe_config": None, "tie_embeddings": True,
    }
    wanted = {
        "batch_size": batch, "micro_batch_size": micro, "gradient_accumulation_steps": batch // micro,
        "seq_len": seq, "learning_rate": env_float("LR", 3e-4), "warmup_steps": env_int("LR_WARMUP", 0),
        "lr_schedule": "constant", "weight_decay": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
        "max_grad_norm": 1.0, "seed": env_int("SAMPLER_SEED", 1337),
        "mixed_precision": "bf16" if gpu else "fp32",
    }
    steps = env_int("STEPS", 30 if gpu else 32)
    skip = env_int("SKIP", 5 if gpu else 2)
    if not 0 <= skip < steps:
        raise SystemExit("SKIP (%d) must be in [0, STEPS = %d)" % (skip, steps))
    return {
        "device": device, "model": model, "wanted": wanted, "steps": steps, "skip": skip,
        "init_seed": env_int("INIT_SEED", 0), "repeats": env_int("REPEATS", 1 if gpu else 2),
        "val_fraction": 0.1, "peak_tflops": env_float("PEAK_TFLOPS", 0.0) or None,
    }


def implied_training(model, learning_rate):
    """What Trainer::resume uses for a checkpoint without training_config:
    TrainingConfig's defaults (run_config.h), the metadata's learning_rate,
    seq_len = min(max_seq_len, 256)."""
    return {
        "batch_size": 8, "micro_batch_size": 8, "gradient_accumulation_steps": 1,
        "seq_len": min(model["max_seq_len"], 256), "learning_rate": learning_rate, "warmup_steps": 0,
        "lr_schedule": "constant", "weight_decay": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
        "max_grad_norm": 1.0, "eval_every": 100, "eval_batches": 8, "save_every": 500, "log_every": 10,
        "seed": 1337, "mixed_precision": "bf16",  # autocast on CUDA only: fp32 on the CPU
    }


def choose_route(s):
    """('bare', training) when resume's defaults already give the wanted
    settings and neither evaluation nor a periodic save fires within the
    run; ('training_config', training) otherwise."""
    w = s["wanted"]
    implied = implied_training(s["model"], w["learning_rate"])
    same = all(implied[k] == w[k] for k in w if k != "mixed_precision")
    quiet = s["steps"] < implied["eval_every"] and s["steps"] < implied["save_every"]
    if same and quiet and s["device"] == "cpu":
        return "bare", implied
    t = dict(implied)
    t.update(w)
    t.update({"run_name": "train-bench", "stage": "pretrain", "max_steps": s["steps"], "eval_every": 0,
              "save_every": 0, "keep_last": 0, "log_every": 10, "device": s["device"]})
    return "training_config", t


# ---- weights and the starting checkpoint ---------------------------------------------

def init_weights(model, seed):
    """MODEL.md's init in registration order, from torch.manual_seed(seed)."""
    import torch
    import modern_llm_ref as ref
    torch.manual_seed(seed)
    sd = collections.OrderedDict()
    for name, shape in ref.state_dict_layout(model):
        if name == "lm_head.weight" and model["tie_embeddings"]:
            sd[name] = sd["token_embed.weight"]  # one storage, two keys
            continue
        t = torch.empty(shape, dtype=torch.float32)
        if name.endswith("sink_states"):
            t.normal_(0.0, 0.02)
        elif name.endswith("norm.weight"):
            t.fill_(1.0)
        elif name.endswith(".bias"):
            t.zero_()
        else:
            t.normal_(0.0, model["initializer_range"])
        sd[name] = t
    return sd


def write_start_checkpoint(path, model, route, training, seed):
    import torch
    sd = init_weights(model, seed)
    meta = {"step": 0, "loss": math.log(model["vocab_size"]), "config": model, "run_name": "train-bench",
            "learning_rate": training["learning_rate"], "stage": "pretrain"}
    if route == "training_config":
        meta["training_config"] = training
    ckpt = {"model_state": sd, "metadata": meta}
    ckpt.update(meta)
    torch.save(ckpt, path)
    return sum(t.numel() for n, t in sd.items() if not (n == "lm_head.weight" and model["tie_embeddings"]))


def write_corpus(path, size):
    """Deterministic English-like text (ASCII): sentences of words drawn from a
    small Zipf-weighted vocabulary, so that the loss has something to learn."""
    words = ("the of and to in a is that for it as was with be by on not he this are or his from at which "
             "but have an they you were her she there one all we their been has when who will more no if out "
             "so said what up its about into than them can only other new some could time these two may then do "
             "first any my now such like our over man me even most made after also did many before must through "
             "back years where much your way well down should because each just those people how too little state "
             "good very make world still own see men work long get here between both life being under never day "
             "same another know while last might us great old year off come since against go came right used take "
             "three checkpoint model tensor layer gradient optimizer training window token loss step").split()
    weights = [1.0 / (i + 1) for i in range(len(words))]
    rng = random.Random(20240611)
    out, n = [], 0
    while n < size:
        k = rng.randint(4, 18)
        s = " ".join(rng.choices(words, weights, k=k))
        s = s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", "!", ";"]) + rng.choice([" ", " ", " ", "\n"])
        out.append(s)
        n += len(s)
    with open(path, "w", encoding="ascii") as f:
        f.write("".join(out)[:size])


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---- the Python loop ----------------------------------------------------------------

def learning_rate_at(t, step, max_steps):
    """trainer.cpp's learningRateAt."""
    lr = t["learning_rate"]
    if t["warmup_steps"] > 0 and step < t["warmup_steps"]:
        return lr * (step + 1) / t["warmup_steps"]
    if t["lr_schedule"] == "constant":
        return lr
    span = max(1, max_steps - t["warmup_steps"])
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - t["warmup_steps"]) / span)))


def python_loop(run_dir):
    """One training run of the Python loop; settings from run_dir/run.json."""
    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    import torch
    import modern_llm_ref as ref

    threads = run["threads"]
    torch.set_num_threads(threads)
    device = torch.device(run["device"])
    gpu = device.type == "cuda"
    if gpu:
        # The reference builds its RoPE tables, bias and sink padding with
        # factory functions: make those allocate on the GPU.
        torch.set_default_tensor_type(torch.cuda.FloatTensor)
    t = run["training"]
    model = run["model"]
    ckpt = torch.load(run["checkpoint"], map_location="cpu")
    sd = ckpt["model_state"]
    order = [n for n, _ in ref.state_dict_layout(model) if not (n == "lm_head.weight" and model["tie_embeddings"])]
    w = {n: sd[n].detach().to(device).clone().requires_grad_(True) for n in order}
    if model["tie_embeddings"]:
        w["lm_head.weight"] = w["token_embed.weight"]
    params = [w[n] for n in order]  # de-duplicated, registration order (MODEL.md)
    opt = torch.optim.AdamW(params, lr=t["learning_rate"], betas=(t["beta1"], t["beta2"]), eps=t["eps"],
                            weight_decay=t["weight_decay"])
    train, total, val = train_split(run["corpus"], run["val_fraction"])
    T = t["seq_len"]
    micro, accum = t["micro_batch_size"], t["gradient_accumulation_steps"]
    sampler = WindowSampler(train, T, t["seed"])
    steps = run["steps"]
    use_autocast = gpu and t["mixed_precision"] in ("bf16", "fp16")
    amp_dtype = torch.bfloat16 if t["mixed_precision"] == "bf16" else torch.float16

    metrics = open(os.path.join(run_dir, "metrics.jsonl"), "w")
    print("python loop: torch %s, %d threads (torch.get_num_threads() = %d), device %s, %s"
          % (torch.__version__, threads, torch.get_num_threads(), device,
             "autocast " + t["mixed_precision"] if use_autocast else "fp32"), file=sys.stderr)
    start = time.perf_counter()
    tokens = 0
    last_loss = 0.0
    for step in range(steps):
        step_start = time.perf_counter()
        lr = learning_rate_at(t, step, steps)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        step_loss = 0.0
        for _ in range(accum):
            ids = torch.from_numpy(sampler.next(micro)).to(torch.long).to(device)
            if use_autocast:
                with torch.autocast("cuda", dtype=amp_dtype):
                    loss = ref.loss(ref.forward(w, model, ids), ids)
            else:
                loss = ref.loss(ref.forward(w, model, ids), ids)
            (loss / accum).backward()
            step_loss += loss.item() / accum
        if not math.isfinite(step_loss):
            raise SystemExit("python loop: step %d: loss is %r" % (step + 1, step_loss))
        if t["max_grad_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(params, t["max_grad_norm"])
        opt.step()
        tokens += t["batch_size"] * T
        last_loss = step_loss
        now = time.perf_counter()
        metrics.write(json.dumps({"step": step + 1, "loss": step_loss, "lr": lr, "tokens": tokens,
                                  "tokens_per_sec": t["batch_size"] * T / max(1e-9, now - step_start),
                                  "wall_time": now - start}) + "\n")
        metrics.flush()
        if (step + 1) % 10 == 0 or step + 1 == steps:
            print("step=%d loss=%.4f lr=%.3e" % (step + 1, step_loss, lr), flush=True)
    metrics.close()
    # Like ours: a final checkpoint (weights, optimizer, metadata).
    out = collections.OrderedDict((n, w[n].detach()) for n in order)
    if model["tie_embeddings"]:
        out["lm_head.weight"] = out["token_embed.weight"]
    meta = {"step": steps, "loss": last_loss, "config": model, "run_name": "train-bench-python",
            "learning_rate": learning_rate_at(t, steps - 1, steps)}
    torch.save(dict({"model_state": out, "optimizer": opt.state_dict(), "metadata": meta}, **meta),
               os.path.join(run_dir, "train-bench-python_final.pt"))
    print("finished at step %d" % steps, flush=True)


# ---- measuring -------------------------------------------------------------------

def read_metrics(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    return rows


def parse_time_v(path):
    """Peak RSS (KiB) and wall clock from /usr/bin/time -v's report."""
    rss = wall = None
    with open(path) as f:
        for line in f:
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", line)
            if m:
                rss = int(m.group(1))
            m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", line)
            if m:
                secs = 0.0
                for part in m.group(1).split(":"):
                    secs = secs * 60 + float(part)
                wall = secs
    return rss, wall


def cpu_busy_seconds():
    """Busy CPU time of the whole machine (all cores) and steal time, from
    /proc/stat: user nice system idle iowait irq softirq steal."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / hz, v[7] / hz


def run_side(name, cmd, run_dir, env, skip, tokens_per_step, steps):
    timefile = os.path.join(run_dir, "time-v.txt")
    log = os.path.join(run_dir, "console.log")
    with open(log, "w") as out:
        busy0, steal0 = cpu_busy_seconds()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v", "-o", timefile] + cmd, stdout=out, stderr=subprocess.STDOUT,
                           env=env, cwd=run_dir)
        wall = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy1, steal1 = cpu_busy_seconds()
    own_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    # What else kept the cores busy meanwhile (other processes, the kernel),
    # in cores on average; a clean measurement has this near 0.
    foreign = max(0.0, (busy1 - busy0) - own_cpu) / wall
    if p.returncode != 0:
        sys.stderr.write(open(log).read()[-4000:])
        raise SystemExit("%s: exit status %d (log: %s)" % (name, p.returncode, log))
    rss_kib, _ = parse_time_v(timefile)
    rows = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    if [r["step"] for r in rows] != list(range(1, steps + 1)):
        raise SystemExit("%s: metrics.jsonl has steps %s, expected 1..%d" % (name, [r["step"] for r in rows], steps))
    t_skip = rows[skip - 1]["wall_time"] if skip > 0 else 0.0
    timed = rows[-1]["wall_time"] - t_skip
    per_step = sorted(r["tokens_per_sec"] for r in rows[skip:])
    return {
        "tokens_per_sec": (steps - skip) * tokens_per_step / timed,
        "timed_seconds": timed,
        "step_tokens_per_sec_median": per_step[len(per_step) // 2],
        "process_wall_s": wall,
        "process_cpu_s": own_cpu,
        "foreign_cores": foreign,
        "steal_cores": (steal1 - steal0) / wall,
        "loop_wall_s": rows[-1]["wall_time"],
        "peak_rss_kib": rss_kib,
        "losses": [r["loss"] for r in rows],
        "lrs": [r["lr"] for r in rows],
        "log": log,
    }


def fmt_rate(x):
    return "-" if x is None else ("%.0f tok/s" % x if x >= 100 else "%.1f tok/s" % x)


def fmt_mib(kib):
    if kib is None:
        return "-"
    return "%.2f GiB" % (kib / 1048576) if kib >= 1048576 else "%.0f MiB" % (kib / 1024)


def fmt_s(s):
    return "-" if s is None else "%.1f s" % s


def table(rows):
    head = ("figure", "ours", "Python", "ours/Python", "goal", "pass/fail")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def python_only_report(s, runs, n_params, skip, steps, work):
    best = max(runs, key=lambda x: x["tokens_per_sec"])
    tps = best["tokens_per_sec"]
    mfu = 6.0 * n_params * tps / (s["peak_tflops"] * 1e12) if s["peak_tflops"] else None
    print()
    print("== results: Python loop only (ours could not run on %s)" % s["device"])
    table([
        ("%s training tokens/s (steps %d..%d, best of %d)" % (s["device"].upper(), skip + 1, steps, len(runs)),
         "-", fmt_rate(tps), "-", ">= 1.0x", "-"),
        ("peak RSS of the process", "-", fmt_mib(best["peak_rss_kib"]), "-", "", ""),
        ("MFU = 6 x %d params x tokens/s / %s TFLOPS" % (n_params, s["peak_tflops"] or "?"), "-",
         "-" if mfu is None else "%.1f%%" % (100 * mfu), "-", ">= 40%", "-"),
    ])
    out = os.path.join(work, "results-%s.json" % s["device"])
    with open(out, "w") as f:
        json.dump({"settings": s, "params": n_params, "python_mfu": mfu, "runs": {"python": runs}}, f, indent=1)
    print("written %s" % out)
    return 1


def bench(args):
    print(selftest())
    s = settings_from_env(args.device)
    route, training = choose_route(s)
    model, steps, skip = s["model"], s["steps"], s["skip"]
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)

    corpus = os.environ.get("CORPUS", "").strip()
    if not corpus:
        corpus = os.path.join(work, "corpus.txt")
        if not os.path.exists(corpus) or os.path.getsize(corpus) != 4_000_000:
            write_corpus(corpus, 4_000_000)
    corpus = os.path.abspath(corpus)
    train, total, val = train_split(corpus, s["val_fraction"])
    T = training["seq_len"]
    start_ckpt = os.path.join(work, "init.pt")
    n_params = write_start_checkpoint(start_ckpt, model, route, training, s["init_seed"])

    K = args.threads
    env = dict(os.environ)
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[v] = str(K)
    tokens_per_step = training["batch_size"] * T

    print()
    print("== setup")
    print("model:    d_model %d, %d layers, %d heads, ffn %d, vocab %d (bytes), max_seq_len %d, tied; %d parameters"
          % (model["d_model"], model["n_layers"], model["n_heads"], model["ffn_hidden_size"], model["vocab_size"],
             model["max_seq_len"], n_params))
    print("training: seq_len %d, batch %d = micro %d x accum %d (%d tokens/step), AdamW lr %g (%s, warm-up %d), "
          "betas (%g, %g), eps %g, wd %g, clip %g, sampler seed %d, %s"
          % (T, training["batch_size"], training["micro_batch_size"], training["gradient_accumulation_steps"],
             tokens_per_step, training["learning_rate"], training["lr_schedule"], training["warmup_steps"],
             training["beta1"], training["beta2"], training["eps"], training["weight_decay"],
             training["max_grad_norm"], training["seed"],
             "fp32" if s["device"] == "cpu" else "autocast " + training["mixed_precision"]))
    if route == "bare":
        print("route:    bare Python-layout checkpoint (no training_config): every setting above is what "
              "Trainer::resume implies (defaults + metadata learning_rate, seq_len = min(max_seq_len, 256)); "
              "eval_every %d / save_every %d do not fire within %d steps; ours writes one final checkpoint, "
              "and so does the Python loop" % (training["eval_every"], training["save_every"], steps))
    else:
        print("route:    Python-layout checkpoint WITH training_config metadata (the wanted settings differ from "
              "resume's defaults, or eval/save would fire): eval_every 0, save_every 0")
    print("data:     %s (%d bytes, sha256 %s...); train split %d tokens, validation tail %d"
          % (corpus, total, sha256(corpus)[:16], len(train), val))
    print("start:    %s (init seed %d, no optimizer state)" % (start_ckpt, s["init_seed"]))
    print("threads:  K = %d (torch.set_num_threads(K) in Python; OMP/MKL/OPENBLAS_NUM_THREADS=K for both)" % K)
    print("steps:    %d, first %d not timed; tokens/s = %d x (steps %d..%d) / (wall_time[%d] - wall_time[%d]) from "
          "each side's metrics.jsonl; %d repeat(s) per side, ABBA order, best taken"
          % (steps, skip, tokens_per_step, skip + 1, steps, steps, skip, s["repeats"]))

    ours_cmd = [os.path.abspath(args.cli), "resume", None, "--max-steps", str(steps), "--data", corpus,
                "--device", s["device"]]
    results = {"ours": [], "python": []}
    order = []
    for r in range(s["repeats"]):
        order += ["ours", "python"] if r % 2 == 0 else ["python", "ours"]
    print()
    print("== runs")
    counters = {"ours": 0, "python": 0}
    ours_failed = False
    for side in order:
        counters[side] += 1
        run_dir = os.path.join(work, "%s-%d" % (side, counters[side]))
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        if side == "ours":
            ckpt = os.path.join(run_dir, "init.pt")  # resume writes next to its checkpoint
            shutil.copyfile(start_ckpt, ckpt)
            cmd = list(ours_cmd)
            cmd[2] = ckpt
        else:
            with open(os.path.join(run_dir, "run.json"), "w") as f:
                json.dump({"checkpoint": start_ckpt, "corpus": corpus, "model": model, "training": training,
                           "steps": steps, "threads": K, "device": s["device"],
                           "val_fraction": s["val_fraction"]}, f, indent=1)
            cmd = [sys.executable, os.path.abspath(__file__), "loop", "--run", run_dir]
        print("%-6s run %d: %s" % (side, counters[side], " ".join(cmd)), flush=True)
        if side == "ours" and ours_failed:
            continue
        try:
            res = run_side(side, cmd, run_dir, env, skip, tokens_per_step, steps)
        except SystemExit as e:
            if side != "ours" or s["device"] != "cuda":
                raise
            # Debian's LibTorch is built without CUDA: report Python alone.
            print("        ours failed on CUDA (%s); continuing with the Python loop only" % e, flush=True)
            ours_failed = True
            continue
        print("        %s over steps %d..%d (%.1f s), median step %s, process %.1f s (CPU %.1f s), peak RSS %s; "
              "other load meanwhile %.2f cores, steal %.2f"
              % (fmt_rate(res["tokens_per_sec"]), skip + 1, steps, res["timed_seconds"],
                 fmt_rate(res["step_tokens_per_sec_median"]), res["process_wall_s"], res["process_cpu_s"],
                 fmt_mib(res["peak_rss_kib"]), res["foreign_cores"], res["steal_cores"]), flush=True)
        results[side].append(res)

    if ours_failed:
        return python_only_report(s, results["python"], n_params, skip, steps, work)
    best = {k: max(v, key=lambda x: x["tokens_per_sec"]) for k, v in results.items()}
    ours, py = results["ours"][0], results["python"][0]
    diffs = [abs(a - b) for a, b in zip(ours["losses"], py["losses"])]
    max_diff = max(diffs)
    lr_diff = max(abs(a - b) for a, b in zip(ours["lrs"], py["lrs"]))
    ratio = best["ours"]["tokens_per_sec"] / best["python"]["tokens_per_sec"]
    loss_tol = 1e-2 if s["device"] == "cuda" else 1e-3
    rng = lambda side, key: "/".join(("%.0f" % r[key]) for r in results[side])

    def med(side):
        v = sorted(r["tokens_per_sec"] for r in results[side])
        return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2

    def spread(side):
        v = [r["tokens_per_sec"] for r in results[side]]
        return 100.0 * (max(v) / min(v) - 1.0)

    print()
    print("== per-step losses (first run of each side)")
    print("step  ours         python       |diff|")
    for i, (a, b) in enumerate(zip(ours["losses"], py["losses"])):
        print("%4d  %.8f  %.8f  %.2e" % (i + 1, a, b, abs(a - b)))

    rows = [
        ("%s training tokens/s (steps %d..%d, best of %d)" % (s["device"].upper(), skip + 1, steps, s["repeats"]),
         fmt_rate(best["ours"]["tokens_per_sec"]), fmt_rate(best["python"]["tokens_per_sec"]), "%.2fx" % ratio,
         ">= 1.0x", "PASS" if ratio >= 1.0 else "FAIL"),
        ("  median of the %d runs" % s["repeats"], fmt_rate(med("ours")), fmt_rate(med("python")),
         "%.2fx" % (med("ours") / med("python")), "", ""),
        ("  every run, tokens/s (run-to-run spread)", "%s (%.0f%%)" % (rng("ours", "tokens_per_sec"), spread("ours")),
         "%s (%.0f%%)" % (rng("python", "tokens_per_sec"), spread("python")), "", "", ""),
        ("  other load during the best run (cores busy)", "%.2f" % best["ours"]["foreign_cores"],
         "%.2f" % best["python"]["foreign_cores"], "", "~0", ""),
        ("  median single-step tokens/s (best run)", fmt_rate(best["ours"]["step_tokens_per_sec_median"]),
         fmt_rate(best["python"]["step_tokens_per_sec_median"]),
         "%.2fx" % (best["ours"]["step_tokens_per_sec_median"] / best["python"]["step_tokens_per_sec_median"]), "", ""),
        ("process wall time (start-up, %d steps, final save; run 1)" % steps, fmt_s(ours["process_wall_s"]),
         fmt_s(py["process_wall_s"]), "%.2fx" % (ours["process_wall_s"] / py["process_wall_s"]), "", ""),
        ("peak RSS of the process (max over runs)", fmt_mib(max(r["peak_rss_kib"] for r in results["ours"])),
         fmt_mib(max(r["peak_rss_kib"] for r in results["python"])), "%.2fx" % (
             max(r["peak_rss_kib"] for r in results["ours"]) / max(r["peak_rss_kib"] for r in results["python"])),
         "", ""),
        ("loss at step 1 / step %d" % steps, "%.5f / %.5f" % (ours["losses"][0], ours["losses"][-1]),
         "%.5f / %.5f" % (py["losses"][0], py["losses"][-1]), "", "", ""),
        ("max |loss diff| over %d steps (lr max |diff| %.1e)" % (steps, lr_diff), "%.2e" % max_diff, "", "",
         "< %g" % loss_tol, "PASS" if max_diff < loss_tol else "FAIL"),
    ]
    mfu = {}
    if s["device"] == "cuda":
        for side in ("ours", "python"):
            tps = best[side]["tokens_per_sec"]
            mfu[side] = 6.0 * n_params * tps / (s["peak_tflops"] * 1e12) if s["peak_tflops"] else None
        rows.append(("MFU = 6 x %d params x tokens/s / %s TFLOPS" % (n_params, s["peak_tflops"] or "?"),
                     "-" if mfu["ours"] is None else "%.1f%%" % (100 * mfu["ours"]),
                     "-" if mfu["python"] is None else "%.1f%%" % (100 * mfu["python"]), "", ">= 40%",
                     "-" if mfu["ours"] is None else ("PASS" if mfu["ours"] >= 0.40 else "FAIL")))
    print()
    print("== results (ratio = ours / Python; load average now: %s)" % " ".join(open("/proc/loadavg").read().split()[:3]))
    table(rows)
    noisy = ["%s-%d (%.2f)" % (side, i + 1, r["foreign_cores"]) for side in ("ours", "python")
             for i, r in enumerate(results[side]) if r["foreign_cores"] > 0.25]
    if noisy:
        print("warning: other processes kept cores busy during %s: the figures of those runs are disturbed; "
              "rerun on a quiet machine" % ", ".join(noisy))
    if s["device"] == "cpu":
        print("GPU rows (bf16 tokens/s, MFU of the 768/12/1024 config): not measured here; run with DEVICE=cuda "
              "PEAK_TFLOPS=<dense bf16 peak> on a machine with a GPU")
    out = os.path.join(work, "results-%s.json" % s["device"])
    with open(out, "w") as f:
        json.dump({"settings": s, "route": route, "training": training, "params": n_params, "threads": K,
                   "corpus": corpus, "ratio": ratio, "max_loss_diff": max_diff, "mfu": mfu,
                   "runs": results}, f, indent=1)
    print("written %s" % out)
    return 0 if ratio >= 1.0 and max_diff < loss_tol else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--cli", required=True)
    b.add_argument("--work", required=True)
    b.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    b.add_argument("--threads", type=int, default=os.cpu_count())
    lp = sub.add_parser("loop")
    lp.add_argument("--run", required=True)
    sub.add_parser("selftest")
    args = ap.parse_args()
    if args.cmd == "loop":
        python_loop(args.run)
        return 0
    if args.cmd == "selftest":
        print(selftest())
        return 0
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
