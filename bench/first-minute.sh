#!/usr/bin/env bash
# The first minute of a run: `./ember train` and PyTorch's same experiment (shared/peers/fashion.py)
# as whole processes, launch to exit, alternating sides, with epoch 1, steady epochs and the time to
# the first optimizer step; see bench/first_minute.py for the fields.
#   bench/first-minute.sh [--runs N] [--threads N] [--only mlp,lenet] [--record FILE] [--ember-opts OPTS] [--label L]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null || {
  echo "first-minute.sh: PyTorch is missing: apt-get install -y python3-torch python3-sklearn libopenblas0-openmp libjemalloc2" >&2; exit 2; }
exec /usr/bin/python3 "$root/bench/first_minute.py" "$@"
