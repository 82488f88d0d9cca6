#!/usr/bin/python3
"""The scalars of TensorBoard event files, read independently of CkptScope.

    python3 tfevents_reader.py ROOT

Prints JSON: {"runs": {RUN: {TAG: {"points": [[step, value|null, wall_time,
null], ...], "restarts": [step, ...]}}}, "damage": {FILE: {"length": [byte,
...], "data": [...], "partial": [...]}}} where RUN is a folder under ROOT
that holds event files (its path relative to ROOT).

Written from the format's documentation, not from the C++ reader:
  * TFRecord (TensorBoard record_writer.py): u64 LE length, u32 masked
    CRC-32C of those 8 bytes, the data, u32 masked CRC-32C of the data.
    A record whose data CRC fails is dropped. A header whose CRC fails means
    the length is unknown: the next offset where 12 bytes form a header that
    checks out starts the next record. Bytes at the end that are not a whole
    record are left for later.
  * Protobuf wire format, decoded generically (field -> list of values).
    Event (event.proto): wall_time 1, step 2, summary 5, session_log 7
    (status 1, START = 1). Summary (summary.proto): value 1; Value: tag 1,
    simple_value 2, node_name 7, tensor 8, metadata 9 (plugin_data 1 ->
    plugin_name 1). TensorProto (tensor.proto): dtype 1, tensor_shape 2
    (dim 2), tensor_content 4, float_val 5, double_val 6, int_val 7,
    int64_val 10, bool_val 11, half_val 13. DataType (types.proto).
  * TensorBoard's run rules: a folder is a run; its files in order of the
    writer's start second in their names, then name; a tag's metadata is
    taken from its first value that has some, and a tensor is a scalar when
    it is rank 0, numeric, and its tag's plugin is unnamed or "scalars"; a
    value without tag uses its node_name. A SessionLog.START at step S drops
    every tag's points with step >= S.
  * CkptScope's series rule for one tag (the documented restart rule of
    every metric source): a later step is appended, the same step replaces
    the last point, an earlier step drops the points from that step on and
    is noted as a restart. A START that dropped points of a tag is noted in
    that tag's restarts.
"""
import json
import math
import os
import re
import struct
import sys

POLY = 0x82F63B78


def _make_table():
    table = []
    for n in range(256):
        for _ in range(8):
            n = (n >> 1) ^ POLY if n & 1 else n >> 1
        table.append(n)
    return table


TABLE = _make_table()


def masked_crc(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return ((crc >> 15 | crc << 17) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob, damage):
    """(offset, data) of each whole record with good checksums."""
    pos = 0
    while len(blob) - pos >= 12:
        (length,) = struct.unpack_from("<Q", blob, pos)
        (hcrc,) = struct.unpack_from("<I", blob, pos + 8)
        if masked_crc(blob[pos:pos + 8]) != hcrc:
            damage.setdefault("length", []).append(pos)
            pos += 1
            while len(blob) - pos >= 12 and \
                    masked_crc(blob[pos:pos + 8]) != struct.unpack_from("<I", blob, pos + 8)[0]:
                pos += 1
            continue
        if len(blob) - pos < 16 + length:
            damage.setdefault("partial", []).append(pos)
            return
        data = blob[pos + 12:pos + 12 + length]
        (dcrc,) = struct.unpack_from("<I", blob, pos + 12 + length)
        if masked_crc(data) != dcrc:
            damage.setdefault("data", []).append(pos)
        else:
            yield pos, data
        pos += 16 + length


def read_varint(b, i):
    shift = result = 0
    while True:
        byte = b[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, i


def message(b):
    """field number -> list of (wire type, raw value)."""
    fields = {}
    i = 0
    while i < len(b):
        k, i = read_varint(b, i)
        field, wire = k >> 3, k & 7
        if wire == 0:
            v, i = read_varint(b, i)
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        elif wire == 2:
            n, i = read_varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wire)
        fields.setdefault(field, []).append((wire, v))
    return fields


def last(fields, number, default=None):
    return fields[number][-1][1] if number in fields else default


def signed(n, bits):
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >> (bits - 1) else n


def varints(entries):
    out = []
    for wire, raw in entries:
        if wire == 0:
            out.append(raw)
        else:
            i = 0
            while i < len(raw):
                v, i = read_varint(raw, i)
                out.append(v)
    return out


def fixed(entries, fmt):
    size = struct.calcsize(fmt)
    out = []
    for wire, raw in entries:
        out.extend(struct.unpack("<%d%s" % (len(raw) // size, fmt), raw))
    return out


# DataType -> (struct format of one element, the typed field that carries it)
DTYPES = {1: ("f", 5), 2: ("d", 6), 3: ("i", 7), 4: ("B", 7), 5: ("h", 7), 6: ("b", 7),
          9: ("q", 10), 10: ("?", 11), 17: ("H", 7), 19: ("e", 13), 22: ("I", 16), 23: ("Q", 17)}


def tensor_scalar(t):
    dtype = last(t, 1, 0)
    shape = message(last(t, 2, b""))
    if dtype not in DTYPES or 2 in shape:
        return None
    fmt, typed = DTYPES[dtype]
    content = last(t, 4, b"")
    if content:
        return float(struct.unpack("<" + fmt, content)[0])
    entries = t.get(typed, [])
    if not entries:
        return 0.0
    if fmt == "f":
        return float(fixed(entries, "f")[0])
    if fmt == "d":
        return fixed(entries, "d")[0]
    v = varints(entries)[0]
    if fmt == "e":
        return float(struct.unpack("<e", struct.pack("<H", v & 0xFFFF))[0])
    if fmt in "ihb":
        return float(signed(v, 32))
    if fmt == "q":
        return float(signed(v, 64))
    if fmt == "?":
        return 1.0 if v else 0.0
    return float(v)


class Series:
    def __init__(self):
        self.points = []
        self.restarts = []

    def add(self, step, value, wall):
        if self.points and step <= self.points[-1][0]:
            if step == self.points[-1][0]:
                self.points[-1] = [step, value, wall, None]
                return
            self.points = [p for p in self.points if p[0] < step]
            self.restarts.append(step)
        self.points.append([step, value, wall, None])

    def drop_from(self, step):
        kept = [p for p in self.points if p[0] < step]
        if len(kept) != len(self.points):
            self.points = kept
            self.restarts.append(step)


def file_order(name):
    m = re.match(r"events\.out\.tfevents\.(\d+)", name)
    return (int(m.group(1)) if m else 0, name)


def read_run(folder, names, damage_out):
    series, plugin = {}, {}
    for name in sorted(names, key=file_order):
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            blob = f.read()
        damage = {}
        for _, data in records(blob, damage):
            ev = message(data)
            wall = struct.unpack("<d", last(ev, 1))[0] if 1 in ev else None
            step = signed(last(ev, 2, 0), 64)
            log = message(last(ev, 7, b"")) if 7 in ev else None
            if log is not None and last(log, 1, 0) == 1:
                for s in series.values():
                    s.drop_from(step)
            if 5 not in ev:
                continue
            for _, raw in message(last(ev, 5)).get(1, []):
                v = message(raw)
                tag = last(v, 1, b"").decode() or last(v, 7, b"").decode()
                if not tag:
                    continue
                if 9 in v and tag not in plugin:
                    pd = message(last(message(last(v, 9)), 1, b""))
                    plugin[tag] = last(pd, 1, b"").decode()
                if 2 in v:
                    x = float(struct.unpack("<f", last(v, 2))[0])
                elif 8 in v and plugin.get(tag, "") in ("", "scalars"):
                    x = tensor_scalar(message(last(v, 8)))
                    if x is None:
                        continue
                else:
                    continue
                series.setdefault(tag, Series()).add(
                    step, None if math.isnan(x) or math.isinf(x) else x, wall)
        if damage:
            damage_out[path] = damage
    return {tag: {"points": s.points, "restarts": s.restarts}
            for tag, s in sorted(series.items()) if s.points}


def main(argv):
    root = argv[1]
    runs, damage = {}, {}
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        names = [n for n in files if n.startswith("events.out.tfevents.")]
        if names:
            runs[os.path.relpath(folder, root)] = read_run(folder, names, damage)
    json.dump({"runs": runs, "damage": damage}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
