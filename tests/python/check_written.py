#!/usr/bin/python3
"""Check files that CkptScope's writer produced, with PyTorch itself.

Usage (Debian's python3-torch, 1.13):
  check_written.py ORIGINAL REWRITTEN [ORIGINAL REWRITTEN ...]
      torch.load both (weights_only=False) and compare them recursively and
      exactly; then try weights_only=True on both. The original may also be a
      safetensors file (read here by hand, as {"__metadata__": {...},
      name: tensor, ...}). Prints one line per pair:
        PASS <original> weights_only: original=<ok|rejected> rewritten=<ok|rejected>
        FAIL <original>: <first difference>
      plus "note:" lines for the documented losses of the reader's tree (see
      KNOWN_LOSSES). Exit status 1 when any pair fails, including when
      weights_only=True accepts the original but not the rewritten file.
  check_written.py describe FILE
      torch.load FILE and print it as JSON (encoding in describe_value) with
      the weights_only=True outcome:
        {"value": VALUE, "weights_only": "ok" | "error: ...",
         "weights_only_equal": bool (when ok)}
  check_written.py set-byteorder SRC DST big|little
      Copy the zip SRC to DST with its <root>/byteorder record replaced (used
      to make a big-endian file for the reader).

The zip structure of every REWRITTEN file is also checked with Python's
zipfile: CRCs (testzip), record order, stored records, 64-byte aligned data.
"""
import collections
import json
import math
import os
import struct
import sys
import zipfile

import numpy as np
import torch

OrderedDict = collections.OrderedDict

# The dataclass the fixtures pickle must be importable for torch.load;
# tst_writer also builds instances through this module.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_types import RunInfo  # noqa: E402,F401

# What the reader's value tree cannot tell apart, so the writer cannot give
# back: (original type, rewritten type) pairs accepted (with a note) when the
# values are equal. numpy scalars come back as the Python number they hold.
KNOWN_LOSSES = {
    (frozenset, set): "frozenset comes back as set (the reader's tree has one Set kind)",
    (bytearray, bytes): "bytearray comes back as bytes (the reader's tree has one Bytes kind)",
    (torch.Size, tuple): "torch.Size comes back as tuple (the reader turns torch.Size into a tuple)",
}

ST_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
             "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
             "BOOL": torch.bool}


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            out[name] = dict(spec)
            continue
        b, e = spec["data_offsets"]
        dtype = ST_DTYPES[spec["dtype"]]
        raw = bytearray(blob[8 + n + b: 8 + n + e])
        t = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        out[name] = t.view(dtype).reshape(spec["shape"])
    return out


def is_safetensors(path):
    with open(path, "rb") as f:
        head = f.read(9)
    return len(head) == 9 and head[8:9] == b"{" and not head.startswith(b"PK")


def load(path, weights_only=False):
    if is_safetensors(path):
        if weights_only:
            raise RuntimeError("safetensors: not a torch file")
        return load_safetensors(path)
    return torch.load(path, weights_only=weights_only)


# ------------------------------------------------------------ comparison ----

class Mismatch(Exception):
    pass


INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t):
    """The tensor's elements as integers of the same width (NaN payloads,
    -0.0 and infinities compare exactly)."""
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    return t.view(INT_VIEW[t.element_size()])


def storage_bytes(t):
    s = t.storage()
    u = s._storage if hasattr(s, "_storage") else s.untyped()
    return bytes(u.tolist())


class Comparer:
    def __init__(self):
        self.notes = set()
        self.pairs = {}  # id(original) -> rewritten, for mutable objects (shared references)
        self.back = {}   # id(rewritten) -> id(original)
        self.keep = []
        self.storage_orig = []  # (path, original tensor, rewritten tensor) for the sharing check

    def fail(self, where, msg):
        raise Mismatch(f"{where}: {msg}")

    def identity(self, o, r, where):
        """Shared references: the same original object must map to the same
        rewritten object, and distinct ones to distinct ones."""
        if id(o) in self.pairs:
            if self.pairs[id(o)] is not r:
                self.fail(where, "a shared reference in the original is a different object in the rewritten file")
            return True
        if id(r) in self.back and self.back[id(r)] != id(o):
            self.fail(where, "two distinct original objects became one object")
        self.pairs[id(o)] = r
        self.back[id(r)] = id(o)
        self.keep += [o, r]
        return False

    def compare(self, o, r, where="$"):
        to, tr = type(o), type(r)
        if isinstance(o, np.generic):  # numpy scalars: the reader keeps the number
            v = o.item()
            if type(v) is not tr:
                self.fail(where, f"numpy {to.__name__} {o!r} came back as {tr.__name__} {r!r}")
            self.notes.add("numpy scalars come back as Python numbers (compared by value)")
            return self.compare(v, r, where)
        if to is not tr:
            loss = KNOWN_LOSSES.get((to, tr))
            if loss is None:
                self.fail(where, f"type {to.__module__}.{to.__qualname__} became {tr.__module__}.{tr.__qualname__}")
            self.notes.add(loss)
        if o is None or to is bool:
            if o is not r:
                self.fail(where, f"{o!r} != {r!r}")
            return
        if to is int:
            if o != r:
                self.fail(where, f"{o} != {r}")
            return
        if to is float:
            if struct.pack("<d", o) != struct.pack("<d", r):
                self.fail(where, f"float {o!r} != {r!r} (bits)")
            return
        if to in (str, bytes, bytearray):
            if o != r:
                self.fail(where, f"{o!r:.80} != {r!r:.80}")
            return
        if isinstance(o, torch.dtype) or isinstance(o, torch.device) or isinstance(o, torch.layout) \
                or isinstance(o, torch.qscheme):
            if o != r:
                self.fail(where, f"{o} != {r}")
            return
        if isinstance(o, torch.Tensor):
            if self.identity(o, r, where):
                return
            return self.tensor(o, r, where)
        if to in (tuple, torch.Size):
            if len(o) != len(r):
                self.fail(where, f"tuple of {len(o)} became {len(r)}")
            for i, (a, b) in enumerate(zip(o, r)):
                self.compare(a, b, f"{where}[{i}]")
            return
        if to is list:
            if self.identity(o, r, where):
                return
            if len(o) != len(r):
                self.fail(where, f"list of {len(o)} became {len(r)}")
            for i, (a, b) in enumerate(zip(o, r)):
                self.compare(a, b, f"{where}[{i}]")
            return
        if to in (set, frozenset):
            if to is set and self.identity(o, r, where):
                return
            key = lambda x: (type(x).__name__, repr(x))
            if sorted(map(key, o)) != sorted(map(key, r)):
                self.fail(where, f"set {o!r:.80} != {r!r:.80}")
            return
        if isinstance(o, dict):
            if self.identity(o, r, where):
                return
            ko, kr = list(o.keys()), list(r.keys())
            if len(ko) != len(kr):
                self.fail(where, f"dict of {len(ko)} keys became {len(kr)}: {ko!r:.100} vs {kr!r:.100}")
            for i, (a, b) in enumerate(zip(ko, kr)):
                self.compare(a, b, f"{where}.keys()[{i}]")
                self.compare(o[a], r[b], f"{where}[{a!r}]")
            # Attributes (a state_dict's _metadata); plain dicts have none.
            if hasattr(o, "__dict__") or hasattr(r, "__dict__"):
                self.compare(dict(getattr(o, "__dict__", {})), dict(getattr(r, "__dict__", {})), f"{where}.__dict__")
            return
        # Any other object (pathlib paths, dataclasses, ...): equal, and the
        # same attributes.
        if self.identity(o, r, where):
            return
        try:
            equal = o == r
        except Exception as e:  # noqa: BLE001
            self.fail(where, f"cannot compare {to.__qualname__}: {e}")
        if equal is not True:
            self.fail(where, f"{o!r:.100} != {r!r:.100}")
        if hasattr(o, "__dict__"):
            self.compare(dict(vars(o)), dict(vars(r)), f"{where}.__dict__")

    def tensor(self, o, r, where):
        for attr in ("dtype", "shape", "requires_grad", "is_quantized", "is_meta", "layout"):
            if getattr(o, attr) != getattr(r, attr):
                self.fail(where, f"tensor {attr} {getattr(o, attr)} != {getattr(r, attr)}")
        if o.stride() != r.stride():
            self.fail(where, f"tensor stride {o.stride()} != {r.stride()}")
        if o.is_meta:
            return
        if o.storage_offset() != r.storage_offset():
            self.fail(where, f"tensor storage_offset {o.storage_offset()} != {r.storage_offset()}")
        if o.device != r.device:
            self.fail(where, f"tensor device {o.device} != {r.device}")
        if o.is_quantized:
            if o.qscheme() != r.qscheme():
                self.fail(where, f"qscheme {o.qscheme()} != {r.qscheme()}")
            if struct.pack("<d", o.q_scale()) != struct.pack("<d", r.q_scale()) or o.q_zero_point() != r.q_zero_point():
                self.fail(where, f"quantization ({o.q_scale()}, {o.q_zero_point()}) != ({r.q_scale()}, {r.q_zero_point()})")
            if o.dtype not in (torch.quint4x2, torch.quint2x4) and not torch.equal(o.int_repr(), r.int_repr()):
                self.fail(where, "quantized values (int_repr) differ")
        elif not torch.equal(bits(o), bits(r)):
            self.fail(where, "tensor values differ (bit-level)")
        if o.storage().size() != r.storage().size():
            self.fail(where, f"storage size {o.storage().size()} != {r.storage().size()}")
        if storage_bytes(o) != storage_bytes(r):
            self.fail(where, "storage bytes differ")
        self.storage_orig.append((where, o, r))

    def check_sharing(self):
        """Tensors that shared a storage still do, and no others."""
        fwd, back = {}, {}
        for where, o, r in self.storage_orig:
            if o.storage().nbytes() == 0:
                continue  # empty storages have no address to share
            po, pr = o.storage().data_ptr(), r.storage().data_ptr()
            if fwd.setdefault(po, pr) != pr:
                raise Mismatch(f"{where}: shared a storage in the original, not in the rewritten file")
            if back.setdefault(pr, po) != po:
                raise Mismatch(f"{where}: shares a storage in the rewritten file that was separate in the original")


def compare_files(orig_path, new_path):
    original = load(orig_path)
    rewritten = load(new_path)
    c = Comparer()
    c.compare(original, rewritten)
    c.check_sharing()
    return c.notes


def weights_only_outcome(path):
    try:
        load(path, weights_only=True)
        return "ok", None
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        if "WeightsUnpickler error:" in msg:  # the reason, without torch's advice around it
            msg = msg[msg.index("WeightsUnpickler error:"):]
        return "rejected", f"{type(e).__name__}: {msg.splitlines()[0] if msg else ''}"


def check_zip(path):
    """Python's zipfile: CRCs, record order and layout as torch writes them."""
    with zipfile.ZipFile(path) as z:
        bad = z.testzip()
        if bad is not None:
            raise Mismatch(f"zip: bad CRC in {bad}")
        infos = z.infolist()
        names = [i.filename for i in infos]
        root = names[0].split("/")[0]
        data = [n for n in names if n.startswith(root + "/data/")]
        expected = [f"{root}/data.pkl", f"{root}/byteorder"] + sorted(data) + [f"{root}/version"]
        if names != expected:
            raise Mismatch(f"zip: records {names} (expected {expected})")
        if z.read(f"{root}/version") != b"3\n" or z.read(f"{root}/byteorder") != b"little":
            raise Mismatch("zip: bad version or byteorder record")
    with open(path, "rb") as f:
        for i in infos:
            if i.compress_type != zipfile.ZIP_STORED:
                raise Mismatch(f"zip: {i.filename} is compressed")
            f.seek(i.header_offset)
            hdr = f.read(30)
            name_len, extra_len = struct.unpack("<HH", hdr[26:30])
            if (i.header_offset + 30 + name_len + extra_len) % 64:
                raise Mismatch(f"zip: {i.filename} data is not 64-byte aligned")


def check_pairs(args):
    failures = 0
    for orig, new in zip(args[0::2], args[1::2]):
        try:
            check_zip(new)
            notes = compare_files(orig, new)
            wo_orig, why_orig = weights_only_outcome(orig)
            wo_new, why_new = weights_only_outcome(new)
            if wo_orig == "ok" and wo_new != "ok":
                raise Mismatch(f"weights_only=True loads the original but rejects the rewritten file: {why_new}")
            line = f"PASS {orig} weights_only: original={wo_orig} rewritten={wo_new}"
            if why_new:
                line += f" ({why_new})"
            print(line)
            for n in sorted(notes):
                print(f"note: {orig}: {n}")
        except Exception as e:  # noqa: BLE001
            failures += 1
            print(f"FAIL {orig}: {type(e).__name__}: {e}")
    return 1 if failures else 0


# -------------------------------------------------------------- describe ----

def describe_value(o, seen=None):
    """JSON for the C++ test: {"$odict": [[k, v]...], "$attrs": {...}} for an
    OrderedDict, {"$dict": [[k, v]...]} for a dict, {"$tuple": [...]},
    lists as arrays, {"$float": "nan"|"inf"|"-inf"} for non-finite floats,
    {"$bytes": hex}, {"$set": [...]}, {"$tensor": {...}} with dtype, shape,
    stride, storage_offset, requires_grad, parameter, data_ptr, storage_ptr
    and values (flat, row-major, as float64), {"$object": "module.qualname"}
    for others."""
    if o is None or type(o) in (bool, str, int):
        return o
    if type(o) is float:
        if math.isnan(o):
            return {"$float": "nan"}
        if math.isinf(o):
            return {"$float": "inf" if o > 0 else "-inf"}
        return o
    if type(o) in (bytes, bytearray):
        return {"$bytes": bytes(o).hex()}
    if isinstance(o, torch.Tensor):
        return {"$tensor": {
            "dtype": str(o.dtype).replace("torch.", ""), "shape": list(o.shape), "stride": list(o.stride()),
            "storage_offset": o.storage_offset(), "requires_grad": o.requires_grad,
            "parameter": isinstance(o, torch.nn.Parameter), "data_ptr": o.data_ptr(),
            "storage_ptr": o.storage().data_ptr(),
            "values": o.detach().reshape(-1).to(torch.float64).tolist()}}
    if type(o) in (tuple, torch.Size):
        return {"$tuple": [describe_value(x) for x in o]}
    if type(o) is list:
        return [describe_value(x) for x in o]
    if type(o) in (set, frozenset):
        return {"$set": [describe_value(x) for x in o]}
    if type(o) is OrderedDict:
        return {"$odict": [[describe_value(k), describe_value(v)] for k, v in o.items()],
                "$attrs": {k: describe_value(v) for k, v in vars(o).items()}}
    if type(o) is dict:
        return {"$dict": [[describe_value(k), describe_value(v)] for k, v in o.items()]}
    return {"$object": f"{type(o).__module__}.{type(o).__qualname__}"}


def describe(path):
    obj = load(path)
    out = {"value": describe_value(obj)}
    try:
        again = load(path, weights_only=True)
        out["weights_only"] = "ok"
        try:
            c = Comparer()
            c.compare(obj, again)
            out["weights_only_equal"] = True
        except Mismatch as e:
            out["weights_only_equal"] = False
            out["weights_only_difference"] = str(e)
    except Exception as e:  # noqa: BLE001
        out["weights_only"] = f"error: {type(e).__name__}: {e}"
    print(json.dumps(out, allow_nan=False))
    return 0


def set_byteorder(src, dst, order):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("/byteorder"):
                data = order.encode()
            zout.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "describe":
        return describe(argv[2])
    if len(argv) == 5 and argv[1] == "set-byteorder":
        return set_byteorder(argv[2], argv[3], argv[4])
    if len(argv) >= 3 and len(argv) % 2 == 1:
        return check_pairs(argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
