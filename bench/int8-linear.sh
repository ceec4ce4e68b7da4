#!/usr/bin/env bash
# Dynamic int8 quantization on the compression category's MLP 784-256-128-10: float32 vs Quantize.dynamic inference
# per batch size, alternated in one JVM (dev.ember.bench.Int8LinearBench). Arguments go to Int8LinearBench:
# [--rounds R] [--millis T] [--batch N]... ; threads: EMBER_NUM_THREADS (default 2).
# stdout: one JSON object per batch size {"category":"compression","case":"mlp dynamic int8 b=N",...};
# stderr: one readable line each. The PyTorch side: bench/peers/int8_linear_peer.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
ember_bench_main "$root" Int8LinearBench "$@"
