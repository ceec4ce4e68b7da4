#!/usr/bin/python3
"""PyTorch side of Ember's compile category (dev.ember.bench.CompileCases): a model run eagerly against its compiled
form. PyTorch 1.13 compiles inference with TorchScript: torch.jit.freeze(torch.jit.trace(model.eval(), x)).

    /usr/bin/python3 bench/peers/pytorch_compile.py --threads 2 --repeats 5

mlp_infer:    the mlp_mnist model (784-128-10 ReLU) at batch 1 under torch.no_grad(), us/batch: "eager" is the
              nn.Module, "compiled" the frozen TorchScript module.
lenet_infer:  LeNet-5 (1x28x28) at batch 1 and 64, likewise.
train_step:   one training step (zero_grad, forward, loss, backward, step), ms/step, of mlp_mnist at batch 32
              (SGD lr 0.01) and of pytorch_bench.py's transformer (TinyLM, batch 16, sequence 128, causal mask,
              AdamW lr 1e-3 weight decay 0.01): TorchScript does not train, so both the "eager" and the "compiled"
              case run PyTorch eager (the compiled row compares Ember compiled with PyTorch eager).
compile_time: ms of torch.jit.freeze(torch.jit.trace(model.eval(), x)) for mlp_mnist (batch 32), lenet5 (batch 64)
              and the convnet (batch 64), each repeat on a fresh model; the transformer is Ember only.

Weights from torch.manual_seed(0), inputs from torch.Generator().manual_seed(1), as Ember's side (the values do not
matter to the times). Names and units match dev.ember.bench.CompileCases: change both together. The method and
runtime are the shared peer's (launcher.py, quiet.py at $EMBER_PEERS or ../shared/peers), as pytorch_ops.py.
stdout: one JSON object per line; stderr: a table.
"""
import argparse
import json
import statistics
import sys
import time
import shared_peers

shared_peers.add_to_path("pytorch_compile.py", "launcher.py, quiet.py")
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
from torch import nn  # noqa: E402

RUNTIME = launcher.check_runtime(ARGS, torch, threadpoolctl, NT)
LENET_BATCHES = [1, 64]


def selected(workload, case):
    return shared_peers.selected(ARGS.only, workload, case)


def emit(workload, case, metric, unit, vals, info):
    rec = {"workload": workload, "case": case, "side": "pytorch", "threads": NT, "blas": ARGS.blas,
           "alloc": ARGS.alloc, "metric": metric, "unit": unit, "lower_is_better": True,
           "median": statistics.median(vals), "min": min(vals), "max": max(vals), "repeats": len(vals)}
    rec.update(info)
    rec["values"] = vals
    print(json.dumps(rec), flush=True)
    sys.stderr.write("%-12s %-32s thr=%d median=%12.3f  min=%12.3f  max=%12.3f  %s%s\n" % (
        workload, case, NT, rec["median"], rec["min"], rec["max"], unit,
        "  [discarded %d busy repeats]" % info["discarded_repeats"] if info.get("discarded_repeats") else ""))


def latency(workload, case, metric, unit, scale, fn):
    """scale / calls per second of fn (1e6: us per call), as Ember's BenchCase.latency."""
    if not selected(workload, case):
        return
    rates, info = shared_peers.measure(fn, 1.0, ARGS)
    emit(workload, case, metric, unit, [scale / r for r in rates], info)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def lenet():
    """LeNet-5 as Models.lenet5 (features.0/3, classifier.1/3/5)."""
    torch.manual_seed(0)
    features = nn.Sequential(nn.Conv2d(1, 6, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                             nn.MaxPool2d(2))
    classifier = nn.Sequential(nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                               nn.Linear(84, 10))
    return nn.Sequential(features, classifier)


def convnet():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))


class TinyLM(nn.Module):
    """pytorch_bench.py's transformer workload: embedding, 2 post-norm encoder layers, linear head."""

    def __init__(self, vocab=256, d=256, nhead=4, ff=1024, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d_model=d, nhead=nhead, dim_feedforward=ff, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, x, mask=None):
        return self.head(self.enc(self.emb(x), mask=mask))


def torchscript(model, x):
    """PyTorch 1.13's compiled inference: the traced, frozen module."""
    with torch.no_grad():
        return torch.jit.freeze(torch.jit.trace(model.eval(), x))


def infer(workload, case, model, x):
    def call():
        with torch.no_grad():
            model(x)
    latency(workload, case, "latency", "us/batch", 1e6, call)


def train_steps(case, model, opt, loss_fn, data):
    state = {"i": 0}

    def step():
        x, y = data[state["i"] % len(data)]
        state["i"] += 1
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    latency("train_step", case, "step_time", "ms/step", 1e3, step)


def compile_time(name, make, x):
    if not selected("compile_time", name):
        return
    vals = []
    for _ in range(ARGS.repeats):
        model = make()
        t0 = time.perf_counter()
        torchscript(model, x)
        vals.append(1e3 * (time.perf_counter() - t0))
    emit("compile_time", name, "compile_time", "ms", vals, {})


def main():
    print(json.dumps({"workload": "_env", "side": "pytorch", **RUNTIME}), flush=True)
    gen = lambda: torch.Generator().manual_seed(1)  # noqa: E731
    x1 = torch.randn(1, 784, generator=gen())
    infer("mlp_infer", "784-128-10 b=1 eager", mlp().eval(), x1)
    infer("mlp_infer", "784-128-10 b=1 compiled", torchscript(mlp(), x1), x1)
    for b in LENET_BATCHES:
        x = torch.randn(b, 1, 28, 28, generator=gen())
        infer("lenet_infer", "b=%d eager" % b, lenet().eval(), x)
        infer("lenet_infer", "b=%d compiled" % b, torchscript(lenet(), x), x)
    for mode in ("eager", "compiled"):
        torch.manual_seed(0)
        model = mlp()
        g = torch.Generator().manual_seed(0)
        data = [(torch.randn(32, 784, generator=g), torch.randint(0, 10, (32,), generator=g)) for _ in range(8)]
        train_steps("mlp_mnist b=32 " + mode, model, torch.optim.SGD(model.parameters(), lr=0.01),
                    nn.CrossEntropyLoss(), data)
    b, t, v = 16, 128, 256
    mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
    for mode in ("eager", "compiled"):
        torch.manual_seed(0)
        lm = TinyLM(vocab=v).train()
        g = torch.Generator().manual_seed(0)
        seqs = [torch.randint(0, v, (b, t + 1), generator=g) for _ in range(8)]
        data = [(s[:, :-1], s[:, 1:].reshape(-1)) for s in seqs]
        loss = nn.CrossEntropyLoss()
        train_steps("transformer b=16 T=128 " + mode, lambda x: lm(x, mask),
                    torch.optim.AdamW(lm.parameters(), lr=1e-3, weight_decay=0.01),
                    lambda logits, y: loss(logits.reshape(-1, v), y), data)
    compile_time("mlp_mnist", mlp, torch.randn(32, 784, generator=gen()))
    compile_time("lenet5", lenet, torch.randn(64, 1, 28, 28, generator=gen()))
    compile_time("convnet", convnet, torch.randn(64, 3, 32, 32, generator=gen()))


if __name__ == "__main__":
    main()
