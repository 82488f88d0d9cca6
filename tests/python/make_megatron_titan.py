#!/usr/bin/python3
"""Megatron-LM and torchtitan runs as those trainers leave them.

    /usr/bin/python3 make_megatron_titan.py OUTDIR

Megatron-LM (megatron/training/checkpointing.py, ckpt_format "torch"):
get_checkpoint_name gives <save>/iter_{iteration:07d}/mp_rank_{tp:02d}/ and,
under pipeline parallelism, mp_rank_{tp:02d}_{pp:03d}/, each holding
model_optim_rng.pt, a torch.save of generate_state_dict's dict: args (the
argparse.Namespace itself), checkpoint_version 3.0, iteration, model,
optimizer, opt_param_scheduler, rng_state; with the distributed optimizer
distrib_optim.pt beside it (get_distributed_optimizer_checkpoint_name);
release/ instead of iter_ for a release; latest_checkpointed_iteration.txt
in <save> holds the newest iteration or "release" (read_metadata strips it).
Debian has no Megatron: these dicts are written with the same keys.
  OUTDIR/mg/tp/     2 saves (100, 200) of 2 tensor-parallel ranks; tracker "200"
  OUTDIR/mg/pp/     1 save (50) of 2 pipeline stages with distrib_optim.pt; tracker "50\\n"
  OUTDIR/mg/rel/    release/ of 1 rank; tracker "release"
  OUTDIR/mg_legacy/gpt/  2 saves (10, 20) of 1 rank of the legacy model
      (before mcore: model.language_model's nested dicts); expected.json
      "megatron_legacy" holds torch's rel_l2 of each tensor between them
torchtitan since _flattened_model_states_sd (the model's keys at the top of
the DCP state dict): OUTDIR/titan_flat/outputs/checkpoint/step-{10,20};
expected.json "torchtitan_flat" holds torch's rel_l2 of each model tensor

Tensor-parallel slices to join (the torch format, mcore GPTModel names):
  OUTDIR/mg_join/gpt/iter_0000300/  2 tensor x 2 pipeline ranks, SwiGLU, biases,
      norms, position embeddings, an untied output layer: each rank's slice
      cut from one whole model as Megatron's saver cuts it (tp_split)
  OUTDIR/mg_join/bad/iter_0000010/  2 tensor ranks with an adapter no rule
      knows, QKV slices whose shapes disagree, a final norm differing on rank 1
expected.json "megatron_join" holds the whole tensors (bytes as hex).

Megatron-LM, ckpt_format "torch_dist" (megatron/core/dist_checkpointing:
serialization.py save, strategies/common.py, core.py): iter_{iteration:07d}/
holds metadata.json (CheckpointingConfig: {"sharded_backend": "torch_dist",
"sharded_backend_version": 1, "common_backend": "torch",
"common_backend_version": 1}), common.pt (rank 0's torch.save of what is
not sharded: args, checkpoint_version, iteration, the optimizer's
param_groups, opt_param_scheduler, num_floating_point_operations_so_far)
and a DCP folder (.metadata and __<rank>_0.distcp) of the ShardedTensors by
their keys (the layers stacked along a leading axis, the optimizer's states
as optimizer.state.<exp_avg|exp_avg_sq|fp32_param>.<key>) and
ShardedObjects (rng_state/shard_<offset>_<shape>, bytes).
  OUTDIR/mg_dist/gpt/  2 saves (100, 200) of 2 ranks; tracker "200"

torchtitan (torchtitan/components/checkpoint.py, metrics.py): the job's
dump_folder holds checkpoint/step-{step}/ (DCP folders, dcp.save of model,
optimizer, lr_scheduler, dataloader, train_state with step as an int32
tensor) and tb/<%Y%m%d-%H%M>/ event files (loss_metrics/global_avg_loss,
lr, ...). python3-torch 1.13 has no torch.distributed.checkpoint: the DCP
folders are written as FORMAT.md section 7 says (make_sharded.write_dcp).
  OUTDIR/titan/outputs/   checkpoint/step-10, step-20; tb/20250101-1200/

OUTDIR/expected.json: what a person expects, from what was written here:
{"megatron": {run: {"iterations": [...], "latest": N|"release", "ranks":
{iteration: [rank folder, ...]}, "distrib_optim": [...], "args": {...}}},
"torchtitan": {"run": "outputs", "steps": [...]}}.
"""
import argparse
import enum
import io
import json
import os
import random
import shutil
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_sharded  # noqa: E402  write_dcp: DCP folders without torch.distributed.checkpoint
import make_tfevents_fixtures as tfw  # noqa: E402  event files as TensorBoard writes them

torch.manual_seed(0)


def megatron_args(tp, pp, lr):
    # megatron/training/arguments.py parse_args: an argparse.Namespace, saved as is.
    return argparse.Namespace(num_layers=2, hidden_size=8, num_attention_heads=2,
                              seq_length=16, max_position_embeddings=16, lr=lr,
                              min_lr=lr / 10, lr_decay_style="cosine", train_iters=200,
                              micro_batch_size=2, global_batch_size=8,
                              tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                              use_distributed_optimizer=pp > 1, bf16=False, fp16=False,
                              tokenizer_type="GPT2BPETokenizer", save="/scratch/ckpt",
                              ckpt_format="torch", seed=1234)


def rank_model(tp_rank, tp, layers):
    # mcore GPTModel state_dict_for_save_checkpoint: dotted names, each rank
    # its slice of the column/row-parallel weights.
    sd = {}
    if layers[0] == 0:
        sd["embedding.word_embeddings.weight"] = torch.randn(32 // tp, 8)
    for i, layer in enumerate(layers):
        p = f"decoder.layers.{i}."
        sd[p + "self_attention.linear_qkv.weight"] = torch.randn(24 // tp, 8)
        sd[p + "self_attention.linear_proj.weight"] = torch.randn(8, 8 // tp)
        sd[p + "mlp.linear_fc1.weight"] = torch.randn(32 // tp, 8)
        sd[p + "mlp.linear_fc2.weight"] = torch.randn(8, 32 // tp)
    return sd


def rng_state(tracker=None):
    # get_rng_state: a list (one per data-parallel rank gathered) of dicts.
    return [{"random_rng_state": random.getstate(), "torch_rng_state": torch.get_rng_state(),
             "rng_tracker_states": {"model-parallel-rng": torch.get_rng_state() if tracker is None else tracker}}]


def seeded_rng_state(stage, rank, seed=1234):
    """As Megatron's _set_random_seed leaves a rank's generators: Python's
    and torch's seeded with seed + 100 * pipeline rank, the tensor-parallel
    tracker with that + 2718 + tensor rank (model_parallel_cuda_manual_seed)."""
    outer, outer_py = torch.get_rng_state(), random.getstate()
    s = seed + 100 * stage
    tracker = torch.manual_seed(s + 2718 + rank).get_state()
    random.seed(s)
    torch.manual_seed(s)
    state = rng_state(tracker)
    torch.set_rng_state(outer)
    random.setstate(outer_py)
    return state


def megatron_groups(model):
    """megatron/core/optimizer get_param_groups: the parameters in model
    order, a bias or a 1-dimensional one without weight decay (wd_mult 0),
    grouped by (wd_mult, lr_mult, is_expert_parallel) in that key order."""
    no_wd = [n for n, p in model.items() if n.endswith(".bias") or p.dim() == 1]
    wd = [n for n in model if n not in no_wd]
    return [(1.0, wd), (0.0, no_wd)]


def save_rank(path, args, iteration, model, distrib, moments=None, rng=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    params = list(model.values())
    if moments is not None:
        # Float16OptimizerWithFloat16Params.state_dict: the inner optimizer's
        # state_dict (torch numbers the parameters group after group) and
        # the fp32 master copies per group.
        groups, state, masters, i = [], {}, [], 0
        for wd_mult, names in megatron_groups(model):
            # apex's FusedAdam (Megatron's optimizer) keeps the step in the group.
            groups.append({"lr": args.lr, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1 * wd_mult,
                           "wd_mult": wd_mult, "lr_mult": 1.0, "is_expert_parallel": False,
                           "step": iteration, "params": list(range(i, i + len(names)))})
            for n in names:
                state[i] = {"exp_avg": moments["exp_avg"][n], "exp_avg_sq": moments["exp_avg_sq"][n]}
                i += 1
            masters.append([moments["fp32_param"][n] for n in names])
        optimizer = {"optimizer": {"state": state, "param_groups": groups},
                     "grad_scaler": {"growth_tracker": 0, "hysteresis_tracker": 2},
                     "fp32_from_fp16_params": masters}
    elif distrib:
        # DistributedOptimizer.state_dict: param groups only; the state is in distrib_optim.pt.
        optimizer = {"optimizer": {"param_groups": [{"lr": args.lr, "params": list(range(len(params)))}]},
                     "param_state_sharding_type": "dp_zero_gather_scatter"}
    else:
        optimizer = {"optimizer": {"state": {i: {"exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
                                             for i, p in enumerate(params)},
                                   "param_groups": [{"lr": args.lr, "betas": (0.9, 0.95),
                                                     "params": list(range(len(params)))}]},
                     "fp32_from_fp16_params": [[p.float() for p in params]]}
    state = {"args": args, "checkpoint_version": 3.0, "iteration": iteration, "model": model,
             "optimizer": optimizer,
             "opt_param_scheduler": {"max_lr": args.lr, "min_lr": args.min_lr, "num_steps": iteration * 8,
                                     "decay_style": args.lr_decay_style},
             "rng_state": rng or rng_state(), "num_floating_point_operations_so_far": 1.5e12 * iteration}
    torch.save(state, path)
    if distrib:
        # save_parameter_state: per model chunk, per dtype, the flat fp32 params and moments.
        flat = torch.cat([p.flatten() for p in params])
        torch.save({0: {(torch.float32, torch.float32): {"param": flat.clone(), "exp_avg": torch.zeros_like(flat),
                                                         "exp_avg_sq": torch.zeros_like(flat),
                                                         "numel_unpadded": flat.numel()}},
                    "per_bucket_numel": {0: {(torch.float32, torch.float32): [flat.numel()]}}},
                   os.path.join(os.path.dirname(path), "distrib_optim.pt"))


def megatron_save(save, iteration, tp, pp, lr, tracker=None, release=False):
    args = megatron_args(tp, pp, lr)
    folder = os.path.join(save, "release" if release else "iter_{:07d}".format(iteration))
    ranks = []
    for pp_rank in range(pp):
        for tp_rank in range(tp):
            rank = f"mp_rank_{tp_rank:02d}" if pp == 1 else f"mp_rank_{tp_rank:02d}_{pp_rank:03d}"
            ranks.append(rank)
            layers = [pp_rank] if pp > 1 else [0, 1]
            save_rank(os.path.join(folder, rank, "model_optim_rng.pt"), args, iteration,
                      rank_model(tp_rank, tp, layers), distrib=pp > 1)
    if tracker is not None:
        with open(os.path.join(save, "latest_checkpointed_iteration.txt"), "w") as f:
            f.write(tracker)
    return sorted(ranks), vars(args)


def megatron(out):
    runs = {}
    tp = {"iterations": [], "ranks": {}, "latest": 200, "distrib_optim": []}
    for it in (100, 200):
        ranks, args = megatron_save(os.path.join(out, "tp"), it, 2, 1, 3e-4,
                                    tracker=str(it))
        tp["iterations"].append(it)
        tp["ranks"][str(it)] = ranks
    tp["args"] = args
    runs["tp"] = tp
    ranks, args = megatron_save(os.path.join(out, "pp"), 50, 1, 2, 1e-4, tracker="50\n")
    # Each distrib_optim.pt's flat buffers as torch.load reads them back:
    # elements per state, summed over model chunks and dtypes.
    flat = {}
    for rank in ranks:
        saved = torch.load(os.path.join(out, "pp", "iter_0000050", rank, "distrib_optim.pt"))
        counts = {}
        for chunk, by_dtype in saved.items():
            if isinstance(chunk, int):
                for buffers in by_dtype.values():
                    for name, t in buffers.items():
                        if torch.is_tensor(t):
                            counts[name] = counts.get(name, 0) + t.numel()
        flat[rank] = counts
    runs["pp"] = {"iterations": [50], "ranks": {"50": ranks}, "latest": 50,
                  "distrib_optim": ranks, "distrib_flat": flat, "args": args}
    ranks, args = megatron_save(os.path.join(out, "rel"), 0, 1, 1, 2e-4, tracker="release",
                                release=True)
    runs["rel"] = {"iterations": [], "ranks": {"release": ranks}, "latest": "release",
                   "distrib_optim": [], "args": args}
    return runs


def dist_state(iteration, lr):
    # mcore's sharded_state_dict under torch_dist: by ShardedTensor key,
    # the two layers stacked along axis 0 (TransformerLayer prepends it);
    # Transformer Engine's fused norms as linear_qkv / linear_fc1's
    # layer_norm_weight. The optimizer's states are ShardedTensors keyed
    # optimizer.state.<state key>.<model key> (dist_checkpointing/
    # optimizer.py make_sharded_optimizer_tensor; the distributed
    # optimizer's fully_sharded_model_space names the fp32 master copy
    # fp32_param), each of its parameter's shape.
    model = {"embedding.word_embeddings.weight": torch.randn(32, 8),
             "decoder.layers.self_attention.linear_qkv.layer_norm_weight": 1 + 0.01 * torch.randn(2, 8),
             "decoder.layers.self_attention.linear_qkv.weight": torch.randn(2, 24, 8),
             "decoder.layers.self_attention.linear_proj.weight": torch.randn(2, 8, 8),
             "decoder.layers.mlp.linear_fc1.layer_norm_weight": 1 + 0.01 * torch.randn(2, 8),
             "decoder.layers.mlp.linear_fc1.weight": torch.randn(2, 32, 8),
             "decoder.layers.mlp.linear_fc2.weight": torch.randn(2, 8, 32),
             "decoder.final_layernorm.weight": 1 + 0.01 * torch.randn(8),
             "output_layer.weight": torch.randn(32, 8)}
    moments = {"exp_avg": lambda p: p * 0.1 + lr, "exp_avg_sq": lambda p: p * p,
               "fp32_param": lambda p: p.clone()}
    state = dict(model)
    for moment, f in moments.items():
        for k, v in model.items():
            state[f"optimizer.state.{moment}.{k}"] = f(v)
    return model, state


def megatron_dist(save):
    iterations = [100, 200]
    args = megatron_args(1, 1, 6e-4)
    args.ckpt_format = "torch_dist"
    tensors, model, firsts = {}, {}, {}
    for it in iterations:
        folder = os.path.join(save, "iter_{:07d}".format(it))
        params, state = dist_state(it, args.lr)
        tensors = {k: list(v.shape) for k, v in state.items()}
        model = {k: list(v.shape) for k, v in params.items()}
        # The first element of each optimizer state, by parameter (torch's numbers).
        firsts = {k: {m: float(state[f"optimizer.state.{m}.{k}"].flatten()[0])
                      for m in ("exp_avg", "exp_avg_sq", "fp32_param")} for k in params}
        rng = [(r, "rng_state/shard_0.0.{}_1.1.2".format(r),
                {"random_rng_state": random.getstate(), "torch_rng_state": torch.get_rng_state()})
               for r in range(2)]
        make_sharded.write_dcp(folder, state, 2, replicate=(), first=rng)
        # The distributed optimizer's state_dict without its state: the
        # inner optimizer's param_groups, "params" deleted (the tensors are
        # sharded above).
        optimizer = {"optimizer": {"param_groups": [
            {"lr": args.lr, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1, "step": it},
            {"lr": args.lr, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.0, "step": it}]},
            "param_state_sharding_type": "fully_sharded_model_space"}
        common = {"args": args, "checkpoint_version": 3.0, "iteration": it, "optimizer": optimizer,
                  "opt_param_scheduler": {"max_lr": args.lr, "min_lr": args.min_lr, "num_steps": it * 8,
                                          "decay_style": args.lr_decay_style},
                  "num_floating_point_operations_so_far": 1.5e12 * it}
        torch.save(common, os.path.join(folder, "common.pt"))
        with open(os.path.join(folder, "metadata.json"), "w") as f:
            json.dump({"sharded_backend": "torch_dist", "sharded_backend_version": 1,
                       "common_backend": "torch", "common_backend_version": 1}, f)
    with open(os.path.join(save, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("200")
    # What the Summary and `info` count as mapped: parameters whose moments
    # (optimizer.state.<moment>.<key>) are there with the parameter's shape.
    mapped = sum(1 for k, shape in model.items()
                 if all(tensors.get(f"optimizer.state.{m}.{k}") == shape for m in ("exp_avg", "exp_avg_sq")))
    return {"gpt": {"iterations": iterations, "latest": 200, "args": vars(args), "tensors": tensors,
                    "model": model, "optimizer_firsts": firsts, "lr": args.lr, "optimizer_mapped": mapped}}


def tp_split(name, t, tp, swiglu):
    # How Megatron's saver gives each tensor rank its slice
    # (tools/checkpoint/saver_*: torch.chunk along the parallel dim; under
    # SwiGLU fc1's W and V halves chunked apart, each rank [W_r; V_r]).
    # Returns [slice per rank]; norms, position embeddings and the
    # row-parallel biases are whole on every rank.
    leaf = name.split("decoder.layers.")[-1].split(".", 1)[-1]
    if leaf in ("mlp.linear_fc1.weight", "mlp.linear_fc1.bias") and swiglu:
        w, v = torch.chunk(t, 2, dim=0)
        return [torch.cat([a, b], dim=0).clone() for a, b in zip(torch.chunk(w, tp, 0), torch.chunk(v, tp, 0))]
    if leaf in ("self_attention.linear_qkv.weight", "self_attention.linear_qkv.bias", "mlp.linear_fc1.weight",
                "mlp.linear_fc1.bias") or name in ("embedding.word_embeddings.weight", "output_layer.weight"):
        return [c.clone() for c in torch.chunk(t, tp, dim=0)]
    if leaf in ("self_attention.linear_proj.weight", "mlp.linear_fc2.weight"):
        return [c.clone() for c in torch.chunk(t, tp, dim=1)]
    return [t.clone() for _ in range(tp)]


def join_whole(layers, swiglu, vocab=32, hidden=8, ffn=16, seq=16):
    # The model as one rank would hold it (mcore GPTModel, local layer
    # implementation: schema_core.py CoreLocalSchema's names).
    whole = {"embedding.word_embeddings.weight": torch.randn(vocab, hidden),
             "embedding.position_embeddings.weight": torch.randn(seq, hidden)}
    fc1 = 2 * ffn if swiglu else ffn
    for i in range(layers):
        p = f"decoder.layers.{i}."
        whole.update({p + "input_layernorm.weight": 1 + 0.01 * torch.randn(hidden),
                      p + "input_layernorm.bias": 0.01 * torch.randn(hidden),
                      p + "self_attention.linear_qkv.weight": torch.randn(3 * hidden, hidden),
                      p + "self_attention.linear_qkv.bias": torch.randn(3 * hidden),
                      p + "self_attention.linear_proj.weight": torch.randn(hidden, hidden),
                      p + "self_attention.linear_proj.bias": torch.randn(hidden),
                      p + "pre_mlp_layernorm.weight": 1 + 0.01 * torch.randn(hidden),
                      p + "pre_mlp_layernorm.bias": 0.01 * torch.randn(hidden),
                      p + "mlp.linear_fc1.weight": torch.randn(fc1, hidden),
                      p + "mlp.linear_fc1.bias": torch.randn(fc1),
                      p + "mlp.linear_fc2.weight": torch.randn(hidden, ffn),
                      p + "mlp.linear_fc2.bias": torch.randn(hidden)})
    whole["decoder.final_layernorm.weight"] = 1 + 0.01 * torch.randn(hidden)
    whole["decoder.final_layernorm.bias"] = 0.01 * torch.randn(hidden)
    whole["output_layer.weight"] = torch.randn(vocab, hidden)
    return whole


def whole_moments(whole):
    # Adam's moments and the fp32 master copy of each whole parameter, cut
    # into slices as the parameter is (each rank's optimizer holds its slice's).
    g = torch.Generator().manual_seed(7)
    return {"exp_avg": {k: 0.1 * v + 0.01 * torch.randn(v.shape, generator=g) for k, v in whole.items()},
            "exp_avg_sq": {k: v * v + torch.rand(v.shape, generator=g) for k, v in whole.items()},
            "fp32_param": {k: v + 1e-3 * torch.randn(v.shape, generator=g) for k, v in whole.items()}}


def join_save(folder, iteration, whole, tp, pp, args, tamper=None):
    # Each pipeline stage's share of the layers, numbered from 0 on every
    # stage (the legacy format's state_dict), embeddings on the first stage,
    # the final norm and output layer on the last; each tensor rank its slice.
    layers = args.num_layers // pp
    moments = whole_moments(whole)
    for stage in range(pp):
        for rank in range(tp):
            model = {}
            local_moments = {m: {} for m in moments}
            for name, t in whole.items():
                local = name
                if name.startswith("decoder.layers."):
                    i = int(name.split(".")[2])
                    if i // layers != stage:
                        continue
                    local = f"decoder.layers.{i - stage * layers}." + name.split(".", 3)[3]
                elif name.startswith("embedding.") and stage != 0:
                    continue
                elif (name.startswith("decoder.final_layernorm") or name == "output_layer.weight") and stage != pp - 1:
                    continue
                model[local] = tp_split(name, t, tp, args.swiglu)[rank]
                for m, by_name in moments.items():
                    local_moments[m][local] = tp_split(name, by_name[name], tp, args.swiglu)[rank]
            if tamper:
                tamper(stage, rank, model)
                for m in local_moments:  # what the tampering added or changed: moments of its shape
                    for k, v in model.items():
                        if k not in local_moments[m] or local_moments[m][k].shape != v.shape:
                            local_moments[m][k] = torch.zeros_like(v)
            rank_dir = f"mp_rank_{rank:02d}" if pp == 1 else f"mp_rank_{rank:02d}_{stage:03d}"
            save_rank(os.path.join(folder, rank_dir, "model_optim_rng.pt"), args, iteration, model, distrib=False,
                      moments=local_moments, rng=seeded_rng_state(stage, rank))


def megatron_join(out):
    # A save of 2 tensor x 2 pipeline ranks with SwiGLU: every rule joins.
    args = megatron_args(2, 2, 3e-4)
    args.num_layers, args.swiglu, args.untie_embeddings_and_output_weights = 4, True, True
    args.position_embedding_type, args.add_bias_linear = "learned_absolute", True
    whole = join_whole(args.num_layers, swiglu=True)
    folder = os.path.join(out, "gpt", "iter_0000300")
    join_save(folder, 300, whole, 2, 2, args)
    # Each rank's own rng_state, as torch.load reads it back: shown per rank.
    rng = {}
    for rank_dir in sorted(os.listdir(folder)):
        state = torch.load(os.path.join(folder, rank_dir, "model_optim_rng.pt"))["rng_state"][0]
        rng[rank_dir] = {"torch_rng_state": state["torch_rng_state"].numpy().tobytes().hex(),
                         "tracker": state["rng_tracker_states"]["model-parallel-rng"].numpy().tobytes().hex(),
                         "random_version": state["random_rng_state"][0],
                         "random_first": state["random_rng_state"][1][0]}
    # The step apex's FusedAdam keeps per param group, as torch.load reads it.
    first = torch.load(os.path.join(folder, sorted(os.listdir(folder))[0], "model_optim_rng.pt"))
    steps = {g["step"] for g in first["optimizer"]["optimizer"]["param_groups"]}
    assert len(steps) == 1
    good = {"folder": folder, "tp": 2, "pp": 2, "rng": rng, "optimizer_step": steps.pop(),
            "whole": {k: {"shape": list(v.shape), "hex": v.contiguous().numpy().tobytes().hex()}
                      for k, v in whole.items()}}

    # A save whose slices cannot all be joined: a name no rule knows (an
    # adapter), QKV slices that disagree beyond the split dim, a replicated
    # norm whose copy on rank 1 differs.
    bad_args = megatron_args(2, 1, 3e-4)
    bad_args.swiglu = False
    bad_whole = join_whole(2, swiglu=False)

    def tamper(stage, rank, model):
        model["decoder.layers.0.adapter.lora_a.weight"] = torch.randn(4, 8)
        if rank == 1:
            model["decoder.layers.1.self_attention.linear_qkv.weight"] = torch.randn(12, 9)
            model["decoder.final_layernorm.weight"] = model["decoder.final_layernorm.weight"] + 1

    bad_folder = os.path.join(out, "bad", "iter_0000010")
    join_save(bad_folder, 10, bad_whole, 2, 1, bad_args, tamper)
    bad = {"folder": bad_folder, "unknown": ["decoder.layers.0.adapter.lora_a.weight"],
           "disagree": ["decoder.layers.1.self_attention.linear_qkv.weight"],
           "differs": ["decoder.final_layernorm.weight"],
           "final_norm_rank0_hex": bad_whole["decoder.final_layernorm.weight"].numpy().tobytes().hex()}
    return {"good": good, "bad": bad}


def titan_state(step):
    model = {"tok_embeddings.weight": torch.randn(16, 4), "layers.0.attention.wq.weight": torch.randn(4, 4),
             "norm.weight": torch.ones(4), "output.weight": torch.randn(16, 4)}
    optimizer = {"state": {k: {"step": torch.tensor(float(step)), "exp_avg": torch.zeros_like(v),
                               "exp_avg_sq": torch.zeros_like(v)} for k, v in model.items()},
                 "param_groups": [{"lr": 8e-4, "betas": [0.9, 0.95], "params": list(model)}]}
    return {"model": model, "optimizer": optimizer,
            "lr_scheduler": {"base_lrs": [8e-4], "last_epoch": step, "_step_count": step + 1},
            "train_state": {"step": torch.tensor(step, dtype=torch.int32)}}


def titan(out):
    dump = os.path.join(out, "outputs")
    steps = [10, 20]
    for step in steps:
        make_sharded.write_dcp(os.path.join(dump, "checkpoint", f"step-{step}"), titan_state(step), 2)
    # MetricsProcessor's TensorBoard logger: log_dir = dump_folder/save_tb_folder/<datetime>.
    t0 = 1735732800.0
    recs = [tfw.record(tfw.event(t0, file_version="brain.Event:2"))]
    for step in range(1, 21):
        recs.append(tfw.record(tfw.event(t0 + step, step, values=[
            tfw.value("loss_metrics/global_avg_loss", simple=4.0 / step),
            tfw.value("lr", simple=8e-4 * step / 20)])))
    tfw.write(os.path.join(dump, "tb", "20250101-1200", "events.out.tfevents.1735732800.node0.99.0"), recs)
    return {"run": "outputs", "steps": steps}


def titan_flat(out):
    """torchtitan's CheckpointManager since _flattened_model_states_sd: the
    model's keys at the top of the DCP state dict, beside optimizer,
    lr_scheduler and train_state. What torch finds between step-10 and
    step-20: each model tensor's ||b - a|| / ||a||."""
    dump = os.path.join(out, "outputs")
    models = {}
    for step in (10, 20):
        state = titan_state(step)
        model = state.pop("model")
        models[step] = model
        make_sharded.write_dcp(os.path.join(dump, "checkpoint", f"step-{step}"), {**model, **state}, 2)
    a, b = models[10], models[20]
    return {"rel_l2": {n: float((b[n].double() - a[n].double()).norm() / a[n].double().norm()) for n in a}}


def fake_megatron_modules():
    # The classes Megatron's pickles name, under Megatron's module names, so
    # that pickle writes the same GLOBAL opcodes Megatron's own save does
    # (megatron/core/enums.py ModelType, megatron/core/transformer/enums.py
    # AttnBackend, megatron/core/rerun_state_machine.py RerunState). Nothing
    # of Megatron runs; nothing is ever unpickled here.
    classes = {}
    for module, name, members in (("megatron.core.enums", "ModelType", ("encoder_or_decoder", "retro_encoder")),
                                  ("megatron.core.transformer.enums", "AttnBackend", ("flash", "fused", "auto")),
                                  ("megatron.core.rerun_state_machine", "RerunState",
                                   ("NOT_RUNNING_YET", "INITIAL_RUN"))):
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        cls = enum.Enum(name, [(m, i + 1) for i, m in enumerate(members)], module=module)
        setattr(sys.modules[module], name, cls)
        classes[name] = cls
    return classes


class Payload:
    # A pickle that would run a shell command when loaded (never loaded here).
    def __reduce__(self):
        return (os.system, ("echo megatron-args",))


def megatron_safety(out):
    # Rank files as Megatron writes them with its enums in args, the rerun
    # state machine's state and a Transformer Engine extra state: safe in a
    # Megatron save folder (its profile), suspicious anywhere else; one with
    # a call to os.system in args is dangerous in the folder too.
    c = fake_megatron_modules()
    args = megatron_args(1, 1, 1e-4)
    args.model_type = c["ModelType"].encoder_or_decoder
    args.attention_backend = c["AttnBackend"].auto
    model = rank_model(0, 1, [0, 1])
    model["decoder.layers.0.self_attention.linear_qkv._extra_state"] = io.BytesIO(b"te-fp8-meta")
    state = {"args": args, "checkpoint_version": 3.0, "iteration": 10, "model": model,
             "rerun_state_machine": {"mode": "disabled", "state": c["RerunState"].NOT_RUNNING_YET},
             "rng_state": rng_state()}
    good = os.path.join(out, "save", "iter_0000010", "mp_rank_00", "model_optim_rng.pt")
    os.makedirs(os.path.dirname(good), exist_ok=True)
    torch.save(state, good)
    loose = os.path.join(out, "loose", "model_optim_rng.pt")
    os.makedirs(os.path.dirname(loose), exist_ok=True)
    shutil.copyfile(good, loose)
    args.extra = Payload()
    bad = os.path.join(out, "save", "iter_0000020", "mp_rank_00", "model_optim_rng.pt")
    os.makedirs(os.path.dirname(bad), exist_ok=True)
    torch.save(state, bad)
    return {"safe": good, "loose": loose, "dangerous": bad}


def megatron_legacy(save):
    """Megatron-LM before mcore (the legacy GPTModel, checkpoint_version 3.0):
    model is {"language_model": language_model.state_dict_for_save_checkpoint()},
    nested dicts: embedding.word_embeddings / position_embeddings (each
    {"weight": ...}), and encoder, the ParallelTransformer's flat
    state_dict ("layers.0.input_norm.weight", ..., "final_norm.weight").
    Two saves of one rank; what torch finds between them: each tensor's
    ||b - a|| / ||a|| by its dotted path below model."""
    saves = {}
    for iteration in (10, 20):
        g = torch.Generator().manual_seed(iteration)

        def t(*shape):
            return torch.randn(*shape, generator=g)
        encoder = {"layers.0.input_norm.weight": t(8), "layers.0.self_attention.query_key_value.weight": t(24, 8),
                   "layers.0.self_attention.dense.weight": t(8, 8), "layers.0.mlp.dense_h_to_4h.weight": t(32, 8),
                   "layers.0.mlp.dense_4h_to_h.weight": t(8, 32), "final_norm.weight": t(8)}
        lm = {"embedding": {"word_embeddings": {"weight": t(16, 8)}, "position_embeddings": {"weight": t(8, 8)}},
              "encoder": encoder}
        args = megatron_args(1, 1, 3e-4)
        path = os.path.join(save, "iter_{:07d}".format(iteration), "mp_rank_00", "model_optim_rng.pt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save({"args": args, "checkpoint_version": 3.0, "iteration": iteration,
                    "model": {"language_model": lm}, "rng_state": rng_state()}, path)
        flat = {"language_model.embedding." + k + ".weight": v["weight"] for k, v in lm["embedding"].items()}
        flat.update({"language_model.encoder." + k: v for k, v in encoder.items()})
        saves[iteration] = flat
    with open(os.path.join(save, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("20")
    a, b = saves[10], saves[20]
    return {"rel_l2": {n: float((b[n].double() - a[n].double()).norm() / a[n].double().norm()) for n in a}}


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    expected = {"megatron": megatron(os.path.join(out, "mg")),
                "megatron_dist": megatron_dist(os.path.join(out, "mg_dist", "gpt")), "torchtitan": titan(os.path.join(out, "titan")),
                "megatron_safety": megatron_safety(os.path.join(out, "mg_safety")),
                "megatron_join": megatron_join(os.path.join(out, "mg_join")),
                "megatron_legacy": megatron_legacy(os.path.join(out, "mg_legacy", "gpt")),
                "torchtitan_flat": titan_flat(os.path.join(out, "titan_flat"))}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
