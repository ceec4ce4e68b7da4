"""Reference values for dev.ember.quant (QuantizationTorchTest) from torch 1.13:
torch.quantize_per_tensor / quantize_per_channel (int_repr, dequantize) and the observers' calculate_qparams.
Run: python3 make_quant_fixtures.py  (writes quant_fixtures.json next to this script)."""
import json, os
import torch
from torch.ao.quantization import MinMaxObserver, MovingAverageMinMaxObserver, PerChannelMinMaxObserver

torch.manual_seed(0)
out = {"torch": torch.__version__, "quantize": [], "observers": []}

def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]

def qname(dt):
    return "qint8" if dt == torch.qint8 else "quint8"

# inputs with exact ties: multiples of scale/2 round half to even
x = torch.randn(6, 7) * 3
ties = torch.arange(-20, 21, dtype=torch.float32) * 0.25  # with scale 0.5: k * 0.5 ties
cases = [(x, 0.05, 3, torch.qint8), (x, 0.1, 128, torch.quint8), (x, 0.013, -5, torch.qint8),
         (ties, 0.5, 0, torch.qint8), (ties, 0.5, 100, torch.quint8), (x * 100, 0.1, 0, torch.qint8)]
for t, s, z, dt in cases:
    q = torch.quantize_per_tensor(t, s, z, dt)
    out["quantize"].append({"kind": "tensor", "shape": list(t.shape), "x": flat(t), "scale": s, "zero_point": z,
                            "dtype": qname(dt), "int_repr": [int(v) for v in q.int_repr().reshape(-1).tolist()],
                            "dequant": flat(q.dequantize())})
w = torch.randn(4, 5, 3)
for axis in (0, 1, 2):
    n = w.shape[axis]
    scales = (torch.rand(n) * 0.05 + 0.01).to(torch.float32)
    for dt in (torch.qint8, torch.quint8):
        zps = torch.randint(-10, 10, (n,)) if dt == torch.qint8 else torch.randint(100, 150, (n,))
        q = torch.quantize_per_channel(w, scales.double(), zps, axis, dt)
        out["quantize"].append({"kind": "channel", "shape": list(w.shape), "x": flat(w), "axis": axis,
                                "scales": flat(scales), "zero_points": [int(v) for v in zps.tolist()],
                                "dtype": qname(dt), "int_repr": [int(v) for v in q.int_repr().reshape(-1).tolist()],
                                "dequant": flat(q.dequantize())})

batches = [torch.randn(3, 8) * 2 + 0.5, torch.randn(3, 8) * 0.5 - 1, torch.rand(3, 8) * 4]
pos_batches = [torch.rand(3, 8) * 3 + 0.1, torch.rand(3, 8) * 2 + 0.2]
schemes = {"per_tensor_affine": torch.per_tensor_affine, "per_tensor_symmetric": torch.per_tensor_symmetric,
           "per_channel_affine": torch.per_channel_affine, "per_channel_symmetric": torch.per_channel_symmetric}

def record(name, obs, kw, data):
    for b in data:
        obs(b)
    s, z = obs.calculate_qparams()
    out["observers"].append(dict(name=name, batches=[{"shape": list(b.shape), "x": flat(b)} for b in data],
                                 scales=flat(s.reshape(-1)), zero_points=[int(v) for v in z.reshape(-1).tolist()],
                                 **kw))

for data in (batches, pos_batches):
    for dt in (torch.qint8, torch.quint8):
        for rr in (False, True):
            for sname in ("per_tensor_affine", "per_tensor_symmetric"):
                if rr and dt == torch.quint8 and sname.endswith("symmetric"):
                    continue  # torch: "Cannot reduce range for symmetric quantization for quint8"
                kw = dict(dtype=qname(dt), qscheme=sname, reduce_range=rr)
                record("MinMaxObserver", MinMaxObserver(dtype=dt, qscheme=schemes[sname], reduce_range=rr), kw, data)
                kw2 = dict(kw, averaging_constant=0.01)
                record("MovingAverageMinMaxObserver",
                       MovingAverageMinMaxObserver(dtype=dt, qscheme=schemes[sname], reduce_range=rr), kw2, data)
                kw3 = dict(kw, averaging_constant=0.3)
                record("MovingAverageMinMaxObserver",
                       MovingAverageMinMaxObserver(averaging_constant=0.3, dtype=dt, qscheme=schemes[sname],
                                                   reduce_range=rr), kw3, data)
            for sname in ("per_channel_affine", "per_channel_symmetric"):
                if rr and dt == torch.quint8 and sname.endswith("symmetric"):
                    continue
                for axis in (0, 1):
                    kw = dict(dtype=qname(dt), qscheme=sname, reduce_range=rr, axis=axis)
                    record("PerChannelMinMaxObserver",
                           PerChannelMinMaxObserver(ch_axis=axis, dtype=dt, qscheme=schemes[sname], reduce_range=rr),
                           kw, data)
# custom ranges
for dt, lo, hi in ((torch.quint8, 0, 15), (torch.qint8, -8, 7)):
    for sname in ("per_tensor_affine", "per_tensor_symmetric"):
        kw = dict(dtype=qname(dt), qscheme=sname, reduce_range=False, quant_min=lo, quant_max=hi)
        record("MinMaxObserver", MinMaxObserver(dtype=dt, qscheme=schemes[sname], quant_min=lo, quant_max=hi), kw,
               batches)

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "quant_fixtures.json"), "w") as f:
    json.dump(out, f)
print(len(out["quantize"]), "quantize cases,", len(out["observers"]), "observer cases")
