#!/usr/bin/python3
"""PyTorch side of the Ember workloads that the shared peer (pytorch_bench.py) does not cover.

    /usr/bin/python3 bench/peers/pytorch_ops.py --suite ops --threads 2 --repeats 5
    /usr/bin/python3 bench/peers/pytorch_ops.py --suite gemm --threads 1,2

--suite ops:  relu, add, sigmoid, exp, a*x+b, sum, softmax (rows of 1024) forward at 1M and 64K
              elements; forward+backward ("gradient ops") of relu/sigmoid/tanh/softmax/sum/mean/
              max over dim 1/add/mul on [n x n] and of an n x n matmul, n = 64, 256, 1024; autograd
              tape overhead (100 adds on a [4] tensor, per op).
--suite gemm: the sgemm shapes beyond pytorch_bench.py's: (128x6656)@(6656x6656) and the two
              transposed backward GEMMs of the 784-128 layer at batch 128.
--suite nn:   attention (B=1, H=8, D=64) forward at T=128..4096, forward+backward at T=128..1024,
              and its memory per forward call; one LSTM layer (128 -> 256, batch 32, 32 steps);
              conv2d forward+backward at LeNet-5 and VGG shapes and a depthwise 3x3; forward+backward of
              a GRU layer (as the LSTM), conv1d, ConvTranspose2d, LayerNorm, GroupNorm, BatchNorm2d
              (training), a 2x2 max pool, an embedding (32k x 512) and cross-entropy over 32k classes
              (dev.ember.bench.NnCases.layers for the shapes).
--suite optim: optimizer.step() of SGD(momentum 0.9), Adam, AdamW, RMSprop, Adagrad on one f32
              parameter of 1M and 16M elements with a fixed gradient, as GB/s of state touched
              (20 or 28 B/elem, see OptimCases); one CosineAnnealingLR step (us/call). Lion has no
              torch 1.13 optimizer, so the Ember side runs it alone.
--suite losses: forward+backward (us/call) of each torch.nn.functional loss Ember also has, at
              classification ([128x10], [128x1000]), regression ([128x1], [4096]) and embedding
              ([128x128]) sizes; see dev.ember.bench.LossCases.
--suite schedulers: one lr_scheduler step() (us/call) on SGD(momentum 0.9) with 4 param groups;
              see dev.ember.bench.ScheduleCases.
--suite metrics: scikit-learn's metric functions on one batch of 128 (10 classes), from torch
              tensors: what a PyTorch user calls for the numbers ember-train's metrics give (torch
              1.13 has no metrics library); see dev.ember.bench.MetricCases.
--list        print the suite's "workload/case" names and exit (no measuring, no relaunch).

The names of the ops, losses, schedulers and metrics suites are also committed, one
"suite<TAB>workload/case" per line, in ember-bench/src/test/resources/dev/ember/bench/peer_cases.tsv
(regenerate with peer_cases.sh beside it). ember-bench's tests check the Java side against that
file, and every run of those suites here checks this side against it, so the two cannot drift apart.

Workload and case names, units and byte counts match dev.ember.bench.OpsCases / GemmCases / NnCases /
OptimCases in
ember-bench: change both together. The method and runtime are the shared peer's: launcher.py
(fresh child per thread count, OMP/OpenBLAS threads, OpenMP OpenBLAS, jemalloc) and quiet.py
(repeats disturbed by other processes are discarded), found at $EMBER_PEERS or ../shared/peers
relative to the repository root. stdout: one JSON object per line; stderr: a table.
"""
import argparse
import json
import os
import statistics
import sys
import shared_peers

shared_peers.add_to_path("pytorch_ops.py", "launcher.py, quiet.py")
import launcher  # noqa: E402


DEFAULT_SIZES = "1048576,65536"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_args(p)
    p.add_argument("--suite", choices=["ops", "gemm", "nn", "optim", "losses", "schedulers", "metrics"], required=True)
    p.add_argument("--list", action="store_true", help="print the suite's workload/case names and exit")
    shared_peers.add_measure_args(p)
    p.add_argument("--sizes", default=DEFAULT_SIZES, help="ops: element counts of the forward cases")
    return p.parse_args()


ARGS = parse_args()
NT = 1 if ARGS.list else launcher.relaunch(ARGS, __file__)

import threadpoolctl  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

RUNTIME = None if ARGS.list else launcher.check_runtime(ARGS, torch, threadpoolctl, NT)
LISTED = []  # (workload, case) of every case a suite defines, filled in --list mode instead of measuring
CASES_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "ember-bench", "src", "test", "resources", "dev", "ember", "bench", "peer_cases.tsv")
CHECKED_SUITES = ("ops", "losses", "schedulers", "metrics")
COLS = 1024
CHAIN = 100
GRAD_SIZES = [64, 256, 1024]


def measure(fn, units_per_call):
    return shared_peers.measure(fn, units_per_call, ARGS)


def selected(workload, case):
    return shared_peers.selected(ARGS.only, workload, case)


def emit(workload, case, metric, unit, vals, info, lower_is_better, extra=None):
    rec = {"workload": workload, "case": case, "side": "pytorch", "threads": NT, "blas": ARGS.blas,
           "alloc": ARGS.alloc, "metric": metric, "unit": unit, "lower_is_better": lower_is_better,
           "median": statistics.median(vals), "min": min(vals), "max": max(vals), "repeats": len(vals)}
    rec.update(info)
    rec["values"] = vals
    if extra:
        rec.update(extra)
    print(json.dumps(rec), flush=True)
    sys.stderr.write("%-10s %-40s thr=%d median=%12.3f  min=%12.3f  max=%12.3f  %s%s\n" % (
        workload, case, NT, rec["median"], rec["min"], rec["max"], unit,
        "  [discarded %d busy repeats]" % info["discarded_repeats"] if info["discarded_repeats"] else ""))


def throughput(workload, case, metric, unit, units_per_call, fn, extra=None):
    if ARGS.list:
        LISTED.append((workload, case))
    elif selected(workload, case):
        vals, info = measure(fn, units_per_call)
        emit(workload, case, metric, unit, vals, info, False, extra)


def latency(workload, case, metric, unit, per_call, fn):
    """Measured as calls/s, reported as per_call / (calls/s), e.g. 1e6 -> us/call."""
    if ARGS.list:
        LISTED.append((workload, case))
    elif selected(workload, case):
        vals, info = measure(fn, 1.0)
        emit(workload, case, metric, unit, [per_call / v for v in vals], info, True)


def size_name(n):
    if n % (1 << 20) == 0:
        return "%dM" % (n >> 20)
    return "%dK" % (n >> 10) if n % 1024 == 0 else str(n)


def suite_ops():
    gen = torch.Generator().manual_seed(0)
    for n in [int(s) for s in ARGS.sizes.split(",") if s]:
        c = "fwd n=" + size_name(n)
        gb = n * 4.0 / 1e9
        x = torch.randn(n // COLS, COLS, generator=gen)
        y = torch.randn(n // COLS, COLS, generator=gen)
        throughput("relu", c, "gbps", "GB/s", 2 * gb, lambda: torch.relu(x))
        throughput("add", c, "gbps", "GB/s", 3 * gb, lambda: x.add(y))
        throughput("sigmoid", c, "gbps", "GB/s", 2 * gb, lambda: torch.sigmoid(x))
        throughput("exp", c, "gbps", "GB/s", 2 * gb, lambda: torch.exp(x))
        throughput("axpb", c, "gbps", "GB/s", 2 * gb, lambda: x.mul(1.5).add(0.5))
        throughput("sum", c, "gbps", "GB/s", gb, lambda: x.sum())
        throughput("softmax", c.replace("fwd", "fwd rows=1024"), "gbps", "GB/s", 2 * gb, lambda: torch.softmax(x, 1))
        del x, y

    for n in GRAD_SIZES:
        bc = "fwd+bwd [%dx%d]" % (n, n)
        ones = torch.ones(n, n)
        for name, op, scalar_out in [("relu", torch.relu, False), ("sigmoid", torch.sigmoid, False),
                                     ("tanh", torch.tanh, False), ("softmax", lambda t: torch.softmax(t, 1), False),
                                     ("sum", torch.sum, True), ("mean", torch.mean, True)]:
            x = torch.randn(n, n, generator=gen).requires_grad_(True)

            def step(x=x, op=op, scalar_out=scalar_out, ones=ones):
                x.grad = None
                out = op(x)
                if scalar_out:
                    out.backward()
                else:
                    out.backward(ones)
            latency(name, bc, "latency_us", "us/call", 1e6, step)

        xm = torch.randn(n, n, generator=gen).requires_grad_(True)
        ones_n = torch.ones(n)

        def max_step(x=xm, up=ones_n):
            x.grad = None
            torch.max(x, 1).values.backward(up)
        latency("max", bc.replace("fwd+bwd", "fwd+bwd dim=1"), "latency_us", "us/call", 1e6, max_step)

        a = torch.randn(n, n, generator=gen).requires_grad_(True)
        b = torch.randn(n, n, generator=gen).requires_grad_(True)
        for name, op in [("add", torch.add), ("mul", torch.mul)]:
            def bin_step(a=a, b=b, op=op, ones=ones):
                a.grad = None
                b.grad = None
                op(a, b).backward(ones)
            latency(name, bc, "latency_us", "us/call", 1e6, bin_step)

        def mm_step(a=a, b=b, ones=ones):
            a.grad = None
            b.grad = None
            a.matmul(b).backward(ones)
        latency("matmul", "fwd+bwd (%dx%d)@(%dx%d)" % (n, n, n, n), "latency_us", "us/call", 1e6, mm_step)
        del a, b, xm

    x4 = torch.randn(4, generator=gen).requires_grad_(True)
    c4 = torch.ones(4)
    g4 = torch.ones(4)

    def chain():
        x4.grad = None
        y = x4
        for _ in range(CHAIN):
            y = y.add(c4)
        y.backward(g4)
    latency("tape", "add chain x%d [4] fwd+bwd per op" % CHAIN, "latency_ns", "ns/op", 1e9 / CHAIN, chain)


def suite_gemm():
    gen = torch.Generator().manual_seed(0)
    # (case, stored A shape, stored B shape, transpose A, transpose B); C = op(A) @ op(B) via torch.mm
    # on transposed views, which OpenBLAS receives as a transpose flag (no copy), as Ember's sgemm does
    shapes = [("(128x6656)@(6656x6656)", (128, 6656), (6656, 6656), False, False),
              ("(128x784)^T@(128x128)", (128, 784), (128, 128), True, False),
              ("(128x128)@(784x128)^T", (128, 128), (784, 128), False, True)]
    for case, sa, sb, ta, tb in shapes:
        a = torch.randn(*sa, generator=gen)
        b = torch.randn(*sb, generator=gen)
        oa = a.t() if ta else a
        ob = b.t() if tb else b
        m, k = oa.shape
        n = ob.shape[1]
        throughput("sgemm", case, "gflops", "GFLOP/s", 2.0 * m * n * k / 1e9, lambda: torch.mm(oa, ob),
                   {"m": m, "k": k, "n": n, "call": "torch.mm on transposed views (allocates result)"})
        del a, b, oa, ob


HEADS, HEAD_DIM = 8, 64


def attn_shape(t):
    return "B=1 H=%d T=%d D=%d" % (HEADS, t, HEAD_DIM)


def attention(q, k, v):
    """softmax(q k^T / sqrt(d)) v: torch 1.13 has no fused scaled_dot_product_attention."""
    s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / q.shape[-1] ** 0.5)
    return torch.matmul(torch.softmax(s, -1), v)


def peak_alloc_mb(fn):
    """Peak of the bytes allocated and not yet freed during one call, from the profiler's memory
    records (top-level ops' net allocations and the [memory] frees, in time order). Allocator-
    independent: jemalloc keeps freed pages, so the process's peak RSS would not move."""
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    cur = peak = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        if e.cpu_parent is None or e.name == "[memory]":
            cur += e.cpu_memory_usage
            peak = max(peak, cur)
    return peak / 1e6


def suite_nn():
    gen = torch.Generator().manual_seed(0)
    for t in [128, 256, 512, 1024, 2048, 4096]:
        q, k, v = (torch.randn(1, HEADS, t, HEAD_DIM, generator=gen) for _ in range(3))
        with torch.no_grad():
            latency("attention", "fwd " + attn_shape(t), "latency_ms", "ms/call", 1e3, lambda: attention(q, k, v))
        del q, k, v
    for t in [128, 256, 512, 1024]:
        q, k, v = (torch.randn(1, HEADS, t, HEAD_DIM, generator=gen).requires_grad_(True) for _ in range(3))
        up = torch.ones(1, HEADS, t, HEAD_DIM)

        def step(q=q, k=k, v=v, up=up):
            q.grad = k.grad = v.grad = None
            attention(q, k, v).backward(up)
        latency("attention", "fwd+bwd " + attn_shape(t), "latency_ms", "ms/call", 1e3, step)
        del q, k, v
    for t in [1024, 2048, 4096]:
        case = "fwd " + attn_shape(t)
        if not selected("attention_mem", case):
            continue
        q, k, v = (torch.randn(1, HEADS, t, HEAD_DIM, generator=gen) for _ in range(3))
        with torch.no_grad():
            vals = [peak_alloc_mb(lambda: attention(q, k, v)) for _ in range(ARGS.repeats)]
        emit("attention_mem", case, "megabytes", "MB", vals,
             {"calls_per_repeat": 1, "discarded_repeats": 0, "quiet_wait_s": 0}, True,
             {"method": "peak live bytes allocated in the call (torch.profiler)"})
        del q, k, v
    shape = "in=128 hidden=256 batch=32 steps=32"
    lstm = torch.nn.LSTM(128, 256)
    x = torch.randn(32, 32, 128, generator=gen)
    with torch.no_grad():
        latency("lstm", "fwd " + shape, "latency_ms", "ms/call", 1e3, lambda: lstm(x)[0])
    xg = x.clone().requires_grad_(True)
    up = torch.ones(32, 32, 256)

    def lstm_step():
        lstm.zero_grad(set_to_none=True)
        xg.grad = None
        lstm(xg)[0].backward(up)
    latency("lstm", "fwd+bwd " + shape, "latency_ms", "ms/call", 1e3, lstm_step)
    conv_case(gen, "lenet1", 32, 1, 28, 6, 5, 0, 1, True)
    conv_case(gen, "lenet2", 32, 6, 14, 16, 5, 0, 1, True)
    conv_case(gen, "vgg", 8, 64, 56, 64, 3, 1, 1, False)
    conv_case(gen, "vgg", 8, 64, 56, 64, 3, 1, 1, True)
    conv_case(gen, "depthwise", 8, 64, 56, 64, 3, 1, 64, True)
    nn_layers()


def fwd_bwd(workload, case, f, leaves):
    """Forward + backward of f() in ms/call, as NnCases.fwdBwd: the leaves' gradients dropped, then backward with
    a gradient of ones (made on the first call), or backward() for a scalar."""
    if not selected(workload, case) and not ARGS.list:
        return
    up = []

    def step():
        for t in leaves:
            t.grad = None
        y = f()
        if y.numel() == 1:
            y.backward()
        else:
            if not up:
                up.append(torch.ones_like(y))
            y.backward(up[0])
    latency(workload, case, "latency_ms", "ms/call", 1e3, step)


def nn_layers():
    """The rows of NnCases.layers(): the layers issue #40 found missing from the nn category."""
    gen = torch.Generator().manual_seed(31)
    shape = "in=128 hidden=256 batch=32 steps=32"
    gru = torch.nn.GRU(128, 256)
    x = torch.randn(32, 32, 128, generator=gen)
    with torch.no_grad():
        latency("gru", "fwd " + shape, "latency_ms", "ms/call", 1e3, lambda: gru(x)[0])
    xg = x.clone().requires_grad_(True)
    up = torch.ones(32, 32, 256)

    def gru_step():
        gru.zero_grad(set_to_none=True)
        xg.grad = None
        gru(xg)[0].backward(up)
    latency("gru", "fwd+bwd " + shape, "latency_ms", "ms/call", 1e3, gru_step)

    def leaf(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).requires_grad_(True)
    x1, w1, b1 = leaf(16, 128, 512), leaf(128, 128, 3, scale=0.05), leaf(128)
    fwd_bwd("conv1d", "fwd+bwd N=16 128x512 -> 128 k3 p1", lambda: F.conv1d(x1, w1, b1, 1, 1), [x1, w1, b1])
    xt, wt, bt = leaf(16, 64, 16, 16), leaf(64, 32, 4, 4, scale=0.05), leaf(32)
    fwd_bwd("conv_transpose2d", "fwd+bwd N=16 64x16x16 -> 32 k4 s2 p1",
            lambda: F.conv_transpose2d(xt, wt, bt, 2, 1), [xt, wt, bt])
    xl, wl, bl = leaf(4096, 1024), torch.ones(1024, requires_grad=True), torch.zeros(1024, requires_grad=True)
    fwd_bwd("layer_norm", "fwd+bwd [4096x1024]", lambda: F.layer_norm(xl, (1024,), wl, bl), [xl, wl, bl])
    xg2, wg, bg = leaf(8, 64, 56, 56), torch.ones(64, requires_grad=True), torch.zeros(64, requires_grad=True)
    fwd_bwd("group_norm", "fwd+bwd N=8 64x56x56 groups=32", lambda: F.group_norm(xg2, 32, wg, bg), [xg2, wg, bg])
    xb, wb, bb = leaf(64, 32, 32, 32), torch.ones(32, requires_grad=True), torch.zeros(32, requires_grad=True)
    mean, var = torch.zeros(32), torch.ones(32)
    fwd_bwd("batch_norm", "fwd+bwd train N=64 32x32x32",
            lambda: F.batch_norm(xb, mean, var, wb, bb, True, 0.1, 1e-5), [xb, wb, bb])
    xp = leaf(64, 32, 32, 32)
    fwd_bwd("max_pool2d", "fwd+bwd N=64 32x32x32 k2", lambda: F.max_pool2d(xp, 2), [xp])
    table = leaf(32000, 512)
    tokens = torch.randint(0, 32000, (4096,), generator=gen)
    fwd_bwd("embedding", "fwd+bwd vocab=32000 dim=512 tokens=4096", lambda: F.embedding(tokens, table), [table])
    logits = leaf(512, 32000)
    target = torch.randint(0, 32000, (512,), generator=gen)
    fwd_bwd("cross_entropy", "fwd+bwd [512x32000]", lambda: F.cross_entropy(logits, target), [logits])


def conv_name(tag, n, c, hw, o, k, pad, groups, backward):
    return "%s %s N=%d %dx%dx%d -> %d k%d%s%s" % ("fwd+bwd" if backward else "fwd", tag, n, c, hw, hw, o, k,
                                                   " p%d" % pad if pad else "", " g%d" % groups if groups > 1 else "")


def conv_case(gen, tag, n, c, hw, o, k, pad, groups, backward):
    name = conv_name(tag, n, c, hw, o, k, pad, groups, backward)
    if not selected("conv2d", name):
        return
    x = torch.randn(n, c, hw, hw, generator=gen).requires_grad_(backward)
    w = (torch.randn(o, c // groups, k, k, generator=gen) * 0.1).requires_grad_(backward)
    b = torch.randn(o, generator=gen).requires_grad_(backward)
    if not backward:
        with torch.no_grad():
            latency("conv2d", name, "latency_ms", "ms/call", 1e3,
                    lambda: torch.nn.functional.conv2d(x, w, b, 1, pad, 1, groups))
        return
    up = torch.ones(n, o, hw + 2 * pad - k + 1, hw + 2 * pad - k + 1)

    def step():
        x.grad = w.grad = b.grad = None
        torch.nn.functional.conv2d(x, w, b, 1, pad, 1, groups).backward(up)
    latency("conv2d", name, "latency_ms", "ms/call", 1e3, step)


# (workload, bytes of state touched per f32 element, constructor): as dev.ember.bench.OptimCases
OPTIMIZERS = [
    ("sgd", 20, lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9)),
    ("adam", 28, lambda ps: torch.optim.Adam(ps, lr=1e-3)),
    ("adamw", 28, lambda ps: torch.optim.AdamW(ps, lr=1e-3)),
    ("rmsprop", 20, lambda ps: torch.optim.RMSprop(ps, lr=1e-3)),
    ("adagrad", 20, lambda ps: torch.optim.Adagrad(ps, lr=1e-3)),
]
OPTIM_SIZES = [1 << 20, 1 << 24]
T_MAX = 1000


def suite_optim():
    gen = torch.Generator().manual_seed(0)
    for n in OPTIM_SIZES:
        case = "step n=%s f32" % size_name(n)
        for name, bpe, make in OPTIMIZERS:
            if not selected(name, case):
                continue
            p = torch.nn.Parameter(torch.randn(n, generator=gen))
            p.grad = torch.randn(n, generator=gen)
            opt = make([p])
            throughput(name, case, "gbps", "GB/s", n * bpe / 1e9, opt.step)
            del p, opt
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.1)
    p.grad = torch.zeros(1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=T_MAX, eta_min=0.0)
    opt.step()  # after the scheduler wrapped it: it warns when it steps before the optimizer ever has
    latency("cosine_annealing", "schedule step T_max=%d" % T_MAX, "latency_us", "us/call", 1e6, sched.step)


def loss_case(name, shape, x, fn):
    """Forward+backward of one loss call, fn(x), on the leaf x (its grad dropped before each call)."""
    x.requires_grad_(True)

    def step():
        x.grad = None
        fn(x).backward()
    latency(name, "fwd+bwd " + shape, "latency_us", "us/call", 1e6, step)


def signs(gen, n):
    return torch.randint(0, 2, (n,), generator=gen).float() * 2 - 1


def suite_losses():
    """As dev.ember.bench.LossCases (focal, poly, sigmoid_focal and dice are Ember only)."""
    gen = torch.Generator().manual_seed(0)
    batch, flat, embed = 128, 4096, 128
    for c in [10, 1000]:
        shape = "[%dx%d]" % (batch, c)
        labels = torch.randint(0, c, (batch,), generator=gen)
        multi = torch.randint(0, 2, (batch, c), generator=gen).float()
        probs = torch.softmax(torch.randn(batch, c, generator=gen), 1)

        def logits():
            return torch.randn(batch, c, generator=gen)
        loss_case("cross_entropy", shape, logits(), lambda x: F.cross_entropy(x, labels))
        loss_case("nll", shape, torch.log_softmax(logits(), 1), lambda x: F.nll_loss(x, labels))
        loss_case("kl_div", shape, torch.log_softmax(logits(), 1), lambda x: F.kl_div(x, probs, reduction="batchmean"))
        loss_case("bce", shape, torch.sigmoid(logits()), lambda x: F.binary_cross_entropy(x, multi))
        loss_case("bce_with_logits", shape, logits(), lambda x: F.binary_cross_entropy_with_logits(x, multi))
    for dims in [(batch, 1), (flat,)]:
        shape = "[%s]" % "x".join(str(d) for d in dims)
        target = torch.randn(*dims, generator=gen)
        for name, fn in [("mse", F.mse_loss), ("l1", F.l1_loss), ("smooth_l1", F.smooth_l1_loss),
                         ("huber", F.huber_loss)]:
            loss_case(name, shape, torch.randn(*dims, generator=gen), lambda x, fn=fn, t=target: fn(x, t))
    s = signs(gen, flat)
    loss_case("hinge_embedding", "[%d]" % flat, torch.randn(flat, generator=gen),
              lambda x: F.hinge_embedding_loss(x, s))
    other = torch.randn(flat, generator=gen)
    loss_case("margin_ranking", "[%d]" % flat, torch.randn(flat, generator=gen),
              lambda x: F.margin_ranking_loss(x, other, s))
    emb = "[%dx%d]" % (batch, embed)
    e2 = torch.randn(batch, embed, generator=gen)
    e3 = torch.randn(batch, embed, generator=gen)
    row_signs = signs(gen, batch)
    loss_case("cosine_embedding", emb, torch.randn(batch, embed, generator=gen),
              lambda x: F.cosine_embedding_loss(x, e2, row_signs))
    loss_case("triplet_margin", emb, torch.randn(batch, embed, generator=gen),
              lambda x: F.triplet_margin_loss(x, e2, e3))


SCHED_GROUPS = 4


def sched_optimizer():
    """SGD(lr 0.1, momentum 0.9) over SCHED_GROUPS groups of one [4] parameter each, as ScheduleCases."""
    groups = [{"params": [torch.nn.Parameter(torch.zeros(4))]} for _ in range(SCHED_GROUPS)]
    return torch.optim.SGD(groups, lr=0.1, momentum=0.9)


def suite_schedulers():
    """As dev.ember.bench.ScheduleCases; linear_warmup is Ember's LinearWarmup, here the SequentialLR of
    the same values."""
    L = torch.optim.lr_scheduler
    case = "step %d groups" % SCHED_GROUPS

    def warmup_cosine(o):
        return L.SequentialLR(o, [L.LinearLR(o, 0.1, 1.0, 100), L.CosineAnnealingLR(o, 1000, 0.0)], [100])
    specs = [
        ("step", lambda o: L.StepLR(o, 30, 0.1)),
        ("multi_step", lambda o: L.MultiStepLR(o, [30, 80, 120], 0.1)),
        ("exponential", lambda o: L.ExponentialLR(o, 0.999)),
        ("cosine_annealing", lambda o: L.CosineAnnealingLR(o, 1000, 0.0)),
        ("cosine_warm_restarts", lambda o: L.CosineAnnealingWarmRestarts(o, 100, 2, 0.0)),
        ("linear", lambda o: L.LinearLR(o, 1.0 / 3, 1.0, 1000)),
        ("constant", lambda o: L.ConstantLR(o, 1.0 / 3, 1000)),
        ("polynomial", lambda o: L.PolynomialLR(o, 1000, 2.0)),
        ("lambda", lambda o: L.LambdaLR(o, lambda t: 0.99 ** t)),
        ("one_cycle", lambda o: L.OneCycleLR(o, 0.1, total_steps=10 ** 9)),
        ("cyclic", lambda o: L.CyclicLR(o, 0.001, 0.1, step_size_up=2000)),
        ("sequential", warmup_cosine),
        ("linear_warmup", warmup_cosine),
    ]
    for name, make in specs:
        opt = sched_optimizer()
        sched = make(opt)
        opt.step()  # after the scheduler wrapped it: it warns when it steps before the optimizer ever has
        latency(name, case, "latency_us", "us/call", 1e6, sched.step)
    plateau = L.ReduceLROnPlateau(sched_optimizer())
    latency("reduce_on_plateau", case, "latency_us", "us/call", 1e6, lambda: plateau.step(1.0))


def suite_metrics():
    """As dev.ember.bench.MetricCases: scikit-learn on torch tensors (MeanMetric is Ember only)."""
    import numpy as np
    from sklearn import metrics as M
    from sklearn.preprocessing import label_binarize
    gen = torch.Generator().manual_seed(0)
    batch, classes = 128, 10
    logits = torch.randn(batch, classes, generator=gen)
    labels = torch.randint(0, classes, (batch,), generator=gen)
    probs = torch.softmax(logits, 1)
    scores = torch.sigmoid(torch.randn(batch, generator=gen))
    binary = torch.randint(0, 2, (batch,), generator=gen)
    pred = torch.randn(batch, generator=gen)
    truth = torch.randn(batch, generator=gen)
    lab = np.arange(classes)
    cls = "update+compute b=%d c=%d" % (batch, classes)
    bin_ = "update+compute b=%d binary" % batch
    reg = "update+compute b=%d" % batch

    def argmax():
        return logits.argmax(1).numpy()
    specs = [
        ("accuracy", cls, lambda: M.accuracy_score(labels.numpy(), argmax())),
        ("top5_accuracy", cls, lambda: M.top_k_accuracy_score(labels.numpy(), logits.numpy(), k=5, labels=lab)),
        ("precision_macro", cls, lambda: M.precision_score(labels.numpy(), argmax(), labels=lab, average="macro",
                                                           zero_division=0)),
        ("recall_macro", cls, lambda: M.recall_score(labels.numpy(), argmax(), labels=lab, average="macro",
                                                     zero_division=0)),
        ("f1_macro", cls, lambda: M.f1_score(labels.numpy(), argmax(), labels=lab, average="macro", zero_division=0)),
        ("fbeta2_macro", cls, lambda: M.fbeta_score(labels.numpy(), argmax(), beta=2.0, labels=lab, average="macro",
                                                    zero_division=0)),
        ("confusion_matrix", cls, lambda: M.confusion_matrix(labels.numpy(), argmax(), labels=lab)),
        ("roc_auc_ovr_macro", cls, lambda: M.roc_auc_score(labels.numpy(), probs.numpy(), multi_class="ovr",
                                                           average="macro", labels=lab)),
        ("map", cls, lambda: M.average_precision_score(label_binarize(labels.numpy(), classes=lab), probs.numpy(),
                                                       average="macro")),
        ("roc_auc", bin_, lambda: M.roc_auc_score(binary.numpy(), scores.numpy())),
        ("average_precision", bin_, lambda: M.average_precision_score(binary.numpy(), scores.numpy())),
        ("roc_curve", bin_, lambda: M.roc_curve(binary.numpy(), scores.numpy())),
        ("pr_curve", bin_, lambda: M.precision_recall_curve(binary.numpy(), scores.numpy())),
        ("mae", reg, lambda: M.mean_absolute_error(truth.numpy(), pred.numpy())),
        ("mse", reg, lambda: M.mean_squared_error(truth.numpy(), pred.numpy())),
        ("rmse", reg, lambda: M.mean_squared_error(truth.numpy(), pred.numpy(), squared=False)),
        ("r2", reg, lambda: M.r2_score(truth.numpy(), pred.numpy())),
    ]
    for name, case, fn in specs:
        latency(name, case, "latency_us", "us/call", 1e6, fn)


SUITES = {"ops": lambda: suite_ops(), "gemm": lambda: suite_gemm(), "nn": lambda: suite_nn(),
          "optim": lambda: suite_optim(), "losses": lambda: suite_losses(),
          "schedulers": lambda: suite_schedulers(), "metrics": lambda: suite_metrics()}


def committed_names(suite):
    """The suite's names in the committed case file (see the module doc), as a sorted list."""
    try:
        with open(CASES_FILE, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t", 1) for line in f if line.strip() and not line.startswith("#")]
    except OSError as e:
        sys.exit("pytorch_ops.py: cannot read the committed case names %s: %s" % (CASES_FILE, e))
    return sorted(r[1] for r in rows if r[0] == suite)


def listed_names(suite):
    """The suite's workload/case names, defined by running it in --list mode (nothing is measured)."""
    was = ARGS.list, ARGS.sizes
    ARGS.list, ARGS.sizes = True, DEFAULT_SIZES  # the committed names are those of the default sizes
    try:
        del LISTED[:]
        SUITES[suite]()
        return ["%s/%s" % k for k in LISTED]
    finally:
        ARGS.list, ARGS.sizes = was


def check_names(suite):
    """Stops when this side's names differ from the committed file that the Java side is tested against."""
    mine, theirs = sorted(listed_names(suite)), committed_names(suite)
    if mine != theirs:
        sys.exit("pytorch_ops.py: --suite %s names differ from %s (only here: %s; only there: %s); change "
                 "dev.ember.bench and this script together and regenerate the file with peer_cases.sh beside it"
                 % (suite, CASES_FILE, sorted(set(mine) - set(theirs)), sorted(set(theirs) - set(mine))))


def main():
    if ARGS.list:
        if ARGS.suite not in CHECKED_SUITES:
            sys.exit("pytorch_ops.py: --list covers the suites %s" % ", ".join(CHECKED_SUITES))
        for name in listed_names(ARGS.suite):
            print(name)
        return
    if ARGS.suite in CHECKED_SUITES:
        check_names(ARGS.suite)
    print(json.dumps({"workload": "_env", "side": "pytorch", **RUNTIME}), flush=True)
    sys.stderr.write("# torch %s, threads=%d, blas=%s, alloc=%s\n" % (torch.__version__, NT, ARGS.blas, ARGS.alloc))
    torch.manual_seed(0)
    SUITES[ARGS.suite]()


if __name__ == "__main__":
    main()
