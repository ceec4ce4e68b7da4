"""PyTorch 1.13 counterpart of examples/.../DistillFashion.java: per seed a LeNet-5 teacher, then the 784-64-10 MLP
student alone and distilled (Hinton: alpha*T^2*KL(batchmean) + (1-alpha)*CE), Adam 1e-3, batch 128, same student
init for both. Prints one line per seed and the means.

  /usr/bin/python3 examples/pytorch/distill_fashion.py SEEDS TEACHER_EPOCHS STUDENT_EPOCHS T ALPHA
"""
import gzip
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

D = "/usr/share/datasets/fashion-mnist/"


def idx(name, offset):
    with gzip.open(D + name + ".gz") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


xtr = torch.tensor(idx("train-images-idx3-ubyte", 16), dtype=torch.float32).reshape(-1, 1, 28, 28) / 255
ytr = torch.tensor(idx("train-labels-idx1-ubyte", 8), dtype=torch.int64)
xte = torch.tensor(idx("t10k-images-idx3-ubyte", 16), dtype=torch.float32).reshape(-1, 1, 28, 28) / 255
yte = torch.tensor(idx("t10k-labels-idx1-ubyte", 8), dtype=torch.int64)
seeds, tep, sep = (int(a) for a in sys.argv[1:4])
T, alpha = float(sys.argv[4]), float(sys.argv[5])
torch.set_num_threads(2)


def lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def student():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))


def fit(model, epochs, seed, teacher=None):
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(xtr), generator=g)
        for i in range(0, len(xtr), 128):
            b = perm[i:i + 128]
            x, y = xtr[b], ytr[b]
            out = model(x)
            if teacher is None:
                loss = F.cross_entropy(out, y)
            else:
                with torch.no_grad():
                    t = teacher(x)
                soft = F.kl_div(F.log_softmax(out / T, 1), F.log_softmax(t / T, 1), reduction="batchmean",
                                log_target=True)
                loss = alpha * T * T * soft + (1 - alpha) * F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()


def acc(model):
    with torch.no_grad():
        return (model(xte).argmax(1) == yte).float().mean().item()


sums = np.zeros(3)
for seed in range(seeds):
    torch.manual_seed(seed)
    teacher = lenet()
    fit(teacher, tep, seed)
    teacher.eval()
    torch.manual_seed(1000 + seed)
    alone = student()
    torch.manual_seed(1000 + seed)
    distilled = student()
    fit(alone, sep, seed)
    fit(distilled, sep, seed, teacher)
    r = (acc(teacher), acc(alone), acc(distilled))
    sums += r
    print("seed=%d teacher=%.4f alone=%.4f distilled=%.4f" % ((seed,) + r), flush=True)
print("mean_teacher=%.4f mean_alone=%.4f mean_distilled=%.4f" % tuple(sums / seeds))
