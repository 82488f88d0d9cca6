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


def legacy_file(slots):
    """Five pickles as torch's legacy writer lays them out; `slots` replaces
    any of them (by index). Returns (bytes, expected globals)."""
    pickles = [dumps(LEGACY_MAGIC, 2), dumps(1001, 2), dumps(SYS_INFO, 2), dumps({"note": "x"}, 2), dumps([], 2)]
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
    w.write("getattr_uncalled.pkl", pkl, "suspicious", expected_globals(pkl, "pickle 1"),
            {"builtins.getattr": "suspicious", "collections.OrderedDict": "innocuous"},
            "getattr(collections.OrderedDict, 'fromkeys'), never called: judged by what it reaches (unknown)")
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
    assert not os.path.exists(w.pwned), "something ran a payload while writing"
    with open(os.path.join(outdir, "safety.json"), "w") as f:
        json.dump(w.entries, f, indent=1)
    print(f"make_safety: wrote {len(w.entries)} files to {outdir}")


if __name__ == "__main__":
    main()
