#!/usr/bin/env bash
# Ember's benchmark suite: runs categories (each through bench/compare.sh, Ember alone or side by side
# with PyTorch), collects one JSON line per workload x case x thread count, renders Markdown and
# optionally checks the run against a saved baseline. The logic that is not plumbing (reading the
# lines, the Markdown, the regression check) is dev.ember.bench.Report.
set -euo pipefail

ALL_CATEGORIES=(training ops losses metrics schedulers callbacks memory gemm nn optim precision compression compile distributed)

usage() {
  cat <<'EOF'
usage: bench/run_benchmarks.sh [options]

  -c, --category C[,C...]  categories to run (repeatable; default: all that bench/compare.py knows):
                           training ops losses metrics schedulers callbacks memory gemm nn optim precision
                           compression compile distributed
  -b, --baseline FILE      compare with a saved results file (a results.jsonl, or bench/baseline/CATEGORY.jsonl):
                           every case more than 10% worse (throughput lower, latency or memory
                           higher) is listed as a regression and the exit status is 1
      --threshold PCT      regression threshold in percent (default 10)
  -s, --summary            also write summary.md (run details, ratio per category, regressions, table)
  -o, --out DIR            results directory (default bench/results/<UTC timestamp>); must not hold a
                           results.jsonl already
      --threads N[,N...]   thread counts, each a separate run of every category (default 2)
      --peer               also run PyTorch, interleaved in the same run, and report ratios
      --peers P[,P...]     --peer with these PyTorch peers (bench/compare.sh --peer): torch113 (the default) and/or
                           torch210 (libtorch 2.10 from the JVM; gemm, training and nn only); with two, each row's
                           ratio is against the faster and the table has a column per peer
      --lean-jvm           training: Ember in the memory category's lean JVM (serial collector, 64 MB
                           young generation, no pre-touched heap) instead of ParallelGC with 1 GB pre-touched
                           (needs /usr/bin/python3 with torch and the shared peer scripts)
      --only P[,P...]      only workloads or "workload/case" names starting with one of these
                           (categories where nothing matches are skipped)
      --repeats N          timed repeats per case and pass (memory: fresh processes per side)
      --passes N           alternating Ember/PyTorch passes (default 2)
      --max-wait S         seconds each case may wait for a quiet machine (default 10)
  -h, --help               this text

Writes DIR/results.jsonl (bench/compare.py's records, with "threads"), DIR/results.md (Markdown
table: category, workload, case, threads, unit, ember median [min-max], pytorch median [min-max],
ratio, mfu), DIR/log.txt (the runners' progress) and, with -s, DIR/summary.md; with -b,
DIR/regressions.txt. Until the run completes, results are in DIR/results.jsonl.part.
Exit status: 0 done; 1 regressions against the baseline; 2 bad arguments or a malformed baseline;
3 no case of the run is in the baseline; anything else: a benchmark or the build failed.
Examples:
  bench/run_benchmarks.sh -c training --only mlp_mnist --peer --repeats 2
  bench/run_benchmarks.sh -c memory --only mlp_mnist,lenet --peer
  bench/run_benchmarks.sh -c training --peers torch113,torch210 --passes 1 --repeats 3
  bench/run_benchmarks.sh -c gemm,optim --threads 1,2 -s -b bench/results/2026-11-23/results.jsonl
EOF
}

die() {
  echo "run_benchmarks.sh: $1" >&2
  exit "${2:-2}"
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
categories=()
baseline=""
threshold=""
summary=0
outdir=""
threads="2"
peer=0
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    -s|--summary) summary=1; shift ;;
    --peer) peer=1; shift ;;
    --peers)
      [ $# -ge 2 ] || die "$1 needs a value"
      [[ "$2" =~ ^(torch113|torch210)(,(torch113|torch210))*$ ]] || die "--peers expects torch113 and/or torch210 separated by commas, got '$2'"
      peer=1; pass+=(--peer "$2"); shift 2 ;;
    --lean-jvm) pass+=("$1"); shift ;;
    -c|--category|-b|--baseline|-o|--out|--threads|--threshold|--only|--repeats|--passes|--max-wait)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        -c|--category)
          IFS=',' read -r -a cs <<<"$2"
          for c in "${cs[@]}"; do
            [ -n "$c" ] || continue
            ok=0
            for k in "${ALL_CATEGORIES[@]}"; do [ "$c" = "$k" ] && ok=1; done
            [ "$ok" = 1 ] || die "unknown category '$c' (expected one of: ${ALL_CATEGORIES[*]})"
            categories+=("$c")
          done ;;
        -b|--baseline) baseline=$2 ;;
        -o|--out) outdir=$2 ;;
        --threshold) threshold=$2 ;;
        --threads)
          [[ "$2" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--threads expects positive integers separated by commas, got '$2'"
          threads=$2 ;;
        --repeats|--passes)
          [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 expects a positive integer, got '$2'"
          pass+=("$1" "$2") ;;
        *) pass+=("$1" "$2") ;;
      esac
      shift 2 ;;
    *) echo "run_benchmarks.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if [ -n "$baseline" ] && [ ! -f "$baseline" ]; then die "baseline file not found: $baseline"; fi

# shellcheck source=scripts/find-jdk.sh
. "$root/scripts/find-jdk.sh"
ember_find_jdk || exit 1
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
classpath=$(ember_bench_build "$root") || exit 1
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector -cp "$classpath")
report() { "$JAVA_HOME/bin/java" -cp "$classpath" dev.ember.bench.Report "$@"; }

# a malformed baseline fails now, not after an hour of benchmarks
if [ -n "$baseline" ]; then report check "$baseline" >/dev/null || exit 2; fi

# the categories this checkout's compare.py accepts (its argparse choices)
known=$(/usr/bin/python3 "$root/bench/compare.py" -h | grep -o '{[a-z,]*}' | head -1 | tr -d '{}' | tr ',' ' ')
[ -n "$known" ] || die "could not read the categories of $root/bench/compare.py" 1
explicit=1
if [ ${#categories[@]} -eq 0 ]; then explicit=0; categories=("${ALL_CATEGORIES[@]}"); fi
run_cats=()
only=""
for ((i = 0; i < ${#pass[@]}; i += 2)); do [ "${pass[i]}" = --only ] && only=${pass[i+1]}; done
for c in "${categories[@]}"; do
  case " $known " in
    *" $c "*) ;;
    *)
      [ "$explicit" = 0 ] || die "category '$c' is not supported by this checkout's bench/compare.py (it knows: $known)"
      echo "run_benchmarks.sh: skipping '$c' (not in this checkout's bench/compare.py)" >&2
      continue ;;
  esac
  if [ -n "$only" ] && [ "$c" != distributed ]; then  # distributed's cases are not Compare's: compare.py filters them
    # memory measures the training workloads (its case names differ): ask the training list by workload
    listed=$c; sel=$only
    if [ "$c" = memory ]; then listed=training; sel=$(sed 's#/[^,]*##g' <<<"$only"); fi
    if ! "${java[@]}" dev.ember.bench.Compare "$listed" --list --only "$sel" >/dev/null 2>&1; then
      echo "run_benchmarks.sh: skipping '$c' (no case matches --only $only)" >&2
      continue
    fi
  fi
  # run each category once even if named twice
  case " ${run_cats[*]:-} " in *" $c "*) ;; *) run_cats+=("$c") ;; esac
done
[ ${#run_cats[@]} -gt 0 ] || die "nothing to run (categories: ${categories[*]}; --only ${only:-none})"

if [ -z "$outdir" ]; then outdir="$root/bench/results/$(date -u +%Y-%m-%dT%H%M%SZ)"; fi
mkdir -p "$outdir"
outdir="$(cd "$outdir" && pwd)"
[ ! -e "$outdir/results.jsonl" ] || die "$outdir already holds a results.jsonl; choose another -o DIR"
part="$outdir/results.jsonl.part"
log="$outdir/log.txt"
: >"$part"
: >"$log"

peer_flag=()
[ "$peer" = 1 ] || peer_flag=(--no-peer)
IFS=',' read -r -a thread_list <<<"$threads"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "run_benchmarks.sh: categories ${run_cats[*]}; threads $threads; $([ "$peer" = 1 ] && echo "with PyTorch" || echo "Ember only"); results in $outdir" >&2
for t in "${thread_list[@]}"; do
  for c in "${run_cats[@]}"; do
    echo "# ---- $c, threads=$t" | tee -a "$log" >&2
    status=0
    bash "$root/bench/compare.sh" "$c" --threads "$t" "${pass[@]}" "${peer_flag[@]}" >>"$part" 2> >(tee -a "$log" >&2) || status=$?
    if [ "$status" -ne 0 ]; then
      echo "run_benchmarks.sh: $c (threads=$t) failed with exit status $status; partial results in $part, log in $log" >&2
      exit "$status"
    fi
  done
done
mv "$part" "$outdir/results.jsonl"
report table "$outdir/results.jsonl" -o "$outdir/results.md"

status=0
if [ -n "$baseline" ]; then
  report compare "$baseline" "$outdir/results.jsonl" ${threshold:+--threshold "$threshold"} >"$outdir/regressions.txt" || status=$?
  cat "$outdir/regressions.txt"
  [ "$status" -le 3 ] || exit "$status"
fi
if [ "$summary" = 1 ]; then
  commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  [ -z "$(git -C "$root" status --porcelain -uno 2>/dev/null)" ] || commit="$commit (with uncommitted changes)"
  cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
  meta=(--meta "started=$started" --meta "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)" --meta "commit=$commit"
        --meta "machine=${cpu:-unknown CPU}, $(nproc) CPUs, $(hostname)"
        --meta "java=$("$JAVA_HOME/bin/java" -version 2>&1 | head -1)"
        --meta "categories=${run_cats[*]}" --meta "threads=$threads"
        --meta "pytorch=$([ "$peer" = 1 ] && echo "interleaved in the same run" || echo "not run (Ember only)")")
  [ ${#pass[@]} -eq 0 ] || meta+=(--meta "options=${pass[*]}")
  [ -z "$baseline" ] || meta+=(--baseline "$baseline" ${threshold:+--threshold "$threshold"})
  report summary "$outdir/results.jsonl" -o "$outdir/summary.md" "${meta[@]}"
fi
echo "run_benchmarks.sh: $(wc -l <"$outdir/results.jsonl") records in $outdir/results.jsonl; table in $outdir/results.md$([ "$summary" = 1 ] && echo "; summary in $outdir/summary.md")" >&2
exit "$status"
