#!/usr/bin/env bash
# Inference latency without the tape, eager vs compiled (epilogue fusion, memory planning, graph executor): MLP
# 784-128-10 at batch 1, LeNet-5 at batch 1 and 64, alternated in one JVM (dev.ember.bench.CompiledLatencyBench).
# Arguments go to CompiledLatencyBench: [--rounds R] [--seconds S].
# stdout: one JSON object per case {"category":"compile","case":"mlp 784-128-10 b=1",...}; stderr: readable lines.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
ember_bench_main "$root" CompiledLatencyBench "$@"
