#!/usr/bin/env bash
# Where one training workload's step spends its time, by op: runs the training category's case (dev.ember.bench.Compare
# training --only W) under JFR's execution sampling, then bench/profile_by_op.py over the training thread's samples.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/profile-step.sh [--only W] [--threads N] [--delay S] [--seconds T] [--step-ms M] [--out DIR]

  --only W     the training workload (a Compare --only prefix; default transformer)
  --threads N  worker threads (default 2)
  --delay S    seconds before sampling starts, past the JIT's warm-up (default 15)
  --seconds T  seconds sampled: 10 timed repeats of T/10 s each (default 20)
  --step-ms M  also print each share as ms of an M ms step (e.g. from the training record)
  --out DIR    where step.jfr and samples.txt go (default a new temporary folder)

stdout: the share of the training thread's samples by op (see bench/profile_by_op.py for the keys), then the
Compare row of the run. Shares, not times, are the result: the run is one process, sampled every ~10-20 ms.
Example: bench/profile-step.sh --only transformer --step-ms 147
USAGE
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
only=transformer
threads=2
delay=15
seconds=20
step_ms=()
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --only|--threads|--delay|--seconds|--step-ms|--out)
      [ $# -ge 2 ] || { echo "profile-step.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --only) only=$2 ;;
        --threads) threads=$2 ;;
        --delay) delay=$2 ;;
        --seconds) seconds=$2 ;;
        --step-ms) step_ms=(--step-ms "$2") ;;
        --out) out=$2 ;;
      esac
      shift 2 ;;
    *) echo "profile-step.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
source "$root/scripts/find-jdk.sh"
ember_find_jdk || exit 1
source "$root/bench/build.sh"
cp="$(ember_bench_build "$root")" || exit 1
[ -n "$out" ] || out="$(mktemp -d)"
mkdir -p "$out"
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xmx4g -Dember.threads="$threads" \
    -XX:FlightRecorderOptions:stackdepth=512 \
    -XX:StartFlightRecording="delay=${delay}s,filename=$out/step.jfr,settings=profile" \
    -cp "$cp" dev.ember.bench.Compare training --warmup "$delay" --threads "$threads" --repeats 10 \
    --target "$(awk "BEGIN { print $seconds / 10 }")" --max-wait 0 --only "$only" > "$out/compare.txt" 2> >(grep -v 'Using incubator modules' >&2)
"$JAVA_HOME/bin/jfr" print --events jdk.ExecutionSample --stack-depth 512 "$out/step.jfr" > "$out/samples.txt"
/usr/bin/python3 "$root/bench/profile_by_op.py" "$out/samples.txt" --within bench.TrainingCases "${step_ms[@]}"
cat "$out/compare.txt"
echo "profile-step.sh: recording and samples in $out" >&2
