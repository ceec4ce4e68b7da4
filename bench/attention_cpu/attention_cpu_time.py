"""torch's side of AttentionCpuTime.java: softmax(q k^T / sqrt(d)) v as bench/peers/pytorch_ops.py's nn suite, on
one thread, timed in thread CPU time (time.thread_time_ns); prints "fwd T ms" / "fwd+bwd T ms", the median of the
rounds."""
import sys
import time

import torch

torch.set_num_threads(1)


def attention(q, k, v):
    s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / q.shape[-1] ** 0.5)
    return torch.matmul(torch.softmax(s, -1), v)


rounds = int(sys.argv[1])
for kind, ts in (("fwd", (128, 256, 512, 1024, 2048, 4096)), ("fwd+bwd", (128, 256, 512, 1024))):
    for t in ts:
        bwd = kind == "fwd+bwd"
        g = torch.Generator().manual_seed(t)
        x = [torch.randn(1, 8, t, 64, generator=g).requires_grad_(bwd) for _ in range(3)]
        up = torch.ones(1, 8, t, 64)
        iters = max(2, int(4e8 / (t * t * 64 * 8 * 4 * (3 if bwd else 1))))
        ms = []
        for r in range(rounds + 2):
            t0 = time.thread_time_ns()
            for _ in range(iters):
                if bwd:
                    for p in x:
                        p.grad = None
                    attention(*x).backward(up)
                else:
                    with torch.no_grad():
                        attention(*x)
            if r >= 2:
                ms.append((time.thread_time_ns() - t0) / 1e6 / iters)
        ms.sort()
        print("%s %d %.4f" % (kind, t, ms[rounds // 2]))
