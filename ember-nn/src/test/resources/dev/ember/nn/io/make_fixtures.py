"""Writes the safetensors interop fixture for SafeTensorsInteropTest, and checks any file.

    /usr/bin/python3 make_fixtures.py            # (re)writes interop.safetensors and interop.txt here
    /usr/bin/python3 make_fixtures.py --check F  # validates F as the reference reader does, prints it

The reference writer (safetensors.torch.save_file) is not installable here (no Debian package, no
PyPI access), so `save_file` below reproduces it from the format spec and the reference's Rust
source (safetensors/src/tensor.rs, `prepare` and `serialize`):
  * tensors sorted by dtype, largest alignment first (the Rust `Dtype` enum order, reversed), then
    by name;
  * header = serde_json compact JSON: {"__metadata__":{...}} first when given, then each tensor as
    {"dtype":..,"shape":[..],"data_offsets":[begin,end]}, offsets relative to the data section;
  * header padded with spaces to a multiple of 8; preceded by its length as little-endian u64;
  * data: each tensor's bytes, row-major, little-endian, back to back.
The Java test also checks Ember's writer against byte vectors copied from the reference's own
Rust unit tests, which do not depend on this script.

interop.txt holds the expected values: one line per tensor, `name dtype shape bits...`, where shape
is comma-separated (empty for a scalar) and each element is its raw bit pattern in hex (floats) or
its decimal value (integers, bools), so that the comparison is exact.
"""
import json
import os
import struct
import sys

import torch

# Rust enum order of safetensors::Dtype (increasing alignment); the writer sorts by it, descending.
RANK = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16",
        "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]
NAMES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
         torch.bool: "BOOL", torch.float16: "F16", torch.bfloat16: "BF16", torch.int8: "I8",
         torch.uint8: "U8", torch.int16: "I16"}
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4,
         "F32": 4, "F64": 8, "I64": 8, "U64": 8}
MAX_HEADER = 100_000_000


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bool:
        return bytes(t.to(torch.uint8).flatten().tolist())
    # x86 and ARM are little-endian, as the format requires
    assert sys.byteorder == "little"
    return t.numpy().tobytes()


def serialize(tensors, metadata=None):
    items = sorted(tensors.items(), key=lambda kv: (-RANK.index(NAMES[kv[1].dtype]), kv[0].encode("utf-8")))
    header = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name, t in items:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    hb = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    return struct.pack("<Q", len(hb)) + hb + b"".join(tensor_bytes(t) for _, t in items)


def check(path):
    """The reference reader's checks (read_metadata + validate), raising on the first problem."""
    buf = open(path, "rb").read()
    assert len(buf) >= 8, "header too small"
    (n,) = struct.unpack("<Q", buf[:8])
    assert n <= MAX_HEADER, "header too large"
    assert 8 + n <= len(buf), "invalid header length"
    text = buf[8:8 + n].decode("utf-8")
    assert text.startswith("{"), "invalid header start"
    pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
    names = [k for k, _ in pairs]
    assert len(names) == len(set(names)), "duplicate names"
    header = dict(pairs)
    meta = header.pop("__metadata__", None)
    if meta is not None:
        meta = dict(meta)
        assert all(isinstance(v, str) for v in meta.values()), "metadata values must be strings"
    infos = sorted(((dict(v)["data_offsets"], k, dict(v)) for k, v in header.items()))
    start = 0
    out = {}
    for (b, e), name, info in infos:
        assert b == start and e >= b, f"invalid offset for {name}"
        numel = 1
        for d in info["shape"]:
            numel *= d
        assert e - b == numel * SIZES[info["dtype"]], f"tensor invalid info for {name}"
        start = e
        out[name] = (info["dtype"], info["shape"], buf[8 + n + b:8 + n + e])
    assert 8 + n + start == len(buf), "metadata incomplete buffer"
    return meta, out


def fixture_tensors():
    return {
        "weight": torch.tensor([[1 / 3, -2.5, 0.0], [-0.0, 1e38, 1.4e-45]], dtype=torch.float32),
        "layer.0.bias": torch.tensor([3.141592653589793, -1e-300], dtype=torch.float64),
        "index": torch.tensor([[-(2 ** 63), 2 ** 63 - 1], [0, -1]], dtype=torch.int64),
        "count": torch.tensor([-(2 ** 31), 2 ** 31 - 1, 7, -7], dtype=torch.int32),
        "mask": torch.tensor([True, False, False, True, True]),
        "scalar": torch.tensor(7.25, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
        "nan": torch.tensor([float("nan"), float("inf"), -float("inf")], dtype=torch.float32),
    }


def bits(t):
    flat = t.contiguous().flatten()
    if t.dtype == torch.float32:
        return [format(struct.unpack("<I", struct.pack("<f", v))[0], "x") for v in flat.tolist()]
    if t.dtype == torch.float64:
        return [format(struct.unpack("<Q", struct.pack("<d", v))[0], "x") for v in flat.tolist()]
    return [str(int(v)) for v in flat.tolist()]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        meta, tensors = check(sys.argv[2])
        print("metadata", meta)
        for name, (dtype, shape, data) in tensors.items():
            print(name, dtype, shape, data.hex())
        return
    here = os.path.dirname(os.path.abspath(__file__))
    tensors = fixture_tensors()
    data = serialize(tensors, {"format": "pt"})
    with open(os.path.join(here, "interop.safetensors"), "wb") as f:
        f.write(data)
    meta, parsed = check(os.path.join(here, "interop.safetensors"))
    assert meta == {"format": "pt"} and set(parsed) == set(tensors)
    with open(os.path.join(here, "interop.txt"), "w") as f:
        f.write("# name dtype shape elements (float bits in hex, integers in decimal); by make_fixtures.py\n")
        for name in parsed:  # file order
            t = tensors[name]
            f.write(" ".join([name, NAMES[t.dtype], ",".join(str(d) for d in t.shape)] + bits(t)) + "\n")


if __name__ == "__main__":
    main()
