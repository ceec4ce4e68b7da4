"""What torch 1.13's CPU kernels do with bfloat16 (and float16) nn inputs, and what its CPU autocast does, as
HalfNnOpsTest and AutocastNnTest follow it. No fixture: run with /usr/bin/python3 and read the output.

- every nn op family returns the half dtype for half inputs (losses included: cross_entropy, bce_with_logits,
  kl_div return bfloat16; mse and binary_cross_entropy are not implemented for bfloat16 in 1.13, Ember computes
  them as the others); a half loss operand with a float32 one gives float32 (type promotion);
- conv refuses a float32 weight with a bfloat16 input; batch_norm takes float32 parameters with a bfloat16 input;
- dropout on bfloat16 is x * bf16(1 / (1 - p)) rounded once (the mask is a bfloat16 tensor);
- torch 1.13's CPU autocast lists differ from Ember's (which follow the CUDA policy written in Autocast): on the CPU
  conv_transpose2d, bilinear, lstm_cell and gru_cell stay float32, and norms and softmax are not forced to float32.
"""
import torch
import torch.nn.functional as F

b = torch.bfloat16


def show(name, f):
    try:
        r = f()
        print(name, r.dtype if hasattr(r, 'dtype') else [q.dtype for q in r])
    except Exception as e:  # noqa: BLE001 - the message is the answer
        print(name, 'ERROR', str(e)[:90])


x = torch.randn(2, 3, 8, 8).to(b)
w = torch.randn(4, 3, 3, 3).to(b)
q = torch.randn(2, 4, 5).to(b)
print('-- half inputs')
show('conv2d', lambda: F.conv2d(x, w))
show('conv2d f32 weight', lambda: F.conv2d(x, w.float()))
show('conv1d', lambda: F.conv1d(q, torch.randn(3, 4, 2).to(b)))
show('max_pool2d', lambda: F.max_pool2d(x, 2))
show('avg_pool2d', lambda: F.avg_pool2d(x, 2))
show('adaptive_avg_pool2d', lambda: F.adaptive_avg_pool2d(x, 3))
show('batch_norm', lambda: F.batch_norm(x, torch.zeros(3).to(b), torch.ones(3).to(b), training=True))
show('batch_norm f32 params', lambda: F.batch_norm(x, torch.zeros(3), torch.ones(3), torch.ones(3), torch.zeros(3),
                                                   training=True))
show('layer_norm', lambda: F.layer_norm(x, [8]))
show('group_norm', lambda: F.group_norm(x, 3))
show('mse_loss', lambda: F.mse_loss(q, q * 2))
show('mse_loss bf16 x f32', lambda: F.mse_loss(q, (q * 2).float()))
show('cross_entropy', lambda: F.cross_entropy(q[:, 0, :], torch.tensor([1, 2])))
show('binary_cross_entropy', lambda: F.binary_cross_entropy(torch.sigmoid(q), torch.rand(2, 4, 5).to(b)))
show('bce_with_logits', lambda: F.binary_cross_entropy_with_logits(q, torch.rand(2, 4, 5).to(b)))
show('kl_div', lambda: F.kl_div(q, q.softmax(-1), reduction='batchmean'))
show('embedding', lambda: F.embedding(torch.tensor([1, 2]), torch.randn(5, 3).to(b)))
show('dropout', lambda: F.dropout(q, 0.1))
show('interpolate nearest', lambda: F.interpolate(x, scale_factor=2))
show('interpolate bilinear', lambda: F.interpolate(x, scale_factor=2, mode='bilinear'))
show('LSTMCell', lambda: torch.nn.LSTMCell(5, 4).to(b)(q[0]))

print('-- dropout: which scale')
torch.manual_seed(0)
xd = torch.randn(10000).to(b)
yd = F.dropout(xd, 0.1)
kept = yd != 0
f32_scale = (xd.float() * (1 / 0.9)).to(b)
half_scale = (xd.float() * torch.tensor(1 / 0.9).to(b).float()).to(b)
print('x * (1/(1-p)) rounded once:', (yd[kept] == f32_scale[kept]).float().mean().item())
print('x * bf16(1/(1-p)) rounded once:', (yd[kept] == half_scale[kept]).float().mean().item())

print('-- CPU autocast (bfloat16), float32 inputs')
xf = torch.randn(3, 5)
with torch.autocast('cpu', dtype=b):
    show('conv2d', lambda: F.conv2d(torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)))
    show('conv_transpose2d', lambda: F.conv_transpose2d(torch.randn(1, 2, 5, 5), torch.randn(2, 3, 3, 3)))
    show('bilinear', lambda: torch.nn.Bilinear(5, 5, 3)(xf, xf))
    show('LSTMCell', lambda: torch.nn.LSTMCell(5, 4)(xf))
    show('GRUCell', lambda: torch.nn.GRUCell(5, 4)(xf))
    show('RNNCell', lambda: torch.nn.RNNCell(5, 4)(xf))
    show('MultiheadAttention', lambda: torch.nn.MultiheadAttention(4, 2)(*(torch.randn(3, 1, 4),) * 3)[0])
    xb = torch.randn(2, 3, 4, 4).to(b)
    show('layer_norm on bf16', lambda: F.layer_norm(xb, [4]))
    show('cross_entropy on bf16', lambda: F.cross_entropy(xb[:, :, 0, 0], torch.tensor([0, 1])))
    show('max_pool2d on f32', lambda: F.max_pool2d(xb.float(), 2))
