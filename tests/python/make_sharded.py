#!/usr/bin/python3
"""Write checkpoints of many shards from one known state dict, and check what
ckptscope-cli consolidate wrote against it.

    /usr/bin/python3 make_sharded.py OUTDIR
    /usr/bin/python3 make_sharded.py check OUTDIR CONSOLIDATED [--dtype bf16|fp32] [--key KEY] [--ref FILE]
    /usr/bin/python3 make_sharded.py serve OUTDIR   (check, a JSON request a line: one torch import)

OUTDIR/reference.pt is the state dict every layout holds; OUTDIR/manifest.json
says, per layout folder, which tensors it holds with torch's dtype and shape
(and which are incomplete). Layouts:
  hf_st/   model.safetensors.index.json + 2 safetensors shards
  hf_bin/  pytorch_model.bin.index.json + 3 torch.save shards
  hostile/hf_missing   weight_map naming a shard that is not there
  hostile/hf_escape    weight_map naming ../../etc/passwd and /etc/passwd
  hostile/hf_nokey     a shard without the tensor the index says it holds
  fsdp_*/ and hostile/fsdp_*: FSDP per-rank torch.save files (fsdp_fixtures.py)
  ds_*/ and hostile/ds_missing: DeepSpeed tag folders (deepspeed_fixtures.py)
  hostile/{dcp,fsdp,hf}_evil, hostile/dcp_evilmeta: one file would call os.system
      if loaded (manifest "safety": which file, which global)
`check` loads CONSOLIDATED (torch.load, or a safetensors file parsed here)
and prints "OK n" when every tensor torch.equal's the reference (converted
to the --dtype first), else the first difference, exiting 1.
"""
import collections
import dataclasses
import enum
import io
import json
import os
import struct
import sys
import types
from typing import Any, Optional

import torch

torch.set_num_threads(1)
OrderedDict = collections.OrderedDict


def state_dict():
    g = torch.Generator().manual_seed(16)
    sd = OrderedDict()
    sd["token_embed.weight"] = torch.randn(10, 6, generator=g)
    # Two rows: at world size 3 the last rank's chunk is empty.
    sd["blocks.0.attn.sink_states"] = torch.randn(2, 6, generator=g)
    for i in range(2):
        b = f"blocks.{i}."
        sd[b + "attn.q_proj.weight"] = torch.randn(6, 6, generator=g)
        sd[b + "attn_norm.weight"] = 1 + torch.randn(6, generator=g) * 0.1
        sd[b + "ffn.gate.weight"] = torch.randn(7, 6, generator=g)
        sd[b + "ffn.gate.bias"] = torch.randn(7, generator=g)
    sd["final_norm.weight"] = torch.randn(6, generator=g).to(torch.bfloat16)
    sd["lm_head.weight"] = torch.randn(10, 6, generator=g).to(torch.float16)
    sd["position_ids"] = torch.arange(5, dtype=torch.int64)
    sd["scale"] = torch.tensor(0.5)
    return sd


ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
             torch.float64: "F64", torch.int32: "I32", torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8"}
ST_BACK = {v: k for k, v in ST_DTYPES.items()}


def raw(t):
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    header, data = OrderedDict(), b""
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        b = raw(t)
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def read_safetensors(path):
    return read_safetensors_with_metadata(path)[1]


def read_safetensors_with_metadata(path):
    """(the "__metadata__" dict or None, name -> tensor), parsed by hand: an
    8-byte little-endian header length, the JSON header, the tensors' bytes."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob), f"header length {n} past the end of {path}"
    header = json.loads(blob[8:8 + n])
    out = OrderedDict()
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        b, e = spec["data_offsets"]
        assert 0 <= b <= e <= len(blob) - 8 - n, f"{name}: data_offsets {b}, {e} outside {path}"
        dt = ST_BACK[spec["dtype"]]
        buf = bytearray(blob[8 + n + b:8 + n + e])
        if dt in (torch.bfloat16, torch.float16):
            t = torch.frombuffer(buf, dtype=torch.int16).view(dt) if buf else torch.empty(0, dtype=dt)
        else:
            t = torch.frombuffer(buf, dtype=dt) if buf else torch.empty(0, dtype=dt)
        out[name] = t.reshape(spec["shape"])
    return header.get("__metadata__"), out


def split(names, n):
    """Consecutive groups of names, as transformers' shard_checkpoint makes them."""
    per = (len(names) + n - 1) // n
    return [names[i:i + per] for i in range(0, len(names), per)]


def hf_index(folder, sd, shards, kind, total_size=None):
    os.makedirs(folder, exist_ok=True)
    names = list(sd)
    groups = split(names, shards)
    weight_map = OrderedDict()
    for i, group in enumerate(groups):
        if kind == "safetensors":
            file = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
            write_safetensors(os.path.join(folder, file), OrderedDict((k, sd[k]) for k in group), {"format": "pt"})
        else:
            file = f"pytorch_model-{i + 1:05d}-of-{len(groups):05d}.bin"
            torch.save(OrderedDict((k, sd[k].clone()) for k in group), os.path.join(folder, file))
        for k in group:
            weight_map[k] = file
    index = {"metadata": {"total_size": total_size or sum(t.numel() * t.element_size() for t in sd.values())},
             "weight_map": weight_map}
    name = "model.safetensors.index.json" if kind == "safetensors" else "pytorch_model.bin.index.json"
    with open(os.path.join(folder, name), "w") as f:
        json.dump(index, f, indent=2)
    return weight_map


def describe(sd, incomplete=(), prefix=()):
    return [{"name": k, "path": list(prefix) + [k], "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
             "incomplete": k in incomplete} for k, t in sd.items()]


# ---- torch.distributed.checkpoint stand-ins (Debian's torch 1.13 has none) ----
# Same module and class names and the same pickled state as PyTorch 2.x.

def _module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


_META = _module("torch.distributed.checkpoint.metadata")
_FS = _module("torch.distributed.checkpoint.filesystem")


def _register(module, cls):
    cls.__module__ = module.__name__
    setattr(module, cls.__name__, cls)
    return cls


class _MEM_FORMAT_ENCODING(enum.Enum):
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


_register(_META, _MEM_FORMAT_ENCODING)


@dataclasses.dataclass
class ChunkStorageMetadata:
    offsets: Any
    sizes: Any


@dataclasses.dataclass
class TensorProperties:
    dtype: Any
    layout: Any = torch.strided
    requires_grad: bool = False
    memory_format: Any = torch.contiguous_format
    pin_memory: bool = False

    def __getstate__(self):
        return (self.dtype, self.layout, self.requires_grad, _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT,
                self.pin_memory)


@dataclasses.dataclass
class TensorStorageMetadata:
    properties: Any
    size: Any
    chunks: Any


@dataclasses.dataclass
class BytesStorageMetadata:
    pass


@dataclasses.dataclass(frozen=True)
class MetadataIndex:
    fqn: str
    offset: Optional[Any] = None
    index: Optional[int] = dataclasses.field(hash=False, compare=False, default=None)


@dataclasses.dataclass
class Metadata:
    state_dict_metadata: Any
    planner_data: Any = None
    storage_data: Any = None


@dataclasses.dataclass
class StorageMeta:
    """PyTorch >= 2.4: the writer's checkpoint id (the folder, a Path), ids of the save."""
    checkpoint_id: Any = None
    save_id: Optional[str] = None
    load_id: Optional[str] = None
    modules: Any = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _StorageInfo:
    relative_path: str
    offset: int
    length: int


for _c in (ChunkStorageMetadata, TensorProperties, TensorStorageMetadata, BytesStorageMetadata, MetadataIndex, Metadata,
           StorageMeta):
    _register(_META, _c)
_register(_FS, _StorageInfo)


def flatten(state, lists_too):
    """DCP's flatten_state_dict: dotted keys -> (path tuple, value). Before
    PyTorch 2.4 lists were leaves; since, they are traversed too."""
    out = OrderedDict()

    def walk(v, path):
        if isinstance(v, dict) and v:
            for k, x in v.items():
                walk(x, path + (k,))
        elif lists_too and isinstance(v, list) and v:
            for i, x in enumerate(v):
                walk(x, path + (i,))
        else:
            out[".".join(str(p) for p in path)] = (path, v)
    walk(state, ())
    return out


def rank_chunks(n, world):
    """FSDP's dim-0 split: ceil(n / world) rows per rank, the last ones shorter or empty."""
    per = (n + world - 1) // world
    return [(min(r * per, n), max(0, min(per, n - r * per))) for r in range(world)]


class _Payload:
    """Pickles as os.system(cmd) (REDUCE of the global posix.system): what a
    hostile rank file carries. Never unpickled, here or by the tests."""

    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return os.system, (self.cmd,)


def write_dcp(folder, state, world, lists_too=True, replicate=("scale", "position_ids"), first=(),
              storage_meta=False):
    """first: (rank, fqn, object) bytes items written at the start of that
    rank's file, before the state's items. storage_meta: as PyTorch >= 2.4's
    FileSystemWriter.finish, a StorageMeta whose checkpoint_id is the folder
    as a pathlib.Path."""
    os.makedirs(folder, exist_ok=True)
    flat = flatten(state, lists_too)
    blobs = [io.BytesIO() for _ in range(world)]
    sdm, storage = OrderedDict(), OrderedDict()

    def put(rank, fqn, offsets, payload):
        f = f"__{rank}_0.distcp"
        start = blobs[rank].tell()
        blobs[rank].write(payload)
        storage[MetadataIndex(fqn, offsets, len(storage))] = _StorageInfo(f, start, blobs[rank].tell() - start)

    def saved(obj):
        b = io.BytesIO()
        torch.save(obj, b)
        return b.getvalue()

    for rank, fqn, obj in first:
        sdm[fqn] = BytesStorageMetadata()
        put(rank, fqn, None, saved(obj))
    for fqn, (path, v) in flat.items():
        if not isinstance(v, torch.Tensor):
            sdm[fqn] = BytesStorageMetadata()
            put(0, fqn, None, saved(v))
            continue
        chunks = []
        if v.dim() == 0 or fqn.split(".")[-1] in replicate:
            # Replicated: every rank has it, the planner keeps rank 0's.
            offsets = torch.Size([0] * v.dim())
            chunks.append(ChunkStorageMetadata(offsets, v.size()))
            put(0, fqn, offsets, saved(v.clone()))
        else:
            for rank, (start, rows) in enumerate(rank_chunks(v.shape[0], world)):
                offsets = torch.Size([start] + [0] * (v.dim() - 1))
                sizes = torch.Size([rows] + list(v.shape[1:]))
                chunks.append(ChunkStorageMetadata(offsets, sizes))
                put(rank, fqn, offsets, saved(v[start:start + rows].clone()))
        sdm[fqn] = TensorStorageMetadata(TensorProperties(v.dtype), v.size(), chunks)
    planner = OrderedDict((k, p) for k, (p, _) in flat.items())
    for _, fqn, _ in first:
        planner[fqn] = (fqn,)
    md = Metadata(sdm, planner, storage)
    if storage_meta:
        import pathlib
        md.storage_meta = StorageMeta(pathlib.Path(folder), "c0ffee00-0000-4000-8000-000000000000")
    with open(os.path.join(folder, ".metadata"), "wb") as f:
        import pickle
        pickle.dump(md, f, protocol=4)
    for r, b in enumerate(blobs):
        with open(os.path.join(folder, f"__{r}_0.distcp"), "wb") as f:
            f.write(b.getvalue())
    return md


def chunk_layout(md):
    """Per DCP key, the chunks as written: file, rank, offsets, sizes (what
    the inspector's Shards tab must show)."""
    out = OrderedDict()
    for fqn, tsm in md.state_dict_metadata.items():
        if not isinstance(tsm, TensorStorageMetadata):
            continue
        rows = []
        for c in tsm.chunks:
            info = md.storage_data[MetadataIndex(fqn, c.offsets)]
            rows.append({"file": info.relative_path, "rank": int(info.relative_path.split("_")[2]),
                         "offsets": list(c.offsets), "sizes": list(c.sizes)})
        out[fqn] = rows
    return out


def make(out):
    os.makedirs(out, exist_ok=True)
    sd = state_dict()
    torch.save(sd, os.path.join(out, "reference.pt"))
    manifest = {"layouts": {}}
    hf_index(os.path.join(out, "hf_st"), sd, 2, "safetensors")
    manifest["layouts"]["hf_st"] = {"tensors": describe(sd), "files": 3}
    hf_index(os.path.join(out, "hf_bin"), sd, 3, "bin")
    manifest["layouts"]["hf_bin"] = {"tensors": describe(sd), "files": 4}

    hostile = os.path.join(out, "hostile")
    # A shard the index names is not there: its tensors incomplete, the rest readable.
    wm = hf_index(os.path.join(hostile, "hf_missing"), sd, 3, "safetensors")
    gone = sorted(set(wm.values()))[1]
    os.remove(os.path.join(hostile, "hf_missing", gone))
    manifest["layouts"]["hostile/hf_missing"] = {
        "tensors": describe(sd, {k for k, f in wm.items() if f == gone}), "missing": gone}
    # Names that lead outside the folder: never opened.
    folder = os.path.join(hostile, "hf_escape")
    wm = hf_index(folder, sd, 2, "safetensors")
    index_path = os.path.join(folder, "model.safetensors.index.json")
    with open(index_path) as f:
        index = json.load(f)
    index["weight_map"]["token_embed.weight"] = "../../etc/passwd"
    index["weight_map"]["scale"] = "/etc/passwd"
    with open(index_path, "w") as f:
        json.dump(index, f)
    manifest["layouts"]["hostile/hf_escape"] = {
        "tensors": describe(sd, {"token_embed.weight", "scale"})}
    # The shard exists but lacks a tensor the index puts there.
    folder = os.path.join(hostile, "hf_nokey")
    wm = hf_index(folder, sd, 2, "safetensors")
    index_path = os.path.join(folder, "model.safetensors.index.json")
    with open(index_path) as f:
        index = json.load(f)
    index["weight_map"]["ghost.weight"] = wm["scale"]
    with open(index_path, "w") as f:
        json.dump(index, f)
    manifest["layouts"]["hostile/hf_nokey"] = {"ghost": "ghost.weight", "file": wm["scale"]}

    # DCP: {"model": sd, "step": 1000, "lrs": [...]} at world sizes 1, 2, 3.
    dcp_state = OrderedDict([("model", sd), ("step", 1000), ("lrs", [0.001, 0.0005])])
    for world in (1, 2, 3):
        md = write_dcp(os.path.join(out, f"dcp_ws{world}"), dcp_state, world)
        manifest["layouts"][f"dcp_ws{world}"] = {"tensors": describe(sd, prefix=("model",)), "files": world + 1,
                                                 "ranks": world, "step": 1000, "chunks": chunk_layout(md)}
    write_dcp(os.path.join(out, "dcp_ws2_old"), dcp_state, 2, lists_too=False)
    # PyTorch >= 2.4's .metadata: a StorageMeta with the folder as a pathlib.Path.
    write_dcp(os.path.join(out, "dcp_ws2_storage_meta"), dcp_state, 2, storage_meta=True)
    manifest["layouts"]["dcp_ws2_storage_meta"] = {"tensors": describe(sd, prefix=("model",)), "files": 3,
                                                   "ranks": 2, "step": 1000}
    manifest["layouts"]["dcp_ws2_old"] = {"tensors": describe(sd, prefix=("model",)), "files": 3, "ranks": 2,
                                          "step": 1000}
    # A rank's file is gone: the tensors with a chunk there are incomplete.
    folder = os.path.join(hostile, "dcp_missing")
    md = write_dcp(folder, dcp_state, 3)
    os.remove(os.path.join(folder, "__1_0.distcp"))
    split_rows = {k for k, t in sd.items() if t.dim() > 0 and k not in ("scale", "position_ids")
                  and rank_chunks(t.shape[0], 3)[1][1] > 0}
    manifest["layouts"]["hostile/dcp_missing"] = {"tensors": describe(sd, split_rows, prefix=("model",)),
                                                  "missing": "__1_0.distcp", "chunks": chunk_layout(md)}
    # The last rank's file is gone: .metadata still names it.
    folder = os.path.join(hostile, "dcp_lastmissing")
    write_dcp(folder, dcp_state, 3)
    os.remove(os.path.join(folder, "__2_0.distcp"))
    last_rows = {k for k, t in sd.items() if t.dim() > 0 and k not in ("scale", "position_ids")
                 and rank_chunks(t.shape[0], 3)[2][1] > 0}
    manifest["layouts"]["hostile/dcp_lastmissing"] = {"tensors": describe(sd, last_rows, prefix=("model",)),
                                                      "missing": "__2_0.distcp", "ranks": 3}
    # Chunks that do not fit: outside the shape, overlapping, past the file's end.
    for name, mutate in (("dcp_outside", "outside"), ("dcp_overlap", "overlap"), ("dcp_pastend", "pastend")):
        folder = os.path.join(hostile, name)
        md = write_dcp(folder, dcp_state, 2)
        key = "model.token_embed.weight"
        tsm = md.state_dict_metadata[key]
        if mutate in ("outside", "overlap"):
            # Rank 1's chunk moved to row 8 (past the 10 rows) or row 4 (over rank 0's).
            row = 8 if mutate == "outside" else 4
            c = tsm.chunks[1]
            tsm.chunks[1] = ChunkStorageMetadata(torch.Size([row, 0]), c.sizes)
            for k in list(md.storage_data):
                if k.fqn == key and list(k.offset) == [5, 0]:
                    md.storage_data[MetadataIndex(key, torch.Size([row, 0]), k.index)] = md.storage_data.pop(k)
        else:
            for k, v in md.storage_data.items():
                if k.fqn == key and list(k.offset) == [5, 0]:
                    v.length += 10 ** 6
        import pickle
        with open(os.path.join(folder, ".metadata"), "wb") as f:
            pickle.dump(md, f, protocol=4)
        manifest["layouts"][f"hostile/{name}"] = {"tensors": describe(sd, {key.split(".", 1)[1]}, prefix=("model",)), "key": key}

    # FSDP's torch.save per rank (fsdp_fixtures.py).
    import fsdp_fixtures
    fsdp_fixtures.make(out, sd, manifest, describe, rank_chunks, TensorProperties)

    # Would run code if loaded: one rank's file (or .metadata) holds a pickle
    # that calls os.system; the others are the plain fixtures'. "file" is the
    # file with the payload, "dangerous" the global the pickler wrote for it.
    pwned = os.path.join(hostile, "PWNED")
    payload = _Payload("touch " + pwned)
    dangerous = f"{os.system.__module__}.{os.system.__name__}"
    # DCP: rank 2's first archive is a bytes item that calls it (its last
    # archive, a tensor chunk, is what a zip reader finds from the file's end).
    folder = os.path.join(hostile, "dcp_evil")
    write_dcp(folder, dcp_state, 3, first=((2, "extra_state", payload),))
    manifest["safety"] = {"hostile/dcp_evil": {"file": "__2_0.distcp", "dangerous": dangerous, "ranks": 3}}
    # DCP: .metadata itself is the payload (no Metadata at all).
    folder = os.path.join(hostile, "dcp_evilmeta")
    write_dcp(folder, dcp_state, 2)
    import pickle
    with open(os.path.join(folder, ".metadata"), "wb") as f:
        pickle.dump(payload, f, protocol=4)
    manifest["safety"]["hostile/dcp_evilmeta"] = {"file": ".metadata", "dangerous": dangerous, "ranks": 2}
    # FSDP: rank 1's file carries it beside its shards.
    folder = os.path.join(hostile, "fsdp_evil")
    fsdp_fixtures.write_sharded(folder, sd, 3, rank_chunks, extra={1: {"_extra_state": payload}})
    manifest["safety"]["hostile/fsdp_evil"] = {"file": "model_rank1.pt", "dangerous": dangerous, "ranks": 3}
    # Hugging Face: the second of three torch.save shards.
    folder = os.path.join(hostile, "hf_evil")
    wm = hf_index(folder, sd, 3, "bin")
    shard = sorted(set(wm.values()))[1]
    evil = torch.load(os.path.join(folder, shard))
    evil["_extra_state"] = payload
    torch.save(evil, os.path.join(folder, shard))
    manifest["safety"]["hostile/hf_evil"] = {"file": shard, "dangerous": dangerous, "ranks": 0}
    # DeepSpeed tag folders, ZeRO-2 and ZeRO-3 (deepspeed_fixtures.py).
    import deepspeed_fixtures
    deepspeed_fixtures.make(out, sd, manifest, describe)

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def check(out, consolidated, dtype=None, key=None, ref_name=None):
    ref = torch.load(os.path.join(out, ref_name or "reference.pt"))
    if consolidated.endswith(".safetensors"):
        got = read_safetensors(consolidated)
    else:
        got = torch.load(consolidated)
        if key:
            got = got[key]
    if list(got) != list(ref):
        print("keys differ:", list(got), "vs", list(ref))
        return 1
    want_type = {"bf16": torch.bfloat16, "fp32": torch.float32}.get(dtype)
    for k, t in ref.items():
        g = got[k]
        if want_type is not None and t.is_floating_point():
            t = t.to(want_type)
        if g.dtype != t.dtype or list(g.shape) != list(t.shape) or not torch.equal(g, t):
            print(f"{k}: got {g.dtype} {list(g.shape)} {g.flatten()[:4].tolist()}, "
                  f"want {t.dtype} {list(t.shape)} {t.flatten()[:4].tolist()}")
            return 1
    print("OK", len(ref))
    return 0


def serve(out):
    """`check` for many files with one torch import: a JSON request a line
    on stdin ({"consolidated", "dtype", "key", "ref"}), a JSON answer a line
    on stdout ({"rc", "out"}) with what `check` would print and exit with."""
    import contextlib
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text):
                rc = check(out, req["consolidated"], req.get("dtype"), req.get("key"), req.get("ref"))
        except Exception as e:  # a file torch cannot load: the answer says why
            rc = 1
            text.write(f"{type(e).__name__}: {e}\n")
        sys.stdout.write(json.dumps({"rc": rc, "out": text.getvalue()}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
        sys.exit(0)
    if sys.argv[1] == "check":
        args = sys.argv[2:]
        opts = {}
        while len(args) > 2 and args[-2].startswith("--"):
            opts[args[-2][2:]] = args[-1]
            args = args[:-2]
        sys.exit(check(args[0], args[1], opts.get("dtype"), opts.get("key"), opts.get("ref")))
    make(sys.argv[1])
