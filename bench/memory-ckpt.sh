#!/usr/bin/env bash
# Gradient checkpointing on the memory category's transformer workload (train b=16 T=128 adamw): the same training
# step without checkpointing, with every encoder layer checkpointed, and under a memory budget planned by
# MemoryPlan, each in a fresh lean JVM (dev.ember.bench.MemoryProbe, flags as bench/compare.py's memory pass).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/memory-ckpt.sh [--threads N] [--warmup-steps N] [--steps N] [--rounds R] [--budget SIZE] [--xmx SIZE]
                           [--xmn SIZE]

  --threads N        worker threads (default 2)
  --warmup-steps N   untimed steps first (default 3, at least 3; the budget run plans from the second)
  --steps N          measured steps (default 10)
  --rounds R         time per step: R rounds of --steps steps without and with checkpointing, alternating, in the
                     plain run's JVM after its memory measurement (default 5); the time overhead is the median of
                     the rounds' ratios
  --budget SIZE      the --memory-budget run's budget (default 120m; k/m/g = KiB/MiB/GiB)
  --xmx SIZE, --xmn SIZE   the JVM's heap and young generation (default 4g, 64m; serial collector)

stdout: MemoryProbe's JSON lines of the three runs (peak RSS, peak heap, live heap, peak step = the most bytes live
in a step per dev.ember.tensor.ScopeMemory, activations = bytes the graph keeps for backward), then one summary
object {"category":"memory-ckpt", ...}: activation and peak-step reduction and time overhead of checkpointing, and
whether the budget run's measured peak stayed under the budget. stderr: a table.
USAGE
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads=2
warmup=3
steps=10
rounds=5
budget=120m
xmx=4g
xmn=64m
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --threads|--warmup-steps|--steps|--rounds|--budget|--xmx|--xmn)
      [ $# -ge 2 ] || { echo "memory-ckpt.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --threads) threads=$2 ;; --warmup-steps) warmup=$2 ;; --steps) steps=$2 ;; --budget) budget=$2 ;;
        --rounds) rounds=$2 ;;
        --xmx) xmx=$2 ;; --xmn) xmn=$2 ;;
      esac
      shift 2 ;;
    *) echo "memory-ckpt.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1

probe() {
  "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector "-Xmx$xmx" "-Xmn$xmn" -XX:+UseSerialGC \
    -Dember.threads="$threads" -cp "$classpath" dev.ember.bench.MemoryProbe transformer --threads "$threads" \
    --warmup-steps "$warmup" --steps "$steps" "$@" 2> >(grep -v 'Using incubator modules' >&2)
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
probe --alternate "$rounds" >>"$out"
probe --checkpoint >>"$out"
probe --memory-budget "$budget" >>"$out"
cat "$out"
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
v = {}
alt = None
for r in rows:
    if r.get("workload") != "transformer":
        continue
    if r["metric"] == "s_per_step":
        alt = r
        continue
    kind = "ckpt" if r["case"].endswith(" ckpt") else "budget" if " budget=" in r["case"] else "plain"
    v.setdefault(kind, {})[r["metric"]] = r
def m(kind, metric):
    return v[kind][metric]["median"]
s_plain = alt["plain"]
s_ckpt = alt["ckpt"]
# the rounds ran in pairs under the same load: the median of the per-round ratios
ratios = sorted(c / p for c, p in zip(alt["ckpt_values"], alt["plain_values"]))
paired = ratios[len(ratios) // 2] if len(ratios) % 2 else (ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2
b = v["budget"]["peak_step_mb"]
summary = {
    "category": "memory-ckpt", "workload": "transformer", "case": "train b=16 T=128 adamw",
    "activation_mb": {k: m(k, "activation_mb") for k in v},
    "peak_step_mb": {k: m(k, "peak_step_mb") for k in v},
    "peak_rss_mb": {k: m(k, "peak_rss_mb") for k in v},
    "s_per_step": {k: v[k]["peak_rss_mb"]["s_per_step"] for k in v},
    "activation_reduction": 1 - m("ckpt", "activation_mb") / m("plain", "activation_mb"),
    "peak_step_reduction": 1 - m("ckpt", "peak_step_mb") / m("plain", "peak_step_mb"),
    "time_overhead": paired - 1, "alternate_s_per_step": {"plain": s_plain, "ckpt": s_ckpt},
    "budget_mb": b["budget_mb"], "budget_checkpointed": b["checkpointed"], "budget_predicted_mb": b["predicted_peak_mb"],
    "budget_measured_mb": b["median"], "budget_met": b["median"] <= b["budget_mb"],
}
print(json.dumps(summary))
e = sys.stderr
e.write("%-8s %14s %14s %12s %10s\n" % ("run", "activations MB", "peak step MB", "peak RSS MB", "s/step"))
for k in ("plain", "ckpt", "budget"):
    e.write("%-8s %14.1f %14.1f %12.1f %10.3f\n" % (k, m(k, "activation_mb"), m(k, "peak_step_mb"), m(k, "peak_rss_mb"),
                                                   v[k]["peak_rss_mb"]["s_per_step"]))
e.write("checkpointing every layer: %.0f%% less activation memory, %.0f%% less peak step memory, %+.0f%% time per step"
        " (median of %d alternating rounds' ratios; medians %.3f vs %.3f s; goal: >= 40%% less activation memory for"
        " <= 35%% more time)\n" % (100 * summary["activation_reduction"], 100 * summary["peak_step_reduction"],
                      100 * summary["time_overhead"], alt["rounds"], s_ckpt, s_plain))
e.write("budget %.1f MB: checkpointed [%s], predicted %.1f MB, measured %.1f MB -> %s\n" % (
    b["budget_mb"], b["checkpointed"], b["predicted_peak_mb"], b["median"],
    "under the budget" if summary["budget_met"] else "OVER the budget"))
PY
