#!/usr/bin/python3
"""An agent that lies about a tensor's bytes, for the comparison across
machines (tests/core/tst_cross_diff): a hostile or broken host.

Usage: lying_agent.py CLI MODE serve --stdio

Starts `CLI serve --stdio` and passes the lines between it and the client;
each `tensorBytes` event (a chunk of a tensor's bytes) is changed by MODE:
  longer   the chunk carries 4096 bytes more than the tensor holds
  offset   the chunk claims to start at byte 1 << 40
  cut      the agent's output ends in the middle of the first chunk (the
           connection drops while a tensor is on its way)
  huge     the skeleton claims a file of 2^60 bytes
Everything else reaches the client as the real agent sent it.
"""
import base64
import json
import os
import sys

from agent_proxy import relay


def main():
    cli, mode = sys.argv[1], sys.argv[2]

    def rewrite(line, msg, agent):
        event = msg.get("event")
        result = msg.get("result")
        if mode == "huge" and isinstance(result, dict) and "parts" in result:
            result["size"] = 1 << 60
            line = (json.dumps(msg) + "\n").encode()
        if isinstance(event, dict) and "data" in event:
            if mode == "cut":
                sys.stdout.buffer.write(line[: len(line) // 2])
                sys.stdout.buffer.flush()
                agent.kill()
                os._exit(0)  # stdout closed mid-line: the connection dropped
            if mode == "longer":
                data = base64.b64decode(event["data"]) + b"\0" * 4096
                event["data"] = base64.b64encode(data).decode()
            elif mode == "offset":
                event["offset"] = 1 << 40
            line = (json.dumps(msg) + "\n").encode()
        return line

    relay([cli] + sys.argv[3:], rewrite)


if __name__ == "__main__":
    main()
