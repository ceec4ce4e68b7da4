#!/usr/bin/env bash
# Fashion-MNIST side by side: `./ember train` and PyTorch (shared/peers/fashion.py) on the same
# settings (seed 0, inputs in [0,1], Adam 1e-3, batch 128; MLP 784-256-128-10 for 10 epochs, LeNet-5
# for 5), one model after the other, each side in its own process. Prints one JSON object per
# (model, side) on stdout and a table on stderr: final test accuracy and the median training time
# per epoch (validation excluded on both sides).
#   bench/fashion.sh [--threads N] [--only mlp,lenet]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads=2
only="mlp,lenet"
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "fashion.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
peers="${EMBER_PEERS:-$root/../shared/peers}"
[ -f "$peers/fashion.py" ] || { echo "fashion.sh: no $peers/fashion.py (set EMBER_PEERS)" >&2; exit 2; }
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "fashion.sh: PyTorch is missing: apt-get install -y python3-torch python3-sklearn libopenblas0-openmp libjemalloc2" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
IFS=, read -ra models <<< "$only"
for m in "${models[@]}"; do
  out="$tmp/ember-$m"
  "$root/ember" train --model "$m" --threads "$threads" --out "$out" --quiet > "$tmp/ember-$m.log"
  python3 - "$m" "$threads" "$out" "$(tail -n 1 "$tmp/ember-$m.log")" <<'PY'
import csv, json, statistics, sys
m, threads, out, last = sys.argv[1:5]
rows = list(csv.DictReader(open(out + "/metrics.csv")))
times = [float(r["epoch_time_s"]) for r in rows]
print(json.dumps({"side": "ember", "model": m, "threads": int(threads), "epochs": len(rows),
                  "test_accuracy": float(last.split("=")[1]),
                  "train_s_per_epoch_median": statistics.median(times), "train_s_per_epoch": times}), flush=True)
PY
  /usr/bin/python3 "$peers/fashion.py" --threads "$threads" --only "$m" 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"side": "pytorch", "model": sys.argv[1], "threads": r["threads"], "epochs": r["epochs"],
                      "test_accuracy": r["final_test_acc"], "train_s_per_epoch_median": r["train_s_per_epoch_median"],
                      "train_s_per_epoch": [e["train_s"] for e in r["per_epoch"]], "contaminated": r["contaminated"]}), flush=True)
' "$m"
done | tee "$tmp/all.jsonl"
python3 - "$tmp/all.jsonl" >&2 <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| model | side | epochs | test accuracy | train s/epoch (median) |")
print("|---|---|---:|---:|---:|")
for r in rows:
    print("| %s | %s | %d | %.4f | %.2f |" % (r["model"], r["side"], r["epochs"], r["test_accuracy"], r["train_s_per_epoch_median"]))
PY
