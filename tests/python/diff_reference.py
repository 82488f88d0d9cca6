#!/usr/bin/python3
"""What `ckptscope-cli diff A B` should report, computed with torch in float64.

    /usr/bin/python3 diff_reference.py A B [--out OUT.json]

The reference for the C++ checkpoint diff (core/analysis/src/diff.cpp): the
test fixtures' expectations (make_diff_fixtures.py) and the Python anchor of
bench/run_diff_bench.sh both use `diff_objects`. It is written from the rules
(MODEL.md, the diff.h comments), not from the C++ code:

  * model state dict: the object itself when every value is a tensor, else
    "model_state" / "model_state_dict" / "state_dict" / "model"; keys lose
    the wrapper prefixes ("module." of DistributedDataParallel, "_orig_mod."
    of torch.compile) that all of them share, in any order and nesting, then
    any leading "_orig_mod." left; without any state dict every tensor is
    compared by its dotted path.
  * per matching name and shape, over the element pairs where both values
    are finite (NaN / inf counted per side): rel_l2 = ||b-a|| / ||a|| (0 when
    both are all zeros, inf when only a is), cosine = <a,b> / (||a|| ||b||)
    (1 when both are zero, 0 when one is), max |b-a|, mean |b-a|; NaN for
    all four when no pair is finite.
  * a tensor sharing storage with an earlier entry (same storage, offset,
    shape, stride, dtype) in both files is "tied_to" that entry.
  * blocks: sqrt(sum ||b-a||^2) / sqrt(sum ||a||^2) per block index (-1 for
    the rest), tied tensors once; modules: the same per (block, module),
    tied tensors included.
  * metadata: top-level keys (except the state dict, the optimizer and the
    `metadata` dict) then `metadata` keys, nested dicts / dataclasses
    flattened with dots up to depth 4, values holding tensors skipped; kept
    where a and b differ or one side lacks the key.
"""
import dataclasses
import json
import math
import re
import sys

import torch

PREFIX = "_orig_mod."
WRAPPERS = ("module.", "_orig_mod.")


def plain_names(keys):
    """State-dict keys without the wrappers' prefixes (see the docstring)."""
    keys = list(keys)
    for _ in range(8):
        shared = next((w for w in WRAPPERS if keys and all(k.startswith(w) and len(k) > len(w) for k in keys)), None)
        if shared is None:
            break
        keys = [k[len(shared):] for k in keys]
    out = []
    for k in keys:
        for _ in range(8):
            if k.startswith(PREFIX) and len(k) > len(PREFIX):
                k = k[len(PREFIX):]
        out.append(k)
    return out


# ------------------------------------------------------------- structure ---

def find_state_dict(obj):
    """(state dict or None, how it was found)."""
    def is_sd(v):
        return isinstance(v, dict) and v and all(isinstance(k, str) and torch.is_tensor(x) for k, x in v.items())

    if is_sd(obj):
        return obj, ""
    if isinstance(obj, dict):
        for key in ("model_state", "model_state_dict", "state_dict", "model"):
            if isinstance(obj.get(key), dict):
                return obj[key], key
    return None, "(all tensors)"


def all_tensors(obj, prefix="", out=None, seen=None):
    out = {} if out is None else out
    seen = set() if seen is None else seen
    if torch.is_tensor(obj):
        out.setdefault(prefix, obj)
    elif id(obj) in seen:
        pass
    elif isinstance(obj, dict):
        seen.add(id(obj))
        for k, v in obj.items():
            all_tensors(v, f"{prefix}.{k}" if prefix else str(k), out, seen)
    elif isinstance(obj, (list, tuple)):
        seen.add(id(obj))
        for i, v in enumerate(obj):
            all_tensors(v, f"{prefix}.{i}" if prefix else str(i), out, seen)
    return out


def entries(obj):
    """[(normalised name, tensor, tied-to name or None)] in file order."""
    sd, how = find_state_dict(obj)
    items = list(sd.items()) if sd is not None else list(all_tensors(obj).items())
    out, first, names = [], {}, set()
    plain = plain_names(k for k, _ in items) if sd is not None else [k for k, _ in items]
    for (key, t), name in zip(items, plain):
        if name in names:
            continue
        names.add(name)
        tie = None
        if sd is not None:
            view = (t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr(),
                    t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
            tie = first.setdefault(view, name)
            tie = None if tie == name else tie
        out.append((name, t, tie))
    return out, how


# --------------------------------------------------------------- metrics ---

def tensor_metrics(a, b):
    a = a.detach().reshape(-1).to(torch.float64)
    b = b.detach().reshape(-1).to(torch.float64)
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    rec = {
        "numel": a.numel(),
        "nan_a": int(torch.isnan(a).sum()), "inf_a": int(torch.isinf(a).sum()),
        "nan_b": int(torch.isnan(b).sum()), "inf_b": int(torch.isinf(b).sum()),
    }
    both = fa & fb
    if not bool(both.all()):
        a, b = a[both], b[both]
    d = b - a
    na, nb, nd = float(torch.linalg.vector_norm(a)), float(torch.linalg.vector_norm(b)), float(torch.linalg.vector_norm(d))
    rec.update({"finite_pairs": a.numel(), "norm_a": na, "norm_b": nb, "norm_diff": nd,
                "sum_diff_sq": float((d * d).sum()), "sum_a_sq": float((a * a).sum())})
    if a.numel() == 0 and rec["numel"] > 0:
        rec.update({"rel_l2": math.nan, "cosine": math.nan, "max_abs": math.nan, "mean_abs": math.nan})
        return rec
    rec["rel_l2"] = nd / na if na > 0 else (0.0 if nd == 0 else math.inf)
    if na > 0 and nb > 0:
        rec["cosine"] = float(torch.dot(a, b)) / (na * nb)
    else:
        rec["cosine"] = 1.0 if na == 0 and nb == 0 else 0.0
    rec["max_abs"] = float(d.abs().max()) if d.numel() else 0.0
    rec["mean_abs"] = float(d.abs().mean()) if d.numel() else 0.0
    return rec


BLOCK = re.compile(r"(?:^|\.)(?:blocks|layers|h|layer)\.(\d+)\.")
MODULES = [  # (pattern, module) for MODEL.md's names, first match wins
    (r"sink", "sinks"), (r"q_proj", "q"), (r"k_proj", "k"), (r"v_proj", "v"), (r"out_proj", "out"),
    (r"attn_norm", "attn_norm"), (r"ffn_norm", "ffn_norm"), (r"final_norm", "final_norm"),
    (r"router", "other"), (r"ffn\.gate|experts\.e\.0\.", "ffn_gate"), (r"ffn\.proj|experts\.e\.2\.", "ffn_proj"),
    (r"token_embed", "embedding"), (r"lm_head", "head"),
]


def classify(name):
    m = BLOCK.search(name)
    block = int(m.group(1)) if m else -1
    for pat, module in MODULES:
        if re.search(pat, name):
            return block, module
    return block, "other"


def rel(sum_diff_sq, sum_a_sq, numel, pairs):
    if pairs == 0 and numel > 0:
        return math.nan
    if sum_a_sq > 0:
        return math.sqrt(sum_diff_sq) / math.sqrt(sum_a_sq)
    return 0.0 if sum_diff_sq == 0 else math.inf


# -------------------------------------------------------------- metadata ---

def _holds_tensor(v, seen=None):
    seen = set() if seen is None else seen
    storages = tuple(c for c in (getattr(torch.storage, "TypedStorage", None), getattr(torch, "UntypedStorage", None)) if c)
    if torch.is_tensor(v) or isinstance(v, storages):
        return True
    if id(v) in seen:
        return False
    seen.add(id(v))
    if isinstance(v, dict):
        return any(_holds_tensor(k, seen) or _holds_tensor(x, seen) for k, x in v.items())
    if isinstance(v, (list, tuple, set, frozenset)):
        return any(_holds_tensor(x, seen) for x in v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _holds_tensor(vars(v), seen)
    return False


def flatten_metadata(obj):
    out = {}
    sd, _ = find_state_dict(obj)

    def add(key, v, depth):
        if key in out:
            return
        d = vars(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v
        if isinstance(d, dict) and d and depth < 4:
            for k, x in d.items():
                add(f"{key}.{k}", x, depth + 1)
            return
        if _holds_tensor(v):
            return
        out[key] = v

    if isinstance(obj, dict) and obj is not sd:
        opt = None
        for k in ("optimizer", "optimizer_state", "optimizer_state_dict", "optim"):
            if isinstance(obj.get(k), dict) and "state" in obj[k] and "param_groups" in obj[k]:
                opt = obj[k]
                break
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else None
        for k, v in obj.items():
            if v is sd or v is opt or v is meta:
                continue
            add(str(k), v, 1)
        if meta is not None:
            for k, v in meta.items():
                add(str(k), v, 1)
    return out


def _same(x, y):
    if type(x) is not type(y):
        return False
    if isinstance(x, float) and math.isnan(x) and math.isnan(y):
        return True
    return x == y


# ------------------------------------------------------------------ diff ---

def diff_objects(obj_a, obj_b):
    ea, how_a = entries(obj_a)
    eb, how_b = entries(obj_b)
    by_b = {name: (t, tie) for name, t, tie in eb}
    names_a = {name for name, _, _ in ea}
    res = {"added": [n for n, _, _ in eb if n not in names_a],
           "removed": [n for n, _, _ in ea if n not in by_b],
           "changed_shape": [], "changed_dtype": [], "tensors": {}, "state_key_a": how_a, "state_key_b": how_b}
    blocks, modules = {}, {}
    for name, ta, tie_a in ea:
        if name not in by_b:
            continue
        tb, tie_b = by_b[name]
        if tuple(ta.shape) != tuple(tb.shape):
            res["changed_shape"].append({"name": name, "a": list(ta.shape), "b": list(tb.shape)})
            continue
        if ta.dtype != tb.dtype:
            res["changed_dtype"].append({"name": name, "a": str(ta.dtype)[6:], "b": str(tb.dtype)[6:]})
        tied = tie_a if tie_a is not None and tie_a == tie_b and tie_a in res["tensors"] else None
        m = dict(res["tensors"][tied]) if tied else tensor_metrics(ta, tb)
        m["tied_to"] = tied
        m["block"], m["module"] = classify(name)
        res["tensors"][name] = m
        key = (m["block"], m["module"])
        groups = [modules.setdefault(key, [0.0, 0.0, 0, 0])]
        if not tied:
            groups.append(blocks.setdefault(m["block"], [0.0, 0.0, 0, 0]))
        for g in groups:
            g[0] += m["sum_diff_sq"]
            g[1] += m["sum_a_sq"]
            g[2] += m["numel"]
            g[3] += m["finite_pairs"]
    res["blocks"] = {str(k): rel(*v) for k, v in sorted(blocks.items())}
    res["modules"] = {f"{k[0]}:{k[1]}": rel(*v) for k, v in sorted(modules.items())}

    ma, mb = flatten_metadata(obj_a), flatten_metadata(obj_b)
    meta = []
    for k, v in ma.items():
        if k in mb and _same(v, mb[k]):
            continue
        meta.append({"key": k, "a": v, "b": mb.get(k), "in_a": True, "in_b": k in mb})
    for k, v in mb.items():
        if k not in ma:
            meta.append({"key": k, "a": None, "b": v, "in_a": False, "in_b": True})
    res["metadata"] = meta
    return res


def load(path):
    return torch.load(path, map_location="cpu")


def _json_safe(x):
    if isinstance(x, float) and not math.isfinite(x):
        return {"$float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (str, int, bool)) or x is None or isinstance(x, float):
        return x
    return repr(x)


def main(argv):
    args, out = list(argv[1:]), None
    if "--out" in args:
        i = args.index("--out")
        out = args[i + 1] if i + 1 < len(args) else None
        del args[i:i + 2]
    if len(args) != 2 or (out is None and "--out" in argv):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    res = diff_objects(load(args[0]), load(args[1]))
    text = json.dumps(_json_safe(res), indent=1)
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
