"""Every tensor of what torch.load returned, named and ordered as CkptScope
names them (core/format walkTensors: depth first in file order, dict keys
and list indices as path elements, each object once however often it is
reached), with a crc32 of its bytes. Shared by make_legacy.py,
legacy_check.py and differential.py."""
import zlib

import torch


def walk(root):
    """[(path, tensor)]. Iterative: a hostile file may nest 200,000 deep."""
    if isinstance(root, torch.Tensor):
        return [([], root)]
    out, seen = [], {id(root)}

    def children(v):
        if isinstance(v, dict):
            # A tuple key (Megatron's distributed optimizer keys its state by
            # (dtype, dtype)) is named by its repr, as CkptScope names it.
            return iter([(str(k) if isinstance(k, tuple) else k, c) for k, c in v.items()])
        if isinstance(v, (list, tuple)):
            return iter(list(enumerate(v)))
        return iter(())

    stack = [([], children(root))]
    while stack:
        path, it = stack[-1]
        step = next(it, None)
        if step is None:
            stack.pop()
            continue
        key, c = step
        if id(c) in seen:
            continue
        if isinstance(c, torch.Tensor):
            seen.add(id(c))
            out.append((path + [key], c))
        elif isinstance(c, (dict, list, tuple)):
            seen.add(id(c))
            stack.append((path + [key], children(c)))
    return out


def tensor_bytes(t):
    """Row-major, little-endian, as CkptScope's TensorData::readRaw gives them."""
    t = t.detach().contiguous().cpu()
    if t.is_quantized:
        t = t.int_repr()
    if t.is_complex():
        t = torch.view_as_real(t).contiguous()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


# Sub-byte quantized types: two or four elements a byte, no bytes per
# element to compare; meta tensors have none (None on both sides).
PACKED = (torch.quint4x2, torch.quint2x4) if hasattr(torch, "quint2x4") else (torch.quint4x2,)


def describe(root):
    return [{"path": path, "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
             "nbytes": t.numel() * t.element_size(),
             "crc32": None if t.is_meta or t.dtype in PACKED else zlib.crc32(tensor_bytes(t))}
            for path, t in walk(root)]
