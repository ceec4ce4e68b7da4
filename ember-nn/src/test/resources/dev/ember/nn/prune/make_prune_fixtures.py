#!/usr/bin/python3
"""Reference masks for PruneFixtureTest: torch.nn.utils.prune (torch 1.13) on random float32 weights.

Run with Debian's torch:  /usr/bin/python3 make_prune_fixtures.py  (writes prune_fixtures.txt here).
Format as modules/make_module_fixtures.py: 'tensor <name> <ndim> <dims...>' then the values.
Per case: '<case>.w' (or '<case>.a.w', '<case>.b.w') the weights before pruning, '<case>.mask<k>' the mask after
the k-th pruning call (k from 1), so repeated pruning checks how torch combines masks. The weights are random
normal, so no two magnitudes or norms tie (torch.topk leaves the order of ties unspecified).
"""
import os
import torch
import torch.nn as nn
import torch.nn.utils.prune as prune

torch.manual_seed(0)
out = []


def put(name, t):
    t = t.detach().to(torch.float64).contiguous()
    out.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    out.append(" ".join("%.9g" % float(v) for v in t.reshape(-1).tolist()))


# unstructured L1 twice (a fraction, then a count), then L2 rows over what is left
lin = nn.Linear(6, 5)
put("l1.w", lin.weight)
prune.l1_unstructured(lin, "weight", amount=0.3)
put("l1.mask1", lin.weight_mask)
prune.l1_unstructured(lin, "weight", amount=4)
put("l1.mask2", lin.weight_mask)
prune.ln_structured(lin, "weight", amount=0.4, n=2, dim=0)
put("l1.mask3", lin.weight_mask)

# structured on a conv weight: output channels by L1, then input channels by the max norm
conv = nn.Conv2d(3, 6, 3)
put("ln.w", conv.weight)
prune.ln_structured(conv, "weight", amount=0.5, n=1, dim=0)
put("ln.mask1", conv.weight_mask)
prune.ln_structured(conv, "weight", amount=1, n=float("inf"), dim=1)
put("ln.mask2", conv.weight_mask)
prune.l1_unstructured(conv, "weight", amount=0.25)
put("ln.mask3", conv.weight_mask)

# global L1 over two layers, twice
a = nn.Linear(4, 3)
b = nn.Linear(5, 2)
put("global.a.w", a.weight)
put("global.b.w", b.weight)
params = [(a, "weight"), (b, "weight")]
prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=0.35)
put("global.a.mask1", a.weight_mask)
put("global.b.mask1", b.weight_mask)
prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=0.2)
put("global.a.mask2", a.weight_mask)
put("global.b.mask2", b.weight_mask)

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "prune_fixtures.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
