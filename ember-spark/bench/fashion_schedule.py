"""PyTorch twin of ember-spark's Fashion-MNIST test settings (FashionRows.trainer), as one process at the global
batch: MLP 784-256-10, Adam, batch 64, lr 1e-3 for 4 epochs then 3e-4 and 1e-4, inputs in [0, 1], seed 42.
Prints the test accuracy after each epoch (torch 1.13, 1 thread: [0.8367, 0.8584, 0.8666, 0.876, 0.8824, 0.8864]).
Usage: python3 ember-spark/bench/fashion_schedule.py [DATA_DIR]"""
import gzip
import sys

import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(1)
d = (sys.argv[1] if len(sys.argv) > 1 else '/usr/share/datasets/fashion-mnist') + '/'


def images(f):
    with gzip.open(d + f) as g:
        return torch.tensor(np.frombuffer(g.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255)


def labels(f):
    with gzip.open(d + f) as g:
        return torch.tensor(np.frombuffer(g.read(), np.uint8, offset=8).astype(np.int64))


X, Y = images('train-images-idx3-ubyte.gz'), labels('train-labels-idx1-ubyte.gz')
Xt, Yt = images('t10k-images-idx3-ubyte.gz'), labels('t10k-labels-idx1-ubyte.gz')
torch.manual_seed(42)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), 1e-3)
g = torch.Generator().manual_seed(42)
acc = []
for lr in [1e-3, 1e-3, 1e-3, 1e-3, 3e-4, 1e-4]:
    for pg in opt.param_groups:
        pg['lr'] = lr
    perm = torch.randperm(60000, generator=g)
    for i in range(0, 60000, 64):
        idx = perm[i:i + 64]
        opt.zero_grad()
        nn.functional.cross_entropy(model(X[idx]), Y[idx]).backward()
        opt.step()
    with torch.no_grad():
        acc.append(round((model(Xt).argmax(1) == Yt).float().mean().item(), 4))
print(acc)
