#!/usr/bin/env bash
# Static int8 quantization (prepare, calibrate, convert) of LeNet-5 and the MLP 784-256-128-10: float32 vs int8
# inference per batch size, whole model and layer by layer, alternated in one JVM (dev.ember.bench.StaticInt8Bench).
# Arguments go to StaticInt8Bench: [--rounds R] [--millis T] [--warmup W] [--batch N]... ; threads:
# EMBER_NUM_THREADS (default 2). stdout: one JSON object per case; stderr: one readable line each.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
ember_bench_main "$root" StaticInt8Bench "$@"
