#!/usr/bin/python3
"""An agent that lies in its `shards` answer (the Shards tab of a
checkpoint on a host, tests/ui/tst_remote_shardview): a hostile or broken host.

Usage: lying_shards_agent.py CLI MODE serve --stdio

Starts `CLI serve --stdio` and passes the lines between it and the client;
the result of `shards` is changed by MODE:
  counts   it claims one tensor more than it lists
  huge     its first part claims 2^60 bytes (and total_size follows)
  part     the first tensor's first chunk names part 1000000
  old      it answers as an agent older than `shards` (unknown_method)
Everything else reaches the client as the real agent sent it.
"""
import json
import sys

from agent_proxy import relay


def lie(shards, mode):
    if mode == "counts":
        shards["counts"]["tensors"] += 1
    elif mode == "huge":
        shards["parts"][0]["size"] = 1 << 60
        shards["total_size"] = sum(p["size"] for p in shards["parts"])
    elif mode == "part":
        shards["tensors"][0]["chunks"][0]["part"] = 1000000


def main():
    cli, mode = sys.argv[1], sys.argv[2]

    def rewrite(line, msg, agent):
        result = msg.get("result")
        if isinstance(result, dict) and isinstance(result.get("shards"), dict):
            if mode == "old":
                msg = {"id": msg["id"], "error": {"code": "unknown_method", "message": "shards"}}
            else:
                lie(result["shards"], mode)
            line = (json.dumps(msg) + "\n").encode()
        return line

    relay([cli] + sys.argv[3:], rewrite)


if __name__ == "__main__":
    main()
