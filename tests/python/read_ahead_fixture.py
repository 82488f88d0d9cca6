"""Checkpoints for tst_read_ahead, written by torch.save as a training script
writes them, enough of them that the listing reads them in batches; prints
what each file is (the truth the test checks listings against).

  write DIR   four runs of small checkpoints; a file saved by the legacy
              (non-zip) writer; one larger than the 64 KiB a file is read
              whole up to; one that would run code if unpickled; one that
              is not a checkpoint; an empty one; a symlink to a checkpoint
"""
import json
import os
import sys

import torch


class RunsCode:
    """Unpickling this would call os.system: torch.save writes the global."""

    def __reduce__(self):
        return (os.system, ("true",))


def checkpoint(step, loss, width=4):
    torch.manual_seed(step)
    return {
        "step": step,
        "loss": loss,
        "model": {"w": torch.randn(width, width), "b": torch.zeros(width)},
    }


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "write":
        raise SystemExit(__doc__)
    root = sys.argv[2]
    truth = {}

    def record(rel, step, loss, verdict):
        path = os.path.join(root, rel)
        truth[rel] = {"step": step, "loss": loss, "verdict": verdict,
                      "size": os.stat(path).st_size}

    for index, run in enumerate(("lr1e-3_seed0", "lr1e-3_seed1", "lr3e-4_seed0", "lr3e-4_seed1")):
        os.makedirs(os.path.join(root, run), exist_ok=True)
        for step in range(100, 900, 100):
            loss = round(3.0 - step / 1000 + index / 100, 6)
            rel = f"{run}/step_{step}.pt"
            torch.save(checkpoint(step, loss), os.path.join(root, rel))
            record(rel, step, loss, "safe")
    odd = "odd"
    os.makedirs(os.path.join(root, odd))
    rel = f"{odd}/step_10.pt"
    torch.save(checkpoint(10, 2.5), os.path.join(root, rel), _use_new_zipfile_serialization=False)
    record(rel, 10, 2.5, "safe")
    rel = f"{odd}/step_20.pt"  # 160x160 float32: 100 KiB of tensor bytes
    torch.save(checkpoint(20, 2.25, width=160), os.path.join(root, rel))
    record(rel, 20, 2.25, "safe")
    assert truth[rel]["size"] > 64 * 1024
    rel = f"{odd}/step_30.pt"
    state = checkpoint(30, 2.0)
    state["extra"] = RunsCode()
    torch.save(state, os.path.join(root, rel))
    record(rel, 30, 2.0, "dangerous")
    rel = f"{odd}/step_40.pt"
    with open(os.path.join(root, rel), "wb") as f:
        f.write(b"PK\x03\x04 this is not a checkpoint")
    record(rel, 40, None, "unreadable")
    rel = f"{odd}/step_50.pt"
    open(os.path.join(root, rel), "wb").close()
    record(rel, 50, None, "unreadable")
    rel = f"{odd}/step_60.pt"
    os.symlink(os.path.join(root, "lr1e-3_seed0", "step_100.pt"), os.path.join(root, rel))
    record(rel, 100, truth["lr1e-3_seed0/step_100.pt"]["loss"], "safe")
    print(json.dumps(truth))


if __name__ == "__main__":
    main()
