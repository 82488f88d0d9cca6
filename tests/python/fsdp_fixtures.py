"""FSDP checkpoints saved with torch.save, one file per rank, for
make_sharded.py. Debian's torch 1.13 cannot import its sharded_tensor module
and has no DTensor: stand-in classes with the writers' module and class names
and the same pickled state (FORMAT.md section 7) are written with the real
torch.save, so the files hold what PyTorch 2.x writes:
_rebuild_from_type_v2(_rebuild_wrapper_subclass, <class>, (cls, dtype, size,
stride, storage_offset, layout, device, requires_grad), state).

Layouts (under OUTDIR):
  fsdp_ws{1,2,3}/        SHARDED_STATE_DICT, ShardedTensor values, model_rank<r>.pt
  fsdp_dtensor_ws{1,2,3}/  SHARDED_STATE_DICT, DTensor values (Shard(0) / Replicate())
  fsdp_local_ws2/        LOCAL_STATE_DICT: one flat parameter buffer per rank
  fsdp_run/checkpoint-700/, fsdp_run/step_300/  a run, steps only in the folder names
  hostile/fsdp_missing   fsdp_ws3 without model_rank1.pt
  hostile/fsdp_outside, fsdp_overlap, fsdp_pastend
"""
import collections
import dataclasses
import os
import sys
import types
import zipfile
from typing import Any

import torch

OrderedDict = collections.OrderedDict
REPLICATED = ("scale", "position_ids")


def _module(name):
    m = sys.modules.get(name) or types.ModuleType(name)
    sys.modules[name] = m
    return m


def _register(module_name, cls, qualname=None):
    cls.__module__ = module_name
    if qualname:
        cls.__qualname__ = qualname
    setattr(_module(module_name), cls.__name__, cls)
    return cls


# ---- torch.distributed._shard (ShardedTensor) ------------------------------

class _remote_device:
    def __init__(self, rank):
        self._worker_name = None
        self._rank = rank
        self._device = torch.device("cpu")


@dataclasses.dataclass
class ShardMetadata:
    shard_offsets: Any
    shard_sizes: Any
    placement: Any = None


@dataclasses.dataclass
class Shard:
    tensor: Any
    metadata: Any


# TensorProperties: DCP's stand-in (make_sharded.py) under this module's name, set by make().
TensorProperties = None


@dataclasses.dataclass
class ShardedTensorMetadata:
    shards_metadata: Any
    size: Any
    tensor_properties: Any


@dataclasses.dataclass
class ChunkShardingSpec:
    dim: int
    placements: Any


@dataclasses.dataclass
class ProcessGroupState:
    local_rank: int
    global_rank: int
    local_world_size: int
    global_world_size: int


def _wrapper(cls, dtype, size, state):
    stride = torch.empty(size).stride() if len(size) else ()
    args = (cls, dtype, torch.Size(size), stride, 0, torch.strided, torch.device("cpu"), False)
    return (torch._tensor._rebuild_from_type_v2, (torch._utils._rebuild_wrapper_subclass, cls, args, state))


class ShardedTensor:
    def __init__(self, local_shards, metadata, rank, world):
        self.local_shards, self.metadata, self.rank, self.world = local_shards, metadata, rank, world

    def __reduce_ex__(self, proto):
        pg = ProcessGroupState(self.rank, self.rank, self.world, self.world)
        spec = ChunkShardingSpec(0, [f"rank:{r}/cpu" for r in range(self.world)])
        state = (self.local_shards, self.metadata, pg, spec, True)
        return _wrapper(type(self), self.metadata.tensor_properties.dtype, list(self.metadata.size), state)


_register("torch.distributed.remote_device", _remote_device)
_register("torch.distributed._shard.metadata", ShardMetadata)
_register("torch.distributed._shard.sharded_tensor.shard", Shard)
_register("torch.distributed._shard.sharded_tensor.metadata", ShardedTensorMetadata)
_register("torch.distributed._shard.sharding_spec.chunk_sharding_spec", ChunkShardingSpec)
_register("torch.distributed._shard.sharded_tensor.api", ShardedTensor)
ProcessGroupState.__module__ = "torch.distributed._shard.sharded_tensor.api"
ProcessGroupState.__qualname__ = "ShardedTensor.ProcessGroupState"
ShardedTensor.ProcessGroupState = ProcessGroupState


def sharded_tensor(full, pieces, rank, world, said=None):
    """pieces: [(offsets, sizes, owner rank)] of every rank; this rank's local
    shards. `said`: the pieces the metadata claims instead (hostile files)."""
    all_md = [ShardMetadata(list(o), list(s), _remote_device(r)) for o, s, r in (said or pieces)]
    local = []
    for md, (o, s, r) in zip(all_md, pieces):
        if r == rank:
            idx = tuple(slice(a, a + b) for a, b in zip(o, s))
            local.append(Shard(full[idx].clone(), md))
    meta = ShardedTensorMetadata(all_md, full.size(), TensorProperties(full.dtype))
    return ShardedTensor(local, meta, rank, world)


# ---- DTensor (torch.distributed.tensor, PyTorch >= 2.5 names) -------------

@dataclasses.dataclass(frozen=True)
class DShard:
    dim: int


@dataclasses.dataclass(frozen=True)
class Replicate:
    pass


class TensorMeta(collections.namedtuple("TensorMeta", ["shape", "stride", "dtype"])):
    pass


@dataclasses.dataclass
class DTensorSpec:
    mesh: Any
    placements: Any
    tensor_meta: Any = None


class DeviceMesh:
    def __init__(self, world):
        self.device_type = "cpu"
        self.mesh = torch.arange(world)
        self.mesh_dim_names = None


class DTensor:
    def __init__(self, local, spec, size):
        self._local_tensor, self._spec, self.size = local, spec, size

    def __reduce_ex__(self, proto):
        # A class with __slots__: (None, {slot: value}) as object.__getstate__ gives.
        state = (None, {"_local_tensor": self._local_tensor, "_spec": self._spec})
        return _wrapper(type(self), self._local_tensor.dtype, list(self.size), state)


DShard.__name__ = "Shard"
_register("torch.distributed.tensor.placement_types", DShard, "Shard")
_register("torch.distributed.tensor.placement_types", Replicate)
_register("torch.distributed.tensor._dtensor_spec", TensorMeta)
_register("torch.distributed.tensor._dtensor_spec", DTensorSpec)
_register("torch.distributed.device_mesh", DeviceMesh)
_register("torch.distributed.tensor", DTensor)


def dtensor(full, rank, world, replicate):
    mesh = DeviceMesh(world)
    if replicate:
        placements, local = (Replicate(),), full.clone()
    else:
        per = (full.shape[0] + world - 1) // world
        start = min(rank * per, full.shape[0])
        placements, local = (DShard(0),), full[start:start + per].clone()
    spec = DTensorSpec(mesh, placements, TensorMeta(full.size(), full.stride(), full.dtype))
    return DTensor(local, spec, full.size())


# ---- writers ---------------------------------------------------------------

def _split(t, world, rank_chunks):
    """FSDP's dim-0 chunks as torch.chunk makes them: empty ones are left out."""
    return [([start] + [0] * (t.dim() - 1), [rows] + list(t.shape[1:]), r)
            for r, (start, rows) in enumerate(rank_chunks(t.shape[0], world)) if rows > 0]


def write_sharded(folder, sd, world, rank_chunks, mutate=None, extra=None):
    """extra: {rank: {key: value}} added to that rank's state dict."""
    os.makedirs(folder, exist_ok=True)
    for rank in range(world):
        out = OrderedDict()
        for k, t in sd.items():
            if t.dim() == 0 or k.split(".")[-1] in REPLICATED:
                out[k] = t.clone()
                continue
            pieces = _split(t, world, rank_chunks)
            said = mutate(pieces) if mutate and k == "token_embed.weight" else None
            out[k] = sharded_tensor(t, pieces, rank, world, said)
        out.update((extra or {}).get(rank, {}))
        torch.save(out, os.path.join(folder, f"model_rank{rank}.pt"))


def write_dtensor(folder, sd, world):
    os.makedirs(folder, exist_ok=True)
    for rank in range(world):
        out = OrderedDict()
        for k, t in sd.items():
            out[k] = dtensor(t, rank, world, t.dim() == 0 or k.split(".")[-1] in REPLICATED)
        torch.save(out, os.path.join(folder, f"model_rank{rank}.pt"))


def write_local(folder, sd, world):
    """LOCAL_STATE_DICT: the float32 parameters flattened into one buffer,
    each rank's share a ShardedTensor of it (FSDP drops the padding); the
    buffers plain. Returns the state dict it stands for."""
    os.makedirs(folder, exist_ok=True)
    flat = torch.cat([t.flatten() for t in sd.values() if t.dtype == torch.float32 and t.dim() > 0])
    per = (flat.numel() + world - 1) // world
    key = "_fsdp_wrapped_module._flat_param"
    pieces = [([r * per], [min(per, flat.numel() - r * per)], r) for r in range(world)
              if flat.numel() - r * per > 0]
    for rank in range(world):
        out = OrderedDict()
        out[key] = sharded_tensor(flat, pieces, rank, world)
        out["_fsdp_wrapped_module.position_ids"] = sd["position_ids"].clone()
        torch.save(out, os.path.join(folder, f"model_rank{rank}.pt"))
    return OrderedDict([(key, flat), ("_fsdp_wrapped_module.position_ids", sd["position_ids"])])


def truncate_storage(path, tensor_rows):
    """Rewrites a rank file with the storage of its first ShardedTensor chunk
    cut short: the tensor then runs past the end of its record."""
    src = zipfile.ZipFile(path)
    names = src.namelist()
    data = {n: src.read(n) for n in names}
    src.close()
    stem = names[0].split("/")[0]
    first = f"{stem}/data/0"
    data[first] = data[first][:tensor_rows]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for n in names:
            z.writestr(n, data[n])


def make(out, sd, manifest, describe, rank_chunks, dcp_properties):
    """dcp_properties: make_sharded.py's TensorProperties, the same dataclass
    (older PyTorch has one class for both)."""
    global TensorProperties
    TensorProperties = _register("torch.distributed._shard.sharded_tensor.metadata",
                                 type("TensorProperties", (dcp_properties,), {}))
    layouts = manifest["layouts"]
    for world in (1, 2, 3):
        write_sharded(os.path.join(out, f"fsdp_ws{world}"), sd, world, rank_chunks)
        layouts[f"fsdp_ws{world}"] = {"tensors": describe(sd), "files": world, "ranks": world}
    for world in (1, 2, 3):
        write_dtensor(os.path.join(out, f"fsdp_dtensor_ws{world}"), sd, world)
        layouts[f"fsdp_dtensor_ws{world}"] = {"tensors": describe(sd), "files": world, "ranks": world}
    local = write_local(os.path.join(out, "fsdp_local_ws2"), sd, 2)
    torch.save(local, os.path.join(out, "fsdp_local_ws2.expected.pt"))
    layouts["fsdp_local_ws2"] = {"tensors": describe(local), "files": 2, "ranks": 2,
                                 "flat": ["_fsdp_wrapped_module._flat_param"]}

    # A run of FSDP checkpoints whose step is only in the folder's name.
    write_sharded(os.path.join(out, "fsdp_run", "checkpoint-700"), sd, 2, rank_chunks)
    write_sharded(os.path.join(out, "fsdp_run", "step_300"), sd, 1, rank_chunks)

    hostile = os.path.join(out, "hostile")
    folder = os.path.join(hostile, "fsdp_missing")
    write_sharded(folder, sd, 3, rank_chunks)
    os.remove(os.path.join(folder, "model_rank1.pt"))
    gone = {k for k, t in sd.items() if t.dim() > 0 and k.split(".")[-1] not in REPLICATED
            and rank_chunks(t.shape[0], 3)[1][1] > 0}
    layouts["hostile/fsdp_missing"] = {"tensors": describe(sd, gone), "missing": "model_rank1.pt"}
    # The last rank's file is gone: no gap in the names says so, the shard metadata does.
    folder = os.path.join(hostile, "fsdp_lastmissing")
    write_sharded(folder, sd, 3, rank_chunks)
    os.remove(os.path.join(folder, "model_rank2.pt"))
    gone = {k for k, t in sd.items() if t.dim() > 0 and k.split(".")[-1] not in REPLICATED
            and rank_chunks(t.shape[0], 3)[2][1] > 0}
    layouts["hostile/fsdp_lastmissing"] = {"tensors": describe(sd, gone), "missing": "model_rank2.pt",
                                           "ranks": 3}
    # Rank 1's chunk of token_embed.weight moved past the 10 rows, or over rank 0's.
    for name, row in (("fsdp_outside", 8), ("fsdp_overlap", 4)):
        write_sharded(os.path.join(hostile, name), sd, 2, rank_chunks,
                      mutate=lambda p, row=row: [p[0], ([row, 0], p[1][1], p[1][2])])
        layouts[f"hostile/{name}"] = {"tensors": describe(sd, {"token_embed.weight"}), "key": "token_embed.weight"}
    folder = os.path.join(hostile, "fsdp_pastend")
    write_sharded(folder, sd, 2, rank_chunks)
    truncate_storage(os.path.join(folder, "model_rank1.pt"), 16)
    layouts["hostile/fsdp_pastend"] = {"tensors": describe(sd, {"token_embed.weight"}), "key": "token_embed.weight"}
