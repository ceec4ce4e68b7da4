#!/usr/bin/python3
"""PyTorch side of Ember's compression category (dev.ember.bench.CompressionCases): inference without autograd
(torch.no_grad) of a model and of its compressed form, microseconds per batch (lower is better).

    /usr/bin/python3 bench/peers/pytorch_compression.py --threads 2 --repeats 5 [--qengine qnnpack|onednn]

mlp_infer:     the Fashion-MNIST MLP 784-256-128-10 (Flatten, Linear, ReLU, ...) at batch 1 and 128, float32 against
               torch.ao.quantization.quantize_dynamic with per_channel_dynamic_qconfig (qint8 weights per output
               channel, as Ember's Quantize.dynamic; activations quantized per batch) on the quantized engine
               --qengine: torch 1.13 here has qnnpack and onednn, no fbgemm; onednn, the default, is the faster
               (2026-11-28, 2 threads: b=128 0.3 ms against qnnpack's 8.9 ms, b=1 equal).
lenet_infer:   LeNet-5 (1x28x28) at batch 1 and 128, unpruned against the model Ember's 50% structured pruning leaves
               after shrinking (conv 1->3->8 channels, Linear 200-60-42-10). torch.nn.utils.prune.ln_structured only
               zeroes channels (the model keeps its shape and its time), so the smaller model is built directly.
int8_static:   the MLP and LeNet-5 after static post-training int8: eager mode, Linear/Conv2d + ReLU fused,
               QuantStub/DeQuantStub, MinMaxObserver quint8 activations and per-channel symmetric qint8 weights
               (Ember's QConfig.ptqDefault), 4 calibration batches of 32 from Generator(3), on --qengine.
convnet_infer: the VGG-style convnet (Models.convnet(3, 32, 10)) at batch 64: unfused eval model,
               torch.ao.quantization.fuse_modules of each conv+bn (bn_folded), and of conv+bn+relu and linear+relu
               (bn_relu_fused: in float, ConvReLU2d folds the BatchNorm but still runs the ReLU as its own op).

Weights from torch.manual_seed(0), inputs from torch.Generator().manual_seed(1), as Ember's side. Names and units
match dev.ember.bench.CompressionCases: change both together. The method and runtime are the shared peer's
(launcher.py, quiet.py at $EMBER_PEERS or ../shared/peers), as pytorch_ops.py. stdout: one JSON object per line;
stderr: a table.
"""
import argparse
import json
import statistics
import sys
import shared_peers

shared_peers.add_to_path("pytorch_compression.py", "launcher.py, quiet.py")
import launcher  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_args(p)
    shared_peers.add_measure_args(p)
    p.add_argument("--qengine", default=QENGINE, choices=["qnnpack", "onednn"],
                   help="torch.backends.quantized.engine of the int8 cases (default %(default)s)")
    return p.parse_args()


# the faster engine for the dynamic int8 MLP on this machine (BENCHMARKS.md, compression)
QENGINE = "onednn"
ARGS = parse_args()
NT = launcher.relaunch(ARGS, __file__)

import threadpoolctl  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

RUNTIME = launcher.check_runtime(ARGS, torch, threadpoolctl, NT)
MLP_BATCHES = [1, 128]
LENET_BATCHES = [1, 128]
CONVNET_BATCH = 64


def selected(workload, case):
    return shared_peers.selected(ARGS.only, workload, case)


def latency(workload, case, fn):
    """us per call of fn, as Ember's BenchCase.latency: measured in calls/s, reported as 1e6 / value."""
    if not selected(workload, case):
        return
    rates, info = shared_peers.measure(fn, 1.0, ARGS)
    vals = [1e6 / r for r in rates]
    rec = {"workload": workload, "case": case, "side": "pytorch", "threads": NT, "blas": ARGS.blas,
           "alloc": ARGS.alloc, "metric": "latency", "unit": "us/batch", "lower_is_better": True,
           "median": statistics.median(vals), "min": min(vals), "max": max(vals), "repeats": len(vals),
           "qengine": ARGS.qengine}
    rec.update(info)
    rec["values"] = vals
    print(json.dumps(rec), flush=True)
    sys.stderr.write("%-14s %-36s thr=%d median=%12.3f  min=%12.3f  max=%12.3f  us/batch%s\n" % (
        workload, case, NT, rec["median"], rec["min"], rec["max"],
        "  [discarded %d busy repeats]" % info["discarded_repeats"] if info["discarded_repeats"] else ""))


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10)).eval()


def lenet(c1=6, c2=16, h1=120, h2=84):
    """LeNet-5 as Models.lenet5 (features.0/3, classifier.1/3/5), with the given channel and neuron counts."""
    torch.manual_seed(0)
    features = nn.Sequential(nn.Conv2d(1, c1, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(c1, c2, 5), nn.ReLU(),
                             nn.MaxPool2d(2))
    classifier = nn.Sequential(nn.Flatten(), nn.Linear(c2 * 25, h1), nn.ReLU(), nn.Linear(h1, h2), nn.ReLU(),
                               nn.Linear(h2, 10))
    return nn.Sequential(features, classifier).eval()


def convnet():
    torch.manual_seed(0)
    m = nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for bn in m.modules():
            if isinstance(bn, nn.BatchNorm2d):
                c = bn.num_features
                bn.running_mean.copy_(torch.rand(c, generator=gen) - 0.5)
                bn.running_var.copy_(torch.rand(c, generator=gen) * 1.5 + 0.5)
                bn.weight.copy_(torch.rand(c, generator=gen) * 1.5 + 0.25)
                bn.bias.copy_(torch.rand(c, generator=gen) - 0.5)
    return m.eval()


class Stubbed(nn.Module):
    """A float model between QuantStub and DeQuantStub, as eager-mode static quantization needs."""

    def __init__(self, m):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.m = m
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.m(self.quant(x)))


def static_int8(model, fuse, in_shape):
    """Static PTQ as Ember's CompressionCases.staticInt8: Linear/Conv2d + ReLU fused, MinMaxObserver (per-tensor
    affine quint8) activations, PerChannelMinMaxObserver (per-channel symmetric qint8) weights, 4 calibration batches
    of 32 standard-normal inputs from Generator(3), converted on the current engine."""
    q = torch.ao.quantization
    m = Stubbed(q.fuse_modules(model, fuse))
    m.qconfig = q.QConfig(activation=q.MinMaxObserver.with_args(dtype=torch.quint8, qscheme=torch.per_tensor_affine),
                          weight=q.PerChannelMinMaxObserver.with_args(dtype=torch.qint8,
                                                                      qscheme=torch.per_channel_symmetric))
    p = q.prepare(m.eval())
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _ in range(4):
            p(torch.randn(32, *in_shape, generator=gen))
    return q.convert(p)


def main():
    print(json.dumps({"workload": "_env", "side": "pytorch", "qengine": ARGS.qengine, **RUNTIME}), flush=True)
    torch.backends.quantized.engine = ARGS.qengine
    f32 = mlp()
    # per-channel qint8 weights, as Ember's Quantize.dynamic
    int8 = torch.ao.quantization.quantize_dynamic(mlp(), {nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig},
                                                  dtype=torch.qint8)
    mlp_static = static_int8(mlp(), [["1", "2"], ["3", "4"]], (784,))
    unpruned = lenet()
    shrunk = lenet(3, 8, 60, 42)
    lenet_static = static_int8(lenet(), [["0.0", "0.1"], ["0.3", "0.4"], ["1.1", "1.2"], ["1.3", "1.4"]], (1, 28, 28))
    cb = "b=%d" % CONVNET_BATCH
    unfused = convnet()
    folded = torch.ao.quantization.fuse_modules(convnet(), [["0", "1"], ["3", "4"], ["7", "8"], ["10", "11"]])
    fused = torch.ao.quantization.fuse_modules(convnet(), [["0", "1", "2"], ["3", "4", "5"], ["7", "8", "9"],
                                                            ["10", "11", "12"], ["15", "16"]])
    with torch.no_grad():
        for b in MLP_BATCHES:
            x = torch.randn(b, 784, generator=torch.Generator().manual_seed(1))
            latency("mlp_infer", "784-256-128-10 b=%d f32" % b, lambda x=x: f32(x))
            latency("mlp_infer", "784-256-128-10 b=%d int8_dynamic" % b, lambda x=x: int8(x))
            latency("mlp_infer", "784-256-128-10 b=%d int8_static" % b, lambda x=x: mlp_static(x))
        for b in LENET_BATCHES:
            x = torch.randn(b, 1, 28, 28, generator=torch.Generator().manual_seed(1))
            latency("lenet_infer", "b=%d unpruned" % b, lambda x=x: unpruned(x))
            latency("lenet_infer", "b=%d pruned50_shrunk" % b, lambda x=x: shrunk(x))
            latency("lenet_infer", "b=%d int8_static" % b, lambda x=x: lenet_static(x))
        x = torch.randn(CONVNET_BATCH, 3, 32, 32, generator=torch.Generator().manual_seed(1))
        latency("convnet_infer", cb + " unfused", lambda: unfused(x))
        latency("convnet_infer", cb + " bn_folded", lambda: folded(x))
        latency("convnet_infer", cb + " bn_relu_fused", lambda: fused(x))


if __name__ == "__main__":
    main()
