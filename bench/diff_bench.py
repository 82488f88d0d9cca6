#!/usr/bin/python3
"""Helpers of bench/run_diff_bench.sh (Debian's python3-torch).

    diff_bench.py perturb SRC DST [--blocks I,J]
                                       a perturbed copy of SRC (cached: a stamp
                                       file DST.stamp.json records SRC's size
                                       and mtime; a matching DST is kept);
                                       every model tensor changed (a full
                                       fine-tune), or with --blocks only the
                                       tensors of those blocks (a fine-tune of
                                       the last layers, the rest frozen)
    diff_bench.py python A B [--out F] the Python anchor: torch.load both, then
                                       a per-tensor loop computing the diff's
                                       metrics in float64 (tests/python/
                                       diff_reference.py, the test reference);
                                       prints JSON {"load_s", "loop_s",
                                       "total_s", "peak_rss", "tensors"};
                                       --out F: its per-tensor numbers
    diff_bench.py shard SRC DSTDIR [N] SRC's model state as a Hugging Face
                                       sharded checkpoint (N torch.save shards,
                                       default 4, and pytorch_model.bin.index.json,
                                       as save_pretrained writes them with
                                       safe_serialization=False; every tensor
                                       its own storage); cached as perturb is
    diff_bench.py measure N CMD...     runs CMD N times; prints JSON
                                       {"wall_s": [...], "cpu_s": [user + sys
                                       per run], "peak_rss": bytes (largest
                                       ru_maxrss of a run)}
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

# Bump when the perturbation changes: cached copies are then rewritten.
GENERATOR_VERSION = 1


def perturb(src, dst, blocks=None):
    stamp_path = dst + ".stamp.json"
    st = os.stat(src)
    want = {"generator_version": GENERATOR_VERSION, "src": os.path.basename(src), "src_size": st.st_size,
            "src_mtime": int(st.st_mtime)}
    if blocks is not None:
        want["blocks"] = sorted(blocks)
    if os.path.exists(dst) and os.path.exists(stamp_path):
        try:
            with open(stamp_path) as f:
                have = json.load(f)
            if have.get("stamp") == want and have.get("size") == os.path.getsize(dst):
                print("diff_bench: %s is up to date (%.2f GB), not rewritten" % (dst, have["size"] / 1e9))
                return 0
        except (OSError, ValueError):
            pass
    if os.path.exists(stamp_path):
        os.remove(stamp_path)

    import torch
    t0 = time.perf_counter()
    ckpt = torch.load(src, map_location="cpu")
    g = torch.Generator().manual_seed(4321)
    sd = ckpt["model_state"]
    done = {}
    with torch.no_grad():
        # A fine-tuning-sized change that grows with depth, in place so that
        # the tied lm_head.weight / token_embed.weight stay one storage.
        for name, t in sd.items():
            if t.data_ptr() in done:
                continue
            done[t.data_ptr()] = name
            depth = int(name.split(".")[1]) + 1 if name.startswith("blocks.") else 0
            if blocks is not None and (depth == 0 or depth - 1 not in blocks):
                continue  # frozen
            scale = 1e-3 * (1 + depth) * (float(t.abs().mean()) + 1e-6)
            t.add_(torch.randn(t.shape, generator=g) * scale)
    meta = dict(ckpt["metadata"], step=ckpt["metadata"]["step"] + 1000, loss=2.8123, train_loss=2.8123,
                val_loss=2.8990, stage="sft", learning_rate=1e-5)
    ckpt["metadata"] = meta
    ckpt.update(meta)
    out_dir = os.path.dirname(os.path.abspath(dst))
    scratch = os.path.join(out_dir, ".partial-%d" % os.getpid())
    os.makedirs(scratch, exist_ok=True)
    tmp = os.path.join(scratch, os.path.basename(dst))
    try:
        torch.save(ckpt, tmp)
        os.replace(tmp, dst)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(stamp_path, "w") as f:
        json.dump({"stamp": want, "size": os.path.getsize(dst)}, f, indent=1)
    print("diff_bench: wrote %s (%.2f GB) in %.1f s" % (dst, os.path.getsize(dst) / 1e9, time.perf_counter() - t0))
    return 0


def shard(src, dst, shards=4):
    stamp_path = os.path.join(dst, ".stamp.json")
    st = os.stat(src)
    want = {"generator_version": GENERATOR_VERSION, "src": os.path.basename(src), "src_size": st.st_size,
            "src_mtime": int(st.st_mtime), "shards": shards}
    try:
        with open(stamp_path) as f:
            if json.load(f) == want:
                print("diff_bench: %s is up to date, not rewritten" % dst)
                return 0
    except (OSError, ValueError):
        pass
    import collections
    import torch
    t0 = time.perf_counter()
    sd = torch.load(src, map_location="cpu")["model_state"]
    names = list(sd)
    sizes = {n: sd[n].numel() * sd[n].element_size() for n in names}
    per = sum(sizes.values()) / shards
    groups, group, held = [], [], 0
    for n in names:  # consecutive keys, a shard about the same bytes as the next
        if group and held + sizes[n] > per * 1.05 and len(groups) < shards - 1:
            groups.append(group)
            group, held = [], 0
        group.append(n)
        held += sizes[n]
    groups.append(group)
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    os.makedirs(dst)
    weight_map = collections.OrderedDict()
    for i, g in enumerate(groups):
        file = "pytorch_model-%05d-of-%05d.bin" % (i + 1, len(groups))
        torch.save(collections.OrderedDict((n, sd[n].clone()) for n in g), os.path.join(dst, file))
        for n in g:
            weight_map[n] = file
    with open(os.path.join(dst, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(sizes.values())}, "weight_map": weight_map}, f, indent=2)
    with open(stamp_path, "w") as f:
        json.dump(want, f)
    print("diff_bench: wrote %s (%d shards) in %.1f s" % (dst, len(groups), time.perf_counter() - t0))
    return 0


def python_anchor(a, b, out=None):
    import torch
    import diff_reference
    torch.set_num_threads(2)
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = ru0.ru_utime + ru0.ru_stime  # torch's import is not counted
    t0 = time.perf_counter()
    ca = torch.load(a, map_location="cpu")
    cb = torch.load(b, map_location="cpu")
    t1 = time.perf_counter()
    # The same work as the C++ diff: names matched after stripping
    # _orig_mod., per-tensor metrics in float64 with NaN/inf masked, ties
    # once, per-block sums, metadata flattened.
    res = diff_reference.diff_objects(ca, cb)
    t2 = time.perf_counter()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    rss = ru.ru_maxrss * 1024
    if out:  # the numbers, for the report to check ours against
        with open(out, "w") as f:
            json.dump(diff_reference._json_safe(res["tensors"]), f)
    print(json.dumps({"load_s": t1 - t0, "loop_s": t2 - t1, "total_s": t2 - t0, "peak_rss": rss,
                      "cpu_s": ru.ru_utime + ru.ru_stime - cpu0,
                      "tensors": len(res["tensors"]), "torch": torch.__version__,
                      "threads": torch.get_num_threads()}))
    return 0


def measure(n, cmd):
    walls, cpus, peak = [], [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        walls.append(time.perf_counter() - t0)
        if os.waitstatus_to_exitcode(status) != 0:
            print("diff_bench: %s exited with %d" % (" ".join(cmd), os.waitstatus_to_exitcode(status)),
                  file=sys.stderr)
            return 1
        peak = max(peak, ru.ru_maxrss * 1024)
        cpus.append(ru.ru_utime + ru.ru_stime)
    print(json.dumps({"wall_s": walls, "cpu_s": cpus, "peak_rss": peak}))
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "perturb":
        blocks = None
        if len(argv) >= 6 and argv[4] == "--blocks":
            blocks = [int(b) for b in argv[5].split(",")]
        return perturb(argv[2], argv[3], blocks)
    if len(argv) >= 4 and argv[1] == "shard":
        return shard(argv[2], argv[3], int(argv[4]) if len(argv) >= 5 else 4)
    if len(argv) >= 4 and argv[1] == "python":
        return python_anchor(argv[2], argv[3], argv[5] if len(argv) >= 6 and argv[4] == "--out" else None)
    if len(argv) >= 4 and argv[1] == "measure":
        return measure(int(argv[2]), argv[3:])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
