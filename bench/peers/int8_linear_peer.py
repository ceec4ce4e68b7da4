#!/usr/bin/python3
"""PyTorch side of Ember's dynamic int8 MLP case (dev.ember.bench.Int8LinearBench, bench/int8-linear.sh).

    /usr/bin/python3 bench/peers/int8_linear_peer.py --threads 1,2 --repeats 5

mlp_int8: inference (torch.no_grad) of the MLP 784-256-128-10 (Linear-ReLU-Linear-ReLU-Linear, torch's default
          init, seed 0) on a [b, 784] batch of uniform [0, 1) inputs, b = 1 and 128, in samples/s:
            "b=N f32"                  the float32 model;
            "b=N dynamic_int8 ENGINE"  torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, torch.qint8)
                                       with torch.backends.quantized.engine = ENGINE while quantizing and running
                                       (qnnpack and onednn: the engines this build has; fbgemm is not built).
          Ember's bench reports us/batch: us/batch = 1e6 * b / (samples/s).

The method and runtime are the shared peer's (launcher.py, quiet.py at $EMBER_PEERS or ../shared/peers), as
pytorch_precision.py; measure() is shared_peers.measure(). stdout: one JSON object per line; stderr: a table.
"""
import argparse
import json
import statistics
import sys
import shared_peers

shared_peers.add_to_path("int8_linear_peer.py", "launcher.py, quiet.py")
import launcher  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_args(p)
    shared_peers.add_measure_args(p)
    p.add_argument("--engines", default="qnnpack,onednn", help="comma list of torch.backends.quantized engines")
    return p.parse_args()


ARGS = parse_args()
NT = launcher.relaunch(ARGS, __file__)

import os  # noqa: E402

# torch 1.13's dynamic Linear passes reduce_range=True to qnnpack, which then logs "incorrectly ignores reduce_range"
# to fd 2 on every call (c10 LOG(WARNING), no switch): fd 2 goes to /dev/null and the table to a copy of stderr.
TABLE = os.fdopen(os.dup(2), "w")
_null = os.open(os.devnull, os.O_WRONLY)
os.dup2(_null, 2)
import threadpoolctl  # noqa: E402
import torch  # noqa: E402

RUNTIME = launcher.check_runtime(ARGS, torch, threadpoolctl, NT)
BATCHES = [1, 128]
WIDTHS = [784, 256, 128, 10]


def mlp():
    torch.manual_seed(0)
    layers = []
    for i in range(len(WIDTHS) - 1):
        layers.append(torch.nn.Linear(WIDTHS[i], WIDTHS[i + 1]))
        if i < len(WIDTHS) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).eval()


def throughput(workload, case, metric, unit, units_per_call, fn, extra=None):
    if not shared_peers.selected(ARGS.only, workload, case):
        return
    vals, info = shared_peers.measure(fn, units_per_call, ARGS)
    rec = {"workload": workload, "case": case, "side": "pytorch", "threads": NT, "blas": ARGS.blas,
           "alloc": ARGS.alloc, "metric": metric, "unit": unit, "lower_is_better": False,
           "median": statistics.median(vals), "min": min(vals), "max": max(vals), "repeats": len(vals)}
    rec.update(extra or {})
    rec.update(info)
    rec["values"] = vals
    print(json.dumps(rec), flush=True)
    TABLE.write("%-10s %-28s thr=%d median=%12.1f  min=%12.1f  max=%12.1f  %s  (%.1f us/batch)%s\n" % (
        workload, case, NT, rec["median"], rec["min"], rec["max"], unit, 1e6 * units_per_call / rec["median"],
        "  [discarded %d busy repeats]" % info["discarded_repeats"] if info["discarded_repeats"] else ""))
    TABLE.flush()


def main():
    print(json.dumps({"workload": "_env", "side": "pytorch", **RUNTIME}), flush=True)
    engines = [e for e in ARGS.engines.split(",") if e]
    for e in engines:
        if e not in torch.backends.quantized.supported_engines:
            TABLE.write("int8_linear_peer.py: engine %s not in this torch's %s\n" % (
                e, torch.backends.quantized.supported_engines))
            sys.exit("int8_linear_peer.py: engine %s not in this torch's %s" % (e, torch.backends.quantized.supported_engines))
    f32 = mlp()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for b in BATCHES:
            x = torch.rand(b, WIDTHS[0], generator=gen)
            ref = f32(x)
            throughput("mlp_int8", "b=%d f32" % b, "samples/s", "samples/s", b, lambda m=f32, a=x: m(a))
            for e in engines:
                torch.backends.quantized.engine = e
                q = torch.ao.quantization.quantize_dynamic(mlp(), {torch.nn.Linear}, dtype=torch.qint8)
                diff = float((q(x) - ref).abs().max() / ref.abs().max())
                throughput("mlp_int8", "b=%d dynamic_int8 %s" % (b, e), "samples/s", "samples/s", b,
                           lambda m=q, a=x: m(a), {"engine": e, "max_rel_diff": diff})


if __name__ == "__main__":
    main()
