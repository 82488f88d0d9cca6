#!/usr/bin/python3
"""Python anchors for the reader benchmarks; prints one JSON object.

    /usr/bin/python3 bench/python_anchors.py FILE [--dir DIR] [--load-runs N]
        [--lazy-iters N] [--launches N] [--skip-torch-load]

(a) torch.load(FILE, map_location="cpu") in a fresh process per run (torch
    imported before the clock starts; one uncounted run first warms the page
    cache): wall time of the call and the growth of the peak RSS (ru_maxrss
    after minus before) of that process.
(b) The best Python can do without reading tensor bytes: zipfile + a
    pickle.Unpickler whose persistent_load returns a placeholder and whose
    find_class turns torch's rebuild functions into (dtype, shape) tuples; then
    the same work the C++ side does: step, loss, config, and every tensor's
    name, dtype and shape. Timed in-process (median after a warm-up) and as a
    fresh `/usr/bin/python3 THIS_SCRIPT --lazy-once FILE` process (median of
    launches, interpreter start-up included; also its ru_maxrss growth over
    the read). torch is never imported there.
(c) With --dir: the lazy read of every *.pt file in DIR in one process (the
    Python counterpart of `ckptscope-cli ls DIR`), median of a few passes.
"""
# Only what the lazy reader needs is imported at the top: the fresh-process
# figure runs this file, and json / statistics / subprocess would add their
# own import time to it.
import builtins
import collections
import io
import os
import pickle
import sys
import zipfile

PYTHON = "/usr/bin/python3"  # Debian's python3 with python3-torch


# --------------------------------------------------------------------------
# (b) the lazy reader: no torch import, no tensor byte read

_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
    "UntypedStorage": "uint8",
}


class LazyTensor(tuple):
    """(dtype, shape): all a listing needs."""
    __slots__ = ()


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, hooks=None, metadata=None):
    return LazyTensor((storage, tuple(size)))


def _rebuild_parameter(data, requires_grad=False, hooks=None, state=None):
    return data


class _Opaque:
    """Any other global: remembered by name, never imported."""

    def __init__(self, *args, **kwargs):
        self.args = args

    def __setstate__(self, state):
        self.state = state


def _opaque_class(module, name):
    return type(name, (_Opaque,), {"__module__": module})


class LazyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch" and name.endswith("Storage"):
            return _STORAGE_DTYPES.get(name, name)  # the storage "class" is just its dtype name
        if module in ("builtins", "__builtin__") and name in ("set", "frozenset", "complex", "bytearray", "slice"):
            return getattr(builtins, name)
        return _opaque_class(module, name)

    def persistent_load(self, pid):
        # ('storage', dtype-name, key, location, numel): the dtype is all we keep.
        return pid[1]


def lazy_load(path):
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        root = names[0].split("/", 1)[0]
        data = zf.read(root + "/data.pkl")
    return LazyUnpickler(io.BytesIO(data)).load()


def walk_tensors(obj, prefix, out, seen):
    if isinstance(obj, LazyTensor):
        out.append((prefix, obj[0], obj[1]))
        return
    if id(obj) in seen:
        return
    if isinstance(obj, dict):
        seen.add(id(obj))
        for k, v in obj.items():
            walk_tensors(v, prefix + "." + str(k) if prefix else str(k), out, seen)
    elif isinstance(obj, (list, tuple)):
        seen.add(id(obj))
        for i, v in enumerate(obj):
            walk_tensors(v, prefix + "." + str(i) if prefix else str(i), out, seen)


def lazy_describe(path):
    """What a listing and `info` need: step, loss, config, every tensor's name/dtype/shape."""
    ckpt = lazy_load(path)
    meta = ckpt.get("metadata", {}) if isinstance(ckpt, dict) else {}
    step = ckpt.get("step", meta.get("step"))
    loss = ckpt.get("loss", meta.get("loss"))
    config = ckpt.get("config", meta.get("config"))
    tensors = []
    walk_tensors(ckpt, "", tensors, set())
    return step, loss, config, tensors


def vmrss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


# --------------------------------------------------------------------------
# (a) torch.load in a fresh process

_TORCH_LOAD_CHILD = r"""
import json, resource, sys, time
import torch
def vmrss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
path = sys.argv[1]
before, rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, vmrss_kb()
t = time.perf_counter()
obj = torch.load(path, map_location="cpu")
dt = time.perf_counter() - t
after, rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, vmrss_kb()
print(json.dumps({"seconds": dt, "peak_rss_growth_kb": after - before, "peak_rss_kb": after,
                  "vmrss_growth_kb": rss_after - rss_before, "torch": torch.__version__}))
"""


def torch_load_anchor(path, runs):
    import json, statistics, subprocess
    # One run first, not counted: it brings the 1.8 GB into the page cache
    # (the other figures read a warm file too).
    subprocess.run([PYTHON, "-c", _TORCH_LOAD_CHILD, path], check=True, capture_output=True, text=True)
    results = []
    for _ in range(runs):
        out = subprocess.run([PYTHON, "-c", _TORCH_LOAD_CHILD, path], check=True, capture_output=True, text=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "runs": runs,
        "seconds_median": statistics.median(r["seconds"] for r in results),
        "seconds_all": [round(r["seconds"], 4) for r in results],
        "peak_rss_growth_mb_median": statistics.median(r["peak_rss_growth_kb"] for r in results) / 1024.0,
        "peak_rss_mb_median": statistics.median(r["peak_rss_kb"] for r in results) / 1024.0,
        "vmrss_growth_mb_median": statistics.median(r["vmrss_growth_kb"] for r in results) / 1024.0,
        "torch_version": results[0]["torch"],
    }


def lazy_in_process(path, iters):
    import statistics, time
    for _ in range(max(3, iters // 10)):  # warm-up: page cache, imports, allocator
        lazy_describe(path)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        lazy_describe(path)
        times.append(time.perf_counter() - t)
    step, loss, config, tensors = lazy_describe(path)
    return {
        "iters": iters,
        "ms_median": statistics.median(times) * 1e3,
        "ms_min": min(times) * 1e3,
        "tensors": len(tensors),
        "step": step,
        "loss": loss,
        "config_keys": len(config) if isinstance(config, dict) else None,
    }


def lazy_fresh_process(path, launches):
    import statistics, subprocess, time
    cmd = [PYTHON, os.path.abspath(__file__), "--lazy-once", path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)  # warm-up
    times = []
    for _ in range(launches):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    # Interpreter start-up alone, for reference.
    bare = []
    for _ in range(launches):
        t = time.perf_counter()
        subprocess.run([PYTHON, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t)
    once = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    return {"launches": launches, "ms_median": statistics.median(times) * 1e3, "ms_min": min(times) * 1e3,
            "python_startup_ms_median": statistics.median(bare) * 1e3,
            "peak_rss_growth_mb": int(once[4]) / 1024.0, "peak_rss_mb": int(once[5]) / 1024.0,
            "vmrss_growth_mb": int(once[6]) / 1024.0}


def lazy_directory(directory, passes):
    import statistics, time
    files = sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".pt"))
    for f in files[:5]:
        lazy_describe(f)
    times = []
    for _ in range(passes):
        t = time.perf_counter()
        for f in files:
            step, loss, _, _ = lazy_describe(f)
        times.append(time.perf_counter() - t)
    return {"files": len(files), "passes": passes, "s_median": statistics.median(times), "s_min": min(times)}


def main(argv):
    if len(argv) >= 3 and argv[1] == "--lazy-once":
        import resource
        before, rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, vmrss_kb()
        step, loss, config, tensors = lazy_describe(argv[2])
        after, rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, vmrss_kb()
        # step, loss, config keys, tensors, peak RSS growth (kB), peak RSS (kB),
        # VmRSS growth with the result alive (kB)
        print(step, loss, len(config or {}), len(tensors), after - before, after, rss_after - rss_before)
        return 0
    import json
    args, opts = [], {}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--dir", "--load-runs", "--lazy-iters", "--launches", "--dir-passes"):
            opts[a] = argv[i + 1]
            i += 2
        elif a.startswith("--"):
            opts[a] = True
            i += 1
        else:
            args.append(a)
            i += 1
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = args[0]
    result = {"file": path, "file_bytes": os.path.getsize(path), "python": sys.version.split()[0]}
    with zipfile.ZipFile(path) as zf:
        info = zf.infolist()
        pkl = [z for z in info if z.filename.endswith("/data.pkl")][0]
        result["zip_entries"] = len(info)
        result["data_pkl_bytes"] = pkl.file_size
    result["lazy_in_process"] = lazy_in_process(path, int(opts.get("--lazy-iters", 200)))
    result["lazy_fresh_process"] = lazy_fresh_process(path, int(opts.get("--launches", 10)))
    if "--dir" in opts:
        result["lazy_directory"] = lazy_directory(opts["--dir"], int(opts.get("--dir-passes", 3)))
    if "--skip-torch-load" not in opts:
        result["torch_load"] = torch_load_anchor(path, int(opts.get("--load-runs", 3)))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
