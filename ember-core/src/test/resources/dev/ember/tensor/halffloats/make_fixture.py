#!/usr/bin/python3
"""Writes fixture.bin.gz: PyTorch's float32 <-> bfloat16 / float16 conversions, for HalfFloatsTest.

Run with a Python that has torch (Debian: apt-get install python3-torch, then /usr/bin/python3
make_fixture.py; written with torch 1.13.0). Deterministic (seeded).

Format (gzip of little-endian binary):
  magic  b"EMHF", u32 version = 1, u32 sections = 2
  per section (BF16, then F16):
    name   4 ASCII bytes: b"BF16" or b"F16 "
    u32    nd = 65536; nd x u32: float32 bits of torch's .float() of the 16-bit pattern i (i = 0..65535)
    u32    ne; ne x u32: float32 input bits; ne x u16: torch's .to(dtype) of each input
  Encode inputs: for every 16-bit pattern p with a finite value v: v itself, the midpoint m between v and
  the next value away from zero (for the largest finite: the overflow threshold), and m +- 1 float32 ulp;
  then specials (signed zeros, infinities, NaNs with payloads and both signs, float32 extremes, F16
  overflow threshold, smallest subnormals); then 30,000 seeded random float32 bit patterns and 30,000
  seeded random values of typical magnitudes.

The encode outputs come from a strided (non-contiguous) source, which runs the scalar c10::BFloat16 /
c10::Half conversion. The AVX kernel for a contiguous source differs only for BF16 NaN inputs (it writes
0xFFFF instead of 0x7FC0); the script checks that and prints how many inputs it affects.
"""
import gzip, os, struct
import numpy as np
import torch

U32, U16 = np.uint32, np.uint16


def decode_table(dtype):
    pat = np.arange(65536, dtype=U16)
    t = torch.from_numpy(pat.view(np.int16)).view(dtype)
    out = t.float().numpy().view(U32)
    wide = torch.from_numpy(np.repeat(pat, 2).view(np.int16)).view(dtype)[::2].float().numpy().view(U32)
    assert (out == wide).all(), "contiguous and strided decode differ"
    return out


def structured_inputs(table, finite_max):
    with np.errstate(invalid="ignore"):
        vals = table.view(np.float32).astype(np.float64)
    out = []
    for p in range(65536):
        mag = p & 0x7FFF
        if mag > finite_max:
            continue
        v = vals[p]
        out.append(np.float32(v).view(U32))
        if mag < finite_max:
            nxt = vals[p + 1]
        else:  # largest finite: the would-be next value, so m is the overflow threshold
            nxt = v + (v - vals[p - 1])
        m = np.float32((v + nxt) / 2)  # exact: a 16-bit format's midpoint fits in float32
        assert float(m) == (v + nxt) / 2
        mb = int(m.view(U32))
        out += [mb, mb - 1, mb + 1]
    return np.array(out, dtype=np.uint64).astype(U32)


SPECIALS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
            0xFF800001, 0x7FBFFFFF, 0xFFBFFFFF, 0x7FC12345, 0xFFC12345, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F802000,
            0x7FE00000, 0x7F810000, 0x7F808000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80000001, 0x00800000,
            0x80800000, 0x007FFFFF, 0x3F800000, 0xBF800000,
            0x477FF000, 0xC77FF000, 0x477FEFFF, 0x477FF001, 0x477FE000, 0x47800000,  # F16 overflow around 65520
            0x33800000, 0x33000000, 0x33000001, 0x32FFFFFF, 0x33400000, 0xB3000000, 0xB3000001,  # F16 tiniest
            0x387FC000, 0x38800000, 0x387FE000, 0x7F7F8000, 0x7F7F7FFF, 0xFF7F8000]  # F16/BF16 edges


def random_inputs(rng):
    bits = rng.integers(0, 2**32, size=30000, dtype=np.uint64).astype(U32)
    scale = 10.0 ** rng.integers(-12, 8, size=30000)
    typical = (rng.standard_normal(30000) * scale).astype(np.float32).view(U32)
    return np.concatenate([bits, typical])


def encode(inputs, dtype, name):
    f = inputs.view(np.float32)
    wide = torch.from_numpy(np.repeat(f, 2))[::2]
    assert not wide.is_contiguous()
    scalar = wide.to(dtype).view(torch.int16).numpy().view(U16)
    contig = torch.from_numpy(f.copy()).to(dtype).view(torch.int16).numpy().view(U16)
    diff = scalar != contig
    isnan = np.isnan(f)
    assert not (diff & ~isnan).any(), name + ": contiguous and strided differ on a non-NaN input"
    print(f"{name}: {len(inputs)} encode inputs, {int(isnan.sum())} NaNs; contiguous (AVX) path differs on "
          f"{int(diff.sum())} of them: scalar {sorted({hex(x) for x in scalar[diff]})[:4]} vs contiguous "
          f"{sorted({hex(x) for x in contig[diff]})[:4]}")
    return scalar


def section(name, dtype, finite_max, rng):
    table = decode_table(dtype)
    inputs = np.concatenate([structured_inputs(table, finite_max), np.array(SPECIALS, dtype=np.uint64).astype(U32),
                             random_inputs(rng)])
    outputs = encode(inputs, dtype, name)
    return (name.encode().ljust(4) + struct.pack("<I", 65536) + table.astype("<u4").tobytes()
            + struct.pack("<I", len(inputs)) + inputs.astype("<u4").tobytes() + outputs.astype("<u2").tobytes())


def main():
    rng = np.random.default_rng(35)
    body = b"EMHF" + struct.pack("<II", 1, 2)
    body += section("BF16", torch.bfloat16, 0x7F7F, rng)
    body += section("F16", torch.float16, 0x7BFF, rng)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture.bin.gz")
    with open(path, "wb") as fh:
        fh.write(gzip.compress(body, 9, mtime=0))
    print(torch.__version__, path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
