"""The relay the test agents that change what a real agent says share
(lying_agent.py, lying_shards_agent.py): starts `CLI serve --stdio`, passes
the client's lines to it as they come and each of its lines to the client
through rewrite(line, msg, agent), which returns the bytes to send (msg:
the line read as JSON, {} when it is not an object; agent: its Popen). Exits with the agent's status.
"""
import json
import subprocess
import sys
import threading


def relay(agent_argv, rewrite):
    agent = subprocess.Popen(agent_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def to_client():
        for line in agent.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {}
            if not isinstance(msg, dict):
                msg = {}
            sys.stdout.buffer.write(rewrite(line, msg, agent))
            sys.stdout.buffer.flush()

    out = threading.Thread(target=to_client, daemon=True)
    out.start()
    for line in sys.stdin.buffer:
        try:
            agent.stdin.write(line)
            agent.stdin.flush()
        except BrokenPipeError:
            break
    try:
        agent.stdin.close()
    except BrokenPipeError:
        pass
    out.join()
    sys.exit(agent.wait())
