"""Reference values for StaticQuantizationTorchTest: torch 1.13 eager static post-training quantization.

Two models with fixed random weights (a conv net with fused Conv+ReLU and Linear+ReLU, and an MLP), calibrated on the
same batches with MinMaxObserver (per-tensor affine quint8) activations and PerChannelMinMaxObserver (per-channel
symmetric qint8) weights, converted with the qnnpack and the onednn engine (the ones this torch build has), run on a
test batch. Writes static_fixture.json next to this script.
    /usr/bin/python3 make_static_fixture.py
"""
import copy
import json
import os

import torch
import torch.nn as nn
from torch.ao.quantization import (DeQuantStub, MinMaxObserver, PerChannelMinMaxObserver, QConfig, QuantStub,
                                   convert, fuse_modules, prepare)

torch.manual_seed(0)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()
        self.conv1 = nn.Conv2d(2, 4, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 6, 3)
        self.relu2 = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(24, 16)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(16, 5)
        self.dequant = DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.pool(self.relu1(self.conv1(x)))
        x = self.flatten(self.relu2(self.conv2(x)))
        x = self.fc2(self.relu3(self.fc1(x)))
        return self.dequant(x)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantStub()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(48, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 10)
        self.dequant = DeQuantStub()

    def forward(self, x):
        return self.dequant(self.fc2(self.relu(self.fc1(self.flatten(self.quant(x))))))


qconfig = QConfig(activation=MinMaxObserver.with_args(dtype=torch.quint8, qscheme=torch.per_tensor_affine),
                  weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_channel_symmetric))


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def run(model, fuse, calib, x, engine):
    torch.backends.quantized.engine = engine
    m = copy.deepcopy(model).eval()
    if fuse:
        m = fuse_modules(m, fuse)
    m.qconfig = qconfig
    p = prepare(m)
    with torch.no_grad():
        for b in calib:
            p(b)
    q = convert(p)
    with torch.no_grad():
        return q(x)


out = {}
for name, model, fuse, shape in [("conv", ConvNet(), [["conv1", "relu1"], ["fc1", "relu3"]], (2, 8, 8)),
                                  ("mlp", Mlp(), None, (3, 4, 4))]:
    calib = [torch.randn(8, *shape) for _ in range(4)]
    x = torch.randn(6, *shape)
    for k, v in model.state_dict().items():
        out[name + "." + k] = flat(v)
    out[name + ".calib"] = [flat(b) for b in calib]
    out[name + ".x"] = flat(x)
    with torch.no_grad():
        out[name + ".f32"] = flat(model.eval()(x))
    for engine in ["qnnpack", "onednn"]:
        out[name + "." + engine] = flat(run(model, fuse, calib, x, engine))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "static_fixture.json"), "w") as f:
    json.dump(out, f)
print(torch.__version__, {k: len(v) for k, v in out.items()})
