"""An agent that answers slowly, for the app's Cancel (tests/ui/tst_remote_inspect).

Usage: slow_agent.py CLI LOG METHOD SECONDS serve --stdio

Starts `CLI serve --stdio` and passes the lines between it and the client,
every request written to LOG (one JSON line each, as the client sent it);
the answer to a request of METHOD is held back SECONDS before it is passed
on, so the client is still waiting when a person presses Cancel. Nothing
else is changed: the client speaks to the real agent.
"""
import json
import subprocess
import sys
import threading
import time


def main():
    cli, log, method, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    agent = subprocess.Popen([cli] + sys.argv[5:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    slow_ids = set()
    lock = threading.Lock()

    def to_client():
        for line in agent.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {}
            with lock:
                slow = isinstance(msg, dict) and msg.get("id") in slow_ids and (
                    "result" in msg or "error" in msg)
            if slow:
                time.sleep(seconds)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    out = threading.Thread(target=to_client, daemon=True)
    out.start()
    with open(log, "ab", buffering=0) as record:
        for line in sys.stdin.buffer:
            record.write(line)
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {}
            if isinstance(msg, dict) and msg.get("method") == method:
                with lock:
                    slow_ids.add(msg.get("id"))
            agent.stdin.write(line)
            agent.stdin.flush()
    agent.stdin.close()
    out.join()
    sys.exit(agent.wait())


if __name__ == "__main__":
    main()
