"""DeepSpeed tag folders for make_sharded.py, written as DeepSpeed's engine
saves them (FORMAT.md section 7), without DeepSpeed: its enum and loss
scaler are stand-ins with DeepSpeed's module and class names.

The model is make_sharded.py's state dict: its float32 tensors of one or
more dimensions are the trained parameters (in two parameter groups), the
rest are buffers. The engine's `module` holds the parameters in bfloat16;
the fp32 masters are split over the ranks' optimizer files:
- ZeRO-1/2: per group, the parameters flattened and concatenated, padded to
  a multiple of 2 x world, each rank one equal partition
  (single_partition_of_fp32_groups);
- ZeRO-3: each parameter split into ceil(numel / world) pieces, zero padded,
  rank r's piece of every parameter concatenated per group (fp32_flat_groups);
  the module's parameters are empty placeholders.

Layouts (under OUTDIR):
  ds_z2_ws{1,2,3}/global_step1000/  (ws2: the bf16 optimizer's files, bf16_zero_pp_rank_*)
  ds_z3_ws{1,2,3}/global_step1000/
  ds_run/  latest -> global_step1000, and global_step500/
  hostile/ds_missing/global_step1000  ZeRO-2 at 3 ranks without rank 1's optimizer file
"""
import collections
import enum
import os
import sys
import types

import torch

OrderedDict = collections.OrderedDict


def _register(module_name, cls):
    # The parents too: pickle imports the dotted name.
    parts = module_name.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            sys.modules[name] = types.ModuleType(name)
    m = sys.modules[module_name]
    cls.__module__ = module_name
    setattr(m, cls.__name__, cls)
    return cls


class ZeroStageEnum(int, enum.Enum):
    disabled = 0
    optimizer_states = 1
    gradients = 2
    weights = 3


class DynamicLossScaler:
    def __init__(self):
        self.cur_scale = 65536.0
        self.cur_iter = 1000
        self.scale_factor = 2.0
        self.scale_window = 1000


_register("deepspeed.runtime.zero.config", ZeroStageEnum)
_register("deepspeed.runtime.fp16.loss_scaler", DynamicLossScaler)


def is_param(t):
    return t.dtype == torch.float32 and t.dim() > 0


def groups_of(sd):
    params = [(k, t) for k, t in sd.items() if is_param(t)]
    cut = max(i for i, (k, _) in enumerate(params) if k.startswith("blocks.0.")) + 1
    return [params[:cut], params[cut:]]


def model_states(sd, world, stage, step=1000):
    groups = groups_of(sd)
    module = OrderedDict()
    for k, t in sd.items():
        if not is_param(t):
            module[k] = t.clone()
        elif stage == 3:
            module[k] = torch.empty(0, dtype=torch.bfloat16)
        else:
            module[k] = t.to(torch.bfloat16)
    return OrderedDict([
        ("module", module),
        ("buffer_names", [k for k, t in sd.items() if not is_param(t)]),
        ("optimizer", None),
        ("param_shapes", [OrderedDict((k, t.shape) for k, t in g) for g in groups]),
        ("frozen_param_shapes", None),
        ("shared_params", {}),
        ("frozen_param_fragments", None),
        ("lr_scheduler", {"last_epoch": 1000, "_last_lr": [0.0003, 0.0003]}),
        ("sparse_tensor_module_names", set()),
        ("skipped_steps", 0),
        ("global_steps", step),
        ("global_samples", 8 * step),
        ("dp_world_size", world),
        ("mp_world_size", 1),
        ("ds_config", {"train_batch_size": 8, "zero_optimization": {"stage": stage}, "bf16": {"enabled": True}}),
        ("ds_version", "0.14.0"),
    ])


def partitions(sd, world, stage):
    """Per rank: the list of its fp32 flat tensors, one per group."""
    out = [[] for _ in range(world)]
    for group in groups_of(sd):
        if stage <= 2:
            flat = torch.cat([t.flatten() for _, t in group])
            align = 2 * world
            padded = (flat.numel() + align - 1) // align * align
            flat = torch.cat([flat, torch.zeros(padded - flat.numel())])
            per = padded // world
            for r in range(world):
                out[r].append(flat[r * per:(r + 1) * per].clone())
        else:
            pieces = [[] for _ in range(world)]
            for _, t in group:
                per = (t.numel() + world - 1) // world
                flat = torch.cat([t.flatten(), torch.zeros(per * world - t.numel())])
                for r in range(world):
                    pieces[r].append(flat[r * per:(r + 1) * per])
            for r in range(world):
                out[r].append(torch.cat(pieces[r]).clone())
    return out


def write_tag(folder, sd, world, stage, bf16=False, step=1000):
    os.makedirs(folder, exist_ok=True)
    if stage <= 2:
        torch.save(model_states(sd, world, stage, step), os.path.join(folder, "mp_rank_00_model_states.pt"))
    else:
        for r in range(world):
            torch.save(model_states(sd, world, stage, step),
                       os.path.join(folder, f"zero_pp_rank_{r}_mp_rank_00_model_states.pt"))
    parts = partitions(sd, world, stage)
    key = "single_partition_of_fp32_groups" if stage <= 2 else "fp32_flat_groups"
    for r in range(world):
        osd = OrderedDict()
        if not bf16:
            osd["loss_scaler"] = DynamicLossScaler()
            osd["dynamic_loss_scale"] = True
            osd["overflow"] = False
        osd["clip_grad"] = 1.0
        osd["base_optimizer_state"] = {
            "state": {i: {"step": torch.tensor(1000.0), "exp_avg": torch.zeros_like(p),
                          "exp_avg_sq": torch.zeros_like(p)} for i, p in enumerate(parts[r])},
            "param_groups": [{"lr": 0.0003, "params": [i]} for i in range(len(parts[r]))]}
        osd[key] = parts[r]
        if not bf16:
            osd["zero_stage"] = ZeroStageEnum(stage)
        osd["group_paddings"] = [0 for _ in parts[r]]
        osd["partition_count"] = [world for _ in parts[r]] if stage <= 2 else world
        osd["ds_version"] = "0.14.0"
        name = f"{'bf16_' if bf16 else ''}zero_pp_rank_{r}_mp_rank_00_optim_states.pt"
        torch.save({"optimizer_state_dict": osd, "ds_config": {}, "ds_version": "0.14.0"}, os.path.join(folder, name))


def describe_ds(sd, describe, stage, incomplete=()):
    out = describe(sd, incomplete, prefix=("model",))
    if stage <= 2:
        module = OrderedDict((k, t.to(torch.bfloat16) if is_param(t) else t) for k, t in sd.items())
        out += describe(module, prefix=("module",))
    return out


def make(out, sd, manifest, describe):
    layouts = manifest["layouts"]
    for world in (1, 2, 3):
        write_tag(os.path.join(out, f"ds_z2_ws{world}", "global_step1000"), sd, world, 2, bf16=world == 2)
        layouts[f"ds_z2_ws{world}/global_step1000"] = {"tensors": describe_ds(sd, describe, 2), "files": world + 1,
                                                       "ranks": world, "step": 1000}
    for world in (1, 2, 3):
        write_tag(os.path.join(out, f"ds_z3_ws{world}", "global_step1000"), sd, world, 3)
        layouts[f"ds_z3_ws{world}/global_step1000"] = {"tensors": describe_ds(sd, describe, 3),
                                                       "files": 2 * world, "ranks": world, "step": 1000}
    run = os.path.join(out, "ds_run")
    write_tag(os.path.join(run, "global_step500"), sd, 2, 2, step=500)
    write_tag(os.path.join(run, "global_step1000"), sd, 2, 2)
    with open(os.path.join(run, "latest"), "w") as f:
        f.write("global_step1000")
    layouts["ds_run"] = {"tensors": describe_ds(sd, describe, 2), "files": 4, "ranks": 2, "step": 1000}

    # A rank's optimizer file is gone: rank 1 (a gap in the names) or the
    # last rank (known only from dp_world_size / partition_count).
    for name, rank in (("ds_missing", 1), ("ds_lastmissing", 2)):
        folder = os.path.join(out, "hostile", name, "global_step1000")
        write_tag(folder, sd, 3, 2)
        os.remove(os.path.join(folder, f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt"))
        gone = set()
        # Per master: how many of its elements each rank's file holds (the
        # Shards tab lists the missing rank's share as missing chunks).
        rank_elements = OrderedDict()
        for group in groups_of(sd):
            total = sum(t.numel() for _, t in group)
            per = (total + 5) // 6 * 6 // 3
            offset = 0
            for k, t in group:
                if offset < (rank + 1) * per and offset + t.numel() > rank * per:
                    gone.add(k)
                share = OrderedDict()
                for r in range(3):
                    n = max(0, min(offset + t.numel(), (r + 1) * per) - max(offset, r * per))
                    if n:
                        share[f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt"] = n
                rank_elements["model." + k] = share
                offset += t.numel()
        layouts[f"hostile/{name}/global_step1000"] = {"tensors": describe_ds(sd, describe, 2, gone),
                                                      "missing": f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt",
                                                      "rank_elements": rank_elements}
