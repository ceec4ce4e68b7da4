#!/usr/bin/env bash
# What gradient checkpointing per layer saves and costs (dev.ember.bench.CheckpointMemory): the bytes the graph
# keeps for backward, the step's pooled buffers and the time per step, with and without checkpointing, for the
# training suite's transformer and the seed MLP (width 1024, batch 256).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/checkpoint-memory.sh [--threads N] [--workload transformer|mlp|all] [--steps N] [--rounds R]

  --threads N     worker threads (default 2)
  --workload W    transformer, mlp or all (default all)
  --steps N       steps per round and mode (default 3); --rounds R timed rounds after one warm-up (default 5)

stdout: one JSON object per workload and mode {"category":"memory","workload","case","saved_mb","pool_mb",
"ms_per_step","forward_ms","backward_ms","rounds"} (and "bitwise_same_gradients" for the checkpointed mode); stderr: a summary line each.
USAGE
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads=2
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --threads)
      [ $# -ge 2 ] || { echo "checkpoint-memory.sh: --threads needs a value" >&2; exit 2; }
      threads=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1

"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xms1g -XX:+UseParallelGC \
  -Dember.threads="$threads" -cp "$classpath" dev.ember.bench.CheckpointMemory "${args[@]}" \
  2> >(grep -v 'Using incubator modules' >&2)
