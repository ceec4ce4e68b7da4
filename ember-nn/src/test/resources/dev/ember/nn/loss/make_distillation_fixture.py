"""Writes distillation_fixture.json for DistillationLossTest: Hinton's distillation loss in torch 1.13,

    alpha * T^2 * F.kl_div(F.log_softmax(s / T, 1), F.log_softmax(t / T, 1), reduction="batchmean", log_target=True)
    + (1 - alpha) * F.cross_entropy(s, y)

in float64 for a few (T, alpha) pairs, with the gradient with respect to the student and teacher logits.

Run with the system interpreter that has torch 1.13:  /usr/bin/python3 make_distillation_fixture.py
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(36)
cases = []
for n, c, temperature, alpha in [(4, 5, 1.0, 0.5), (6, 3, 4.0, 0.9), (3, 7, 2.5, 1.0), (5, 4, 0.5, 0.0),
                                 (2, 10, 20.0, 0.3)]:
    s = (torch.randn(n, c, dtype=torch.float64) * 3).requires_grad_()
    t = (torch.randn(n, c, dtype=torch.float64) * 3).requires_grad_()
    y = torch.randint(0, c, (n,))
    soft = F.kl_div(F.log_softmax(s / temperature, 1), F.log_softmax(t / temperature, 1), reduction="batchmean",
                    log_target=True)
    loss = alpha * temperature * temperature * soft + (1 - alpha) * F.cross_entropy(s, y)
    loss.backward()
    cases.append({
        "n": n, "c": c, "temperature": temperature, "alpha": alpha,
        "student": s.detach().flatten().tolist(), "teacher": t.detach().flatten().tolist(),
        "labels": y.tolist(), "loss": loss.item(),
        "grad_student": s.grad.flatten().tolist(), "grad_teacher": t.grad.flatten().tolist(),
    })

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "distillation_fixture.json"), "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, indent=1)
    f.write("\n")
