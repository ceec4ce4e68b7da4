"""Reference values for FakeQuantizeTest: torch 1.13's fake_quantize_per_tensor_affine and
fake_quantize_per_channel_affine (forward, and the straight-through gradient of sum(g * y)) on float32 inputs that
include exact rounding ties and values clamped at both ends. Writes fakequant_fixture.json next to this script.
    /usr/bin/python3 make_fakequant_fixture.py
"""
import json
import os

import torch

torch.manual_seed(0)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


out = {}
# per tensor: quint8 affine, qint8 symmetric, a reduced range
x = torch.cat([torch.randn(200) * 3, (torch.arange(-20, 20, dtype=torch.float32) + 0.5) * 0.05]).requires_grad_()
g = torch.randn(x.shape)
out["x"] = flat(x)
out["g"] = flat(g)
cases = [(0.05, 30, 0, 255), (0.037, 0, -128, 127), (0.1, 3, 0, 127), (0.02, -5, -64, 63)]
out["cases"] = [list(c) for c in cases]
for i, (s, z, lo, hi) in enumerate(cases):
    x.grad = None
    y = torch.fake_quantize_per_tensor_affine(x, s, z, lo, hi)
    (y * g).sum().backward()
    out["y%d" % i] = flat(y)
    out["dx%d" % i] = flat(x.grad)
# per channel along axis 1 of [4, 3, 5]
xc = (torch.randn(4, 3, 5) * 2).requires_grad_()
gc = torch.randn(4, 3, 5)
scales = torch.tensor([0.03, 0.011, 0.2])
zps = torch.tensor([0, 10, -3], dtype=torch.int32)
yc = torch.fake_quantize_per_channel_affine(xc, scales, zps, 1, -128, 127)
(yc * gc).sum().backward()
out.update({"xc": flat(xc), "gc": flat(gc), "scales": flat(scales), "zps": [int(v) for v in zps], "yc": flat(yc),
            "dxc": flat(xc.grad)})
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakequant_fixture.json"), "w") as f:
    json.dump(out, f)
print(torch.__version__, len(out))
