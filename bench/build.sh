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

# ember_torch210_build ROOT SRC builds the torch210 peer (libtorch 2.10 through the JavaCPP presets, SRC =
# ../shared/peers/torch210) into a cache outside the repository, ${EMBER_TORCH210_CACHE:-~/.cache/ember/torch210},
# when its pom or sources are newer than the last build (the first build downloads about 200 MB from Maven
# Central), links native-openmp/ (Debian's OpenMP OpenBLAS and the system libgomp: its one-OpenMP-pool
# configuration), compiles bench/peers/Torch210Nn.java (its nn rows) against its jars into nn-classes/, runs it
# once so JavaCPP extracts its libraries (about 350 MB; that first load can crash, so up to
# three tries) and prints the cache directory. The peer never enters Ember's own dependency graph.
ember_torch210_build() {
  local root=$1 src=$2
  local cache=${EMBER_TORCH210_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/torch210}
  local jar="$cache/target/torch210-bench-1.0.jar" lib
  if [ ! -f "$src/pom.xml" ] || [ ! -d "$src/src" ]; then
    echo "bench: the torch210 peer is not at $src (need pom.xml and src/); set EMBER_PEERS" >&2
    return 1
  fi
  for lib in /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0 /usr/lib/x86_64-linux-gnu/libgomp.so.1 \
      /usr/lib/x86_64-linux-gnu/libjemalloc.so.2; do
    [ -e "$lib" ] || { echo "bench: the torch210 peer needs $lib (Debian: apt-get install -y libopenblas0-openmp libgomp1 libjemalloc2)" >&2; return 1; }
  done
  mkdir -p "$cache"
  if [ ! -f "$jar" ] || [ -n "$(find "$src/pom.xml" "$src/src" -newer "$jar" -print -quit)" ]; then
    echo "bench: building the torch210 peer in $cache (first time: downloads the JavaCPP pytorch presets, ~200 MB)..." >&2
    rm -rf "$cache/src" && cp -r "$src/pom.xml" "$src/src" "$cache/" || return 1
    local offline=()
    [ -d "$HOME/.m2/repository/org/bytedeco/pytorch/2.10.0-1.5.13" ] && offline=(-o)
    if ! "$root/scripts/mvn" -q "${offline[@]}" -f "$cache/pom.xml" package >&2; then
      echo "bench: the torch210 peer's build failed; run 'scripts/mvn -f $cache/pom.xml package' to see why" >&2
      return 1
    fi
    rm -f "$cache/.loaded"
  fi
  mkdir -p "$cache/native-openmp"
  ln -sfn /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0 "$cache/native-openmp/libopenblas.so.0"
  ln -sfn /usr/lib/x86_64-linux-gnu/libgomp.so.1 "$cache/native-openmp/libgomp.so.1"
  # the nn category's side (bench/peers/Torch210Nn.java, bench-time only), compiled against the peer's jars
  local nn_src="$root/bench/peers/Torch210Nn.java"
  if [ ! -f "$cache/nn-classes/Torch210Nn.class" ] || [ "$nn_src" -nt "$cache/nn-classes/Torch210Nn.class" ] \
      || [ "$jar" -nt "$cache/nn-classes/Torch210Nn.class" ]; then
    rm -rf "$cache/nn-classes"
    if ! "$JAVA_HOME/bin/javac" -nowarn -d "$cache/nn-classes" -cp "$cache/target/lib/*" "$nn_src" >&2; then
      echo "bench: compiling $nn_src against the torch210 peer's jars failed" >&2
      return 1
    fi
  fi
  if [ ! -f "$cache/.loaded" ]; then
    local try
    for try in 1 2 3; do
      echo "bench: loading the torch210 peer once (JavaCPP extracts its libraries; try $try of 3)..." >&2
      if (cd "$cache" && "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:ErrorFile="$cache/hs_err_pid%p.log" \
          -Dorg.bytedeco.javacpp.pathsFirst=true \
          -Djava.library.path="$cache/native-openmp" -Dorg.bytedeco.javacpp.cachedir="$cache/javacpp-cache-openmp" \
          -jar "$jar" --threads 1 --only sgemm --sgemm-sizes 64 --repeats 1 --warmup 0 --target 0.01 --max-wait 0 \
          >/dev/null 2>&1); then
        touch "$cache/.loaded"
        break
      fi
    done
    [ -f "$cache/.loaded" ] || { echo "bench: the torch210 peer failed to load three times; run it by hand: see $src/README.md" >&2; return 1; }
  fi
  echo "$cache"
}
