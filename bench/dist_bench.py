#!/usr/bin/python3
"""Data-parallel scaling on the CPU: one process against two Gloo ranks.

    dist_bench.py --cli CKPTSCOPE_CLI --work DIR

Four runs of the same training (same config, batch, data order):
  1 process x 1 thread   (micro-batch MICRO x accumulation 2)
  1 process x 2 threads  (the same)
  --nproc 2 x 1 thread   (micro-batch MICRO on each rank, no accumulation),
                         the gradient all-reduce overlapping backward
  the same with allreduce_overlap=false (every bucket after backward)
repeated REPEAT times, interleaved (a round runs each once, in that order), so
that the load of other jobs on the machine falls on all of them alike. Per run:
tokens/s over the steps after SKIP (metrics.jsonl's tokens and wall_time),
and for the 2-rank runs the exposed gradient all-reduce time per step
(metrics.jsonl allreduce_time: the training thread's time on it, flattening
and launching in backward's hooks plus finishing after backward; of it,
allreduce_wait waiting) against the step time, and
how many of the buckets started before backward returned; the 1-minute load
average before each run. Then the medians over the rounds, the scaling
efficiency tokens/s(2 ranks) / (2 x tokens/s(1 thread)) and 2 ranks against
2 threads.
Environment: D_MODEL N_LAYERS N_HEADS FFN SEQ MICRO STEPS SKIP BUCKET_MB REPEAT, and RUNS
(a comma-separated subset of p1t1,p1t2,p2t1,p2t1-after).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys


def env_int(name, default):
    return int(os.environ.get(name, default))


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(cli, work, name, extra, threads):
    out = os.path.join(work, name)
    if os.path.exists(out):
        shutil.rmtree(out)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    cmd = [cli, "train", "--config", os.path.join(work, "run.json"), "--out", out] + extra
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("dist_bench: %s failed:\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    lines = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if l.strip()]
    return lines


def summary(lines, skip):
    a, b = lines[skip - 1], lines[-1]
    timed = lines[skip:]
    r = {"tps": (b["tokens"] - a["tokens"]) / (b["wall_time"] - a["wall_time"]),
         "step": (b["wall_time"] - a["wall_time"]) / (b["step"] - a["step"]), "loss": b["loss"]}
    if "allreduce_time" in timed[0]:
        r["ar"] = sum(l["allreduce_time"] for l in timed) / len(timed)
        r["wait"] = sum(l["allreduce_wait"] for l in timed) / len(timed)
        r["buckets"] = timed[-1]["allreduce_buckets"]
        r["early"] = statistics.median(l["allreduce_buckets_in_backward"] for l in timed)
    return r


def describe(r):
    s = "%8.0f tokens/s  %7.1f ms/step" % (r["tps"], r["step"] * 1e3)
    if "ar" in r:
        s += "  all-reduce exposed %6.2f ms/step (%4.1f%% of the step; waiting %6.2f), %g of %d buckets in backward" % (
            r["ar"] * 1e3, 100 * r["ar"] / r["step"], r["wait"] * 1e3, r["early"], r["buckets"])
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    d, layers, heads = env_int("D_MODEL", 256), env_int("N_LAYERS", 4), env_int("N_HEADS", 4)
    ffn, seq, micro = env_int("FFN", 688), env_int("SEQ", 128), env_int("MICRO", 4)
    steps, skip, repeat = env_int("STEPS", 30), env_int("SKIP", 5), env_int("REPEAT", 1)
    bucket_mb = float(os.environ.get("BUCKET_MB", "2"))
    corpus = os.path.join(args.work, "corpus.txt")
    with open(corpus, "w") as f:
        for i in range(4000):
            f.write("Sing, O goddess, the anger of Achilles son of Peleus, that brought countless ills, line %d.\n" % i)
    config = {"model": {"vocab_size": 256, "d_model": d, "n_layers": layers, "n_heads": heads, "ffn_hidden_size": ffn,
                        "max_seq_len": seq},
              "training": {"run_name": "bench", "batch_size": 2 * micro, "micro_batch_size": micro, "seq_len": seq,
                           "max_steps": steps, "eval_every": 0, "save_every": 0, "log_every": 1000,
                           "mixed_precision": "fp32", "device": "cpu", "allreduce_bucket_mb": bucket_mb},
              "data": {"path": corpus, "val_fraction": 0.0}}
    with open(os.path.join(args.work, "run.json"), "w") as f:
        json.dump(config, f)
    params = layers * (4 * d * d + 3 * d * ffn) + 256 * d
    print("config:   d_model %d, %d layers, %d heads, ffn %d, seq %d, batch %d (micro %d): %.2fM parameters, %d steps "
          "(first %d not timed), all-reduce buckets of %g MB, %d round%s" %
          (d, layers, heads, ffn, seq, 2 * micro, micro, params / 1e6, steps, skip, bucket_mb, repeat,
           "" if repeat == 1 else "s"))
    runs = [("1 process x 1 thread", "p1t1", [], 1), ("1 process x 2 threads", "p1t2", [], 2),
            ("2 ranks x 1 thread, overlap", "p2t1", ["--nproc", "2"], 1),
            ("2 ranks x 1 thread, after", "p2t1-after", ["--nproc", "2", "allreduce_overlap=false"], 1)]
    if os.environ.get("RUNS"):
        runs = [r for r in runs if r[1] in os.environ["RUNS"].split(",")]
    results = {name: [] for _, name, _, _ in runs}
    for round_ in range(repeat):
        for label, name, extra, threads in runs:
            load = load1()
            r = summary(run(args.cli, args.work, name, extra, threads), skip)
            r["load"] = load
            results[name].append(r)
            print("round %d  %-29s load %4.2f %s  final loss %.6f" % (round_ + 1, label, load, describe(r), r["loss"]),
                  flush=True)
    med = {}
    print("medians over %d round%s:" % (repeat, "" if repeat == 1 else "s"))
    for label, name, _, _ in runs:
        rs = results[name]
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "loss"}
        m["loss"] = rs[-1]["loss"]
        med[name] = m
        print("  %-29s load %4.2f %s" % (label, m["load"], describe(m)))
    if all(k in med for k in ("p1t1", "p1t2", "p2t1")):
        one, two_threads, two_ranks = med["p1t1"]["tps"], med["p1t2"]["tps"], med["p2t1"]["tps"]
        print("scaling:  2 ranks / 1 thread = %.2fx (efficiency %.0f%%); 2 threads / 1 thread = %.2fx; "
              "2 ranks / 2 threads = %.2fx" % (two_ranks / one, 50 * two_ranks / one, two_threads / one,
                                               two_ranks / two_threads))
    if "p2t1" in med and "p2t1-after" in med:
        print("overlap:  tokens/s overlapping / after backward = %.3fx; exposed all-reduce %.2f -> %.2f ms/step" %
              (med["p2t1"]["tps"] / med["p2t1-after"]["tps"], med["p2t1-after"]["ar"] * 1e3, med["p2t1"]["ar"] * 1e3))
    losses = {r["loss"] for rs in results.values() for r in rs}
    print("loss:     every run ends at the same loss: %s" % ("yes, bit for bit" if len(losses) == 1 else "no"))


if __name__ == "__main__":
    main()
