"""Writes conv_fixtures.txt: PyTorch's convolutions, transposed convolution, padding modes, pooling
and upsampling, for ConvolutionFixtureTest, PoolingFixtureTest and UpsamplingFixtureTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_conv_fixtures.py
Format (read by dev.ember.nn.testing.Fixtures): per tensor a line `tensor <case>.<name> <ndim> <dims...>`
and a line of values (float64, row-major). Names: inputs by role (`input`, `weight`, `bias`), `out`
(the result), `up` (the fixed upstream gradient fed to backward), `grad.<name>` (PyTorch's gradient),
`indices` (max pooling's return_indices, as float64). Each case's arguments are repeated in the Java
test that reads it.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2024)
F64 = torch.float64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv_fixtures.txt")
lines = []


def put(case, name, t):
    t = t.detach().to(F64)
    lines.append("tensor %s.%s %d %s" % (case, name, t.dim(), " ".join(str(d) for d in t.shape)))
    lines.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


def leaf(*shape):
    return torch.randn(*shape, dtype=F64).requires_grad_()


def run(case, fn, named):
    for name, t in named.items():
        put(case, name, t)
    out = fn()
    indices = None
    if isinstance(out, tuple):
        out, indices = out
        put(case, "indices", indices)
    up = torch.randn_like(out)
    put(case, "out", out)
    put(case, "up", up)
    out.backward(up)
    for name, t in named.items():
        if t.requires_grad:
            put(case, "grad." + name, t.grad)


def conv2d(case, xs, ws, bias=True, **kw):
    x, w = leaf(*xs), leaf(*ws)
    named = {"input": x, "weight": w}
    b = None
    if bias:
        b = leaf(ws[0])
        named["bias"] = b
    run(case, lambda: F.conv2d(x, w, b, **kw), named)


def conv1d(case, xs, ws, **kw):
    x, w, b = leaf(*xs), leaf(*ws), leaf(ws[0])
    run(case, lambda: F.conv1d(x, w, b, **kw), {"input": x, "weight": w, "bias": b})


def padded_conv(case, module, xs):
    """A conv module with a non-zero padding mode; weight/bias copied out as leaves."""
    x = leaf(*xs)
    w = module.weight.detach().to(F64).clone().requires_grad_()
    b = module.bias.detach().to(F64).clone().requires_grad_()
    module = module.to(F64)
    module.weight = nn.Parameter(w)
    module.bias = nn.Parameter(b)
    run(case, lambda: module(x), {"input": x, "weight": module.weight, "bias": module.bias})


# ------------------------------------------------------------------ conv2d
conv2d("c2_basic", (2, 3, 7, 6), (4, 3, 3, 3))
conv2d("c2_stride_pad", (2, 3, 8, 7), (5, 3, 3, 2), stride=(2, 3), padding=(1, 2))
conv2d("c2_dilation", (1, 2, 9, 9), (3, 2, 3, 3), padding=1, dilation=(2, 1))
conv2d("c2_groups", (2, 4, 6, 6), (6, 2, 3, 3), padding=1, groups=2)
conv2d("c2_depthwise", (2, 3, 7, 7), (6, 1, 3, 3), stride=2, padding=1, groups=3)
conv2d("c2_depthwise_dil", (1, 4, 8, 8), (4, 1, 3, 3), padding=2, dilation=2, groups=4)
conv2d("c2_1x1", (2, 5, 4, 4), (3, 5, 1, 1))
conv2d("c2_same_odd", (1, 2, 6, 5), (3, 2, 3, 3), padding="same")
conv2d("c2_same_even", (1, 2, 6, 5), (3, 2, 4, 2), padding="same")
conv2d("c2_same_dil", (1, 2, 7, 7), (2, 2, 2, 3), padding="same", dilation=2)
conv2d("c2_valid", (1, 2, 5, 5), (2, 2, 2, 2), padding="valid")
conv2d("c2_nobias", (2, 2, 5, 4), (3, 2, 2, 2), bias=False, stride=(1, 2))
conv2d("c2_unbatched", (3, 5, 5), (2, 3, 3, 3), padding=1)
padded_conv("c2_reflect", nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"), (2, 2, 5, 6))
padded_conv("c2_replicate", nn.Conv2d(2, 3, 3, stride=2, padding=2, padding_mode="replicate"), (1, 2, 5, 5))
padded_conv("c2_circular", nn.Conv2d(2, 2, (2, 3), padding=(1, 2), padding_mode="circular"), (1, 2, 4, 5))
padded_conv("c2_reflect_same", nn.Conv2d(2, 2, (4, 3), padding="same", padding_mode="reflect"), (1, 2, 6, 6))

# ------------------------------------------------------------------ conv1d
conv1d("c1_basic", (2, 3, 10), (4, 3, 3), stride=2, padding=1)
conv1d("c1_dil_groups", (2, 4, 9), (4, 2, 2), dilation=3, groups=2)
conv1d("c1_same_even", (1, 2, 7), (3, 2, 4), padding="same")
conv1d("c1_depthwise", (2, 3, 8), (3, 1, 3), padding=1, groups=3)
padded_conv("c1_reflect", nn.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"), (2, 2, 6))

# ------------------------------------------------------------------ conv_transpose2d
def convt(case, xs, ws, **kw):
    x, w, b = leaf(*xs), leaf(*ws), leaf(ws[1] * kw.get("groups", 1))
    run(case, lambda: F.conv_transpose2d(x, w, b, **kw), {"input": x, "weight": w, "bias": b})


convt("ct_basic", (2, 4, 3, 4), (4, 3, 3, 3))
convt("ct_stride", (2, 3, 4, 3), (3, 2, 3, 3), stride=2, padding=1, output_padding=1)
convt("ct_groups", (1, 4, 3, 3), (4, 3, 2, 3), stride=(2, 1), padding=(0, 1), output_padding=(1, 0), groups=2,
      dilation=(1, 2))
convt("ct_1x1", (2, 3, 3, 2), (3, 2, 1, 1))
convt("ct_unbatched", (2, 3, 3), (2, 2, 2, 2), stride=2)

# ------------------------------------------------------------------ padding modes
for mode in ["constant", "reflect", "replicate", "circular"]:
    x = leaf(2, 3, 4, 5)
    run("pad2_" + mode, lambda: F.pad(x, (2, 1, 1, 3), mode=mode), {"input": x})
    x = leaf(2, 3, 5)
    run("pad1_" + mode, lambda: F.pad(x, (1, 3), mode=mode), {"input": x})

# ------------------------------------------------------------------ pooling
def pool(case, xs, fn, ties=False):
    x = (torch.randint(0, 3, xs).to(F64) if ties else torch.randn(*xs, dtype=F64)).requires_grad_()
    run(case, lambda: fn(x), {"input": x})


pool("mp2_basic", (2, 3, 6, 7), lambda x: F.max_pool2d(x, 2, return_indices=True))
pool("mp2_stride_pad", (2, 2, 7, 7), lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True))
pool("mp2_dil_ceil", (1, 2, 7, 8), lambda x: F.max_pool2d(x, (2, 3), stride=(2, 1), padding=(1, 1), dilation=(2, 1),
                                                         ceil_mode=True, return_indices=True))
pool("mp2_ceil", (1, 1, 6, 6), lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True, return_indices=True))
pool("mp2_ties", (2, 2, 6, 6), lambda x: F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True), ties=True)
pool("mp2_unbatched", (3, 5, 5), lambda x: F.max_pool2d(x, 2, stride=1, return_indices=True))
pool("mp1_basic", (2, 3, 11), lambda x: F.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True, return_indices=True))
pool("mp1_dil", (1, 2, 12), lambda x: F.max_pool1d(x, 3, stride=2, dilation=2, return_indices=True))
pool("ap2_basic", (2, 3, 6, 7), lambda x: F.avg_pool2d(x, 2))
pool("ap2_pad_incl", (1, 2, 7, 6), lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=True))
pool("ap2_pad_excl", (1, 2, 7, 6), lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False))
pool("ap2_ceil_incl", (1, 2, 6, 6), lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                           count_include_pad=True))
pool("ap2_ceil_excl", (1, 2, 6, 6), lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 2), padding=(1, 1), ceil_mode=True,
                                                           count_include_pad=False))
pool("ap2_divisor", (1, 2, 5, 5), lambda x: F.avg_pool2d(x, 2, stride=1, padding=1, divisor_override=3))
pool("ap1_basic", (2, 2, 9), lambda x: F.avg_pool1d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                   count_include_pad=False))
pool("aap2_down", (2, 3, 7, 5), lambda x: F.adaptive_avg_pool2d(x, (3, 4)))
pool("aap2_up", (1, 2, 3, 5), lambda x: F.adaptive_avg_pool2d(x, (5, 7)))
pool("amp2_down", (2, 3, 7, 5), lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True))
pool("amp2_up", (1, 2, 3, 5), lambda x: F.adaptive_max_pool2d(x, (5, 7), return_indices=True))

# ------------------------------------------------------------------ upsampling
def up(case, xs, **kw):
    x = leaf(*xs)
    run(case, lambda: F.interpolate(x, **kw), {"input": x})


up("nearest_size", (2, 2, 4, 5), size=(7, 9), mode="nearest")
up("nearest_scale2", (1, 2, 3, 4), scale_factor=2, mode="nearest")
up("nearest_scale15", (1, 2, 3, 5), scale_factor=(1.5, 1.7), mode="nearest")
up("nearest_down", (1, 2, 7, 9), size=(3, 4), mode="nearest")
up("nearest_1d", (2, 3, 5), size=8, mode="nearest")
for ac in [False, True]:
    tag = "ac" if ac else "noac"
    up("bilinear_size_" + tag, (2, 2, 4, 5), size=(7, 9), mode="bilinear", align_corners=ac)
    up("bilinear_scale_" + tag, (1, 2, 3, 4), scale_factor=1.5, mode="bilinear", align_corners=ac)
    up("bilinear_down_" + tag, (1, 2, 7, 9), size=(3, 4), mode="bilinear", align_corners=ac)
    up("linear_" + tag, (2, 2, 5), size=9, mode="linear", align_corners=ac)

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", OUT, len(lines) // 2, "tensors")
