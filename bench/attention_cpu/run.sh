#!/usr/bin/env bash
# Attention CPU time per call on one thread, Ember (default path) and torch 1.13 alternating, ROUNDS rounds a side
# per pass (default 5), PASSES passes (default 2): for a host too loaded for bench/compare.sh's wall times.
# Needs ember-core and ember-nn compiled (scripts/mvn -q -o -pl ember-nn -am compile).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$root/scripts/find-jdk.sh"
ember_find_jdk
rounds="${1:-5}"
passes="${2:-2}"
out="$(mktemp -d)"
cp="$root/ember-core/target/classes:$root/ember-nn/target/classes"
"$JAVA_HOME/bin/javac" -nowarn --add-modules jdk.incubator.vector -cp "$cp" -d "$out" \
  "$root/bench/attention_cpu/AttentionCpuTime.java" 2>&1 | grep -v '^warning\|incubator' || true
for p in $(seq "$passes"); do
  "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xms1g -XX:+UseParallelGC -Dember.threads=1 \
    -cp "$cp:$out" AttentionCpuTime "$rounds" 2>/dev/null | sed 's/^/ember /'
  /usr/bin/python3 "$root/bench/attention_cpu/attention_cpu_time.py" "$rounds" | sed 's/^/torch /'
done
