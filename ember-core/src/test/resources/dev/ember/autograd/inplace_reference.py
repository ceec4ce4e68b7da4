#!/usr/bin/python3
"""PyTorch 1.13's values for the cases of InPlaceAutogradTest (which derives them by hand; this prints them).

    /usr/bin/python3 inplace_reference.py

Where Ember is more permissive than torch 1.13 the case says so: y.mul_(y) on a non-leaf (torch: the saved
operand was modified; Ember reads the operand's old value), and an in-place write through a view made of a buffer
before the buffer had a history (torch 1.13 calls the regenerated view a leaf).
"""
import torch

d = torch.float64

x = torch.tensor([-1.0, 0.5, 2.0], dtype=d, requires_grad=True)
y = x * 2; z = y.exp(); y.relu_(); (z.sum() + y.sum()).backward()
print("rebase", x.grad.tolist())  # 2 exp(2x) + 2 [x > 0]

x = torch.arange(1.0, 7, dtype=d).reshape(2, 3).requires_grad_(); c = torch.arange(1.0, 7, dtype=d).reshape(2, 3)
y = x * 2; y.select(0, 0).mul_(3); (y * c).sum().backward()
print("copy_slices", x.grad.flatten().tolist(), "grad_fn", type(y.grad_fn).__name__)

x = torch.arange(1.0, 7, dtype=d).reshape(2, 3).requires_grad_(); y = x * 2; col = y.select(1, 1)
col.mul_(3).relu_(); col.sum().backward()
print("strided view", x.grad.flatten().tolist())

xs = [-1, 0.5, 2, 0, 1, -0.5]
x = torch.tensor(xs, dtype=d).reshape(2, 3).requires_grad_(); y = x * 2; v = y.reshape(6); y.exp_(); v.sum().backward()
print("older view", x.grad.flatten().tolist())

x = torch.tensor(xs, dtype=d).reshape(2, 3).requires_grad_(); y = x * 2; v = y.reshape(6); row = y.select(0, 1)
y.mul_(3); row.mul_(torch.tensor([1.0, 10, 100], dtype=d)); v.sum().backward()
print("sibling view", x.grad.flatten().tolist())

p = torch.tensor([1.0, 2], dtype=d, requires_grad=True); q = p * 1; e = q.expand(3, 2); q.mul_(5); e.sum().backward()
print("expanded view", p.grad.tolist())

a = torch.tensor([1.0, 2], dtype=d, requires_grad=True); b = torch.tensor([3.0, 4], dtype=d, requires_grad=True)
c = torch.arange(1.0, 7, dtype=d).reshape(3, 2)
out = torch.zeros(3, 2, dtype=d); out.select(0, 0).copy_(a); out.select(0, 1).copy_(b * 2); (out * c).sum().backward()
print("slices of a buffer", a.grad.tolist(), b.grad.tolist())

x = torch.tensor([1.0, 2], dtype=d, requires_grad=True); y = x * 1; z = y * 3; y.add_(1)
y.register_hook(lambda g: g * 10); (z.sum() + y.sum()).backward()
print("hook", x.grad.tolist())

x = torch.tensor([1.0, 2, 3], dtype=d, requires_grad=True); w = torch.tensor([4.0, 5, 6], dtype=d, requires_grad=True)
y = x * 3; y.copy_(w * 2); y.sum().backward()
print("copy_", x.grad.tolist(), w.grad.tolist())

p = torch.tensor([1.0, 2], dtype=d, requires_grad=True); q = p * 3; q.fill_(7).mul(p).sum().backward()
print("fill_", p.grad.tolist())

for make in [lambda: torch.ones(3, requires_grad=True).relu_(),
             lambda: torch.ones(2, 3, requires_grad=True)[1].mul_(2)]:
    try:
        make()
    except RuntimeError as e:
        print("error:", e)
x = torch.tensor([0.5, -1, 2], requires_grad=True); y = x.sigmoid(); y.mul_(2)
try:
    y.sum().backward()
except RuntimeError as e:
    print("error:", str(e).split(" Hint")[0])
