"""Writes pool_fixtures.txt: PyTorch's max/avg/adaptive pooling and nearest/bilinear interpolation,
for PoolingFixtureTest and UpsamplingFixtureTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_pool_fixtures.py
Format (read by dev.ember.nn.testing.Fixtures): per tensor a line `tensor <case>.<name> <ndim> <dims...>`
and a line of values (float64, row-major; NaN and infinities as Java spells them). Names: `input`,
`out` (the result), `up` (the upstream gradient fed to backward), `grad.input` (PyTorch's gradient),
`indices` (argmax positions for return_indices=True). Everything runs in float64.
"""
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(1234)
F64 = torch.float64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pool_fixtures.txt")
lines = []


def num(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(float(v))


def put(case, name, t):
    t = t.detach().to(F64)
    lines.append("tensor %s.%s %d %s" % (case, name, t.dim(), " ".join(str(d) for d in t.shape)))
    lines.append(" ".join(num(v) for v in t.reshape(-1).tolist()))


def run(case, x, fn, grad=True):
    """Records input, output (and indices when fn returns a pair), upstream and input gradient."""
    x = x.to(F64).requires_grad_()
    put(case, "input", x)
    r = fn(x)
    if isinstance(r, tuple):
        r, idx = r
        put(case, "indices", idx)
    put(case, "out", r)
    if not grad:
        return
    up = torch.randn_like(r)
    put(case, "up", up)
    r.backward(up)
    put(case, "grad.input", x.grad)


def randn(*s):
    return torch.randn(*s, dtype=F64)


def ties(*s):
    # small integers: many equal values per window, so gradient routing on ties is exercised
    return torch.randint(-2, 3, s).to(F64)


# ---------------------------------------------------------------- max pool 2d
run("mp_basic", randn(2, 3, 8, 8), lambda x: F.max_pool2d(x, 2))
run("mp_k3s2p1", randn(2, 2, 9, 7), lambda x: F.max_pool2d(x, 3, 2, 1))
run("mp_ceil", randn(1, 2, 5, 6), lambda x: F.max_pool2d(x, 2, 2, 1, ceil_mode=True))
run("mp_ceil2", randn(1, 2, 7, 9), lambda x: F.max_pool2d(x, (3, 2), (2, 2), 0, ceil_mode=True))
run("mp_dil", randn(2, 2, 10, 9), lambda x: F.max_pool2d(x, 3, 1, 1, dilation=2))
run("mp_dil_ceil", randn(1, 3, 8, 11), lambda x: F.max_pool2d(x, (2, 3), (3, 2), (1, 1), (2, 2), ceil_mode=True))
run("mp_unbatched", randn(3, 6, 6), lambda x: F.max_pool2d(x, 2, 1))
run("mp_ties", ties(2, 2, 7, 7), lambda x: F.max_pool2d(x, 3, 1, 1))
run("mp_ties2", ties(1, 3, 6, 8), lambda x: F.max_pool2d(x, 2, 2))
run("mp_indices", randn(2, 2, 7, 6), lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True))
xn = randn(1, 2, 6, 6)
xn[0, 0, 1, 1] = float("nan")
xn[0, 0, 1, 2] = float("nan")
xn[0, 1, 4, 3] = float("nan")
xn[0, 1, 0, 0] = float("-inf")
run("mp_nan", xn, lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True))

# ---------------------------------------------------------------- max pool 1d
run("mp1_basic", randn(2, 3, 10), lambda x: F.max_pool1d(x, 3, 2, 1))
run("mp1_dil_ceil", randn(2, 2, 11), lambda x: F.max_pool1d(x, 3, 2, 1, dilation=2, ceil_mode=True))
run("mp1_unbatched", randn(3, 9), lambda x: F.max_pool1d(x, 2))
run("mp1_ties", ties(2, 2, 12), lambda x: F.max_pool1d(x, 4, 1, 2))
run("mp1_indices", randn(2, 2, 9), lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True))

# ---------------------------------------------------------------- avg pool 2d
run("ap_basic", randn(2, 3, 8, 8), lambda x: F.avg_pool2d(x, 2))
run("ap_pad", randn(2, 2, 7, 9), lambda x: F.avg_pool2d(x, 3, 2, 1))
run("ap_pad_nocount", randn(2, 2, 7, 9), lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False))
run("ap_ceil", randn(1, 2, 7, 8), lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True))
run("ap_ceil_nocount", randn(1, 2, 7, 8), lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False))
run("ap_ceil_nopad", randn(1, 2, 6, 7), lambda x: F.avg_pool2d(x, (3, 2), (2, 2), 0, ceil_mode=True))
run("ap_div", randn(2, 2, 6, 7), lambda x: F.avg_pool2d(x, (3, 2), (2, 1), (1, 1), divisor_override=5))
run("ap_unbatched", randn(3, 5, 5), lambda x: F.avg_pool2d(x, 2, 1))
run("ap_rect", randn(2, 1, 6, 9), lambda x: F.avg_pool2d(x, (2, 3), (1, 2), (1, 1), ceil_mode=True))

# ---------------------------------------------------------------- avg pool 1d
run("ap1_basic", randn(2, 3, 10), lambda x: F.avg_pool1d(x, 3))
run("ap1_pad", randn(2, 2, 11), lambda x: F.avg_pool1d(x, 4, 3, 2, ceil_mode=True, count_include_pad=False))
run("ap1_padcount", randn(2, 2, 11), lambda x: F.avg_pool1d(x, 4, 3, 2, ceil_mode=True))
run("ap1_unbatched", randn(3, 8), lambda x: F.avg_pool1d(x, 2, 1, 1))

# ---------------------------------------------------------------- adaptive
run("aap_7_3", randn(2, 3, 7, 7), lambda x: F.adaptive_avg_pool2d(x, 3))
run("aap_5_3", randn(2, 2, 5, 9), lambda x: F.adaptive_avg_pool2d(x, (3, 4)))
run("aap_1", randn(2, 3, 6, 5), lambda x: F.adaptive_avg_pool2d(x, 1))
run("aap_none", randn(2, 2, 6, 7), lambda x: F.adaptive_avg_pool2d(x, (3, None)))
run("aap_up", randn(1, 2, 3, 4), lambda x: F.adaptive_avg_pool2d(x, (5, 6)))
run("aap_unbatched", randn(3, 7, 5), lambda x: F.adaptive_avg_pool2d(x, (2, 3)))
run("amp_7_3", randn(2, 3, 7, 7), lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True))
run("amp_5_3", randn(2, 2, 5, 9), lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True))
run("amp_1", randn(2, 3, 6, 5), lambda x: F.adaptive_max_pool2d(x, 1))
run("amp_none", randn(2, 2, 6, 7), lambda x: F.adaptive_max_pool2d(x, (None, 3)))
run("amp_up", randn(1, 2, 3, 4), lambda x: F.adaptive_max_pool2d(x, (5, 6)))
run("amp_ties", ties(2, 2, 7, 5), lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True))
run("amp_unbatched", randn(3, 7, 5), lambda x: F.adaptive_max_pool2d(x, (2, 3)))

# ---------------------------------------------------------------- interpolate
I = F.interpolate
run("un_scale2", randn(2, 3, 4, 5), lambda x: I(x, scale_factor=2, mode="nearest"))
run("un_scale_odd", randn(1, 2, 3, 5), lambda x: I(x, scale_factor=(1.7, 2.2), mode="nearest"))
run("un_scale_recompute", randn(1, 2, 3, 5), lambda x: I(x, scale_factor=(1.7, 2.2), mode="nearest",
                                                       recompute_scale_factor=True))
run("un_size", randn(2, 2, 5, 4), lambda x: I(x, size=(7, 9), mode="nearest"))
run("un_size_down", randn(2, 2, 5, 4), lambda x: I(x, size=(3, 2), mode="nearest"))
run("un1_scale", randn(2, 3, 5), lambda x: I(x, scale_factor=2.5, mode="nearest"))
# nearest where the scale gives a doubled / unchanged size: torch 1.13's forward (C > 1) uses
# floor(dst / scale) here but its backward the special cases dst / 2 and dst (a gradient inconsistent
# with the forward), so only the forward is recorded; Ember's backward is the forward's exact gradient.
# (With C == 1 the input also counts as channels-last and torch's forward takes the special cases too.)
run("un1_scale22", randn(1, 2, 3), lambda x: I(x, scale_factor=2.2, mode="nearest"), grad=False)
run("un1_scale12", randn(1, 2, 3), lambda x: I(x, scale_factor=1.2, mode="nearest"), grad=False)
run("un_scale22", randn(1, 2, 3, 3), lambda x: I(x, scale_factor=2.2, mode="nearest"), grad=False)
run("un_scale12", randn(2, 3, 3, 3), lambda x: I(x, scale_factor=1.2, mode="nearest"), grad=False)
run("un1_size", randn(2, 3, 5), lambda x: I(x, size=8, mode="nearest"))
for ac in (False, True):
    s = "_ac" if ac else ""
    run("bl_scale2" + s, randn(2, 3, 4, 5), lambda x: I(x, scale_factor=2, mode="bilinear", align_corners=ac))
    run("bl_size" + s, randn(2, 2, 5, 4), lambda x: I(x, size=(7, 9), mode="bilinear", align_corners=ac))
    run("bl_down" + s, randn(1, 2, 7, 8), lambda x: I(x, size=(3, 5), mode="bilinear", align_corners=ac))
    run("bl_odd" + s, randn(1, 2, 4, 5), lambda x: I(x, scale_factor=(1.5, 2.3), mode="bilinear", align_corners=ac))
    run("bl_out1" + s, randn(1, 2, 4, 5), lambda x: I(x, size=(1, 3), mode="bilinear", align_corners=ac))
run("bl_same", randn(1, 2, 5, 6), lambda x: I(x, scale_factor=(1.0, 1.1), mode="bilinear", align_corners=False))
run("bl_recompute", randn(1, 2, 4, 5), lambda x: I(x, scale_factor=1.7, mode="bilinear", align_corners=False,
                                                  recompute_scale_factor=True))

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", OUT, len(lines) // 2, "tensors")
