#!/usr/bin/env python3
"""metrics.jsonl lines laid out every way a writer lays them out, and what
Python's json module reads from each (the truth tst_metrics_layouts checks
the reader against).

    make_jsonl_layouts.py OUT.jsonl EXPECTED.json

Lines repeat a few layouts (the reader remembers a line's layout and
matches the next against it), then change them: other spacing, other key
order, a key more or less, a string or nested value, bad lines, lines that
share a layout's first bytes and differ later, numbers of every form. The
rule (README, "metrics"): a line is an object with an
integer "step"; its other number members are points (learning_rate is
lr), except wall_time and tokens, which go with them; a blank line is
skipped; anything else is a bad line (its 1-based number is listed).
Values are written as float.hex() (NaN and infinities included), so the
test compares bits.
"""
import json
import random
import sys

NUMBERS = ["NaN", "Infinity", "-Infinity", "1e-30", "-0.0", "0.1", "1E5", "2.5e+3",
           "1.7976931348623157e308", "5e-324", "0.30000000000000004", "12345678901234567",
           "123456789012345678901", "-7", "0", "3.14159265358979", "1.0000000000000002",
           "9007199254740993", "0.000123456", "1e22", "1e23", "4.35e-5", "100.5e-2"]


def number_text(rng):
    r = rng.random()
    if r < 0.3:
        return rng.choice(NUMBERS)
    if r < 0.6:
        return repr(rng.uniform(-10, 10))
    if r < 0.8:
        return "%.6f" % rng.uniform(0, 5)
    return "%.4g" % rng.uniform(0, 1e-3)


def main(out_path, expected_path):
    rng = random.Random(26)
    lines = []
    step = 0
    layout = 0
    for i in range(40000):
        if rng.random() < 0.01:
            layout = rng.randrange(12)  # writers change layout now and then
        step += 1
        x, y = number_text(rng), number_text(rng)
        t, w = step * 512, "%.3f" % (step * 0.25)
        kind = layout if rng.random() < 0.9 else rng.randrange(20)
        if kind == 0:
            line = '{"step": %d, "loss": %s, "lr": %s, "tokens": %d, "wall_time": %s}' % (step, x, y, t, w)
        elif kind == 1:
            line = '{"step":%d,"val_loss":%s}' % (step, x)
        elif kind == 2:
            line = ' { "step" : %d , "loss" : %s }  \r' % (step, x)
        elif kind == 3:
            line = '{"loss": %s, "step": %d, "learning_rate": %s}' % (x, step, y)
        elif kind == 4:
            line = '{"step": %d, "loss": %s, "lr": %s, "tokens": %d, "wall_time": %s, "grad_norm": %s}' % (
                step, x, y, t, w, number_text(rng))
        elif kind == 5:  # a string value: the slow path (no NaN there: not JSON)
            line = '{"step": %d, "phase": "train", "loss": %s}' % (step, repr(rng.random()))
        elif kind == 6:
            line = '{"step": %d, "loss": %s, "hist": [1, 2, {"a": 3}], "lr": %s}' % (step, repr(rng.random()), repr(rng.random()))
        elif kind == 7:
            line = '{"step": %d, "loss": %s}' % (step, x)
        elif kind == 8:  # the same keys as 0, in another spacing
            line = '{"step": %d,  "loss": %s, "lr": %s, "tokens": %d, "wall_time": %s}' % (step, x, y, t, w)
        elif kind == 9:
            line = '{"step": %d, "loss": %s, "lr": %s, "tokens": %d, "wall_time": %s}\t' % (step, x, y, t, w)
        elif kind == 10:
            line = '{"step": %d, "loss": %s, "lr": %s, "tokens": %d, "wall_time": %s} x' % (step, x, y, t, w)
        elif kind == 11:
            line = rng.choice(['{"loss": 1}', '{"step": 1.5, "loss": 2}', '{"step": "3", "loss": 1}',
                               '{"step": %d, "loss": ' % step, '', '   ', '[1, 2]', '{"step": %d}' % step,
                               '{"step": %d, "loss": 1e999}' % step,
                               '{"step": %d, "loss": 2, "lr": 1' % step,
                               '{"step": %d, "lo\\u0073s": 2}' % step])
        elif kind == 12:  # layout 0's first bytes, then a string
            line = '{"step": %d, "loss": %s, "lr": "high", "tokens": %d, "wall_time": %s}' % (step, x, t, w)
        elif kind == 13:
            line = '{"step": %d, "loss": %s, "lr": %s, "tokens": %d}' % (step, x, y, t)
        elif kind == 14:
            line = '{"step": %d, "loss": %s, "lr": %s, "tokens": %d, "wall_time": %s, "step": %d}' % (
                step, x, y, t, w, step)  # step twice, the same: one point
        elif kind == 15:
            line = '{"step": %d,"loss": %s,"lr": %s,"tokens": %d,"wall_time": %s}' % (step, x, y, t, w)
        elif kind == 16:
            line = '{"step": %d, "loss": %s, "tokens": 1.5e3}' % (step, x)
        elif kind == 17:
            line = '{"step": %d, "loss": %s, "ok": true, "lr": %s}' % (step, x, y)
        elif kind == 18:
            line = '{"step": %d, "loss": %s, "lr": %s, "tokens": %d, "wall_time": %s}' % (step, x, y, t, w)
        else:
            line = '{"step": %d, "Loss": %s, "lr": %s, "tokens": %d, "wall_time": %s}' % (step, x, y, t, w)
        lines.append(line)

    series = {}
    bad = []
    for n, line in enumerate(lines, 1):
        if line.strip(" \t\r") == "":
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad.append(n)
            continue
        if not isinstance(obj, dict) or type(obj.get("step")) is not int:
            bad.append(n)
            continue
        wall = obj.get("wall_time")
        wall = float(wall) if type(wall) in (int, float) else None
        tokens = obj.get("tokens")
        tokens = int(tokens) if type(tokens) in (int, float) else None
        for key, value in obj.items():
            if key in ("step", "wall_time", "tokens") or type(value) not in (int, float):
                continue
            name = "lr" if key == "learning_rate" else key
            series.setdefault(name, []).append(
                [obj["step"], float(value).hex(), None if wall is None else wall.hex(), tokens])
    with open(out_path, "w", newline="") as f:
        f.write("".join(l + "\n" for l in lines))
    with open(expected_path, "w") as f:
        json.dump({"series": series, "bad_lines": bad, "lines": len(lines)}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
