#!/usr/bin/python3
"""Does a file CkptScope wrote hold the tensors torch saved?

Usage: /usr/bin/python3 legacy_check.py FILE legacy.json

FILE (our consolidate output, a torch zip, of a checkpoint make_legacy.py
wrote from plain tensors: nothing in it can run code) is loaded with
torch.load (1.13's weights_only unpickler lacks BINFLOAT, which the float
metadata needs) and walked as make_legacy.py walks the checkpoint it
saved (tensor_walk.py); every tensor's path, dtype, shape, byte count and
crc32 must equal legacy.json's. Prints the differences; exit status 1 when
there are any.
"""
import json
import sys

import torch

from tensor_walk import describe


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: legacy_check.py FILE legacy.json")
    got = describe(torch.load(sys.argv[1]))
    with open(sys.argv[2]) as f:
        want = json.load(f)["tensors"]
    problems = [f"{w['path']}: torch saved {w}, the file holds {g}" for w, g in zip(want, got) if w != g]
    if len(got) != len(want):
        problems.append(f"{len(got)} tensors in the file, torch saved {len(want)}")
    for p in problems:
        print(p)
    print(f"legacy_check: {len(got)} tensors, {len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
