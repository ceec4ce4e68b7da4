#!/usr/bin/python3
"""PyTorch side of the distillation measurement (examples' DistillFashion): is Ember's result PyTorch's too?

    /usr/bin/python3 bench/peers/pytorch_distill.py [LIMIT TEACHER_EPOCHS STUDENT_EPOCHS SEED]   (50000 10 10 0)

The same models, data split and training as DistillFashion: Fashion-MNIST from the Debian package's folder, images
in [0, 1], the first LIMIT of the first 50000 training images to train on, the last 10000 as validation; a LeNet-5
teacher (Conv 6@5x5 pad 2, ReLU, pool, Conv 16@5x5, ReLU, pool, 400-120-84-10 with ReLU) trained TEACHER_EPOCHS,
then the 784-64-10 student from the same initial weights trained alone and distilled with
alpha * T^2 * KL(teacher_T || student_T) (batchmean) + (1 - alpha) * cross_entropy for a few (T, alpha); Adam 1e-3,
batch 128, the same shuffles for every student. Prints validation accuracies. Accuracy only, so one thread, to
leave the shared cores to others. The initial weights and shuffles are PyTorch's, not Ember's: compare the trends
(which T and alpha help), not the digits.
"""
import gzip
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
D = "/usr/share/datasets/fashion-mnist/"


def images(f):
    with gzip.open(D + f) as g:
        return np.frombuffer(g.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255


def labels(f):
    with gzip.open(D + f) as g:
        return np.frombuffer(g.read(), np.uint8, offset=8).astype(np.int64)


args = [int(a) for a in sys.argv[1:]] + [50000, 10, 10, 0][len(sys.argv) - 1:]
limit, teacher_epochs, student_epochs, seed = args[:4]
X = torch.tensor(images("train-images-idx3-ubyte.gz"))
Y = torch.tensor(labels("train-labels-idx1-ubyte.gz"))
Xtr, Ytr, Xva, Yva = X[:min(limit, 50000)], Y[:min(limit, 50000)], X[50000:], Y[50000:]


def lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def student():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))


def fit(m, epochs, teacher=None, T=1.0, alpha=0.0):
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(Xtr), generator=g)
        for i in range(0, len(Xtr), 128):
            idx = perm[i:i + 128]
            x, y = Xtr[idx], Ytr[idx]
            s = m(x)
            loss = F.cross_entropy(s, y)
            if teacher is not None:
                with torch.no_grad():
                    t = teacher(x)
                soft = F.kl_div(F.log_softmax(s / T, 1), F.log_softmax(t / T, 1), reduction="batchmean",
                                log_target=True)
                loss = alpha * T * T * soft + (1 - alpha) * loss
            opt.zero_grad()
            loss.backward()
            opt.step()


def accuracy(m):
    with torch.no_grad():
        return (m(Xva).argmax(1) == Yva).float().mean().item()


torch.manual_seed(seed)
teacher = lenet()
t0 = time.time()
fit(teacher, teacher_epochs)
teacher.eval()
print("train %d, teacher %d epochs, student %d epochs, seed %d" % (len(Xtr), teacher_epochs, student_epochs, seed))
print("teacher val=%.4f (%.0f s)" % (accuracy(teacher), time.time() - t0), flush=True)
for T, alpha in [(None, None), (4.0, 0.9), (2.0, 0.5), (1.0, 0.5)]:
    torch.manual_seed(1000 + seed)
    s = student()
    fit(s, student_epochs, None if T is None else teacher, T or 1.0, alpha or 0.0)
    print(("alone" if T is None else "T=%s alpha=%s" % (T, alpha)) + " val=%.4f" % accuracy(s), flush=True)
