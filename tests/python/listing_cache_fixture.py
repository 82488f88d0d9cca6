"""Checkpoints for tst_listing_cache, written by torch.save as a training
script writes them; prints what each file holds (the truth the test checks
listings against).

  write DIR                   three runs of small checkpoints, one that would
                              run code if unpickled, one that is not a
                              checkpoint
  rewrite FILE STEP LOSS [dangerous]
                              torch.save over FILE in place (same path, same
                              inode: torch.save truncates and writes)
"""
import json
import os
import sys

import torch


class RunsCode:
    """Unpickling this would call os.system: torch.save writes the global."""

    def __reduce__(self):
        return (os.system, ("true",))


def checkpoint(step, loss, dangerous=False):
    torch.manual_seed(step)
    state = {
        "step": step,
        "loss": loss,
        "model": {"w": torch.randn(4, 4), "b": torch.zeros(4)},
    }
    if dangerous:
        state["extra"] = RunsCode()
    return state


def main():
    if sys.argv[1] == "write":
        root = sys.argv[2]
        truth = {}
        for index, run in enumerate(("lr1e-3_seed0", "lr1e-3_seed1", "lr3e-4_seed0")):
            os.makedirs(os.path.join(root, run), exist_ok=True)
            for step in (100, 200, 300):
                loss = round(3.0 - step / 1000 + index / 100, 6)
                rel = f"{run}/step_{step}.pt"
                torch.save(checkpoint(step, loss), os.path.join(root, rel))
                truth[rel] = {"step": step, "loss": loss, "verdict": "safe"}
        rel = "lr3e-4_seed0/step_400.pt"
        torch.save(checkpoint(400, 1.5, dangerous=True), os.path.join(root, rel))
        truth[rel] = {"step": 400, "loss": 1.5, "verdict": "dangerous"}
        rel = "lr3e-4_seed0/step_500.pt"
        with open(os.path.join(root, rel), "wb") as f:
            f.write(b"PK\x03\x04 this is not a checkpoint")
        truth[rel] = {"step": 500, "loss": None, "verdict": "unreadable"}
        print(json.dumps(truth))
    elif sys.argv[1] == "rewrite":
        path, step, loss = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
        dangerous = len(sys.argv) > 5 and sys.argv[5] == "dangerous"
        before = os.stat(path).st_ino
        torch.save(checkpoint(step, loss, dangerous), path)
        assert os.stat(path).st_ino == before, "torch.save replaced the file"
        print(json.dumps({"step": step, "loss": loss, "size": os.stat(path).st_size}))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
