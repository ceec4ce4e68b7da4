#!/usr/bin/python3
"""Driver behind bench/compare.sh (run that instead): runs Ember's and PyTorch's side of one
category alternately and joins them on (workload, case).

Interleaving: whole-category passes alternate, ember, torch, ember, torch... (--passes), and each
side's repeats are pooled over its passes before the median is taken. Per-case alternation
would need both sides to stay warm between cases, which the shared one-shot peer script cannot;
alternating passes still spreads a shared machine's slow phases over both sides, and every pass
pays its own JIT / library warm-up, so no side profits from having run first.

training: Ember's `Compare training` and the shared peer's pytorch_bench.py on the same workloads
(mlp_mnist, seed_small/medium/large, lenet, convnet, transformer), plus sgemm N=1024 on both sides
when an MLP workload runs: each MLP training record then carries the model-FLOPs utilisation of
each side, mfu = 6 x params x samples/s / (that side's best sgemm GFLOP/s at N=1024 in this run x 1e9).

memory: every training workload in a fresh process per side and repeat (ember, pytorch, ember, ...):
dev.ember.bench.MemoryProbe in a JVM with the Ember pass's flags minus -Xms/AlwaysPreTouch (which
would touch the whole initial heap up front and inflate RSS) and with --xmx as the heap cap, and
bench/peers/pytorch_memory.py through the shared launcher. Peak RSS (VmHWM) and RSS at start on both
sides, peak and live Java heap for Ember; --repeats is the number of fresh processes per side.

distributed: allreduce bus bandwidth over loopback (float32, DIST_SIZES, 2 and 4 processes: Ember's
dev.ember.distributed.AllReduceBench against torch.distributed gloo, ember-distributed/bench/allreduce_gloo.py), and
DDP's cost: the seed_medium MLP at global batch 128 in N processes x 1 thread under DistributedDataParallel against 1
process x N threads (N = --threads), both sides (dev.ember.distributed.DdpBench; torch DDP with gloo,
ember-distributed/bench/ddp_gloo.py), plus Ember's allreduce time per step, the time the end of backward waited for it,
and the fraction of it hidden under backward. Each run is its own set of processes; none waits for a quiet machine
(--max-wait does not apply): read the load with the figures.

--no-peer: Ember only (records with "pytorch": null, "ratio": null).

--peer torch113,torch210: PyTorch peers, each pass running them after Ember in alternating order (torch113 is
the shared peer's pytorch_bench.py / bench/peers/*.py on Debian's torch 1.13; torch210 is libtorch 2.10 from the
JVM, ../shared/peers/torch210, in its one-OpenMP-pool configuration: --torch210-dir names its build, made by
bench/compare.sh). torch210 implements sgemm and the training workloads, and bench/peers/Torch210Nn.java the nn
rows that are one functional call (not LSTM, GRU or attention memory), so it runs in the gemm, training and nn
categories; every other category, and the rows it lacks, compare against torch113 alone. With more than one
peer, "pytorch", "pytorch_min/max" and "ratio" are those of the FASTER peer for that row, "pytorch_peer" names it
and "peers" holds each peer's {"median", "min", "max", "ratio", "repeats"} (and "mfu" on MLP training rows).

stdout: {"category","workload","case","unit","ember","pytorch","ratio",...} per case, where ratio
> 1 means Ember is better (throughput: ember/pytorch; latency and memory: pytorch/ember). A case
PyTorch has no equivalent for (e.g. optim/lion) gets "pytorch": null and "ratio": null.
stderr: the sides' progress, then a table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GEMM_SQUARE = "128,256,512,1024,2048"
# the training category's workloads, as pytorch_bench.py and dev.ember.bench.TrainingCases name them
TRAINING = ["mlp_mnist", "seed_small", "seed_medium", "seed_large", "lenet", "convnet", "transformer"]
MLP = ("mlp_mnist", "seed_small", "seed_medium", "seed_large")
MFU_GEMM = ("sgemm", "N=1024")
# Ember's warm-up per training case. The first case in a fresh JVM needs the whole nn/autograd/optim
# path compiled by C2; on the shared 2-core machine under load, mlp_mnist b=32 measured ~550 samples/s
# after Compare's default 2 s and ~45k after 10 s (1 thread, same load, 2026-11-23).
TRAINING_WARMUP_S = 10.0
# the peers --peer may name, and the categories whose workloads each implements (None: all)
PEERS = ("torch113", "torch210")
PEER_CATEGORIES = {"torch113": None, "torch210": ("gemm", "training", "nn")}
TORCH210_JAR = os.path.join("target", "torch210-bench-1.0.jar")
# the nn category's torch210 side: bench/peers/Torch210Nn.java, compiled by bench/build.sh into the peer's build
TORCH210_NN_CLASSES = "nn-classes"
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
# distributed: allreduce sizes (1 KiB .. 256 MiB, x16) and process counts; the DDP runs' warm-up and timed steps
DIST_SIZES = "1024,16384,262144,4194304,67108864,268435456"
DIST_PROCS = (2, 4)
DIST_DDP = ["--warmup-steps", "20", "--steps", "10"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("category", choices=["gemm", "ops", "nn", "optim", "training", "memory", "losses", "schedulers",
                                        "metrics", "callbacks", "precision", "compression", "compile",
                                        "distributed"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3, help="timed repeats per case per pass")
    p.add_argument("--passes", type=int, default=2, help="alternating ember/torch passes")
    p.add_argument("--max-wait", type=float, default=10.0,
                   help="per case and side, seconds one may wait for a quiet machine")
    p.add_argument("--foreign-max", type=float, default=0.1)
    p.add_argument("--only", default="", help="comma list of workloads or 'workload/case' prefixes")
    p.add_argument("--java", required=True, help="java executable (JDK 25+)")
    p.add_argument("--classpath", required=True)
    p.add_argument("--peers", help="directory of the shared PyTorch peer scripts (not needed with --no-peer)")
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch")
    p.add_argument("--no-peer", action="store_true", help="run Ember only (no PyTorch passes)")
    p.add_argument("--peer", default="torch113",
                   help="comma list of PyTorch peers: torch113 (default), torch210 (gemm, training and nn only)")
    p.add_argument("--torch210-dir", help="the torch210 peer's build (%s, native-openmp/) as bench/compare.sh "
                                          "makes it; needed when --peer names torch210" % TORCH210_JAR)
    p.add_argument("--warmup-steps", type=int, default=5, help="memory: untimed steps before the measured ones")
    p.add_argument("--steps", type=int, default=20, help="memory: measured training steps")
    p.add_argument("--xmx", default="4g", help="memory: the JVM's -Xmx (enough for seed_large with Adam)")
    p.add_argument("--xmn", default="64m", help="memory: the JVM's young generation (-Xmn), serial collector")
    p.add_argument("--lean-jvm", action="store_true",
                   help="training: run Ember in the memory pass's JVM (serial collector, --xmx, --xmn, no pre-touch) "
                        "instead of ParallelGC with a pre-touched 1 GB heap")
    p.add_argument("--training-warmup", type=float, default=TRAINING_WARMUP_S,
                   help="training, compression and compile: Ember's warm-up seconds per case (default %(default)s, see "
                        "TRAINING_WARMUP_S); the seed MLP cases spend them on a throwaway model, then time a fresh "
                        "one on the peers' schedule")
    a = p.parse_args()
    a.peer_list = parse_peer_list(p, a.peer)
    if not a.no_peer and "torch113" in a.peer_list and not a.peers:
        p.error("--peers is required unless --no-peer")
    if not a.no_peer and "torch210" in a.peer_list and a.category in PEER_CATEGORIES["torch210"] and not a.torch210_dir:
        p.error("--torch210-dir is required when --peer names torch210")
    if a.warmup_steps < 0 or a.steps < 1:
        p.error("--warmup-steps must be >= 0 and --steps >= 1")
    return a


def parse_peer_list(parser, text):
    """The names of --peer, checked: known, not repeated, at least one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        parser.error("--peer needs at least one of %s" % ",".join(PEERS))
    for n in names:
        if n not in PEERS:
            parser.error("--peer: unknown peer '%s' (expected %s)" % (n, " or ".join(PEERS)))
    if len(set(names)) != len(names):
        parser.error("--peer names a peer twice: %s" % text)
    return names


def active_peers(a):
    """The peers that run in this category (none with --no-peer); the others are named on stderr. Exits when
    --peer names only peers that have no workload in it."""
    if a.no_peer:
        return []
    run = [n for n in a.peer_list if PEER_CATEGORIES[n] is None or a.category in PEER_CATEGORIES[n]]
    for n in a.peer_list:
        if n not in run:
            sys.stderr.write("# peer %s implements no %s workload (only %s): this category compares with %s alone\n"
                             % (n, a.category, ", ".join(PEER_CATEGORIES[n]), ", ".join(run) or "no peer"))
    if not run:
        sys.exit("compare: --peer %s has no workload in category %s (torch210 runs gemm, training and nn; add torch113)"
                 % (",".join(a.peer_list), a.category))
    return run


def run_lines(cmd, env=None, attempts=1):
    """Runs cmd with stderr passed through; returns the JSON objects it printed on stdout. A failed run is
    retried up to attempts - 1 times (its output dropped)."""
    for attempt in range(1, attempts + 1):
        sys.stderr.write("$ %s\n" % " ".join(cmd))
        sys.stderr.flush()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
        if res.returncode == 0:
            break
        if attempt == attempts:
            sys.exit("compare: command failed with exit status %d: %s" % (res.returncode, " ".join(cmd)))
        sys.stderr.write("# exit status %d, trying again (%d/%d)\n" % (res.returncode, attempt + 1, attempts))
    out = []
    for line in res.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def ember_pass(a):
    cmd = [a.java, "--add-modules", "jdk.incubator.vector", "-Xms1g", "-XX:+AlwaysPreTouch", "-Dember.threads=%d" % a.threads,
           "-XX:+UseParallelGC", "-cp", a.classpath, "dev.ember.bench.Compare", a.category,
           "--threads", str(a.threads), "--repeats", str(a.repeats), "--max-wait", str(a.max_wait),
           "--foreign-max", str(a.foreign_max)]
    if a.category in ("compression", "compile"):
        # as training's: short inference calls on a loaded host reach C2 code only after several seconds (MLP b=128
        # F32 measured 25 ms per call after the default 2 s of warm-up, 5 ms after 10 s, 2026-11-28, load ~14)
        cmd += ["--warmup", str(a.training_warmup)]
    if a.only:
        cmd += ["--only", a.only]
    return run_lines(cmd)


def torch_pass(a):
    if a.category == "callbacks":
        return []  # Ember only: PyTorch has no trainer whose callbacks could be compared
    common = ["--threads", str(a.threads), "--repeats", str(a.repeats), "--max-wait", str(a.max_wait),
              "--foreign-max", str(a.foreign_max)]
    env = dict(os.environ, EMBER_PEERS=a.peers)
    if a.category in ("precision", "compression", "compile"):
        cmd = [a.python, os.path.join(HERE, "peers", "pytorch_%s.py" % a.category)] + common
        return run_lines(cmd + (["--only", a.only] if a.only else []), env)
    ops = [a.python, os.path.join(HERE, "peers", "pytorch_ops.py"), "--suite", a.category] + common
    if a.only:
        ops += ["--only", a.only]
    if a.category in ("ops", "nn", "optim", "losses", "schedulers", "metrics"):
        return run_lines(ops, env)
    rows = run_lines([a.python, os.path.join(a.peers, "pytorch_bench.py"), "--only", "sgemm",
                      "--sgemm-sizes", GEMM_SQUARE] + common, env)
    return rows + run_lines(ops, env)


def pool(rows, into):
    for r in rows:
        if r.get("workload", "_").startswith("_"):
            continue
        e = into.setdefault((r["workload"], r["case"]), {"values": [], "unit": r["unit"],
                                                         "lower": r.get("lower_is_better", False),
                                                         "contaminated": False, "discarded": 0})
        e["values"] += r["values"]
        e["contaminated"] |= bool(r.get("contaminated"))
        e["discarded"] += r.get("discarded_repeats", 0)
        if "params" in r:
            e["params"] = r["params"]


def selected(key, only):
    prefixes = [p for p in only.split(",") if p]
    return not prefixes or any(key[0].startswith(p) or ("%s/%s" % key).startswith(p) for p in prefixes)


def workload_selected(workload, only):
    """Whether a workload has a case --only may select (prefix of the workload, or of 'workload/...')."""
    prefixes = [p for p in only.split(",") if p]
    return not prefixes or any(workload.startswith(p.split("/")[0]) for p in prefixes)


def training_workloads(a):
    ws = [w for w in TRAINING if workload_selected(w, a.only)]
    if not ws:
        sys.exit("compare: no training workload matches --only %s (workloads: %s)" % (a.only, ",".join(TRAINING)))
    return ws


def ember_java(a, heap, gc="-XX:+UseParallelGC"):
    """The JVM command line of an Ember pass: heap flags, then the common ones."""
    return [a.java, "--add-modules", "jdk.incubator.vector"] + heap + [
        "-Dember.threads=%d" % a.threads, gc, "-cp", a.classpath]


def training_ember_pass(a):
    """Compare training, plus sgemm N=1024 (the MFU reference) when an MLP workload is selected."""
    common = ["--threads", str(a.threads), "--repeats", str(a.repeats), "--max-wait", str(a.max_wait),
              "--foreign-max", str(a.foreign_max)]
    java = lean_java(a) if a.lean_jvm else ember_java(a, ["-Xms1g", "-XX:+AlwaysPreTouch"])
    rows = []
    if any(w in MLP for w in training_workloads(a)):
        rows += run_lines(java + ["dev.ember.bench.Compare", "gemm", "--sizes", "1024", "--only", "/".join(MFU_GEMM)] + common)
    cmd = java + ["dev.ember.bench.Compare", "training", "--warmup", str(a.training_warmup)] + common
    if a.only:
        cmd += ["--only", a.only]
    return rows + run_lines(cmd)


def training_torch_pass(a):
    """pytorch_bench.py on the selected training workloads (and its sgemm at N=1024 for MFU)."""
    ws = training_workloads(a)
    if any(w in MLP for w in ws):
        ws = ["sgemm"] + ws
    cmd = [a.python, os.path.join(a.peers, "pytorch_bench.py"), "--only", ",".join(ws), "--sgemm-sizes", "1024",
           "--threads", str(a.threads), "--repeats", str(a.repeats), "--max-wait", str(a.max_wait),
           "--foreign-max", str(a.foreign_max)]
    return training_peer_rows(run_lines(cmd, dict(os.environ, EMBER_PEERS=a.peers)))


def training_peer_rows(rows):
    """A training peer's rows less its extra "train b=N steps" rows (samples/s restated as steps/s) and the sgemm
    shapes other than the MFU reference."""
    return [r for r in rows if not r.get("case", "").endswith(" steps")
            and (r.get("workload") != "sgemm" or r.get("case") == MFU_GEMM[1])]


def torch210_jvm(a):
    """The torch210 peer's JVM and its one-OpenMP-pool flags (see torch210_java)."""
    d = os.path.abspath(a.torch210_dir)
    return [a.java, "--enable-native-access=ALL-UNNAMED", "-XX:ErrorFile=" + os.path.join(d, "hs_err_pid%p.log"),
            "-Dorg.bytedeco.javacpp.pathsFirst=true",
            "-Djava.library.path=" + os.path.join(d, "native-openmp"),
            "-Dorg.bytedeco.javacpp.cachedir=" + os.path.join(d, "javacpp-cache-openmp")]


def torch210_nn_env(a):
    """The environment Torch210Bench's launcher gives its child, for Torch210Nn (which has no launcher): the thread
    count of every pool before libtorch loads, and jemalloc with the Python peer's MALLOC_CONF."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(a.threads)
    if os.path.exists(JEMALLOC):
        env["LD_PRELOAD"] = JEMALLOC + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        env["MALLOC_CONF"] = "dirty_decay_ms:-1,muzzy_decay_ms:-1"
    return env


def torch210_java(a):
    """The torch210 peer's command up to its options, in its fast configuration: one OpenMP pool (Debian's OpenMP
    OpenBLAS and the system libgomp found first through native-openmp/, not the preset's pthreads OpenBLAS and
    bundled libgomp: two busy-waiting pools on the same cores are 5-100x slower) and its own JavaCPP cache (a run
    with these library paths rewrites the cache's symlinks; ../shared/peers/torch210/README.md)."""
    return torch210_jvm(a) + ["-jar", os.path.join(os.path.abspath(a.torch210_dir), TORCH210_JAR)]


def torch210_pass(a):
    """Torch210Bench on this category's workloads: sgemm (gemm) or the training workloads (and sgemm N=1024 for
    MFU); nn: Torch210Nn. Tried twice: its JVM can crash while JavaCPP loads libtorch (the README's first-run
    SIGSEGV)."""
    common = ["--threads", str(a.threads), "--repeats", str(a.repeats), "--max-wait", str(a.max_wait),
              "--foreign-max", str(a.foreign_max)]
    if a.category == "nn":
        d = os.path.abspath(a.torch210_dir)
        cp = os.path.join(d, TORCH210_NN_CLASSES) + os.pathsep + os.path.join(d, "target", "lib", "*")
        cmd = torch210_jvm(a) + ["-cp", cp, "Torch210Nn"] + common + (["--only", a.only] if a.only else [])
        return run_lines(cmd, torch210_nn_env(a), attempts=2)
    if a.category == "gemm":
        if not workload_selected("sgemm", a.only):
            return []
        return run_lines(torch210_java(a) + ["--only", "sgemm", "--sgemm-sizes", GEMM_SQUARE] + common, attempts=2)
    ws = training_workloads(a)
    if any(w in MLP for w in ws):
        ws = ["sgemm"] + ws
    cmd = torch210_java(a) + ["--only", ",".join(ws), "--sgemm-sizes", "1024"] + common
    return training_peer_rows(run_lines(cmd, attempts=2))


def lean_java(a):
    """The lean JVM: no -Xms / AlwaysPreTouch (pre-touching the initial heap would make all of it resident), the
    serial collector with a fixed young generation (--xmn): the steps' tensors come from MemoryScope's pool, so the
    young generation only sees small objects and need not grow."""
    return ember_java(a, ["-Xmx" + a.xmx, "-Xmn" + a.xmn], gc="-XX:+UseSerialGC")


def memory_ember(a, workload):
    return run_lines(lean_java(a) + [
        "dev.ember.bench.MemoryProbe", workload, "--threads", str(a.threads),
        "--warmup-steps", str(a.warmup_steps), "--steps", str(a.steps)])


def memory_torch(a, workload):
    return run_lines([a.python, os.path.join(HERE, "peers", "pytorch_memory.py"), workload, "--threads", str(a.threads),
                      "--warmup-steps", str(a.warmup_steps), "--steps", str(a.steps)],
                     dict(os.environ, EMBER_PEERS=a.peers))


def env_of(rows, env_info, peer=None):
    """Copies what a side's _env record says about its runtime into env_info: Ember's kernels and JVM; a peer's
    torch version ("torch" for torch113, as before there were two peers; "torch210" and "torch210_blas"), and the
    core type its OpenBLAS chose, with a warning when that is the generic fallback (an OpenBLAS too old for the
    CPU: its GEMMs then run several times slower than they could; OPENBLAS_CORETYPE overrides the choice)."""
    for r in rows:
        if r.get("workload") != "_env":
            continue
        if r.get("side") == "ember":
            env_info.update({"ember_" + k: v for k, v in r.items() if k in ("kernels", "java")})
            continue
        if "torch" not in r:
            continue
        if peer == "torch210":
            env_info["torch210"] = r["torch"]
            if r.get("blas"):
                env_info["torch210_blas"] = r["blas"]
            core = (r.get("openblas") or {}).get("corename")
        else:
            env_info["torch"] = r["torch"]
            core = next((d.get("architecture") for d in r.get("pools") or () if d.get("internal_api") == "openblas"),
                        None)
        if core:
            name = (peer or "torch113") + "_openblas_core"
            if env_info.get(name) != core and core.lower() in ("prescott", "generic"):
                sys.stderr.write("# WARNING: %s's OpenBLAS runs its generic %s kernels (it does not know this CPU): "
                                 "its GEMMs are far from peak; set OPENBLAS_CORETYPE (e.g. SkylakeX) to choose one\n"
                                 % (peer or "torch113", core))
            env_info[name] = core


PEER_PASSES = {
    "torch113": lambda a: (training_torch_pass(a) if a.category == "training" else distributed_torch_pass(a)
                           if a.category == "distributed" else torch_pass(a)),
    "torch210": lambda a: torch210_pass(a),
}


def distributed_ember_pass(a):
    """AllReduceBench at 2 and 4 processes (1 thread each), DdpBench in 1 process x N threads and N processes x 1."""
    def java(threads):
        return [a.java, "--add-modules", "jdk.incubator.vector", "-Xmx2g", "-Dember.threads=%d" % threads,
                "-XX:+UseParallelGC", "-cp", a.classpath]
    rows = []
    if workload_selected("allreduce", a.only):
        for n in DIST_PROCS:
            rows += run_lines(java(1) + ["dev.ember.distributed.AllReduceBench", "--json", "--repeats", str(a.repeats),
                                         "--sizes", DIST_SIZES, str(n)])
    if workload_selected("ddp_seed_medium", a.only):
        common = ["--repeats", str(a.repeats), "--json"] + DIST_DDP
        rows += run_lines(java(a.threads) + ["dev.ember.distributed.DdpBench", "single"] + common)
        rows += run_lines(java(1) + ["dev.ember.distributed.DdpBench", "ddp", "--procs", str(a.threads)] + common)
    return rows


def distributed_torch_pass(a):
    """The same with torch.distributed (gloo) and torch DDP: ember-distributed/bench's peer scripts."""
    peers = os.path.join(ROOT, "ember-distributed", "bench")
    rows = []
    if workload_selected("allreduce", a.only):
        for n in DIST_PROCS:
            rows += run_lines([a.python, os.path.join(peers, "allreduce_gloo.py"), "--json", "--repeats", str(a.repeats),
                               "--sizes", DIST_SIZES, str(n)])
    if workload_selected("ddp_seed_medium", a.only):
        common = ["--repeats", str(a.repeats)] + DIST_DDP
        ddp = os.path.join(peers, "ddp_gloo.py")
        rows += run_lines([a.python, ddp, "single", "--threads", str(a.threads)] + common)
        rows += run_lines([a.python, ddp, "ddp", "--procs", str(a.threads)] + common)
    return rows


def collect_passes(a):
    """The timed categories: alternating whole-category passes (ember, then each peer: ember, torch113, torch210,
    ember, torch210, torch113, ...: the peers' order alternates too). Returns Ember's pooled rows, each active
    peer's pooled rows by peer name, and the runtimes' descriptions."""
    peers = active_peers(a)
    ember, by_peer, env_info = {}, {n: {} for n in peers}, {}
    for p in range(a.passes):
        sys.stderr.write("# pass %d/%d: ember\n" % (p + 1, a.passes))
        rows = (training_ember_pass(a) if a.category == "training" else distributed_ember_pass(a)
                if a.category == "distributed" else ember_pass(a))
        env_of(rows, env_info)
        pool(rows, ember)
        for name in peers if p % 2 == 0 else peers[::-1]:
            sys.stderr.write("# pass %d/%d: %s\n" % (p + 1, a.passes, name))
            rows = PEER_PASSES[name](a)
            env_of(rows, env_info, name)
            pool(rows, by_peer[name])
    return ember, by_peer, env_info


def collect_memory(a):
    """memory: each workload in a fresh process per side and repeat, the sides alternating (torch113 only)."""
    peers = active_peers(a)
    ember, torch_, env_info = {}, {}, {}
    ws = training_workloads(a)
    for rep in range(a.repeats):
        for w in ws:
            sys.stderr.write("# memory %d/%d %s: ember\n" % (rep + 1, a.repeats, w))
            rows = memory_ember(a, w)
            env_of(rows, env_info)
            pool(rows, ember)
            if not peers:
                continue
            sys.stderr.write("# memory %d/%d %s: pytorch\n" % (rep + 1, a.repeats, w))
            rows = memory_torch(a, w)
            env_of(rows, env_info, "torch113")
            pool(rows, torch_)
    env_info.update({"xmx": a.xmx, "xmn": a.xmn, "gc": "serial", "warmup_steps": a.warmup_steps, "steps": a.steps})
    return ember, ({"torch113": torch_} if peers else {}), env_info


def mfu_of(d, key, median):
    """(params, best sgemm GFLOP/s, MFU) of an MLP training case in one side's pooled rows, or None where the side
    has no sgemm N=1024 or no parameter count.

    The reference is the best sgemm repeat of the run (the closest to the peak a side's GEMM reaches):
    on a shared machine a median taken in a busy phase would put MFU above 100%.
    """
    g = d.get(MFU_GEMM)
    e = d.get(key)
    if g is None or e is None or median is None or "params" not in e:
        return None
    gflops = max(g["values"])
    return e["params"], gflops, 6.0 * e["params"] * median / (gflops * 1e9)


def add_mfu(rec, key, ember, torch_):
    """Model-FLOPs utilisation of an MLP training case on each side, against that side's sgemm N=1024 (torch_: the
    pooled rows of the peer whose median is rec["pytorch"])."""
    if key[0] not in MLP or rec["unit"] != "samples/s":
        return
    for side, d, median in (("ember", ember, rec["ember"]), ("pytorch", torch_, rec["pytorch"])):
        m = mfu_of(d, key, median)
        if m is None:
            continue
        rec[side + "_params"], rec[side + "_sgemm_gflops"], rec[side + "_mfu"] = m
    if rec.get("ember_params") and rec.get("pytorch_params") and rec["ember_params"] != rec["pytorch_params"]:
        sys.stderr.write("# WARNING: %s has %d parameters in Ember but %d in PyTorch\n" % (
            key[0], rec["ember_params"], rec["pytorch_params"]))


def faster_peer(lower, medians):
    """The name of the best of {peer: median}: the lowest for a latency or memory (lower), else the highest; the
    first named wins a tie. None when empty."""
    best = None
    for name, m in medians.items():
        if best is None or (m < medians[best] if lower else m > medians[best]):
            best = name
    return best


def record(a, key, ember, by_peer, env_info):
    """One output line: Ember's row of key (ember: its pooled rows) against the peers' rows of the same case
    (by_peer: {peer: pooled rows}).
    "pytorch"/"ratio" are the faster peer's, "pytorch_peer" names it and "peers" holds each peer's figures."""
    e = ember[key]
    em = statistics.median(e["values"])
    found = {n: d[key] for n, d in by_peer.items() if key in d}
    medians = {n: statistics.median(t["values"]) for n, t in found.items()}
    best = faster_peer(e["lower"], medians)
    t = found.get(best)
    tm = medians.get(best)

    def ratio(pm):
        return (pm / em) if e["lower"] else (em / pm)

    rec = {"category": a.category, "workload": key[0], "case": key[1], "unit": e["unit"],
           "ember": em, "pytorch": tm, "ratio": None if t is None else ratio(tm), "threads": a.threads,
           "lower_is_better": e["lower"], "ember_min": min(e["values"]), "ember_max": max(e["values"]),
           "pytorch_min": min(t["values"]) if t else None, "pytorch_max": max(t["values"]) if t else None,
           "repeats": [len(e["values"]), len(t["values"]) if t else 0]}
    if by_peer:
        rec["pytorch_peer"] = best
        rec["peers"] = {n: {"median": medians[n], "min": min(p["values"]), "max": max(p["values"]),
                            "ratio": ratio(medians[n]), "repeats": len(p["values"])} for n, p in found.items()}
    if a.category == "training":
        add_mfu(rec, key, ember, by_peer.get(best, {}))
        for n in found:
            m = mfu_of(by_peer[n], key, medians[n]) if key[0] in MLP and e["unit"] == "samples/s" else None
            if m is not None:
                rec["peers"][n]["mfu"] = m[2]
    rec.update(env_info)
    if e["contaminated"] or any(p["contaminated"] for p in found.values()):
        rec["contaminated"] = True
    return rec


def main():
    a = parse_args()
    ember, by_peer, env_info = collect_memory(a) if a.category == "memory" else collect_passes(a)
    table = []
    for key in ember:
        if not (selected(key, a.only) or (a.category == "training" and key == MFU_GEMM)):
            continue
        rec = record(a, key, ember, by_peer, env_info)
        print(json.dumps(rec), flush=True)
        table.append(rec)
    for name, d in by_peer.items():
        missing = [k for k in ember if k not in d and selected(k, a.only)]
        if missing:
            sys.stderr.write("# no %s result for: %s\n" % (name, ", ".join("%s/%s" % k for k in missing)))
    names = list(by_peer)
    mfu = a.category == "training"
    multi = len(names) > 1
    sys.stderr.write("\n%-11s %-36s %-9s %12s %s%8s%s\n" % (
        "workload", "case", "unit", "ember", "".join("%12s " % n for n in names) if multi else "%12s " % "pytorch",
        "ratio", ("  %-8s" % "faster" if multi else "") + ("  mfu ember/pytorch" if mfu else "")))
    for r in table:
        if multi:
            cells = "".join("%12s " % ("%.3f" % r["peers"][n]["median"] if n in r["peers"] else "-") for n in names)
        else:
            cells = "%12s " % ("-" if r["pytorch"] is None else "%.3f" % r["pytorch"])
        sys.stderr.write("%-11s %-36s %-9s %12.3f %s%8s%s%s%s\n" % (
            r["workload"], r["case"], r["unit"], r["ember"], cells,
            "-" if r["ratio"] is None else "%.2fx" % r["ratio"],
            "  %-8s" % (r.get("pytorch_peer") or "-") if multi else "",
            "  %5s / %5s" % tuple("-" if r.get(s) is None else "%.1f%%" % (100 * r[s]) for s in ("ember_mfu", "pytorch_mfu"))
            if mfu and ("ember_mfu" in r or "pytorch_mfu" in r) else "",
            "  (busy machine)" if r.get("contaminated") else ""))
    sys.stderr.write("# threads=%d, %s; ratio > 1: Ember better%s\n" % (
        a.threads, ", ".join("%s=%s" % kv for kv in sorted(env_info.items())),
        " than the faster peer of each row" if multi else ""))


if __name__ == "__main__":
    main()
