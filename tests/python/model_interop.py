"""Interop check of CkptScope's C++ decoder against modern_llm_ref.py.

    model_interop.py DIR

DIR/cases.json (written by tests/model/tst_model.cpp) lists cases:

    {"cases": [{"name": ..., "config": {...MODEL.md fields...},
                "tensors": [{"name": ..., "shape": [...], "file": ...}, ...],
                "input_ids": {"shape": [B, T], "file": ...},
                "labels": {...} or null, "attention_mask": {...} or null}]}

Tensors are raw little-endian float32 files, ids/labels/masks raw int64,
paths relative to DIR. For every case this writes DIR/<name>.logits.f32 (the
reference logits, float32 [B, T, vocab]) and collects into DIR/results.json
{"cases": {name: {"loss": float, "layout_errors": [...]}}}: the loss of the
reference logits against the labels, and any difference between the names,
order and shapes the C++ side wrote and MODEL.md's layout.
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modern_llm_ref as ref  # noqa: E402


def read_raw(root, entry, dtype):
    with open(os.path.join(root, entry["file"]), "rb") as f:
        data = bytearray(f.read())
    shape = tuple(entry["shape"])
    t = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
    if sys.byteorder != "little":
        raise SystemExit("raw files are little-endian; this host is not")
    return t.reshape(shape).clone()


def run_case(root, case):
    config = case["config"]
    weights = {}
    names = []
    for t in case["tensors"]:
        weights[t["name"]] = read_raw(root, t, torch.float32)
        names.append((t["name"], tuple(t["shape"])))
    layout_errors = []
    expected = ref.state_dict_layout(config)
    if names != expected:
        got, want = [n for n, _ in names], [n for n, _ in expected]
        if got != want:
            layout_errors.append(f"names/order differ: got {got}, MODEL.md has {want}")
        for (n, s), (m, e) in zip(names, expected):
            if n == m and s != e:
                layout_errors.append(f"{n}: shape {list(s)}, MODEL.md has {list(e)}")
    input_ids = read_raw(root, case["input_ids"], torch.int64)
    mask = None
    if case.get("attention_mask"):
        mask = read_raw(root, case["attention_mask"], torch.int64)
    labels = input_ids
    if case.get("labels"):
        labels = read_raw(root, case["labels"], torch.int64)
    with torch.no_grad():
        logits = ref.forward(weights, config, input_ids, mask)
        loss = ref.loss(logits, labels)
    out = os.path.join(root, case["name"] + ".logits.f32")
    with open(out, "wb") as f:
        f.write(logits.to(torch.float32).contiguous().numpy().tobytes())
    return {"loss": float(loss), "layout_errors": layout_errors,
            "logits_shape": list(logits.shape)}


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = sys.argv[1]
    with open(os.path.join(root, "cases.json")) as f:
        manifest = json.load(f)
    torch.set_num_threads(1)
    results = {}
    for case in manifest["cases"]:
        results[case["name"]] = run_case(root, case)
    with open(os.path.join(root, "results.json"), "w") as f:
        json.dump({"cases": results, "torch": torch.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
