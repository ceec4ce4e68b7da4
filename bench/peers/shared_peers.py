"""Puts the shared peer scripts (launcher.py, quiet.py) on sys.path for the PyTorch scripts beside this file.

They are at $EMBER_PEERS, else at ../shared/peers relative to the repository root. A missing
directory ends the calling script with a message that names what it needs and how to point at it.
"""
import os
import sys


def add_to_path(script, needs):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    d = os.environ.get("EMBER_PEERS") or os.path.join(os.path.dirname(root), "shared", "peers")
    if not os.path.isfile(os.path.join(d, "launcher.py")):
        sys.exit("%s: shared peer scripts not found at %s (%s); "
                 "set EMBER_PEERS to the directory that holds them" % (script, d, needs))
    sys.path.insert(0, d)
