"""The peer of dev.ember.distributed.AllReduceBench: torch.distributed allreduce with the gloo backend.

Same buffers (float32, 1 KiB .. 64 MiB doubling by default), same iteration rule (about 256 MiB moved per size,
5..1000 iterations, after 2 warm-up calls), same bandwidth definitions (nccl-tests: alg = bytes / time,
bus = alg * 2 (W-1) / W), processes on this machine over loopback.

    /usr/bin/python3 allreduce_gloo.py [--repeats R] [--sizes B,B,...] [--json] [NPROC [MIN_BYTES [MAX_BYTES]]]

With --json: one line per size, {"workload": "allreduce", "case": "np=N SIZE", "unit": "GB/s bus", "values": [one bus
bandwidth per repeat]}, named as AllReduceBench --json names them (bench/compare.py's distributed category).
"""
import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port, sizes, repeats, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world)
    rows = []
    for nbytes in sizes * repeats:
        buf = torch.arange(nbytes // 4, dtype=torch.float32) % 7 * 0.25
        iters = max(5, min(1000, (256 << 20) // nbytes))
        for _ in range(2):
            dist.all_reduce(buf)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        sec = (time.perf_counter() - t0) / iters
        dist.barrier()
        rows.append((nbytes, iters, sec))
    if rank == 0:
        out.put(rows)
    dist.destroy_process_group()


def label(nbytes):
    units = ["B", "KiB", "MiB", "GiB"]
    u = 0
    while u < len(units) - 1 and nbytes >= 1024 and nbytes % 1024 == 0:
        nbytes //= 1024
        u += 1
    return "%d %s" % (nbytes, units[u])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("nproc", type=int, nargs="?", default=2)
    p.add_argument("lo", type=int, nargs="?", default=1024)
    p.add_argument("hi", type=int, nargs="?", default=64 << 20)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--sizes", default="")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    nproc = a.nproc
    if a.sizes:
        sizes = [int(s) for s in a.sizes.split(",")]
    else:
        sizes = []
        b = a.lo
        while b <= a.hi:
            sizes.append(b)
            b *= 2
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=run, args=(r, nproc, port, sizes, a.repeats, out)) for r in range(nproc)]
    for p in procs:
        p.start()
    rows = out.get()
    for p in procs:
        p.join()
    if a.json:
        for i, nbytes in enumerate(sizes):
            runs = [rows[k * len(sizes) + i] for k in range(a.repeats)]
            bus = [nb / sec * 2 * (nproc - 1) / nproc / 1e9 for nb, _, sec in runs]
            print(json.dumps({"workload": "allreduce", "case": "np=%d %s" % (nproc, label(nbytes)), "unit": "GB/s bus",
                              "values": bus, "lower_is_better": False, "iterations": runs[0][1]}), flush=True)
        return
    print("torch %s gloo allreduce float32 SUM, %d processes over loopback (%d cores)" % (torch.__version__, nproc,
                                                                                        os.cpu_count()))
    for nbytes, iters, sec in rows:
        alg = nbytes / sec
        print("%12d B %6d iters %10.1f us %9.3f GB/s alg %9.3f GB/s bus" % (nbytes, iters, sec * 1e6, alg / 1e9,
                                                                           alg * 2 * (nproc - 1) / nproc / 1e9))


if __name__ == "__main__":
    main()
