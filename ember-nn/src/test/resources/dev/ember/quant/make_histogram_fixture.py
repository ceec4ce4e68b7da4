"""Reference values for HistogramObserver and PercentileObserver (HistogramObserverTorchTest) from torch 1.13.

Per case: the batches observed, then torch's state (histogram, min_val, max_val), the range its
_non_linear_param_search picks and calculate_qparams' scale and zero point.

torch 1.13's HistogramObserver.forward calls torch.histc(x, bins, min=int(min), max=int(max)): the range is truncated
to integers, so values outside it are dropped and the rest counted on a grid that is not the observer's (torch 2 passes
the float range). Ember counts over the float range. The "torch113" cases run torch 1.13's observer unchanged on
batches whose truncation changes nothing (one batch whose min and max are integers); the others run it with only that
truncation removed (FixedHistogramObserver below: forward copied from torch 1.13 with int() dropped). Everything else
(_adjust_min_max, _combine_histograms, _non_linear_param_search, _compute_quantization_error, _calculate_qparams) is
torch 1.13's own code.

PercentileObserver: the percentiles of torch's histogram (the formula in PercentileObserver's javadoc, float64), the
nearest-rank percentile of the values (torch.sort) for a one-batch case, and torch's _calculate_qparams of the clipped range.
Run: /usr/bin/python3 make_histogram_fixture.py  (writes histogram_fixture.json next to this script)."""
import json, math, os
import torch
from torch.ao.quantization import HistogramObserver


class FixedHistogramObserver(HistogramObserver):
    """torch 1.13's HistogramObserver with histc given the float range (as torch 2), nothing else changed."""

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        min_val = self.min_val
        max_val = self.max_val
        same_values = min_val.item() == max_val.item()
        is_uninitialized = min_val == float("inf") and max_val == float("-inf")
        if is_uninitialized or same_values:
            min_val, max_val = torch.aminmax(x)
            self.min_val.resize_(min_val.shape)
            self.min_val.copy_(min_val)
            self.max_val.resize_(max_val.shape)
            self.max_val.copy_(max_val)
            torch.histc(x, self.bins, min=min_val.item(), max=max_val.item(), out=self.histogram)
        else:
            new_min, new_max = torch.aminmax(x)
            combined_min = torch.min(new_min, min_val)
            combined_max = torch.max(new_max, max_val)
            (combined_min, combined_max, downsample_rate, start_idx) = self._adjust_min_max(
                combined_min, combined_max, self.upsample_rate)
            combined_histogram = torch.histc(x, self.bins, min=combined_min.item(), max=combined_max.item())
            if combined_min == min_val and combined_max == max_val:
                combined_histogram += self.histogram
            else:
                combined_histogram = self._combine_histograms(
                    combined_histogram, self.histogram, self.upsample_rate, downsample_rate, start_idx, self.bins)
            self.histogram.detach_().resize_(combined_histogram.shape)
            self.histogram.copy_(combined_histogram)
            self.min_val.detach_().resize_(combined_min.shape)
            self.min_val.copy_(combined_min)
            self.max_val.detach_().resize_(combined_max.shape)
            self.max_val.copy_(combined_max)
        return x_orig


torch.manual_seed(0)
out = {"torch": torch.__version__, "histogram": [], "percentile": []}
QD = {"quint8": torch.quint8, "qint8": torch.qint8}
QS = {"affine": torch.per_tensor_affine, "symmetric": torch.per_tensor_symmetric}


def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]


def percentile(hist, lo, hi, q):
    """The q-quantile of a histogram over [lo, hi], interpolated within its bin (PercentileObserver.quantile)."""
    h = [float(c) for c in hist.tolist()]
    total = sum(h)
    width = (hi - lo) / len(h)
    target = q * total
    before = 0.0
    for k, c in enumerate(h):
        if c > 0 and before + c >= target:
            frac = min(1.0, max(0.0, (target - before) / c))
            return lo + width * (k + frac)
        before += c
    return hi


def case(name, batches, cls=FixedHistogramObserver, bins=2048, upsample=128, dtype="quint8", scheme="affine",
         reduce_range=False, quant_range=None, percentiles=()):
    kw = dict(bins=bins, upsample_rate=upsample, dtype=QD[dtype], qscheme=QS[scheme], reduce_range=reduce_range)
    if quant_range is not None:
        kw.update(quant_min=quant_range[0], quant_max=quant_range[1])
    obs = cls(**kw)
    for b in batches:
        obs(b)
    lo, hi = obs._non_linear_param_search()
    s, z = obs.calculate_qparams()
    c = dict(name=name, bins=bins, upsample_rate=upsample, dtype=dtype, scheme=scheme, reduce_range=reduce_range,
             batches=[flat(b) for b in batches], histogram=flat(obs.histogram), min_val=obs.min_val.item(),
             max_val=obs.max_val.item(), search=[lo.item(), hi.item()], scale=s.item(), zero_point=int(z.item()))
    if quant_range is not None:
        c["quant_range"] = list(quant_range)
    out["histogram"].append(c)
    for p in percentiles:
        mn, mx = obs.min_val.item(), obs.max_val.item()
        plo = percentile(obs.histogram, mn, mx, 1 - p / 100)
        phi = percentile(obs.histogram, mn, mx, p / 100)
        ps, pz = obs._calculate_qparams(torch.tensor(plo, dtype=torch.float32), torch.tensor(phi, dtype=torch.float32))
        pc = dict(name=name, case=len(out["histogram"]) - 1, percentile=p, range=[plo, phi], scale=ps.item(),
                  zero_point=int(pz.item()))
        if len(batches) == 1:  # nearest rank: the ceil(q N)-th smallest value, q N computed as PercentileObserver does
            ordered = torch.sort(batches[0].reshape(-1))[0]
            n = float(ordered.numel())
            rank = [max(1, math.ceil((1 - p / 100) * n)), max(1, math.ceil((p / 100) * n))]
            pc["nearest_rank"] = [ordered[k - 1].item() for k in rank]
        out["percentile"].append(pc)


# torch 1.13 unchanged: one batch whose min and max are integers, so int() truncates nothing
x = (torch.randn(1500) * 1.2).clamp(-2.9, 3.9)
x[0], x[1] = -3.0, 4.0
case("torch113 one batch", [x], cls=HistogramObserver)
case("torch113 symmetric qint8", [x], cls=HistogramObserver, dtype="qint8", scheme="symmetric")

# with outliers: the search clips them
y = torch.randn(2000) * 0.7
y[5], y[17] = 9.5, -6.25
case("outliers", [y], percentiles=(99.0, 99.9))
# range growth: the second and fourth batches widen it, the third falls inside
g = [torch.randn(800) * 0.5, torch.randn(800) * 2 + 1, torch.rand(800) * 0.5, torch.randn(800) * 4 - 3]
case("growth affine quint8", g, percentiles=(99.0,))
case("growth symmetric qint8", g, dtype="qint8", scheme="symmetric")
case("growth reduce_range qint8", g, dtype="qint8", reduce_range=True)
case("growth custom range", g, dtype="quint8", quant_range=(0, 127))
case("growth 256 bins upsample 16", g, bins=256, upsample=16)
# one-sided (ReLU outputs): min stays 0
r = [torch.relu(torch.randn(1000)), torch.relu(torch.randn(1000) * 3)]
case("relu", r, percentiles=(99.9,))
# a constant batch, then real data: torch starts over
case("constant then data", [torch.full((50,), 0.75), torch.randn(700)])
case("constant only", [torch.full((50,), -1.5)])
# wide and narrow scales
case("narrow", [torch.randn(900) * 1e-3, torch.randn(900) * 2e-3])
case("wide", [torch.randn(900) * 300, torch.randn(900) * 50 + 1000])

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "histogram_fixture.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote", path, len(out["histogram"]), "histogram cases,", len(out["percentile"]), "percentile cases")
