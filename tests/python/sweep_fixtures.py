#!/usr/bin/python3
"""A sweep of runs for the groups and runs-table tests, and what numpy says
about it.

    /usr/bin/python3 sweep_fixtures.py make OUTDIR
    /usr/bin/python3 sweep_fixtures.py check OUTDIR RUNS.json KIND

make writes OUTDIR/sweep/lr{1e-4,3e-4,1e-3}_seed{0..4}/ with
  metrics.jsonl  "loss" and "lr" at steps that do not line up between runs
                 (even seeds every 10 steps from 0, odd seeds every 7 from 3),
                 runs of unequal length (1,000 + 150 * seed steps, the lr1e-3
                 runs 400 steps shorter), one NaN loss (lr3e-4_seed2, the
                 point is left out of every statistic), "val_loss" every 50
                 and "val_acc" every 100 steps;
  RUN.json       {"model": {...same for all...}, "training": {run_name,
                 output_dir, learning_rate, seed, ...}, "data": {...}};
                 lr1e-3_seed4 alone has training.warmup_steps;
  *_step{N}.pt   seeds 0 and 1 only: checkpoints every 300 steps.
OUTDIR/ckptcfg/a,b/: runs without RUN.json whose checkpoints record
  training_config {learning_rate, seed} and config {d_model, n_layers}.
OUTDIR/sweep_reference.json: numpy's truth (see reference()).

check compares `ckptscope-cli runs --json` (RUNS.json) with the truth; KIND
is "runs" (no grouping, --metric loss), "grouped" (--group-by lr --metric
loss) or "val_acc" (--metric val_acc). Exit 0 when it agrees, 1 with what
differs.
"""
import json
import math
import os
import shutil
import sys

import numpy as np

LRS = [1e-4, 3e-4, 1e-3]
SEEDS = range(5)
SECTION_KEYS_DROPPED = {"run_name", "output_dir"}  # they name the run (hparams.h)


def run_name(lr, seed):
    return "lr%s_seed%d" % ({1e-4: "1e-4", 3e-4: "3e-4", 1e-3: "1e-3"}[lr], seed)


def run_steps(li, seed):
    last = 1000 + 150 * seed - (400 if li == 2 else 0)
    if seed % 2 == 0:
        return list(range(0, last + 1, 10))
    return list(range(3, last + 1, 7))


def loss_at(step, lr, seed, rng):
    return 2.0 + 3.0 * math.exp(-step * lr * 5) + 0.05 * math.sin(step / 37.0 + seed) + rng.normal(0, 0.02)


def make(out):
    root = os.path.join(out, "sweep")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    import torch
    for li, lr in enumerate(LRS):
        for seed in SEEDS:
            name = run_name(lr, seed)
            d = os.path.join(root, name)
            os.makedirs(d)
            rng = np.random.default_rng(li * 100 + seed)
            lines = []
            for step in run_steps(li, seed):
                v = loss_at(step, lr, seed, rng)
                if name == "lr3e-4_seed2" and step == 500:
                    v = float("nan")
                lines.append(json.dumps({"step": step, "loss": v, "lr": lr, "wall_time": step * 0.1}))
                if step % 50 == 0 or (seed % 2 and step % 49 == 0):
                    lines.append(json.dumps({"step": step, "val_loss": v + 0.1 + rng.normal(0, 0.05)}))
                if step % 100 == 0 or (seed % 2 and step % 98 == 0):
                    lines.append(json.dumps({"step": step, "val_acc": 0.5 - 0.1 * v + rng.normal(0, 0.01)}))
            with open(os.path.join(d, "metrics.jsonl"), "w") as f:
                f.write("\n".join(lines) + "\n")
            training = {"run_name": name, "output_dir": d, "learning_rate": lr, "seed": seed,
                        "max_steps": 2000, "batch_size": 8}
            if name == "lr1e-3_seed4":
                training["warmup_steps"] = 100
            config = {"model": {"d_model": 64, "n_layers": 2}, "training": training, "data": {"path": "data.txt"}}
            with open(os.path.join(d, "RUN.json"), "w") as f:
                json.dump(config, f, indent=1)
            if seed < 2:
                for step in range(300, run_steps(li, seed)[-1] + 1, 300):
                    torch.save({"model_state": {"w": torch.zeros(2)}, "metadata": {"step": step, "run_name": name}},
                               os.path.join(d, "%s_step%d.pt" % (name, step)))
    cfg = os.path.join(out, "ckptcfg")
    shutil.rmtree(cfg, ignore_errors=True)
    for name, lr, seed in [("a", 1e-3, 1), ("b", 2e-3, 1)]:
        d = os.path.join(cfg, name)
        os.makedirs(d)
        meta = {"step": 10, "run_name": name, "config": {"d_model": 32, "n_layers": 2},
                "training_config": {"run_name": name, "learning_rate": lr, "seed": seed}}
        torch.save({"model_state": {"w": torch.zeros(2)}, "metadata": meta, **meta},
                   os.path.join(d, "%s_step10.pt" % name))
        with open(os.path.join(d, "metrics.jsonl"), "w") as f:
            f.write(json.dumps({"step": 10, "loss": 1.0}) + "\n")
    with open(os.path.join(out, "sweep_reference.json"), "w") as f:
        json.dump(reference(root), f)


def read_series(path):
    """Per metric: (steps, values) in file order; Python's json reads NaN."""
    series = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            for k, v in rec.items():
                if k in ("step", "wall_time"):
                    continue
                series.setdefault(k, ([], []))
                series[k][0].append(rec["step"])
                series[k][1].append(v)
    return {k: (np.array(s, dtype=np.int64), np.array(v, dtype=np.float64)) for k, (s, v) in series.items()}


def flat_hparams(d):
    out = {}
    for section, values in d.items():
        for k, v in values.items():
            if k not in SECTION_KEYS_DROPPED:
                out[k] = v
    return out


def group_stats(members):
    """The group's line: at every step a member logged, each member's value
    there or on the straight line between its neighbours, only within its
    own first..last step; NaN points left out."""
    finite = []
    for steps, values in members:
        ok = np.isfinite(values)
        finite.append((steps[ok], values[ok]))
    union = np.unique(np.concatenate([s for s, _ in finite]))
    out = {k: [] for k in ("steps", "runs", "mean", "std", "min", "max", "median", "p25", "p75")}
    for step in union:
        vals = np.array([np.interp(step, s, v) for s, v in finite if s[0] <= step <= s[-1]])
        out["steps"].append(int(step))
        out["runs"].append(int(len(vals)))
        out["mean"].append(float(np.mean(vals)))
        out["std"].append(float(np.std(vals)))
        out["min"].append(float(np.min(vals)))
        out["max"].append(float(np.max(vals)))
        out["median"].append(float(np.median(vals)))
        out["p25"].append(float(np.percentile(vals, 25)))
        out["p75"].append(float(np.percentile(vals, 75)))
    return out


def best_of(steps, values, goal):
    ok = np.isfinite(values)
    s, v = steps[ok], values[ok]
    i = int(np.argmin(v) if goal == "min" else np.argmax(v))  # the first on a tie
    return float(v[i]), int(s[i]), float(v[-1]), int(s[-1])


def nearest_checkpoint(run_dir, name, step):
    steps = sorted(int(f[len(name) + 5:-3]) for f in os.listdir(run_dir) if f.endswith(".pt"))
    if not steps:
        return None
    best = min(steps, key=lambda c: (abs(c - step), -c))  # the later one on a tie
    return "%s_step%d.pt" % (name, best)


def reference(root):
    ref = {"runs": {}, "groups": {}, "groups_seed_lt3": {}, "hparams": {}}
    by_lr = {}
    by_lr_lt3 = {}  # the runs table's filter "seed < 3" (tst_runs_table)
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        series = read_series(os.path.join(d, "metrics.jsonl"))
        with open(os.path.join(d, "RUN.json")) as f:
            hp = flat_hparams(json.load(f))
        ref["hparams"][name] = hp
        entry = {}
        for metric, goal in (("loss", "min"), ("val_loss", "min"), ("val_acc", "max")):
            steps, values = series[metric]
            best, best_step, last, last_step = best_of(steps, values, goal)
            entry[metric] = {"best": best, "best_step": best_step, "last": last, "last_step": last_step,
                             "points": int(len(steps)), "checkpoint": nearest_checkpoint(d, name, best_step)}
        ref["runs"][name] = entry
        by_lr.setdefault(hp["learning_rate"], []).append(series["loss"])
        if hp["seed"] < 3 and "warmup_steps" not in hp:
            by_lr_lt3.setdefault(hp["learning_rate"], []).append(series["loss"])
    for lr, members in by_lr.items():
        ref["groups"][repr(lr)] = group_stats(members)
    for lr, members in by_lr_lt3.items():
        ref["groups_seed_lt3"][repr(lr)] = group_stats(members)
    return ref


def differing(dicts):
    keys = set().union(*dicts)
    return sorted(k for k in keys if len({json.dumps(d.get(k, "<absent>")) for d in dicts}) > 1)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-12 * max(1.0, abs(b))


def check(out, runs_json, kind):
    with open(os.path.join(out, "sweep_reference.json")) as f:
        ref = json.load(f)
    with open(runs_json) as f:
        got = json.load(f)
    problems = []
    metric = "val_acc" if kind == "val_acc" else "loss"
    if got["metric"] != metric or got["goal"] != ("max" if metric == "val_acc" else "min"):
        problems.append("metric/goal %s/%s" % (got["metric"], got["goal"]))
    if kind in ("runs", "val_acc"):
        names = [r["name"] for r in got["rows"]]
        if sorted(names) != sorted(ref["runs"]):
            problems.append("rows %s" % names)
        want_cols = differing(list(ref["hparams"].values()))
        if got["columns"] != want_cols:
            problems.append("columns %s, numpy says %s" % (got["columns"], want_cols))
        for row in got["rows"]:
            want = ref["runs"].get(row["name"], {}).get(metric)
            if want is None:
                continue
            for k in ("best", "last"):
                if not close(row[k], want[k]):
                    problems.append("%s %s: %r, numpy %r" % (row["name"], k, row[k], want[k]))
            for k in ("best_step", "last_step", "points"):
                if row[k] != want[k]:
                    problems.append("%s %s: %r, numpy %r" % (row["name"], k, row[k], want[k]))
            ck = row["checkpoint"]
            if (ck and os.path.basename(ck)) != want["checkpoint"]:
                problems.append("%s checkpoint: %r, want %r" % (row["name"], ck, want["checkpoint"]))
            hp = ref["hparams"][row["name"]]
            for c in want_cols:
                if row["hparams"][c] != hp.get(c):
                    problems.append("%s %s: %r, RUN.json %r" % (row["name"], c, row["hparams"][c], hp.get(c)))
    else:
        if len(got["rows"]) != len(ref["groups"]):
            problems.append("%d groups, want %d" % (len(got["rows"]), len(ref["groups"])))
        for row in got["rows"]:
            lr = row["name"].split("=", 1)[1]
            g = ref["groups"].get(repr(float(lr)))
            if g is None:
                problems.append("group %s not in the truth" % row["name"])
                continue
            mean = np.array(g["mean"])
            i = int(np.argmin(mean))
            if not close(row["best"], float(mean[i])) or row["best_step"] != g["steps"][i]:
                problems.append("%s best %r@%r, numpy %r@%r" % (row["name"], row["best"], row["best_step"], mean[i],
                                                                 g["steps"][i]))
            if not close(row["last"], float(mean[-1])) or row["last_step"] != g["steps"][-1]:
                problems.append("%s last %r, numpy %r" % (row["name"], row["last"], mean[-1]))
            want_runs = sorted((n for n, hp in ref["hparams"].items() if repr(hp["learning_rate"]) == repr(float(lr))),
                               key=lambda n: int(n.rsplit("seed", 1)[1]))
            if row["runs"] != want_runs:
                problems.append("%s runs %s, want %s" % (row["name"], row["runs"], want_runs))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
