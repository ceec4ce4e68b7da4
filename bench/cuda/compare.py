#!/usr/bin/env python3
"""Joins CudaBench's and torch_peer.py's JSON lines on (workload, case) into one table:

    python3 bench/cuda/compare.py out-gpu/bench.txt out-gpu/peer.txt

stdout: the two _env lines, then one row per case either side has: Ember's value, PyTorch's, and
ember/pytorch (> 1: Ember is faster; every metric here is higher-is-better). A case only one side
has shows "-" on the other. Lines that are not JSON objects (a crash, a warning) are ignored.
"""
import json
import sys


def read(path):
    """(env record or None, {(workload, case): record}) from a file of JSON lines."""
    env, rows = None, {}
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError:
        return None, {}
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if rec.get("workload") == "_env":
            env = rec
        elif "workload" in rec and "case" in rec:
            rows[(rec["workload"], rec["case"])] = rec
    return env, rows


def fmt(rec):
    if rec is None:
        return "-"
    if "error" in rec:
        return "error"
    v = rec.get("value")
    return "-" if v is None else "%.4g" % v


def table(ember_path, peer_path):
    ember_env, ember = read(ember_path)
    peer_env, peer = read(peer_path)
    out = ["ember:   " + json.dumps(ember_env), "pytorch: " + json.dumps(peer_env), ""]
    out.append("%-12s %-28s %-10s %12s %12s %8s" % ("workload", "case", "unit", "ember", "pytorch", "ratio"))
    keys = list(ember) + [k for k in peer if k not in ember]
    for key in keys:
        e, p = ember.get(key), peer.get(key)
        unit = (e or {}).get("metric") or (p or {}).get("metric", "")
        ratio = "-"
        if e and p and e.get("value") and p.get("value"):
            ratio = "%.2f" % (e["value"] / p["value"])
        check = " check " + e["check"] if e and e.get("check") not in (None, "ok") else ""
        out.append("%-12s %-28s %-10s %12s %12s %8s%s" % (key[0], key[1], unit, fmt(e), fmt(p), ratio, check))
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: compare.py EMBER_JSONL PYTORCH_JSONL")
    print(table(sys.argv[1], sys.argv[2]))
