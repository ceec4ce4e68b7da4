"""Writes grad_scaler_fixture.json: a GradScaler trajectory of torch 1.13's own class, for GradScalerTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 grad_scaler_fixture.py

torch 1.13's GradScaler only runs on CUDA: on the CPU it disables itself, asserts its tensors are CUDA
tensors, and the two ops it calls have no CPU kernels. So this script
  * re-runs itself under `python3 -O` (assert statements off: they only check for CUDA tensors),
  * makes `amp_definitely_not_available` answer False so that the scaler stays enabled, and
  * replaces `torch._amp_foreach_non_finite_check_and_unscale_` and `torch._amp_update_scale_` by Python
    transcriptions of their CUDA kernels (aten/src/ATen/native/cuda/AmpKernels.cu in 1.13): every element is
    checked for Inf/NaN before it is multiplied by the float32 inverse scale (when that is not 1); the scale is
    multiplied in double by the backoff factor on an Inf/NaN (tracker reset), or by the growth factor when the
    incremented tracker reaches growth_interval and the float32 result is finite (tracker reset either way).
Everything else (stages, per-optimizer found_inf, skipping the optimizer step, update(new_scale), state_dict)
is torch's own code.

The model: w (3x4) stepped by SGD(lr=0.125, momentum=0.5) and b (5) by SGD(lr=0.25), one GradScaler for both,
loss = sum(w * a_t) + sum(b * c_t) with a_t, c_t recorded per step (so gradients are scale * a_t exactly).
Injected: Inf in a_2 (w's optimizer skips, b's steps), NaN in c_6, a 3e34 element in a_7..a_9 that overflows
float32 until the scale has backed off to 2^13, an explicit unscale_ before step at steps 4 and 12,
update(1024.0) at step 10, update(2^127) at step 14 and then a growth that would overflow (kept at 2^127).
Powers of two for lr, momentum and the scales keep every product exact, so the Java test compares bits.
"""
import json
import math
import os
import subprocess
import sys

if not sys.flags.optimize:
    sys.exit(subprocess.call([sys.executable, "-O", os.path.abspath(__file__)] + sys.argv[1:]))

import torch
import torch.cuda.amp.grad_scaler as gs

gs.amp_definitely_not_available = lambda: False


def non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """_amp_foreach_non_finite_check_and_unscale_cuda_: found_inf = 1 on any Inf/NaN; grads *= inv_scale."""
    inv = inv_scale.item()
    for g in grads:
        if not bool(torch.isfinite(g).all()):
            found_inf.fill_(1.0)
        if inv != 1.0:
            g.mul_(inv_scale)  # float32 * float32, as the kernel's opmath


def update_scale_(current_scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """amp_update_scale_cuda_kernel, transcribed."""
    if found_inf.item():
        current_scale.fill_(current_scale.item() * backoff_factor)  # double product, stored as float32
        growth_tracker.fill_(0)
    else:
        successful = int(growth_tracker.item()) + 1
        if successful == growth_interval:
            new_scale = torch.tensor(current_scale.item() * growth_factor, dtype=torch.float32).item()
            if math.isfinite(new_scale):
                current_scale.fill_(new_scale)
            growth_tracker.fill_(0)
        else:
            growth_tracker.fill_(successful)
    return current_scale


torch._amp_foreach_non_finite_check_and_unscale_ = non_finite_check_and_unscale_
torch._amp_update_scale_ = update_scale_

torch.manual_seed(35)
F32 = torch.float32
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grad_scaler_fixture.json")


def floats(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def grid(*shape):
    """Random values on a 1/64 grid, so that sums of them stay exact."""
    return (torch.randint(-128, 129, shape) / 64.0).to(F32)


w = grid(3, 4).requires_grad_(True)
b = grid(5).requires_grad_(True)
opt_w = torch.optim.SGD([w], lr=0.125, momentum=0.5)
opt_b = torch.optim.SGD([b], lr=0.25)
scaler = torch.cuda.amp.GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
assert scaler.is_enabled()

STEPS = 18
fixture = {"init_w": floats(w), "init_b": floats(b), "growth_interval": 3, "steps": []}
for t in range(STEPS):
    a = grid(3, 4)
    c = grid(5)
    if t == 2:
        a[1, 2] = float("inf")
    if t == 6:
        c[3] = float("nan")
    if 7 <= t <= 9:
        a[0, 1] = 3e34
    if t >= 15:
        a = a * 1e-35
    explicit_unscale = t in (4, 12)
    new_scale = 1024.0 if t == 10 else 2.0 ** 127 if t == 14 else None
    opt_w.zero_grad()
    opt_b.zero_grad()
    loss = (w * a).sum() + (b * c).sum()
    scaler.scale(loss).backward()
    if explicit_unscale:
        scaler.unscale_(opt_w)
        unscaled_grad_w = floats(w.grad)
    w_before, b_before = w.detach().clone(), b.detach().clone()
    scaler.step(opt_w)
    scaler.step(opt_b)
    found_w = bool(scaler._found_inf_per_device(opt_w)[w.device].item())
    found_b = bool(scaler._found_inf_per_device(opt_b)[b.device].item())
    if new_scale is None:
        scaler.update()
    else:
        scaler.update(new_scale)
    step = {
        "a": floats(a), "c": floats(c), "explicit_unscale": explicit_unscale, "new_scale": new_scale,
        "found_inf_w": found_w, "found_inf_b": found_b,
        "stepped_w": not torch.equal(w.detach(), w_before) or not found_w,
        "stepped_b": not torch.equal(b.detach(), b_before) or not found_b,
        "grad_w": floats(w.grad), "grad_b": floats(b.grad),
        "w": floats(w), "b": floats(b),
        "scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker(),
    }
    if explicit_unscale:
        step["unscaled_grad_w"] = unscaled_grad_w
    fixture["steps"].append(step)
fixture["state_dict"] = scaler.state_dict()

with open(OUT, "w") as f:
    json.dump(fixture, f, indent=None, separators=(",", ":"))
    f.write("\n")
print("wrote", OUT, "scales", [s["scale"] for s in fixture["steps"]])
