#!/usr/bin/python3
"""Names that are not UTF-8, and the check of what the JSON writers made of them.

    /usr/bin/python3 json_names.py make OUTDIR
    /usr/bin/python3 json_names.py json OUTPUT OUTDIR CASE
    /usr/bin/python3 json_names.py safetensors FILE OUTDIR CASE

make writes (nothing here is ever unpickled):
  globals.pkl   a plain pickle built by hand: a dict whose key is not UTF-8,
                GLOBAL and STACK_GLOBAL names that are not UTF-8, and
                builtins.eval (so that scan's verdict is "dangerous")
  names.pt      torch.save of the modern_llm layout, then the placeholder
                names inside data.pkl patched to bytes that are not UTF-8
                (same length: the pickle stays valid) and the archive written
                again by torch's own zip writer (CRCs right): two tensor
                names, a metadata key and a metadata string
  names_b.pt    the same names, other values (for diff)
  state.pt      a bare state dict holding the two tensor names
  note.pt       valid names; a metadata string that is not UTF-8
  nested.pt     valid tensor names; metadata holding a dict whose key is not
                UTF-8 (a safetensors export writes it as JSON text)
  unreadable.pt five tensors, four of whose storage records are missing
  plain.pt      the same five names, all readable
  exp/run<bad>/step_100.pt, step_200.pt   a run folder whose name is not UTF-8
  prune/step_100.pt, step_200.pt, notes<bad>.pt   a run to prune
  expect.json   per case, the byte strings (hex) the JSON must give back
json reads OUTPUT as strict UTF-8, parses it with json.loads and checks that
every expected byte string comes back, with surrogateescape (the documented
convention), inside some string or key of the document.
safetensors parses FILE's header by hand and checks the same of its
__metadata__ values, themselves JSON text.
Prints "OK", else what is wrong, exiting 1.
"""
import collections
import io
import json
import os
import shutil
import struct
import sys
import zipfile

# ------------------------------------------------------- the bad bytes ---
# A lone 0xff and 0xfe, a truncated three-byte sequence, a bare continuation
# byte, and a surrogate spelled in UTF-8 (which strict UTF-8 rejects).
TENSOR_1 = b"w\xff\xfe"
TENSOR_2 = b"emb\xe2\x82x"
META_KEY = b"key\x80"
META_TEXT = b"note \xed\xb3\xbf"
NESTED_KEY = b"k\x80\xff"
GLOBAL_MODULE = b"m\xffod"
GLOBAL_NAME = b"fu\xfenc"
STACK_MODULE = b"sg\xfdmod"
STACK_NAME = b"sg\xfcname"
DICT_KEY = b"k\xffey"
RUN_DIR = b"run\xff\xfe"
PRUNE_FILE = b"notes\xff.pt"


def placeholder(i, bad):
    """ASCII of the same length as `bad`, found nowhere else in a pickle."""
    text = f"#{i}#".ljust(len(bad), "~")
    assert len(text) == len(bad)
    return text


# ------------------------------------------------------------ globals ----

def short_unicode(b):
    return b"\x8c" + bytes([len(b)]) + b


def binunicode(b):
    return b"X" + struct.pack("<I", len(b)) + b


def globals_pickle():
    # PROTO 2, {key: GLOBAL, "eval": GLOBAL builtins eval, "sg": STACK_GLOBAL}.
    body = (binunicode(DICT_KEY) + b"c" + GLOBAL_MODULE + b"\n" + GLOBAL_NAME + b"\n"
            + binunicode(b"eval") + b"cbuiltins\neval\n"
            + binunicode(b"sg") + short_unicode(STACK_MODULE) + short_unicode(STACK_NAME) + b"\x93")
    return b"\x80\x02}(" + body + b"u."


# ------------------------------------------------------- torch archives --

def patched_archive(obj, replacements):
    """torch.save(obj), then each placeholder in data.pkl replaced by its
    bytes; written again by torch's zip writer."""
    import torch
    buf = io.BytesIO()
    torch.save(obj, buf)
    records = collections.OrderedDict()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        for info in z.infolist():
            name = info.filename.split("/", 1)[1]
            if name != "version":  # write_end_of_file adds it
                records[name] = z.read(info)
    pkl = records["data.pkl"]
    for text, bad in replacements.items():
        key = text.encode()
        assert pkl.count(key) == 1, (text, pkl.count(key))
        pkl = pkl.replace(key, bad)
    records["data.pkl"] = pkl
    out = io.BytesIO()
    writer = torch._C.PyTorchFileWriter(out)
    for name, data in records.items():
        writer.write_record(name, data, len(data))
    writer.write_end_of_file()
    del writer
    data = out.getvalue()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.testzip() is None  # every CRC right
    return data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def make(outdir):
    import torch
    torch.manual_seed(0)
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    write(os.path.join(outdir, "globals.pkl"), globals_pickle())

    t1, t2, m, v = (placeholder(i, b) for i, b in enumerate((TENSOR_1, TENSOR_2, META_KEY, META_TEXT)))
    swap = {t1: TENSOR_1, t2: TENSOR_2, m: META_KEY, v: META_TEXT}

    def layout(scale, step, loss):
        model = collections.OrderedDict([
            (f"layers.0.{t1}.weight", torch.randn(2, 3) * scale),
            ("layers.0.ok.bias", torch.randn(3)),
            (t2, torch.randn(4, 2) * scale),
        ])
        metadata = {m: 0.5 * scale, "note": v, "step": step, "loss": loss}
        return {"model_state": model, "metadata": metadata, "step": step}

    write(os.path.join(outdir, "names.pt"), patched_archive(layout(1.0, 100, 2.5), swap))
    write(os.path.join(outdir, "names_b.pt"), patched_archive(layout(2.0, 200, 2.0), swap))

    # A bare state dict (no metadata of its own), and metadata whose only
    # odd bytes are in a string value.
    state = collections.OrderedDict([(t1, torch.randn(2)), (t2, torch.randn(3))])
    write(os.path.join(outdir, "state.pt"), patched_archive(state, {t1: TENSOR_1, t2: TENSOR_2}))
    note = {"model_state": collections.OrderedDict([("w", torch.randn(2, 2))]), "metadata": {"note": v}}
    write(os.path.join(outdir, "note.pt"), patched_archive(note, {v: META_TEXT}))

    nk = placeholder(9, NESTED_KEY)
    nested = {"model_state": collections.OrderedDict([("w", torch.randn(2, 2))]),
              "metadata": {"extra": {nk: 1, "plain": [1, 2]}, "step": 3}}
    write(os.path.join(outdir, "nested.pt"), patched_archive(nested, {nk: NESTED_KEY}))

    # Storages data/1..data/4 left out: those four tensors cannot be read.
    five = collections.OrderedDict((f"t{i}", torch.full((3,), float(i))) for i in range(5))
    torch.save(five, os.path.join(outdir, "plain.pt"))
    buf = io.BytesIO()
    torch.save(five, buf)
    out = io.BytesIO()
    writer = torch._C.PyTorchFileWriter(out)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        for info in z.infolist():
            name = info.filename.split("/", 1)[1]
            if name == "version" or name in (f"data/{k}" for k in range(1, 5)):
                continue
            data = z.read(info)
            writer.write_record(name, data, len(data))
    writer.write_end_of_file()
    del writer
    write(os.path.join(outdir, "unreadable.pt"), out.getvalue())

    run = os.path.join(outdir.encode(), b"exp", RUN_DIR)
    os.makedirs(run)
    shutil.copy(os.path.join(outdir, "names.pt"), os.path.join(run, b"step_100.pt"))
    shutil.copy(os.path.join(outdir, "names_b.pt"), os.path.join(run, b"step_200.pt"))

    prune = os.path.join(outdir, "prune")
    os.makedirs(prune)
    for step in (100, 200):
        shutil.copy(os.path.join(outdir, "plain.pt"), os.path.join(prune, f"step_{step}.pt"))
    shutil.copy(os.path.join(outdir, "plain.pt"), os.path.join(prune.encode(), PRUNE_FILE))

    names = [TENSOR_1, TENSOR_2]
    expect = {
        "globals_info": [DICT_KEY, GLOBAL_MODULE, GLOBAL_NAME, STACK_MODULE, STACK_NAME],
        "globals_scan": [GLOBAL_MODULE, GLOBAL_NAME, STACK_MODULE, STACK_NAME],
        "names_info": names + [META_KEY, META_TEXT],
        "names_diff": names + [META_KEY],
        "exp_ls": [RUN_DIR],
        "exp_scan": [RUN_DIR],
        "exp_metrics": [RUN_DIR],
        "exp_runs": [RUN_DIR],
        "prune": [PRUNE_FILE],
        "nested_safetensors": [NESTED_KEY],
    }
    with open(os.path.join(outdir, "expect.json"), "w") as f:
        json.dump({k: [b.hex() for b in v] for k, v in expect.items()}, f, indent=1)


# -------------------------------------------------------------- checks ---

def strings(doc):
    """Every string and key in a parsed JSON document."""
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, list):
        for x in doc:
            yield from strings(x)
    elif isinstance(doc, dict):
        for k, x in doc.items():
            yield k
            yield from strings(x)


def expected(outdir, case):
    with open(os.path.join(outdir, "expect.json")) as f:
        return [bytes.fromhex(h) for h in json.load(f)[case]]


def check_strings(texts, want):
    got = [s.encode("utf-8", "surrogateescape") for s in texts]
    for b in want:
        if not any(b in g for g in got):
            return f"{b!r} does not come back from any string (surrogateescape)"
    return None


def check_json(output, outdir, case):
    with open(output, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")  # strict: JSON text is UTF-8
    except UnicodeDecodeError as e:
        return f"output is not UTF-8: {e}"
    try:
        doc = json.loads(text)
    except ValueError as e:
        return f"json.loads fails: {e}"
    return check_strings(list(strings(doc)), expected(outdir, case))


def check_safetensors(path, outdir, case):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n).decode("utf-8"))
    texts = []
    for value in header.get("__metadata__", {}).values():
        try:
            texts.extend(strings(json.loads(value)))
        except ValueError:
            texts.append(value)
    return check_strings(texts, expected(outdir, case))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
        return 0
    if len(sys.argv) == 5 and sys.argv[1] in ("json", "safetensors"):
        check = check_json if sys.argv[1] == "json" else check_safetensors
        problem = check(*sys.argv[2:])
        if problem:
            print(problem)
            return 1
        print("OK")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
