#!/usr/bin/python3
"""TensorBoard event files as TensorBoard's writers leave them, byte for byte.

    python3 make_tfevents_fixtures.py OUTDIR

Every byte is written here by hand from the format's documentation (no
tensorboard, no protobuf package): TFRecord framing from TensorBoard's
record_writer.py (u64 LE length, masked CRC-32C of the length, the data,
masked CRC-32C of the data; mask = rotate right 15 + 0xa282ead8) around
Event protobufs whose field numbers are those of tensorboard/compat/proto/
event.proto, summary.proto, tensor.proto, tensor_shape.proto and types.proto.

OUTDIR/tb/
  job/events.out.tfevents.1700000000.node1.4242.0
      file_version "brain.Event:2" (with source_metadata), a graph_def event,
      steps 0..59: `loss` and `train/lr` as simple_value (a NaN loss at
      step 13), `eval/accuracy` every 10 steps as a float32 tensor in
      tensor_content (TF2 style: scalars metadata on the first value only),
      `metrics/double` (double_val), `metrics/half` (half_val),
      `metrics/int` (int_val), `metrics/int64` (int64 in tensor_content), a
      histogram tensor, a text tensor, an image and an old-style histogram
      (none of them scalars), merged summaries (several values in one event),
      a value named only by node_name, an unpacked float_val; a record with
      a bad data checksum repeating step 30's loss with another value, and
      one holding a tag of its own.
  job/events.out.tfevents.1700000500.node1.5151.0
      The job restarted from step 40: file_version, SessionLog.START at step
      40 (every tag's points at and after 40 are orphans), steps 40..79, then
      `loss` at step 70 again (a step going back).
  damaged/events.out.tfevents.1700001000.node2.1.0
      A record whose length checksum is broken: the reader goes on at the
      next record whose header checks out.
  partial/events.out.tfevents.1700002000.node3.1.0
      The last record cut in half (a live writer, or a copy cut short).
  keras/train/events.out.tfevents.1700003000.node4.7.0.v2 and
  keras/validation/events.out.tfevents.1700003001.node4.7.1.v2
      Keras' layout: two runs, float32 tensors with scalars metadata.

OUTDIR/tb_live/events.out.tfevents.1700009000.node1.6000.0
      A third file of the job, for a test to drop into a followed folder: the
      job restarted again at step 60 (SessionLog.START), `train/lr` 60..64.

OUTDIR/hf/hfrun/
  A Hugging Face Trainer's output folder: a checkpoint (torch.save), and its
  logging_dir runs/<date>_<host>/, one per launch: Nov28_... (steps 0..29)
  and Dec03_... (resumed, 30..59). The folder names sort against the times
  in the event files' names.

OUTDIR/tb_damage.json: the byte offsets of the damaged records per file.
The expected points come from tests/python/tfevents_reader.py, a reader
written separately from the same documentation.
"""
import json
import math
import os
import struct
import sys

# --------------------------------------------------------------- CRC-32C

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data, break_length=False, break_data=False):
    header = struct.pack("<Q", len(data))
    hcrc = masked(header) ^ (0x1 if break_length else 0)
    dcrc = masked(data) ^ (0x100 if break_data else 0)
    return header + struct.pack("<I", hcrc) + data + struct.pack("<I", dcrc)

# -------------------------------------------------------- protobuf writing


def varint(n):
    if n < 0:
        n += 1 << 64  # int64 / int32 negatives: ten bytes, two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_varint(field, n):
    return key(field, 0) + varint(n)


def f_double(field, x):
    return key(field, 1) + struct.pack("<d", x)


def f_float(field, x):
    return key(field, 5) + struct.pack("<f", x)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


# types.proto
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_STRING, DT_INT64, DT_HALF = 1, 2, 3, 7, 9, 19


def shape(*dims):
    return f_bytes(2, b"".join(f_bytes(2, f_varint(1, d)) for d in dims))


def tensor(dtype, dims=(), content=None, packed=None, unpacked=None, strings=()):
    """TensorProto: dtype 1, tensor_shape 2, tensor_content 4, typed fields."""
    out = f_varint(1, dtype) + shape(*dims)
    if content is not None:
        out += f_bytes(4, content)
    if packed is not None:
        field, payload = packed
        out += f_bytes(field, payload)
    if unpacked is not None:
        out += unpacked
    for s in strings:
        out += f_bytes(8, s)
    return out


def metadata(plugin, data_class=None):
    """SummaryMetadata: plugin_data 1 {plugin_name 1, content 2}, data_class 4."""
    out = f_bytes(1, f_bytes(1, plugin) + f_bytes(2, b""))
    if data_class is not None:
        out += f_varint(4, data_class)
    return out


def value(tag=None, simple=None, tensor_bytes=None, meta=None, node_name=None, image=None,
          histo=None):
    """Summary.Value: tag 1, simple_value 2, image 4, histo 5, node_name 7, tensor 8, metadata 9."""
    out = b""
    if tag is not None:
        out += f_bytes(1, tag)
    if node_name is not None:
        out += f_bytes(7, node_name)
    if meta is not None:
        out += f_bytes(9, meta)
    if simple is not None:
        out += f_float(2, simple)
    if image is not None:
        out += f_bytes(4, image)
    if histo is not None:
        out += f_bytes(5, histo)
    if tensor_bytes is not None:
        out += f_bytes(8, tensor_bytes)
    return out


def event(wall, step=None, file_version=None, values=None, session_start=False, graph=None,
          source_writer=None):
    """Event: wall_time 1, step 2, file_version 3, graph_def 4, summary 5, session_log 7,
    source_metadata 10."""
    out = f_double(1, wall)
    if step:
        out += f_varint(2, step)  # proto3 leaves step 0 out
    if file_version is not None:
        out += f_bytes(3, file_version)
    if graph is not None:
        out += f_bytes(4, graph)
    if values is not None:
        out += f_bytes(5, b"".join(f_bytes(1, v) for v in values))
    if session_start:
        out += f_bytes(7, f_varint(1, 1))  # SessionLog.status = START
    if source_writer is not None:
        out += f_bytes(10, f_bytes(1, source_writer))
    return out

# ------------------------------------------------------------- the files


def loss_at(step, run=0):
    return 4.0 * math.exp(-step / 30.0) + 0.01 * math.sin(step) + 0.05 * run


def write(path, records):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        offsets = []
        for r in records:
            offsets.append(f.tell())
            f.write(r)
    return offsets


def job_first_file(path, damage):
    t0 = 1700000000.25
    recs = [record(event(t0, file_version="brain.Event:2",
                         source_writer="tensorboard.summary.writer.event_file_writer")),
            record(event(t0 + 0.1, graph=bytes(range(200))))]
    bad = []
    for step in range(60):
        wall = t0 + 1 + step * 0.5
        loss = float("nan") if step == 13 else loss_at(step)
        # torch.utils.tensorboard's add_scalar: one value per event, simple_value.
        recs.append(record(event(wall, step, values=[value("loss", simple=loss)])))
        # A merged summary (TF1's merge_all): several values in one event.
        recs.append(record(event(wall, step, values=[
            value("train/lr", simple=3e-4 * min(1.0, (step + 1) / 10)),
            value("metrics/double", tensor_bytes=tensor(
                DT_DOUBLE, packed=(6, struct.pack("<d", 1.0 / (step + 3)))),
                meta=metadata("scalars") if step == 0 else None),
            value("metrics/half", tensor_bytes=tensor(
                DT_HALF, packed=(13, varint(struct.unpack("<H", struct.pack("<e", 1.5 + step / 64))[0])))),
            value("metrics/int", tensor_bytes=tensor(DT_INT32, packed=(7, varint(step * 7 - 100)))),
            value("metrics/int64", tensor_bytes=tensor(DT_INT64, content=struct.pack("<q", -(step ** 3)))),
        ])))
        if step % 10 == 0:
            recs.append(record(event(wall + 0.2, step, values=[
                value("eval/accuracy",
                      tensor_bytes=tensor(DT_FLOAT, content=struct.pack("<f", 0.5 + step / 200)),
                      meta=metadata("scalars", 1) if step == 0 else None)])))
            # Not scalars: a histogram tensor, a text tensor, an image, an old-style histogram.
            recs.append(record(event(wall + 0.3, step, values=[
                value("weights/hist", tensor_bytes=tensor(
                    DT_DOUBLE, dims=(2, 3), content=struct.pack("<6d", *range(6))),
                    meta=metadata("histograms") if step == 0 else None),
                value("notes", tensor_bytes=tensor(DT_STRING, strings=[b"step %d" % step]),
                      meta=metadata("text") if step == 0 else None),
                value("samples", image=f_varint(1, 2) + f_varint(2, 2) + f_bytes(4, b"\x89PNG")),
                value("old_hist", histo=f_double(1, 0.0) + f_double(2, 1.0)),
            ])))
        if step % 20 == 5:
            # A value named only by its node_name (TensorBoard's legacy fallback),
            # with an unpacked float_val.
            recs.append(record(event(wall + 0.4, step, values=[
                value(node_name="legacy/node", tensor_bytes=tensor(
                    DT_FLOAT, unpacked=f_float(5, step * 0.25)))])))
        if step == 30:
            # Corrupt copies: never read (one would replace step 30's loss, one adds a tag).
            bad.append(len(recs))
            recs.append(record(event(wall + 0.45, step, values=[value("loss", simple=-123.0)]),
                               break_data=True))
            bad.append(len(recs))
            recs.append(record(event(wall + 0.46, step, values=[value("corrupt/only", simple=1.0)]),
                               break_data=True))
    offsets = write(path, recs)
    damage[path] = {"data": [offsets[i] for i in bad]}


def job_second_file(path):
    t0 = 1700000500.75
    recs = [record(event(t0, file_version="brain.Event:2")),
            record(event(t0 + 0.01, 40, session_start=True))]
    for step in range(40, 80):
        wall = t0 + 1 + (step - 40) * 0.5
        recs.append(record(event(wall, step, values=[value("loss", simple=loss_at(step, 1))])))
        recs.append(record(event(wall, step, values=[
            value("train/lr", simple=3e-4 * 0.99 ** (step - 40))])))
        if step % 10 == 0:
            recs.append(record(event(wall + 0.2, step, values=[
                value("eval/accuracy",
                      tensor_bytes=tensor(DT_FLOAT, content=struct.pack("<f", 0.6 + step / 400)),
                      meta=metadata("scalars", 1) if step == 40 else None)])))
    # The loss logged again from step 70: a step going back.
    recs.append(record(event(t0 + 30, 70, values=[value("loss", simple=0.125)])))
    recs.append(record(event(t0 + 31, 71, values=[value("loss", simple=0.0625)])))
    write(path, recs)


def live_restart_file(path):
    t0 = 1700009000.5
    recs = [record(event(t0, file_version="brain.Event:2")),
            record(event(t0 + 0.01, 60, session_start=True))]
    for step in range(60, 65):
        recs.append(record(event(t0 + step - 59, step, values=[
            value("train/lr", simple=1e-4 * (step - 59))])))
    write(path, recs)


def hf_run(folder):
    import torch  # Debian's python3-torch: the checkpoint as the trainer saves one

    os.makedirs(folder, exist_ok=True)
    torch.save({"step": 30, "model_state": {"w": torch.ones(2, 2)}},
               os.path.join(folder, "ckpt_step30.pt"))
    for name, t0, steps in (("Nov28_10-00-00_node5", 1701165600.0, range(0, 30)),
                            ("Dec03_08-00-00_node5", 1701590400.0, range(30, 60))):
        recs = [record(event(t0, file_version="brain.Event:2"))]
        for step in steps:
            recs.append(record(event(t0 + step, step, values=[
                value("train/loss", simple=loss_at(step)),
                value("train/learning_rate", simple=5e-5 * (1 - step / 60))])))
        write(os.path.join(folder, "runs", name,
                           "events.out.tfevents.%d.node5.77.0" % int(t0)), recs)


def damaged_file(path, damage):
    t0 = 1700001000.0
    recs = [record(event(t0, file_version="brain.Event:2"))]
    broken = []
    for step in range(20):
        broken_here = step in (7, 15)
        if broken_here:
            broken.append(len(recs))
        recs.append(record(event(t0 + step, step, values=[value("loss", simple=loss_at(step))]),
                           break_length=broken_here))
    offsets = write(path, recs)
    damage[path] = {"length": [offsets[i] for i in broken]}


def partial_file(path, damage):
    t0 = 1700002000.0
    recs = [record(event(t0, file_version="brain.Event:2"))]
    for step in range(10):
        recs.append(record(event(t0 + step, step, values=[value("loss", simple=loss_at(step))])))
    data = b"".join(recs)
    last = len(data) - len(recs[-1])
    cut = data[:last + len(recs[-1]) // 2]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(cut)
    damage[path] = {"partial": [last]}


def keras_run(path, t0, name_prefix, shift):
    recs = [record(event(t0, file_version="brain.Event:2"))]
    for epoch in range(8):
        for i, tag in enumerate(("epoch_loss", "epoch_accuracy")):
            x = loss_at(epoch * 7) + shift if tag == "epoch_loss" else 0.4 + epoch / 20 + shift
            recs.append(record(event(t0 + 10 * epoch + i, epoch, values=[value(
                tag, tensor_bytes=tensor(DT_FLOAT, content=struct.pack("<f", x)),
                meta=metadata("scalars", 1) if epoch == 0 else None)])))
    write(path, recs)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = argv[1]
    tb = os.path.join(out, "tb")
    damage = {}
    job_first_file(os.path.join(tb, "job", "events.out.tfevents.1700000000.node1.4242.0"), damage)
    job_second_file(os.path.join(tb, "job", "events.out.tfevents.1700000500.node1.5151.0"))
    live_restart_file(os.path.join(out, "tb_live", "events.out.tfevents.1700009000.node1.6000.0"))
    damaged_file(os.path.join(tb, "damaged", "events.out.tfevents.1700001000.node2.1.0"), damage)
    partial_file(os.path.join(tb, "partial", "events.out.tfevents.1700002000.node3.1.0"), damage)
    keras_run(os.path.join(tb, "keras", "train", "events.out.tfevents.1700003000.node4.7.0.v2"),
              1700003000.5, "train", 0.0)
    keras_run(os.path.join(tb, "keras", "validation",
                           "events.out.tfevents.1700003001.node4.7.1.v2"), 1700003001.5,
              "validation", 0.1)
    hf_run(os.path.join(out, "hf", "hfrun"))
    with open(os.path.join(out, "tb_damage.json"), "w") as f:
        json.dump(damage, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
