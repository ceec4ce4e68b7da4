"""Writes optim_fixtures.txt: 20-step parameter trajectories of PyTorch's optimizers, for
OptimReferenceTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_optim_fixtures.py
Setup: three parameters p0 [3, 4], p1 [4], p2 [2, 3] in two groups ([p0, p1] with the case's options,
[p2] with the overrides in GROUP1) and the gradient of a fixed function plus per-step noise:
  grad_i(p, t) = a_i * p + b_i + 0.4 * p^3 + noise_{t, i}
p2 has no gradient at step index 4 (optimizers skip it). Tensors: `a.i`, `b.i`, `init.i`,
`noise.t.i`, `hnoise.t.i` (Sophia's sampled-loss gradient: a_i * p + hnoise), and per case
`<case>.step1.i` (after one step) and `<case>.final.i` (after 20 steps). Cases ending in `_f32`
run in float32 (gradients computed in float64 from the float32 parameters, then rounded).
NAdam follows PyTorch >= 2.0 (torch 1.13 has a bug in mu_product_next, see the class below).
torch 1.13 has no Lion, LAMB, SAM or SophiaG: their updates are written below from the papers /
reference implementations (Lion: google/automl lion_pytorch.py; LAMB: You et al. 2019 Algorithm 2;
SAM: davda54/sam sam.py; SophiaG: Liuhong99/Sophia sophia.py, with update_hessian every k steps
after the step, as its train_sophiag.py does).
"""
import math
import os

import torch

torch.manual_seed(2024)
F64 = torch.float64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim_fixtures.txt")
STEPS = 20
SHAPES = [(3, 4), (4,), (2, 3)]
lines = []


def put(name, t):
    t = t.detach().to(F64)
    lines.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    lines.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


A = [torch.rand(s, dtype=F64) + 0.5 for s in SHAPES]
B = [torch.randn(s, dtype=F64) for s in SHAPES]
INIT = [torch.randn(s, dtype=F64) for s in SHAPES]
NOISE = [[0.3 * torch.randn(s, dtype=F64) for s in SHAPES] for _ in range(STEPS)]
HNOISE = [[0.3 * torch.randn(s, dtype=F64) for s in SHAPES] for _ in range(STEPS)]
for i in range(3):
    put("a.%d" % i, A[i])
    put("b.%d" % i, B[i])
    put("init.%d" % i, INIT[i])
for t in range(STEPS):
    for i in range(3):
        put("noise.%d.%d" % (t, i), NOISE[t][i])
        put("hnoise.%d.%d" % (t, i), HNOISE[t][i])


def set_grads(ps, t, noise=NOISE, hess=False):
    with torch.no_grad():
        for i, p in enumerate(ps):
            if i == 2 and t == 4:
                p.grad = None
                continue
            x = p.detach().to(F64)
            g = A[i] * x + noise[t][i] if hess else A[i] * x + B[i] + 0.4 * x * x * x + noise[t][i]
            p.grad = g.to(p.dtype)


# ---------------------------------------------------------------- reference updates (not in torch 1.13)
class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay, maximize=maximize))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                st = self.state[p]
                if len(st) == 0:
                    st["exp_avg"] = torch.zeros_like(p)
                m = st["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                update = (m * b1 + g * (1 - b1)).sign_()
                p.add_(update, alpha=-group["lr"])
                m.mul_(b2).add_(g, alpha=1 - b2)


class NAdam(torch.optim.Optimizer):
    """torch.optim.NAdam as PyTorch >= 2.0 computes it: torch 1.13 multiplies mu_t into
    mu_product_next twice (mu_product * mu * mu_next, fixed upstream to mu_product * mu_next)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = 0
                    st["mu_product"] = 1.0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                t = st["step"]
                g = p.grad
                if group["weight_decay"] != 0:
                    g = g.add(p, alpha=group["weight_decay"])
                mu = b1 * (1. - 0.5 * (0.96 ** (t * group["momentum_decay"])))
                mu_next = b1 * (1. - 0.5 * (0.96 ** ((t + 1) * group["momentum_decay"])))
                st["mu_product"] *= mu
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = v.div(1 - b2 ** t).sqrt().add_(group["eps"])
                lr = group["lr"]
                p.addcdiv_(g, denom, value=-lr * (1. - mu) / (1. - st["mu_product"]))
                p.addcdiv_(m, denom, value=-lr * mu_next / (1. - st["mu_product"] * mu_next))


class Lamb(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, bias_correction=True):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      bias_correction=bias_correction))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                t = st["step"]
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                bc1 = 1 - b1 ** t if group["bias_correction"] else 1.0
                bc2 = 1 - b2 ** t if group["bias_correction"] else 1.0
                r = (m / bc1) / ((v / bc2).sqrt() + group["eps"]) + group["weight_decay"] * p
                wn, rn = p.norm(), r.norm()
                trust = (wn / rn).item() if wn > 0 and rn > 0 else 1.0
                p.add_(r, alpha=-group["lr"] * trust)


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
        super().__init__(params, dict(rho=rho, adaptive=adaptive, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self):
        grad_norm = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                self.state[p]["old_p"] = p.data.clone()
                e_w = (torch.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                p.add_(e_w)
        self.zero_grad(set_to_none=True)

    @torch.no_grad()
    def second_step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data = self.state[p]["old_p"]
        self.base_optimizer.step()

    def step(self, closure):
        self.first_step()
        closure()
        self.second_step()

    def _grad_norm(self):
        return torch.norm(torch.stack([((torch.abs(p) if group["adaptive"] else 1.0) * p.grad).norm(p=2)
                                       for group in self.param_groups for p in group["params"]
                                       if p.grad is not None]), p=2)


class SophiaG(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.965, 0.99), rho=0.04, weight_decay=1e-1, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, rho=rho, weight_decay=weight_decay, maximize=maximize))

    def _init(self, p):
        st = self.state[p]
        if len(st) == 0:
            st["step"] = torch.tensor(0.)
            st["exp_avg"] = torch.zeros_like(p)
            st["hessian"] = torch.zeros_like(p)
        return st

    @torch.no_grad()
    def update_hessian(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                self._init(p)["hessian"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)

    @torch.no_grad()
    def step(self, bs=5120):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self._init(p)
                g = -p.grad if group["maximize"] else p.grad
                st["step"] += 1
                p.mul_(1 - group["lr"] * group["weight_decay"])
                m, h = st["exp_avg"], st["hessian"]
                m.mul_(b1).add_(g, alpha=1 - b1)
                ratio = (m.abs() / (group["rho"] * bs * h + 1e-15)).clamp(None, 1)
                p.addcmul_(m.sign(), ratio, value=-group["lr"])


O = torch.optim
CASES = [
    # name, constructor, options of group 0, overrides of group 1, extra
    ("sgd_plain", O.SGD, dict(lr=0.05), dict(lr=0.02)),
    ("sgd_momentum", O.SGD, dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01), dict(weight_decay=0.0)),
    ("sgd_nesterov", O.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), dict(lr=0.02)),
    ("sgd_maximize", O.SGD, dict(lr=0.01, momentum=0.5, maximize=True), dict(lr=0.005)),
    ("adam", O.Adam, dict(lr=0.01), dict(lr=0.005)),
    ("adam_wd_ams", O.Adam, dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True), dict(weight_decay=0.0)),
    ("adam_max", O.Adam, dict(lr=0.01, eps=1e-6, maximize=True), dict(lr=0.005)),
    ("adamw", O.AdamW, dict(lr=0.01, weight_decay=0.1), dict(weight_decay=0.0)),
    ("adamw_ams", O.AdamW, dict(lr=0.01, betas=(0.85, 0.95), weight_decay=0.05, amsgrad=True), dict(lr=0.005)),
    ("nadam", NAdam, dict(lr=0.01), dict(lr=0.005)),
    ("nadam_wd", NAdam, dict(lr=0.02, weight_decay=0.1, momentum_decay=3e-3), dict(weight_decay=0.0)),
    ("radam", O.RAdam, dict(lr=0.01), dict(lr=0.005)),
    ("radam_wd", O.RAdam, dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1), dict(weight_decay=0.0)),
    ("adamax", O.Adamax, dict(lr=0.02), dict(lr=0.01)),
    ("adamax_wd", O.Adamax, dict(lr=0.02, weight_decay=0.1, maximize=True), dict(weight_decay=0.0)),
    ("rmsprop", O.RMSprop, dict(lr=0.01), dict(lr=0.005)),
    ("rmsprop_centered", O.RMSprop, dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.01),
     dict(weight_decay=0.0)),
    ("adagrad", O.Adagrad, dict(lr=0.1), dict(lr=0.05)),
    ("adagrad_decay", O.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.05, initial_accumulator_value=0.1),
     dict(weight_decay=0.0)),
    ("adadelta", O.Adadelta, dict(lr=1.0), dict(lr=0.5)),
    ("adadelta_wd", O.Adadelta, dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True), dict(weight_decay=0.0)),
    ("lion", Lion, dict(lr=0.01), dict(lr=0.005)),
    ("lion_wd", Lion, dict(lr=0.01, betas=(0.95, 0.98), weight_decay=0.1), dict(weight_decay=0.0)),
    ("lamb", Lamb, dict(lr=0.01), dict(lr=0.005)),
    ("lamb_wd", Lamb, dict(lr=0.01, weight_decay=0.1, bias_correction=False), dict(weight_decay=0.0)),
    ("sophia", SophiaG, dict(lr=0.01, rho=0.04, weight_decay=0.1), dict(weight_decay=0.0)),
    ("sophia_b", SophiaG, dict(lr=0.02, betas=(0.9, 0.95), rho=0.02, weight_decay=0.0), dict(lr=0.01)),
    ("sgd_momentum_f32", O.SGD, dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01), dict(weight_decay=0.0)),
    ("adam_f32", O.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True), dict(lr=0.005)),
    ("adamw_f32", O.AdamW, dict(lr=0.01, weight_decay=0.1), dict(weight_decay=0.0)),
]
SAM_CASES = [
    ("sam_sgd", O.SGD, dict(rho=0.05, adaptive=False), dict(lr=0.05, momentum=0.9), dict(lr=0.02)),
    ("sam_adam_adaptive", O.Adam, dict(rho=0.5, adaptive=True), dict(lr=0.01), dict(lr=0.005)),
]
SOPHIA_BS = {"sophia": 10.0, "sophia_b": 2.0}
SOPHIA_K = 3


def params(dtype):
    return [x.clone().to(dtype).requires_grad_() for x in INIT]


for name, cls, g0, g1 in CASES:
    dtype = torch.float32 if name.endswith("_f32") else F64
    ps = params(dtype)
    opt = cls([dict(params=ps[:2]), dict(params=ps[2:], **g1)], **g0)
    for t in range(STEPS):
        set_grads(ps, t)
        if cls is SophiaG:
            opt.step(bs=SOPHIA_BS[name])
            if t % SOPHIA_K == SOPHIA_K - 1:
                set_grads(ps, t, HNOISE, hess=True)
                opt.update_hessian()
        else:
            opt.step()
        if t == 0:
            for i, p in enumerate(ps):
                put("%s.step1.%d" % (name, i), p)
    for i, p in enumerate(ps):
        put("%s.final.%d" % (name, i), p)

for name, base, sam_opts, g0, g1 in SAM_CASES:
    ps = params(F64)
    opt = SAM([dict(params=ps[:2]), dict(params=ps[2:], **g1)], base, **sam_opts, **g0)
    for t in range(STEPS):
        set_grads(ps, t)
        opt.step(lambda: set_grads(ps, t))
        if t == 0:
            for i, p in enumerate(ps):
                put("%s.step1.%d" % (name, i), p)
    for i, p in enumerate(ps):
        put("%s.final.%d" % (name, i), p)

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", OUT, len(lines) // 2, "tensors")
