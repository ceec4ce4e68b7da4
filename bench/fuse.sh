#!/usr/bin/env bash
# Conv+BN fusion on the compression category's convnet: Models.convnet(3, 32, 10) inference at batch 64 without the
# tape, unfused vs BatchNorm folded vs folded with the ReLU fused into the convolution, alternated in one JVM
# (dev.ember.bench.FuseBench). Arguments go to FuseBench: [--rounds R] [--batches B] [--batch N].
# stdout: one JSON object {"category":"compression","case":"convnet fuse b=64",...}; stderr: one readable line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
threads=${EMBER_NUM_THREADS:-2}
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xmx4g -Dember.threads="$threads" -cp "$classpath" \
  dev.ember.bench.FuseBench "$@" 2> >(grep -v 'Using incubator modules' >&2)
