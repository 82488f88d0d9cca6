#!/usr/bin/python3
"""The Python anchor for `ckptscope-cli scan`: a scanner that walks pickle
opcodes with pickletools.genops (as picklescan and modelscan do) over the
same records: every .pkl record of a zip, the pickles of a legacy file, a
plain pickle. Globals are judged against a small allow-list; nothing is
unpickled.

    python3 bench/scan_anchor.py DIR   (prints one line per file and a summary,
                                         then `anchor-seconds: S` for the walk)
"""
import os
import pickletools
import sys
import time
import zipfile

SAFE = {
    ("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_parameter"),
    ("torch", "FloatStorage"), ("torch", "HalfStorage"), ("torch", "BFloat16Storage"), ("torch", "LongStorage"),
    ("torch", "IntStorage"), ("torch", "ByteStorage"), ("torch", "BoolStorage"), ("torch", "DoubleStorage"),
    ("torch", "Size"), ("torch", "device"), ("_codecs", "encode"), ("torch", "float32"), ("torch", "bfloat16"),
}
DANGEROUS_MODULES = ("os", "posix", "nt", "subprocess", "sys", "socket", "runpy", "importlib", "pickle", "_pickle",
                     "shutil", "requests", "webbrowser", "asyncio", "code", "pty", "timeit", "ctypes")
DANGEROUS_NAMES = {("builtins", n) for n in ("eval", "exec", "compile", "getattr", "__import__", "open")}


def globals_of(data):
    """(module, name, offset) for GLOBAL / INST / STACK_GLOBAL (the two most
    recent strings, as picklescan resolves them)."""
    out, strings = [], []
    for op, arg, pos in pickletools.genops(data):
        name = op.name
        if name in ("GLOBAL", "INST"):
            module, _, attr = arg.partition(" ")
            out.append((module, attr, pos))
        elif name == "STACK_GLOBAL":
            if len(strings) >= 2:
                out.append((strings[-2], strings[-1], pos))
        elif isinstance(arg, str) and "UNICODE" in name or name in ("STRING", "BINSTRING", "SHORT_BINSTRING"):
            strings.append(arg)
    return out


def level(module, name):
    if (module, name) in SAFE:
        return "innocuous"
    if (module, name) in DANGEROUS_NAMES or module.split(".")[0] in DANGEROUS_MODULES:
        return "dangerous"
    return "suspicious"


def pickles_of(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:2] == b"PK":
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if info.filename.endswith(".pkl"):
                    yield info.filename, z.read(info)
        return
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    for i in range(5):
        if pos >= len(data) or data[pos] != 0x80:
            break
        end = None
        for op, arg, p in pickletools.genops(data[pos:]):
            if op.name == "STOP":
                end = p + 1
                break
        yield f"pickle {i + 1}", data[pos:pos + end]
        pos += end


def main():
    root = sys.argv[1]
    files = []
    for d, _, names in os.walk(root):
        files += [os.path.join(d, n) for n in names if n.endswith((".pt", ".pkl", ".bin", ".pth"))]
    files.sort()
    t0 = time.perf_counter()
    counts = {}
    for path in files:
        worst = "safe"
        for record, data in pickles_of(path):
            for module, name, off in globals_of(data):
                lv = level(module, name)
                if lv == "dangerous":
                    worst = "dangerous"
                elif lv == "suspicious" and worst == "safe":
                    worst = "suspicious"
        counts[worst] = counts.get(worst, 0) + 1
        print(worst, path)
    t1 = time.perf_counter()
    print(f"{len(files)} files: {counts}")
    print(f"anchor-seconds: {t1 - t0:.4f}")


if __name__ == "__main__":
    main()
