#!/usr/bin/python3
"""Reference values for GeneratorFixtureTest: what PyTorch's CPU generator draws for a seed.

Run with Debian's torch (1.13):  /usr/bin/python3 make_random_fixtures.py  (writes random_fixtures.txt here).
Format, one block per tensor:  'tensor <name> <ndim> <dims...>' then a line of float64 values.
Each case reseeds (torch.manual_seed, or a torch.Generator for the explicit-generator cases) and
records what one call draws; '<case>.next' is a float64 rand(3) drawn right after it, so a case
that consumes too many or too few numbers fails too. Modules are initialised by their
constructors after torch.manual_seed; LeNet-5 (as in shared/peers/fashion.py)
is summarised per parameter by its first and last 16 values and its float64 sum.
"""
import math
import os

import torch
import torch.nn as nn

out = []


def put(name, t):
    t = t.detach().to(torch.float64).contiguous()
    out.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    out.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


def case(name, seed, fn):
    torch.manual_seed(seed)
    put(name, fn())
    put(name + ".next", torch.rand(3, dtype=torch.float64))


case("rand_f32", 0, lambda: torch.rand(37))
case("rand_f64", 1, lambda: torch.rand(9, dtype=torch.float64))
case("randn_f32_small", 2, lambda: torch.cat([torch.randn(5), torch.randn(3)]))  # the cached pair carries over
case("randn_f64_small", 3, lambda: torch.randn(7, dtype=torch.float64))
case("randn_f32_blocks", 4, lambda: torch.randn(37))  # two blocks of 16, the last 16 redrawn
case("randn_f32_whole_blocks", 18, lambda: torch.randn(2, 16))  # no partial block
case("randn_f64_blocks", 5, lambda: torch.randn(37, dtype=torch.float64))
case("randint", 6, lambda: torch.randint(-5, 1000, (20,)))
case("randint_wide", 7, lambda: torch.randint(0, 1 << 40, (6,)))
case("randperm", 8, lambda: torch.randperm(1000))
case("bernoulli_f32", 9, lambda: torch.bernoulli(torch.linspace(0, 1, 30)))
case("bernoulli_f64", 10, lambda: torch.bernoulli(torch.linspace(0, 1, 30, dtype=torch.float64)))
case("dropout", 11, lambda: nn.functional.dropout(torch.ones(40), 0.25, True))
case("uniform", 12, lambda: torch.empty(13).uniform_(-0.37, 0.37))
case("normal", 13, lambda: torch.empty(37).normal_(0.5, 2.0))
case("trunc_normal", 14, lambda: nn.init.trunc_normal_(torch.empty(37), 0.1, 0.5, -0.4, 0.6))
case("orthogonal", 15, lambda: nn.init.orthogonal_(torch.empty(4, 6)))
case("xavier_normal", 16, lambda: nn.init.xavier_normal_(torch.empty(5, 7)))

g = torch.Generator().manual_seed(17)
put("generator_randperm", torch.stack([torch.randperm(50, generator=g) for _ in range(3)]))  # a loader's 3 epochs


def module(name, seed, make):
    torch.manual_seed(seed)
    for k, v in make().state_dict().items():
        put(name + "." + k, v)
    put(name + ".next", torch.rand(3, dtype=torch.float64))


module("linear", 20, lambda: nn.Linear(5, 3))
module("conv2d", 21, lambda: nn.Conv2d(2, 3, 3))
module("embedding", 22, lambda: nn.Embedding(10, 4))

torch.manual_seed(0)
lenet_features = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
lenet_classifier = nn.Sequential(nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                                 nn.Linear(84, 10))
for prefix, part in (("features", lenet_features), ("classifier", lenet_classifier)):
    for k, v in part.state_dict().items():
        flat = v.reshape(-1).to(torch.float64)
        put("lenet.%s.%s.head" % (prefix, k), flat[:16])
        put("lenet.%s.%s.tail" % (prefix, k), flat[-16:])
        put("lenet.%s.%s.sum" % (prefix, k), flat.sum().reshape(1))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_fixtures.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
