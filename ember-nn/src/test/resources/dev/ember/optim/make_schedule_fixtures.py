"""Writes schedule_fixtures.txt: PyTorch's learning rates (and cycled momenta) for 100 steps of each
schedule, and ReduceLROnPlateau's on a fixed metric sequence, for SchedReferenceTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_schedule_fixtures.py
Setup: one optimizer with two parameter groups, lr 0.1 and 0.05 (SGD with momentum 0.9, or Adam for
`onecycle_adam`). Entry `<case>.lr` is [100, 2]: the groups' lr after construction (step 0) and after
each of 99 calls to step(). `<case>.mom` holds the groups' momentum (SGD) or beta1 (Adam) for the
momentum-cycling schedules. `plateau.metrics` [100] is the metric sequence fed to
ReduceLROnPlateau; `plateau.<case>.lr` [100, 2] the lrs after each step(metric).
`warmup_cosine` is SequentialLR([LinearLR(0.01, 1, 10), CosineAnnealingLR(90, 0.001)], [10]), the
reference for the LinearWarmup wrapper.
"""
import math
import os

import torch
from torch.optim import lr_scheduler as S

F64 = torch.float64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schedule_fixtures.txt")
STEPS = 100
lines = []


def put(name, t):
    t = torch.as_tensor(t, dtype=F64)
    lines.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    lines.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


def optimizer(adam=False):
    a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    groups = [dict(params=[a], lr=0.1), dict(params=[b], lr=0.05)]
    return torch.optim.Adam(groups) if adam else torch.optim.SGD(groups, lr=0.1, momentum=0.9)


def momentum(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


CASES = [
    ("step", lambda o: S.StepLR(o, 7, 0.5), False),
    ("multistep", lambda o: S.MultiStepLR(o, [10, 30, 30, 60], 0.3), False),
    ("exp", lambda o: S.ExponentialLR(o, 0.97), False),
    ("cosine", lambda o: S.CosineAnnealingLR(o, 30, 0.001), False),
    ("warm_restarts", lambda o: S.CosineAnnealingWarmRestarts(o, 10, 2, 0.002), False),
    ("warm_restarts1", lambda o: S.CosineAnnealingWarmRestarts(o, 15, 1, 0.0), False),
    ("poly", lambda o: S.PolynomialLR(o, 40, 2.0), False),
    ("linear", lambda o: S.LinearLR(o, 0.2, 0.9, 30), False),
    ("constant", lambda o: S.ConstantLR(o, 0.4, 12), False),
    ("onecycle", lambda o: S.OneCycleLR(o, 0.5, total_steps=100), True),
    ("onecycle_lin3", lambda o: S.OneCycleLR(o, 0.4, total_steps=100, pct_start=0.25, anneal_strategy="linear",
                                             div_factor=10, final_div_factor=100, three_phase=True), True),
    ("onecycle_adam", lambda o: S.OneCycleLR(o, 0.01, total_steps=120, base_momentum=0.8, max_momentum=0.9), True),
    ("cyclic_tri", lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=8, step_size_down=12), True),
    ("cyclic_tri2", lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=10, mode="triangular2"), True),
    ("cyclic_exp", lambda o: S.CyclicLR(o, 0.01, 0.1, step_size_up=6, mode="exp_range", gamma=0.98,
                                        cycle_momentum=False), False),
    ("lambda", lambda o: S.LambdaLR(o, lambda t: 1.0 / (1.0 + 0.05 * t)), False),
    ("sequential", lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, 1.0, 10), S.ExponentialLR(o, 0.95)], [10]), False),
    ("sequential3", lambda o: S.SequentialLR(o, [S.ConstantLR(o, 0.5, 5), S.CosineAnnealingLR(o, 20),
                                                 S.StepLR(o, 10, 0.5)], [5, 25]), False),
    ("warmup_cosine", lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.01, 1.0, 10), S.CosineAnnealingLR(o, 90, 0.001)],
                                               [10]), False),
]

for name, make, mom in CASES:
    opt = optimizer(adam=name.endswith("_adam"))
    sched = make(opt)
    lrs, moms = [], []
    for t in range(STEPS):
        if t > 0:
            opt.step()
            sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append(momentum(opt))
    put(name + ".lr", lrs)
    if mom:
        put(name + ".mom", moms)

# ReduceLROnPlateau: a loss that falls, stalls, wiggles and falls again
metrics = []
for t in range(STEPS):
    base = 1.0 / (1.0 + 0.1 * min(t, 20)) if t < 50 else 0.3 / (1.0 + 0.05 * (t - 50))
    metrics.append(base + 0.01 * math.sin(1.7 * t))
put("plateau.metrics", metrics)
PLATEAU = [
    ("min_rel", dict(mode="min", factor=0.5, patience=3, threshold=1e-3, cooldown=2, min_lr=0.002)),
    ("max_abs", dict(mode="max", factor=0.3, patience=2, threshold=0.01, threshold_mode="abs", cooldown=0,
                     min_lr=[0.001, 0.004])),
    ("min_abs_eps", dict(mode="min", factor=0.9, patience=1, threshold=0.0, threshold_mode="abs", min_lr=0.02,
                         eps=1e-3)),
]
for name, kw in PLATEAU:
    opt = optimizer()
    sched = S.ReduceLROnPlateau(opt, **kw)
    lrs = []
    for m in metrics:
        opt.step()
        sched.step(m if name != "max_abs" else -m)
        lrs.append([g["lr"] for g in opt.param_groups])
    put("plateau.%s.lr" % name, lrs)

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", OUT, len(lines) // 2, "tensors")
