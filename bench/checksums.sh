#!/usr/bin/env bash
# Bitwise fingerprints of a few short training runs (dev.ember.bench.TrainChecksums) at 1 and 2 threads and on the scalar kernels: a change
# that claims "no behaviour change" prints the same lines before and after, and the 1- and 2-thread lines agree.
# usage: bench/checksums.sh [STEPS]   (default 6; prints "threads=N run sha loss=..." lines)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../scripts/find-jdk.sh
source "$root/scripts/find-jdk.sh"
ember_find_jdk || exit 1
# shellcheck source=build.sh
source "$root/bench/build.sh"
cp="$(ember_bench_build "$root")" || exit 1
for t in 1 2; do
  "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Dember.threads="$t" -cp "$cp" \
      dev.ember.bench.TrainChecksums "${1:-6}" | sed "s/^/threads=$t /"
done
# the plain-Java kernels (the fallback without the Vector API) have their own, equally fixed, bits
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Dember.threads=2 -Dember.kernels=scalar -cp "$cp" \
    dev.ember.bench.TrainChecksums "${1:-6}" | sed "s/^/threads=2,scalar /"
