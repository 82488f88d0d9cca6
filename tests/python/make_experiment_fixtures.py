#!/usr/bin/python3
"""An experiment laid out as the reference library's pipeline leaves it, and
the curves a reader must find in it.

    /usr/bin/python3 make_experiment_fixtures.py OUTDIR

OUTDIR/experiment/
  checkpoints/tiny-pretrain/tiny-pretrain_step{40,80}.pt, tiny-pretrain_final.pt
  checkpoints/tiny-sft/tiny-sft_step{30,33}.pt (nothing logged at 33)
  checkpoints/tiny-dpo/tiny-dpo_step20.pt
      Trainer-style checkpoints: model_state, step, run_name, config; no loss.
  logs/pipeline_48213.err
      One job's console: the three stages' `trainer.<run>` lines, tqdm bars
      redrawn with '\\r' (some with a loss postfix, one running straight
      into a record), dataset messages, eval lines, print()ed lines that name
      no run, and a restart of the pretrain stage (steps logged again).
  logs/other-job_48214.out
      A second job's log whose lines name another run only.

OUTDIR/experiment_expected.json:
  {"runs": {"checkpoints/tiny-pretrain": {"loss": [[step, value, wall, tokens], ...],
            "lr": [...], "val_loss": [...], "val_ppl": [...]}, ...},
   "restarts": {"checkpoints/tiny-pretrain": {"loss": [step, ...], ...}},
   "markers": {"checkpoints/tiny-sft": [[step, loss or null], ...], ...},
   "log_only": {"tiny-ghost": {...}}}

The expectations come from the log text with a Python regex, written from
the rules (one record per '\\r'-separated piece; `trainer.<run>` names the
run; `eval` messages give val_<key>; a step lower than the last one logged
for that run and metric drops every earlier point from that step on), not
from the C++ code.
"""
import calendar
import collections
import json
import os
import random
import re
import sys
import time

import torch

CONFIG = collections.OrderedDict([
    ("vocab_size", 64), ("d_model", 16), ("n_layers", 1), ("n_heads", 2), ("ffn_hidden_size", 32),
    ("max_seq_len", 32), ("tie_embeddings", True),
])

STAGES = [  # (run name, logged steps per segment, checkpoint steps, final?)
    ("tiny-pretrain", [list(range(10, 101, 10)), list(range(50, 121, 10))], [40, 80], True),
    ("tiny-sft", [list(range(5, 61, 5))], [30, 33], False),
    ("tiny-dpo", [list(range(2, 31, 2))], [20], False),
]


def state(seed):
    g = torch.Generator().manual_seed(seed)
    d, v = CONFIG["d_model"], CONFIG["vocab_size"]
    sd = collections.OrderedDict()
    sd["token_embed.weight"] = torch.randn(v, d, generator=g) * 0.02
    sd["blocks.0.attn.q_proj.weight"] = torch.randn(d, d, generator=g) * 0.02
    sd["final_norm.weight"] = torch.ones(d)
    sd["lm_head.weight"] = sd["token_embed.weight"]
    return sd


def write_checkpoints(root):
    for i, (run, _, steps, final) in enumerate(STAGES):
        d = os.path.join(root, "checkpoints", run)
        os.makedirs(d, exist_ok=True)
        names = [(s, f"{run}_step{s}.pt") for s in steps]
        if final:
            names.append((steps[-1], f"{run}_final.pt"))
        for step, name in names:
            # The reference Trainer's save: step, run_name, config and the
            # weights; no loss.
            torch.save({"model_state": state(100 * i + step), "step": step, "run_name": run,
                        "config": dict(CONFIG)}, os.path.join(d, name))


def bar(desc, done, total, postfix=""):
    pct = int(100 * done / total)
    filled = "\u2588" * (pct // 10)
    return f"{desc}: {pct:3d}%|{filled:<10}| {done}/{total} [00:{done % 60:02d}<00:10, 9.87it/s{postfix}]"


def write_log(path):
    rng = random.Random(12)
    t0 = calendar.timegm((2025, 12, 2, 10, 0, 0, 0, 0, 0))
    out = []
    now = [t0]

    def stamp(ms):
        now[0] += rng.randint(1, 7)
        s = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now[0]))
        return s + (",%03d" % rng.randint(0, 999) if ms else "")

    out.append(f"{stamp(False)} - modern_llm.data - INFO - Loading dataset wikitext-2 (split=train, max_step=1000)\n")
    out.append("Map: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 2000/2000 [00:01<00:00, 1500.00 examples/s]\n")
    out.append("step=3 loss=9.9999 (print() of a script: no logger, names no run)\n")
    for i, (run, segments, _, _) in enumerate(STAGES):
        ms = i == 1  # the SFT stage's records carry logging's ",mmm"
        logger = f"trainer.{run}"
        out.append(f"{stamp(ms)} - {logger} - INFO - Starting training for {run} (max_steps=1000)\n")
        for seg, steps in enumerate(segments):
            if seg:
                out.append(f"{stamp(ms)} - {logger} - WARNING - Job restarted: resuming from step {steps[0] - 10}\n")
            for k, step in enumerate(steps):
                loss = round(6.0 / (1 + step / 40) + rng.uniform(-0.05, 0.05) + i, 4)
                lr = 3e-4 * min(1.0, step / 30)
                # tqdm redraws: pieces separated by '\r', the last running
                # straight into the next record when k is odd.
                pieces = [bar("Training", step - 1, 1000, f", loss={loss + 0.5:.2f}"), bar("Training", step, 1000)]
                record = f"{stamp(ms)} - {logger} - INFO - step={step} loss={loss:.4f} lr={lr:.3e}"
                if run == "tiny-dpo":
                    record += f" accuracy={rng.uniform(50, 70):.1f}%"
                if k % 2:
                    out.append("\r" + "\r".join(pieces) + record + "\n")
                else:
                    out.append("\r" + "\r".join(pieces) + "\n" + record + "\n")
                if step % 20 == 0 or (run == "tiny-sft" and step % 15 == 0):
                    val = round(loss + 0.125, 4)
                    out.append(f"{stamp(ms)} - {logger} - INFO - eval step={step} loss={val:.4f} ppl={2.718281828 ** val:.4f}\n")
                if step == 40 and run == "tiny-pretrain":
                    out.append(f"{stamp(ms)} - modern_llm.data - INFO - Tokenizing shard 2 of 4 (step=40 of the data loader)\n")
        out.append(f"{stamp(ms)} - {logger} - INFO - Saved final checkpoint to checkpoints/{run}/{run}_final.pt\n")
    # A run that left no checkpoints: its lines are in the log only.
    out.append(f"{stamp(False)} - trainer.tiny-ghost - INFO - step=1 loss=7.5000 lr=1.000e-05\n")
    out.append(f"{stamp(False)} - trainer.tiny-ghost - INFO - step=2 loss=7.2500 lr=2.000e-05\n")
    with open(path, "w", newline="") as f:
        f.write("".join(out))


# The rules, as a regex over the text.
RECORD = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:,(\d{3}))? - trainer\.(\S+) - [A-Z]+ - (.*)$")
PAIR = re.compile(r"([A-Za-z0-9_]+)=(\S+)")


def expected_from_log(path):
    """{run: {metric: points}}, {run: {metric: [restart steps]}}; lines that
    name no run (no `trainer.` record, not a progress bar) under run ""."""
    series = collections.defaultdict(lambda: collections.defaultdict(list))
    restarts = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(path, newline="") as f:
        text = f.read()
    for line in text.split("\n"):
        for piece in line.split("\r"):
            m = None
            for start in range(len(piece)):
                m = RECORD.match(piece, start)
                if m:
                    break
            if m:
                stamp, ms, run, message = m.groups()
                wall = float(calendar.timegm(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")))
                if ms:
                    wall += int(ms) / 1000.0
            elif re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", piece) or "%|" in piece:
                continue  # another logger's record, or a progress bar
            else:
                run, message, wall = "", piece, None
            pairs = dict(PAIR.findall(message))
            if "step" not in pairs:
                continue
            step = int(pairs.pop("step"))
            is_eval = message.lower().startswith("eval")
            for key, text_value in pairs.items():
                value = float(text_value.rstrip("%"))
                metric = ("val_" + key) if is_eval else key
                pts = series[run][metric]
                if pts and step < pts[-1][0]:
                    restarts[run][metric].append(step)
                    pts[:] = [p for p in pts if p[0] < step]
                elif pts and step == pts[-1][0]:
                    pts.pop()
                pts.append([step, value, wall, None])
    return series, restarts


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    root = os.path.join(out, "experiment")
    os.makedirs(os.path.join(root, "logs"), exist_ok=True)
    write_checkpoints(root)
    log = os.path.join(root, "logs", "pipeline_48213.err")
    write_log(log)
    with open(os.path.join(root, "logs", "other-job_48214.out"), "w") as f:
        f.write("2025-12-03 08:00:00 - trainer.someone-else - INFO - step=1 loss=1.0000\n")
    series, restarts = expected_from_log(log)
    runs, markers, log_only = {}, {}, {}
    for run, _, steps, final in STAGES:
        name = f"checkpoints/{run}"
        runs[name] = series.pop(run)
        assert runs[name]["loss"] and runs[name]["val_loss"] and runs[name]["val_ppl"], run
        logged = {p[0]: p[1] for p in runs[name]["loss"]}
        markers[name] = [[s, logged.get(s)] for s in steps]
    assert [m[1] is None for m in markers["checkpoints/tiny-sft"]] == [False, True], "a marker without a value"
    assert restarts["tiny-pretrain"]["loss"] == [50]
    log_only["tiny-ghost"] = series.pop("tiny-ghost")
    log_only["pipeline_48213"] = series.pop("")  # named after the log: its lines that name no run
    assert log_only["pipeline_48213"] == {"loss": [[3, 9.9999, None, None]]}, log_only["pipeline_48213"]
    assert not series, series.keys()
    with open(os.path.join(out, "experiment_expected.json"), "w") as f:
        json.dump({"runs": runs, "restarts": {f"checkpoints/{r}": dict(v) for r, v in restarts.items()},
                   "markers": markers, "log_only": log_only, "log": log}, f, indent=1)
    print("make_experiment_fixtures: %d runs in %s" % (len(runs), root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
