#!/usr/bin/python3
"""Runs as Hugging Face Accelerate's Accelerator.save_state leaves them.

    /usr/bin/python3 make_accelerate.py OUTDIR

accelerate/checkpointing.py save_accelerator_state(output_dir, ...) writes,
for the first prepared model, optimizer, scheduler and process:
model.safetensors (save_file of the unwrapped state dict; pytorch_model.bin
without safe_serialization), optimizer.bin and scheduler.bin (torch.save of
their state_dict()), sampler.bin, scaler.pt (GradScaler.state_dict() under
fp16) and random_states_0.pkl (torch.save of {"random_state",
"numpy_random_seed", "torch_manual_seed", "torch_cuda_manual_seed"?}).
Accelerate is not installed: the same objects are saved with torch.

  OUTDIR/acc/manual/step_{50,100}/      the examples' naming
                                        (accelerator.save_state(f"step_{completed_steps}"))
  OUTDIR/acc/auto/checkpoints/checkpoint_{0,1}/
                                        ProjectConfiguration(project_dir="auto",
                                        automatic_checkpoint_naming=True): the
                                        i-th save, at steps 30 and 60

expected.json: per run the checkpoints' folders and steps (the folder name's,
else AdamW's own `step` read back with torch.load), and torch's rel_l2 of
each weight between a run's two checkpoints.
"""
import json
import os
import random
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_diff_fixtures import write_safetensors  # noqa: E402


def save_state(folder, model, opt, sched, scaler):
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      {k: v.detach().clone() for k, v in model.state_dict().items()}, {"format": "pt"})
    torch.save(opt.state_dict(), os.path.join(folder, "optimizer.bin"))
    torch.save(sched.state_dict(), os.path.join(folder, "scheduler.bin"))
    torch.save(scaler, os.path.join(folder, "scaler.pt"))
    torch.save({"random_state": random.getstate(), "numpy_random_seed": np.random.get_state(),
                "torch_manual_seed": torch.get_rng_state()}, os.path.join(folder, "random_states_0.pkl"))


def train(run, folders_at, seed):
    """AdamW steps on a tiny model, save_state at the given steps."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    states, out = {}, []
    for step in range(1, max(folders_at) + 1):
        loss = model(torch.randn(3, 4)).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step in folders_at:
            folder = folders_at[step]
            save_state(os.path.join(run, folder), model, opt, sched,
                       {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                        "growth_interval": 2000, "_growth_tracker": step})
            saved = torch.load(os.path.join(run, folder, "optimizer.bin"))
            adam_step = int(next(iter(saved["state"].values()))["step"])
            out.append({"folder": folder, "step": adam_step})
            states[folder] = {k: v.detach().clone() for k, v in model.state_dict().items()}
    a, b = (states[c["folder"]] for c in out)
    rel = {n: float((b[n].double() - a[n].double()).norm() / a[n].double().norm()) for n in a}
    return {"checkpoints": out, "rel_l2": rel}


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = os.path.join(argv[1], "acc")
    shutil.rmtree(root, ignore_errors=True)
    expected = {
        "manual": train(os.path.join(root, "manual"), {50: "step_50", 100: "step_100"}, 1),
        "auto": train(os.path.join(root, "auto"),
                      {30: "checkpoints/checkpoint_0", 60: "checkpoints/checkpoint_1"}, 2),
    }
    with open(os.path.join(argv[1], "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
