#!/usr/bin/python3
"""Write small hostile checkpoint files for the C++ reader's safety tests.

Usage: /usr/bin/python3 make_hostile.py OUTDIR   (Debian's python3-torch, 1.13)

OUTDIR/hostile.json is a list of
  {"file": name relative to OUTDIR,
   "expect": "tree"          the reader must return a tree (and run nothing),
           | "error"         opening/parsing must fail with an error,
           | "error_on_data" the tree may load, but reading or verifying the
                             tensor data must fail (failing earlier is fine too),
           | "any"           error or tree; only "nothing runs, nothing
                             crashes" is checked,
   "object": a class/function name ("module.name" as the pickle's GLOBAL
             spells it) that must appear as an opaque object in the tree,
   "why": what the file tests,
   "torch_weights_only": what torch.load(weights_only=True) made of it
             ("ok" or "error: ..."), for information; absent for files with
             code-running globals, which this script never unpickles}.

Files meant to run code would all `touch OUTDIR/PWNED`; the test checks that
OUTDIR/PWNED does not exist afterwards (this script removes a stale one).
Nothing here is ever unpickled with the plain pickle module.
"""
import os
import sys

if os.environ.get("PYTHONHASHSEED") != "0":
    # TorchScript's saved code lists constants in set order.
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import io
import json
import pickle
import pickletools
import struct
import tarfile

import torch
from torch import nn


# ------------------------------------------------------------ pickle ops ---

PROTO2 = b"\x80\x02"
MARK, STOP, TUPLE, EMPTY_TUPLE, EMPTY_DICT, EMPTY_LIST = b"(", b".", b"t", b")", b"}", b"]"
REDUCE, BINPERSID, SETITEM, SETITEMS, APPEND, APPENDS = b"R", b"Q", b"s", b"u", b"a", b"e"
NEWFALSE, NONE = b"\x89", b"N"


def glob(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def string(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def integer(n):
    if 0 <= n < 256:
        return b"K" + bytes([n])
    if -(2**31) <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def tup(*items):
    return MARK + b"".join(items) + TUPLE


def storage_pid(key, numel, storage="FloatStorage", kind="storage"):
    return tup(string(kind), glob("torch", storage), string(key), string("cpu"), integer(numel)) + BINPERSID


def rebuild_tensor(pid, offset, size, stride):
    return (glob("torch._utils", "_rebuild_tensor_v2")
            + tup(pid, integer(offset), tup(*map(integer, size)), tup(*map(integer, stride)), NEWFALSE,
                  glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE)
            + REDUCE)


def dict_pickle(**entries):
    body = b"".join(string(k) + v for k, v in entries.items())
    return PROTO2 + EMPTY_DICT + MARK + body + SETITEMS + STOP


def torch_zip(records):
    """A zip laid out exactly as torch 1.13 writes it (root `archive/`,
    64-byte aligned stored entries, `version` record added at the end)."""
    buf = io.BytesIO()
    writer = torch._C.PyTorchFileWriter(buf)
    for name, data in records.items():
        writer.write_record(name, data, len(data))
    writer.write_end_of_file()
    del writer
    return buf.getvalue()


# ---------------------------------------------------------- code runners ---

class _Reduce:
    """Pickles as `callable(*args)`; never instantiated for anything else."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


class Hostile:
    def __init__(self, outdir):
        self.outdir = outdir
        self.entries = []
        self.pwned = os.path.join(os.path.abspath(outdir), "PWNED")

    def write(self, name, data, expect, why, obj=None, probe=True):
        with open(os.path.join(self.outdir, name), "wb") as f:
            f.write(data)
        entry = {"file": name, "expect": expect, "why": why}
        if obj:
            entry["object"] = obj
        if probe:
            entry["torch_weights_only"] = self.probe(name)
        self.entries.append(entry)

    def probe(self, name):
        # weights_only=True uses torch's restricted unpickler: it calls no
        # global outside its allow-list, so it is safe on every file here.
        try:
            torch.load(os.path.join(self.outdir, name), weights_only=True)
            return "ok"
        except Exception as e:  # noqa: BLE001 - any failure is the answer
            text = str(e).split("trusted source.")[-1].strip() or type(e).__name__
            return "error: " + " ".join(text.split())[:160]


def check_pickle(data):
    """Parse (never run) a pickle; it must be well formed."""
    for _ in pickletools.genops(data):
        pass


def code_runners(h):
    cmd = f"touch {h.pwned}"
    # os.system via __reduce__, written by the real pickler (GLOBAL 'posix system').
    pkl = pickle.dumps({"note": "hello", "payload": _Reduce(os.system, (cmd,))}, protocol=2)
    assert b"cposix\nsystem\n" in pkl
    check_pickle(pkl)
    h.write("pwn_os_system.pt", torch_zip({"data.pkl": pkl}), "tree",
            "data.pkl would call os.system on unpickling", "posix.system", probe=False)

    pkl = PROTO2 + glob("builtins", "eval") + tup(string(f"__import__('os').system('{cmd}')")) + REDUCE + STOP
    check_pickle(pkl)
    h.write("pwn_eval.pt", torch_zip({"data.pkl": pkl}), "tree",
            "root is builtins.eval(code)", "builtins.eval", probe=False)

    # Hand-built: protocol 2 with fix_imports would spell it 'commands Popen'.
    argv = EMPTY_LIST + MARK + string("touch") + string(h.pwned) + APPENDS
    pkl = PROTO2 + EMPTY_LIST + MARK + integer(1) + glob("subprocess", "Popen") + tup(argv) + REDUCE + APPENDS + STOP
    check_pickle(pkl)
    h.write("pwn_popen.pt", torch_zip({"data.pkl": pkl}), "tree",
            "a list holding subprocess.Popen([...])", "subprocess.Popen", probe=False)

    # getattr(__import__('os'), 'system')(cmd): the callable is itself a REDUCE result.
    system = glob("__builtin__", "getattr") + tup(
        glob("__builtin__", "__import__") + tup(string("os")) + REDUCE, string("system")) + REDUCE
    pkl = PROTO2 + EMPTY_DICT + string("x") + system + tup(string(cmd)) + REDUCE + SETITEM + STOP
    check_pickle(pkl)
    h.write("pwn_getattr_chain.pt", torch_zip({"data.pkl": pkl}), "tree",
            "__builtin__.getattr(__builtin__.__import__('os'), 'system')(cmd) inside a dict",
            "__builtin__.getattr", probe=False)

    # BUILD on an opaque object: a real unpickler would call __setstate__ / setattr.
    pkl = (PROTO2 + glob("os", "_wrap_close") + EMPTY_TUPLE + b"\x81"  # NEWOBJ
           + EMPTY_DICT + string("_stream") + string(cmd) + SETITEM + b"b" + STOP)  # BUILD
    check_pickle(pkl)
    h.write("pwn_newobj_build.pt", torch_zip({"data.pkl": pkl}), "tree",
            "NEWOBJ + BUILD of an arbitrary class: state must be shown, not applied", "os._wrap_close",
            probe=False)

    # Protocol-0 INST opcode: calls os.system while building. Support is optional.
    pkl = b"(S'" + cmd.encode() + b"'\nios\nsystem\n."
    check_pickle(pkl)
    h.write("pwn_inst_opcode.pt", torch_zip({"data.pkl": pkl}), "any",
            "protocol-0 INST os.system: either an error (opcode unsupported) or an opaque tree",
            probe=False)


# -------------------------------------------------------- broken storages --

def storage_cases(h):
    four = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)

    def tensor_file(pid, offset=0, size=(4,), stride=(1,), records=None):
        pkl = dict_pickle(w=rebuild_tensor(pid, offset, size, stride))
        check_pickle(pkl)
        return torch_zip({"data.pkl": pkl, **(records if records is not None else {"data/0": four})})

    h.write("control_ok.pt", tensor_file(storage_pid("0", 4)), "tree",
            "control: the same hand-built layout, valid (the cases below change one thing)")
    pkl = dict_pickle(w=tup(string("module"), string("os"), string("system")) + BINPERSID)
    h.write("persid_not_storage.pt", torch_zip({"data.pkl": pkl, "data/0": four}), "error",
            "BINPERSID tuple whose first item is 'module', not 'storage'")
    h.write("storage_key_traversal.pt", tensor_file(storage_pid("../../etc/passwd", 4)), "error",
            "storage key '../../etc/passwd' (path injection)")
    h.write("storage_key_absolute.pt", tensor_file(storage_pid("/etc/passwd", 4)), "error",
            "storage key '/etc/passwd'")
    h.write("storage_missing.pt", tensor_file(storage_pid("7", 4)), "error",
            "persistent id names data/7, which the zip does not hold")
    h.write("storage_unknown_class.pt", tensor_file(storage_pid("0", 4, storage="EvilStorage")), "error",
            "storage class torch.EvilStorage does not exist")
    h.write("storage_numel_too_big.pt", tensor_file(storage_pid("0", 1000), size=(4,)), "error_on_data",
            "storage claims 1000 floats (4000 bytes); data/0 holds 16")
    h.write("storage_numel_overflow.pt", tensor_file(storage_pid("0", 2**62), size=(4,)), "error_on_data",
            "storage numel 2**62: numel * 4 bytes overflows int64")
    h.write("tensor_extent_too_big.pt", tensor_file(storage_pid("0", 4), size=(10,)), "error_on_data",
            "size 10 over a 4-element storage")
    h.write("tensor_offset_too_big.pt", tensor_file(storage_pid("0", 4), offset=3, size=(2,)), "error_on_data",
            "offset 3 + 2 elements over a 4-element storage")
    h.write("tensor_stride_overflow.pt", tensor_file(storage_pid("0", 4), size=(2, 2), stride=(2**62, 1)),
            "error_on_data", "stride 2**62: the extent computation overflows int64")
    h.write("tensor_negative_stride.pt", tensor_file(storage_pid("0", 4), offset=3, size=(4,), stride=(-1,)),
            "error_on_data", "negative stride (torch never writes one)")
    h.write("tensor_negative_size.pt", tensor_file(storage_pid("0", 4), size=(-1,)), "error_on_data",
            "negative size")
    h.write("tensor_size_9byte_long.pt", tensor_file(storage_pid("0", 4), size=(2**64 + 3,)), "error_on_data",
            "a size written as a 9-byte LONG1 (does not fit int64)")
    h.write("storage_record_short.pt", tensor_file(storage_pid("0", 4), records={"data/0": four[:10]}),
            "error_on_data", "data/0 holds 10 bytes, the storage needs 16")


# ------------------------------------------------------------ pickle abuse --

def pickle_cases(h):
    def zipped(pkl, check=True):
        if check:
            check_pickle(pkl)
        return torch_zip({"data.pkl": pkl})

    depth = 200_000
    pkl = PROTO2 + EMPTY_LIST * depth + APPEND * (depth - 1) + STOP
    h.write("deep_nesting.pt", zipped(pkl, check=False), "error",
            f"lists nested {depth} deep: needs a depth cap, not a stack overflow", probe=False)
    long_put = lambda i: b"r" + struct.pack("<I", i)
    long_get = lambda i: b"j" + struct.pack("<I", i)
    pkl = (PROTO2 + EMPTY_DICT + MARK + string("a") + EMPTY_LIST + long_put(0xFFFFFFF0) + integer(1) + APPEND
           + string("b") + long_get(0xFFFFFFF0) + SETITEMS + STOP)
    h.write("memo_sparse.pt", zipped(pkl), "tree",
            "valid: memo index 0xFFFFFFF0 (memo must be a map, never pre-sized)")
    pkl = PROTO2 + EMPTY_DICT + string("a") + b"h\x05" + SETITEM + STOP
    h.write("memo_missing.pt", zipped(pkl, check=False), "error", "BINGET of a memo slot never PUT")
    pkl = PROTO2 + b"X" + struct.pack("<I", 0x7FFFFFFF) + b"abc" + STOP
    h.write("string_length_huge.pt", zipped(pkl, check=False), "error",
            "BINUNICODE claims 2 GiB, the pickle has 4 bytes left")
    pkl = dict_pickle(a=integer(1))[:-2]
    h.write("pickle_truncated.pt", zipped(pkl, check=False), "error", "data.pkl ends before STOP")
    pkl = PROTO2 + SETITEM + STOP
    h.write("stack_underflow.pt", zipped(pkl, check=False), "error", "SETITEM on an empty stack")
    pkl = PROTO2 + b"\xff" + STOP
    h.write("unknown_opcode.pt", zipped(pkl, check=False), "error", "opcode 0xff")
    pkl = PROTO2 + EMPTY_LIST + MARK + integer(1) + integer(2) + STOP
    h.write("unclosed_mark.pt", zipped(pkl, check=False), "any",
            "a MARK left open at STOP (CPython tolerates it; an error is fine too)")


# ----------------------------------------------------------------- legacy --

def legacy_cases(h):
    # Built by hand like torch's legacy writer (whose keys are memory
    # addresses, so its bytes change from run to run); torch loads the control.
    header = b"".join(pickle.dumps(v, protocol=2) for v in (
        0x1950A86A20F9469CFC6C, 1001,
        {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}))
    pid = tup(string("storage"), glob("torch", "FloatStorage"), string("0"), string("cpu"), integer(4), NONE)
    main_pickle = dict_pickle(w=rebuild_tensor(pid + BINPERSID, 0, (4,), (1,)))
    check_pickle(main_pickle)
    head = header + main_pickle + pickle.dumps(["0"], protocol=2)
    data = struct.pack("<4f", 0.0, 1.0, 2.0, 3.0)
    blob = head + struct.pack("<q", 4) + data
    h.write("legacy_control_ok.pt", blob, "tree", "control: a valid hand-built legacy file")
    assert torch.equal(torch.load(os.path.join(h.outdir, "legacy_control_ok.pt"))["w"], torch.arange(4.0))
    h.write("legacy_count_too_big.pt", head + struct.pack("<q", 2**40) + data, "error",
            "legacy storage record claims 2**40 elements; the file has 16 bytes of data")
    h.write("legacy_count_negative.pt", head + struct.pack("<q", -1) + data, "error",
            "legacy storage record count -1")
    h.write("legacy_truncated.pt", blob[:len(head) + 12], "error", "legacy file cut inside the storage data")


# ------------------------------------------------------------ safetensors --

def safetensors(header, data=b"", raw_header=None):
    hj = raw_header if raw_header is not None else json.dumps(header).encode()
    hj += b" " * (-len(hj) % 8)
    return struct.pack("<Q", len(hj)) + hj + data


def safetensors_cases(h):
    f32x4 = struct.pack("<4f", 1, 2, 3, 4)
    t = lambda b, e, shape=(4,), dtype="F32": {"dtype": dtype, "shape": list(shape), "data_offsets": [b, e]}
    h.write("st_control_ok.safetensors", safetensors({"a": t(0, 16)}, f32x4), "tree",
            "control: a valid one-tensor file", probe=False)
    h.write("st_header_huge.safetensors", struct.pack("<Q", 2**60) + b"{}      ", "error",
            "header length 2**60", probe=False)
    h.write("st_header_past_end.safetensors", struct.pack("<Q", 4096) + b'{"a":1}', "error",
            "header length 4096, file much shorter", probe=False)
    h.write("st_offsets_past_end.safetensors", safetensors({"a": t(0, 16)}, f32x4[:8]), "error",
            "data_offsets end 16, only 8 data bytes", probe=False)
    h.write("st_offsets_reversed.safetensors", safetensors({"a": t(16, 0)}, f32x4), "error",
            "data_offsets end < begin", probe=False)
    h.write("st_offsets_overlap.safetensors",
            safetensors({"a": t(0, 16), "b": t(8, 24, shape=(4,))}, f32x4 + f32x4[:8]), "error",
            "two tensors overlap (the safetensors format requires disjoint, gap-free data)", probe=False)
    h.write("st_size_mismatch.safetensors", safetensors({"a": t(0, 12)}, f32x4), "error",
            "shape [4] F32 needs 16 bytes, offsets span 12", probe=False)
    h.write("st_bad_json.safetensors", safetensors(None, f32x4, raw_header=b'{"a": {"dtype": "F32", '), "error",
            "header is not valid JSON", probe=False)
    h.write("st_unknown_dtype.safetensors", safetensors({"a": t(0, 16, dtype="F33")}, f32x4), "error",
            "dtype F33", probe=False)
    h.write("st_shape_overflow.safetensors", safetensors({"a": t(0, 16, shape=(2**62, 2**62))}, f32x4),
            "error", "shape product overflows int64", probe=False)


# -------------------------------------------------------- other formats ----

class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x)


def other_formats(h):
    torch.manual_seed(0)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(_Tiny()), buf)
    h.write("torchscript.pt", buf.getvalue(), "error",
            "TorchScript archive (has constants.pkl): report 'not supported'", probe=False)

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        members = {"sys_info": pickle.dumps({"protocol_version": 1000, "little_endian": True}, 2),
                   "pickle": pickle.dumps({"w": 0}, 2),
                   "storages": pickle.dumps(0, 2),
                   "tensors": pickle.dumps(0, 2)}
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    h.write("tar_era.pt", buf.getvalue(), "error", "pre-0.1.10 tar checkpoint: reject with a clear message",
            probe=False)

    h.write("empty_file.pt", b"", "error", "zero bytes", probe=False)
    h.write("zip_truncated.pt", torch_zip({"data.pkl": dict_pickle(a=integer(1))})[:60], "error",
            "a torch zip cut after 60 bytes (no central directory)", probe=False)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_hostile.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    h = Hostile(outdir)
    if os.path.exists(h.pwned):
        os.remove(h.pwned)
    code_runners(h)
    storage_cases(h)
    pickle_cases(h)
    legacy_cases(h)
    safetensors_cases(h)
    other_formats(h)
    assert not os.path.exists(h.pwned), "something ran a payload while writing"
    with open(os.path.join(outdir, "hostile.json"), "w") as f:
        json.dump(h.entries, f, indent=1)
    print(f"make_hostile: wrote {len(h.entries)} files to {outdir}")


if __name__ == "__main__":
    main()
