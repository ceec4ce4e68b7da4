# Sourced by ./ember, .ci/run and bench scripts: sets JAVA_HOME to a JDK 25+ or fails with a clear message.
# Order: $JAVA_HOME if it is 25 or newer, then JDKs installed under /usr/lib/jvm (newest first).
# The major version of the JDK in $1: from its release file (instant), else by asking its java
# (a JVM start, which every ./ember command would pay).
ember_java_major() {
  local v
  v=$(sed -n 's/^JAVA_VERSION="\([0-9][0-9.]*\).*/\1/p' "$1/release" 2>/dev/null | head -1)
  if [ -n "$v" ]; then
    case "$v" in
      1.*) v=${v#1.} ;; # 1.8.0_x is 8
    esac
    echo "${v%%.*}"
    return 0
  fi
  "$1/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}'
}

# Maven's bundled Guava calls sun.misc.Unsafe, which JDK 24+ warns about on every build.
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"

ember_find_jdk() {
  local candidate major
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    major=$(ember_java_major "$JAVA_HOME")
    if [ -n "$major" ] && [ "$major" -ge 25 ] 2>/dev/null; then
      export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
      return 0
    fi
  fi
  for candidate in $(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do
    candidate=${candidate%/}
    [ -x "$candidate/bin/javac" ] || continue
    major=$(ember_java_major "$candidate")
    if [ -n "$major" ] && [ "$major" -ge 25 ] 2>/dev/null; then
      export JAVA_HOME="$candidate" PATH="$candidate/bin:$PATH"
      return 0
    fi
  done
  echo "ember: no JDK 25 or newer found (JAVA_HOME=${JAVA_HOME:-unset}; looked in /usr/lib/jvm)." >&2
  echo "ember: install one (e.g. Temurin 25) and set JAVA_HOME to it." >&2
  return 1
}
