#!/usr/bin/python3
"""Where epoch 1's extra time goes: the JIT's work during one `./ember train` run, from a JFR recording.

    bench/jit-breakdown.sh [--model mlp|lenet] [--epochs N] [--threads N] [--top N] [--ember-opts OPTS] [--keep FILE.jfr]

Runs the launcher's own java command (EMBER_DRY_RUN=1 gives it; the launcher's ahead-of-time cache is used
as a user's run uses it) with a flight recording of every compilation (jdk.Compilation, threshold 0),
deoptimization and a 10 ms execution sample, then prints markdown tables on stdout:

  - per tier (1-3 C1, 4 C2): compilations and compile time, those that ended before the end of epoch 1, and
    the on-stack-replacement (OSR) compiles among them (a loop's method compiled while it runs);
  - the top methods by C2 compile time (ms, bytes of code, uptime at which the C2 code was installed);
  - the CPU kernels (dev.ember.backend.cpu.vector) that the samples show hot: when their C2 code arrived;
  - epoch 1's execution samples by the top frame's kind (interpreted, JIT compiled, inlined, native);
  - deoptimizations (count, top methods and reasons).

The recording itself costs the run some start time (JFR starts in ~0.5-1.5 s): a diagnostic, not a timing.
Epoch boundaries are JVM uptimes: the first optimizer step's end from profile.json, then each epoch's
epoch_time_s from metrics.csv added (validation between epochs is ignored: a small error at epoch 1's end).
"""
import argparse
import collections
import csv
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = "dev.ember.backend.cpu.vector."


def parse_time(s):
    """JFR's ISO instant (nanoseconds, Z) to POSIX seconds."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z$", s)
    if not m:
        raise ValueError("not a JFR instant: %r" % s)
    base = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    frac = float("0." + m.group(2)) if m.group(2) else 0.0
    return base.timestamp() + frac


def parse_duration(v):
    """JFR's duration (ISO-8601 'PT0.0123S', 'PT1M2.5S', or a number of seconds) to seconds."""
    if isinstance(v, (int, float)):
        return float(v)
    m = re.match(r"^PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$", v)
    if not m:
        raise ValueError("not a JFR duration: %r" % v)
    h, mi, s = m.groups()
    return int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)


def method_name(m):
    """'pkg.Class.method' from a JFR method value."""
    if not m:
        return "?"
    t = m.get("type") or {}
    cls = t.get("name", "?") if isinstance(t, dict) else str(t)
    return "%s.%s" % (cls.replace("/", "."), m.get("name", "?"))


def analyze(events, epoch_ends, top=12):
    """Tables (lists of markdown lines) from JFR events (dicts of 'type' and 'values') and epoch-end uptimes."""
    start = None
    for e in events:
        if e["type"] == "jdk.JVMInformation":
            start = parse_time(e["values"]["jvmStartTime"])
    if start is None:
        raise ValueError("the recording has no jdk.JVMInformation event")
    e1 = epoch_ends[0] if epoch_ends else float("inf")
    comps = []
    for e in events:
        if e["type"] != "jdk.Compilation":
            continue
        v = e["values"]
        t0 = parse_time(v["startTime"]) - start
        d = parse_duration(v["duration"])
        comps.append({"method": method_name(v.get("method")), "level": int(v.get("compileLevel", 0)),
                      "start": t0, "end": t0 + d, "ms": d * 1e3, "size": int(v.get("codeSize") or 0),
                      "osr": bool(v.get("isOsr")), "ok": bool(v.get("succeded", v.get("succeeded", True)))})
    out = ["| tier | compilations | compile ms | of them before epoch 1 ended | compile ms before epoch 1 ended "
           "| OSR compilations | OSR ms |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for lvl in sorted({c["level"] for c in comps}):
        cs = [c for c in comps if c["level"] == lvl]
        early = [c for c in cs if c["end"] <= e1]
        osr = [c for c in cs if c["osr"]]
        out.append("| %d (%s) | %d | %.0f | %d | %.0f | %d | %.0f |" % (
            lvl, "C2" if lvl == 4 else "C1", len(cs), sum(c["ms"] for c in cs), len(early),
            sum(c["ms"] for c in early), len(osr), sum(c["ms"] for c in osr)))
    out.append("")
    out.append("| top C2 compiles by time | ms | code bytes | installed at uptime s | OSR |")
    out.append("|---|---:|---:|---:|---|")
    for c in sorted([c for c in comps if c["level"] == 4], key=lambda c: -c["ms"])[:top]:
        out.append("| `%s` | %.0f | %d | %.2f | %s |" % (c["method"], c["ms"], c["size"], c["end"],
                                                         "yes" if c["osr"] else ""))

    # samples: the top frame's method and kind, per epoch-1 window
    kinds = collections.Counter()
    hot = collections.Counter()
    n_e1 = 0
    for e in events:
        if e["type"] != "jdk.ExecutionSample":
            continue
        v = e["values"]
        t = parse_time(v["startTime"]) - start
        frames = ((v.get("stackTrace") or {}).get("frames")) or []
        if not frames:
            continue
        top_frame = frames[0]
        if t <= e1:
            n_e1 += 1
            kinds[top_frame.get("type", "?")] += 1
        # the hot kernel: the innermost frame in the kernel package
        for f in frames:
            name = method_name(f.get("method"))
            if name.startswith(KERNELS):
                if t <= e1:
                    hot[name] += 1
                break
    out.append("")
    out.append("| epoch 1's samples by top frame | samples | share |")
    out.append("|---|---:|---:|")
    for k, n in kinds.most_common():
        out.append("| %s | %d | %.0f%% |" % (k, n, 100.0 * n / max(n_e1, 1)))
    out.append("")
    out.append("| hot kernel in epoch 1 (samples inside it) | samples | first C1 code at s | C2 code at s | C2 ms |")
    out.append("|---|---:|---:|---:|---:|")
    for name, n in hot.most_common(top):
        c1 = [c["end"] for c in comps if c["method"] == name and c["level"] in (1, 2, 3)]
        c2 = [c for c in comps if c["method"] == name and c["level"] == 4 and not c["osr"]]
        c2 = c2 or [c for c in comps if c["method"] == name and c["level"] == 4]
        out.append("| `%s` | %d | %s | %s | %s |" % (name, n, "%.2f" % min(c1) if c1 else "-",
                                                      "%.2f" % min(c["end"] for c in c2) if c2 else "-",
                                                      "%.0f" % sum(c["ms"] for c in c2) if c2 else "-"))
    deopts = [e["values"] for e in events if e["type"] == "jdk.Deoptimization"]
    out.append("")
    out.append("deoptimizations: %d (%d before epoch 1 ended)" % (
        len(deopts), sum(1 for d in deopts if parse_time(d["startTime"]) - start <= e1)))
    by = collections.Counter((method_name(d.get("method")), d.get("reason", "?")) for d in deopts)
    for (m, r), n in by.most_common(min(top, 8)):
        out.append("- %d x `%s` (%s)" % (n, m, r))
    return out, comps


def epoch_end_uptimes(run_dir):
    with open(os.path.join(run_dir, "profile.json")) as f:
        first = json.load(f)["first_step"]["jvm_uptime_s"]
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        times = [float(r["epoch_time_s"]) for r in csv.DictReader(f)]
    ends, t = [], first
    for x in times:
        t += x
        ends.append(t)
    return ends, first, times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="mlp")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--ember-opts", default=None)
    p.add_argument("--keep", help="keep the recording in this file")
    a = p.parse_args(argv)
    env = dict(os.environ)
    if a.ember_opts is not None:
        env["EMBER_JAVA_OPTS"] = a.ember_opts
    tmp = tempfile.mkdtemp(prefix="jit-breakdown-")
    jfr = a.keep or os.path.join(tmp, "run.jfr")
    out_dir = os.path.join(tmp, "run")
    args = ["train", "--model", a.model, "--epochs", str(a.epochs), "--threads", str(a.threads), "--quiet",
            "--out", out_dir]
    cmd = launcher_command(args, env)
    if any(o.startswith("-XX:AOTMode=record") for o in cmd):
        # the cache is missing or stale (new jars, other options): a recording run disables JFR and its
        # configuration file would be left behind, so let the launcher write the cache with a short real run
        subprocess.run([os.path.join(ROOT, "ember"), "train", "--model", a.model, "--epochs", "1", "--threads",
                        str(a.threads), "--quiet", "--out", os.path.join(tmp, "cache-run")], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        cmd = launcher_command(args, env)
        if any(o.startswith("-XX:AOTMode=record") for o in cmd):
            sys.exit("jit-breakdown: the launcher still records an ahead-of-time cache after a run; see "
                     "ember-cli/target/aot/create.log, or set EMBER_AOT=0 to measure without the cache")
    java = cmd[0]
    rec = ("-XX:StartFlightRecording:filename=%s,settings=none,+jdk.Compilation#enabled=true,"
           "+jdk.Compilation#threshold=0ms,+jdk.JVMInformation#enabled=true,+jdk.Deoptimization#enabled=true,"
           "+jdk.ExecutionSample#enabled=true,+jdk.ExecutionSample#period=10ms" % jfr)
    subprocess.run([java, rec, "-Xlog:jfr+startup=warning"] + cmd[1:], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    ends, first, times = epoch_end_uptimes(out_dir)
    jfr_tool = os.path.join(os.path.dirname(java), "jfr")
    js = subprocess.run([jfr_tool, "print", "--json", "--stack-depth", "64", "--events",
                         "jdk.Compilation,jdk.Deoptimization,jdk.ExecutionSample,jdk.JVMInformation", jfr],
                        stdout=subprocess.PIPE, text=True, check=True).stdout
    events = json.loads(js)["recording"]["events"]
    lines, _ = analyze(events, ends, a.top)
    print("`./ember train --model %s --epochs %d --threads %d`, load %.1f: first optimizer step at uptime %.2f s, "
          "epochs %s s (epoch 1 ends at ~%.2f s)\n" % (a.model, a.epochs, a.threads, os.getloadavg()[0], first,
                                                      ", ".join("%.2f" % t for t in times), ends[0]))
    print("\n".join(lines))


def launcher_command(args, env):
    """The java command line `./ember` would run for args (EMBER_DRY_RUN=1), one word per line."""
    return subprocess.run([os.path.join(ROOT, "ember")] + args, env=dict(env, EMBER_DRY_RUN="1"),
                          stdout=subprocess.PIPE, text=True, check=True).stdout.splitlines()


if __name__ == "__main__":
    main()
