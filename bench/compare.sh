#!/usr/bin/env bash
# Ember vs PyTorch on the same workloads, in one run: builds Ember if needed, then alternates
# Ember and PyTorch passes over one category (see bench/compare.py for why whole passes).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/compare.sh CATEGORY [--threads N] [--repeats N] [--passes N] [--max-wait S] [--only P,...]

  CATEGORY     gemm  sgemm, square 128..2048, the MLP training shapes and two transposed backward GEMMs
               ops   elementwise/reduction forward (1M and 64K floats), fwd+bwd with autograd, tape overhead
               nn    attention T=128..4096 (time, memory per call), LSTM layer, conv2d (LeNet, VGG, depthwise)
               optim optimizer.step() of SGD(momentum), Adam, AdamW, RMSprop, Adagrad, Lion on one f32
                     tensor of 1M and 16M elements (GB/s of state touched; Lion is Ember only), and
                     one CosineAnnealingLR step (us/call)
               losses     forward+backward of each loss (us/call) at [128x10], [128x1000], [128x1], [4096]
               schedulers one lr scheduler step() on SGD with 4 param groups (us/call)
               metrics    reset+update+compute of each ember-train metric on a batch of 128 (us/call);
                          the peer is scikit-learn on the same batch (torch has no metrics library)
               callbacks  us/step and % each Trainer callback adds to an MLP training step (Ember only)
  --threads N  threads on both sides (default 2): -Dember.threads=N for Ember, --threads N for PyTorch
  --repeats N  timed repeats per case and pass (default 3)
  --passes N   alternating ember/pytorch passes; repeats are pooled over passes (default 2)
  --max-wait S seconds each case may wait for a quiet machine (default 10)
  --only P,... only workloads or "workload/case" names starting with one of these

stdout: one JSON object per case {"category","workload","case","unit","ember","pytorch","ratio",...};
ratio > 1 means Ember is better. stderr: progress and a table.
Needs: a JDK 25+ (JAVA_HOME, else /usr/lib/jvm/*), Maven, /usr/bin/python3 with torch, and the
shared peer scripts at $EMBER_PEERS or ../shared/peers relative to the repository root.
EOF
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] || { usage >&2; exit 2; }
case "$1" in
  -h|--help) usage; exit 0 ;;
  gemm|ops|nn|optim|losses|schedulers|metrics|callbacks) category=$1; shift ;;
  *) echo "compare.sh: unknown category '$1' (expected gemm, ops, nn, optim, losses, schedulers, metrics or callbacks)" >&2; usage >&2; exit 2 ;;
esac
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --threads|--repeats|--passes|--max-wait|--only)
      [ $# -ge 2 ] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }
      extra+=("$1" "$2"); shift 2 ;;
    *) echo "compare.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

java_major() {
  "$1/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}'
}
jdk=""
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && [ "$(java_major "$JAVA_HOME")" -ge 25 ] 2>/dev/null; then
  jdk=$JAVA_HOME
else
  for c in $(ls -d /usr/lib/jvm/*25*/ 2>/dev/null | sort -rV); do
    c=${c%/}
    if [ -x "$c/bin/javac" ] && [ "$(java_major "$c")" -ge 25 ] 2>/dev/null; then jdk=$c; break; fi
  done
fi
if [ -z "$jdk" ]; then
  echo "compare.sh: no JDK 25+ found (JAVA_HOME=${JAVA_HOME:-unset}, nothing usable in /usr/lib/jvm/*25*); install one and set JAVA_HOME" >&2
  exit 1
fi
export JAVA_HOME=$jdk PATH="$jdk/bin:$PATH"

python=/usr/bin/python3
if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "compare.sh: PyTorch is missing: '$python -c \"import torch\"' failed (Debian: apt-get install -y python3-torch)" >&2
  exit 1
fi
peers=${EMBER_PEERS:-$root/../shared/peers}
if [ ! -f "$peers/pytorch_bench.py" ] || [ ! -f "$peers/launcher.py" ]; then
  echo "compare.sh: shared PyTorch peer scripts not found at $peers (need pytorch_bench.py, launcher.py, quiet.py); set EMBER_PEERS" >&2
  exit 1
fi
peers="$(cd "$peers" && pwd)"

# rebuild when any main source or pom is newer than the bench classes (tests are not needed here)
stamp="$root/ember-bench/target/.compare-built"
if [ ! -f "$stamp" ] || [ -n "$(find "$root/pom.xml" "$root/ember-core" "$root/ember-nn" "$root/ember-train" "$root/ember-bench" \
    -path '*/target' -prune -o \( -name '*.java' -o -name pom.xml \) -newer "$stamp" -print -quit)" ]; then
  echo "compare.sh: building ember-core, ember-nn, ember-train and ember-bench..." >&2
  offline=()
  [ -d "$HOME/.m2/repository/org/openjdk/jmh/jmh-core" ] && offline=(-o)
  if ! (cd "$root" && scripts/mvn -q "${offline[@]}" package -pl ember-core,ember-nn,ember-bench -am -DskipTests >&2); then
    echo "compare.sh: build failed; run 'mvn package -pl ember-core,ember-nn,ember-bench -am -DskipTests' in $root to see why" >&2
    exit 1
  fi
  touch "$stamp"
fi

exec "$python" "$root/bench/compare.py" "$category" "${extra[@]}" --java "$JAVA_HOME/bin/java" \
  --classpath "$root/ember-bench/target/classes:$root/ember-bench/target/lib/*" --peers "$peers" --python "$python"
