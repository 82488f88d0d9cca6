#!/usr/bin/python3
"""Re-save a checkpoint as if its model had been wrapped when it was saved.

    /usr/bin/python3 wrap_state_dict.py IN.pt OUT.pt PREFIX

Every key of IN's model state (its "model_state" entry, or the file itself
when it is a bare state dict) gets PREFIX ("module." for
DistributedDataParallel, "module._orig_mod." for DDP around torch.compile);
everything else is kept as torch.load gave it. Tied tensors stay tied.
"""
import collections
import sys

import torch


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, prefix = argv[1:]
    ck = torch.load(src, map_location="cpu")
    if isinstance(ck, dict) and isinstance(ck.get("model_state"), dict):
        ck["model_state"] = collections.OrderedDict((prefix + k, v) for k, v in ck["model_state"].items())
    else:
        ck = collections.OrderedDict((prefix + k, v) for k, v in ck.items())
    torch.save(ck, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
