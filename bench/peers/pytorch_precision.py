#!/usr/bin/python3
"""PyTorch side of Ember's precision category (dev.ember.bench.PrecisionCases): mixed precision on the CPU.

    /usr/bin/python3 bench/peers/pytorch_precision.py --threads 2 --repeats 5

convert:        x.to(dtype) of 16M elements, float32 -> bfloat16 / float16 and back, in GB/s of bytes read plus
                written (6 per element).
linear_fwd:     F.linear(x, W) of seed_large's hidden layer (W 6656 x 6656, no bias) at batch 32 and 128 on
                float32 tensors and on bfloat16 ones (GFLOP/s, 2 b 6656^2 per call).
linear_fwd_bwd: that layer forward and backward (dX and dW: 6 b 6656^2 flops per call) with a float32 weight,
                in float32 and under torch.autocast("cpu", dtype=torch.bfloat16), whose casts of x and W the
                call includes, as a training step pays them.
seed_large_step: a whole training step (SGD lr 0.01 momentum 0.9, cross-entropy, 2 pre-made batches) of
                pytorch_bench.py's seed_large MLP (1024-6656-6656-6656-10 ReLU) at batch 32 and 128, in float32
                and with its forward and loss under torch.autocast("cpu", dtype=torch.bfloat16), samples/s.

Names, units and byte/flop counts match dev.ember.bench.PrecisionCases: change both together. The method
and runtime are the shared peer's (launcher.py, quiet.py at $EMBER_PEERS or ../shared/peers), as
pytorch_ops.py. stdout: one JSON object per line; stderr: a table.
"""
import argparse
import json
import statistics
import sys
import shared_peers

shared_peers.add_to_path("pytorch_precision.py", "launcher.py, quiet.py")
import launcher  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_args(p)
    shared_peers.add_measure_args(p)
    return p.parse_args()


ARGS = parse_args()
NT = launcher.relaunch(ARGS, __file__)

import threadpoolctl  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

RUNTIME = launcher.check_runtime(ARGS, torch, threadpoolctl, NT)
CONVERT_N = 1 << 24
WIDTH = 6656
BATCHES = [32, 128]


def measure(fn, units_per_call):
    return shared_peers.measure(fn, units_per_call, ARGS)


def selected(workload, case):
    return shared_peers.selected(ARGS.only, workload, case)


def throughput(workload, case, metric, unit, units_per_call, fn):
    if not selected(workload, case):
        return
    vals, info = measure(fn, units_per_call)
    rec = {"workload": workload, "case": case, "side": "pytorch", "threads": NT, "blas": ARGS.blas,
           "alloc": ARGS.alloc, "metric": metric, "unit": unit, "lower_is_better": False,
           "median": statistics.median(vals), "min": min(vals), "max": max(vals), "repeats": len(vals)}
    rec.update(info)
    rec["values"] = vals
    print(json.dumps(rec), flush=True)
    sys.stderr.write("%-14s %-36s thr=%d median=%12.3f  min=%12.3f  max=%12.3f  %s%s\n" % (
        workload, case, NT, rec["median"], rec["min"], rec["max"], unit,
        "  [discarded %d busy repeats]" % info["discarded_repeats"] if info["discarded_repeats"] else ""))


def main():
    print(json.dumps({"workload": "_env", "side": "pytorch", **RUNTIME}), flush=True)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(CONVERT_N, generator=gen)
    xb = x.to(torch.bfloat16)
    xh = x.to(torch.float16)
    gb = CONVERT_N * 6.0 / 1e9
    for name, src, dt in (("f32_to_bf16", x, torch.bfloat16), ("bf16_to_f32", xb, torch.float32),
                          ("f32_to_f16", x, torch.float16), ("f16_to_f32", xh, torch.float32)):
        throughput("convert", name + " n=16M", "gbps", "GB/s", gb, lambda s=src, d=dt: s.to(d))
    del x, xb, xh
    w = torch.randn(WIDTH, WIDTH, generator=torch.Generator().manual_seed(2)) * 0.01
    wb = w.to(torch.bfloat16)
    with torch.no_grad():
        for b in BATCHES:
            xs = torch.randn(b, WIDTH, generator=torch.Generator().manual_seed(3))
            xsb = xs.to(torch.bfloat16)
            gflop = 2.0 * b * WIDTH * WIDTH / 1e9
            throughput("linear_fwd", "b=%d f32" % b, "gflops", "GFLOP/s", gflop, lambda a=xs: F.linear(a, w))
            throughput("linear_fwd", "b=%d bf16" % b, "gflops", "GFLOP/s", gflop, lambda a=xsb: F.linear(a, wb))
    del wb
    wp = w.clone().requires_grad_(True)
    for b in BATCHES:
        xp = torch.randn(b, WIDTH, generator=torch.Generator().manual_seed(3)).requires_grad_(True)
        gflop = 6.0 * b * WIDTH * WIDTH / 1e9

        def step(autocast, xp=xp):
            xp.grad = None
            wp.grad = None
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = F.linear(xp, wp).sum()
            loss.backward()

        throughput("linear_fwd_bwd", "b=%d f32" % b, "gflops", "GFLOP/s", gflop, lambda: step(False))
        throughput("linear_fwd_bwd", "b=%d bf16_autocast" % b, "gflops", "GFLOP/s", gflop, lambda: step(True))
    del wp, w
    for b in BATCHES:
        for mode, case in (("f32", "train b=%d sgd f32"), ("bf16_autocast", "train b=%d sgd bf16_autocast")):
            if not selected("seed_large_step", case % b):
                continue
            torch.manual_seed(0)
            h = WIDTH
            model = torch.nn.Sequential(torch.nn.Linear(1024, h), torch.nn.ReLU(), torch.nn.Linear(h, h),
                                        torch.nn.ReLU(), torch.nn.Linear(h, h), torch.nn.ReLU(),
                                        torch.nn.Linear(h, 10))
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            lossf = torch.nn.CrossEntropyLoss()
            data = [(torch.randn(b, 1024), torch.randint(0, 10, (b,))) for _ in range(2)]
            it = [0]

            def train_step(model=model, opt=opt, lossf=lossf, data=data, it=it, ac=(mode != "f32")):
                xb, yb = data[it[0] % len(data)]
                it[0] += 1
                opt.zero_grad()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ac):
                    loss = lossf(model(xb), yb)
                loss.backward()
                opt.step()

            throughput("seed_large_step", case % b, "samples/s", "samples/s", b, train_step)
            del model, opt, data, train_step


if __name__ == "__main__":
    main()
