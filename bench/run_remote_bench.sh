#!/usr/bin/env bash
# Issue #27's goals, measured on loopback: a sweep's curves through ssh
# (`ckptscope-cli metrics --json ssh://127.0.0.1:PORT/DIR`, the agent on the
# other end) against the same command on the local path, run in turn in the
# same benchmark; and the bytes a refresh moves after 100 lines are appended
# to a run's metrics.jsonl (`metrics` with `since`, docs/REMOTE.md) against
# the bytes of those lines. An sshd of its own (keys and configs in a
# temporary folder, a loopback port: bench/sshd_loopback.sh) is started and
# stopped here.
#
#   bench/run_remote_bench.sh [BUILD_DIR]
#
# Environment: SWEEP_RUNS (default 300), SWEEP_POINTS (default 2000),
# REPEAT (default 5: medians). Goals: remote <= 1.5x local + 3 round trips;
# a refresh <= 2x the appended bytes.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${SWEEP_RUNS:-300}"
POINTS="${SWEEP_POINTS:-2000}"
REPEAT="${REPEAT:-5}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}/sweep-${RUNS}x${POINTS}"
source "$REPO/bench/cli_build.sh"
source "$REPO/bench/sshd_loopback.sh"
bench_cli_build "$REPO" ${1:+"$1"} -- ckptscope-cli
CLI="$BUILD/app/ckptscope-cli"

if [[ ! -f "$DATA/.complete" ]]; then
  python3 "$REPO/bench/make_sweep_bench.py" "$DATA" "$RUNS" "$POINTS"
  touch "$DATA/.complete"
fi

TMP="$(mktemp -d)"
cleanup() {
  bench_sshd_stop
  rm -rf "$TMP"
}
trap cleanup EXIT
bench_sshd_start "$TMP"
export CKPTSCOPE_REMOTE_CLI="$CLI"

echo "== machine"
echo "cpu:   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data:  $RUNS runs x $POINTS lines, $(du -sb "$DATA" | cut -f1) bytes; ssh to 127.0.0.1:$PORT"
echo
python3 - "$CLI" "$DATA" "$REPEAT" "$PORT" "$TMP" <<'PY'
import json, os, shutil, statistics, subprocess, sys, time
cli, data, repeat, port, tmp = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
ssh = os.environ["CKPTSCOPE_SSH"].split()

def timed(args):
    t = time.perf_counter()
    out = subprocess.run(args, stdout=subprocess.PIPE, check=True).stdout
    return time.perf_counter() - t, out

local, remote, rtt = [], [], []
for _ in range(repeat):  # interleaved: the same load for both
    t, lout = timed([cli, "metrics", "--json", data]); local.append(t)
    t, rout = timed([cli, "metrics", "--json", "ssh://127.0.0.1:%s%s" % (port, data)]); remote.append(t)
    assert rout == lout, "remote output differs from local"
    # One ssh connection and the agent's hello, open, answer on an empty
    # folder: what the round trips cost here.
    os.makedirs(tmp + "/empty", exist_ok=True)
    t, _ = timed([cli, "ls", "--json", "ssh://127.0.0.1:%s%s/empty" % (port, tmp)]); rtt.append(t)
l, r, c = statistics.median(local), statistics.median(remote), statistics.median(rtt)
print("== metrics --json, %d runs (median of %d; output identical)" % (len(json.loads(lout)["runs"]), repeat))
print("local:                 %.3f s" % l)
print("over ssh (loopback):   %.3f s   %.2fx local" % (r, r / l))
print("connection + 3 round trips (ls of an empty folder over ssh): %.3f s" % c)
print("goal: remote <= 1.5x local + 3 round trips = %.3f s: %s" % (1.5 * l + c, "met" if r <= 1.5 * l + c else "NOT met"))

# A refresh: the agent asked for what one run's metrics.jsonl gained.
# (In a folder of its own: a run's curves also read *.log beside it.)
run = os.path.join(tmp, "follow", "run")
shutil.copytree(os.path.join(data, sorted(d for d in os.listdir(data) if not d.startswith("."))[0]), run)
p = subprocess.Popen(ssh + ["-T", "-o", "BatchMode=yes", "127.0.0.1", "'%s' serve --stdio" % cli],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def call(i, method, params):
    p.stdin.write((json.dumps({"id": i, "method": method, "params": params}) + "\n").encode()); p.stdin.flush()
    line = p.stdout.readline()
    res = json.loads(line)
    if "result" not in res:
        sys.exit("%s: %s" % (method, res))
    return line, res
call(0, "hello", {"protocol": 1})
call(1, "open", {"path": os.path.dirname(run)})
full, res = call(2, "metrics", {"paths": [run]})
ends = res["result"]["runs"][0]["read_ends"]
f = os.path.join(run, "metrics.jsonl")
last = max(json.loads(l)["step"] for l in open(f))
lines = "".join('{"step": %d, "loss": %.6f, "lr": 3e-4, "tokens": %d, "wall_time": %.3f}\n'
                % (s, 2.0 + 1.0 / s, s * 4096, s * 0.25) for s in range(last + 1, last + 101))
with open(f, "a") as out:
    out.write(lines)
refresh, res = call(3, "metrics", {"since": ends})
steps = {pt["point"][0] for x in res["result"]["files"] for pt in x["points"]}
assert steps == set(range(last + 1, last + 101)), "the refresh holds the 100 new steps, only them"
p.stdin.close(); p.wait()
print()
print("== a refresh after 100 appended lines (one run)")
print("the run read whole:    %d bytes" % len(full))
print("100 lines appended:    %d bytes" % len(lines.encode()))
print("refresh (since):       %d bytes   %.2fx the lines (goal <= 2x: %s)"
      % (len(refresh), len(refresh) / len(lines.encode()), "met" if len(refresh) <= 2 * len(lines.encode()) else "NOT met"))
PY
