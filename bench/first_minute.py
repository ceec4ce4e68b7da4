#!/usr/bin/python3
"""The first minute of a run, as a user waits for it: whole processes, launch to exit.

    bench/first-minute.sh [--runs N] [--threads N] [--only mlp,lenet] [--record FILE] [--sides ember,pytorch]
                          [--variant LABEL=JVM_OPTIONS ...] [--train-args LABEL=TRAIN_ARGS ...] [--epochs N]

Per run and model, both sides run one after the other, the order alternating from run to run
(ember first in odd runs): `./ember train --model M --threads T --quiet` (MLP 10 epochs, LeNet-5 5,
the launcher's defaults, its ahead-of-time cache included) and `shared/peers/fashion.py --only M
--threads T --max-wait 0 --retries 0` (the same experiment in PyTorch 1.13, without its wait for a
quiet machine or its re-runs). Each side is timed from the fork to the exit (wall, and user+sys CPU
of the process tree) and gives:

  epoch_s          each epoch's training time (validation excluded), from the side's own log;
  epoch1_s, steady_s (median of epochs 2..n) and epoch1_over_steady;
  first_step_s     launch to the end of the first optimizer step: Ember's profile.json
                   (`first_step.unix_time_s`), PyTorch's through bench/peers/first_step/sitecustomize.py;
  whole_s, cpu_s, load1 (1-minute load average at the start), test_accuracy;
  Ember only, from the JVM's threads (/proc/PID/task/*/stat, utime+stime, sampled every 0.2 s until exit):
  cpu_split        CPU seconds per kind of thread: c2 and c1 (the JIT's compiler threads), gc, workers
                   (Ember's pool, ember-worker-N), main (the threads named java: the one that runs main()), other; the JIT's share is what the compile-policy
                   levers change, and it is less sensitive to the host's load than wall times;
  cpu_epoch1       the same split when epoch 1's row appeared in metrics.csv (start-up and epoch 1),
                   and epoch1_cpu_s, its total.

One JSON object per process on stdout (and appended to --record), a table of medians on stderr with
whole-run ratios (PyTorch whole / Ember whole: > 1 means Ember's run is shorter). Before the first
run the launcher is asked (EMBER_DRY_RUN=1) whether its cache is ready; if a run would record one, an
untimed `--epochs 1` run writes it first, so every timed run maps the same cache.

Levers are measured as variants of Ember's side, run in turn with the others (the order rotates from
run to run): `--variant flags=-XX:CompileThresholdScaling=0.5` runs Ember with those EMBER_JAVA_OPTS,
each variant with an ahead-of-time cache of its own (EMBER_AOT_DIR=ember-cli/target/aot-variants/LABEL;
the launcher's cache is made for one set of options). Without --variant, Ember runs as a user's
`./ember train` does (label "default", the launcher's own cache). A variant's cache is written by an untimed
`./ember train --model mlp --epochs 1` unless `--aot-train LABEL=TRAIN_ARGS` names that run's arguments (e.g.
`--aot-train lenet3="--model lenet --epochs 3"`: a cache whose JEP 515 profiles come from a longer LeNet-5 run);
`--train-args LABEL=TRAIN_ARGS` adds `./ember train` arguments to that variant's timed runs (e.g. `--train-args
loader=--workers 1`: a lever that is an option of the command rather than of the JVM);
a variant folder's existing cache is reused (delete ember-cli/target/aot-variants/LABEL to write it anew).
"""
import argparse
import csv
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOOK = os.path.join(ROOT, "bench", "peers", "first_step")
EPOCHS = {"mlp": 10, "lenet": 5}


# Kinds of JVM threads by the name the kernel keeps (comm: the first 15 bytes of the Java thread's name; the
# launcher's main thread, which the JVM attaches rather than starts, keeps the process's name, java).
THREAD_KINDS = (("c2", ("C2 CompilerThre",)), ("c1", ("C1 CompilerThre",)),
                ("gc", ("GC Thread", "G1 ", "GC ")), ("workers", ("ember-worker",)), ("main", ("java", "main")))
SPLIT_KINDS = ("c2", "c1", "gc", "workers", "main", "other")


def thread_kind(comm):
    """c2, c1, gc, workers, main or other, from a thread's comm."""
    for kind, prefixes in THREAD_KINDS:
        if any(comm == p or comm.startswith(p) for p in prefixes):
            return kind
    return "other"


def parse_task_stat(text):
    """(comm, utime+stime clock ticks) from one /proc/PID/task/TID/stat line (comm may hold spaces and ')')."""
    lp, rp = text.index("("), text.rindex(")")
    fields = text[rp + 2:].split()
    # after the comm: state(0) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(11) stime(12)
    return text[lp + 1:rp], int(fields[11]) + int(fields[12])


def split_cpu(ticks_by_tid, hz):
    """{kind: CPU seconds} from {tid: (comm, ticks)}; every kind present, 0.0 if none."""
    out = {k: 0.0 for k in SPLIT_KINDS}
    for comm, ticks in ticks_by_tid.values():
        out[thread_kind(comm)] += ticks / hz
    return {k: round(v, 2) for k, v in out.items()}


def children_of(pid):
    """Direct child pids (the kernel's children list, else a scan of /proc)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        pass
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    t = f.read()
                if int(t[t.rindex(")") + 2:].split()[1]) == pid:
                    out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def java_child(pid, comm="java"):
    """The pid of the java process the launcher started (a child named java), or None."""
    for c in children_of(pid):
        try:
            with open("/proc/%d/comm" % c) as f:
                if f.read().strip() == comm:
                    return c
        except OSError:
            pass
    return None


class ThreadCpuSampler:
    """Samples the per-thread CPU of the launcher's java child every `period` s until the launcher exits.
    A thread's figure is the largest it showed (compiler threads may end before the JVM does); `epoch1` is
    the split at the first sample that found a data row in the run's metrics.csv."""

    def __init__(self, launcher_pid, metrics_csv, period=0.2, child_comm="java"):
        self.launcher_pid, self.metrics_csv, self.period = launcher_pid, metrics_csv, period
        self.child_comm = child_comm
        self.hz = os.sysconf("SC_CLK_TCK")
        self.ticks = {}
        self.epoch1 = None
        self.java = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def sample(self):
        if self.java is None:
            self.java = java_child(self.launcher_pid, self.child_comm)
            if self.java is None:
                return
        base = "/proc/%d/task" % self.java
        try:
            tids = os.listdir(base)
        except OSError:
            return
        for tid in tids:
            try:
                with open("%s/%s/stat" % (base, tid)) as f:
                    comm, t = parse_task_stat(f.read())
            except (OSError, ValueError, IndexError):
                continue
            old = self.ticks.get(tid)
            if old is None or t > old[1]:
                self.ticks[tid] = (comm, t)
        if self.epoch1 is None and self.metrics_rows() >= 1:
            self.epoch1 = split_cpu(self.ticks, self.hz)

    def metrics_rows(self):
        try:
            with open(self.metrics_csv) as f:
                return max(0, sum(1 for line in f if line.strip()) - 1)
        except OSError:
            return 0

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.period)

    def result(self):
        """{'cpu_split': {...}, 'cpu_epoch1': {...} or None, 'epoch1_cpu_s': total or None}."""
        split = split_cpu(self.ticks, self.hz)
        return {"cpu_split": split, "cpu_epoch1": self.epoch1,
                "epoch1_cpu_s": round(sum(self.epoch1.values()), 2) if self.epoch1 else None}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3, help="runs per model and side (default 3)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", default="mlp,lenet", help="comma list: mlp,lenet")
    p.add_argument("--record", help="also append the JSON lines to this file")
    p.add_argument("--variant", action="append", default=[],
                   help="LABEL=JVM_OPTIONS: an Ember variant (EMBER_JAVA_OPTS); repeat for several")
    p.add_argument("--aot-train", action="append", default=[],
                   help="LABEL=TRAIN_ARGS: the untimed run that writes that variant's ahead-of-time cache")
    p.add_argument("--train-args", action="append", default=[],
                   help="LABEL=TRAIN_ARGS: more `./ember train` arguments for that variant's timed runs")
    p.add_argument("--epochs", type=int, default=0, help="override the epochs on both sides (default: 10 MLP, 5 LeNet)")
    p.add_argument("--sides", default="ember,pytorch", help="comma list: ember,pytorch")
    p.add_argument("--peers", default=os.environ.get("EMBER_PEERS", os.path.join(ROOT, "..", "shared", "peers")))
    p.add_argument("--python", default="/usr/bin/python3")
    return p.parse_args(argv)


def variants(specs):
    """[(label, options or None)] from LABEL=OPTIONS strings; no specs: the user's default run."""
    if not specs:
        return [("default", None)]
    out = []
    for spec in specs:
        label, sep, opts = spec.partition("=")
        if not sep or not label or not all(c.isalnum() or c in "-_." for c in label):
            raise SystemExit("--variant %r: expected LABEL=JVM_OPTIONS with a label of letters, digits, - _ ." % spec)
        if label in [l for l, _ in out]:
            raise SystemExit("--variant %r: label %s given twice" % (spec, label))
        out.append((label, opts))
    return out


def aot_train_args(specs, labels, option="--aot-train"):
    """{label: [train arguments]} from LABEL=ARGS strings; the labels must be variants'."""
    out = {}
    for spec in specs:
        label, sep, args = spec.partition("=")
        if not sep or label not in labels or not args.split():
            raise SystemExit("%s %r: expected LABEL=TRAIN_ARGS for one of the variants %s" % (option, spec, labels))
        out[label] = args.split()
    return out


def schedule(entries, run):
    """The order of (side, label) entries in run `run` (1-based): rotated by one each run."""
    k = (run - 1) % len(entries)
    return entries[k:] + entries[:k]


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def epoch_summary(epoch_s):
    """epoch1_s, steady_s (median of the later epochs) and their ratio."""
    if not epoch_s:
        return {"epoch1_s": None, "steady_s": None, "epoch1_over_steady": None}
    steady = median(epoch_s[1:]) if len(epoch_s) > 1 else None
    return {"epoch1_s": epoch_s[0], "steady_s": steady,
            "epoch1_over_steady": (epoch_s[0] / steady) if steady else None}


def parse_ember(run_dir, stdout_text):
    """Epoch times (metrics.csv), first step (profile.json) and test accuracy (the last stdout line)."""
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        epoch_s = [float(r["epoch_time_s"]) for r in csv.DictReader(f)]
    first_unix = None
    prof = os.path.join(run_dir, "profile.json")
    if os.path.exists(prof):
        with open(prof) as f:
            fs = json.load(f).get("first_step")
        if fs:
            first_unix = float(fs["unix_time_s"])
    acc = None
    for line in reversed(stdout_text.splitlines()):
        if line.startswith("test_accuracy="):
            acc = float(line.split("=", 1)[1])
            break
    return {"epoch_s": epoch_s, "first_step_unix": first_unix, "test_accuracy": acc}


def parse_pytorch(stdout_text, first_step_text):
    """fashion.py's JSON line (the last one) and the hook's time of the first step."""
    rec = None
    for line in stdout_text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
    if rec is None:
        raise ValueError("fashion.py printed no JSON record")
    first_unix = float(first_step_text.strip()) if first_step_text and first_step_text.strip() else None
    return {"epoch_s": [float(e["train_s"]) for e in rec["per_epoch"]], "first_step_unix": first_unix,
            "test_accuracy": float(rec["final_test_acc"])}


def timed(cmd, env, cwd=None, sampler=None):
    """Runs cmd; returns (wall s, start unix time, stdout, stderr, exit status). sampler(pid), if given,
    makes a ThreadCpuSampler for the process, which runs while it does."""
    t_unix = time.time()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    s = sampler(p.pid) if sampler else None
    if s:
        s.thread.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if s:
        s.stop.set()
        s.thread.join()
    return wall, t_unix, out, err, p.returncode, s


def cpu_of(before, after):
    """User+sys CPU seconds of the children reaped between two getrusage(RUSAGE_CHILDREN) calls: a child's
    figure includes its own reaped descendants (the JVM under the launcher, fashion.py's relaunched child)."""
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def row(side, model, threads, run, order, wall, cpu, t_unix, parsed, load1, label, extra=None):
    r = {"side": side, "model": model, "threads": threads, "run": run, "order": order, "label": label,
         "time": datetime.datetime.fromtimestamp(t_unix, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
         "load1": round(load1, 2), "whole_s": round(wall, 3), "cpu_s": round(cpu, 3),
         "epochs": len(parsed["epoch_s"]), "epoch_s": [round(e, 4) for e in parsed["epoch_s"]],
         "first_step_s": (round(parsed["first_step_unix"] - t_unix, 3) if parsed["first_step_unix"] else None),
         "test_accuracy": parsed["test_accuracy"]}
    r.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in epoch_summary(parsed["epoch_s"]).items()})
    if extra:
        r.update(extra)
    return r


def summarize(rows):
    """Medians per (model, side) and the whole-run ratio PyTorch/Ember per model, as table lines."""
    keys = []
    for r in rows:
        k = (r["model"], r["side"], r.get("label", ""))
        if k not in keys:
            keys.append(k)
    lines = ["| model | side | label | runs | whole s | CPU s | first step s | epoch 1 s | steady epoch s | "
             "epoch 1 / steady | test acc | load |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    med = {}
    for k in keys:
        rs = [r for r in rows if (r["model"], r["side"], r.get("label", "")) == k]

        def m(field):
            return median([r[field] for r in rs if r.get(field) is not None])
        med[k] = m("whole_s")
        loads = [r["load1"] for r in rs]
        lines.append("| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.4f | %.1f-%.1f |" % (
            k[0], k[1], k[2] or "-", len(rs), m("whole_s"), m("cpu_s"), m("first_step_s"), m("epoch1_s"),
            m("steady_s"), m("epoch1_over_steady"), m("test_accuracy"), min(loads), max(loads)))
    split_rows = [k for k in keys if any(r.get("cpu_split") for r in rows
                                         if (r["model"], r["side"], r.get("label", "")) == k)]
    if split_rows:
        lines += ["", "| model | side | label | CPU s | C2 s | C1 s | GC s | workers s | main s | other s | "
                  "CPU to epoch 1's end s | C2+C1 s in it |", "|---|---|---|" + "---:|" * 9]
        for k in split_rows:
            rs = [r for r in rows if (r["model"], r["side"], r.get("label", "")) == k and r.get("cpu_split")]

            def ms(kind, field="cpu_split"):
                return median([r[field][kind] for r in rs if r.get(field)])
            lines.append("| %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                k[0], k[1], k[2] or "-", median([r["cpu_s"] for r in rs]), ms("c2"), ms("c1"), ms("gc"),
                ms("workers"), ms("main"), ms("other"),
                median([r["epoch1_cpu_s"] for r in rs if r.get("epoch1_cpu_s") is not None]),
                median([r["cpu_epoch1"]["c2"] + r["cpu_epoch1"]["c1"] for r in rs if r.get("cpu_epoch1")])))
    for (model, side, label), whole in med.items():
        peer = [w for (m2, s2, _), w in med.items() if m2 == model and s2 == "pytorch"]
        if side == "ember" and peer:
            lines.append("%s%s: whole run PyTorch/Ember %.2fx (> 1: Ember shorter)" % (
                model, " [" + label + "]" if label else "", peer[0] / whole))
    return lines


def aot_state(env):
    """What the launcher would do with its cache: use, record or off (EMBER_DRY_RUN prints its java command)."""
    out = subprocess.run([os.path.join(ROOT, "ember"), "train", "--model", "mlp"], env=dict(env, EMBER_DRY_RUN="1"),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    if "-XX:AOTMode=record" in out:
        return "record"
    return "use" if "-XX:AOTCache=" in out else "off"


def ember_env(env, label, opts):
    """The environment of one Ember variant: its EMBER_JAVA_OPTS and, for a named variant, its own cache folder."""
    e = dict(env)
    if opts is not None:
        e["EMBER_JAVA_OPTS"] = opts
        e["EMBER_AOT_DIR"] = os.path.join(ROOT, "ember-cli", "target", "aot-variants", label)
    return e


def main(argv=None):
    a = parse_args(argv)
    models = [m for m in a.only.split(",") if m]
    sides = [s for s in a.sides.split(",") if s]
    env = dict(os.environ)
    entries = []
    for side in sides:
        if side == "ember":
            entries += [("ember", label, opts) for label, opts in variants(a.variant)]
        elif side == "pytorch":
            entries.append(("pytorch", "", None))
        else:
            raise SystemExit("--sides: unknown side %r" % side)
    tmp = tempfile.mkdtemp(prefix="first-minute-")
    rows = []
    rec = open(a.record, "a") if a.record else None
    epochs_args = ["--epochs", str(a.epochs)] if a.epochs else []
    aot_args = aot_train_args(a.aot_train, [label for side, label, _ in entries if side == "ember"])
    more_args = aot_train_args(a.train_args, [label for side, label, _ in entries if side == "ember"], "--train-args")
    try:
        aot = {}
        for side, label, opts in entries:
            if side != "ember":
                continue
            venv = ember_env(env, label, opts)
            if aot_state(venv) == "record":
                targs = aot_args.get(label, ["--model", "mlp", "--epochs", "1"])
                sys.stderr.write("# %s: writing the launcher's ahead-of-time cache first (an untimed run: %s)\n"
                                 % (label, " ".join(targs)))
                subprocess.run([os.path.join(ROOT, "ember"), "train"] + targs + [
                                "--quiet", "--out", os.path.join(tmp, "aot-run-" + label)], env=venv,
                               stdout=subprocess.DEVNULL, check=True)
            aot[label] = aot_state(venv)
        for run in range(1, a.runs + 1):
            for model in models:
                for pos, (side, label, opts) in enumerate(schedule(entries, run)):
                    load1 = os.getloadavg()[0]
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if side == "ember":
                        venv = ember_env(env, label, opts)
                        out_dir = os.path.join(tmp, "ember-%s-%s-%d" % (label, model, run))
                        cmd = [os.path.join(ROOT, "ember"), "train", "--model", model, "--threads", str(a.threads),
                               "--out", out_dir, "--quiet"] + epochs_args + more_args.get(label, [])
                        wall, t_unix, out, err, rc, smp = timed(
                            cmd, venv, sampler=lambda pid: ThreadCpuSampler(pid, os.path.join(out_dir, "metrics.csv")))
                        cpu = cpu_of(before, resource.getrusage(resource.RUSAGE_CHILDREN))
                        if rc != 0:
                            raise SystemExit("ember run failed (%d): %s" % (rc, err[-2000:]))
                        parsed = parse_ember(out_dir, out)
                        shutil.rmtree(out_dir, ignore_errors=True)
                        extra = {"aot": aot[label], "ember_java_opts": venv.get("EMBER_JAVA_OPTS", "")}
                        if label in more_args:
                            extra["train_args"] = " ".join(more_args[label])
                        extra.update(smp.result())
                    else:
                        fs_file = os.path.join(tmp, "first-step-%s-%d" % (model, run))
                        penv = dict(env, EMBER_FIRST_STEP_FILE=fs_file,
                                    PYTHONPATH=HOOK + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""))
                        cmd = [a.python, os.path.join(a.peers, "fashion.py"), "--only", model, "--threads",
                               str(a.threads), "--max-wait", "0", "--retries", "0"] + epochs_args
                        wall, t_unix, out, err, rc, _ = timed(cmd, penv)
                        cpu = cpu_of(before, resource.getrusage(resource.RUSAGE_CHILDREN))
                        if rc != 0:
                            raise SystemExit("fashion.py failed (%d): %s" % (rc, err[-2000:]))
                        fs_text = open(fs_file).read() if os.path.exists(fs_file) else ""
                        parsed = parse_pytorch(out, fs_text)
                        extra = None
                    r = row(side, model, a.threads, run, pos + 1, wall, cpu, t_unix, parsed, load1, label, extra)
                    rows.append(r)
                    line = json.dumps(r)
                    print(line, flush=True)
                    if rec:
                        rec.write(line + "\n")
                        rec.flush()
                    sys.stderr.write("# %s %s %s run %d: whole %.2f s, epoch 1 %.2f s, steady %.2f s, first step %s s,"
                                     " load %.1f\n" % (side, label, model, run, r["whole_s"], r["epoch1_s"] or 0,
                                                       r["steady_s"] or 0, r["first_step_s"], load1))
    finally:
        if rec:
            rec.close()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stderr.write("\n".join(summarize(rows)) + "\n")
    return rows


if __name__ == "__main__":
    main()
