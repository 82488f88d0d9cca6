#!/usr/bin/python3
"""W&B run folders as the wandb SDK leaves them, for tst_wandb.

    python3 make_wandb.py OUT [RESUMED [LEGACY]]

Writes OUT/proj/wandb/ (wandb.init's run folders under <dir>/wandb) with
the files and bytes wandb writes (sources in github.com/wandb/wandb):

  * run-<YYYYMMDD_HHMMSS>-<id>/ and offline-run-.../ (wandb_settings.py:
    sync_dir), each with run-<id>.wandb (sync_file) and files/:
  * the .wandb file: wandb/sdk/internal/datastore.py's DataStore: a 7-byte
    header struct.pack("<4sHB", b":W&B", 0xBEE1, 0), then _write_data:
    32 KiB blocks (LEVELDBLOG_BLOCK_LEN), a record that does not fit the
    space left split into FIRST / MIDDLE / LAST chunks, fewer than 7 bytes
    left padded with zeros, exactly 7 left an empty FIRST chunk; each chunk
    struct.pack("<IHB", zlib.crc32(data, zlib.crc32(bytes([type]))), len,
    type) then its data. The same as wandb-core's core/pkg/leveldb Writer
    with CRCAlgoIEEE (core/internal/transactionlog).
  * each record a serialized `Record` (wandb/proto/wandb_internal.proto),
    encoded here by hand with its field numbers: Record{num = 1,
    history = 2, summary = 3, output = 4, config = 5, stats = 7, telemetry = 11, run = 17, exit = 18, final = 20,
    header = 21, footer = 22}; HistoryRecord{item = 1, step = 2
    (HistoryStep{num = 1})}; HistoryItem{key = 1, nested_key = 2,
    value_json = 16}; RunRecord{run_id = 1, entity = 2, project = 3,
    display_name = 8, start_time = 17 (Timestamp{seconds = 1, nanos = 2})};
    ConfigRecord / SummaryRecord{update = 1: {key = 1, value_json = 16}}.
  * history rows as the Python SDK's handler writes them (handler.py
    _flush_partial_history / _history_assign_step / _history_assign_runtime:
    item.key = k, item.value_json = json.dumps(v): NaN, Infinity and
    -Infinity bare; a dict logged under one key is one item whose value is
    its JSON object; _timestamp, _runtime and _step items, step.num set),
    and in the offline run as wandb-core writes them (runhistory.ToRecords:
    every key as nested_key = key.split(".")).
  * files/config.yaml: config_util.save_config_file_from_dict: "wandb_version:
    1\\n\\n" + yaml.dump({k: {"desc": None, "value": v}}, SafeDumper,
    default_flow_style=False, allow_unicode=True, sort_keys=False), `_wandb`
    among the keys; the offline run's as wandb-core's runconfig.Serialize
    writes it (yaml.v3: {k: {value: v}}, 4-space indentation, sequences
    indented, keys sorted).
  * files/wandb-summary.json (json.dumps of the summary, nested dicts and a
    `_wandb` entry), files/output.log (the console), files/wandb-metadata.json,
    logs/debug.log; wandb/latest-run a link to the newest run folder.

The online run also holds files/checkpoint_step20.pt (a checkpoint the script
saved with wandb.save), one chunk whose data was damaged after it was
written (its CRC no longer matches), and a record of ~80 kB split over three
blocks. The offline run ends in a truncated record (a live run), has a record
that starts with exactly 7 bytes left in a block (an empty FIRST chunk) and
one after a zero-padded block tail. A third run's .wandb has store version 1
(unknown): its history is not readable.

OUT/live_rest.bin holds the bytes the offline run appends next (the rest of
its truncated record and one more). RESUMED (when given) gets a run resumed twice: write_resumed.
LEGACY (when given) gets run folders as wandb before 0.10 wrote them: write_legacy.
OUT/expected.json records what was written: per run folder its display name,
the history rows logged that a reader must find (the damaged and the
truncated ones left out), the chunk types written, the config and summary,
the byte where the truncated record starts.
"""
import json
import math
import os
import shutil
import struct
import sys
import zlib

import torch
import yaml

BLOCK = 32768
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


# ------------------------------------------------------------- protobuf


def varint(n):
    n &= (1 << 64) - 1  # int64 as protobuf writes negatives: ten bytes
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(number, value):
    # proto3: a singular scalar at its default (0) is not written at all.
    return varint(number << 3 | 0) + varint(value) if value else b""


def field_bytes(number, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return varint(number << 3 | 2) + varint(len(data)) + data


def history_item(key, value_json, nested=False):
    if nested:
        body = b"".join(field_bytes(2, k) for k in key.split("."))
    else:
        body = field_bytes(1, key)
    return body + field_bytes(16, value_json)


def record(num, field, payload):
    return field_varint(1, num) + field_bytes(field, payload)


def run_record(run_id, display_name, project, start):
    seconds = int(start)
    nanos = int(round((start - seconds) * 1e9))
    body = field_bytes(1, run_id) + field_bytes(2, "team") + field_bytes(3, project)
    if display_name:
        body += field_bytes(8, display_name)
    body += field_bytes(17, field_varint(1, seconds) + field_varint(2, nanos))
    return body


def items_message(field, pairs):
    """ConfigRecord / SummaryRecord: update = 1 of {key = 1, value_json = 16}."""
    return b"".join(field_bytes(field, field_bytes(1, k) + field_bytes(16, v)) for k, v in pairs)


# ------------------------------------------------------------ datastore


class DataStore:
    """datastore.py's writer: _write_header, _write_record, _write_data."""

    def __init__(self, path, version=0):
        self.f = open(path, "wb")
        self.index = 0
        self.chunks = {FULL: 0, FIRST: 0, MIDDLE: 0, LAST: 0}
        self.empty_first = 0
        self.padded = 0
        self.damage_at = None
        header = struct.pack("<4sHB", b":W&B", 0xBEE1, version)
        self.f.write(header)
        self.index += len(header)

    def space_left(self):
        return BLOCK - self.index % BLOCK

    def _write_record(self, s, dtype, damage=False):
        assert len(s) + HEADER <= self.space_left()
        checksum = zlib.crc32(s, zlib.crc32(bytes([dtype]))) & 0xFFFFFFFF
        if damage:
            # A bit flipped on disk after the chunk was written.
            self.damage_at = self.index
            s = bytes([s[0] ^ 0x40]) + s[1:]
        self.f.write(struct.pack("<IHB", checksum, len(s), dtype))
        self.f.write(s)
        self.index += HEADER + len(s)
        self.chunks[dtype] += 1
        if dtype == FIRST and not s:
            self.empty_first += 1

    def write(self, s, damage=False):
        """Returns the byte where the record's first chunk begins."""
        space = self.space_left()
        if space < HEADER:
            self.f.write(b"\x00" * space)
            self.index += space
            self.padded += 1
            space = BLOCK
        start = self.index
        if len(s) + HEADER <= space:
            self._write_record(s, FULL, damage)
        else:
            room = space - HEADER
            self._write_record(s[:room], FIRST)
            used, left = room, len(s) - room
            while left > BLOCK - HEADER:
                self._write_record(s[used:used + BLOCK - HEADER], MIDDLE)
                used += BLOCK - HEADER
                left -= BLOCK - HEADER
            self._write_record(s[used:], LAST)
        return start

    def close(self):
        self.f.close()


# ------------------------------------------------------------- runs


def dumps(v):
    return json.dumps(v)  # Python's json: NaN, Infinity, -Infinity bare


def flatten(prefix, v, out):
    """What a history row's numbers are, as wandb-core's runhistory names them."""
    if isinstance(v, dict):
        if "_type" in v:
            return
        for k, x in v.items():
            flatten(prefix + "." + k if prefix else k, x, out)
    elif isinstance(v, bool) or isinstance(v, str) or v is None:
        return
    elif isinstance(v, (int, float)):
        out[prefix] = v


def expected_row(row):
    flat = {}
    for k, v in row.items():
        if k in ("_step", "_timestamp", "_runtime"):
            continue
        flatten(k, v, flat)
    return {"step": row["_step"], "wall_time": row["_timestamp"], "values": flat}


class Run:
    def __init__(self, folder, run_id, version=0):
        self.folder = folder
        self.files = os.path.join(folder, "files")
        os.makedirs(self.files, exist_ok=True)
        os.makedirs(os.path.join(folder, "logs"), exist_ok=True)
        os.makedirs(os.path.join(folder, "tmp", "code"), exist_ok=True)
        self.store = DataStore(os.path.join(folder, "run-%s.wandb" % run_id), version)
        self.num = 0
        self.rows = []  # what a reader must find

    def record(self, field, payload, damage=False):
        self.num += 1
        return self.store.write(record(self.num, field, payload), damage)

    def history(self, row, core_style=False, damage=False, keep=True):
        items = b""
        user = {k: v for k, v in row.items() if not k.startswith("_")}
        if core_style:
            # wandb-core: the row flattened, each key split at '.'.
            flat = {}
            for k, v in user.items():
                if isinstance(v, dict) and "_type" not in v:
                    for fk, fv in flat_dict(k, v).items():
                        flat[fk] = fv
                else:
                    flat[k] = v
            for k, v in flat.items():
                items += field_bytes(1, history_item(k, dumps(v), nested=True))
            for k in ("_timestamp", "_runtime", "_step"):
                items += field_bytes(1, history_item(k, dumps(row[k]), nested=True))
        else:
            for k, v in user.items():
                items += field_bytes(1, history_item(k, dumps(v)))
            for k in ("_timestamp", "_runtime", "_step"):
                items += field_bytes(1, history_item(k, dumps(row[k])))
            items += field_bytes(2, field_varint(1, row["_step"]))
        at = self.record(2, items, damage)
        if keep:
            self.rows.append(expected_row(row))
        return at


def flat_dict(prefix, d):
    out = {}
    for k, v in d.items():
        key = prefix + "." + k
        if isinstance(v, dict):
            out.update(flat_dict(key, v))
        else:
            out[key] = v
    return out


def write_config_python(path, config):
    """config_util.save_config_file_from_dict with desc/value entries."""
    d = {k: {"desc": None, "value": v} for k, v in config.items()}
    s = b"wandb_version: 1"
    s += b"\n\n" + yaml.dump(d, Dumper=yaml.SafeDumper, default_flow_style=False,
                             allow_unicode=True, encoding="utf-8", sort_keys=False)
    with open(path, "w") as f:
        f.write(s.decode("utf-8"))


def yaml_v3(value, indent):
    """gopkg.in/yaml.v3 Marshal's block style: 4 spaces, sequences indented
    under their key, map keys sorted, a string that reads as a number quoted."""
    pad = " " * indent
    lines = []
    if isinstance(value, dict):
        for k in sorted(value):
            v = value[k]
            key = '"%s"' % k if k.isdigit() else k
            if isinstance(v, (dict, list)) and v:
                lines.append("%s%s:" % (pad, key))
                lines.extend(yaml_v3(v, indent + 4))
            elif isinstance(v, str) and "\n" in v:
                # A literal block: |- without a final newline, | with one.
                lines.append("%s%s: %s" % (pad, key, "|" if v.endswith("\n") else "|-"))
                lines.extend(pad + "    " + t for t in v.rstrip("\n").split("\n"))
            else:
                lines.append("%s%s: %s" % (pad, key, scalar_v3(v)))
    else:
        for v in value:
            if isinstance(v, (dict, list)) and v:
                sub = yaml_v3(v, indent + 2)
                lines.append("%s- %s" % (pad, sub[0].lstrip()))
                lines.extend(sub[1:])
            else:
                lines.append("%s- %s" % (pad, scalar_v3(v)))
    return lines


def scalar_v3(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # strconv.FormatFloat(v, 'g', -1, 64): 0.001, 1e-08, as repr
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    if v == "" or v.replace(".", "", 1).isdigit() or v in ("true", "false", "null"):
        return '"%s"' % v
    return v


def write_config_core(path, config):
    """wandb-core's runconfig.Serialize(FormatYaml): {k: {value: v}}."""
    d = {k: {"value": v} for k, v in config.items()}
    with open(path, "w") as f:
        f.write("\n".join(yaml_v3(d, 0)) + "\n")


def python_config_value(config):
    return {k: v for k, v in config.items() if k != "_wandb"}


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)  # the links and the .wandb files: start afresh
    wandb_dir = os.path.join(out, "proj", "wandb")
    os.makedirs(wandb_dir, exist_ok=True)
    expected = {"runs": {}}
    start = 1704110400.25  # 2024-01-01 12:00:00.25 UTC

    # ---- online run, Python SDK ------------------------------------------
    name = "run-20240101_120000-abc123"
    run = Run(os.path.join(wandb_dir, name), "abc123")
    run.record(21, b"")  # HeaderRecord
    run.record(17, run_record("abc123", "baseline-lr3e-4", "gpt-small", start))
    config = {
        "_wandb": {"cli_version": "0.16.6", "python_version": "3.11.4", "start_time": int(start),
                   "t": {"1": [1, 55], "2": [1, 55], "3": [16, 23]}, "framework": "torch"},
        "lr": 0.0003,
        "batch_size": 32,
        "weight_decay": 1e-05,
        "optimizer": {"name": "adamw", "betas": [0.9, 0.95], "fused": True},
        "model": "gpt2-small",
        "notes": "a long note about this run that PyYAML will fold over more than one line "
                 "because it is longer than eighty characters",
        "dropout": None,
        "prompt": "Answer briefly.\nQuestion: {q}\n",
        "quoted": "it's a \"test\"\twith a tab",
    }
    run.record(5, items_message(1, [(k, dumps(v)) for k, v in config.items()]))
    run.record(11, b"")  # TelemetryRecord
    damaged_step = None
    for i in range(40):
        step = i * 5
        row = {"loss": 3.0 * math.exp(-step / 80.0) + 0.01 * (i % 3), "lr": 3e-4 * min(1, (i + 1) / 10),
               "train/tokens_per_sec": 1000 + i}
        if i == 7:
            row["loss"] = float("nan")
        if i == 8:
            row["grad_norm"] = float("inf")
        if i == 9:
            row["grad_norm"] = float("-inf")
        if i % 10 == 4:
            row["eval"] = {"loss": 2.5 - i * 0.01, "acc": 0.3 + i * 0.005, "ppl": {"wiki": 12.5 + i}}
            row["samples"] = {"_type": "table-file", "path": "media/table/x.json", "ncols": 2, "nrows": 4}
            row["phase"] = "eval"
            row["is_best"] = True
        row["_timestamp"] = start + 1.5 * i
        row["_runtime"] = 1.5 * i
        row["_step"] = step
        damage = i == 13
        if damage:
            damaged_step = step
        run.history(row, damage=damage, keep=not damage)
        if i == 20:
            # One row of ~80 kB (per-layer gradient norms): over three blocks.
            big = {"layers.%04d.grad_norm" % k: 0.001 * k for k in range(2200)}
            big.update({"_timestamp": start + 1.5 * i + 0.5, "_runtime": 1.5 * i + 0.5, "_step": step + 1})
            run.history(big)
        run.record(7, field_bytes(3, field_bytes(1, "gpu.0.temp") + field_bytes(16, "40")))
    summary = {"loss": run.rows[-1]["values"]["loss"], "lr": 3e-4, "best_eval_loss": 2.16,
               "eval": {"acc": 0.47, "loss": 2.16}, "_step": 195, "_runtime": 58.5,
               "_timestamp": start + 58.5, "_wandb": {"runtime": 59},
               "samples": {"_type": "table-file", "path": "media/table/x.json"}, "diverged": False,
               "grad_norm": float("-inf")}
    run.record(3, items_message(1, [(k, dumps(v)) for k, v in summary.items()]))
    run.record(18, field_varint(1, 0) + field_varint(2, 59))  # RunExitRecord
    run.record(20, b"")  # FinalRecord
    run.record(22, b"")  # FooterRecord
    run.store.close()
    write_config_python(os.path.join(run.files, "config.yaml"), config)
    with open(os.path.join(run.files, "wandb-summary.json"), "w") as f:
        f.write(json.dumps(summary))
    with open(os.path.join(run.files, "output.log"), "w") as f:
        f.write("Loading data...\n")
        for i in range(0, 40, 10):
            f.write("step=%d loss=%.4f mfu=%.2f%%\n" % (i * 5, 3.0 - i * 0.01, 30.0 + i))
        f.write("\r 50%|#####     | 5/10 [00:01<00:01]\r100%|##########| 10/10\n")
    with open(os.path.join(run.files, "wandb-metadata.json"), "w") as f:
        json.dump({"os": "Linux", "python": "3.11.4", "program": "train.py", "host": "node1"}, f)
    with open(os.path.join(run.files, "requirements.txt"), "w") as f:
        f.write("torch==2.1.0\n")
    with open(os.path.join(run.folder, "logs", "debug.log"), "w") as f:
        f.write("2024-01-01 12:00:00,250 INFO    MainThread:1 [wandb_init.py:init():600] "
                "step=3 sdk_metric=99.0 calling init triggers\n")
    torch.save({"model": {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}, "step": 20,
                "loss": 1.25}, os.path.join(run.files, "checkpoint_step20.pt"))
    expected["runs"][name] = {
        "name": "baseline-lr3e-4", "run_id": "abc123", "project": "gpt-small", "start_time": start,
        "rows": run.rows, "chunks": run.store.chunks, "damaged_at": run.store.damage_at,
        "damaged_step": damaged_step, "end": run.store.index,
        "config": python_config_value(config), "summary": summary_numbers(summary),
    }

    # ---- offline run, wandb-core, still running -----------------------------
    name = "offline-run-20240102_090000-def456"
    start2 = 1704186000.5
    run = Run(os.path.join(wandb_dir, name), "def456")
    run.record(21, b"")
    run.record(17, run_record("def456", "", "gpt-small", start2))
    config2 = {"_wandb": {"cli_version": "0.19.1", "t": {"1": [1, 55]}}, "lr": 0.001,
               "batch_size": 64, "schedule": {"warmup": 100, "kind": "cosine"},
               "layers": [{"d": 64}, {"d": 128}], "tag": "123", "eps": 1e-08,
               "template": "System: be brief.\nUser: {q}", "footer": "end\n"}
    run.record(5, items_message(1, [(k, dumps(v)) for k, v in config2.items()]))
    for i in range(60):
        if i == 25:
            # A record sized so that exactly 7 bytes are left in the block:
            # the next record begins with an empty FIRST chunk.
            fill = run.store.space_left() - HEADER - HEADER
            if fill < 40:
                fill += BLOCK
            pad = record(run.num + 1, 4, field_bytes(3, "x" * 8))
            extra = fill - len(pad)
            line = "x" * (8 + extra)
            body = record(run.num + 1, 4, field_bytes(3, line))
            while len(body) > fill:
                line = line[:-1]
                body = record(run.num + 1, 4, field_bytes(3, line))
            assert len(body) == fill, (len(body), fill)
            run.record(4, field_bytes(3, line))
            assert run.store.space_left() == HEADER
        if i == 40:
            # Fewer than 7 bytes left: the writer pads the block with zeros.
            fill = run.store.space_left() - HEADER - 3
            if fill < 40:
                fill += BLOCK
            line = "y" * fill
            body = record(run.num + 1, 4, field_bytes(3, line))
            while len(body) > fill:
                line = line[:-1]
                body = record(run.num + 1, 4, field_bytes(3, line))
            assert len(body) == fill
            run.record(4, field_bytes(3, line))
            assert run.store.space_left() == 3
        step = 10 * i
        row = {"train/loss": 2.0 / (1 + i), "val": {"loss": 2.2 / (1 + i)}, "lr": 1e-3,
               "_timestamp": start2 + 2.0 * i, "_runtime": 2.0 * i, "_step": step}
        run.history(row, core_style=True)
    # The rows being written when the files were copied: the file ends in
    # the middle of the first; the rest (and the row after it) are kept in
    # OUT/live_rest.bin, what the run appends next.
    tail_start = run.store.index
    live = []
    for step in (600, 610):
        row = {"train/loss": 0.01 + step * 1e-5, "_timestamp": start2 + step / 5.0,
               "_runtime": step / 5.0, "_step": step}
        run.history(row, core_style=True, keep=False)
        live.append(expected_row(row))
    run.store.close()
    store_path = run.store.f.name
    with open(store_path, "rb") as f:
        whole = f.read()
    first_len = struct.unpack("<H", whole[tail_start + 4:tail_start + 6])[0]
    cut = tail_start + HEADER + first_len // 2
    with open(store_path, "wb") as f:
        f.write(whole[:cut])
    with open(os.path.join(out, "live_rest.bin"), "wb") as f:
        f.write(whole[cut:])
    write_config_core(os.path.join(run.files, "config.yaml"), config2)
    summary2 = {"train/loss": 2.0 / 60, "val": {"loss": 2.2 / 60}, "_step": 590,
                "_wandb": {"runtime": 118}}
    with open(os.path.join(run.files, "wandb-summary.json"), "w") as f:
        f.write(json.dumps(summary2))
    with open(os.path.join(run.files, "output.log"), "w") as f:
        f.write("step=0 tokens_per_sec=5000\nstep=100 tokens_per_sec=5100\n")
    expected["runs"][name] = {
        "name": name, "run_id": "def456", "rows": run.rows, "chunks": run.store.chunks,
        "empty_first": run.store.empty_first, "padded": run.store.padded,
        "end": tail_start, "cut": cut, "live_rows": live,
        "config": python_config_value(config2), "summary": summary_numbers(summary2),
    }

    # ---- a store version this reader does not know --------------------------
    name = "run-20240103_080000-ghi789"
    run = Run(os.path.join(wandb_dir, name), "ghi789", version=1)
    run.record(17, run_record("ghi789", "future-format", "gpt-small", start))
    run.history({"loss": 1.0, "_timestamp": start, "_runtime": 0.0, "_step": 0}, keep=False)
    run.store.close()
    write_config_python(os.path.join(run.files, "config.yaml"), {"lr": 0.002})
    with open(os.path.join(run.files, "wandb-summary.json"), "w") as f:
        f.write(json.dumps({"loss": 1.0}))
    expected["runs"][name] = {"name": name, "rows": [], "config": {"lr": 0.002},
                              "summary": {"loss": 1.0}}

    # wandb/latest-run and wandb/debug.log: links to the newest run's.
    os.symlink("offline-run-20240102_090000-def456", os.path.join(wandb_dir, "latest-run"))
    os.symlink(os.path.join("run-20240101_120000-abc123", "logs", "debug.log"),
               os.path.join(wandb_dir, "debug.log"))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(strict(expected), f, indent=1, allow_nan=False)
    if len(sys.argv) > 2:
        write_resumed(sys.argv[2], start)
    if len(sys.argv) > 3:
        write_legacy(sys.argv[3])


def write_resumed(out, start):
    """One run resumed twice (wandb.init(id="jkl012", resume="allow") after a
    crash, twice): three folders of one run id in one wandb/ folder, each
    named by its attempt's start time (wandb_settings.py: sync_dir). Steps
    0-45, then 50-95, then (offline, wandb-core) 80-120: the last attempt
    resumed from a checkpoint at step 80, and its history replaces the
    second's from there. W&B shows one run: the newest folder's display
    name, config and summary. OUT/expected.json: {"folders": oldest first,
    "name", "rows": the joined history of `loss` and `lr`, "restarts": the
    steps where a later attempt rewound `loss`, "config", "summary": the newest
    wandb-summary.json's numbers as doubles, keys in byte order}."""
    shutil.rmtree(out, ignore_errors=True)
    wandb_dir = os.path.join(out, "proj", "wandb")
    os.makedirs(wandb_dir)
    attempts = [("run-20240105_100000-jkl012", range(0, 50, 5), False),
                ("run-20240105_110000-jkl012", range(50, 100, 5), False),
                ("offline-run-20240105_120000-jkl012", range(80, 125, 5), True)]
    folders, rows, restarts = [], [], []
    config = summary = None
    for k, (name, steps, core) in enumerate(attempts):
        t0 = start + 4 * 86400 + 3600 * k
        run = Run(os.path.join(wandb_dir, name), "jkl012")
        run.record(21, b"")
        run.record(17, run_record("jkl012", "lr1e-3-resumed", "gpt-small", t0))
        config = {"_wandb": {"cli_version": "0.16.6" if not core else "0.19.1"}, "lr": 0.001,
                  "attempt": k + 1}
        run.record(5, items_message(1, [(key, dumps(v)) for key, v in config.items()]))
        for step in steps:
            # Each attempt's loss differs from the one before at the same step.
            row = {"loss": 3.0 - 0.01 * step + 0.1 * k, "lr": 0.001, "_timestamp": t0 + step,
                   "_runtime": float(step), "_step": step}
            run.history(row, core_style=core)
        run.store.close()
        (write_config_core if core else write_config_python)(
            os.path.join(run.files, "config.yaml"), config)
        summary = {"loss": run.rows[-1]["values"]["loss"], "lr": 0.001, "_step": steps[-1],
                   "_wandb": {"runtime": steps[-1]}}
        with open(os.path.join(run.files, "wandb-summary.json"), "w") as f:
            f.write(json.dumps(summary))
        with open(os.path.join(run.files, "output.log"), "w") as f:
            f.write("wandb: Resuming run lr1e-3-resumed (attempt %d)\n" % (k + 1))
        first = run.rows[0]["step"]
        if rows and first <= rows[-1]["step"]:
            restarts.append(first)
        rows = [r for r in rows if r["step"] < first] + run.rows
        folders.append(os.path.join(wandb_dir, name))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"folders": folders, "name": "lr1e-3-resumed", "rows": rows, "restarts": restarts,
                   "config": python_config_value(config),
                   "summary": {k: float(v) for k, v in sorted(summary_numbers(summary).items())}},
                  f, indent=1, allow_nan=False)


# ------------------------------------------------- wandb before 0.10


def legacy_line(user, step, start, runtime):
    """wandb/history.py History._write (0.8 / 0.9): the row's logged keys,
    then row['_runtime'], row['_timestamp'], row['_step'] set in that order,
    written with util.json_dumps_safer_history (json.dumps: NaN, Infinity
    bare; default separators) and a newline, flushed."""
    row = dict(user)
    row["_runtime"] = runtime
    row["_timestamp"] = start + runtime
    row["_step"] = step
    return row, json.dumps(row) + "\n"


def write_config_legacy(path, config):
    """wandb_config.py Config.__str__ (0.9): "wandb_version: 1\n\n" +
    yaml.dump(as_dict(), Dumper=SafeDumper, default_flow_style=False,
    allow_unicode=True, encoding='utf-8'); as_dict() is {key: {'value': v,
    'desc': None}}, `_wandb` among the keys; PyYAML sorts keys."""
    d = {k: {"value": v, "desc": None} for k, v in config.items()}
    s = b"wandb_version: 1" + b"\n\n" + yaml.dump(d, Dumper=yaml.SafeDumper, default_flow_style=False,
                                                 allow_unicode=True, encoding="utf-8")
    with open(path, "w") as f:
        f.write(s.decode("utf-8"))


def write_metadata_legacy(folder, name, project, started):
    """meta.py Meta.write: json_dumps_safer(data, indent=4) and a newline;
    run_manager.py puts the display name in `name` when the run has one."""
    data = {"root": "/home/user/mnist", "program": "train.py", "jobType": None, "mode": "run",
            "startedAt": started, "host": "node1", "username": "user", "executable": "/usr/bin/python3",
            "os": "Linux-5.4.0-x86_64-with-glibc2.29", "python": "3.7.6", "cpu_count": 8,
            "args": ["--lr", "0.001"], "state": "finished", "heartbeatAt": started}
    if name:
        data["name"] = name
    data["project"] = project
    with open(os.path.join(folder, "wandb-metadata.json"), "w") as f:
        f.write(json.dumps(data, indent=4) + "\n")


def write_legacy(out):
    """Run folders as wandb 0.8 / 0.9 left them (wandb_run.py run_dir_path:
    wandb/{run|dryrun}-<UTC %Y%m%d_%H%M%S>-<id>/, every file in the folder
    itself, no .wandb file, no files/):

      * run-20200301_101500-old111: wandb-history.jsonl (legacy_line) with
        nested dicts, an image-file media dict, a string, a boolean, NaN and
        Infinity, a History.stream("batch") row (`_stream`, its own steps),
        a row cut short by a crash with the next run's row appended to the
        same line (one line that is no JSON: both rows lost), and a last row
        cut in half (no newline: the rest in OUT/legacy_rest.txt);
        wandb-summary.json, config.yaml, wandb-metadata.json (name
        "legacy-baseline"), wandb-events.jsonl (system metrics), output.log,
        checkpoint_step20.pt (saved into wandb.run.dir); wandb/debug.log.
      * dryrun-20200302_090000-old222: an offline (dryrun) run, no name.
      * run-20200305_100000-res444 and run-20200305_120000-res444: one run
        resumed; the second folder's history starts with the tail of the
        first's, as run_manager.py _setup_resume writes the server's
        historyTail, and History.load continues at the next step.
      * run-20210104_080000-both33: a .wandb file and files/wandb-history.jsonl
        (a copy with another key and more rows): the .wandb file is the history.

    OUT/expected.json: per folder its name, the rows a reader must find,
    config and summary (numbers as doubles, keys in byte order, as the CLI
    prints them); the baseline's bad line (line number, byte), where
    its cut last line starts, the damaged count."""
    shutil.rmtree(out, ignore_errors=True)
    wandb_dir = os.path.join(out, "proj", "wandb")
    os.makedirs(wandb_dir)
    expected = {"runs": {}}
    start = 1583057700.5  # 2020-03-01 10:15:00.5 UTC

    # ---- online run, wandb 0.9.7 ---------------------------------------------
    name = "run-20200301_101500-old111"
    folder = os.path.join(wandb_dir, name)
    os.makedirs(folder)
    rows, lines = [], []
    bad_line = bad_byte = None
    size = 0
    for i in range(30):
        user = {"loss": 2.5 * math.exp(-i / 10.0), "lr": 0.001, "acc": 0.1 + 0.02 * i}
        if i == 6:
            user["loss"] = float("nan")
        if i == 7:
            user["grad_norm"] = float("inf")
        if i % 5 == 0:
            user["eval"] = {"loss": 2.6 - 0.05 * i, "acc": 0.2 + 0.01 * i, "ppl": {"wiki": 30.0 - i}}
            user["examples"] = {"_type": "image-file", "path": "media/images/examples_%d_9f86d0.png" % i,
                                "sha256": "9f86d081884c7d65", "size": 2048, "width": 28, "height": 28,
                                "format": "png"}
            user["phase"] = "eval"
            user["is_best"] = i == 10
        row, line = legacy_line(user, i, start, 2.0 * i)
        if i == 12:
            # The row of step 12 cut short by a crash; the restarted script
            # (same folder, WANDB_RUN_DIR) appended its next row to the same
            # line: one line that is no JSON, both rows lost.
            bad_line, bad_byte = len(lines) + 1, size
            row13, line13 = legacy_line({"loss": 0.7, "lr": 0.001, "acc": 0.36}, 13, start, 26.0)
            line = line[:len(line) // 2] + line13
            lines.append(line)
            size += len(line.encode())
            continue
        if i == 13:
            continue  # lost in the line above
        rows.append(expected_row(row))
        lines.append(line)
        size += len(line.encode())
        if i == 3:
            # History.stream("batch").add(...): a row of another stream, with
            # its own step counter, in the same file.
            srow, sline = legacy_line({"gradients": 0.5}, 0, start, 6.5)
            srow["_stream"] = "batch"
            sline = json.dumps(srow) + "\n"
            lines.append(sline)
            size += len(sline.encode())
    # The last row, being written when the folder was copied: half of it.
    last, last_line = legacy_line({"loss": 0.12, "lr": 0.001, "acc": 0.7}, 30, start, 60.0)
    cut_at = size
    half = len(last_line) // 2
    with open(os.path.join(folder, "wandb-history.jsonl"), "w") as f:
        f.write("".join(lines) + last_line[:half])
    with open(os.path.join(out, "legacy_rest.txt"), "w") as f:
        f.write(last_line[half:])
    config = {"_wandb": {"cli_version": "0.9.7", "python_version": "3.7.6", "is_jupyter_run": False,
                         "is_kaggle_kernel": False, "framework": "torch"},
              "lr": 0.001, "batch_size": 64, "epochs": 3, "optimizer": {"name": "sgd", "momentum": 0.9},
              "arch": "lenet"}
    write_config_legacy(os.path.join(folder, "config.yaml"), config)
    # summary.py: the last value of every key history added (overwrite=False
    # after each row), written as JSON.
    summary = {"loss": rows[-1]["values"]["loss"], "lr": 0.001, "acc": rows[-1]["values"]["acc"],
               "eval": {"loss": 1.35, "acc": 0.45, "ppl": {"wiki": 5.0}}, "phase": "eval",
               "examples": {"_type": "image-file", "path": "media/images/examples_25_9f86d0.png"},
               "grad_norm": float("inf"), "_runtime": 58.0, "_timestamp": start + 58.0, "_step": 29}
    with open(os.path.join(folder, "wandb-summary.json"), "w") as f:
        f.write(json.dumps(summary))
    write_metadata_legacy(folder, "legacy-baseline", "mnist-old", "2020-03-01T10:15:00.500000")
    with open(os.path.join(folder, "wandb-events.jsonl"), "w") as f:
        for k in range(3):
            f.write(json.dumps({"system.cpu": 20.0 + k, "system.memory": 41.5, "system.gpu.0.gpu": 90 + k,
                                "_wandb": True, "_timestamp": start + 30 * k, "_runtime": 30 * k}) + "\n")
    with open(os.path.join(folder, "output.log"), "w") as f:
        f.write("Downloading MNIST...\n")
        for k in range(3):
            f.write("epoch %d step=%d mfu=%.2f%%\n" % (k, 10 * k, 30.0 + k))
    torch.save({"model": {"w": torch.ones(2, 2)}, "step": 20}, os.path.join(folder, "checkpoint_step20.pt"))
    with open(os.path.join(wandb_dir, "debug.log"), "w") as f:
        f.write("2020-03-01 10:15:00,500 INFO    MainThread:1 [old111:wandb_run.py:init():100] "
                "step=3 sdk_metric=99.0\n")
    expected["runs"][name] = {
        "name": "legacy-baseline", "rows": rows, "config": python_config_value(config),
        "summary": {k: float(v) for k, v in sorted(summary_numbers(summary).items())},
        "bad_line": bad_line, "bad_byte": bad_byte,
        "cut": cut_at, "damaged": 2, "rest_row": expected_row(last),
    }

    # ---- dryrun (offline), no display name ----------------------------------
    name = "dryrun-20200302_090000-old222"
    folder = os.path.join(wandb_dir, name)
    os.makedirs(folder)
    rows = []
    with open(os.path.join(folder, "wandb-history.jsonl"), "w") as f:
        for i in range(12):
            row, line = legacy_line({"train": {"loss": 1.0 / (1 + i)}, "epoch": i // 4}, i, start + 86400,
                                    1.5 * i)
            rows.append(expected_row(row))
            f.write(line)
    write_config_legacy(os.path.join(folder, "config.yaml"), {"_wandb": {"cli_version": "0.8.36"},
                                                              "lr": 0.01})
    with open(os.path.join(folder, "wandb-summary.json"), "w") as f:
        f.write(json.dumps({"train": {"loss": 1.0 / 12}, "epoch": 2, "_step": 11}))
    write_metadata_legacy(folder, None, "mnist-old", "2020-03-02T09:00:00")
    expected["runs"][name] = {"name": name, "rows": rows, "config": {"lr": 0.01},
                              "summary": {"_step": 11.0, "epoch": 2.0, "train.loss": 1.0 / 12}}

    # ---- one run, resumed -----------------------------------------------------
    first, second = "run-20200305_100000-res444", "run-20200305_120000-res444"
    t0 = start + 4 * 86400
    joined = []
    parsed = []
    for name, steps in ((first, range(0, 20)), (second, range(20, 35))):
        folder = os.path.join(wandb_dir, name)
        os.makedirs(folder)
        with open(os.path.join(folder, "wandb-history.jsonl"), "w") as f:
            if parsed:
                # _setup_resume: the tail of the history the server holds.
                for row in parsed[-3:]:
                    f.write(json.dumps(row) + "\n")
            for step in steps:
                row, line = legacy_line({"loss": 3.0 - 0.05 * step, "lr": 0.01}, step, t0, 2.0 * step)
                parsed.append(row)
                joined.append(expected_row(row))
                f.write(line)
        write_config_legacy(os.path.join(folder, "config.yaml"),
                            {"_wandb": {"cli_version": "0.9.7"}, "lr": 0.01, "resumed": name == second})
        with open(os.path.join(folder, "wandb-summary.json"), "w") as f:
            f.write(json.dumps({"loss": parsed[-1]["loss"], "lr": 0.01, "_step": parsed[-1]["_step"]}))
        write_metadata_legacy(folder, "resumed-legacy", "mnist-old", "2020-03-05T10:00:00")
    expected["runs"]["resumed"] = {
        "name": "resumed-legacy",
        "folders": [os.path.join(wandb_dir, first), os.path.join(wandb_dir, second)],
        "rows": joined, "config": {"lr": 0.01, "resumed": True},
        "summary": {"_step": 34.0, "loss": parsed[-1]["loss"], "lr": 0.01}}

    # ---- a .wandb file and a wandb-history.jsonl in one folder ---------------
    name = "run-20210104_080000-both33"
    run = Run(os.path.join(wandb_dir, name), "both33")
    t1 = start + 300 * 86400
    run.record(21, b"")
    run.record(17, run_record("both33", "store-and-jsonl", "mnist-old", t1))
    with open(os.path.join(run.files, "wandb-history.jsonl"), "w") as f:
        for step in range(15):
            user = {"loss": 1.0 - 0.01 * step}
            if step < 10:
                row = dict(user, _timestamp=t1 + step, _runtime=float(step), _step=step)
                run.history(row)
            f.write(legacy_line(dict(user, only_in_jsonl=step), step, t1, float(step))[1])
    run.store.close()
    expected["runs"][name] = {"name": "store-and-jsonl", "rows": run.rows}

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(strict(expected), f, indent=1, allow_nan=False)


def strict(v):
    """expected.json in strict JSON: NaN and the infinities as the strings
    Python's json writes bare."""
    if isinstance(v, dict):
        return {k: strict(x) for k, x in v.items()}
    if isinstance(v, list):
        return [strict(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return json.dumps(v)
    return v


def summary_numbers(summary):
    out = {}
    for k, v in summary.items():
        if k == "_wandb":
            continue
        flatten(k, v, out)
    return out


if __name__ == "__main__":
    main()
