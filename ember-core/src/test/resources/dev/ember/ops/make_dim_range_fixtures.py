"""Writes dim_range_fixtures.txt: which dims PyTorch accepts for each dim-taking op, and the result
shape, for DimRangeTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_dim_range_fixtures.py
One case a line: `<op>|<input shape>|<dims>|<result shape or "error">`, e.g. `sum|[2, 3]|[-1]|[2]`.
Every op gets every (rank 0-4, dim -6..6) pair on random sizes 1-3; ops taking a list of dims also get
random pairs of dims (duplicates included). Inputs: float32 ones; gather, scatter and take_along_dim
use an int64 zero index of the input's shape, index_select the index [0], cat and stack two copies.
"""
import os
import random

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dim_range_fixtures.txt")
rng = random.Random(33)


def zeros_index(x):
    return torch.zeros(x.shape, dtype=torch.int64)


SINGLE = {
    "argmax": lambda x, d: x.argmax(d),
    "argmin": lambda x, d: x.argmin(d, keepdim=True),
    "max": lambda x, d: x.max(d)[0],
    "min": lambda x, d: x.min(d, keepdim=True)[0],
    "prod": lambda x, d: x.prod(d),
    "all": lambda x, d: x.bool().all(d),
    "any": lambda x, d: x.bool().any(d, keepdim=True),
    "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d),
    "cumsum": lambda x, d: x.cumsum(d),
    "gather": lambda x, d: x.gather(d, zeros_index(x)),
    "scatter": lambda x, d: x.scatter(d, zeros_index(x), torch.ones_like(x)),
    "scatter_add": lambda x, d: x.scatter_add(d, zeros_index(x), torch.ones_like(x)),
    "index_select": lambda x, d: x.index_select(d, torch.tensor([0])),
    "take_along_dim": lambda x, d: torch.take_along_dim(x, zeros_index(x), d),
    "cat": lambda x, d: torch.cat([x, x], d),
    "stack": lambda x, d: torch.stack([x, x], d),
}
MULTI = {
    "sum": lambda x, ds: x.sum(ds),
    "mean": lambda x, ds: x.mean(ds, keepdim=True),
    "var": lambda x, ds: x.var(ds),
    "std": lambda x, ds: x.std(ds, keepdim=True),
    "amax": lambda x, ds: x.amax(ds),
    "amin": lambda x, ds: x.amin(ds, keepdim=True),
    "logsumexp": lambda x, ds: x.logsumexp(ds),
    "norm": lambda x, ds: torch.linalg.vector_norm(x, 2, ds),
}


def fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def shape_of(rank):
    return [rng.randint(1, 3) for _ in range(rank)]


def run(f, shape, arg):
    x = torch.ones(shape, dtype=torch.float32)
    try:
        return fmt(f(x, arg).shape)
    except (IndexError, RuntimeError):
        return "error"


lines = []
for name, f in list(SINGLE.items()) + list(MULTI.items()):
    multi = name in MULTI
    for rank in range(5):
        for d in range(-6, 7):
            shape = shape_of(rank)
            lines.append("%s|%s|%s|%s" % (name, fmt(shape), fmt([d]), run(f, shape, [d] if multi else d)))
    if multi:
        for _ in range(60):
            shape = shape_of(rng.randint(0, 4))
            ds = [rng.randint(-6, 6), rng.randint(-6, 6)]
            lines.append("%s|%s|%s|%s" % (name, fmt(shape), fmt(ds), run(f, shape, ds)))

with open(OUT, "w") as out:
    out.write("\n".join(lines) + "\n")
