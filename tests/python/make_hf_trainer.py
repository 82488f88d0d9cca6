#!/usr/bin/python3
"""Write a Hugging Face Trainer output folder as transformers' Trainer leaves
it, a sweep whose run names hold numbers, and what a reader of them must find.

    /usr/bin/python3 make_hf_trainer.py OUTDIR

OUTDIR/hf/out/checkpoint-{500,1000,1500}/ as Trainer._save_checkpoint writes
them (names from transformers' trainer.py / utils constants: model.safetensors
or pytorch_model.bin or model.safetensors.index.json + shards, optimizer.pt,
scheduler.pt, rng_state.pth, trainer_state.json, training_args.bin,
config.json), and the final model with trainer.save_model() + save_state() in
out/ itself. transformers is not installed: the weights are written with
torch (safetensors by hand), training_args.bin as torch.save of a stand-in
class named transformers.training_args.TrainingArguments (never unpickled by
the tests), trainer_state.json as TrainerState.save_to_json does
(json.dumps(asdict(state), indent=2, sort_keys=True) + "\\n", NaN bare).

OUTDIR/sweep/seed{1,2,10}/ hold one checkpoint each, seed3/ only a
metrics.jsonl (a run that has not saved yet).

OUTDIR/hf/expected_metrics.json: what an independent reader of the newest
trainer_state.json finds (read_trainer_state below, written from the
TrainerState documentation, not from CkptScope's code): {"file", "series":
{metric: [[step, value|null, null, tokens|null], ...]}, "summary": {...}}.
"""
import dataclasses
import enum
import json
import math
import os
import random
import re
import shutil
import sys
import types

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_diff_fixtures import write_safetensors  # noqa: E402

torch.set_num_threads(1)

MAX_STEPS = 1500
LOGGING_STEPS = 100
EVAL_STEPS = 250
SAVE_STEPS = 500
STEPS_PER_EPOCH = 500
OUTPUT_DIR = "out"
# How each checkpoint-<step>/ holds its weights.
HOWS = {500: "safetensors", 1000: "bin", 1500: "sharded"}


def stand_in(module_name, cls):
    """Give `cls` a module path pickle will name (transformers is not installed)."""
    parts = module_name.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        sys.modules.setdefault(name, types.ModuleType(name))
    cls.__module__ = module_name
    setattr(sys.modules[module_name], cls.__name__, cls)
    return cls


class IntervalStrategy(str, enum.Enum):
    """transformers.trainer_utils.IntervalStrategy (an ExplicitEnum of str)."""
    NO = "no"
    STEPS = "steps"
    EPOCH = "epoch"


stand_in("transformers.trainer_utils", IntervalStrategy)


@dataclasses.dataclass
class TrainingArguments:
    output_dir: str = OUTPUT_DIR
    learning_rate: float = 5e-4
    max_steps: int = MAX_STEPS
    logging_steps: int = LOGGING_STEPS
    eval_steps: int = EVAL_STEPS
    save_steps: int = SAVE_STEPS
    per_device_train_batch_size: int = 8
    seed: int = 42
    load_best_model_at_end: bool = True
    metric_for_best_model: str = "loss"
    eval_strategy: IntervalStrategy = IntervalStrategy.STEPS


stand_in("transformers.training_args", TrainingArguments)


def model_state(seed):
    g = torch.Generator().manual_seed(seed)
    return {
        "model.embed_tokens.weight": torch.randn(32, 8, generator=g),
        "model.layers.0.mlp.up_proj.weight": torch.randn(16, 8, generator=g),
        "model.layers.0.mlp.down_proj.weight": torch.randn(8, 16, generator=g),
        "model.norm.weight": torch.ones(8),
        "lm_head.weight": torch.randn(32, 8, generator=g),
    }


def decay_parameter_names(names):
    """transformers' Trainer.get_decay_parameter_names (4.4x): every parameter
    but those of nn.LayerNorm modules (none here) and those whose lower-cased
    name matches one of its forbidden patterns."""
    forbidden = [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]
    return [n for n in names if not any(re.search(p, n.lower()) for p in forbidden)]


def adamw_state(state, steps):
    """A real AdamW state_dict after `steps` steps on parameters like
    `state`'s, in the Trainer's two param groups."""
    params = {n: torch.nn.Parameter(t.clone()) for n, t in state.items()}
    decay = set(decay_parameter_names(list(state)))
    opt = torch.optim.AdamW([
        {"params": [p for n, p in params.items() if n in decay], "weight_decay": 0.01},
        {"params": [p for n, p in params.items() if n not in decay], "weight_decay": 0.0},
    ], lr=5e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / MAX_STEPS)
    for _ in range(steps):
        loss = sum((p * p).sum() for p in params.values())
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    # The parameter of each optimizer state index: torch numbers them in
    # param group order.
    name_of = {id(p): n for n, p in params.items()}
    order = [name_of[id(p)] for g in opt.param_groups for p in g["params"]]
    return opt.state_dict(), sched.state_dict(), order


def config_json():
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8,
            "intermediate_size": 16, "num_hidden_layers": 1, "vocab_size": 32,
            "torch_dtype": "float32", "transformers_version": "4.44.0"}


def log_history():
    """Rows as Trainer.log appends them: training rows every LOGGING_STEPS,
    evaluation rows every EVAL_STEPS (250, 750, 1250 fall between training
    rows), one grad_norm that went NaN, and train()'s closing summary row."""
    rows = []
    for step in range(1, MAX_STEPS + 1):
        epoch = round(step / STEPS_PER_EPOCH, 4)
        if step % LOGGING_STEPS == 0:
            rows.append({"epoch": epoch, "grad_norm": float("nan") if step == 700 else 1.5 / math.sqrt(step),
                         "learning_rate": 5e-4 * (1 - step / MAX_STEPS), "loss": round(4.0 - step / 600, 4),
                         "num_input_tokens_seen": step * 4096, "step": step})
        if step % EVAL_STEPS == 0:
            # Lowest at 1000: the best of the saved checkpoints.
            rows.append({"epoch": epoch, "eval_loss": 3.0 - 0.001 * min(step, 1000) + 0.0004 * max(0, step - 1000),
                         "eval_runtime": 1.25, "eval_samples_per_second": 80.0, "eval_steps_per_second": 10,
                         "step": step})
    summary = {"epoch": 3.0, "step": MAX_STEPS, "total_flos": 1.2345e12, "train_loss": 2.75,
               "train_runtime": 321.5, "train_samples_per_second": 37.3, "train_steps_per_second": 4.66}
    return rows, summary


def trainer_state(rows, global_step, best_step):
    """TrainerState's fields (trainer_callback.py) as asdict() gives them."""
    best = [r["eval_loss"] for r in rows if "eval_loss" in r and r["step"] == best_step]
    return {
        "best_metric": best[0] if best else None,
        "best_model_checkpoint": os.path.join(OUTPUT_DIR, "checkpoint-%d" % best_step) if best else None,
        "epoch": global_step / STEPS_PER_EPOCH,
        "eval_steps": EVAL_STEPS,
        "global_step": global_step,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": rows,
        "logging_steps": LOGGING_STEPS,
        "max_steps": MAX_STEPS,
        "num_input_tokens_seen": global_step * 4096,
        "num_train_epochs": 3,
        "save_steps": SAVE_STEPS,
        "stateful_callbacks": {"TrainerControl": {"args": {"should_save": True, "should_training_stop": False},
                                                  "attributes": {}}},
        "total_flos": 1.0e9 * global_step,
        "train_batch_size": 8,
        "trial_name": None,
        "trial_params": None,
    }


def save_to_json(state, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(state, indent=2, sort_keys=True) + "\n")


def write_weights(folder, state, how):
    if how == "safetensors":
        write_safetensors(os.path.join(folder, "model.safetensors"), state, {"format": "pt"})
    elif how == "bin":
        torch.save(state, os.path.join(folder, "pytorch_model.bin"))
    else:  # two shards and their index, as save_pretrained(max_shard_size=...) writes them
        names = list(state)
        shards = [names[:2], names[2:]]
        weight_map, total = {}, 0
        for i, keys in enumerate(shards):
            shard = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
            write_safetensors(os.path.join(folder, shard), {k: state[k] for k in keys}, {"format": "pt"})
            for k in keys:
                weight_map[k] = shard
                total += state[k].numel() * state[k].element_size()
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)


def save_checkpoint(out, step, how, rows):
    """Trainer._save_checkpoint: the model, optimizer/scheduler/RNG, then the state."""
    folder = os.path.join(out, "checkpoint-%d" % step)
    os.makedirs(folder)
    state = model_state(step)
    write_weights(folder, state, how)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config_json(), f, indent=2, sort_keys=True)
    torch.save(TrainingArguments(), os.path.join(folder, "training_args.bin"))
    opt, sched, order = adamw_state(state, 2)
    torch.save(opt, os.path.join(folder, "optimizer.pt"))
    torch.save(sched, os.path.join(folder, "scheduler.pt"))
    random.seed(step)
    np.random.seed(step)
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(), "cpu": torch.random.get_rng_state()},
               os.path.join(folder, "rng_state.pth"))
    upto = [r for r in rows if r["step"] <= step]
    best_step = min((r for r in upto if "eval_loss" in r and r["step"] % SAVE_STEPS == 0),
                    key=lambda r: r["eval_loss"])["step"]
    save_to_json(trainer_state(upto, step, best_step), os.path.join(folder, "trainer_state.json"))
    return order


def lora_state(seed):
    """What peft's get_peft_model_state_dict gives a LoRA model (r=2 on
    q_proj and v_proj of 2 layers): the adapter's weights only, named as
    save_pretrained writes them (the adapter name dropped)."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for layer in range(2):
        for proj in ("q_proj", "v_proj"):
            p = "base_model.model.model.layers.%d.self_attn.%s." % (layer, proj)
            sd[p + "lora_A.weight"] = torch.randn(2, 8, generator=g)
            sd[p + "lora_B.weight"] = torch.randn(8, 2, generator=g)
    return sd


def peft_run(out):
    """A Trainer run of a peft model with fp16 (a GradScaler): checkpoint-<step>/
    holds adapter_model.safetensors and adapter_config.json (PeftModel.
    save_pretrained) instead of the model, and scaler.pt (SCALER_NAME:
    GradScaler.state_dict()) beside optimizer.pt, scheduler.pt, rng_state.pth,
    trainer_state.json, training_args.bin. expected_peft.json: each
    adapter's tensors, and torch's rel_l2 between the two checkpoints."""
    states = {}
    for step in (100, 200):
        folder = os.path.join(out, "checkpoint-%d" % step)
        os.makedirs(folder)
        sd = lora_state(step)
        states[step] = sd
        write_safetensors(os.path.join(folder, "adapter_model.safetensors"), sd, {"format": "pt"})
        with open(os.path.join(folder, "adapter_config.json"), "w") as f:
            json.dump({"peft_type": "LORA", "r": 2, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
                       "base_model_name_or_path": "tiny-llama", "task_type": "CAUSAL_LM"}, f, indent=2)
        torch.save(TrainingArguments(), os.path.join(folder, "training_args.bin"))
        opt, sched, _ = adamw_state(sd, 2)
        torch.save(opt, os.path.join(folder, "optimizer.pt"))
        torch.save(sched, os.path.join(folder, "scheduler.pt"))
        torch.save({"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                    "_growth_tracker": step % 7}, os.path.join(folder, "scaler.pt"))
        torch.save({"cpu": torch.random.get_rng_state()}, os.path.join(folder, "rng_state.pth"))
        rows = [{"epoch": s / 200, "learning_rate": 1e-4, "loss": 2.0 - s / 400, "step": s}
                for s in range(20, step + 1, 20)]
        save_to_json(trainer_state(rows, step, step), os.path.join(folder, "trainer_state.json"))
    a, b = states[100], states[200]
    expected = {"tensors": {n: list(t.shape) for n, t in a.items()},
                "rel_l2": {n: float((b[n].double() - a[n].double()).norm() / a[n].double().norm()) for n in a}}
    with open(os.path.join(os.path.dirname(out), "expected_peft.json"), "w") as f:
        json.dump(expected, f, indent=1)


# ---------------------------------------------------------------- the reader

def newest_trainer_state(run_dir):
    """Of the highest checkpoint-<step>/ with a state and the run folder's own,
    the higher global_step (the run folder's at a tie: it holds the summary)."""
    folders = []
    for name in os.listdir(run_dir):
        if name.startswith("checkpoint-") and name[len("checkpoint-"):].isdigit():
            p = os.path.join(run_dir, name, "trainer_state.json")
            if os.path.isfile(p):
                folders.append((int(name[len("checkpoint-"):]), p))
    candidates = [p for _, p in sorted(folders)[-1:]]
    own = os.path.join(run_dir, "trainer_state.json")
    if os.path.isfile(own):
        candidates.append(own)

    def global_step(p):
        with open(p) as f:
            return json.load(f)["global_step"]
    return max(candidates, key=lambda p: (global_step(p), p == own))


def metric_name(key):
    if key.startswith("eval_"):
        return "val_" + key[len("eval_"):]
    return "lr" if key == "learning_rate" else key


def read_trainer_state(path):
    with open(path) as f:
        state = json.load(f)  # Python's json reads NaN back
    series, summary = {}, {}
    for row in state["log_history"]:
        if "train_runtime" in row:
            summary = {k: float(v) for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            continue
        tokens = row.get("num_input_tokens_seen")
        for key, value in row.items():
            if key == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            points = series.setdefault(metric_name(key), {})
            points[row["step"]] = [row["step"], None if not math.isfinite(value) else float(value), None, tokens]
    return {"series": {m: [p[s] for s in sorted(p)] for m, p in series.items()}, "summary": summary}


def main(argv):
    root = argv[1]
    shutil.rmtree(root, ignore_errors=True)  # written afresh: no file of an earlier run left
    out = os.path.join(root, "hf", OUTPUT_DIR)
    os.makedirs(out, exist_ok=True)
    rows, summary = log_history()
    orders = {step: save_checkpoint(out, step, how, rows) for step, how in HOWS.items()}
    # trainer.save_model() and trainer.save_state() once training ended.
    write_weights(out, model_state(1000), "safetensors")  # load_best_model_at_end: the best weights
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config_json(), f, indent=2, sort_keys=True)
    torch.save(TrainingArguments(), os.path.join(out, "training_args.bin"))
    save_to_json(trainer_state(rows + [summary], MAX_STEPS, 1000), os.path.join(out, "trainer_state.json"))

    # Each optimizer.pt as torch.load reads it back: what `info` must count.
    optimizers = {}
    for step in (500, 1000, 1500):
        rel = "checkpoint-%d/optimizer.pt" % step
        saved = torch.load(os.path.join(out, rel))
        optimizers[rel] = {"with_state": len(saved["state"]), "groups": len(saved["param_groups"]),
                           "params": sum(len(g["params"]) for g in saved["param_groups"]),
                           "lr": saved["param_groups"][0]["lr"],
                           # per parameter in index order: what the Optimizer tab computes
                           "exp_avg_norms": [float(saved["state"][i]["exp_avg"].double().norm())
                                             for i in sorted(saved["state"])],
                           # Each index's parameter, where the weights keep their order (a
                           # torch.save'd pytorch_model.bin); sorted safetensors names do not.
                           "names": orders[step] if HOWS[step] == "bin" else None}
    with open(os.path.join(root, "hf", "expected_optimizers.json"), "w") as f:
        json.dump(optimizers, f, indent=1)

    # What Compare / `diff` of two checkpoint folders must find: torch's
    # ||b - a|| / ||a|| and cosine of each tensor of their weights.
    diffs = {}
    for a, b in ((500, 1000), (1000, 1500)):
        sa, sb = model_state(a), model_state(b)
        diffs["checkpoint-%d checkpoint-%d" % (a, b)] = {
            n: {"rel_l2": float((sb[n].double() - sa[n].double()).norm() / sa[n].double().norm()),
                "cosine": float(torch.nn.functional.cosine_similarity(
                    sa[n].double().flatten(), sb[n].double().flatten(), dim=0))}
            for n in sa}
    with open(os.path.join(root, "hf", "expected_diffs.json"), "w") as f:
        json.dump(diffs, f, indent=1)

    # The run's hyperparameters, as a person reads them: TrainingArguments'
    # fields (an enum member as Python names it; output_dir names the run, not a setting),
    # then config.json's keys the arguments do not have.
    args = {k: ("%s.%s" % (type(v).__name__, v.name) if isinstance(v, enum.Enum) else v)
            for k, v in dataclasses.asdict(TrainingArguments()).items() if k != "output_dir"}
    for k, v in config_json().items():
        args.setdefault(k, v)
    with open(os.path.join(root, "hf", "expected_hparams.json"), "w") as f:
        json.dump(args, f, indent=1)

    newest = newest_trainer_state(out)
    expected = read_trainer_state(newest)
    expected["file"] = os.path.relpath(newest, root)
    with open(os.path.join(root, "hf", "expected_metrics.json"), "w") as f:
        json.dump(expected, f, indent=1)

    peft_run(os.path.join(root, "hf_peft", OUTPUT_DIR))

    # A sweep: runs whose names hold numbers, and one that has not saved yet.
    for seed in (1, 2, 10):
        d = os.path.join(root, "sweep", "seed%d" % seed)
        os.makedirs(d, exist_ok=True)
        torch.save({"model": model_state(seed), "step": 100}, os.path.join(d, "ckpt_step100.pt"))
    d = os.path.join(root, "sweep", "seed3")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "metrics.jsonl"), "w") as f:
        for step in (10, 20, 30):
            f.write(json.dumps({"step": step, "loss": 5.0 - step / 100}) + "\n")
    print("make_hf_trainer: %s" % root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
