#!/usr/bin/python3
"""Data-parallel scaling on the CPU: one process against two Gloo ranks.

    dist_bench.py --cli CKPTSCOPE_CLI --work DIR

Three runs of the same training (same config, batch, data order):
  1 process x 1 thread   (micro-batch MICRO x accumulation 2)
  1 process x 2 threads  (the same)
  --nproc 2 x 1 thread   (micro-batch MICRO on each rank, no accumulation)
and per run tokens/s over the steps after SKIP (metrics.jsonl's tokens and
wall_time), the scaling efficiency tokens/s(2 ranks) / (2 x tokens/s(1
thread)), 2 ranks against 2 threads, and for the 2-rank run the gradient
all-reduce time per step (metrics.jsonl allreduce_time) against the step time.
Environment: D_MODEL N_LAYERS N_HEADS FFN SEQ MICRO STEPS SKIP.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def env_int(name, default):
    return int(os.environ.get(name, default))


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
    tps = (b["tokens"] - a["tokens"]) / (b["wall_time"] - a["wall_time"])
    step = (b["wall_time"] - a["wall_time"]) / (b["step"] - a["step"])
    ar = [l["allreduce_time"] for l in lines[skip:] if "allreduce_time" in l]
    return tps, step, (sum(ar) / len(ar) if ar else None), b["loss"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    d, layers, heads = env_int("D_MODEL", 256), env_int("N_LAYERS", 4), env_int("N_HEADS", 4)
    ffn, seq, micro = env_int("FFN", 688), env_int("SEQ", 128), env_int("MICRO", 4)
    steps, skip = env_int("STEPS", 30), env_int("SKIP", 5)
    corpus = os.path.join(args.work, "corpus.txt")
    with open(corpus, "w") as f:
        for i in range(4000):
            f.write("Sing, O goddess, the anger of Achilles son of Peleus, that brought countless ills, line %d.\n" % i)
    config = {"model": {"vocab_size": 256, "d_model": d, "n_layers": layers, "n_heads": heads, "ffn_hidden_size": ffn,
                        "max_seq_len": seq},
              "training": {"run_name": "bench", "batch_size": 2 * micro, "micro_batch_size": micro, "seq_len": seq,
                           "max_steps": steps, "eval_every": 0, "save_every": 0, "log_every": 1000,
                           "mixed_precision": "fp32", "device": "cpu"},
              "data": {"path": corpus, "val_fraction": 0.0}}
    with open(os.path.join(args.work, "run.json"), "w") as f:
        json.dump(config, f)
    params = layers * (4 * d * d + 3 * d * ffn) + 256 * d
    print("config:   d_model %d, %d layers, %d heads, ffn %d, seq %d, batch %d (micro %d): %.2fM parameters, %d steps "
          "(first %d not timed)" % (d, layers, heads, ffn, seq, 2 * micro, micro, params / 1e6, steps, skip))
    runs = [("1 process x 1 thread", "p1t1", [], 1), ("1 process x 2 threads", "p1t2", [], 2),
            ("2 ranks x 1 thread (gloo)", "p2t1", ["--nproc", "2"], 1)]
    results = {}
    for label, name, extra, threads in runs:
        results[name] = summary(run(args.cli, args.work, name, extra, threads), skip)
        tps, step, ar, loss = results[name]
        print("%-27s %8.0f tokens/s  %7.1f ms/step%s  final loss %.6f" %
              (label, tps, step * 1e3, "" if ar is None else "  all-reduce %.2f ms/step (%.1f%% of the step)" %
               (ar * 1e3, 100 * ar / step), loss))
    one, two_threads, two_ranks = results["p1t1"][0], results["p1t2"][0], results["p2t1"][0]
    print("scaling:  2 ranks / 1 thread = %.2fx (efficiency %.0f%%); 2 threads / 1 thread = %.2fx; "
          "2 ranks / 2 threads = %.2fx" % (two_ranks / one, 50 * two_ranks / one, two_threads / one, two_ranks / two_threads))
    same = results["p1t1"][3] == results["p2t1"][3]
    print("loss:     2 ranks and 1 process end at the same loss: %s" % ("yes, bit for bit" if same else "no"))


if __name__ == "__main__":
    main()
