# shellcheck shell=bash
# Sourced by the remote benchmarks (run_remote_bench.sh,
# run_remote_diff_bench.sh): `bench_sshd_start DIR` starts an sshd of its own
# on a loopback port, keys and configs generated into DIR (no system config
# touched), and sets
#   PORT        the port it listens on
#   SSHD_PID    its pid (bench_sshd_stop kills it)
#   SSH_CONFIG  DIR/ssh_config: a client config that reaches it
# and exports CKPTSCOPE_SSH="ssh -F SSH_CONFIG". The caller owns DIR and
# calls bench_sshd_stop from its EXIT trap.
SSHD_PID=""

bench_sshd_start() {
  local dir="$1"
  [[ -x /usr/sbin/sshd ]] || {
    echo "needs /usr/sbin/sshd (openssh-server)" >&2
    return 1
  }
  mkdir -p /run/sshd 2>/dev/null || true
  ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$dir/user_key"
  cp "$dir/user_key.pub" "$dir/authorized_keys"
  PORT=$((20000 + $$ % 30000))
  cat >"$dir/sshd_config" <<CFG
Port $PORT
ListenAddress 127.0.0.1
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
UsePAM no
PidFile none
PasswordAuthentication no
CFG
  SSH_CONFIG="$dir/ssh_config"
  cat >"$SSH_CONFIG" <<CFG
Host *
  Port $PORT
  IdentityFile $dir/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking accept-new
  LogLevel ERROR
CFG
  /usr/sbin/sshd -D -e -f "$dir/sshd_config" 2>"$dir/sshd.log" &
  SSHD_PID=$!
  for _ in $(seq 50); do
    grep -q "Server listening" "$dir/sshd.log" && break
    sleep 0.1
  done
  grep -q "Server listening" "$dir/sshd.log" || {
    echo "sshd did not start:" >&2
    cat "$dir/sshd.log" >&2
    return 1
  }
  export CKPTSCOPE_SSH="ssh -F $SSH_CONFIG"
}

bench_sshd_stop() {
  if [[ -n "$SSHD_PID" ]]; then kill "$SSHD_PID" 2>/dev/null || true; fi
  SSHD_PID=""
}
