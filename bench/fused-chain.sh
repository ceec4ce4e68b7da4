#!/usr/bin/env bash
# A fused elementwise chain, relu(x*y+z)*0.5+x as one generated Vector API kernel (FusedOps.elementwise), against
# the same five ops run eagerly, on 1M and 16M floats, 1 and 2 threads, alternated in one JVM
# (dev.ember.bench.FusedChainBench). Arguments go to FusedChainBench: [--rounds R] [--reps K].
# stdout: one JSON object per case {"category":"compile","case":"fused chain n=... t=...",...}; stderr: readable lines.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xmx6g -cp "$classpath" \
  dev.ember.bench.FusedChainBench "$@" 2> >(grep -v 'Using incubator modules' >&2)
