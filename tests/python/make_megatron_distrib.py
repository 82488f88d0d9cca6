#!/usr/bin/python3
"""Megatron-LM saves with the distributed optimizer, clean and with a
distrib_optim.pt that would run a shell command when torch.load reads it.

    /usr/bin/python3 make_megatron_distrib.py OUTDIR

Megatron-LM's distributed optimizer (megatron/training/checkpointing.py,
get_distributed_optimizer_checkpoint_name) writes distrib_optim.pt beside
each rank's model_optim_rng.pt; torch.load unpickles both when the save is
loaded, so a safety scan of the save must walk both.

  OUTDIR/clean/iter_0000050/      2 pipeline stages (mp_rank_00_000,
      mp_rank_00_001), each model_optim_rng.pt + distrib_optim.pt, as
      make_megatron_titan.py writes them
  OUTDIR/dangerous/iter_0000050/  the same, but mp_rank_00_001's
      distrib_optim.pt also holds an object whose __reduce__ is os.system
      (pickled as the global posix.system): never loaded here

OUTDIR/expected.json: per folder its files (relative), and for the clean
one the zip records (zipfile's namelist) and tensors (distinct tensors
torch.load finds walking each file's object) summed over its files.
"""
import argparse
import json
import os
import shutil
import sys
import zipfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_megatron_titan as mt  # noqa: E402  Megatron's rank files, as Megatron writes them


def tensors_in(obj, seen, depth=0):
    """Distinct tensors reachable from what torch.load returned."""
    if depth > 64:
        return
    if torch.is_tensor(obj):
        seen.add(id(obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            tensors_in(k, seen, depth + 1)
            tensors_in(v, seen, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            tensors_in(v, seen, depth + 1)
    elif isinstance(obj, argparse.Namespace):
        tensors_in(vars(obj), seen, depth + 1)


def files_of(iteration_dir):
    out = []
    for rank in sorted(os.listdir(iteration_dir)):
        for name in ("model_optim_rng.pt", "distrib_optim.pt"):
            if os.path.isfile(os.path.join(iteration_dir, rank, name)):
                out.append(rank + "/" + name)
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    mt.megatron_save(os.path.join(out, "clean"), 50, 1, 2, 1e-4, tracker="50")
    clean = os.path.join(out, "clean", "iter_0000050")
    files = files_of(clean)
    records, tensors = 0, 0
    for f in files:
        path = os.path.join(clean, f)
        with zipfile.ZipFile(path) as z:
            records += len(z.namelist())
        seen = set()
        tensors_in(torch.load(path), seen)  # written just above: nothing foreign is unpickled
        tensors += len(seen)

    shutil.copytree(os.path.join(out, "clean"), os.path.join(out, "dangerous"))
    bad_file = "mp_rank_00_001/distrib_optim.pt"
    bad = os.path.join(out, "dangerous", "iter_0000050", bad_file)
    state = torch.load(bad)  # the clean copy's, written above
    state["extra"] = mt.Payload()  # os.system('echo megatron-args') if unpickled
    torch.save(state, bad)

    expected = {"clean": {"folder": "clean/iter_0000050", "files": files, "records": records,
                          "tensors": tensors},
                "dangerous": {"folder": "dangerous/iter_0000050", "files": files,
                              "file": bad_file,
                              "global": os.system.__module__ + "." + os.system.__name__}}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
