#!/usr/bin/env bash
# Conv+BN fusion on the compression category's convnet: Models.convnet(3, 32, 10) inference at batch 64 without the
# tape, unfused vs BatchNorm folded vs folded with the ReLU fused into the convolution, alternated in one JVM
# (dev.ember.bench.FuseBench). Arguments go to FuseBench: [--rounds R] [--batches B] [--batch N].
# stdout: one JSON object {"category":"compression","case":"convnet fuse b=64",...}; stderr: one readable line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
ember_bench_main "$root" FuseBench "$@"
