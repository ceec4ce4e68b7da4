"""Writes attention_fixtures.txt: scaled dot-product attention for AttentionFixtureTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_attention_fixtures.py
torch 1.13 has no F.scaled_dot_product_attention, so the reference is the explicit definition
softmax(q k^T * scale + mask) v in float64, with PyTorch 2's conventions: a bool mask is True where
attention is allowed (False -> -inf), a float mask is added, is_causal keeps keys j <= i
(torch.ones(L, S).tril()), scale defaults to 1 / sqrt(E).
Format (read by dev.ember.nn.testing.Fixtures): `tensor <case>.<name> <ndim> <dims...>` then the
values (float64, row-major); bool masks are written as 0/1. Names: q, k, v, mask, out, up (the
upstream gradient), grad.q/k/v (PyTorch's gradients); `scale` is written when not the default.
"""
import math
import os

import torch

torch.manual_seed(2024)
F64 = torch.float64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_fixtures.txt")
lines = []


def put(case, name, t):
    t = t.detach().to(F64)
    lines.append("tensor %s.%s %d %s" % (case, name, t.dim(), " ".join(str(d) for d in t.shape)))
    lines.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


def sdpa(q, k, v, mask=None, causal=False, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale
    L, S = q.shape[-2], k.shape[-2]
    if causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


def case(name, shape_q, shape_k, ev, mask=None, causal=False, scale=None):
    q = torch.randn(*shape_q, dtype=F64, requires_grad=True)
    k = torch.randn(*shape_k, dtype=F64, requires_grad=True)
    v = torch.randn(*shape_k[:-1], ev, dtype=F64, requires_grad=True)
    put(name, "q", q)
    put(name, "k", k)
    put(name, "v", v)
    if mask is not None:
        put(name, "mask", mask)
    if scale is not None:
        put(name, "scale", torch.tensor(scale, dtype=F64))
    out = sdpa(q, k, v, mask, causal, scale)
    up = torch.randn_like(out)
    put(name, "out", out)
    put(name, "up", up)
    out.backward(up)
    for n, t in [("q", q), ("k", k), ("v", v)]:
        put(name, "grad." + n, t.grad)


L, S = 5, 7
bool_mask = torch.rand(L, S) > 0.4
bool_mask[:, 0] = True  # every query sees at least one key
case("plain", (2, 2, L, 4), (2, 2, S, 4), 3)
case("scaled", (2, L, 4), (2, S, 4), 3, scale=0.3)
case("boolmask", (2, 2, L, 4), (2, 2, S, 4), 3, mask=bool_mask)
case("floatmask", (2, 2, L, 4), (2, 2, S, 4), 3, mask=torch.randn(2, 1, L, S, dtype=F64))
case("causal", (2, 6, 4), (2, 6, 4), 3, causal=True)
case("causalrect", (2, L, 4), (2, S, 4), 3, causal=True)

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
