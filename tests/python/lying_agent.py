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
A sharded checkpoint's skeleton (its `files`) is changed by MODE:
  escape   its first file is named ../../escaped (outside its folder)
  twice    its first file is sent twice
  folder   its folder is named ".."
  bigfile  its first file claims 2^60 bytes
  summary  the host says it reads the checkpoint otherwise (its summary)
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
        if isinstance(result, dict) and "files" in result and result["files"]:
            files = result["files"]
            if mode == "escape":
                files[0]["file"] = "../../escaped"
            elif mode == "twice":
                files.append(dict(files[0]))
            elif mode == "folder":
                result["folder"] = ".."
            elif mode == "bigfile":
                files[0]["size"] = 1 << 60
            elif mode == "summary":
                result["summary"] += " (read otherwise)"
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
