#!/usr/bin/env bash
# Issue #27's diff goal, measured on loopback: `ckptscope-cli diff A B --json`
# of two 1.8 GB checkpoints on "the host" (`ssh://127.0.0.1:PORT/A
# ssh://127.0.0.1:PORT/B`: the agent's `diff` computes there, only the report
# travels) against the same command on the local paths, run in turn in the
# same benchmark, output checked identical; and the bytes the ssh connection
# carried. Also the comparison across machines (`A` here, `ssh://.../B`:
# docs/REMOTE.md "Comparing across machines"), reported beside it; and the
# same for two Hugging Face sharded checkpoints of 4 files each (a host's
# sent without its storages' bytes). An sshd of its own
# (bench/sshd_loopback.sh) is started and stopped here.
#
#   bench/run_remote_diff_bench.sh [BUILD_DIR]
#
# Data (in CKPT_BENCH_DATA, default build/bench-data; made only when missing
# or stale): run_bench.sh's checkpoint (bench/make_checkpoint.py, 1.8 GB), its
# perturbed copy of run_diff_bench.sh (every model tensor changed: a full
# fine-tune) and a copy with only blocks 10 and 11 changed (a fine-tune of the
# last layers), bench/diff_bench.py perturb.
#
# Bytes moved: what the ssh client itself counts on its TCP connection
# (`Transferred: sent N, received M bytes` at LogLevel DEBUG1, written to a
# file with -E): encrypted, with the key exchange and authentication, both
# directions, every connection of the command summed. Counted in one extra
# run of each; the timed runs log nothing.
#
# Also timed: the agent alone (its requests through a pipe, no ssh), the
# same command on a connection kept open (ControlMaster), and what a session
# costs before any diff (`ssh 127.0.0.1 true`; the account's shell, which
# sshd starts with ~/.bashrc read).
#
# Environment: REPEAT (default 5: medians); COLD=1: each run's two files
# dropped from the page cache first (posix_fadvise DONTNEED on those files
# only). Goals (both files on the host): < 1 MB moved, <= 1.2x the local diff.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_PY=/usr/bin/python3 # Debian's python3 with python3-torch
REPEAT="${REPEAT:-5}"
DATA="${CKPT_BENCH_DATA:-$REPO/build/bench-data}"
source "$REPO/bench/cli_build.sh"
source "$REPO/bench/sshd_loopback.sh"
bench_cli_build "$REPO" ${1:+"$1"} -- ckptscope-cli
CLI="$BUILD/app/ckptscope-cli"
BUILD_TYPE="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)"

mkdir -p "$DATA"
A="$DATA/gpt2s-sinks_step12000.pt"
B="$DATA/gpt2s-sinks_step13000-perturbed.pt"
C="$DATA/gpt2s-sinks_step13000-last2blocks.pt"
"$TORCH_PY" "$REPO/bench/make_checkpoint.py" "$A" # kept when its stamp matches
"$TORCH_PY" "$REPO/bench/diff_bench.py" perturb "$A" "$B"
"$TORCH_PY" "$REPO/bench/diff_bench.py" perturb "$A" "$C" --blocks 10,11
# The same two states as Hugging Face sharded checkpoints (4 torch.save
# shards and an index each): a checkpoint of many files on the host.
SA="$DATA/gpt2s-sinks_step12000-hf4"
SC="$DATA/gpt2s-sinks_step13000-last2blocks-hf4"
"$TORCH_PY" "$REPO/bench/diff_bench.py" shard "$A" "$SA" 4
"$TORCH_PY" "$REPO/bench/diff_bench.py" shard "$C" "$SC" 4

TMP="$(mktemp -d)"
cleanup() {
  # The kept connection (started below), if a failure left it open.
  for socket in "$TMP"/cm-*; do
    if [[ -S "$socket" ]]; then
      ssh -F "$SSH_CONFIG" -o ControlPath="$socket" -O exit 127.0.0.1 2>/dev/null || true
    fi
  done
  bench_sshd_stop
  rm -rf "$TMP"
}
trap cleanup EXIT
bench_sshd_start "$TMP"
export CKPTSCOPE_REMOTE_CLI="$CLI"

echo "== machine"
echo "cpu:     $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build:   $BUILD (${BUILD_TYPE:-?}); $(ssh -V 2>&1), loopback 127.0.0.1:$PORT"
blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
echo "libblas: ${blas:-not installed}; ckptscope-cli links $(ldd "$CLI" | grep -ciE 'blas|lapack') BLAS libraries (the diff is its own loop)"
echo "files:   $A ($(stat -c %s "$A") bytes)"
echo "         $B ($(stat -c %s "$B") bytes; every model tensor changed)"
echo "         $C ($(stat -c %s "$C") bytes; blocks 10 and 11 changed)"
echo "         $SA/, $SC/ (the model states of the first and the last, $(cat "$SA"/*.bin | wc -c) and $(cat "$SC"/*.bin | wc -c) bytes in 4 shards each)"
cat "$A" "$B" "$C" "$SA"/* "$SC"/* >/dev/null # the page cache: every run reads warm files
echo
"$TORCH_PY" - "$CLI" "$A" "$B" "$C" "$REPEAT" "$PORT" "$TMP" "${COLD:-0}" \
  "$SA/pytorch_model.bin.index.json" "$SC/pytorch_model.bin.index.json" <<'PY'
import json, os, re, statistics, subprocess, sys, time
cli, a, b, c, repeat, port, tmp, cold, sa, sc = sys.argv[1:11]
repeat, cold = int(repeat), cold == "1"
ssh = os.environ["CKPTSCOPE_SSH"]
host = lambda p: "ssh://127.0.0.1:%s%s" % (port, p)
# A connection kept open, as `ControlMaster auto` + `ControlPersist` in a
# person's ~/.ssh/config keep one: each command's ssh is a session on it.
mux = ssh + " -o ControlPath=" + tmp + "/cm-%C"
subprocess.run(mux.split() + ["-o", "ControlMaster=yes", "-o", "ControlPersist=600", "-N", "-f", "127.0.0.1"],
               check=True)

def evict(*paths):
    """COLD=1: these files' pages dropped from the page cache (only theirs)."""
    for p in paths:
        if p.endswith(".index.json"):  # a sharded checkpoint: every file of its folder
            evict(*[os.path.join(os.path.dirname(p), f) for f in os.listdir(os.path.dirname(p))])
            continue
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

def timed(args, env=None, stdin=None):
    t = time.perf_counter()
    out = subprocess.run(args, input=stdin, stdout=subprocess.PIPE, check=True, env=env).stdout
    return time.perf_counter() - t, out

def diff(args, env=None):
    return timed([cli, "diff"] + args + ["--json"], env)

def agent_alone(x, y):
    """The agent's hello, open, open, diff through a pipe: no ssh, no shell."""
    reqs = [("hello", {"protocol": 1}), ("open", {"path": x}), ("open", {"path": y}),
            ("diff", {"a": x, "b": y, "top": 0})]
    text = "".join(json.dumps({"id": i, "method": m, "params": p}) + "\n" for i, (m, p) in enumerate(reqs))
    t, out = timed([cli, "serve", "--stdio"], stdin=text.encode())
    assert b'"id":3,"result"' in out, out[-300:]
    return t, out

def wire_bytes(args):
    """One more run, the ssh client logging what its connections carried."""
    log = os.path.join(tmp, "ssh-%d.log" % time.monotonic_ns())
    diff(args, dict(os.environ, CKPTSCOPE_SSH=ssh + " -E " + log + " -o LogLevel=DEBUG1"))
    sent = received = conns = 0
    for line in open(log):
        m = re.search(r"Transferred: sent (\d+), received (\d+) bytes", line)
        if m:
            sent, received, conns = sent + int(m[1]), received + int(m[2]), conns + 1
    return sent, received, conns

def paths_blanked(doc, *paths):
    text = doc.decode()
    for p in paths:
        text = text.replace(json.dumps(host(p))[1:-1], "PATH").replace(json.dumps(p)[1:-1], "PATH")
    return text

def med(xs):
    return statistics.median(xs)

# What a session costs before the agent answers, without a diff.
fixed = {"ssh 127.0.0.1 true (a new connection)": [], "the same on the kept connection": [],
         "bash -c true as sshd starts it (~/.bashrc read)": []}
for _ in range(repeat):
    fixed["ssh 127.0.0.1 true (a new connection)"].append(timed(ssh.split() + ["-T", "127.0.0.1", "true"])[0])
    fixed["the same on the kept connection"].append(timed(mux.split() + ["-T", "127.0.0.1", "true"])[0])
    fixed["bash -c true as sshd starts it (~/.bashrc read)"].append(timed(
        ["env", "-i", "HOME=" + os.environ["HOME"], "PATH=/usr/bin:/bin", "SSH_CLIENT=127.0.0.1 1 22",
         os.environ.get("SHELL", "/bin/bash"), "-c", "true"])[0])
print("== what a session costs here (median of %d)" % repeat)
for k, v in fixed.items():
    print("%-52s %.3f s" % (k + ":", med(v)))
print()

def pair(title, x, y):
    modes = {"local": [x, y], "both on the host": [host(x), host(y)],
             "both on the host, kept connection": [host(x), host(y)],
             "across (A here, B on the host)": [x, host(y)]}
    times = {m: [] for m in list(modes) + ["agent alone (a pipe, no ssh)"]}
    outs = {}
    for _ in range(repeat):  # in turn: the same load for each
        for m, args in modes.items():
            if cold:
                evict(x, y)
            env = dict(os.environ, CKPTSCOPE_SSH=mux) if "kept" in m else None
            t, outs[m] = diff(args, env)
            times[m].append(t)
        if cold:
            evict(x, y)
        times["agent alone (a pipe, no ssh)"].append(agent_alone(x, y)[0])
    local = outs["local"]
    doc = json.loads(local)
    print("== diff --json, %s (median of %d, run in turn%s)" % (
        title, repeat, "; each run with both files' pages dropped first" if cold else "; files in the page cache"))
    print("tensors compared: %d; bytes compared: %.2f GB; report: %d bytes" % (
        len(doc["tensors"]), doc["bytes_compared"] / 1e9, len(local)))
    base = med(times["local"])
    res = {}
    for m in times:
        t = med(times[m])
        line = "%-36s %7.3f s  %5.2fx local" % (m + ":", t, t / base)
        if m in modes:
            if outs[m] == local:
                same = "output identical"
            elif paths_blanked(outs[m], x, y) == paths_blanked(local, x, y):
                same = "output identical but for the paths"
            else:
                sys.exit("%s: the output differs from the local diff's" % m)
            if m != "local" and "kept" not in m:
                sent, received, conns = wire_bytes(modes[m])
                res[m] = (t, sent + received)
                line += "  moved %d bytes (sent %d, received %d; %d connection%s)" % (
                    sent + received, sent, received, conns, "" if conns == 1 else "s")
            line += "  [%s]" % same
        res.setdefault(m, (t, None))
        print(line)
    print("all runs (s): " + "; ".join("%s %s" % (m, " ".join("%.3f" % t for t in times[m])) for m in times))
    return base, res

base, res = pair("a full fine-tune (every tensor changed)", a, b)
t, moved = res["both on the host"]
tk = res["both on the host, kept connection"][0]
print("goal (both on the host): < 1 MB moved: %d bytes, %s; <= 1.2x local: %.2fx, %s (kept connection: %.2fx, %s)" % (
    moved, "met" if moved < 1e6 else "NOT met", t / base, "met" if t <= 1.2 * base else "NOT met",
    tk / base, "met" if tk <= 1.2 * base else "NOT met"))
print()
pair("a fine-tune of blocks 10 and 11", a, c)
print()
pair("the same fine-tune, each a Hugging Face checkpoint of 4 shards", sa, sc)
subprocess.run(mux.split() + ["-O", "exit", "127.0.0.1"], stderr=subprocess.DEVNULL)
PY
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
