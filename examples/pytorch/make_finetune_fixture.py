#!/usr/bin/env python3
"""Makes the PyTorch fixture of the FineTunePyTorch example (examples/src/main/resources/dev/ember/examples/).

Trains a small MLP (Linear(2, 32) - ReLU - Linear(32, 3), PyTorch's Sequential, so its weights are
"0.weight", "0.bias", "2.weight", "2.bias") on three Gaussian blobs and writes:
  pytorch-mlp.safetensors        the trained weights (float32)
  pytorch-mlp-check.safetensors  "input" [8, 2] and "output" [8, 3]: the model's logits on a fixed
                                 input, which the example compares with Ember's forward before fine-tuning

The safetensors package is not installed with Debian's PyTorch 1.13, so `write_safetensors` writes the
format by hand, as its specification (https://github.com/huggingface/safetensors, "Format") says:
an 8-byte little-endian unsigned header length N, then N bytes of UTF-8 JSON mapping each tensor name
to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data that follows the header,
tensors contiguous and in order) plus an optional "__metadata__" map of strings, padded with spaces
to a multiple of 8 bytes, then the tensors' raw little-endian bytes in row-major order.

Run from the repository root (PyTorch 1.13+, no other package):
  python3 examples/pytorch/make_finetune_fixture.py
The blob centres are the ones FineTunePyTorch.java uses (PRETRAIN_CENTRES).
"""
import json
import os
import struct

import torch

CENTRES = [[0.0, 2.0], [-2.0, -1.0], [2.0, -1.0]]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "main", "resources", "dev", "ember", "examples")


def write_safetensors(tensors, path, metadata=None):
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.detach().contiguous().to(torch.float32)
        data = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def blobs(gen, n):
    labels = torch.randint(0, 3, (n,), generator=gen)
    centres = torch.tensor(CENTRES)[labels]
    return centres + 0.7 * torch.randn(n, 2, generator=gen), labels


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    x, y = blobs(gen, 600)
    model = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(200):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
        probe = torch.randn(8, 2, generator=gen) * 2
        out = model(probe)
    os.makedirs(OUT, exist_ok=True)
    meta = {"made_by": "examples/pytorch/make_finetune_fixture.py", "torch": torch.__version__}
    write_safetensors(model.state_dict(), os.path.join(OUT, "pytorch-mlp.safetensors"), meta)
    write_safetensors({"input": probe, "output": out}, os.path.join(OUT, "pytorch-mlp-check.safetensors"), meta)
    print(f"loss={loss.item():.4f} train_accuracy={acc:.4f}; wrote {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
