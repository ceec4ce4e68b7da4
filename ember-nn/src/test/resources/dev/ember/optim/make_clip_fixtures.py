"""Writes clip_fixtures.txt: torch.nn.utils.clip_grad_norm_ / clip_grad_value_ on three float64
gradients, for ClipGradTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_clip_fixtures.py
Entries: `grad.i` (the gradients before clipping), per case `<case>.total` (the returned norm, 0-d)
and `<case>.grad.i` (after clipping). Cases: norm<p>_<max_norm> for p in 1, 2, 3, inf, and value_0.5.
"""
import os

import torch

torch.manual_seed(77)
F64 = torch.float64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clip_fixtures.txt")
lines = []


def put(name, t):
    t = torch.as_tensor(t, dtype=F64)
    lines.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    lines.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


GRADS = [torch.randn(3, 4, dtype=F64), torch.randn(5, dtype=F64) * 2, torch.randn(2, 2, 2, dtype=F64)]
for i, g in enumerate(GRADS):
    put("grad.%d" % i, g)


def params():
    ps = [torch.zeros_like(g, requires_grad=True) for g in GRADS]
    for p, g in zip(ps, GRADS):
        p.grad = g.clone()
    return ps


for p, max_norm in [(1.0, 2.0), (2.0, 1.5), (3.0, 1.0), (float("inf"), 0.5), (2.0, 100.0)]:
    name = "norm%s_%s" % ("inf" if p == float("inf") else int(p), max_norm)
    ps = params()
    total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=p)
    put(name + ".total", total)
    for i, q in enumerate(ps):
        put("%s.grad.%d" % (name, i), q.grad)

ps = params()
torch.nn.utils.clip_grad_value_(ps, 0.5)
for i, q in enumerate(ps):
    put("value_0.5.grad.%d" % i, q.grad)

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", OUT, len(lines) // 2, "tensors")
