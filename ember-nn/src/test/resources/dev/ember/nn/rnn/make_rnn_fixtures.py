#!/usr/bin/python3
"""Reference values for RnnTest: PyTorch's RNN, LSTM and GRU on fixed inputs.

Run with Debian's torch:  /usr/bin/python3 make_rnn_fixtures.py  (writes rnn_fixtures.txt here).
Format, one block per tensor:  'tensor <name> <ndim> <dims...>' then a line of float64 values
(row-major, repr precision). Each case writes its module's state_dict under '<case>.<key>', the
input '<case>.input', optional initial states '<case>.h0' / '<case>.c0', and outputs
'<case>.output', '<case>.h_n' (and '<case>.c_n' for LSTM), fixed upstream gradients
'<case>.grad_output', '<case>.grad_h_n' ('<case>.grad_c_n'), and the gradients of
sum(output * grad_output) + sum(h_n * grad_h_n) (+ c_n term) with respect to the input, the
initial states and every parameter as '<case>.grad.<name>'.
"""
import os
import torch

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
out = []


def put(name, t):
    t = t.detach().to(torch.float64).contiguous()
    out.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    out.append(" ".join(repr(float(v)) for v in t.reshape(-1).tolist()))


def case(name, module, x, h0=None, c0=None):
    for k, v in module.state_dict().items():
        put(name + "." + k, v)
    x = x.clone().requires_grad_(True)
    put(name + ".input", x)
    if h0 is not None:
        h0 = h0.clone().requires_grad_(True)
        put(name + ".h0", h0)
    if c0 is not None:
        c0 = c0.clone().requires_grad_(True)
        put(name + ".c0", c0)
    if isinstance(module, torch.nn.LSTM):
        y, (h, c) = module(x, (h0, c0)) if h0 is not None else module(x)
        put(name + ".c_n", c)
    else:
        y, h = module(x, h0) if h0 is not None else module(x)
        c = None
    put(name + ".output", y)
    put(name + ".h_n", h)
    # gradients of sum(output * g_out) + sum(h_n * g_h) (+ sum(c_n * g_c)) for fixed upstreams
    loss = 0
    for key, t in (("output", y), ("h_n", h), ("c_n", c)):
        if t is not None:
            g = torch.randn_like(t)
            put(name + ".grad_" + key, g)
            loss = loss + (t * g).sum()
    loss.backward()
    put(name + ".grad.input", x.grad)
    if h0 is not None:
        put(name + ".grad.h0", h0.grad)
    if c0 is not None:
        put(name + ".grad.c0", c0.grad)
    for k, p in module.named_parameters():
        put(name + ".grad." + k, p.grad)


T, N, I, H = 5, 3, 4, 6
case("rnn_tanh", torch.nn.RNN(I, H), torch.randn(T, N, I))
case("rnn_relu_2layer_bidir", torch.nn.RNN(I, H, num_layers=2, nonlinearity="relu", bidirectional=True),
     torch.randn(T, N, I), torch.randn(4, N, H))
case("lstm", torch.nn.LSTM(I, H), torch.randn(T, N, I))
case("lstm_2layer_bidir_batch_first", torch.nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True),
     torch.randn(N, T, I), torch.randn(4, N, H), torch.randn(4, N, H))
case("lstm_nobias_unbatched", torch.nn.LSTM(I, H, bias=False), torch.randn(T, I))
case("gru", torch.nn.GRU(I, H), torch.randn(T, N, I))
case("gru_3layer_bidir_batch_first", torch.nn.GRU(I, H, num_layers=3, bidirectional=True, batch_first=True),
     torch.randn(N, T, I), torch.randn(6, N, H))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rnn_fixtures.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
