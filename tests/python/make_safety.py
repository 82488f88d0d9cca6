#!/usr/bin/python3
"""Write samples for the safety scan (ckptscope-cli scan, ckpt::scanFile).

Usage: /usr/bin/python3 make_safety.py OUTDIR   (Debian's python3-torch, 1.13)

OUTDIR/safety.json is a list of
  {"file": name relative to OUTDIR,
   "verdict": "safe" | "suspicious" | "dangerous" | "unreadable",
   "globals": [{"module", "name", "record", "offset"}, ...]
              every GLOBAL / STACK_GLOBAL / INST the file's pickles name, in
              file order. Names come from CPython's own unpickler (its
              find_class, overridden to return an inert stand-in: nothing the
              pickle names is imported or called), offsets from
              pickletools.genops; the scanner is not consulted,
   "levels": {"module.name": level} for the globals this script planted on
             purpose (the payload of a family, the benign parts),
   "error": true when the scan must report an error (damaged pickles),
   "why": what the sample tests}.

Every payload would `touch OUTDIR/PWNED` (or open, fetch, import ...): the
test checks that OUTDIR/PWNED never appears. The pickles are written by
pickle's own (pure Python) pickler from objects whose __reduce__ names the
callable through a `Ref` stand-in, or by hand; nothing is unpickled for real.
"""
import io
import json
import os
import pickle
import pickletools
import struct
import sys
import zipfile
from typing import Any

import numpy as np
import torch

PROTOCOLS = (0, 2, 4, 5)


# ------------------------------------------------- writing without importing

class Ref:
    """Stands for the global module.name; the pickler writes it as GLOBAL
    (protocol < 4) or STACK_GLOBAL (4, 5) without importing it."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce wants a callable; never called
        raise AssertionError("a Ref is never called")


class Call:
    """Pickles as fn(*args) (REDUCE)."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args

    def __call__(self, *args):  # a Call may be the callable of another; never called
        raise AssertionError("a Call is never called")


class NewObj:
    """Pickles as cls.__new__(cls) + BUILD(state) (NEWOBJ at protocol >= 2)."""

    def __init__(self, cls, state):
        self.cls, self.state = cls, state

    def __reduce__(self):
        return (Ref("copyreg", "__newobj__"), (self.cls,), self.state)


class _Pickler(pickle._Pickler):
    dispatch = dict(pickle._Pickler.dispatch)

    def save_ref(self, obj):
        if self.proto >= 4:
            self.save(obj.module)
            self.save(obj.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[Ref] = save_ref

    def save_reduce(self, func, args, state=None, *rest, obj=None):
        # copyreg.__newobj__ as the callable means NEWOBJ, as in pickle itself.
        if isinstance(func, Ref) and func.name == "__newobj__" and self.proto >= 2:
            cls = args[0]
            self.save(cls)
            self.save(tuple(args[1:]))
            self.write(pickle.NEWOBJ)
            if obj is not None:
                self.memoize(obj)
            if state is not None:
                self.save(state)
                self.write(pickle.BUILD)
            return
        return super().save_reduce(func, args, state, *rest, obj=obj)


def dumps(obj, protocol):
    buf = io.BytesIO()
    _Pickler(buf, protocol=protocol).dump(obj)
    return buf.getvalue()


# ----------------------------------------------- the independent truth -----

class _Inert:
    """What the recording unpickler returns for every global: accepts any
    call, construction, state and item; does nothing."""

    def __new__(cls, *a, **k):
        return object.__new__(cls)

    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return _Inert()

    def __setstate__(self, state):
        pass

    def __reduce__(self):
        raise AssertionError("never pickled")

    def append(self, x):
        pass

    def extend(self, x):
        pass

    def __setitem__(self, k, v):
        pass


def _inert_class():
    return type("InertGlobal", (_Inert,), {})


def names_looked_up(data):
    """(module, name) of each find_class call CPython's unpickler makes, in
    order; persistent ids are answered with an inert value."""
    seen = []

    class Recorder(pickle.Unpickler):
        def find_class(self, module, name):
            seen.append((module, name))
            return _inert_class()

        def persistent_load(self, pid):
            return _Inert()

    Recorder(io.BytesIO(data), encoding="latin1").load()
    return seen


def global_ops(data):
    """Byte offsets of GLOBAL / STACK_GLOBAL / INST opcodes, from pickletools."""
    return [pos for op, arg, pos in pickletools.genops(data) if op.name in ("GLOBAL", "STACK_GLOBAL", "INST")]


def expected_globals(data, record, base=0):
    offsets = global_ops(data)
    names = names_looked_up(data)
    assert len(offsets) == len(names), (record, offsets, names)
    return [{"module": m, "name": n, "record": record, "offset": base + off} for (m, n), off in zip(names, offsets)]


# ----------------------------------------------------------- the families ---

def families(cmd, pwned, url):
    """(label, module, name, args) for every dangerous family of issue #14."""
    return [
        ("eval", "builtins", "eval", (f"__import__('os').system({cmd!r})",)),
        ("exec", "builtins", "exec", (f"import os; os.system({cmd!r})",)),
        ("compile", "builtins", "compile", ("open(" + repr(pwned) + ", 'w')", "<x>", "exec")),
        ("open", "builtins", "open", (pwned, "w")),
        ("import", "builtins", "__import__", ("os",)),
        ("os_system", "os", "system", (cmd,)),
        ("posix_system", "posix", "system", (cmd,)),
        ("nt_system", "nt", "system", (cmd,)),
        ("subprocess", "subprocess", "check_call", (["touch", pwned],)),
        ("sys", "sys", "exit", (3,)),
        ("socket", "socket", "create_connection", (("127.0.0.1", 9),)),
        ("runpy", "runpy", "run_path", (pwned,)),
        ("importlib", "importlib", "import_module", ("os",)),
        ("pickle", "pickle", "loads", (b"\x80\x02N.",)),
        ("_pickle", "_pickle", "loads", (b"\x80\x02N.",)),
        ("shutil", "shutil", "copyfile", ("/etc/hostname", pwned)),
        ("requests", "requests", "get", (url,)),
        ("httplib", "httplib", "HTTPConnection", ("127.0.0.1",)),
        ("http_client", "http.client", "HTTPConnection", ("127.0.0.1",)),
        ("webbrowser", "webbrowser", "open", (url,)),
        ("asyncio", "asyncio", "create_subprocess_shell", (cmd,)),
        ("aiohttp", "aiohttp", "request", ("GET", url)),
        ("code", "code", "InteractiveInterpreter", ()),
        ("pty", "pty", "spawn", ("/bin/sh",)),
        ("timeit", "timeit", "timeit", (f"__import__('os').system({cmd!r})",)),
        ("ctypes", "ctypes", "CDLL", ("libc.so.6",)),
        ("torch_hub", "torch.hub", "load", ("someone/repo", "model")),
        ("torch_dynamo", "torch._dynamo", "optimize", ("eager",)),
        ("torch_utils", "torch.utils.cpp_extension", "load_inline", ("x", "int x;")),
        ("numpy_testing", "numpy.testing._private.utils", "runstring", (f"__import__('os').system({cmd!r})", {})),
        ("attrgetter", "operator", "attrgetter", ("system",)),
        ("methodcaller", "operator", "methodcaller", ("system", cmd)),
        ("unknown_call", "evil_lib.payloads", "run", (cmd,)),
    ]


class Writer:
    def __init__(self, outdir):
        self.outdir = outdir
        self.entries = []
        self.pwned = os.path.join(os.path.abspath(outdir), "PWNED")

    def write(self, name, data, verdict, globals_, levels, why, error=False):
        with open(os.path.join(self.outdir, name), "wb") as f:
            f.write(data)
        e = {"file": name, "verdict": verdict, "globals": globals_, "levels": levels, "why": why}
        if error:
            e["error"] = True
        self.entries.append(e)


def zip_bytes(records, method=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in records:
            z.writestr(name, data)
    return buf.getvalue()


def torch_zip(records):
    """The layout torch 1.13 writes (root `archive/`), from torch's own writer."""
    buf = io.BytesIO()
    writer = torch._C.PyTorchFileWriter(buf)
    for name, data in records:
        writer.write_record(name, data, len(data))
    writer.write_end_of_file()
    del writer
    return buf.getvalue()


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
SYS_INFO = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}
LEGACY_SLOTS = ("magic number", "protocol version", "sys_info", "main", "storage keys")


def legacy_file(slots, proto=2):
    """Five pickles as torch's legacy writer lays them out (each in pickle
    protocol `proto`, as torch.save(..., pickle_protocol=proto) writes them);
    `slots` replaces any of them (by index). Returns (bytes, expected globals)."""
    pickles = [dumps(x, proto) for x in (LEGACY_MAGIC, 1001, SYS_INFO, {"note": "x"}, [])]
    for i, p in slots.items():
        pickles[i] = p
    out, pos, exp = b"", 0, []
    for i, p in enumerate(pickles):
        exp += expected_globals(p, f"legacy {LEGACY_SLOTS[i]} pickle", pos)
        out += p
        pos += len(p)
    return out, exp


def npy_bytes(obj_array_pickle):
    header = "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"
    total = 10 + len(header) + 1
    header += " " * (-total % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"), obj_array_pickle


def object_array(payload):
    a = np.empty(2, dtype=object)
    a[0] = "fine"
    a[1] = payload
    return a


def family_samples(w):
    cmd = f"touch {w.pwned}"
    url = "http://127.0.0.1:9/x"
    for label, module, name, args in families(cmd, w.pwned, url):
        level = {f"{module}.{name}": "dangerous"}
        why = f"{module}.{name}(...) called by REDUCE"
        payload = Call(Ref(module, name), *args)
        for proto in PROTOCOLS:
            # A plain pickle: the payload inside a dict, as in a config.
            pkl = dumps({"step": 10, "payload": payload}, proto)
            w.write(f"{label}_p{proto}.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"), level,
                    f"plain pickle, protocol {proto}: {why}")
        # A torch zip whose data.pkl holds the payload (protocol 2, as torch writes).
        pkl = dumps({"w": torch_ref_tensor(), "payload": payload}, 2)
        w.write(f"{label}.pt", torch_zip([("data.pkl", pkl)]), "dangerous",
                expected_globals(pkl, "archive/data.pkl"), {**level, **TENSOR_LEVELS}, f"torch zip: {why}")
        # Protocols 4 and 5 inside a zip whose data.pkl sits at the root and
        # whose other pickle has an odd name deep in a folder.
        for proto in (4, 5):
            pkl = dumps({"payload": payload}, proto)
            extra = dumps([1, 2, 3], proto)
            w.write(f"{label}_root_p{proto}.pt", zip_bytes([("data.pkl", pkl), ("odd dir/x/.y.pkl", extra)]),
                    "dangerous", expected_globals(pkl, "data.pkl") + expected_globals(extra, "odd dir/x/.y.pkl"),
                    level, f"zip, data.pkl at the root, protocol {proto}: {why}")
        # Legacy: in the main pickle, and in the magic-number slot.
        data, exp = legacy_file({3: dumps({"payload": payload}, 2)})
        w.write(f"{label}_legacy.pt", data, "dangerous", exp, level, f"legacy main pickle: {why}")
        data, exp = legacy_file({0: dumps(payload, 2)})
        w.write(f"{label}_legacy_magic.pt", data, "dangerous", exp, level, f"legacy magic-number slot: {why}")
        # Legacy files of the other protocols: protocol 0/1 pickles do not
        # start with PROTO, and the scan must still walk every slot.
        for proto in (0, 1, 3, 4, 5):
            data, exp = legacy_file({3: dumps({"payload": payload}, proto)}, proto)
            w.write(f"{label}_legacy_p{proto}.pt", data, "dangerous", exp, level,
                    f"legacy main pickle, protocol {proto}: {why}")
        # numpy: an object array in a .npy, and in an .npz (a zip of .npy).
        header, _ = npy_bytes(b"")
        pkl = dumps(object_array(payload), 3)  # np.save pickles with protocol 3
        w.write(f"{label}.npy", header + pkl, "dangerous", expected_globals(pkl, f"{label}.npy", len(header)), level,
                f"numpy object array: {why}")
        w.write(f"{label}.npz", zip_bytes([("weights.npy", header + pkl)], zipfile.ZIP_DEFLATED), "dangerous",
                expected_globals(pkl, "weights.npy", len(header)), level, f"numpy .npz (deflated): {why}")


TENSOR_LEVELS = {"torch._utils._rebuild_tensor_v2": "innocuous", "collections.OrderedDict": "innocuous",
                 "torch.FloatStorage": "innocuous"}


def torch_ref_tensor():
    # _rebuild_tensor_v2(pid-storage, 0, (2,), (1,), False, OrderedDict()); the
    # storage is a persistent id written by hand below (torch_pid).
    return Call(Ref("torch._utils", "_rebuild_tensor_v2"), PersId(), 0, (2,), (1,), False,
                Call(Ref("collections", "OrderedDict")))


class PersId:
    pass


def _persistent_id(obj):
    if isinstance(obj, PersId):
        return ("storage", Ref("torch", "FloatStorage"), "0", "cpu", 2)
    return None


_Pickler.persistent_id = staticmethod(_persistent_id)


def other_samples(w):
    cmd = f"touch {w.pwned}"
    # getattr chains.
    system = Call(Ref("builtins", "getattr"), Call(Ref("builtins", "__import__"), "os"), "system")
    for proto in PROTOCOLS:
        pkl = dumps({"x": Call(system, cmd)}, proto)
        w.write(f"getattr_import_p{proto}.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"),
                {"builtins.getattr": "dangerous", "builtins.__import__": "dangerous"},
                "getattr(__import__('os'), 'system')(cmd)")
    fromkeys = Call(Ref("builtins", "getattr"), Ref("collections", "OrderedDict"), "fromkeys")
    pkl = dumps({"f": fromkeys}, 2)
    w.write("getattr_uncalled.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"),
            {"builtins.getattr": "dangerous", "collections.OrderedDict": "innocuous"},
            "getattr(collections.OrderedDict, 'fromkeys'), never called: getattr is the gadget of "
            "attribute chains, dangerous whatever it reaches")
    # The Python 2 spelling, and attribute chains (each getattr named, each dangerous).
    for proto in (0, 2):
        pkl = dumps({"f": Call(Ref("__builtin__", "getattr"), Ref("collections", "OrderedDict"), "fromkeys")},
                    proto)
        w.write(f"getattr_builtin_p{proto}.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"),
                {"__builtin__.getattr": "dangerous"}, "__builtin__.getattr (Python 2's builtins), never called")
    for proto in PROTOCOLS:
        init = Call(Ref("builtins", "getattr"), Ref("collections", "OrderedDict"), "__init__")
        chain = Call(Ref("builtins", "getattr"), init, "__globals__")
        pkl = dumps({"g": chain, "step": 3}, proto)
        w.write(f"getattr_chain_p{proto}.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"),
                {"builtins.getattr": "dangerous"},
                "getattr(getattr(OrderedDict, '__init__'), '__globals__'): an attribute chain to a module's globals")
    pkl = dumps({"f": Call(fromkeys, ["a"])}, 2)
    w.write("getattr_called.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"),
            {"collections.OrderedDict": "innocuous"},
            "getattr(collections.OrderedDict, 'fromkeys')(['a']): an unknown callable reached and called")
    pkl = dumps({"f": Call(Ref("builtins", "getattr"), Call(Ref("builtins", "str"), "x"), "upper")}, 2)
    w.write("getattr_computed.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"),
            {"builtins.getattr": "dangerous"}, "getattr of a value computed at load time")
    # Suspicious data: known data classes, called or constructed; unknown
    # classes constructed (NEWOBJ) but never called.
    for proto in PROTOCOLS:
        obj = {"tags": Call(Ref("builtins", "set"), ["a", "b"]),
               "counts": Call(Ref("collections", "Counter"), {"a": 1}),
               "path": Call(Ref("pathlib", "PosixPath"), "runs", "a")}
        pkl = dumps(obj, proto)
        w.write(f"data_p{proto}.pkl", pkl, "suspicious", expected_globals(pkl, "pickle 1"),
                {"builtins.set": "suspicious", "collections.Counter": "suspicious",
                 "pathlib.PosixPath": "suspicious"}, "plain data classes")
    pkl = dumps({"cfg": NewObj(Ref("mylab.config", "TrainConfig"), {"lr": 0.1})}, 2)
    w.write("unknown_class_newobj.pkl", pkl, "suspicious", expected_globals(pkl, "pickle 1"),
            {"mylab.config.TrainConfig": "suspicious"}, "an unknown class built by NEWOBJ (never called)")
    # INST (protocol 0, hand-written): calls os.system.
    pkl = b"(S'" + cmd.encode() + b"'\nios\nsystem\n."
    w.write("inst_os_system.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"), {"os.system": "dangerous"},
            "protocol-0 INST os.system")
    pkl = b"(S'x'\nimylab.things\nThing\n."
    w.write("inst_unknown.pkl", pkl, "dangerous", expected_globals(pkl, "pickle 1"),
            {"mylab.things.Thing": "dangerous"}, "INST of an unknown class: a call")
    # Damaged: the payload is seen before the break.
    good = dumps({"payload": Call(Ref("os", "system"), cmd), "tail": list(range(100))}, 2)
    exp = expected_globals(good, "pickle 1")
    w.write("truncated_after_payload.pkl", good[:-40], "dangerous", exp, {"os.system": "dangerous"},
            "cut after the payload: dangerous, and the break is reported", error=True)
    good = dumps({"tail": list(range(100)), "payload": Call(Ref("os", "system"), cmd)}, 2)
    cut = good.index(b"cos\nsystem") - 5
    w.write("truncated_before_payload.pkl", good[:cut], "unreadable", [], {}, "cut before any global", error=True)
    pkl = dumps({"x": 1}, 2)[:-1] + b"\xff."
    w.write("bad_opcode.pkl", pkl, "unreadable", [], {}, "an unknown opcode", error=True)
    deep = b"\x80\x02" + b"(" * 2_000_000 + b"."
    w.write("mark_bomb.pkl", deep, "unreadable", [], {}, "two million MARKs: a bound, not a crash", error=True)
    memo = b"\x80\x02" + b"N" + b"".join(b"r" + struct.pack("<I", i * 3889 + 1) for i in range(100_000)) + b"."
    w.write("memo_bomb.pkl", memo, "unreadable", [], {}, "100,000 memo entries out of sequence: a bound", error=True)
    memo = b"\x80\x02" + b"N" + b"".join(b"r" + struct.pack("<I", i) for i in range(2_100_000)) + b"."
    w.write("memo_dense_bomb.pkl", memo, "unreadable", [], {}, "2.1 million memo entries: a bound", error=True)
    # Benign references: torch's own writer.
    torch.manual_seed(0)
    sd = {"w": torch.randn(3, 2), "b": torch.zeros(2, dtype=torch.bfloat16), "step": 3}
    buf = io.BytesIO()
    torch.save(sd, buf)
    data = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        pkl = z.read("archive/data.pkl")
    w.write("torch_saved.pt", data, "safe", expected_globals(pkl, "archive/data.pkl"),
            {"torch._utils._rebuild_tensor_v2": "innocuous", "torch.FloatStorage": "innocuous",
             "torch.BFloat16Storage": "innocuous", "collections.OrderedDict": "innocuous"},
            "torch.save of a state dict")
    np_arr = {"a": np.arange(3.0), "s": np.float32(1.5)}
    pkl = pickle.dumps(np_arr, 2)
    w.write("numpy_values.pkl", pkl, "safe", expected_globals(pkl, "pickle 1"),
            {"numpy.core.multiarray._reconstruct": "innocuous", "numpy.ndarray": "innocuous",
             "numpy.dtype": "innocuous", "numpy.core.multiarray.scalar": "innocuous"},
            "numpy arrays and scalars, pickled by numpy")
    buf = io.BytesIO()
    np.save(buf, np.arange(4.0))
    w.write("plain.npy", buf.getvalue(), "safe", [], {}, "a numeric .npy: no pickle")


def set_encrypted_flag(data, name):
    """`data` (a zip) with bit 0 of record `name`'s flags (encrypted) set in
    its local header and its central directory entry; no byte is encrypted.
    Python's zipfile then calls it encrypted; torch's reader ignores the bit."""
    b = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(name)
    at = info.header_offset
    assert b[at:at + 4] == b"PK\x03\x04"
    b[at + 6] |= 1
    pos = b.find(b"PK\x05\x06")
    (cd,) = struct.unpack("<I", b[pos + 16:pos + 20])
    while b[cd:cd + 4] == b"PK\x01\x02":
        n, x, c = struct.unpack("<HHH", b[cd + 28:cd + 34])
        if bytes(b[cd + 46:cd + 46 + n]) == name.encode():
            b[cd + 8] |= 1
            break
        cd += 46 + n + x + c
    else:
        raise AssertionError(f"{name} not in the central directory")
    with zipfile.ZipFile(io.BytesIO(bytes(b))) as z:
        assert z.getinfo(name).flag_bits & 1, "zipfile does not see the flag"
    return bytes(b)


def hidden_samples(w):
    """Pickles a loader could unpickle from a zip record of another name, or
    from a record flagged encrypted but stored in the clear; records the scan
    cannot examine; and the records that are no pickles (controls)."""
    cmd = f"touch {w.pwned}"
    payload = {"payload": Call(Ref("builtins", "eval"), f"__import__('os').system({cmd!r})")}
    level = {"builtins.eval": "dangerous"}
    benign = dumps({"w": torch_ref_tensor(), "step": 3}, 2)
    version = ("archive/version", b"3\n")
    for proto in (0, 2, 4):
        pkl = dumps(payload, proto)
        # The only pickle of the archive, as data.txt.
        w.write(f"hidden_txt_p{proto}.pt", zip_bytes([("archive/data.txt", pkl), version]), "dangerous",
                expected_globals(pkl, "archive/data.txt"), level,
                f"a protocol-{proto} pickle stored as data.txt: found by its bytes")
    # Beside torch's own data.pkl, in a record named like a text file.
    pkl = dumps(payload, 2)
    w.write("hidden_beside.pt", torch_zip([("data.pkl", benign), ("extra/notes.txt", pkl)]), "dangerous",
            expected_globals(benign, "archive/data.pkl") + expected_globals(pkl, "archive/extra/notes.txt"),
            {**level, **TENSOR_LEVELS}, "torch's data.pkl and a payload pickle in extra/notes.txt")
    # Upper case: torch's reader (miniz) finds data.pkl whatever the case.
    w.write("hidden_upper.pt", zip_bytes([("archive/DATA.PKL", pkl), version]), "dangerous",
            expected_globals(pkl, "archive/DATA.PKL"), level, "the pickle as DATA.PKL")
    # Encrypted flag, bytes in the clear: stored (torch reads it as is) and deflated.
    for label, method in (("stored", zipfile.ZIP_STORED), ("deflated", zipfile.ZIP_DEFLATED)):
        data = set_encrypted_flag(zip_bytes([("archive/data.pkl", pkl), version], method), "archive/data.pkl")
        w.write(f"encrypted_flag_{label}.pt", data, "dangerous", expected_globals(pkl, "archive/data.pkl"),
                level, f"data.pkl {label}, flagged encrypted but in the clear: scanned")
    data = set_encrypted_flag(torch_zip([("data.pkl", benign)]), "archive/data.pkl")
    w.write("encrypted_flag_benign.pt", data, "safe", expected_globals(benign, "archive/data.pkl"), TENSOR_LEVELS,
            "torch's data.pkl flagged encrypted, in the clear and benign: scanned, safe")
    # Records that cannot be examined: never "safe".
    w.write("hidden_bzip2.pt", zip_bytes([("archive/data.pkl", benign), ("archive/extra.bin", pkl)],
                                         zipfile.ZIP_BZIP2), "unreadable", [], {},
            "bzip2-compressed records (method 12): not examined, so not safe", error=True)
    # One record not examined does not hide the next one's payload.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/extra.bin", benign, compress_type=zipfile.ZIP_BZIP2)
        z.writestr("archive/data.pkl", pkl)
    w.write("hidden_after_bzip2.pt", buf.getvalue(), "dangerous", expected_globals(pkl, "archive/data.pkl"), level,
            "a bzip2 record (not examined), then the payload: dangerous, and the record said", error=True)
    bomb = b"\x80\x02" + b"(" * 2_000_000 + pkl[2:]
    w.write("hidden_bound.pt", torch_zip([("data.pkl", benign), ("extra.bin", bomb)]), "unreadable",
            expected_globals(benign, "archive/data.pkl"), TENSOR_LEVELS,
            "a record whose walk passes the scan's stack bound before its end: not examined", error=True)
    # Controls: torch 2.x's text records, a README, a broken non-pickle, and a
    # storage record (raw bytes torch maps, never unpickles) whose bytes
    # happen to be the payload pickle.
    records = [("data.pkl", benign), ("byteorder", b"little"), (".data/serialization_id", b"1203948571029384756"),
               (".format_version", b"1"), (".storage_alignment", b"64"), ("README.md", b"config:\n  lr: 0.1\n"),
               ("notes.txt", b"(hello, world"), ("data/0", pkl)]
    w.write("text_records.pt", torch_zip(records), "safe", expected_globals(benign, "archive/data.pkl"),
            TENSOR_LEVELS, "text records and a storage record are no pickles: safe")


def trainer_samples(w):
    """A Hugging Face Trainer's training_args.bin, torch.save'd as the Trainer
    does, from stand-ins with transformers' module and class names (Debian
    has no transformers) pickled by this Python (>= 3.11 pickles an enum
    member as getattr(cls, name)). profiles.json says where it sits and what
    it names; nothing is unpickled."""
    import dataclasses
    import enum
    import types

    def register(module, cls):
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        cls.__module__ = module
        cls.__qualname__ = cls.__name__
        setattr(sys.modules[module], cls.__name__, cls)
        return cls

    class IntervalStrategy(str, enum.Enum):
        NO = "no"
        STEPS = "steps"
        EPOCH = "epoch"

    class SaveStrategy(str, enum.Enum):
        NO = "no"
        STEPS = "steps"
        BEST = "best"

    class HubStrategy(str, enum.Enum):
        END = "end"
        EVERY_SAVE = "every_save"

    class SchedulerType(str, enum.Enum):
        LINEAR = "linear"
        COSINE = "cosine"

    class OptimizerNames(str, enum.Enum):
        ADAMW_TORCH = "adamw_torch"
        ADAFACTOR = "adafactor"

    @dataclasses.dataclass
    class AcceleratorConfig:
        split_batches: bool = False
        dispatch_batches: Any = None
        even_batches: bool = True
        use_seedable_sampler: bool = True

    @dataclasses.dataclass
    class TrainingArguments:
        output_dir: str = "out"
        eval_strategy: Any = IntervalStrategy.STEPS
        save_strategy: Any = SaveStrategy.STEPS
        logging_strategy: Any = IntervalStrategy.STEPS
        lr_scheduler_type: Any = SchedulerType.COSINE
        optim: Any = OptimizerNames.ADAMW_TORCH
        hub_strategy: Any = HubStrategy.EVERY_SAVE
        learning_rate: float = 3e-4
        per_device_train_batch_size: int = 8
        report_to: Any = dataclasses.field(default_factory=lambda: ["tensorboard"])
        accelerator_config: Any = dataclasses.field(default_factory=AcceleratorConfig)

    for cls in (IntervalStrategy, SaveStrategy, HubStrategy, SchedulerType):
        register("transformers.trainer_utils", cls)
    register("transformers.training_args", OptimizerNames)
    register("transformers.training_args", TrainingArguments)
    register("transformers.trainer_pt_utils", AcceleratorConfig)

    args = TrainingArguments()
    args.__dict__["_n_gpu"] = 1
    args.__dict__["_setup_devices"] = torch.device("cpu")  # functools.cached_property's slot
    folder = os.path.join(w.outdir, "hf_trainer", "out", "checkpoint-10")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "training_args.bin")
    torch.save(args, path)
    with open(os.path.join(folder, "trainer_state.json"), "w") as f:
        json.dump({"global_step": 10, "log_history": [{"step": 10, "loss": 2.5}]}, f)
    with zipfile.ZipFile(path) as z:
        record = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        pkl = z.read(record)
    # The same bytes where no Trainer wrote them: judged by the general tables.
    plain = os.path.join(w.outdir, "hf_trainer", "plain")
    os.makedirs(plain, exist_ok=True)
    with open(path, "rb") as src, open(os.path.join(plain, "training_args.bin"), "wb") as dst:
        dst.write(src.read())
    # Under the profile, what it does not vouch for still counts: a payload,
    # and TrainingArguments called (its __post_init__ runs) instead of built.
    hostile = os.path.join(w.outdir, "hf_trainer", "hostile", "checkpoint-20")
    os.makedirs(hostile, exist_ok=True)
    with open(os.path.join(hostile, "trainer_state.json"), "w") as f:
        json.dump({"global_step": 20}, f)
    cmd = f"touch {w.pwned}"
    evil = dumps({"args": NewObj(Ref("transformers.training_args", "TrainingArguments"), {"output_dir": "o"}),
                  "x": Call(Ref("os", "system"), cmd)}, 2)
    with open(os.path.join(hostile, "training_args.bin"), "wb") as f:
        f.write(torch_zip([("data.pkl", evil)]))
    called = dumps(Call(Ref("transformers.training_args", "TrainingArguments"), "out"), 2)
    os.makedirs(os.path.join(w.outdir, "hf_trainer", "called"), exist_ok=True)
    with open(os.path.join(w.outdir, "hf_trainer", "called", "config.json"), "w") as f:
        json.dump({"model_type": "llama"}, f)
    with open(os.path.join(w.outdir, "hf_trainer", "called", "training_args.bin"), "wb") as f:
        f.write(torch_zip([("data.pkl", called)]))
    return {"hf_trainer": {
        "file": "hf_trainer/out/checkpoint-10/training_args.bin",
        "plain": "hf_trainer/plain/training_args.bin",
        "globals": expected_globals(pkl, record),
        "hostile": "hf_trainer/hostile/checkpoint-20/training_args.bin",
        "hostile_globals": expected_globals(evil, "archive/data.pkl"),
        "called": "hf_trainer/called/training_args.bin",
        "called_globals": expected_globals(called, "archive/data.pkl")}}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_safety.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    w = Writer(outdir)
    if os.path.exists(w.pwned):
        os.remove(w.pwned)
    family_samples(w)
    other_samples(w)
    hidden_samples(w)
    profiles = trainer_samples(w)
    assert not os.path.exists(w.pwned), "something ran a payload while writing"
    with open(os.path.join(outdir, "safety.json"), "w") as f:
        json.dump(w.entries, f, indent=1)
    with open(os.path.join(outdir, "profiles.json"), "w") as f:
        json.dump(profiles, f, indent=1)
    print(f"make_safety: wrote {len(w.entries)} files to {outdir}")


if __name__ == "__main__":
    main()
