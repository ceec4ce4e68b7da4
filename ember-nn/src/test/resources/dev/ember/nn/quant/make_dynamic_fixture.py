"""Reference for DynamicQuantizationTest: torch 1.13's quantize_dynamic (per_channel_dynamic_qconfig, onednn: this torch build has no fbgemm) of a small MLP 64-32-10 and its
float32 outputs on the same input. Run: python3 make_dynamic_fixture.py (writes dynamic_fixture.json here)."""
import json, os
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.backends.quantized.engine = "onednn"
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)).eval()
x = torch.randn(8, 64)
with torch.no_grad():
    f32 = model(x)
    q = torch.ao.quantization.quantize_dynamic(
        model, {nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8)
    yq = q(x)

def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]

out = {"torch": torch.__version__, "w0": flat(model[0].weight), "b0": flat(model[0].bias), "w2": flat(model[2].weight),
       "b2": flat(model[2].bias), "x": flat(x), "f32": flat(f32), "dynamic": flat(yq)}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamic_fixture.json"), "w") as f:
    json.dump(out, f)
print("max |torch dyn - f32| =", (yq - f32).abs().max().item(), "max |f32| =", f32.abs().max().item())
