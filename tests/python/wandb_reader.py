#!/usr/bin/python3
"""The history and summary of W&B run folders, read independently of CkptScope.

    python3 wandb_reader.py ROOT

Prints JSON: {"runs": {RUN: {"series": {METRIC: [[step, value|null,
wall_time, null], ...]}, "summary": {KEY: value|null}, "damaged": N,
"end": BYTE, "records": N}}} for every folder under ROOT named
run-<date>_<time>-<id>, offline-run-... or dryrun-... (wandb/latest-run, a
link, is not followed). RUN is the RunRecord's display_name (without a
.wandb file: wandb-metadata.json's "name"), else the folder's name.
Folders of one run id in one folder (a resumed run) are one run (merge),
with "restarts": {METRIC: [step, ...]}.

Written from wandb's sources: wandb/sdk/internal/datastore.py (the header
":W&B" 0xBEE1 0; DataStore.scan_data: 32 KiB blocks, fewer than 7 bytes
left in a block skipped as padding, chunks "<IHB" = crc32, length, type,
the CRC zlib.crc32(data, zlib.crc32(type byte)); FIRST, MIDDLE..., LAST
joined into one record), wandb/proto/wandb_internal.proto (Record.history
= 2, Record.run = 17; HistoryRecord.item = 1, .step = 2; HistoryItem.key =
1, .nested_key = 2, .value_json = 16; RunRecord.display_name = 8) and
wandb-core's runhistory.go (nested_key joined with ".", a JSON object value
flattened with "."). Where scan_data asserts (a CRC that does not match) this
reader skips the chunk and counts it; a chunk not all there ends the reading
(a run still writing). A row's `_step` is its step, `_timestamp` its wall
time; `_runtime` and `_wandb` are not metrics; media objects (`_type`),
strings and booleans are no points. Non-finite values print as null, as in
JSON.

A folder without a .wandb file (wandb before 0.10: wandb/wandb_run.py,
history.py) keeps its history in wandb-history.jsonl (files/ first, then the
folder itself): one json.dumps'd row a line, read with json.loads (NaN,
Infinity); a line that does not load, is no object or has no integer
`_step` is counted in "damaged", as is a last line without a newline
(not read; "end" is just past the last newline); a row with `_stream`
(History.stream) is another series of steps and left out. Its summary is
wandb-summary.json, in files/ or in the folder.
"""
import json
import math
import os
import re
import struct
import sys
import zlib

BLOCK = 32768


def varint(b, i):
    shift = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """(number, wire type, value) of a message: ints for varints, bytes for
    length-delimited fields."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif wire == 1:
            v = b[i:i + 8]
            i += 8
        elif wire == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
        yield number, wire, v


def records(path):
    """(records, damaged chunks, end of the last whole record)."""
    with open(path, "rb") as f:
        data = f.read()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    if ident != b":W&B" or magic != 0xBEE1 or version != 0:
        return None, 0, 0
    out, damaged = [], 0
    pos = end = 7
    pending = None
    while True:
        left = BLOCK - pos % BLOCK
        if left < 7:
            if pos + left >= len(data):
                break
            pos += left
            if pending is None:
                end = pos
            continue
        if pos + 7 > len(data):
            break
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if pos + 7 + length > len(data):
            break
        chunk = data[pos + 7:pos + 7 + length]
        if zlib.crc32(chunk, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != crc:
            damaged += 1
            pending = None
        elif kind == 1:
            out.append(chunk)
        elif kind == 2:
            pending = chunk
        elif pending is not None:
            pending += chunk
            if kind == 4:
                out.append(pending)
                pending = None
        pos += 7 + length
        if pending is None:
            end = pos
    return out, damaged, end


def flatten(prefix, v, out):
    if isinstance(v, dict):
        if "_type" in v:
            return
        for k, x in v.items():
            flatten(prefix + "." + k, x, out)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        out[prefix] = float(v)


def finite(v):
    return v if math.isfinite(v) else None


def add_row(row, result):
    step, wall = row.pop("_step"), row.pop("_timestamp", None)
    row.pop("_runtime", None)
    flat = {}
    for k, v in row.items():
        if k != "_wandb":
            flatten(k, v, flat)
    for k, v in flat.items():
        series = result["series"].setdefault(k, [])
        if series and series[-1][0] == step:
            series.pop()
        series.append([step, finite(v), wall, None])


def in_run(folder, name):
    for p in (os.path.join(folder, "files", name), os.path.join(folder, name)):
        if os.path.isfile(p):
            return p
    return None


def read_history_jsonl(path, result):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines[-1]:
        result["damaged"] += 1  # no newline after it
    result["end"] = len(data) - len(lines[-1])
    for line in lines[:-1]:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            result["damaged"] += 1
            continue
        step = row.get("_step") if isinstance(row, dict) else None
        if not isinstance(step, int) or isinstance(step, bool):
            result["damaged"] += 1
            continue
        if "_stream" in row:
            continue
        result["records"] += 1
        add_row(row, result)


def read_run(folder):
    store = [f for f in os.listdir(folder) if f.startswith("run-") and f.endswith(".wandb")]
    name = os.path.basename(folder)
    result = {"series": {}, "summary": {}, "damaged": 0, "end": 0, "records": 0}
    if not store:
        history = in_run(folder, "wandb-history.jsonl")
        if history:
            read_history_jsonl(history, result)
        meta = in_run(folder, "wandb-metadata.json")
        if meta:
            with open(meta) as f:
                n = json.load(f).get("name")
            if isinstance(n, str) and n:
                name = n
    if store:
        recs, damaged, end = records(os.path.join(folder, store[0]))
        result.update(damaged=damaged, end=end, records=len(recs or []))
        for rec in recs or []:
            top = {n: v for n, w, v in fields(rec) if w == 2}
            if 17 in top and name == os.path.basename(folder):
                run = {n: v for n, w, v in fields(top[17]) if w == 2}
                if run.get(8):
                    name = run[8].decode()
            if 2 not in top:
                continue
            row = {}
            for n, w, v in fields(top[2]):
                if n != 1:
                    continue
                key, nested, value = "", [], ""
                for fn, fw, fv in fields(v):
                    if fn == 1:
                        key = fv.decode()
                    elif fn == 2:
                        nested.append(fv.decode())
                    elif fn == 16:
                        value = fv.decode()
                row[".".join(nested) if nested else key] = json.loads(value)
            add_row(row, result)
    summary_path = in_run(folder, "wandb-summary.json")
    if summary_path:
        with open(summary_path) as f:
            summary = json.load(f)
        flat = {}
        for k, v in summary.items():
            if k != "_wandb":
                flatten(k, v, flat)
        result["summary"] = {k: finite(v) for k, v in sorted(flat.items())}  # byte order
    return name, result


def merge(parts):
    """A resumed run's folders (oldest first) as W&B shows the run: each
    later folder's history replaces what the earlier ones logged from its
    first step on (resuming from a checkpoint rewinds it), a rewind with
    other values is a restart; the name and summary are the newest's."""
    name, result = parts[-1]
    series, restarts = {}, {}
    for _, part in parts:
        for metric, points in part["series"].items():
            out = series.setdefault(metric, [])
            if out and points and points[0][0] <= out[-1][0]:
                first = points[0][0]
                dropped = [p for p in out if p[0] >= first]
                later = {p[0]: p[1] for p in points}
                if any(later.get(p[0], object()) != p[1] for p in dropped):
                    restarts.setdefault(metric, []).append(first)
                out[:] = [p for p in out if p[0] < first]
            out.extend(points)
    merged = dict(result, series=series, restarts=restarts)
    merged["damaged"] = sum(p["damaged"] for _, p in parts)
    return name, merged


def main():
    root = sys.argv[1]
    runs = {}
    # wandb_settings.py: f"{'offline-run' if offline else 'run'}-{timespec}-{run_id}".
    # Before 0.10 (wandb_run.py run_dir_path): f"{'dryrun' if dry else 'run'}-{time_str}-{run_id}".
    pattern = re.compile(r"^(offline-run|run|dryrun)-(\d{8}_\d{6})-(\w+)$")
    for dirpath, dirnames, _ in os.walk(root):
        attempts = {}  # run id -> [(timespec, online, folder)]
        for d in sorted(dirnames):
            m = pattern.match(d)
            if m and not os.path.islink(os.path.join(dirpath, d)):
                attempts.setdefault(m.group(3), []).append((m.group(2), m.group(1) == "run", d))
        for run_id, folders in sorted(attempts.items()):
            parts = [read_run(os.path.join(dirpath, d)) for _, _, d in sorted(folders)]
            name, result = merge(parts) if len(parts) > 1 else parts[0]
            runs[name] = result
    print(json.dumps({"runs": runs}))


if __name__ == "__main__":
    main()
