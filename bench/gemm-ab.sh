#!/usr/bin/env bash
# sgemm of another revision against this working tree, alternated inside one JVM (dev.ember.bench.GemmAB):
# the A/B that stays readable when the host's neighbours swing fresh-JVM timings by 20-30%.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/gemm-ab.sh REV [--threads N] [--seconds S] SHAPE...

  REV          the git revision to compare against (built in a temporary worktree, ember-core only)
  SHAPE        MxKxN[:nn|tn|nt], C[M, N] = op(A) op(B) with K the inner size; tn: A^T B, nt: A B^T
  --threads N  worker threads of both builds (default 2)
  --seconds S  alternating rounds per shape (default 8)

stdout: one JSON object per shape {"category":"gemm-ab","case","unit","old","new","ratio","old_cpu","new_cpu",
"ratio_cpu","rounds","same_bits"}, ratio = new/old (> 1: this tree is faster); *_cpu: GFLOP/s per CPU-second of
all the JVM's threads, readable when the host's load is far above its cores (wall time then measures the
scheduler); same_bits says whether both builds gave bitwise the same C.
stderr: a readable line per shape. Example:
  bench/gemm-ab.sh HEAD~1 2048x32x2048:tn 32x2048x2048:nt 1024x1024x1024
USAGE
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
rev=$1; shift
threads=2
seconds=8
shapes=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --threads|--seconds)
      [ $# -ge 2 ] || { echo "gemm-ab.sh: $1 needs a value" >&2; exit 2; }
      [ "$1" = --threads ] && threads=$2 || seconds=$2; shift 2 ;;
    -*) echo "gemm-ab.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) shapes+=("$1"); shift ;;
  esac
done
[ ${#shapes[@]} -gt 0 ] || { echo "gemm-ab.sh: no shape given" >&2; usage >&2; exit 2; }
sha=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") || { echo "gemm-ab.sh: unknown revision '$rev'" >&2; exit 2; }

. "$root/scripts/find-jdk.sh"
ember_find_jdk
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1

tmp=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
git -C "$root" worktree add --detach --quiet "$tmp/old" "$sha"
offline=()
ember_maven_offline && offline=(-o)
echo "gemm-ab: building ember-core at ${sha:0:12}..." >&2
if ! (cd "$tmp/old" && scripts/mvn -q "${offline[@]}" compile -pl ember-core >&2); then
  echo "gemm-ab.sh: building ember-core at $rev failed" >&2
  exit 1
fi

"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Dember.threads="$threads" -cp "$classpath" \
  dev.ember.bench.GemmAB --seconds "$seconds" "$tmp/old/ember-core/target/classes" "$root/ember-core/target/classes" \
  "${shapes[@]}" 2> >(grep -v 'Using incubator modules' >&2)
