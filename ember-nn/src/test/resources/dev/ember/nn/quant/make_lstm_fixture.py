"""Reference values for DynamicQuantizedLSTMTest from torch 1.13: a 2-layer bidirectional LSTM (float) and
torch.ao.quantization.quantize_dynamic of it with per-channel qint8 weights (per_channel_dynamic_qconfig), on the
same weights and input. Run: python3 make_lstm_fixture.py  (writes lstm_fixture.json next to this script)."""
import json, os
import torch
from torch import nn
from torch.ao.quantization import quantize_dynamic, per_channel_dynamic_qconfig

torch.manual_seed(0)
T, N, IN, H = 6, 3, 10, 8
lstm = nn.LSTM(IN, H, num_layers=2, bidirectional=True).eval()
x = torch.randn(T, N, IN)
with torch.no_grad():
    y, (h, c) = lstm(x)
    q = quantize_dynamic(nn.Sequential(lstm), {nn.LSTM: per_channel_dynamic_qconfig}, dtype=torch.qint8)
    yq, (hq, cq) = q[0](x)

def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]

out = {"torch": torch.__version__, "T": T, "N": N, "input_size": IN, "hidden_size": H, "x": flat(x),
       "params": {k: {"shape": list(v.shape), "values": flat(v)} for k, v in lstm.state_dict().items()},
       "f32": flat(y), "f32_h": flat(h), "f32_c": flat(c), "dynamic": flat(yq), "dynamic_h": flat(hq),
       "dynamic_c": flat(cq), "qmodule": str(q[0])}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lstm_fixture.json"), "w") as f:
    json.dump(out, f)
print(q[0], float((yq - y).abs().max()), float(y.abs().max()))
