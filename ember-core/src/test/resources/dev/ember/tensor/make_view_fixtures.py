"""Writes view_fixtures.txt: PyTorch's answers to the view ops' arguments (tricky ones: negative,
out of range, extreme, 0-d tensors, size-0 and size-1 dims), for ViewArgumentsTest.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_view_fixtures.py
One case a line:  <op> <shape> <args> -> <answer>
  shape   the base's sizes, comma-separated ("-" for a 0-d tensor); the base is arange(numel).reshape(shape)
  args    the op's int arguments, comma-separated ("-" for none); for expand, reshape, view and permute
          they are the one list argument
  answer  "error" (PyTorch raised), or one "<sizes>:<values>" per result (split and chunk give several),
          separated by spaces; the values are the base elements the result shows, in row-major order
One deliberate difference: torch 1.13 lets expand put a negative size (not -1) in a new leading dim
when the tensor has no elements, and returns a tensor with a negative size (expand(-2, 0) of a [0]
tensor is [-2, 0]); such a result is written as "error", what Ember (and any other tensor) says.
"""
import os
import random

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "view_fixtures.txt")
MIN, MAX = -2**31, 2**31 - 1
EXTREMES = [MIN, MIN + 1, MAX - 1, MAX]


def call(op, x, a):
    if op == "narrow":
        return x.narrow(a[0], a[1], a[2])
    if op == "slice":
        return torch.ops.aten.slice.Tensor(x, a[0], a[1], a[2], a[3])
    if op == "select":
        return x.select(a[0], a[1])
    if op == "expand":
        return x.expand(a)
    if op == "reshape":
        return x.reshape(a)
    if op == "view":
        return x.view(a)
    if op == "squeeze":
        return x.squeeze() if not a else x.squeeze(a[0])
    if op == "unsqueeze":
        return x.unsqueeze(a[0])
    if op == "transpose":
        return x.transpose(a[0], a[1])
    if op == "permute":
        return x.permute(a)
    if op == "flatten":
        return x.flatten(a[0], a[1])
    if op == "split":
        return x.split(a[0], a[1])
    if op == "chunk":
        return x.chunk(a[0], a[1])
    raise ValueError(op)


def ints(v):
    return ",".join(str(i) for i in v) if len(v) else "-"


def line(op, shape, args):
    x = torch.arange(int(torch.tensor(shape, dtype=torch.int64).prod()) if shape else 1).reshape(shape)
    try:
        r = call(op, x, args)
        pieces = list(r) if isinstance(r, (list, tuple)) else [r]
        if any(d < 0 for p in pieces for d in p.shape):
            raise RuntimeError("a negative size")  # see the module doc
        if sum(p.numel() for p in pieces) > 20000:
            return None  # a huge (stride-0) result: not worth a line
        answer = " ".join("%s:%s" % (ints(p.shape), ints(p.reshape(-1).tolist())) for p in pieces)
    except (RuntimeError, IndexError, ValueError):
        answer = "error"
    return "%s %s %s -> %s" % (op, ints(shape), ints(args), answer)


rnd = random.Random(33)


def shape():
    return [0 if rnd.random() < 0.15 else rnd.choice([1, 1, 2, 3, 4]) for _ in range(rnd.randrange(5))]


def arg(n):
    r = rnd.randrange(20)
    if r == 0:
        return rnd.choice(EXTREMES)
    if r < 4:
        return rnd.randrange(3) - 1
    return rnd.randrange(2 * n + 5) - n - 2


def dim(rank):
    if rank > 0 and rnd.random() < 0.6:
        return rnd.randrange(-rank, rank)  # a valid dim, so that the other arguments are what is tested
    return rnd.choice(EXTREMES) if rnd.randrange(40) == 0 else rnd.randrange(2 * rank + 4) - rank - 2


def size_of(s, d):
    return 0 if not s else s[d] if -len(s) <= d < len(s) else rnd.choice(s)


def random_case(op):
    s = shape()
    r = len(s)
    if op == "narrow":
        d = dim(r)
        n = size_of(s, d)
        return s, [d, arg(n), arg(n) if rnd.randrange(5) == 0 else rnd.randrange(n + 2)]
    if op == "slice":
        d = dim(r)
        n = size_of(s, d)
        return s, [d, arg(n), arg(n), rnd.choice([-1, 0, 1, 1, 2, 3, MAX])]
    if op == "select":
        d = dim(r)
        return s, [d, arg(size_of(s, d))]
    if op == "expand":
        lead = rnd.randrange(3) - 1
        sizes = []
        for i in range(max(0, r + lead)):
            have = 1 if i < lead else s[i - lead] if 0 <= i - lead < r else 1
            sizes.append(rnd.choice([have, have, -1, rnd.randrange(4), -2]))
        return s, sizes
    if op in ("reshape", "view"):
        n = 1
        for v in s:
            n *= v
        sizes = [rnd.choice([-1, 0, 1, 2, 3, n, -2]) for _ in range(rnd.randrange(4))]
        return s, sizes
    if op == "squeeze":
        return s, [] if rnd.randrange(4) == 0 else [dim(r)]
    if op == "unsqueeze":
        return s, [dim(r + 1)]
    if op == "transpose":
        return s, [dim(r), dim(r)]
    if op == "permute":
        p = list(range(r))
        rnd.shuffle(p)
        p = [v - r if rnd.random() < 0.3 else v for v in p]
        if rnd.random() < 0.2:
            p = p[:-1] if p and rnd.random() < 0.5 else p + [dim(r)]
        elif p and rnd.random() < 0.2:
            p[0] = p[-1]
        return s, p
    if op == "flatten":
        return s, [dim(r), dim(r)]
    if op == "split":
        d = dim(r)
        n = size_of(s, d)
        return s, [arg(n) if rnd.randrange(5) == 0 else rnd.randrange(n + 2), d]
    if op == "chunk":
        d = dim(r)
        n = size_of(s, d)
        return s, [arg(n) if n > 0 and rnd.randrange(5) == 0 else rnd.randrange(n + 3) - 1, d]
    raise ValueError(op)


CHOSEN = [
    # the cases and their neighbours
    ("narrow", [3, 2], [0, -1, 1]), ("narrow", [3, 2], [0, 1, 5]), ("narrow", [3, 2], [0, 0, -1]),
    ("narrow", [3, 2], [0, 3, 0]), ("narrow", [3, 2], [0, 3, 1]), ("narrow", [3, 2], [0, -3, 3]),
    ("narrow", [3, 2], [0, -4, 1]), ("narrow", [3, 2], [-1, -1, 1]), ("narrow", [3, 2], [2, 0, 1]),
    ("narrow", [3, 2], [0, 1, MAX]), ("narrow", [0, 3], [0, -1, 0]), ("narrow", [0, 3], [0, 0, 0]),
    ("narrow", [0, 3], [0, 1, 0]), ("narrow", [0, 3], [0, -2, 0]), ("narrow", [], [0, 0, 1]),
    ("narrow", [], [0, 0, 0]),
    ("slice", [5], [0, -2, 100, 1]), ("slice", [5], [0, -100, 2, 1]), ("slice", [5], [0, 1, 5, MAX]),
    ("slice", [5], [0, MIN, MAX, 4]), ("slice", [5], [0, 4, 2, 1]), ("slice", [5], [0, 0, 5, 0]),
    ("slice", [5], [0, 0, 5, -1]), ("slice", [0], [0, -1, 1, 1]), ("slice", [], [0, 0, 1, 1]),
    ("slice", [], [-1, 0, 1, 1]),
    ("select", [3, 2], [0, -1]), ("select", [3, 2], [0, 3]), ("select", [3, 2], [0, -4]),
    ("select", [0, 2], [0, 0]), ("select", [], [0, 0]), ("select", [], [-1, 0]),
    ("expand", [3, 1], [2, -1, 4]), ("expand", [3, 1], [-1, 3, 4]), ("expand", [3, 1], [2, 4]),
    ("expand", [3, 1], [3, 0]), ("expand", [3, 1], [4]), ("expand", [], []), ("expand", [], [0]),
    ("expand", [], [-1]), ("expand", [0], [2, 0]), ("expand", [0], [1]), ("expand", [1], [0]),
    ("reshape", [0], [0, -1]), ("reshape", [6], [-1, 0]), ("reshape", [6], [-1, -1]), ("reshape", [6], [2, -2]),
    ("reshape", [2, 0], [-1]), ("reshape", [], [-1]), ("reshape", [], []), ("reshape", [1], []),
    ("squeeze", [], [0]), ("squeeze", [], [-1]), ("squeeze", [], [1]), ("squeeze", [1, 0], [0]),
    ("unsqueeze", [], [0]), ("unsqueeze", [], [-1]), ("unsqueeze", [], [1]), ("unsqueeze", [2], [2]),
    ("unsqueeze", [2], [-3]), ("unsqueeze", [2], [3]),
    ("transpose", [], [0, -1]), ("transpose", [], [0, 1]), ("transpose", [2, 3], [-1, -2]),
    ("permute", [], []), ("permute", [], [0]), ("permute", [2, 3], [0, 0]), ("permute", [2, 3], [-1, 0]),
    ("flatten", [], [0, 0]), ("flatten", [], [-1, 0]), ("flatten", [], [0, 1]), ("flatten", [2, 3], [1, 0]),
    ("split", [0, 3], [0, 0]), ("split", [0, 3], [2, 0]), ("split", [3, 2], [0, 0]), ("split", [3, 2], [-1, 0]),
    ("split", [5], [MAX, 0]), ("split", [], [1, 0]),
    ("chunk", [0, 3], [3, 0]), ("chunk", [5], [MAX, 0]), ("chunk", [5], [0, 0]), ("chunk", [6], [4, 0]),
    ("chunk", [], [1, 0]),
]

lines = [line(op, s, a) for op, s, a in CHOSEN]
for op in ["narrow", "slice", "select", "expand", "reshape", "view", "squeeze", "unsqueeze", "transpose",
           "permute", "flatten", "split", "chunk"]:
    for _ in range(100):
        s, a = random_case(op)
        lines.append(line(op, s, a))
with open(OUT, "w") as f:
    f.write("\n".join(l for l in lines if l is not None) + "\n")
print("wrote", OUT, len([l for l in lines if l is not None]), "cases")
