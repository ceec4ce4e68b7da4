#!/usr/bin/env bash
# Inference latency without the tape, eager vs compiled (epilogue fusion, memory planning, graph executor): MLP
# 784-128-10 at batch 1, LeNet-5 at batch 1 and 64, alternated in one JVM (dev.ember.bench.CompiledLatencyBench).
# Arguments go to CompiledLatencyBench: [--rounds R] [--seconds S].
# stdout: one JSON object per case {"category":"compile","case":"mlp 784-128-10 b=1",...}; stderr: readable lines.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads=${EMBER_NUM_THREADS:-2}
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xmx4g -Dember.threads="$threads" -cp "$classpath" \
  dev.ember.bench.CompiledLatencyBench "$@" 2> >(grep -v 'Using incubator modules' >&2)
