#!/usr/bin/python3
"""PyTorch side of the memory category of bench/compare.py: one training workload per fresh process.

    /usr/bin/python3 bench/peers/pytorch_memory.py seed_large --threads 2 --warmup-steps 5 --steps 20

Builds the workload's model, optimizer and batches, runs --warmup-steps then --steps training steps
(zero_grad, forward, loss, backward, step) and prints, as JSON lines in the format of the other peers
(unit MB, lower is better):
  "peak RSS, CASE"  VmHWM of /proc/self/status: the most resident memory the process ever had
  "start RSS"       VmRSS after torch is imported and its threads set, before the model is built
One case per workload, the one with the most state (the same as dev.ember.bench.MemoryProbe.CASES):
batch 128 and Adam for the MLPs, the only case of the others.

The models, data and optimizers are re-declared here, identical to the shared peer
../shared/peers/pytorch_bench.py (bench_mlp_mnist, bench_seed, LeNet, make_convnet, TinyLM,
make_batches, train_step_fn): importing that script would run its argument parsing and relaunch
on import. Change both together. The runtime is the shared launcher's (launcher.py: a fresh child
per thread count with OMP/OpenBLAS threads, OpenMP OpenBLAS and jemalloc with freed memory kept),
found at $EMBER_PEERS or ../shared/peers relative to the repository root.
"""
import argparse
import json
import sys
import time

CASES = {
    "mlp_mnist": "train b=128",
    "seed_small": "train b=128 adam",
    "seed_medium": "train b=128 adam",
    "seed_large": "train b=128 adam",
    "lenet": "train b=64 adam",
    "convnet": "train b=64 sgd-mom",
    "transformer": "train b=16 T=128 adamw",
}
import shared_peers

shared_peers.add_to_path("pytorch_memory.py", "launcher.py")
import launcher  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_args(p)
    p.add_argument("workload", choices=list(CASES))
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.warmup_steps < 0 or a.steps < 1:
        p.error("--warmup-steps must be >= 0 and --steps >= 1")
    return a


ARGS = parse_args()
NT = launcher.relaunch(ARGS, __file__)

import threadpoolctl  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

RUNTIME = launcher.check_runtime(ARGS, torch, threadpoolctl, NT)


def status_mb(field):
    """A field of /proc/self/status ("VmHWM", "VmRSS") in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                v = line.split()
                if len(v) != 3 or v[2] != "kB":
                    sys.exit("pytorch_memory.py: unexpected /proc/self/status line %r" % line)
                return int(v[1]) / 1024.0
    sys.exit("pytorch_memory.py: /proc/self/status has no %s line" % field)


# ------------------------------------------------ models: as in ../shared/peers/pytorch_bench.py

def train_step_fn(model, opt, loss_fn, batches):
    state = {"i": 0}

    def step():
        x, y = batches[state["i"] % len(batches)]
        state["i"] += 1
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def make_batches(shape, n_classes, batch, count=8):
    return [(torch.randn((batch,) + tuple(shape)), torch.randint(0, n_classes, (batch,))) for _ in range(count)]


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def make_convnet():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))


class TinyLM(nn.Module):
    def __init__(self, vocab=256, d=256, nhead=4, ff=1024, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d_model=d, nhead=nhead, dim_feedforward=ff,
                                           dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, x, mask=None):
        return self.head(self.enc(self.emb(x), mask=mask))


SEED_HIDDEN = {"seed_small": 512, "seed_medium": 2048, "seed_large": 6656}


def build(workload):
    """The step of CASES[workload], built as pytorch_bench.py builds it."""
    torch.manual_seed(ARGS.seed)
    ce = nn.CrossEntropyLoss()
    if workload == "mlp_mnist":
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
        return train_step_fn(model, torch.optim.SGD(model.parameters(), lr=0.01), ce, make_batches((784,), 10, 128))
    if workload in SEED_HIDDEN:
        h = SEED_HIDDEN[workload]
        model = nn.Sequential(nn.Linear(1024, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                              nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 10))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        return train_step_fn(model, opt, ce, make_batches((1024,), 10, 128, count=2 if h == 6656 else 8))
    if workload == "lenet":
        model = LeNet()
        return train_step_fn(model, torch.optim.Adam(model.parameters(), lr=1e-3), ce, make_batches((1, 28, 28), 10, 64))
    if workload == "convnet":
        model = make_convnet()
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        return train_step_fn(model, opt, ce, make_batches((3, 32, 32), 10, 64))
    if workload == "transformer":
        b, T, V = 16, 128, 256
        model = TinyLM(vocab=V)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        seqs = [torch.randint(0, V, (b, T + 1)) for _ in range(8)]
        state = {"i": 0}

        def step():
            s = seqs[state["i"] % len(seqs)]
            state["i"] += 1
            x, y = s[:, :-1], s[:, 1:]
            opt.zero_grad()
            loss = ce(model(x, mask).reshape(-1, V), y.reshape(-1))
            loss.backward()
            opt.step()
        return step
    raise ValueError(workload)


def record(case, metric, mb, extra):
    rec = {"workload": ARGS.workload, "case": case, "side": "pytorch", "threads": NT, "metric": metric, "unit": "MB",
           "lower_is_better": True, "median": mb, "min": mb, "max": mb, "repeats": 1}
    rec.update(extra)
    rec["values"] = [mb]
    return json.dumps(rec)


def main():
    case = CASES[ARGS.workload]
    start = status_mb("VmRSS")
    step = build(ARGS.workload)
    t0 = time.perf_counter()
    for _ in range(ARGS.warmup_steps):
        step()
    t1 = time.perf_counter()
    for _ in range(ARGS.steps):
        step()
    t2 = time.perf_counter()
    peak = status_mb("VmHWM")
    extra = {"warmup_steps": ARGS.warmup_steps, "steps": ARGS.steps, "warmup_s": t1 - t0,
             "s_per_step": (t2 - t1) / ARGS.steps}
    print(json.dumps({"workload": "_env", "side": "pytorch", **RUNTIME}), flush=True)
    print(record("peak RSS, " + case, "peak_rss_mb", peak, extra), flush=True)
    print(record("start RSS", "start_rss_mb", start, extra), flush=True)
    sys.stderr.write("%-12s %-28s peak RSS %8.1f MB  start RSS %7.1f MB  (%d+%d steps, %.3f s/step)\n" % (
        ARGS.workload, case, peak, start, ARGS.warmup_steps, ARGS.steps, (t2 - t1) / ARGS.steps))


if __name__ == "__main__":
    main()
