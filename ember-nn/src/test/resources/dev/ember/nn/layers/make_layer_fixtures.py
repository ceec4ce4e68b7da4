#!/usr/bin/python3
"""Reference values for LayersFixtureTest: PyTorch's Linear, Bilinear and activation modules.

Run with Debian's torch:  /usr/bin/python3 make_layer_fixtures.py  (writes layer_fixtures.txt here).
Format, one block per tensor:  'tensor <name> <ndim> <dims...>' then a line of float64 values.
Each case writes its module's state_dict under '<case>.<key>', the inputs '<case>.input' (and
'<case>.input2' for Bilinear), the output '<case>.output', a fixed upstream gradient
'<case>.grad_output', and the gradients of sum(output * grad_output) with respect to every input
('<case>.grad_input', '<case>.grad_input2') and parameter ('<case>.grad.<key>').
Inputs include values at the activations' kinks and thresholds (0, +-1, +-3, large magnitudes).
"""
import os
import torch

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
out = []


def put(name, t):
    t = t.detach().to(torch.float64).contiguous()
    out.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    out.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


def case(name, module, *inputs):
    for k, v in module.state_dict().items():
        put(name + "." + k, v)
    xs = [x.clone().requires_grad_(True) for x in inputs]
    for i, x in enumerate(xs):
        put(name + ".input" + ("" if i == 0 else str(i + 1)), x)
    y = module(*xs)
    g = torch.randn_like(y)
    put(name + ".output", y)
    put(name + ".grad_output", g)
    (y * g).sum().backward()
    for i, x in enumerate(xs):
        put(name + ".grad_input" + ("" if i == 0 else str(i + 1)), x.grad)
    for k, p in module.named_parameters():
        put(name + ".grad." + k, p.grad)


def act_input(special=(0.0, 1.0, -1.0, 3.0, -3.0, 25.0, -25.0, 0.5, -0.5, 2.0, -2.0, 1e-3)):
    special = torch.tensor(special)
    return torch.cat([special, 3 * torch.randn(24)]).reshape(3, 12)


nn = torch.nn
case("linear", nn.Linear(5, 3), torch.randn(4, 5))
case("linear_3d_nobias", nn.Linear(5, 3, bias=False), torch.randn(2, 4, 5))
case("bilinear", nn.Bilinear(3, 2, 4), torch.randn(5, 3), torch.randn(5, 2))
case("bilinear_nobias", nn.Bilinear(3, 2, 4, bias=False), torch.randn(2, 5, 3), torch.randn(2, 5, 2))
case("relu", nn.ReLU(), act_input())
case("leaky_relu", nn.LeakyReLU(), act_input())
case("leaky_relu_0.2", nn.LeakyReLU(0.2), act_input())
case("elu", nn.ELU(), act_input())
case("elu_0.5", nn.ELU(alpha=0.5), act_input())
case("gelu", nn.GELU(), act_input())
case("gelu_tanh", nn.GELU(approximate="tanh"), act_input())
case("silu", nn.SiLU(), act_input())
case("mish", nn.Mish(), act_input())
case("sigmoid", nn.Sigmoid(), act_input())
case("tanh", nn.Tanh(), act_input())
case("softplus", nn.Softplus(), act_input())
case("softplus_beta2_threshold1", nn.Softplus(beta=2, threshold=1), act_input())
# not exactly at +-3: torch 1.13's own kernels disagree there (the scalar path takes the derivative
# at 3 from the left, 1.5; the vectorized path from the right, 1), so the kinks are approached instead
case("hardswish", nn.Hardswish(), act_input((0.0, 1.0, -1.0, 2.999, -2.999, 25.0, -25.0, 3.001, -3.001, 2.0, -2.0, 1e-3)))
case("softmax_dim1", nn.Softmax(dim=1), act_input())
case("softmax_dim0", nn.Softmax(dim=0), act_input())
case("log_softmax_dim1", nn.LogSoftmax(dim=1), act_input())
case("log_softmax_dim0", nn.LogSoftmax(dim=0), act_input())

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_fixtures.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
