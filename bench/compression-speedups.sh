#!/usr/bin/env bash
# Ember's speedups of the compression category's compressed models over their float originals: per group (MLP b=1
# and b=128: f32, int8_dynamic, int8_static; LeNet-5 b=1 and b=128: unpruned, pruned50_shrunk, int8_static; convnet
# b=64: unfused, bn_folded, bn_relu_fused) the variants alternate inside one JVM on the same input, the order rotating
# every round (dev.ember.bench.CompressionSpeedups), so machine noise falls on all of them alike.
# Arguments go to CompressionSpeedups: [--rounds R] [--calls N] [--warmup S]. Threads: EMBER_NUM_THREADS (default 2).
# stdout: one JSON object per group; stderr: one readable line per group.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
ember_bench_main "$root" CompressionSpeedups "$@"
