#!/usr/bin/python3
"""torch against CkptScope on many files: what each read, compared.

Usage: /usr/bin/python3 differential.py OURS.json REPORT.json

OURS.json (written by tests/core/tst_differential.cpp) is a list of
  {"file": path, "exit": ckptscope-cli info's exit status,
   "stderr": what it printed there,
   "tensors": [{"path", "dtype", "shape", "nbytes", "crc32"}] when it exited 0,
   "trusted": true for a file a fixture script wrote from plain objects}.
Each file is loaded with torch.load(weights_only=True) - never without
unless trusted (see torch_answer): many of these files are built to run
code when unpickled, and the restricted unpickler calls nothing outside its
allow-list - and walked as tensor_walk.py walks it. The rule:
  torch reads it and we exit 0      -> the same tensors (path, dtype, shape,
                                       byte count, crc32 of the bytes);
  we exit non-zero                  -> one line on stderr (torch may or
                                       may not read it: listed either way);
  torch refuses it and we exit 0    -> listed (we read more than 1.13's
                                       restricted unpickler: plain pickles,
                                       opaque objects, protocols 4/5 ...).
REPORT.json: {"compared", "agreed", "agreed_files", "problems": [text], "we_refused":
[[file, our line, torch's answer]], "torch_refused": [[file, torch's error,
our tensor count]]}.
"""
import json
import pickle
import resource
import signal
import sys
import warnings

import torch

from tensor_walk import describe


# torch's restricted unpickler has no caps of its own: the suite's memo and
# MARK bombs take it past 20 GB. Capped here, a bomb is a refusal.
MEMORY_CAP = 6 << 30
SECONDS_PER_FILE = 120


def on_alarm(signum, frame):
    raise TimeoutError(f"torch.load took more than {SECONDS_PER_FILE} s")


def torch_answer(path, trusted):
    """(tensors, None) or (None, why torch refused). A trusted file (written
    by a fixture script from plain objects: no hostile or mutated file ever
    is) that 1.13's restricted unpickler refuses for want of an opcode it
    lacks (BINFLOAT, FRAME, protocol 0/1 text opcodes) is then loaded in
    full; every other file only with weights_only=True."""
    try:
        signal.alarm(SECONDS_PER_FILE)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    return describe(torch.load(path, weights_only=True, map_location="cpu")), None
                except pickle.UnpicklingError as e:
                    if not (trusted and "Unsupported operand" in str(e)):
                        raise
                return describe(torch.load(path, map_location="cpu")), None
        finally:
            signal.alarm(0)  # before the handler below: it must not be cut short
    except Exception as e:  # noqa: BLE001 - any refusal is the answer
        text = str(e).split("trusted source.")[-1].strip() or type(e).__name__
        return None, " ".join(f"{type(e).__name__}: {text}".split())[:200]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: differential.py OURS.json REPORT.json")
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    signal.signal(signal.SIGALRM, on_alarm)
    with open(sys.argv[1]) as f:
        ours = json.load(f)
    report = {"compared": 0, "agreed": 0, "agreed_files": [], "problems": [], "we_refused": [], "torch_refused": []}
    for entry in ours:
        path = entry["file"]
        theirs, error = torch_answer(path, entry.get("trusted", False))
        report["compared"] += 1
        if entry["exit"] != 0:
            lines = entry["stderr"].strip().splitlines()
            if len(lines) != 1:
                report["problems"].append(f"{path}: exit {entry['exit']} with {len(lines)} lines on stderr")
            report["we_refused"].append([path, lines[0] if lines else "", error or "torch reads it"])
            continue
        if theirs is None:
            report["torch_refused"].append([path, error, len(entry["tensors"])])
            continue
        mine = entry["tensors"]
        if len(mine) < len(theirs):
            report["problems"].append(f"{path}: exit 0 with {len(mine)} tensors, torch sees {len(theirs)}")
        if mine == theirs:
            report["agreed"] += 1
            report["agreed_files"].append(path)
            continue
        differing = [f"{t['path']}: torch {t}, we {m}" for t, m in zip(theirs, mine) if t != m]
        if len(mine) != len(theirs):
            differing.append(f"{len(mine)} tensors, torch {len(theirs)}")
        report["problems"].append(f"{path}: " + "; ".join(differing[:3]))
    with open(sys.argv[2], "w") as f:
        json.dump(report, f, indent=1)
    print(f"differential: {report['compared']} files, {report['agreed']} agreed, "
          f"{len(report['we_refused'])} refused by us, {len(report['torch_refused'])} refused by torch only, "
          f"{len(report['problems'])} problems")


if __name__ == "__main__":
    main()
