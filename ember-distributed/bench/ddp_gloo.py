"""The peer of dev.ember.distributed.DdpBench: torch DistributedDataParallel (gloo) against one process.

Same workload: the seed MLP 1024-h-h-h-10 ReLU (h = 2048: seed_medium), SGD(lr=0.01, momentum=0.9), 8 pre-made
random batches cycled, global batch 128; `single` trains in one process on --threads threads, `ddp` in --procs
processes of 1 thread each over loopback, each rank a 1/N shard of every global batch (torch's default 25 MB
buckets). Samples/s per repeat = global batch x steps / seconds on rank 0, between barriers.

    /usr/bin/python3 ddp_gloo.py single|ddp [--procs N] [--threads N] [--hidden H] [--batch B]
                                            [--warmup-steps W] [--steps S] [--repeats R]

stdout: one JSON line, {"workload": "ddp_seed_medium", "case": "train b=128 2 proc x 1 thread", "unit": "samples/s",
"values": [...]}, named as DdpBench --json names its rows (bench/compare.py's distributed category).
"""
import argparse
import json
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def seed_model(h):
    return nn.Sequential(nn.Linear(1024, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                         nn.Linear(h, 10))


def measure(a, rank, world, out):
    torch.manual_seed(0)
    model = seed_model(a.hidden)
    g = torch.Generator().manual_seed(0)
    shard = a.batch // world
    data = []
    for _ in range(8):
        x = torch.randn(a.batch, 1024, generator=g)
        y = torch.randint(0, 10, (a.batch,), generator=g)
        data.append((x[rank * shard:(rank + 1) * shard].contiguous(), y[rank * shard:(rank + 1) * shard].contiguous()))
    net = model if world == 1 else nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    at = [0]

    def step():
        x, y = data[at[0] % len(data)]
        at[0] += 1
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()

    for _ in range(a.warmup_steps):
        step()
    rates = []
    for _ in range(a.repeats):
        if world > 1:
            dist.barrier()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        if world > 1:
            dist.barrier()
        rates.append(a.batch * a.steps / (time.perf_counter() - t0))
    if rank == 0:
        out.put(rates)


def worker(rank, a, port, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=a.procs)
    measure(a, rank, a.procs, out)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["single", "ddp"])
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--threads", type=int, default=2, help="single: intra-op threads")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    workload = "ddp_seed_" + ("medium" if a.hidden == 2048 else "h%d" % a.hidden)
    if a.mode == "single":
        torch.set_num_threads(a.threads)
        q = mp.get_context("spawn").SimpleQueue()
        measure(a, 0, 1, q)
        rates = q.get()
        layout = "1 proc x %d threads" % a.threads
    else:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, a, port, q)) for r in range(a.procs)]
        for pr in procs:
            pr.start()
        rates = q.get()
        for pr in procs:
            pr.join()
        layout = "%d proc x 1 thread" % a.procs
    print(json.dumps({"workload": workload, "case": "train b=%d %s" % (a.batch, layout), "unit": "samples/s",
                      "values": rates, "lower_is_better": False}), flush=True)
    print(json.dumps({"workload": "_env", "side": "pytorch", "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
