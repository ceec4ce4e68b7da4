#!/usr/bin/python3
"""Where a training step's time goes, by op: aggregates `jfr print --events jdk.ExecutionSample --stack-depth 512`
output (bench/profile-step.sh makes it) over the samples of one thread (default "main", the thread that runs the
step), each sample keyed by what it was doing:

  B <rule> / <op>  inside a backward rule (the frame just above autograd.Node.apply) and, under it, the outermost
                   dev.ember.ops/nn frame the rule called (e.g. "B ops.LinalgOps.lambda$linear2d$0 /
                   ops.LinalgOps.weightGrad": a linear layer's weight gradient)
  OPT <method>     inside an optimizer (dev.ember.optim)
  F <module> / <op> the forward: the innermost dev.ember.nn frame (the module or functional) and the outermost
                   dev.ember.ops frame under it

Prints the share of the thread's samples per key, most first; with --step-ms M also that share of an M ms step.
Worker threads' samples (the other half of a parallel kernel) carry no caller, so shares are of the calling thread.
"""
import argparse
import collections
import re
import sys

FRAME = re.compile(r"^\s+([\w.$<>]+)\([^)]*\)\s+line:", re.M)
THREAD = re.compile(r'sampledThread = "([^"]*)"')


def key(frames):
    """The key of one sample's frames (innermost first, 'dev.ember.' stripped)."""
    if "autograd.Node.apply" in frames:
        i = frames.index("autograd.Node.apply")
        under = [f for f in frames[:i - 1] if f.startswith(("ops.", "nn."))] if i > 0 else []
        return "B %s / %s" % (frames[i - 1] if i > 0 else "?", under[-1] if under else "")
    opt = [f for f in frames if f.startswith("optim.")]
    if opt:
        return "OPT " + opt[0]
    nn = [f for f in frames if f.startswith("nn.")]
    ops = [f for f in frames if f.startswith("ops.")]
    return "F %s / %s" % (nn[0] if nn else "", ops[-1] if ops else frames[0])


def aggregate(text, thread="main", within=None):
    """Counter of keys over the samples of `thread` (whose stack holds `within`, if given) and their number."""
    counts = collections.Counter()
    n = 0
    for event in text.split("jdk.ExecutionSample")[1:]:
        m = THREAD.search(event)
        if not m or m.group(1) != thread:
            continue
        frames = [f.replace("dev.ember.", "") for f in FRAME.findall(event)]
        if not frames or (within and not any(within in f for f in frames)):
            continue
        n += 1
        counts[key(frames)] += 1
    return counts, n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("samples", help="the output of jfr print --events jdk.ExecutionSample --stack-depth 512")
    p.add_argument("--thread", default="main", help="the sampled thread's name (default main)")
    p.add_argument("--within", default=None, help="only samples with a frame containing this (e.g. TrainingCases)")
    p.add_argument("--step-ms", type=float, default=None, help="also print each share of a step of this many ms")
    p.add_argument("--top", type=int, default=40, help="keys printed (default 40)")
    a = p.parse_args(argv)
    with open(a.samples, encoding="utf-8") as f:
        counts, n = aggregate(f.read(), a.thread, a.within)
    if n == 0:
        print("profile_by_op: no samples of thread %r%s" % (a.thread, " within " + a.within if a.within else ""),
              file=sys.stderr)
        return 1
    print("%d samples of thread %s" % (n, a.thread))
    for k, c in counts.most_common(a.top):
        share = 100.0 * c / n
        ms = "  %7.2f ms" % (a.step_ms * c / n) if a.step_ms else ""
        print("%6.1f%%%s  %s" % (share, ms, k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
