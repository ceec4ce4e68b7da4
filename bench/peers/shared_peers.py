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


def measure(fn, units_per_call, args):
    """pytorch_bench.py's measure() for the scripts here: warm up (args.warmup s, at least 2 calls), calibrate calls
    per repeat to ~args.target s, then args.repeats repeats, discarding those during which other processes used more
    than args.foreign_max CPUs (waiting up to args.max_wait s for a quiet machine; args.max_attempts tries per repeat).
    Returns (values in units per second, info). Needs quiet.py on sys.path (add_to_path first)."""
    import time
    import quiet
    waited = quiet.wait_quiet(args.foreign_max, args.max_wait)
    t0 = time.perf_counter()
    n = 0
    while n < 2 or time.perf_counter() - t0 < args.warmup:
        fn()
        n += 1
    k = 1
    while True:
        t = time.perf_counter()
        for _ in range(k):
            fn()
        dt = time.perf_counter() - t
        if dt >= args.target * 0.5:
            break
        k = max(k + 1, min(k * 10, int(k * args.target / max(dt, 1e-9))))
    k = max(1, int(round(k * args.target / dt)))
    vals, dirty = [], []
    attempts, last_dirty = 0, False
    while len(vals) < args.repeats and attempts < args.repeats * args.max_attempts:
        attempts += 1
        if last_dirty and waited < args.max_wait:
            waited += quiet.wait_quiet(args.foreign_max, args.max_wait - waited)
        with quiet.Window() as w:
            t = time.perf_counter()
            for _ in range(k):
                fn()
            dt = time.perf_counter() - t
        v = units_per_call * k / dt
        last_dirty = w.foreign > args.foreign_max
        if last_dirty:
            dirty.append(v)
            if waited >= args.max_wait and len(dirty) >= args.repeats:
                break
            continue
        vals.append(v)
    info = {"calls_per_repeat": k, "discarded_repeats": len(dirty), "quiet_wait_s": round(waited, 2)}
    if len(vals) < max(1, (args.repeats + 1) // 2):
        info["contaminated"] = True
        vals = vals + dirty
    return vals, info


def selected(only, workload, case):
    """Whether --only (a comma list of workloads or 'workload/case' prefixes; empty: all) keeps this case."""
    prefixes = [x for x in only.split(",") if x]
    return not prefixes or any(workload.startswith(p) or (workload + "/" + case).startswith(p) for p in prefixes)


def add_measure_args(p):
    """The options of measure() every peer script takes: repeats, warm-up, target seconds, --only, and the quiet-machine
    limits (foreign CPU share, attempts, wait)."""
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds per case (min 2 calls)")
    p.add_argument("--target", type=float, default=0.4, help="seconds per timed repeat (calibrated)")
    p.add_argument("--only", default="", help="comma list: workloads or 'workload/case' prefixes")
    p.add_argument("--foreign-max", type=float, default=0.1)
    p.add_argument("--max-attempts", type=int, default=4)
    p.add_argument("--max-wait", type=float, default=60.0)
