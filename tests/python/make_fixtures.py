#!/usr/bin/python3
"""Write the checkpoint fixtures the C++ tests read, and their expectations.

Usage: /usr/bin/python3 make_fixtures.py OUTDIR   (Debian's python3-torch, 1.13)

OUTDIR/manifest.json:
  {"fixtures": [{"file": relative path, "format": "torch-zip" | "torch-legacy" |
                 "safetensors", "description": str, "tree": VALUE,
                 "tensors": [TENSOR, ...], "weights_only_ok": bool (torch files),
                 "checkpoint": {...} (checkpoints under runs/ only)}, ...],
   "runs": {relative path: {"run", "step", "kind", "loss", "error"}, ...}}

VALUE is the `info --json` encoding of what torch.load(weights_only=False)
returns (Encoder below): JSON scalars; {"$int": "digits"} outside int64;
{"$float": "nan"|"inf"|"-inf"}; {"$bytes": hex}; {"$tuple": [...]} (also
torch.Size); {"$set": [...]}; str-keyed dicts as objects, other dicts as
{"$dict": [[k, v], ...]}; {"$tensor": i}; {"$global": "torch.float32"} for
dtypes; numpy scalars as plain values; anything else {"$object": "mod.Class"}.

Notes for the C++ side:
  * "$set" elements are in pickle order: the script re-executes itself with
    PYTHONHASHSEED=0 and asserts that every saved set iterates the same way
    after a round trip, so comparing in order is safe (sorting also works).
  * Storage keys and storage numels are taken from the persistent ids the
    file really holds (a recording unpickler wraps torch.load), never guessed.
  * Checksums are plain sequential float64 sums in row-major logical order,
    starting from 0.0, over finite values only: "sum" = sum v_i,
    "wsum" = sum v_i * ((i % 7) + 1), "sum_abs" = sum |v_i|. A different
    summation order rounds differently: compare within ~1e-12 * 7 * sum_abs.
    bool -> 0/1; quantized -> the stored integers (int_repr); quint4x2 and
    quint2x4 pack 2 resp. 4 elements per byte, low bits first, and the sums
    are over the unpacked per-element integers; complex -> real parts, with
    "sum_imag"/"wsum_imag" for the imaginary parts; meta -> null checksums.
  * storage_numel counts elements of the storage type (bytes for the packed
    quint4x2 / quint2x4 storages: ceil(numel / 2) resp. ceil(numel / 4)).
"""
import os
import sys

if os.environ.get("PYTHONHASHSEED") != "0":
    # Set iteration order of strings and the bytes written depend on it.
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import collections
import io
import json
import math
import pathlib
import pickle
import pickletools
import random
import re
import struct
import types
import zipfile

import numpy as np
import torch
from torch import nn

torch.set_num_threads(1)
OrderedDict = collections.OrderedDict

# The dataclass the fixtures pickle, at a stable module path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_types import RunInfo  # noqa: E402

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# ---------------------------------------------------------------- loading ---

class _Recorder:
    """What the recording unpickler saw: persistent ids per storage object and
    per rebuilt tensor. Every object is kept alive so that id() stays unique."""

    def __init__(self):
        self.keep = []
        self.storage_pid = {}
        self.tensor_pid = {}


def _recording_pickle_module(rec):
    """A pickle module for torch.load(pickle_module=...): torch subclasses its
    Unpickler and assigns persistent_load; we wrap both to learn, for each
    tensor, the ('storage', type, key, location, numel[, view]) id it used."""

    class RecordingUnpickler(pickle._Unpickler):  # pure Python: attribute lookups at call time
        @property
        def persistent_load(self):
            return self._rec_persistent_load

        @persistent_load.setter
        def persistent_load(self, fn):
            def wrapped(pid):
                obj = fn(pid)
                rec.keep.append(obj)
                rec.storage_pid[id(obj)] = tuple(pid)
                return obj

            self._rec_persistent_load = wrapped

        def find_class(self, module, name):
            obj = super().find_class(module, name)
            if module != "torch._utils":
                return obj
            if name in ("_rebuild_tensor_v2", "_rebuild_qtensor", "_rebuild_tensor"):
                def rebuild(storage, *args, _fn=obj):
                    t = _fn(storage, *args)
                    rec.keep.append(t)
                    rec.tensor_pid[id(t)] = rec.storage_pid[id(storage)]
                    return t
                return rebuild
            if name == "_rebuild_parameter":
                def rebuild_parameter(data, *args, _fn=obj):
                    p = _fn(data, *args)
                    rec.keep.append(p)
                    rec.tensor_pid[id(p)] = rec.tensor_pid[id(data)]
                    return p
                return rebuild_parameter
            if name == "_rebuild_meta_tensor_no_storage":
                def rebuild_meta(*args, _fn=obj):
                    t = _fn(*args)
                    rec.keep.append(t)
                    rec.tensor_pid[id(t)] = None
                    return t
                return rebuild_meta
            return obj

    mod = types.ModuleType("recording_pickle")
    mod.Unpickler = RecordingUnpickler
    mod.load = pickle.load
    return mod


# --------------------------------------------------------------- encoding ---

def _packed_values(t):
    bits = 4 if t.dtype == torch.quint4x2 else 2
    assert t.dim() == 1 and t.is_contiguous() and t.storage_offset() == 0
    packed = t.int_repr().tolist()
    per, mask = 8 // bits, (1 << bits) - 1
    return [float((packed[i // per] >> (bits * (i % per))) & mask) for i in range(t.numel())]


def _flat_float64(t):
    return t.reshape(-1).to(torch.float64).tolist()


def _sums(values):
    s = w = a = 0.0
    nan = posinf = neginf = 0
    for i, v in enumerate(values):
        if v != v:
            nan += 1
        elif v == math.inf:
            posinf += 1
        elif v == -math.inf:
            neginf += 1
        else:
            s += v
            w += v * ((i % 7) + 1)
            a += abs(v)
    return s, w, a, nan, posinf, neginf


def tensor_expectation(t, path, pid, safetensors_name=None):
    is_param = isinstance(t, nn.Parameter)
    requires_grad = t.requires_grad
    t = t.detach()
    meta = t.is_meta
    rec = {
        "path": path,
        "dtype": str(t.dtype).replace("torch.", ""),
        "shape": list(t.shape),
        "stride": list(t.stride()),
        "storage_offset": t.storage_offset(),
        "storage": None,
        "storage_numel": None,
        "requires_grad": requires_grad,
        "is_parameter": is_param,
        "numel": t.numel(),
        "meta": meta,
    }
    if safetensors_name is not None:
        rec["storage"] = safetensors_name
        rec["storage_numel"] = t.numel()
    elif not meta:
        assert pid is not None and pid[0] == "storage", pid
        rec["storage"] = pid[2]
        rec["storage_numel"] = pid[4]
        assert pid[4] == t.storage().size(), (pid, t.storage().size())
    if meta:
        rec.update({"sum": None, "wsum": None, "sum_abs": None, "nan": None, "posinf": None, "neginf": None})
        return rec
    if t.is_quantized:
        if t.qscheme() == torch.per_tensor_affine:
            rec["qscale"] = t.q_scale()
            rec["qzero_point"] = t.q_zero_point()
        if t.dtype in (torch.quint4x2, torch.quint2x4):
            values = _packed_values(t)
        else:
            values = _flat_float64(t.int_repr())
    elif t.is_complex():
        values = _flat_float64(t.real)
        s, w, _, _, _, _ = _sums(_flat_float64(t.imag))
        rec["sum_imag"], rec["wsum_imag"] = s, w
    else:
        values = _flat_float64(t)
    rec["sum"], rec["wsum"], rec["sum_abs"], rec["nan"], rec["posinf"], rec["neginf"] = _sums(values)
    assert all(math.isfinite(rec[k]) for k in ("sum", "wsum", "sum_imag", "wsum_imag") if k in rec), path
    return rec


class Encoder:
    """Python value -> the C++ tool's `info --json` VALUE; collects tensors in
    first-appearance order of a depth-first walk (object identity dedups)."""

    def __init__(self, tensor_pid=None):
        self.tensor_pid = tensor_pid
        self.tensors = []
        self.index = {}

    def encode(self, o, path):
        if o is None or type(o) is bool or type(o) is str:
            return o
        if isinstance(o, np.generic):
            return self.encode(o.item(), path)
        if type(o) is int:
            return o if INT64_MIN <= o <= INT64_MAX else {"$int": str(o)}
        if type(o) is float:
            if math.isnan(o):
                return {"$float": "nan"}
            if math.isinf(o):
                return {"$float": "inf" if o > 0 else "-inf"}
            return o
        if type(o) in (bytes, bytearray):
            return {"$bytes": bytes(o).hex()}
        if isinstance(o, torch.Tensor):
            return {"$tensor": self._tensor(o, path)}
        if isinstance(o, torch.dtype):
            return {"$global": str(o)}
        if type(o) in (tuple, torch.Size):
            return {"$tuple": [self.encode(v, path + [i]) for i, v in enumerate(o)]}
        if type(o) is list:
            return [self.encode(v, path + [i]) for i, v in enumerate(o)]
        if type(o) in (set, frozenset):
            return {"$set": [self.encode(v, path + [None]) for v in o]}
        if type(o) in (dict, OrderedDict):
            if all(type(k) is str for k in o):
                return {k: self.encode(v, path + [k]) for k, v in o.items()}
            return {"$dict": [[self.encode(k, path + [None]), self.encode(v, path + [self._key(k)])]
                              for k, v in o.items()]}
        return {"$object": f"{type(o).__module__}.{type(o).__qualname__}"}

    @staticmethod
    def _key(k):
        return k if type(k) in (str, int) else None  # None: no tensor may live below it

    def _tensor(self, t, path):
        if id(t) in self.index:
            return self.index[id(t)]
        assert None not in path, f"tensor below a key that has no path form: {path}"
        if self.tensor_pid is None:  # cross-check mode: storage fields are not compared
            pid = None if t.is_meta else ("storage", None, None, None, t.storage().size())
        else:
            assert id(t) in self.tensor_pid, f"no persistent id recorded for tensor at {path}"
            pid = self.tensor_pid[id(t)]
        i = len(self.tensors)
        self.index[id(t)] = i
        self.tensors.append(tensor_expectation(t, list(path), pid))
        return i


def describe(path, fmt):
    """Load `path` with torch, recording storages; return a manifest entry."""
    rec = _Recorder()
    # torch 1.13's load() replaces any pickle_module by `pickle` unless
    # weights_only is set, so swap the module torch.serialization sees.
    saved_pickle = torch.serialization.pickle
    torch.serialization.pickle = _recording_pickle_module(rec)
    try:
        obj = torch.load(path, weights_only=False)
    finally:
        torch.serialization.pickle = saved_pickle
    enc = Encoder(rec.tensor_pid)
    tree = enc.encode(obj, [])
    # Cross-check against a plain torch.load (no recording in between).
    plain = Encoder(None)
    plain_tree = plain.encode(torch.load(path, weights_only=False), [])
    strip = lambda ts: [{k: v for k, v in t.items() if k not in ("storage", "storage_numel")} for t in ts]
    assert json.dumps(plain_tree) == json.dumps(tree), path
    assert json.dumps(strip(plain.tensors)) == json.dumps(strip(enc.tensors)), path
    try:
        torch.load(path, weights_only=True)
        weights_only_ok = True
    except Exception:
        weights_only_ok = False
    return obj, {"format": fmt, "tree": tree, "tensors": enc.tensors, "weights_only_ok": weights_only_ok}


def stable_set(items, kind=set):
    """A set whose iteration order survives being rebuilt from that order (as
    unpickling does); hash collisions can otherwise reorder elements."""
    s = kind(items)
    for _ in range(10):
        again = kind(list(s))
        if list(again) == list(s):
            return again
        s = again
    raise AssertionError(f"no stable order for {items}")


def check_sets(o, seen=None):
    """Sets keep their iteration order through a pickle round trip (asserted)."""
    seen = set() if seen is None else seen
    if id(o) in seen:
        return
    seen.add(id(o))
    if type(o) in (set, frozenset):
        assert list(type(o)(list(o))) == list(o), o
        assert list(pickle.loads(pickle.dumps(o, 2))) == list(o), o
    if type(o) in (list, tuple):
        for v in o:
            check_sets(v, seen)
    if isinstance(o, dict):
        for k, v in o.items():
            check_sets(k, seen)
            check_sets(v, seen)


# ------------------------------------------------------------- writing -------

class Fixtures:
    def __init__(self, outdir):
        self.outdir = outdir
        self.entries = []
        self.runs = {}
        self.files_written = 0

    def path(self, rel):
        p = os.path.join(self.outdir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def save(self, rel, obj, description, fmt="torch-zip", **save_kw):
        check_sets(obj)
        p = self.path(rel)
        if fmt == "torch-legacy":
            legacy_save(obj, p)
        else:
            torch.save(obj, p, **save_kw)
        self.files_written += 1
        return self.add(rel, fmt, description)

    def add(self, rel, fmt, description):
        loaded, entry = describe(self.path(rel), fmt)
        entry = {"file": rel, "description": description, **entry}
        self.entries.append(entry)
        return loaded, entry


def legacy_save(obj, path):
    """torch.save(_use_new_zipfile_serialization=False), with the storage keys
    (memory addresses in 1.13) renamed "0".."n-1" in order of first use and
    the key list and data records put back in sorted order, so the bytes are
    the same on every run. Layout otherwise exactly as torch writes it."""
    remap = {}  # address key -> (new key, element size)

    class KeyPickler(pickle._Pickler):  # pure Python: torch assigns persistent_id
        @property
        def persistent_id(self):
            return self._rec_persistent_id

        @persistent_id.setter
        def persistent_id(self, fn):
            def wrapped(o):
                r = fn(o)
                if r is None:
                    return r
                assert r[0] == "storage" and r[5] is None, r
                if r[2] not in remap:
                    remap[r[2]] = (str(len(remap)), torch._utils._element_size(r[1].dtype))
                return (r[0], r[1], remap[r[2]][0]) + tuple(r[3:])
            self._rec_persistent_id = wrapped

    def dump(o, f, protocol=None):
        if type(o) is list and o and all(type(k) is str and k in remap for k in o):
            o = [remap[k][0] for k in o]
        pickle.dump(o, f, protocol=protocol)

    module = types.ModuleType("key_pickle")
    module.Pickler, module.dump = KeyPickler, dump
    with open(path, "wb") as f:
        torch.save(obj, f, pickle_module=module, _use_new_zipfile_serialization=False)
    assert len(remap) <= 10, "new keys sort like the old ones only up to 10 storages"

    with open(path, "rb") as f:
        blob = f.read()
    f = io.BytesIO(blob)
    for _ in range(3):  # magic number, protocol version, sys_info
        pickle.load(f)
    for _ in pickletools.genops(f):  # the main pickle: skip it, stop after STOP
        pass
    head = blob[:f.tell()]
    keys = pickle.load(f)
    sizes = {new: size for new, size in remap.values()}
    records = {}
    for k in keys:
        (count,) = struct.unpack("<q", f.read(8))
        records[k] = struct.pack("<q", count) + f.read(count * sizes[k])
    assert f.tell() == len(blob)
    keys = sorted(keys)
    with open(path, "wb") as out:
        out.write(head + pickle.dumps(keys, protocol=2) + b"".join(records[k] for k in keys))


def rezip(src, dst, method):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            out = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            out.compress_type = method
            zout.writestr(out, zin.read(info.filename))


def data_offsets(path):
    """Start of each entry's data, from the local headers."""
    out = {}
    with open(path, "rb") as f, zipfile.ZipFile(path) as z:
        for info in z.infolist():
            f.seek(info.header_offset)
            hdr = f.read(30)
            name_len, extra_len = struct.unpack("<HH", hdr[26:30])
            out[info.filename] = info.header_offset + 30 + name_len + extra_len
    return out


# ------------------------------------------------------------- fixtures ------

def special(dtype):
    fi = torch.finfo(dtype)
    big = 1e300 if dtype == torch.float64 else fi.max  # weighted float64 sums must not overflow
    return [0.0, 1.5, -2.25, math.nan, math.inf, -math.inf, -0.0,
            fi.tiny / 4, -fi.tiny / 2, big, -big / 2, fi.tiny, fi.eps, 3.0]


def int_values(dtype):
    ii = torch.iinfo(dtype)
    return [0, 1, -1 if ii.min < 0 else 2, ii.max, ii.min, 42, 7]


def dtype_fixture():
    g = torch.Generator().manual_seed(1)
    d = OrderedDict()
    for dt in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        d[str(dt)[6:]] = torch.tensor(special(dt), dtype=dt)
    d["float64_denormal"] = torch.tensor([5e-324, -5e-324, 2.2250738585072014e-308 / 3, 1e300, -1e-300],
                                         dtype=torch.float64)
    for dt in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        d[str(dt)[6:]] = torch.tensor(int_values(dt), dtype=dt)
    d["bool"] = torch.tensor([True, False, True, True, False])
    d["complex64"] = torch.tensor([1 + 2j, -0.5 - 0.25j, complex(math.nan, 1), complex(math.inf, -math.inf), 0j],
                                  dtype=torch.complex64)
    d["complex128"] = torch.tensor([[1e200 + 1j, -3 + 4j], [complex(-math.inf, 2), 1e-310 - 1e-310j]],
                                   dtype=torch.complex128)
    base = torch.tensor([-1.0, -0.3, 0.0, 0.4, 1.27, 2.5, 100.0, -100.0])
    d["qint8"] = torch.quantize_per_tensor(base, 0.1, 3, torch.qint8)
    d["quint8"] = torch.quantize_per_tensor(base.reshape(2, 4), 0.05, 128, torch.quint8)
    d["qint32"] = torch.quantize_per_tensor(base * 1000, 0.001, -7, torch.qint32)
    d["quint4x2"] = torch.quantize_per_tensor(torch.tensor([0.0, 1.0, 2.0, 3.0, 7.5]), 0.5, 1, torch.quint4x2)
    d["quint2x4"] = torch.quantize_per_tensor(torch.tensor([0.0, 1.0, 2.0, 3.0, 1.0, 9.0]), 1.0, 0, torch.quint2x4)
    d["scalar0d"] = torch.tensor(3.25)
    d["int0d"] = torch.tensor(-9, dtype=torch.int64)
    d["empty"] = torch.empty(0, 3)
    d["meta"] = torch.empty(3, 4, device="meta")
    d["meta_bf16"] = torch.empty(2, 5, dtype=torch.bfloat16, device="meta")
    d["randn"] = torch.randn(3, 5, generator=g)
    d["param"] = nn.Parameter(torch.randn(2, 3, generator=g))
    d["param_frozen"] = nn.Parameter(torch.randn(4, generator=g), requires_grad=False)
    d["leaf_requires_grad"] = torch.ones(2, 2, requires_grad=True)
    d["large_values"] = torch.tensor([1e30, -1e30, 1e-30, 123456.789], dtype=torch.float32)
    return d


def views_fixture():
    base = torch.arange(24.0).reshape(4, 6)
    other = torch.arange(100, dtype=torch.int32)
    d = OrderedDict()
    d["base"] = base
    d["transpose"] = base.t()
    d["rows_1_3"] = base[1:3]
    d["column_2"] = base[:, 2]
    d["narrow"] = base.narrow(1, 1, 2)
    d["step_slice"] = base[::2, 1::3]
    d["base_again"] = base  # same object: same tensor index
    d["expand"] = torch.tensor([1.0, 2.0, 3.0]).expand(4, 3)
    d["tail_only"] = other[90:]  # whole 100-element storage saved
    d["permute4d"] = torch.arange(120, dtype=torch.int64).reshape(2, 3, 4, 5).permute(3, 1, 0, 2)
    d["zero_size_view"] = base[2:2]
    d["scalar_view"] = base[3, 5]
    return d


def nested_fixture():
    g = torch.Generator().manual_seed(3)
    shared_list = [1, "two", 3.0]
    shared_t = torch.arange(6.0).reshape(2, 3)
    return {
        "layers": [
            ({"w": torch.randn(2, 2, generator=g), "meta": {"name": "a", "ok": True}}, (1, 2.5)),
            ({"w": shared_t},),
            [],
        ],
        "again": shared_t,
        "sets": {"small": stable_set([7, 1, 4, 12]), "frozen": stable_set([6, 5], frozenset), "empty": set(),
                 "words": stable_set(["beta", "alpha", "\u00e9t\u00e9"]), "mixed": stable_set([(1, 2), "x", 4.5, -3])},
        "big_ints": [2**70, -(2**70), 2**63 - 1, -(2**63), 2**64, 2**63, 2**31, -(2**31) - 1,
                     255, 256, 65535, 65536, -1, 0],
        "floats": [math.nan, math.inf, -math.inf, -0.0, 2.0, 1e-310, 1.7976931348623157e308, 0.1],
        "strings": ["h\u00e9llo", "\u65e5\u672c\u8a9e", "e\u0301", "", "\U0001F642\U0001F680", "a\x00b",
                    "line\nbreak \"q\" \\"],
        "bytes": b"\x00\x01\xff\x80",
        "bytearray": bytearray(b"abc\x00"),
        "empty_bytes": b"",
        "consts": [None, True, False],
        "int_keys": {1: "one", -5: {"deep": torch.tensor([7, 8], dtype=torch.int16)}, 2**40: "big"},
        # a tensor 11 keys down: its path outgrows the reader's inline room
        "deep_path": {"l1": {"l2": [[{"l5": ({"l7": {"l8": {"l9": {"l10": torch.tensor([1.5, -2.0])}}}},)}]]}},
        "tuple_keys": {(1, "a"): 1, (2, "b"): [1]},
        "mixed_keys": {"a": 1, 2: "b", 1.5: None, None: 0, True: "t"},
        "shared1": shared_list,
        "shared2": shared_list,
        "device_cuda": torch.device("cuda", 0),
        "device_cpu": torch.device("cpu"),
        "dtype": torch.float32,
        "dtype_bf16": torch.bfloat16,
        "size": torch.Size([2, 3]),
        "empty_tuple": (),
        "empty_list": [],
        "empty_dict": {},
        "ordered": OrderedDict([("z", 1), ("a", 2)]),
    }


def pyobjects_fixture():
    return {
        "path": pathlib.PosixPath("runs/a"),
        "info": RunInfo(name="x", lr=0.1, tags=("a",)),
        "np_f64": np.float64(1.25),
        "np_i64": np.int64(7),
        "np_f32": np.float32(0.5),
        "np_bool": np.bool_(True),
        "weights": torch.ones(2),
        "config": {"lr": np.float64(3e-4), "out": pathlib.PosixPath("/tmp/out")},
    }


def legacy_fixture():
    g = torch.Generator().manual_seed(4)
    w = torch.randn(3, 4, generator=g)
    sd = OrderedDict()
    sd["a.weight"] = w
    sd["a.bias"] = torch.zeros(3)
    sd["tied.weight"] = w[1:]  # same storage, offset 4
    sd["half"] = torch.tensor([1.0, -2.0, math.inf], dtype=torch.float16)
    sd["bf16"] = torch.tensor([0.5, math.nan], dtype=torch.bfloat16)
    sd["ids"] = torch.tensor([1, -2, 2**40], dtype=torch.int64)
    sd["mask"] = torch.tensor([True, False])
    sd["transpose"] = w.t()
    sd._metadata = OrderedDict([("", {"version": 1}), ("a", {"version": 1})])
    return sd


# --------------------------------------------------------- modern_llm --------

CONFIG = OrderedDict([
    ("vocab_size", 96), ("d_model", 32), ("n_layers", 2), ("n_heads", 4), ("ffn_hidden_size", 64),
    ("max_seq_len", 64), ("rmsnorm_eps", 1e-5), ("dropout", 0.0), ("initializer_range", 0.02),
    ("rope_theta", 10000.0), ("rope_scaling", None), ("use_rope", True), ("use_attention_sinks", True),
    ("num_attention_sinks", 2), ("use_swiglu", True), ("swiglu_multiplier", 2.0), ("use_gqa", False),
    ("gqa_groups", None), ("use_moe", False), ("moe_config", None), ("tie_embeddings", True),
])


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate = nn.Linear(d, 2 * hidden)
        self.proj = nn.Linear(hidden, d)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, heads = c["d_model"], c["n_heads"]
        head_dim = d // heads
        kv = c["gqa_groups"] if c["use_gqa"] else heads
        self.sink_states = nn.Parameter(torch.randn(c["num_attention_sinks"], d) * 0.02)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv * head_dim, bias=False)
        self.v_proj = nn.Linear(d, kv * head_dim, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)
        inv_freq = 1.0 / c["rope_theta"] ** (torch.arange(0, head_dim, 2).float() / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = Attention(c)
        self.attn_norm = RMSNorm(c["d_model"], c["rmsnorm_eps"])
        self.ffn_norm = RMSNorm(c["d_model"], c["rmsnorm_eps"])
        self.ffn = SwiGLU(c["d_model"], c["ffn_hidden_size"])


class TinyLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.token_embed = nn.Embedding(c["vocab_size"], c["d_model"])
        self.blocks = nn.ModuleList([Block(c) for _ in range(c["n_layers"])])
        self.final_norm = RMSNorm(c["d_model"], c["rmsnorm_eps"])
        self.lm_head = nn.Linear(c["d_model"], c["vocab_size"], bias=False)
        if c["tie_embeddings"]:
            self.lm_head.weight = self.token_embed.weight
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, c["initializer_range"])
                if getattr(m, "bias", None) is not None:
                    nn.init.zeros_(m.bias)


class Compiled(nn.Module):
    """Stands in for torch.compile's wrapper: keys gain the "_orig_mod." prefix."""

    def __init__(self, m):
        super().__init__()
        self._orig_mod = m


def expected_param_names(c):
    names = ["token_embed.weight"]
    for i in range(c["n_layers"]):
        b = f"blocks.{i}."
        names += [b + "attn.sink_states"] + [b + f"attn.{p}_proj.weight" for p in ("q", "k", "v", "out")]
        names += [b + "attn_norm.weight", b + "ffn_norm.weight", b + "ffn.gate.weight", b + "ffn.gate.bias",
                  b + "ffn.proj.weight", b + "ffn.proj.bias"]
    return names + ["final_norm.weight"]


class Trainer:
    def __init__(self, seed, lr=6e-4):
        torch.manual_seed(seed)
        self.model = TinyLM(CONFIG)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                                     weight_decay=0.01)
        self.targets = [torch.randn_like(p) for p in self.model.parameters()]
        names = [n for n, _ in self.model.named_parameters()]
        assert names == expected_param_names(CONFIG), names
        assert list(self.model.state_dict()) == names + ["lm_head.weight"]
        self.param_names = names

    def step(self, n=1):
        for _ in range(n):
            self.opt.zero_grad()
            loss = sum(((p - t) ** 2).mean() for p, t in zip(self.model.parameters(), self.targets))
            loss.backward()
            self.opt.step()

    def new_optimizer(self, lr):
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.01)

    def payload(self, compiled=False, with_optimizer=True, **meta):
        sd = (Compiled(self.model) if compiled else self.model).state_dict()
        out = {"model_state": sd}
        if with_optimizer:
            out["optimizer"] = self.opt.state_dict()
        out["metadata"] = meta
        out.update(meta)
        return out


def metadata(run, step, loss, stage, final=False, config=None):
    return dict(step=step, loss=loss, config=config if config is not None else dict(CONFIG), run_name=run,
                train_loss=loss, val_loss=None if step is None else round(loss + 0.125, 4),
                learning_rate=6e-4, stage=stage, final=final,
                git_commit="0123456789abcdef0123456789abcdef01234567")


def checkpoint_expectation(obj, param_names):
    if isinstance(obj, dict) and "model_state" in obj:
        sd = obj["model_state"]
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        top = obj
    else:
        sd, meta, top = obj, {}, {}

    def get(k):
        return meta[k] if k in meta else top.get(k)

    strip = lambda k: k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k
    out = {"step": get("step"), "loss": get("loss"), "run": get("run_name"), "stage": get("stage"),
           "model_keys": [strip(k) for k in sd]}
    if isinstance(top, dict) and "optimizer" in top:
        n = len(top["optimizer"]["param_groups"][0]["params"])
        assert n == len(param_names) == len(top["optimizer"]["state"])
        out["optimizer_params"] = {str(i): name for i, name in enumerate(param_names)}
        # What the Summary and `info` count as mapped (MODEL.md: state index
        # i is the model's i-th parameter, tied ones once): entries whose
        # index names a parameter and whose exp_avg has its shape.
        by_name = {strip(k): v for k, v in sd.items()}
        state = top["optimizer"]["state"]
        out["optimizer_with_state"] = len(state)
        out["optimizer_mapped"] = sum(
            1 for i, s in state.items()
            if isinstance(i, int) and 0 <= i < len(param_names) and "exp_avg" in s
            and tuple(s["exp_avg"].shape) == tuple(by_name[param_names[i]].shape))
    return out


def run_entry(rel, content):
    """The C++ `ls` expectations: step from metadata, else from the name."""
    name = os.path.basename(rel)
    meta_step = meta_final = loss = None
    if content is not None:
        meta_step, loss, meta_final = content.get("step"), content.get("loss"), content.get("final")
    name_step = re.search(r"(?:_step|checkpoint_)(\d+)", name)
    step = meta_step if meta_step is not None else (int(name_step.group(1)) if name_step else None)
    if "_final" in name or meta_final is True:
        kind = "final"
    elif name.startswith("best_"):
        kind = "best"
    elif name.startswith("latest_"):
        kind = "latest"
    elif step is not None:
        kind = "step"
    else:
        kind = None
    return {"run": os.path.basename(os.path.dirname(rel)), "step": step, "kind": kind, "loss": loss,
            "error": content is None}


def add_run(fx, rel, obj, description, param_names):
    loaded, entry = fx.save(rel, obj, description)
    entry["checkpoint"] = checkpoint_expectation(loaded, param_names)
    c = entry["checkpoint"]
    fx.runs[rel] = run_entry(rel, {"step": c["step"], "loss": c["loss"],
                                   "final": _final_flag(loaded)})


def _final_flag(obj):
    if isinstance(obj, dict) and "model_state" in obj:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        return meta.get("final", obj.get("final"))
    return None


def make_runs(fx):
    # Python-trainer run: step files and a final file.
    tr = Trainer(seed=10)
    names = tr.param_names
    for step, loss in ((100, 3.9034), (200, 2.75)):
        tr.step()
        add_run(fx, f"runs/tiny/tiny_step{step}.pt", tr.payload(**metadata("tiny", step, loss, "pretrain")),
                "modern_llm trainer step checkpoint", names)
    tr.step()
    add_run(fx, "runs/tiny/tiny_final.pt", tr.payload(**metadata("tiny", 300, 2.125, "pretrain", final=True)),
            "modern_llm trainer final checkpoint (final=True, step 300)", names)
    loaded, entry = fx.save("runs/tiny/weights.bin", tr.model.state_dict(), "torch-zip state dict, .bin name")
    entry["checkpoint"] = checkpoint_expectation(loaded, names)
    fx.runs["runs/tiny/weights.bin"] = run_entry("runs/tiny/weights.bin", {})
    # An optimizer that does not fit its model: the first two parameters'
    # exp_avg swapped (their shapes differ), so 2 of them do not map.
    bad = tr.payload(**metadata("tiny", 300, 2.125, "pretrain"))
    state = {i: dict(v) for i, v in bad["optimizer"]["state"].items()}
    assert state[0]["exp_avg"].shape != state[1]["exp_avg"].shape
    state[0]["exp_avg"], state[1]["exp_avg"] = state[1]["exp_avg"], state[0]["exp_avg"]
    bad["optimizer"] = {"state": state, "param_groups": bad["optimizer"]["param_groups"]}
    loaded, entry = fx.save("misc/optimizer_swapped.pt", bad,
                            "modern_llm checkpoint whose optimizer moments of parameters 0 and 1 are swapped")
    entry["checkpoint"] = checkpoint_expectation(loaded, names)
    assert entry["checkpoint"]["optimizer_mapped"] == entry["checkpoint"]["optimizer_with_state"] - 2

    # Not checkpoints: must be skipped by `ls`.
    with open(fx.path("runs/tiny/notes.txt"), "w") as f:
        f.write("step=100 loss=3.9034 lr=6.000e-04\nnot a checkpoint\n")
    rnd = random.Random(1234).randbytes(1000)
    with open(fx.path("runs/tiny/random.bin"), "wb") as f:
        f.write(b"\x13\x37" + rnd[2:])
    # A truncated copy: listed, with an error.
    with open(fx.path("runs/tiny/tiny_step200.pt"), "rb") as f:
        blob = f.read()
    with open(fx.path("runs/tiny/broken_step400.pt"), "wb") as f:
        f.write(blob[: len(blob) * 6 // 10])
    fx.runs["runs/tiny/broken_step400.pt"] = run_entry("runs/tiny/broken_step400.pt", None)
    fx.files_written += 3

    # Hand-written loop (the library's documentation).
    hl = Trainer(seed=11)
    hl.step()
    add_run(fx, "runs/handloop/checkpoint_50.pt",
            {"model_state": hl.model.state_dict(), "optimizer": hl.opt.state_dict(), "loss": 2.71875},
            "hand loop, no step in the file: step from the name", names)
    hl.step()
    sd = hl.model.state_dict()
    add_run(fx, "runs/handloop/checkpoint_100.pt", {"model_state": sd, "step": 100, "loss": 2.25},
            "hand loop, plain layout", names)
    add_run(fx, "runs/handloop/best_checkpoint.pt", {"model_state": sd, "step": 100, "loss": 2.25},
            "hand loop, best", names)
    hl.step()
    add_run(fx, "runs/handloop/latest_checkpoint.pt",
            {"model_state": hl.model.state_dict(), "step": 120, "loss": 2.375}, "hand loop, latest", names)

    # Multi-stage pipeline: one directory per stage, one model carried through.
    fam = Trainer(seed=12)
    stages = (("pretrain", 500, 2.5, 6e-4), ("sft", 200, 1.75, 1e-4), ("dpo", 100, 0.6875, 5e-6))
    for stage, step, loss, lr in stages:
        fam.new_optimizer(lr)
        fam.step(2)
        config = dict(CONFIG)
        if stage == "dpo":
            config["newer_library_field"] = "kept as is"
        run = f"fam-{stage}"
        add_run(fx, f"runs/{run}/{run}_final.pt",
                fam.payload(**metadata(run, step, loss, stage, final=True, config=config)),
                f"multi-stage pipeline, {stage} stage", names)

    # torch.compile'd model: every model_state key carries "_orig_mod.".
    cp = Trainer(seed=13)
    cp.step()
    add_run(fx, "runs/compiled/compiled_step10.pt",
            cp.payload(compiled=True, **metadata("compiled", 10, 3.0, "pretrain")),
            "compiled model: _orig_mod. prefixes", names)

    # A bare state dict.
    add_run(fx, "runs/bare/bare_state.pt", cp.model.state_dict(), "bare state dict, no wrapper", names)

    make_safetensors(fx, "runs/st/model.safetensors")
    fx.runs["runs/st/model.safetensors"] = run_entry("runs/st/model.safetensors", {"step": 42})


# ------------------------------------------------------------ safetensors ----

ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
             torch.int32: "I32", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
             torch.float64: "F64"}


def make_safetensors(fx, rel):
    g = torch.Generator().manual_seed(5)
    tensors = [
        ("embed.weight", torch.randn(4, 3, generator=g)),
        ("half", torch.tensor([1.0, -0.5, math.inf, math.nan, 65504.0], dtype=torch.float16)),
        ("bf16", torch.tensor([[1.0, -2.0], [3.5, 1e30]], dtype=torch.bfloat16)),
        ("ids", torch.tensor([1, -2, 2**50], dtype=torch.int64)),
        ("i32", torch.tensor([-7, 2**31 - 1], dtype=torch.int32)),
        ("i8", torch.tensor([-128, 127, 0, 5], dtype=torch.int8)),
        ("u8", torch.tensor([0, 255, 17], dtype=torch.uint8)),
        ("mask", torch.tensor([[True, False], [False, True]])),
        ("scalar_f64", torch.tensor(2.5, dtype=torch.float64)),
        ("empty", torch.empty(0, 4)),
    ]
    meta = {"format": "pt", "step": "42"}
    header, blobs, offset = {"__metadata__": meta}, [], 0
    for name, t in tensors:
        b = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        assert len(b) == t.numel() * t.element_size()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    assert sys.byteorder == "little"
    with open(fx.path(rel), "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))
    fx.files_written += 1

    # Read it back independently of the writer.
    with open(fx.path(rel), "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    back = json.loads(blob[8:8 + n])
    assert list(back) == ["__metadata__"] + [name for name, _ in tensors]
    for name, t in tensors:
        b, e = back[name]["data_offsets"]
        raw = blob[8 + n + b: 8 + n + e]
        if t.numel():
            got = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(t.dtype).reshape(t.shape)
            assert torch.equal(got.isnan(), t.isnan()) if t.is_floating_point() else True
            assert torch.equal(torch.nan_to_num(got.double()), torch.nan_to_num(t.double()))

    tree = {"__metadata__": meta}
    records = []
    for i, (name, t) in enumerate(tensors):
        tree[name] = {"$tensor": i}
        records.append(tensor_expectation(t, [name], None, safetensors_name=name))
    fx.entries.append({"file": rel, "description": "hand-written safetensors file", "format": "safetensors",
                       "tree": tree, "tensors": records})


# ------------------------------------------------------------------ main -----

def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    fx = Fixtures(outdir)

    fx.save("dtypes.pt", dtype_fixture(), "every dtype, special values, 0-dim, empty, meta, parameters")
    fx.save("views.pt", views_fixture(), "views: transpose, slices, narrow, expand, shared storage, permute")
    fx.save("nested.pt", nested_fixture(), "nested containers and every plain pickle value")
    fx.save("pyobjects.pt", pyobjects_fixture(), "pathlib, dataclass and numpy scalar values")
    fx.save("nested_proto4.pt", nested_fixture(), "nested.pt saved with pickle_protocol=4", pickle_protocol=4)
    fx.save("nested_proto5.pt", nested_fixture(), "nested.pt saved with pickle_protocol=5", pickle_protocol=5)
    fx.save("legacy_state.pt", legacy_fixture(), "legacy (non-zip) format state dict, shared storage",
            fmt="torch-legacy")

    src = fx.path("dtypes.pt")
    for rel, method, what in (("dtypes_deflated.pt", zipfile.ZIP_DEFLATED, "every entry deflated"),
                              ("dtypes_unaligned.pt", zipfile.ZIP_STORED, "stored, not 64-byte aligned")):
        rezip(src, fx.path(rel), method)
        fx.files_written += 1
        fx.add(rel, "torch-zip", f"dtypes.pt rewritten by Python's zipfile: {what}")
    offs = data_offsets(fx.path("dtypes_unaligned.pt"))
    assert any(o % 64 for n, o in offs.items() if "/data/" in n), "rewrite happened to stay aligned"
    assert all(o % 64 == 0 for n, o in data_offsets(src).items() if "/data/" in n)

    make_runs(fx)

    manifest = {"fixtures": fx.entries, "runs": fx.runs}
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=True, allow_nan=False)
    print(f"make_fixtures: wrote {fx.files_written} files ({len(fx.entries)} fixtures, "
          f"{len(fx.runs)} run entries) to {outdir}")


if __name__ == "__main__":
    main()
