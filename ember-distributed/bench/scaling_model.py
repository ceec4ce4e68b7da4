"""The scaling model of docs/distributed-scaling.md, filled in from the recorded benchmarks.

    /usr/bin/python3 ember-distributed/bench/scaling_model.py [--training bench/baseline/training.jsonl]
                                                              [--distributed bench/baseline/distributed.jsonl]

Step time of data-parallel SGD on N machines at a fixed global batch B (strong scaling):

    step(N) = compute(B / N) + max(0, allreduce(N) - overlap(N))
    allreduce(N) = 2 (N - 1) / N * bytes / bandwidth + buckets * 2 (N - 1) * latency
    overlap(N) = min(hidden * allreduce(N), backward(B / N)),  backward = 2/3 of compute

- compute(b): one Ember training step (SGD momentum, 2 threads) of the seed MLP at per-machine batch b, from the
  training record's samples/s at b = 32 and b = 128: time(b) = time(32) + (b - 32) * (time(128) - time(32)) / 96,
  extended below 32 on the same line (its intercept is the per-step cost that does not shrink with the batch).
- bytes: the float32 gradients, 4 x parameters; buckets = ceil(bytes / 25 MiB), each an allreduce with its own
  2 (N - 1) latency steps.
- bandwidth: per link, 1 GbE = 0.117 GB/s and 10 GbE = 1.17 GB/s (line rate less Ethernet/IP/TCP framing); the
  "Ember's ring" rows cap 10 GbE at the bus bandwidth Ember's ring reached on loopback (2 processes, the largest
  size, the record's median; --ring-bw adds rows for other rates): its copies and summation, which a faster wire does
  not remove.
- latency: per ring step, Ember's measured 1 KiB allreduce time at 2 processes / 2 (software), plus 50 us per network
  hop for 1/10 GbE (an assumed switch + TCP round trip).
- hidden: the measured fraction of DDP's allreduce time hidden under backward (seed_medium, 2 processes).

Prints Markdown: the inputs, then per workload and network the step time and speed-up over one machine for
N = 1..64 at the fixed global batch, and the N of the fastest step (where it stops scaling); then the same with the
batch per machine fixed (global batch growing with N): samples/s and the efficiency against one machine.

"""
import argparse
import json
import math
import os
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = {"seed_small": 512, "seed_medium": 2048, "seed_large": 6656}
GLOBAL_BATCH = 128
NS = [1, 2, 4, 8, 16, 32, 64]
BUCKET = 25 * 2 ** 20
HOP_US = 50.0


def params(h):
    return 1024 * h + h + 2 * (h * h + h) + h * 10 + 10


def read(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--training", default=os.path.join(ROOT, "bench", "baseline", "training.jsonl"))
    p.add_argument("--distributed", default=os.path.join(ROOT, "bench", "baseline", "distributed.jsonl"))
    p.add_argument("--ring-bw", type=float, action="append", default=[],
                   help="GB/s: another rate of Ember's ring to cap 10 GbE with (repeatable), beside the recorded one")
    a = p.parse_args()
    train = {(r["workload"], r["case"]): r for r in read(a.training)}
    dist = {(r["workload"], r["case"]): r for r in read(a.distributed)}
    sizes = sorted((k for k in dist if k[0] == "allreduce" and k[1].startswith("np=2 ")),
                   key=lambda k: float(k[1].split()[1]) * {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20}[k[1].split()[2]])
    loop_bw = dist[sizes[-1]]["ember"]  # GB/s bus, the largest size
    small = dist[("allreduce", "np=2 1 KiB")]
    lat_sw = 1024 / (small["ember"] * 1e9) / 2  # at W=2 bus = bytes / t; the ring takes 2 (W-1) = 2 steps
    hidden = dist[("ddp_seed_medium", "train b=128 2 proc x 1 thread allreduce hidden")]["ember"] / 100
    lat = lat_sw + HOP_US * 1e-6
    nets = [("1 GbE", min(0.117, loop_bw), lat), ("10 GbE", 1.17, lat),
            ("10 GbE, Ember's ring at %.2f GB/s" % loop_bw, min(1.17, loop_bw), lat)]
    nets += [("10 GbE, Ember's ring at %.2f GB/s" % bw, min(1.17, bw), lat) for bw in a.ring_bw]
    print("Inputs: loopback bus bandwidth %.3f GB/s (np=2, %s), software latency %.0f us per ring step (np=2 1 KiB),"
          " %.0f%% of DDP's allreduce hidden under backward (seed_medium, np=2)." % (
              loop_bw, sizes[-1][1].split(" ", 1)[1], lat_sw * 1e6, 100 * hidden))
    print()
    for w, h in SEEDS.items():
        t32 = 32 / train[(w, "train b=32 sgd")]["ember"]
        t128 = 128 / train[(w, "train b=128 sgd")]["ember"]
        slope = (t128 - t32) / 96

        def compute(b):
            return max(t32 + (b - 32) * slope, 1e-6)

        nbytes = 4 * params(h)
        buckets = math.ceil(nbytes / BUCKET)
        print("**%s** (%.1fM parameters, %.1f MB of gradients, %d bucket%s; compute at b=128 %.1f ms, b=32 %.1f ms):"
              % (w, params(h) / 1e6, nbytes / 1e6, buckets, "s" if buckets > 1 else "", t128 * 1e3, t32 * 1e3))
        print()
        print("Fixed global batch %d (step time, speed-up over one machine):" % GLOBAL_BATCH)
        print()
        print("| network | " + " | ".join("N=%d" % n for n in NS) + " | fastest at |")
        print("|---|" + "---:|" * len(NS) + "---|")
        for name, bw, lat in nets:
            cells = []
            best = (None, float("inf"))
            for n in NS:
                c = compute(GLOBAL_BATCH / n)
                ar = 0.0 if n == 1 else 2 * (n - 1) / n * nbytes / (bw * 1e9) + buckets * 2 * (n - 1) * lat
                overlap = min(hidden * ar, 2 / 3 * c)
                step = c + max(0.0, ar - overlap)
                if step < best[1]:
                    best = (n, step)
                cells.append("%.0f ms (%.2fx)" % (step * 1e3, t128 / step) if step >= 0.01 else
                             "%.1f ms (%.2fx)" % (step * 1e3, t128 / step))
            print("| %s | %s | N=%d |" % (name, " | ".join(cells), best[0]))
        print()
        print("Batch %d per machine (global %d x N; samples/s, efficiency = one machine's step time / this step time):"
              % (GLOBAL_BATCH, GLOBAL_BATCH))
        print()
        print("| network | " + " | ".join("N=%d" % n for n in NS) + " | beats one machine from |")
        print("|---|" + "---:|" * len(NS) + "---|")

        def weak_step(n, bw, lat):
            ar = 0.0 if n == 1 else 2 * (n - 1) / n * nbytes / (bw * 1e9) + buckets * 2 * (n - 1) * lat
            return t128 + max(0.0, ar - min(hidden * ar, 2 / 3 * t128))

        for name, bw, lat in nets:
            cells = []
            for n in NS:
                step = weak_step(n, bw, lat)
                cells.append("%.0f (%.0f%%)" % (GLOBAL_BATCH * n / step, 100 * t128 / step))
            even = next((n for n in range(2, 4097) if n * t128 / weak_step(n, bw, lat) > 1), None)
            print("| %s | %s | %s |" % (name, " | ".join(cells), "N=%d" % even if even else "never (N <= 4096)"))
        # 90% efficiency at large N: (1 - hidden) * 2 bytes / bw <= t128 / 9 while the overlap fits in backward
        need = 2 * nbytes * 9 * (1 - hidden) / t128 / 1e9
        print()
        print("90%% efficiency at large N needs about %.1f GB/s per link (2 x %.0f MB per step with %.0f%% hidden)."
              % (need, nbytes / 1e6, 100 * hidden))
        print()


if __name__ == "__main__":
    main()
