#!/usr/bin/env bash
# Where a seed MLP training step spends its time (dev.ember.bench.StepPhases): zero_grad, forward, backward and
# the optimizer step, several optimizers alternated in one JVM so that the host's swings fall on all of them.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/step-phases.sh [--threads N] [--hidden H] [--batch B] [--optim O[,O...]] [--steps N] [--rounds R] [--split-step]
                           [--floor]

  --threads N   worker threads (default 2)
  --hidden H    the seed MLP's width, 1024-H-H-H-10 (default 2048: seed_medium; 512 small, 6656 large)
  --batch B     batch size (default 32)
  --optim O     sgd, adam, adamw, or several separated by commas (default sgd); each gets its own model
  --steps N     steps per round (default 30); --rounds R timed rounds after two warm-up ones (default 10)
  --split-step  also time the deferred weight-gradient GEMMs inside the step, alone (step_gemm)
  --floor       also time the step's memory floor (step_floor): one read-modify-write pass over the arrays the
                optimizer rewrites (parameters + momentum buffer, or + Adam's two moments), as many floats each
                as the model has parameters

stdout: one JSON object per optimizer {"category":"step-phases","workload","case","unit":"ms","zero_grad",
"forward","backward","step","total","step_gemm","step_floor","deferred","rounds"}: medians over the rounds of the mean ms per
step. stderr: each median with its min-max. Example:
  bench/step-phases.sh --optim sgd,adam,adamw --split-step --floor
USAGE
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads=2
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --threads)
      [ $# -ge 2 ] || { echo "step-phases.sh: --threads needs a value" >&2; exit 2; }
      threads=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1

"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xms1g -XX:+AlwaysPreTouch -XX:+UseParallelGC \
  -Dember.threads="$threads" -cp "$classpath" dev.ember.bench.StepPhases "${args[@]}" \
  2> >(grep -v 'Using incubator modules' >&2)
