#!/usr/bin/env bash
# Runs Ember's JMH benchmarks (ember-bench) with the Vector API enabled; arguments go to JMH.
set -euo pipefail
usage() {
  cat <<'USAGE'
usage: bench/jmh.sh [JMH options] [benchmark regex...]
  e.g. bench/jmh.sh SgemmBench -p mkn=1024x1024x1024
       bench/jmh.sh 'Elementwise|Reduction' -wi 2 -i 3
       bench/jmh.sh MlpStepBench -jvmArgsAppend -Dember.threads=1
  Benchmarks: SgemmBench, ElementwiseBench, ReductionBench, MlpStepBench (see their javadoc for
  the unit conversions). Builds ember-core and ember-bench first if needed. 'bench/jmh.sh -l' lists them.
USAGE
}
[ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] && { usage; exit 0; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
java_major() {
  "$1/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}'
}
jdk=""
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && [ "$(java_major "$JAVA_HOME")" -ge 25 ] 2>/dev/null; then
  jdk=$JAVA_HOME
else
  for c in $(ls -d /usr/lib/jvm/*25*/ 2>/dev/null | sort -rV); do
    c=${c%/}
    if [ -x "$c/bin/javac" ] && [ "$(java_major "$c")" -ge 25 ] 2>/dev/null; then jdk=$c; break; fi
  done
fi
[ -n "$jdk" ] || { echo "jmh.sh: no JDK 25+ found (JAVA_HOME=${JAVA_HOME:-unset}); install one and set JAVA_HOME" >&2; exit 1; }
export JAVA_HOME=$jdk PATH="$jdk/bin:$PATH"
if [ ! -f "$root/ember-bench/target/classes/META-INF/BenchmarkList" ]; then
  offline=()
  [ -d "$HOME/.m2/repository/org/openjdk/jmh/jmh-core" ] && offline=(-o)
  (cd "$root" && mvn -q "${offline[@]}" package -pl ember-core,ember-bench -am -Dmaven.test.skip=true >&2) \
    || { echo "jmh.sh: build failed; run 'mvn package -pl ember-core,ember-bench -am -Dmaven.test.skip=true' to see why" >&2; exit 1; }
fi
exec "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector \
  -cp "$root/ember-bench/target/classes:$root/ember-bench/target/lib/*" org.openjdk.jmh.Main "$@"
