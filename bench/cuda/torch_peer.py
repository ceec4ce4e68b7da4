#!/usr/bin/env python3
"""PyTorch on one NVIDIA GPU: the peer numbers for Ember's CUDA backend (dev.ember.cuda.bench.CudaBench
prints the same records for Ember). Run by scripts/gpu-check; by hand:

    python3 bench/cuda/torch_peer.py                  # everything, ~1-2 min on an H100/H200
    python3 bench/cuda/torch_peer.py --only gemm,h2d  # a subset (prefix match on the workload)
    python3 bench/cuda/torch_peer.py --device cpu --quick   # a smoke run of the script itself

stdout: one JSON object per line. First {"workload": "_env", device, driver, cuda, torch}, then:
  gemm         torch.mm TFLOP/s: bf16 8192^3, f32 4096^3 (TF32 off) and tf32 4096^3; 3 warm-ups,
               then the mean (and min/max) of 10 calls each timed with torch.cuda.Event
  h2d          host-to-device copy of 256 MiB, GB/s (1e9 bytes/s): pinned (non_blocking) and pageable;
               2 warm-ups, mean of 10 timed copies
  training     samples/s (tokens/s for the transformer) of the workloads of bench/peers/pytorch_bench.py
               (shared/peers), data already on the device, f32 (TF32 off) and bf16 autocast: warm-up
               (3 steps and --warmup s), then steps for about --seconds, between torch.cuda.synchronize()s
Without a CUDA device (and no --device cpu) it prints the _env line and {"skipped": "no CUDA device"}.
"""
import argparse
import json
import math
import subprocess
import sys
import time
import traceback

import torch
import torch.nn as nn

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu for a smoke run")
p.add_argument("--seconds", type=float, default=1.0, help="timed seconds per training configuration")
p.add_argument("--warmup", type=float, default=1.0, help="warm-up seconds per training configuration (min 3 steps)")
p.add_argument("--only", default="", help="comma list of workload prefixes: gemm,h2d,mlp_mnist,seed_small,...")
p.add_argument("--quick", action="store_true", help="small sizes and short timings (tests the script)")
ARGS = p.parse_args()
DEV = torch.device(ARGS.device if ARGS.device != "cuda" else "cuda:0")
CUDA = DEV.type == "cuda"


def selected(name):
    only = [x for x in ARGS.only.split(",") if x]
    return not only or any(name.startswith(x) for x in only)


def emit(rec):
    print(json.dumps(rec), flush=True)


def sync():
    if CUDA:
        torch.cuda.synchronize(DEV)


def set_tf32(on):
    """TF32 for float32 matmuls and convolutions (PyTorch's own default: matmul off, cuDNN on).
    set_float32_matmul_precision is the one switch every torch since 1.12 keeps; cuDNN's has no such
    twin, so its legacy flag is tried, then the fp32_precision API of torch 2.9+."""
    torch.set_float32_matmul_precision("high" if on else "highest")
    try:
        torch.backends.cudnn.allow_tf32 = on
    except Exception:  # noqa: BLE001 (torch 2.9+ may refuse mixing the legacy and the new API)
        try:
            torch.backends.cudnn.conv.fp32_precision = "tf32" if on else "ieee"
        except Exception as e:  # noqa: BLE001
            sys.stderr.write("torch_peer: cannot set cuDNN TF32 to %s: %s\n" % (on, e))


class Timer:
    """Times one call: torch.cuda.Event pairs on a GPU (read after the run), perf_counter on the CPU."""

    def __init__(self):
        self.pairs = []

    def time(self, fn):
        if CUDA:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            self.pairs.append((start, end))
        else:
            t = time.perf_counter()
            fn()
            self.pairs.append(time.perf_counter() - t)

    def seconds(self):
        sync()
        if CUDA:
            return [s.elapsed_time(e) / 1e3 for s, e in self.pairs]
        return list(self.pairs)


def env():
    rec = {"workload": "_env", "side": "pytorch", "torch": torch.__version__, "cuda": torch.version.cuda,
           "device": None, "driver": None}
    if CUDA and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(DEV)
        rec.update(device=props.name, capability="%d.%d" % (props.major, props.minor),
                   memory_gib=round(props.total_memory / 2**30, 1), sms=props.multi_processor_count)
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader",
                                  "-i", str(DEV.index or 0)], capture_output=True, text=True, timeout=30)
            rec["driver"] = out.stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            pass
        try:  # the CUDA version the driver supports, e.g. 13000 -> "13.0"
            v = torch._C._cuda_getDriverVersion()
            rec["cuda_driver"] = "%d.%d" % (v // 1000, v % 1000 // 10)
        except (AttributeError, RuntimeError):
            pass
    elif not CUDA:
        rec["device"] = "cpu"
    return rec


# ---------------------------------------------------------------- GEMM and copies

def bench_gemm(name, dtype, n, tf32):
    set_tf32(tf32)
    g = torch.Generator(device=DEV).manual_seed(0)
    a = torch.randn(n, n, device=DEV, dtype=dtype, generator=g)
    b = torch.randn(n, n, device=DEV, dtype=dtype, generator=g)
    for _ in range(3):
        torch.mm(a, b)
    timer = Timer()
    for _ in range(10):
        timer.time(lambda: torch.mm(a, b))
    secs = timer.seconds()
    tflops = [2.0 * n ** 3 / s / 1e12 for s in secs]
    emit({"workload": "gemm", "case": "%s %d^3" % (name, n), "dtype": name, "m": n, "n": n, "k": n,
          "metric": "TFLOP/s", "value": sum(tflops) / len(tflops), "min": min(tflops), "max": max(tflops),
          "ms_mean": 1e3 * sum(secs) / len(secs), "calls": len(secs), "call": "torch.mm(a, b)",
          "tf32": tf32, "float32_matmul_precision": torch.get_float32_matmul_precision()})
    set_tf32(False)


def bench_h2d(pinned, nbytes):
    if not CUDA:
        return
    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
    if pinned:
        src = src.pin_memory()
    dst = torch.empty(nbytes, dtype=torch.uint8, device=DEV)
    for _ in range(2):
        dst.copy_(src, non_blocking=pinned)
    timer = Timer()
    for _ in range(10):
        timer.time(lambda: dst.copy_(src, non_blocking=pinned))
    secs = timer.seconds()
    gbs = [nbytes / s / 1e9 for s in secs]
    emit({"workload": "h2d", "case": "pinned" if pinned else "pageable", "bytes": nbytes, "metric": "GB/s",
          "value": sum(gbs) / len(gbs), "min": min(gbs), "max": max(gbs), "ms_mean": 1e3 * sum(secs) / len(secs),
          "copies": len(secs), "call": "dst.copy_(src, non_blocking=%s)" % pinned})


# ---------------------------------------------------------------- training workloads
# The models and optimizers below are copied from shared/peers/pytorch_bench.py (the CPU peer of
# Ember's benchmark suite) without change, so CPU and GPU numbers are of the same networks.

SEED_HIDDEN = {"small": 512, "medium": 2048, "large": 6656}


def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9), "SGD(lr=0.01, momentum=0.9)"
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3), "Adam(lr=1e-3)"
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3), "AdamW(lr=1e-3, weight_decay=0.01)"
    raise ValueError(name)


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


def configurations():
    """(workload, case, batch, units per step, optimizer name, model factory, batch factory) as
    pytorch_bench.py runs and names them (its cases get the precision appended): mlp_mnist SGD(lr=0.01)
    at batch 32 and 128; seed_* at 32 and 128 with SGD-momentum and Adam (its AdamW rows left out for
    time); lenet b=64 Adam; convnet b=64 SGD-momentum; transformer b=16 T=128 AdamW."""
    def images(shape):
        return lambda b: (torch.randn((b,) + shape, device=DEV), torch.randint(0, 10, (b,), device=DEV))

    def tokens(b, T=128, V=256):
        s = torch.randint(0, V, (b, T + 1), device=DEV)
        return s[:, :-1], s[:, 1:]

    for b in (32, 128):
        yield ("mlp_mnist", "train b=%d" % b, b, b, "sgd-plain",
               lambda: nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)), images((784,)))
    for size in ("small", "medium", "large"):
        h = 64 if ARGS.quick else SEED_HIDDEN[size]
        for b in (32, 128):
            for opt in ("sgd", "adam"):
                yield ("seed_" + size, "train b=%d %s" % (b, opt), b, b, opt,
                       lambda h=h: nn.Sequential(nn.Linear(1024, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                                                 nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 10)),
                       images((1024,)))
    yield ("lenet", "train b=64 adam", 64, 64, "adam", LeNet, images((1, 28, 28)))
    yield ("convnet", "train b=64 sgd-mom", 64, 64, "sgd", make_convnet, images((3, 32, 32)))
    yield ("transformer", "train b=16 T=128 adamw", 16, 16 * 128, "adamw", TinyLM, tokens)


def bench_training(workload, case, batch, units, oname, make_model, make_batch, precision):
    set_tf32(False)
    torch.manual_seed(0)
    if CUDA and hasattr(DEV, "__enter__"):  # torch 2+: initialise the weights on the GPU (seed_large: 95M)
        with DEV:
            model = make_model()
    else:
        model = make_model().to(DEV)
    model.train()
    if oname == "sgd-plain":
        opt, odesc = torch.optim.SGD(model.parameters(), lr=0.01), "SGD(lr=0.01)"
    else:
        opt, odesc = make_optimizer(oname, model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    data = [make_batch(batch) for _ in range(4)]
    lm = workload == "transformer"
    mask = torch.triu(torch.full((128, 128), float("-inf"), device=DEV), diagonal=1) if lm else None
    bf16 = precision == "bf16"
    state = {"i": 0}

    def step():
        x, y = data[state["i"] % len(data)]
        state["i"] += 1
        opt.zero_grad()
        with torch.autocast(DEV.type, dtype=torch.bfloat16, enabled=bf16):
            out = model(x, mask) if lm else model(x)
            loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()

    # warm-up: at least 3 steps and --warmup s (as the CPU suite); its pace sizes the timed run
    warm, t0 = 0, time.perf_counter()
    while warm < 3 or time.perf_counter() - t0 < min(ARGS.warmup, ARGS.seconds):
        step()
        warm += 1
        if warm % 5 == 0 or warm == 3:
            sync()
    sync()
    per_step = (time.perf_counter() - t0) / warm
    steps = max(3, int(math.ceil(ARGS.seconds / per_step)))
    t = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    secs = time.perf_counter() - t
    unit = "tokens/s" if lm else "samples/s"
    emit({"workload": workload, "case": "%s %s" % (case, precision), "batch": batch,
          "precision": precision, "optimizer": odesc, "metric": unit, "value": units * steps / secs,
          "steps": steps, "seconds": secs, "ms_per_step": 1e3 * secs / steps,
          "params": sum(q.numel() for q in model.parameters())})


FAILED = []


def guarded(workload, case, fn, *args):
    """Runs one measurement; an exception (out of memory, a missing kernel) becomes an error record
    and the next measurement still runs."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        FAILED.append((workload, case))
        emit({"workload": workload, "case": case, "error": "%s: %s" % (type(e).__name__, e)})
        traceback.print_exc()
        if CUDA:
            torch.cuda.empty_cache()


def main():
    rec = env()
    emit(rec)
    if CUDA and rec["device"] is None:
        emit({"skipped": "no CUDA device", "torch_cuda_available": torch.cuda.is_available()})
        return 0
    if CUDA:
        torch.cuda.set_device(DEV)
    t0 = time.perf_counter()
    if selected("gemm"):
        big, mid = (256, 128) if ARGS.quick else (8192, 4096)
        guarded("gemm", "bf16 %d^3" % big, bench_gemm, "bf16", torch.bfloat16, big, False)
        guarded("gemm", "f32 %d^3" % mid, bench_gemm, "f32", torch.float32, mid, False)
        guarded("gemm", "tf32 %d^3" % mid, bench_gemm, "tf32", torch.float32, mid, True)
    if selected("h2d"):
        nbytes = (1 if ARGS.quick else 256) << 20
        guarded("h2d", "pinned", bench_h2d, True, nbytes)
        guarded("h2d", "pageable", bench_h2d, False, nbytes)
    for workload, case, batch, units, oname, make_model, make_batch in configurations():
        if selected(workload):
            for precision in ("f32", "bf16"):
                guarded(workload, "%s %s" % (case, precision), bench_training,
                        workload, case, batch, units, oname, make_model, make_batch, precision)
    sys.stderr.write("torch_peer: done in %.1f s%s\n" % (
        time.perf_counter() - t0, ", %d failed: %s" % (len(FAILED), FAILED) if FAILED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
