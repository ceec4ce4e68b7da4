#!/usr/bin/python3
"""Reference values for ModuleFixtureTest: PyTorch modules (float32) on fixed inputs.

Run with Debian's torch:  /usr/bin/python3 make_module_fixtures.py  (writes module_fixtures.txt here).
Format as functional/norm/make_norm_fixtures.py: 'tensor <name> <ndim> <dims...>' then the values
(float32 values with 9 significant digits).
Per case '<case>.': 'sd.<key>' the state dict loaded strictly in Ember (parameters perturbed so that
biases and norm weights are not at their initial values), the inputs, 'g' (or 'g<n>') the upstream
gradient, 'out' the output and 'grad.<input or parameter>' the gradients. Bool masks are written as
0/1 under '<name>_bool'. Outputs needing gradients are computed with grad enabled, so PyTorch's
inference fast paths (which zero padded positions) are not taken.
"""
import os
import torch
import torch.nn as nn

torch.manual_seed(0)
out = []


def num(v):
    # 9 significant digits round-trip float32; infinities as Java's Double.parseDouble reads them
    if v == float("inf") or v == float("-inf"):
        return "Infinity" if v > 0 else "-Infinity"
    return "%.9g" % v


def put(name, t):
    t = t.detach().to(torch.float64).contiguous()
    out.append("tensor %s %d %s" % (name, t.dim(), " ".join(str(d) for d in t.shape)))
    out.append(" ".join(num(float(v)) for v in t.reshape(-1).tolist()))


def perturb(m, scale=0.3):
    with torch.no_grad():
        for p in m.parameters():
            p.add_(scale * torch.randn_like(p))


def put_sd(case, m, skip=()):
    for k, v in m.state_dict().items():
        if k not in skip:
            put(case + ".sd." + k, v)


def put_param_grads(case, m, prefix="grad."):
    for k, p in m.named_parameters():
        put(case + "." + prefix + k, p.grad if p.grad is not None else torch.zeros_like(p))


def grads_of(case, m, y, g, inputs, prefix="grad."):
    """Backward of y with upstream g; writes input and parameter gradients, then clears them."""
    m.zero_grad()
    for x in inputs.values():
        x.grad = None
    y.backward(g)
    for n, x in inputs.items():
        put(case + "." + prefix + n, x.grad)
    put_param_grads(case, m, prefix)
    m.zero_grad()


# ---------------------------------------------------------------- batch norm
def batch_norm_case(case, bn, shape):
    perturb(bn)
    put_sd(case, bn)
    bn.train()
    x1 = torch.randn(*shape) * 2 + 0.5
    x2 = (torch.randn(*shape) * 1.5 - 0.3).requires_grad_()
    g = torch.randn(*shape)
    put(case + ".x1", x1)
    put(case + ".x2", x2)
    put(case + ".g", g)
    y1 = bn(x1)
    put(case + ".out1", y1)
    y2 = bn(x2)
    put(case + ".out2", y2)
    grads_of(case, bn, y2, g, {"x2": x2}, "grad.")
    for k, v in bn.state_dict().items():
        if not k in ("weight", "bias"):
            put(case + ".after." + k, v)
    bn.eval()
    x3 = (torch.randn(*shape) + 0.2).requires_grad_()
    g3 = torch.randn(*shape)
    put(case + ".x3", x3)
    put(case + ".g3", g3)
    y3 = bn(x3)
    put(case + ".out3", y3)
    grads_of(case, bn, y3, g3, {"x3": x3}, "grad3.")


batch_norm_case("bn1d_2d", nn.BatchNorm1d(4), (6, 4))
batch_norm_case("bn1d_3d", nn.BatchNorm1d(3), (4, 3, 5))
batch_norm_case("bn2d", nn.BatchNorm2d(3), (2, 3, 4, 5))
batch_norm_case("bn2d_cma", nn.BatchNorm2d(3, momentum=None), (2, 3, 3, 2))
batch_norm_case("bn2d_noaffine", nn.BatchNorm2d(3, eps=1e-3, momentum=0.3, affine=False), (3, 3, 2, 2))
batch_norm_case("bn1d_notrack", nn.BatchNorm1d(4, track_running_stats=False), (5, 4))


# ---------------------------------------------------------------- layer, group and RMS norm
def simple_case(case, m, x, skip=()):
    perturb(m)
    if skip:
        with torch.no_grad():
            for k in skip:
                getattr(m, k).zero_()
    put_sd(case, m, skip)
    x = x.clone().requires_grad_()
    g = torch.randn(*x.shape)
    put(case + ".x", x)
    put(case + ".g", g)
    y = m(x)
    put(case + ".out", y)
    grads_of(case, m, y, g, {"x": x})
    if skip:  # the absent parameter's gradient is not part of the Ember module
        for k in skip:
            out_name = case + ".grad." + k
            idx = [i for i, line in enumerate(out) if line.startswith("tensor " + out_name + " ")]
            for i in reversed(idx):
                del out[i:i + 2]


simple_case("ln", nn.LayerNorm([3, 4]), torch.randn(2, 5, 3, 4) * 3 + 1)
simple_case("ln_nobias", nn.LayerNorm(6, eps=1e-6), torch.randn(4, 6), skip=("bias",))
simple_case("ln_noaffine", nn.LayerNorm(6, elementwise_affine=False), torch.randn(3, 2, 6))
simple_case("gn", nn.GroupNorm(2, 6), torch.randn(3, 6, 4) * 2)
simple_case("gn_noaffine", nn.GroupNorm(3, 6, eps=1e-4, affine=False), torch.randn(2, 6, 2, 3))


def rms_case(case, normalized_shape, eps, affine):
    # torch 1.13 has no nn.RMSNorm: x / sqrt(mean(x^2) + eps) * weight, as PyTorch 2.4's
    dims = tuple(range(-len(normalized_shape), 0))
    w = (torch.ones(*normalized_shape) + 0.3 * torch.randn(*normalized_shape)).requires_grad_() if affine else None
    if w is not None:
        put(case + ".sd.weight", w)
    x = (torch.randn(3, 4, 8) * 2).requires_grad_()
    g = torch.randn(3, 4, 8)
    e = torch.finfo(torch.float32).eps if eps is None else eps
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + e)
    if w is not None:
        y = y * w
    put(case + ".x", x)
    put(case + ".g", g)
    put(case + ".out", y)
    y.backward(g)
    put(case + ".grad.x", x.grad)
    if w is not None:
        put(case + ".grad.weight", w.grad)


rms_case("rms", [8], 1e-6, True)
rms_case("rms_epsnone", [4, 8], None, True)
rms_case("rms_noaffine", [8], 1e-5, False)


# ---------------------------------------------------------------- embedding
def embedding_case(case, emb, idx):
    put_sd(case, emb)
    put(case + ".idx", idx)
    y = emb(idx)
    g = torch.randn(*y.shape)
    put(case + ".g", g)
    put(case + ".out", y)
    put(case + ".after.weight", emb.weight)
    grads_of(case, emb, y, g, {})


idx = torch.tensor([[1, 0, 3, 3], [0, 9, 3, 2]])
embedding_case("emb_pad", nn.Embedding(10, 3, padding_idx=0), idx)
embedding_case("emb_padneg", nn.Embedding(10, 3, padding_idx=-1), idx)
emb = nn.Embedding(10, 3, max_norm=1.0)
with torch.no_grad():
    emb.weight.mul_(1.5)
embedding_case("emb_maxnorm", emb, idx)
embedding_case("emb_maxnorm1", nn.Embedding(10, 3, max_norm=0.5, norm_type=1.0), idx)


# ---------------------------------------------------------------- transformer layers
E, H, F_, S, T, N = 8, 2, 16, 5, 4, 3
src_kpm = torch.tensor([[False, False, False, True, True], [False] * 5, [False, True, False, False, False]])
tgt_kpm = torch.tensor([[False, False, False, True], [False] * 4, [False, True, False, False]])
mem_kpm = src_kpm


def layer_case(case, make, inputs, call, masks):
    """make(dropout) builds the module; eval output with dropout 0.1, train output and grads with 0."""
    m = make(0.1)
    perturb(m, 0.2)
    put_sd(case, m)
    for k, v in masks.items():
        if v is not None:
            put(case + "." + k + ("_bool" if v.dtype == torch.bool else ""), v.double() if v.dtype == torch.bool else v)
    xs = {k: v.clone().requires_grad_() for k, v in inputs.items()}
    for k, v in xs.items():
        put(case + "." + k, v)
    m.eval()
    y = call(m, xs, masks)
    put(case + ".out_eval", y)
    m0 = make(0.0)
    m0.load_state_dict(m.state_dict())
    m0.train()
    y0 = call(m0, xs, masks)
    g = torch.randn(*y0.shape)
    put(case + ".g", g)
    put(case + ".out", y0)
    grads_of(case, m0, y0, g, xs)


def enc_call(m, xs, masks):
    return m(xs["src"], src_mask=masks.get("src_mask"), src_key_padding_mask=masks.get("src_key_padding_mask"))


def dec_call(m, xs, masks):
    return m(xs["tgt"], xs["memory"], tgt_mask=masks.get("tgt_mask"), memory_mask=masks.get("memory_mask"),
             tgt_key_padding_mask=masks.get("tgt_key_padding_mask"),
             memory_key_padding_mask=masks.get("memory_key_padding_mask"))


causal_s = nn.Transformer.generate_square_subsequent_mask(S)
causal_t = nn.Transformer.generate_square_subsequent_mask(T)
bool_src_mask = torch.rand(S, S) < 0.3
bool_src_mask.fill_diagonal_(False)
bool_mem_mask = torch.tensor([[False, True, False, False, True]] * T)

for name, act, norm_first, bf, masks in [
        ("enc_post_relu", "relu", False, False, {"src_mask": causal_s, "src_key_padding_mask": src_kpm}),
        ("enc_pre_relu", "relu", True, False, {"src_mask": causal_s}),
        ("enc_post_gelu_bf", "gelu", False, True, {"src_key_padding_mask": src_kpm, "src_mask": bool_src_mask}),
        ("enc_pre_gelu_bf", "gelu", True, True, {"src_key_padding_mask": src_kpm})]:
    shape = (N, S, E) if bf else (S, N, E)
    layer_case(name, lambda p: nn.TransformerEncoderLayer(E, H, F_, p, act, batch_first=bf, norm_first=norm_first),
               {"src": torch.randn(*shape)}, enc_call, masks)

for name, act, norm_first, bf, masks in [
        ("dec_post_relu", "relu", False, False,
         {"tgt_mask": causal_t, "tgt_key_padding_mask": tgt_kpm, "memory_key_padding_mask": mem_kpm}),
        ("dec_pre_relu", "relu", True, False, {"tgt_mask": causal_t}),
        ("dec_post_gelu_bf", "gelu", False, True, {"tgt_mask": causal_t, "memory_mask": bool_mem_mask}),
        ("dec_pre_gelu_bf", "gelu", True, True,
         {"tgt_key_padding_mask": tgt_kpm, "memory_key_padding_mask": mem_kpm, "memory_mask": bool_mem_mask})]:
    ts, ms = ((N, T, E), (N, S, E)) if bf else ((T, N, E), (S, N, E))
    layer_case(name, lambda p: nn.TransformerDecoderLayer(E, H, F_, p, act, batch_first=bf, norm_first=norm_first),
               {"tgt": torch.randn(*ts), "memory": torch.randn(*ms)}, dec_call, masks)

# stacks: each copy perturbed differently, so that the layer index in the names matters
layer_case("encoder_stack",
           lambda p: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, F_, p), 2, norm=nn.LayerNorm(E)),
           {"src": torch.randn(S, N, E)}, lambda m, xs, mk: m(xs["src"], mask=mk.get("src_mask"),
                                                              src_key_padding_mask=mk.get("src_key_padding_mask")),
           {"src_mask": causal_s, "src_key_padding_mask": src_kpm})
layer_case("decoder_stack",
           lambda p: nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, F_, p, "gelu", norm_first=True), 2),
           {"tgt": torch.randn(T, N, E), "memory": torch.randn(S, N, E)}, dec_call,
           {"tgt_mask": causal_t, "memory_key_padding_mask": mem_kpm})
layer_case("transformer",
           lambda p: nn.Transformer(E, H, 2, 1, F_, p, batch_first=True),
           {"src": torch.randn(N, S, E), "tgt": torch.randn(N, T, E)},
           lambda m, xs, mk: m(xs["src"], xs["tgt"], tgt_mask=mk.get("tgt_mask"),
                               src_key_padding_mask=mk.get("src_key_padding_mask"),
                               memory_key_padding_mask=mk.get("src_key_padding_mask")),
           {"tgt_mask": causal_t, "src_key_padding_mask": src_kpm})

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_fixtures.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
