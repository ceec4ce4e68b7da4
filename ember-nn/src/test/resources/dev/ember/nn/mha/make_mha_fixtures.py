#!/usr/bin/python3
"""Reference values for MultiheadAttentionTest: torch.nn.MultiheadAttention on fixed inputs.

Run with Debian's torch:  /usr/bin/python3 make_mha_fixtures.py  (writes mha_fixtures.txt here).
Same format as rnn/make_rnn_fixtures.py. Bool masks are written as 0/1 floats under '<case>.attn_mask_bool'
and '<case>.key_padding_mask_bool'; float masks as '<case>.attn_mask'.
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


def case(name, mha, q, k, v, key_padding_mask=None, attn_mask=None, need_weights=True):
    # non-zero biases so that their layout is tested too
    with torch.no_grad():
        mha.in_proj_bias.uniform_(-0.5, 0.5)
        mha.out_proj.bias.uniform_(-0.5, 0.5)
    for key, val in mha.state_dict().items():
        put(name + "." + key, val)
    put(name + ".query", q)
    put(name + ".key", k)
    put(name + ".value", v)
    if key_padding_mask is not None:
        put(name + ".key_padding_mask_bool", key_padding_mask.double())
    if attn_mask is not None:
        put(name + (".attn_mask_bool" if attn_mask.dtype == torch.bool else ".attn_mask"), attn_mask.double())
    y, w = mha(q, k, v, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=need_weights)
    put(name + ".output", y)
    if w is not None:
        put(name + ".weights", w)


E, H, L, S, N = 8, 2, 4, 5, 3
x = torch.randn(L, N, E)
case("self", torch.nn.MultiheadAttention(E, H), x, x, x)
case("cross_masks", torch.nn.MultiheadAttention(E, H), torch.randn(L, N, E), torch.randn(S, N, E), torch.randn(S, N, E),
     key_padding_mask=torch.tensor([[False, False, False, True, True], [False] * 5, [False, True, False, False, False]]),
     attn_mask=torch.tensor([[False, True, False, False, False]] * L))
case("batch_first_float_mask", torch.nn.MultiheadAttention(E, 4, batch_first=True), torch.randn(N, L, E),
     torch.randn(N, S, E), torch.randn(N, S, E), attn_mask=torch.randn(L, S))
case("unbatched", torch.nn.MultiheadAttention(E, H), torch.randn(L, E), torch.randn(S, E), torch.randn(S, E))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mha_fixtures.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
