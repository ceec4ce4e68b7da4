#!/usr/bin/env bash
# Where epoch 1's extra time goes: one `./ember train` run under a flight recording of the JIT (compile
# time per tier and method, when the hot kernels reach C2, epoch 1's samples by frame kind,
# deoptimizations); see bench/jit_breakdown.py.
#   bench/jit-breakdown.sh [--model mlp|lenet] [--epochs N] [--threads N] [--top N] [--ember-opts OPTS] [--keep FILE.jfr]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec /usr/bin/python3 "$root/bench/jit_breakdown.py" "$@"
