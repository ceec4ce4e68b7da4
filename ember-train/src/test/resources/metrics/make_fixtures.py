"""Writes metrics_fixtures.json: scikit-learn's values for the metrics in dev.ember.metrics, on
seeded random inputs, for MetricsFixtureTest.

Run with the system interpreter that has numpy and scikit-learn 1.2:  /usr/bin/python3 make_fixtures.py

Every case holds its inputs and sklearn's results. Floats are written with repr, so they read back
bit for bit. Sections:
- classification: `output` is [N, C] scores (predicted label = argmax), [N] binary scores
  (predicted label = score >= threshold) or [N] predicted labels (`labels_output`); `target` the
  true labels. Precision/recall/F-scores use labels=range(C) and zero_division='warn' (-> 0).
- binary_ranking: `scores` [N], `target` 0/1; roc_curve (drop_intermediate=True),
  roc_auc_score, precision_recall_curve, average_precision_score.
- multiclass_ranking: `scores` [N, C] (rows sum to 1), `target`; roc_auc_score(multi_class='ovr')
  macro and weighted (absent when a class is missing, where sklearn raises), and average_precision_score(label_binarize(target), scores, average='macro').
- regression: `output`, `target` [N] or [N, D]; MAE, MSE, RMSE (squared=False), R2, uniform average.
- mean: `values`, `weights`; np.average(values, weights=weights).
"""
import json
import os
import warnings

import numpy as np
from sklearn import metrics as M
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.preprocessing import label_binarize

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics_fixtures.json")
warnings.simplefilter("ignore", UndefinedMetricWarning)
warnings.filterwarnings("ignore", message="No positive class found in y_true")


def floats(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64).reshape(-1)] if np.ndim(a) <= 1 else [
        floats(r) for r in a]


def ints(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


def prf(y, p, c):
    labels = list(range(c))
    out = {}
    averages = ["micro", "macro", "weighted"] + (["binary"] if c == 2 else [])
    for avg in averages:
        kw = dict(labels=labels, average=avg, zero_division="warn")
        out[avg] = {
            "precision": float(M.precision_score(y, p, **kw)),
            "recall": float(M.recall_score(y, p, **kw)),
            "f1": float(M.f1_score(y, p, **kw)),
            "f0.5": float(M.fbeta_score(y, p, beta=0.5, **kw)),
            "f2": float(M.fbeta_score(y, p, beta=2.0, **kw)),
        }
    return out


def classification_case(name, c, output, target, kind, threshold=0.5):
    if kind == "scores":
        pred = np.argmax(output, axis=1)
    elif kind == "binary_scores":
        pred = (output >= threshold).astype(np.int64)
    else:
        pred = output
    labels = list(range(c))
    case = {
        "name": name, "num_classes": c, "kind": kind, "threshold": threshold,
        "output": ints(output) if kind == "labels" else floats(output), "target": ints(target),
        "accuracy": float(M.accuracy_score(target, pred)),
        "prf": prf(target, pred, c),
        "confusion_matrix": M.confusion_matrix(target, pred, labels=labels).tolist(),
    }
    for norm in ("true", "pred", "all"):
        case["confusion_matrix_" + norm] = floats(
            M.confusion_matrix(target, pred, labels=labels, normalize=norm))
    if kind == "scores" and c > 2:
        case["top2_accuracy"] = float(M.top_k_accuracy_score(target, output, k=2, labels=labels))
    return case


def binary_ranking_case(name, scores, target):
    fpr, tpr, thr = M.roc_curve(target, scores)
    pre, rec, pthr = M.precision_recall_curve(target, scores)
    return {
        "name": name, "scores": floats(scores), "target": ints(target),
        "roc": {"fpr": floats(fpr), "tpr": floats(tpr), "thresholds": floats(thr)},
        "roc_auc": float(M.roc_auc_score(target, scores)),
        "pr": {"precision": floats(pre), "recall": floats(rec), "thresholds": floats(pthr)},
        "average_precision": float(M.average_precision_score(target, scores)),
    }


def multiclass_ranking_case(name, scores, target, c, auc=True):
    labels = list(range(c))
    case = {
        "name": name, "num_classes": c, "scores": floats(scores), "target": ints(target),
        "mean_average_precision": float(M.average_precision_score(
            label_binarize(target, classes=labels), scores, average="macro")),
    }
    if auc:  # sklearn raises when a class is missing from the targets
        case["roc_auc_macro"] = float(M.roc_auc_score(target, scores, multi_class="ovr", average="macro",
                                                      labels=labels))
        case["roc_auc_weighted"] = float(M.roc_auc_score(target, scores, multi_class="ovr",
                                                         average="weighted", labels=labels))
    return case


def regression_case(name, output, target):
    return {
        "name": name, "output": floats(output), "target": floats(target),
        "mae": float(M.mean_absolute_error(target, output)),
        "mse": float(M.mean_squared_error(target, output)),
        "rmse": float(M.mean_squared_error(target, output, squared=False)),
        "r2": float(M.r2_score(target, output)),
    }


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(20261123)
    cls, binr, mcr, reg, mean = [], [], [], [], []

    # binary scores with ties (one decimal), thresholded at 0.5
    s = np.round(rng.random(50), 1)
    y = (rng.random(50) < 0.3 + 0.4 * s).astype(np.int64)
    cls.append(classification_case("binary_scores_ties", 2, s, y, "binary_scores", 0.5))
    binr.append(binary_ranking_case("binary_ties", s, y))
    # binary logits thresholded at 0
    z = rng.normal(size=40)
    y = (rng.random(40) < 1 / (1 + np.exp(-2 * z))).astype(np.int64)
    cls.append(classification_case("binary_logits", 2, z, y, "binary_scores", 0.0))
    binr.append(binary_ranking_case("binary_continuous", z, y))
    # binary [N, 2] scores via argmax
    z2 = rng.normal(size=(30, 2))
    y = rng.integers(0, 2, 30)
    cls.append(classification_case("binary_two_columns", 2, z2, y, "scores"))
    # heavy ties: only three distinct scores, many collinear points
    s = rng.choice([0.2, 0.5, 0.9], size=60)
    y = (rng.random(60) < s).astype(np.int64)
    binr.append(binary_ranking_case("binary_three_levels", s, y))
    # unbalanced: few positives
    s = rng.random(70)
    y = np.zeros(70, dtype=np.int64)
    y[rng.choice(70, 4, replace=False)] = 1
    binr.append(binary_ranking_case("binary_few_positives", s, y))

    # 3-class logits
    y = rng.integers(0, 3, 60)
    z = rng.normal(size=(60, 3)) + 1.5 * np.eye(3)[y]
    cls.append(classification_case("three_class_logits", 3, z, y, "scores"))
    mcr.append(multiclass_ranking_case("three_class_probs", softmax(z), y, 3))
    # 5-class logits where class 4 is never predicted
    y = rng.integers(0, 5, 80)
    z = rng.normal(size=(80, 5)) + 1.0 * np.eye(5)[y]
    z[:, 4] -= 10.0
    cls.append(classification_case("five_class_absent_prediction", 5, z, y, "scores"))
    mcr.append(multiclass_ranking_case("five_class_probs", softmax(z), y, 5))
    # 5-class logits where class 3 never occurs in the targets
    y = rng.choice([0, 1, 2, 4], size=70)
    z = rng.normal(size=(70, 5)) + 1.2 * np.eye(5)[y]
    cls.append(classification_case("five_class_absent_target", 5, z, y, "scores"))
    # 4-class predicted labels
    y = rng.integers(0, 4, 55)
    p = np.where(rng.random(55) < 0.6, y, rng.integers(0, 4, 55))
    cls.append(classification_case("four_class_labels", 4, p, y, "labels"))
    # multiclass scores with ties: rows drawn from a few probability vectors
    protos = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5],
                       [0.125, 0.125, 0.75], [0.75, 0.125, 0.125]])
    rows = rng.integers(0, len(protos), 66)
    sc = protos[rows]
    y = np.array([rng.choice(3, p=sc[i]) for i in range(66)])
    mcr.append(multiclass_ranking_case("three_class_tied_probs", sc, y, 3))

    # 4-class probabilities where class 2 never occurs in the targets: its AP is 0 (mAP only)
    y = rng.choice([0, 1, 3], size=50)
    z = rng.normal(size=(50, 4)) + 1.0 * np.eye(4)[y]
    mcr.append(multiclass_ranking_case("four_class_absent_target", softmax(z), y, 4, auc=False))

    # regression
    t = rng.normal(2.0, 3.0, size=40)
    reg.append(regression_case("single_output", t + rng.normal(0, 1.0, 40), t))
    t = rng.normal([0.0, 100.0, -5.0], [1.0, 0.5, 4.0], size=(45, 3))
    o = t + rng.normal(0, [0.3, 0.2, 2.0], size=(45, 3))
    o[:, 1] = t[:, 1]  # a perfectly predicted output: R2 numerator 0 -> 1
    reg.append(regression_case("three_outputs", o, t))
    t = np.column_stack([rng.normal(size=35), np.full(35, 3.0)])
    o = t + rng.normal(0, 0.5, size=(35, 2))
    reg.append(regression_case("constant_target_column", o, t))

    v = rng.normal(size=30)
    w = rng.integers(1, 9, 30)
    mean.append({"name": "weighted", "values": floats(v), "weights": ints(w),
                 "mean": float(np.average(v, weights=w))})

    doc = {"sklearn": __import__("sklearn").__version__, "numpy": np.__version__,
           "classification": cls, "binary_ranking": binr, "multiclass_ranking": mcr,
           "regression": reg, "mean": mean}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
