#!/usr/bin/python3
"""Unit tests of bench/first_minute.py's parsing and summary (run: /usr/bin/python3 bench/test_first_minute.py),
and of the PyTorch first-step hook (bench/peers/first_step/sitecustomize.py) when torch is installed.

The processes are replaced by canned run folders and outputs; the hook test runs a few optimizer steps in a
child Python with the hook on PYTHONPATH.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import first_minute as fm  # noqa: E402

METRICS = """epoch,step,time_s,loss,lr,accuracy,epoch_time_s,val_loss,val_accuracy
1,469,4.030,0.56,0.001,0.80,3.5,0.45,0.83
2,938,5.102,0.39,0.001,0.86,1.0,0.41,0.85
3,1407,6.2,0.35,0.001,0.87,1.2,0.40,0.86
4,1876,7.3,0.33,0.001,0.88,0.9,0.39,0.87
"""


class ParseTest(unittest.TestCase):
    def test_ember_run_folder(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "metrics.csv"), "w") as f:
                f.write(METRICS)
            with open(os.path.join(d, "profile.json"), "w") as f:
                json.dump({"steps": 4, "first_step": {"jvm_uptime_s": 1.25, "unix_time_s": 1000.5}}, f)
            p = fm.parse_ember(d, "ember train: ...\nPeak live bytes ...\ntest_accuracy=0.8772\n")
        self.assertEqual([3.5, 1.0, 1.2, 0.9], p["epoch_s"])
        self.assertEqual(1000.5, p["first_step_unix"])
        self.assertEqual(0.8772, p["test_accuracy"])

    def test_ember_without_first_step(self):
        """profile.json of a build before the first step was recorded: no first step, the rest parses."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "metrics.csv"), "w") as f:
                f.write(METRICS)
            with open(os.path.join(d, "profile.json"), "w") as f:
                json.dump({"steps": 4}, f)
            p = fm.parse_ember(d, "test_accuracy=0.5")
        self.assertIsNone(p["first_step_unix"])
        self.assertEqual(0.5, p["test_accuracy"])

    def test_pytorch_record_and_hook_file(self):
        rec = {"final_test_acc": 0.8841, "per_epoch": [{"train_s": 0.72}, {"train_s": 0.68}, {"train_s": 0.65}]}
        p = fm.parse_pytorch("noise\n" + json.dumps(rec) + "\n", "1234.500000\n")
        self.assertEqual([0.72, 0.68, 0.65], p["epoch_s"])
        self.assertEqual(1234.5, p["first_step_unix"])
        self.assertEqual(0.8841, p["test_accuracy"])
        self.assertIsNone(fm.parse_pytorch(json.dumps(rec), "")["first_step_unix"])
        with self.assertRaises(ValueError):
            fm.parse_pytorch("no json here\n", "")

    def test_epoch_summary(self):
        s = fm.epoch_summary([4.0, 1.0, 3.0, 0.5])
        self.assertEqual(4.0, s["epoch1_s"])
        self.assertEqual(1.0, s["steady_s"])  # median of 1.0, 3.0, 0.5
        self.assertEqual(4.0, s["epoch1_over_steady"])
        self.assertIsNone(fm.epoch_summary([2.0])["steady_s"])
        self.assertIsNone(fm.epoch_summary([])["epoch1_s"])

    def test_row_times_first_step_from_launch(self):
        parsed = {"epoch_s": [4.0, 1.0, 1.0], "first_step_unix": 102.25, "test_accuracy": 0.9}
        r = fm.row("ember", "mlp", 2, 1, 1, 9.5, 10.25, 100.0, parsed, 1.5, "", {"aot": "use"})
        self.assertEqual(2.25, r["first_step_s"])
        self.assertEqual(4.0, r["epoch1_over_steady"])
        self.assertEqual("use", r["aot"])
        self.assertEqual("1970-01-01T00:01:40Z", r["time"])


class SummaryTest(unittest.TestCase):
    def rows(self):
        out = []
        for run, (ew, pw) in enumerate([(10.0, 12.0), (11.0, 13.0), (30.0, 11.0)], 1):
            for side, w in (("ember", ew), ("pytorch", pw)):
                out.append({"side": side, "model": "mlp", "label": "default" if side == "ember" else "", "whole_s": w, "cpu_s": w, "first_step_s": 1.0,
                            "epoch1_s": 2.0, "steady_s": 1.0, "epoch1_over_steady": 2.0, "test_accuracy": 0.88,
                            "load1": run * 1.0})
        return out

    def test_medians_and_ratio(self):
        lines = fm.summarize(self.rows())
        self.assertEqual(5, len(lines))
        self.assertIn("| mlp | ember | default | 3 | 11.00 |", lines[2])
        self.assertIn("| mlp | pytorch | - | 3 | 12.00 |", lines[3])
        self.assertTrue(lines[3].endswith("| 1.0-3.0 |"), lines[3])

    def test_ratio_line(self):
        lines = fm.summarize(self.rows())
        ratio = [l for l in lines if "PyTorch/Ember" in l]
        self.assertEqual(["mlp [default]: whole run PyTorch/Ember 1.09x (> 1: Ember shorter)"], ratio)

    def test_variants_kept_apart_against_the_one_peer(self):
        rs = self.rows()
        rs[0]["label"] = "flags"  # run 1's Ember row: 10 s
        lines = fm.summarize(rs)
        self.assertTrue(any(l.startswith("| mlp | ember | flags | 1 | 10.00 |") for l in lines), lines)
        self.assertTrue(any(l.startswith("| mlp | ember | default | 2 | 20.50 |") for l in lines), lines)
        ratio = [l for l in lines if "PyTorch/Ember" in l]
        self.assertEqual(["mlp [flags]: whole run PyTorch/Ember 1.20x (> 1: Ember shorter)",
                          "mlp [default]: whole run PyTorch/Ember 0.59x (> 1: Ember shorter)"], ratio)

    def test_variants_and_schedule(self):
        self.assertEqual([("default", None)], fm.variants([]))
        self.assertEqual([("a", "-Xint"), ("b", "")], fm.variants(["a=-Xint", "b="]))
        for bad in (["noequals"], ["=x"], ["a b=x"], ["a=1", "a=2"]):
            with self.assertRaises(SystemExit):
                fm.variants(bad)
        e = ["x", "y", "z"]
        self.assertEqual(["x", "y", "z"], fm.schedule(e, 1))
        self.assertEqual(["y", "z", "x"], fm.schedule(e, 2))
        self.assertEqual(["x", "y", "z"], fm.schedule(e, 4))
        env = fm.ember_env({"A": "1"}, "flags", "-Xint")
        self.assertEqual("-Xint", env["EMBER_JAVA_OPTS"])
        self.assertTrue(env["EMBER_AOT_DIR"].endswith("/ember-cli/target/aot-variants/flags"))
        self.assertNotIn("EMBER_AOT_DIR", fm.ember_env({"A": "1"}, "default", None))

    def test_aot_train_args(self):
        self.assertEqual({"l3": ["--model", "lenet", "--epochs", "3"]},
                         fm.aot_train_args(["l3=--model lenet --epochs 3"], ["base", "l3"]))
        self.assertEqual({}, fm.aot_train_args([], ["base"]))
        self.assertEqual({"w1": ["--workers", "1"]}, fm.aot_train_args(["w1=--workers 1"], ["kept", "w1"], "--train-args"))
        self.assertEqual(["loader=--workers 1"], fm.parse_args(["--train-args", "loader=--workers 1"]).train_args)
        for bad in (["l3"], ["other=--model lenet"], ["l3=  "]):
            with self.assertRaises(SystemExit):
                fm.aot_train_args(bad, ["base", "l3"])


class ThreadCpuTest(unittest.TestCase):
    def test_thread_kinds(self):
        for comm, kind in (("C2 CompilerThre", "c2"), ("C1 CompilerThre", "c1"), ("GC Thread#0", "gc"),
                           ("G1 Conc#0", "gc"), ("G1 Refine#0", "gc"), ("ember-worker-0", "workers"),
                           ("main", "main"), ("java", "main"), ("VM Thread", "other"), ("Common-Cleaner", "other")):
            self.assertEqual(kind, fm.thread_kind(comm), comm)

    def test_task_stat_with_spaces_and_parens_in_the_name(self):
        line = "4242 (C2 CompilerThre) S 1 2 3 0 -1 4194368 10 0 0 0 312 17 0 0 20 0 1 0 100 0 0\n"
        self.assertEqual(("C2 CompilerThre", 329), fm.parse_task_stat(line))
        odd = "7 (a) b (c) R 1 2 3 0 -1 0 0 0 0 0 5 6 0 0\n"
        self.assertEqual(("a) b (c", 11), fm.parse_task_stat(odd))

    def test_split_sums_by_kind(self):
        ticks = {"1": ("main", 150), "2": ("C2 CompilerThre", 400), "3": ("C1 CompilerThre", 50),
                 "4": ("ember-worker-0", 300), "5": ("ember-worker-1", 250), "6": ("VM Thread", 10)}
        s = fm.split_cpu(ticks, 100)
        self.assertEqual({"c2": 4.0, "c1": 0.5, "gc": 0.0, "workers": 5.5, "main": 1.5, "other": 0.1}, s)

    def test_sampler_on_a_live_process(self):
        """A parent (the launcher's place) whose python child names a busy thread like the C2 compiler and
        writes metrics.csv's first row midway (CPU time, not wall: the host may be loaded): the sampler finds the child, charges the thread to c2 and
        notes the split when the row appears."""
        with tempfile.TemporaryDirectory() as d:
            metrics = os.path.join(d, "metrics.csv")
            code = ("import threading, time\n"
                    "def busy():\n"
                    "    open('/proc/self/task/%%d/comm' %% threading.get_native_id(), 'w').write('C2 CompilerThread0')\n"
                    "    while time.thread_time() < 0.3: pass\n"
                    "    half.set()\n"
                    "    while time.thread_time() < 0.7: pass\n"
                    "    time.sleep(0.5)\n"
                    "half = threading.Event()\n"
                    "th = threading.Thread(target=busy); th.start(); half.wait()\n"
                    "open(%r, 'w').write('epoch,epoch_time_s\\n1,0.5\\n')\n"
                    "th.join()\n" % metrics)
            p = subprocess.Popen(["/bin/sh", "-c", '"$0" -c "$1"; true', sys.executable, code])
            s = fm.ThreadCpuSampler(p.pid, metrics, period=0.05, child_comm=os.path.basename(sys.executable)[:15])
            s.thread.start()
            p.wait()
            s.stop.set()
            s.thread.join()
            r = s.result()
        self.assertGreater(r["cpu_split"]["c2"], 0.4, r)
        self.assertLess(r["cpu_split"]["c1"], 0.05, r)
        self.assertIsNotNone(r["cpu_epoch1"], r)
        self.assertGreater(r["cpu_epoch1"]["c2"], 0.2, r)
        self.assertLessEqual(r["cpu_epoch1"]["c2"], r["cpu_split"]["c2"])
        self.assertAlmostEqual(sum(r["cpu_epoch1"].values()), r["epoch1_cpu_s"], places=2)

    def test_summary_adds_the_split_table(self):
        rows = []
        for run, c2 in enumerate((4.0, 5.0, 9.0), 1):
            split = {"c2": c2, "c1": 1.0, "gc": 0.5, "workers": 6.0, "main": 2.0, "other": 0.25}
            rows.append({"side": "ember", "model": "lenet", "label": "tiered", "whole_s": 10.0, "cpu_s": 14.0,
                         "first_step_s": 1.0, "epoch1_s": 2.0, "steady_s": 1.0, "epoch1_over_steady": 2.0,
                         "test_accuracy": 0.88, "load1": 1.0, "cpu_split": split,
                         "cpu_epoch1": dict(split, c2=c2 - 1), "epoch1_cpu_s": 10.0})
        lines = fm.summarize(rows)
        self.assertIn("| lenet | ember | tiered | 14.00 | 5.00 | 1.00 | 0.50 | 6.00 | 2.00 | 0.25 | 10.00 | 5.00 |",
                      lines)


def have_torch():
    return subprocess.run(["/usr/bin/python3", "-c", "import torch"], stderr=subprocess.DEVNULL).returncode == 0


@unittest.skipUnless(os.path.exists("/usr/bin/python3") and have_torch(), "PyTorch is not installed")
class HookTest(unittest.TestCase):
    def test_first_step_written_once_after_the_step(self):
        hook = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "first_step")
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "fs")
            code = ("import time, torch\n"
                    "m = torch.nn.Linear(3, 2); o = torch.optim.Adam(m.parameters())\n"
                    "m(torch.ones(1, 3)).sum().backward()\n"
                    "t0 = time.time(); o.step(); t1 = time.time(); o.step()\n"
                    "print(t0, t1)\n")
            env = dict(os.environ, EMBER_FIRST_STEP_FILE=f, PYTHONPATH=hook)
            out = subprocess.run(["/usr/bin/python3", "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                                 check=True).stdout.split()
            t0, t1 = float(out[0]), float(out[1])
            written = float(open(f).read())
            self.assertTrue(t0 <= written <= t1, (t0, written, t1))
            # without the variable the hook does nothing
            env.pop("EMBER_FIRST_STEP_FILE")
            os.remove(f)
            subprocess.run(["/usr/bin/python3", "-c", code], env=env, stdout=subprocess.DEVNULL, check=True)
            self.assertFalse(os.path.exists(f))


if __name__ == "__main__":
    unittest.main()
