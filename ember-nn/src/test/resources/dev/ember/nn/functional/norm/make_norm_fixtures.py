"""Writes norm_fixtures.txt: PyTorch's batch/layer/group norm, RMS norm and embedding, for
NormalizationFixtureTest and EmbeddingsFixtureTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_norm_fixtures.py
Format (read by dev.ember.nn.testing.Fixtures): per tensor a line `tensor <case>.<name> <ndim> <dims...>`
and a line of values (float64, row-major). Names: inputs by role, `out` (the result), `up` (the
upstream gradient fed to backward), `grad.<name>` (PyTorch's gradient), `rm1`/`rv1` (running stats
after the call). torch 1.13 has no rms_norm: its reference is x * rsqrt(mean(x^2) + eps) * weight in
float64 with eps = torch.finfo(float32).eps (PyTorch 2.4's default for float32 inputs).
"""
import os

import torch
import torch.nn.functional as F

torch.manual_seed(4321)
F64 = torch.float64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "norm_fixtures.txt")
lines = []


def put(case, name, t):
    t = t.detach().to(F64)
    lines.append("tensor %s.%s %d %s" % (case, name, t.dim(), " ".join(str(d) for d in t.shape)))
    lines.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


def leaf(*shape):
    return torch.randn(*shape, dtype=F64).requires_grad_()


def grads(case, out, named):
    up = torch.randn_like(out)
    put(case, "out", out)
    put(case, "up", up)
    out.backward(up)
    for name, t in named.items():
        put(case, "grad." + name, t.grad)


# batch norm, training: batch statistics, running stats updated (momentum 0.1, unbiased variance)
for case, shape in [("bn2d", (5, 3)), ("bn3d", (3, 2, 5)), ("bn4d", (2, 3, 4, 4))]:
    c = shape[1]
    x, w, b = leaf(*shape), leaf(c), leaf(c)
    rm, rv = torch.randn(c, dtype=F64), torch.rand(c, dtype=F64) + 0.5
    for n, t in [("input", x), ("weight", w), ("bias", b), ("rm0", rm), ("rv0", rv)]:
        put(case, n, t)
    out = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    put(case, "rm1", rm)
    put(case, "rv1", rv)
    grads(case, out, {"input": x, "weight": w, "bias": b})

# batch norm, eval: running statistics
x, w, b = leaf(4, 3, 2), leaf(3), leaf(3)
rm, rv = torch.randn(3, dtype=F64), torch.rand(3, dtype=F64) + 0.5
for n, t in [("input", x), ("weight", w), ("bias", b), ("rm0", rm), ("rv0", rv)]:
    put("bneval", n, t)
grads("bneval", F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5), {"input": x, "weight": w, "bias": b})

# layer norm over the last one and last two dims
for case, shape, norm in [("ln1", (2, 3, 4), (4,)), ("ln2", (2, 3, 4), (3, 4))]:
    x, w, b = leaf(*shape), leaf(*norm), leaf(*norm)
    for n, t in [("input", x), ("weight", w), ("bias", b)]:
        put(case, n, t)
    grads(case, F.layer_norm(x, norm, w, b, eps=1e-5), {"input": x, "weight": w, "bias": b})

# group norm
for case, shape, groups in [("gn3d", (2, 6, 5), 3), ("gn4d", (2, 4, 3, 3), 2)]:
    x, w, b = leaf(*shape), leaf(shape[1]), leaf(shape[1])
    for n, t in [("input", x), ("weight", w), ("bias", b)]:
        put(case, n, t)
    grads(case, F.group_norm(x, groups, w, b, eps=1e-5), {"input": x, "weight": w, "bias": b})

# RMS norm (explicit reference), eps = finfo(float32).eps
x, w = leaf(3, 2, 5), leaf(5)
put("rms", "input", x)
put("rms", "weight", w)
eps = torch.finfo(torch.float32).eps
grads("rms", x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w, {"input": x, "weight": w})

# embedding with padding_idx (repeated indices, the padding index among them)
w = leaf(10, 4)
idx = torch.tensor([[1, 0, 3], [3, 9, 0]])
put("emb", "weight", w)
put("emb", "indices", idx)
grads("emb", F.embedding(idx, w, padding_idx=0), {"weight": w})

# embedding with max_norm: the referenced rows are renormalized in place
w = (torch.randn(6, 3, dtype=F64) * 2)
idx = torch.tensor([0, 2, 2, 5])
put("embmax", "weight", w)
put("embmax", "indices", idx)
with torch.no_grad():
    out = F.embedding(idx, w, max_norm=1.5, norm_type=2.0)
put("embmax", "out", out)
put("embmax", "weight1", w)

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
