#!/usr/bin/python3
"""Driver behind bench/compare.sh (run that instead): runs Ember's and PyTorch's side of one
category alternately and joins them on (workload, case).

Interleaving: whole-category passes alternate, ember, torch, ember, torch... (--passes), and each
side's repeats are pooled over its passes before the median is taken. Per-case alternation
would need both sides to stay warm between cases, which the shared one-shot peer script cannot;
alternating passes still spreads a shared machine's slow phases over both sides, and every pass
pays its own JIT / library warm-up, so no side profits from having run first.

stdout: {"category","workload","case","unit","ember","pytorch","ratio",...} per case, where ratio
> 1 means Ember is better (throughput: ember/pytorch; latency: pytorch/ember). A case PyTorch has
no equivalent for (e.g. optim/lion) gets "pytorch": null and "ratio": null.
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


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("category", choices=["gemm", "ops", "nn", "optim", "losses", "schedulers", "metrics", "callbacks"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3, help="timed repeats per case per pass")
    p.add_argument("--passes", type=int, default=2, help="alternating ember/torch passes")
    p.add_argument("--max-wait", type=float, default=10.0,
                   help="per case and side, seconds one may wait for a quiet machine")
    p.add_argument("--foreign-max", type=float, default=0.1)
    p.add_argument("--only", default="", help="comma list of workloads or 'workload/case' prefixes")
    p.add_argument("--java", required=True, help="java executable (JDK 25+)")
    p.add_argument("--classpath", required=True)
    p.add_argument("--peers", required=True, help="directory of the shared PyTorch peer scripts")
    p.add_argument("--python", default="/usr/bin/python3", help="Python with torch")
    return p.parse_args()


def run_lines(cmd, env=None):
    """Runs cmd with stderr passed through; returns the JSON objects it printed on stdout."""
    sys.stderr.write("$ %s\n" % " ".join(cmd))
    sys.stderr.flush()
    res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
    if res.returncode != 0:
        sys.exit("compare: command failed with exit status %d: %s" % (res.returncode, " ".join(cmd)))
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
    if a.only:
        cmd += ["--only", a.only]
    return run_lines(cmd)


def torch_pass(a):
    if a.category == "callbacks":
        return []  # Ember only: PyTorch has no trainer whose callbacks could be compared
    common = ["--threads", str(a.threads), "--repeats", str(a.repeats), "--max-wait", str(a.max_wait),
              "--foreign-max", str(a.foreign_max)]
    env = dict(os.environ, EMBER_PEERS=a.peers)
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


def selected(key, only):
    prefixes = [p for p in only.split(",") if p]
    return not prefixes or any(key[0].startswith(p) or ("%s/%s" % key).startswith(p) for p in prefixes)


def main():
    a = parse_args()
    ember, torch_ = {}, {}
    env_info = {}
    for p in range(a.passes):
        sys.stderr.write("# pass %d/%d: ember\n" % (p + 1, a.passes))
        rows = ember_pass(a)
        env_info.update({"ember_" + k: v for k, v in rows[0].items() if rows and k in ("kernels", "java")})
        pool(rows, ember)
        sys.stderr.write("# pass %d/%d: pytorch\n" % (p + 1, a.passes))
        rows = torch_pass(a)
        env_info.update({"torch": r["torch"] for r in rows if r.get("workload") == "_env" and "torch" in r})
        pool(rows, torch_)
    table = []
    for key, e in ember.items():
        t = torch_.get(key)
        if not selected(key, a.only):
            continue
        em = statistics.median(e["values"])
        tm = statistics.median(t["values"]) if t else None
        ratio = None if t is None else (tm / em) if e["lower"] else (em / tm)
        rec = {"category": a.category, "workload": key[0], "case": key[1], "unit": e["unit"],
               "ember": em, "pytorch": tm, "ratio": ratio, "threads": a.threads,
               "ember_min": min(e["values"]), "ember_max": max(e["values"]),
               "pytorch_min": min(t["values"]) if t else None, "pytorch_max": max(t["values"]) if t else None,
               "repeats": [len(e["values"]), len(t["values"]) if t else 0]}
        rec.update(env_info)
        if e["contaminated"] or (t and t["contaminated"]):
            rec["contaminated"] = True
        print(json.dumps(rec), flush=True)
        table.append(rec)
    missing = [k for k in ember if k not in torch_ and selected(k, a.only)]
    if missing:
        sys.stderr.write("# no PyTorch result for: %s\n" % ", ".join("%s/%s" % k for k in missing))
    sys.stderr.write("\n%-9s %-36s %-9s %12s %12s %8s\n" % ("workload", "case", "unit", "ember", "pytorch", "ratio"))
    for r in table:
        sys.stderr.write("%-9s %-36s %-9s %12.3f %12s %8s%s\n" % (
            r["workload"], r["case"], r["unit"], r["ember"],
            "-" if r["pytorch"] is None else "%.3f" % r["pytorch"],
            "-" if r["ratio"] is None else "%.2fx" % r["ratio"],
            "  (busy machine)" if r.get("contaminated") else ""))
    sys.stderr.write("# threads=%d, %s; ratio > 1: Ember better\n" % (
        a.threads, ", ".join("%s=%s" % kv for kv in sorted(env_info.items()))))


if __name__ == "__main__":
    main()
