# Sourced by bench/compare.sh and bench/run_benchmarks.sh (after scripts/find-jdk.sh has set JAVA_HOME):
# ember_bench_build ROOT builds ember-core, ember-nn, ember-train, ember-compile, ember-distributed and ember-bench (classes + target/lib) when any
# main source or pom is newer than the last build, and prints the runner's classpath on stdout.
# ember_bench_main ROOT CLASS [ARGS...] builds and runs dev.ember.bench.CLASS with ARGS on EMBER_NUM_THREADS threads
# (default 2) and a 4 GB heap, without the JVM's incubator-module warning on stderr (the single-bench scripts).
# ember_maven_offline: true when the local Maven repository already holds the bench's dependencies (JMH), so
# builds can run offline.
ember_maven_offline() {
  [ -d "$HOME/.m2/repository/org/openjdk/jmh/jmh-core" ]
}

ember_bench_build() {
  local root=$1
  local stamp="$root/ember-bench/target/.compare-built"
  if [ ! -f "$stamp" ] || [ -n "$(find "$root/pom.xml" "$root/ember-core" "$root/ember-nn" "$root/ember-train" "$root/ember-compile" "$root/ember-distributed" "$root/ember-bench" \
      -path '*/target' -prune -o \( -name '*.java' -o -name pom.xml \) -newer "$stamp" -print -quit)" ]; then
    echo "bench: building ember-core, ember-nn, ember-train, ember-compile and ember-bench..." >&2
    local offline=()
    ember_maven_offline && offline=(-o)
    if ! (cd "$root" && scripts/mvn -q "${offline[@]}" package -pl ember-core,ember-nn,ember-bench -am -DskipTests >&2); then
      echo "bench: build failed; run 'scripts/mvn package -pl ember-core,ember-nn,ember-bench -am -DskipTests' in $root to see why" >&2
      return 1
    fi
    touch "$stamp"
  fi
  echo "$root/ember-bench/target/classes:$root/ember-bench/target/lib/*"
}

ember_bench_main() {
  local root=$1 main=$2 classpath
  shift 2
  classpath=$(ember_bench_build "$root") || return 1
  "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -Xmx4g -Dember.threads="${EMBER_NUM_THREADS:-2}" \
    -cp "$classpath" "dev.ember.bench.$main" "$@" 2> >(grep -v 'Using incubator modules' >&2)
}
