#!/usr/bin/python3
"""Unit tests of bench/compare.py's logic that is not process plumbing (run: /usr/bin/python3 bench/test_compare.py).

The Maven suite does not need Python; these cover the training category's MFU, its workload
selection and the filtering of the peer's rows, with the processes replaced by canned rows.
"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


class Args:
    only = ""
    threads = 2
    repeats = 1
    max_wait = 0.0
    foreign_max = 0.1
    python = "/usr/bin/python3"
    peers = "/peers"
    java = "java"
    classpath = "cp"
    training_warmup = 10.0
    lean_jvm = False
    xmx = "4g"
    xmn = "64m"
    category = "training"
    no_peer = False
    peer_list = ["torch113"]
    torch210_dir = "/cache/torch210"
    passes = 2


def row(workload, case, values, unit="samples/s", **extra):
    r = {"workload": workload, "case": case, "unit": unit, "values": values}
    r.update(extra)
    return r


@contextlib.contextmanager
def stub_run_lines(rows):
    """compare.run_lines replaced, inside the block, by a stub that records each command it is given
    (the yielded list) and returns rows."""
    seen = []
    old = compare.run_lines
    compare.run_lines = lambda cmd, env=None, attempts=1: seen.append(cmd) or rows
    try:
        yield seen
    finally:
        compare.run_lines = old


class CompareTest(unittest.TestCase):
    def test_mfu_is_six_params_samples_over_own_best_sgemm(self):
        ember, torch_ = {}, {}
        compare.pool([row("sgemm", "N=1024", [200.0], "GFLOP/s"),
                      row("seed_small", "train b=32 sgd", [10000.0], params=1055242)], ember)
        compare.pool([row("sgemm", "N=1024", [100.0, 300.0, 250.0], "GFLOP/s"),
                      row("seed_small", "train b=32 sgd", [5000.0], params=1055242)], torch_)
        rec = {"unit": "samples/s", "ember": 10000.0, "pytorch": 5000.0}
        compare.add_mfu(rec, ("seed_small", "train b=32 sgd"), ember, torch_)
        self.assertAlmostEqual(rec["ember_mfu"], 6 * 1055242 * 10000.0 / 200e9)
        self.assertAlmostEqual(rec["pytorch_mfu"], 6 * 1055242 * 5000.0 / 300e9)  # best sgemm repeat
        self.assertEqual(rec["ember_sgemm_gflops"], 200.0)
        self.assertEqual(rec["pytorch_params"], 1055242)

    def test_no_mfu_for_non_mlps_latencies_or_without_sgemm(self):
        ember = {}
        compare.pool([row("lenet", "train b=64 adam", [900.0], params=61706),
                      row("mlp_mnist", "infer b=1 latency", [30.0], "us/call", params=101770),
                      row("mlp_mnist", "train b=32", [1000.0], params=101770)], ember)
        for key, unit in ((("lenet", "train b=64 adam"), "samples/s"), (("mlp_mnist", "infer b=1 latency"), "us/call"),
                          (("mlp_mnist", "train b=32"), "samples/s")):
            rec = {"unit": unit, "ember": 1.0, "pytorch": None}
            compare.add_mfu(rec, key, ember, {})
            self.assertNotIn("ember_mfu", rec, key)  # the last: no sgemm measured
            self.assertNotIn("pytorch_mfu", rec, key)

    def test_only_selects_training_workloads_by_prefix(self):
        a = Args()
        a.only = "seed,mlp_mnist/train b=32"
        self.assertEqual(compare.training_workloads(a), ["mlp_mnist", "seed_small", "seed_medium", "seed_large"])
        a.only = ""
        self.assertEqual(compare.training_workloads(a), compare.TRAINING)
        a.only = "resnet"
        with self.assertRaises(SystemExit) as e:
            compare.training_workloads(a)
        self.assertIn("no training workload matches --only resnet", str(e.exception))

    def test_torch_training_pass_asks_for_sgemm_and_drops_extra_rows(self):
        canned = [{"workload": "_env", "torch": "1.13"}, row("sgemm", "N=1024", [1.0], "GFLOP/s"),
                  row("sgemm", "(128x784)@(784x128)", [1.0], "GFLOP/s"), row("mlp_mnist", "train b=32", [1.0]),
                  row("mlp_mnist", "train b=32 steps", [1.0], "steps/s")]
        with stub_run_lines(canned) as seen:
            a = Args()
            a.only = "mlp_mnist"
            rows = compare.training_torch_pass(a)
            self.assertEqual(seen[0][seen[0].index("--only") + 1], "sgemm,mlp_mnist")
            self.assertEqual(seen[0][seen[0].index("--sgemm-sizes") + 1], "1024")
            self.assertEqual([(r["workload"], r.get("case")) for r in rows],
                             [("_env", None), ("sgemm", "N=1024"), ("mlp_mnist", "train b=32")])
            a.only = "lenet"
            compare.training_torch_pass(a)
            self.assertEqual(seen[1][seen[1].index("--only") + 1], "lenet")  # no MLP: no sgemm

    def test_ember_training_pass_warms_up_longer_and_measures_sgemm_for_mlps(self):
        with stub_run_lines([]) as seen:
            a = Args()
            a.only = "seed_small"
            compare.training_ember_pass(a)
            self.assertEqual(len(seen), 2)
            gemm, training = seen
            self.assertEqual(gemm[gemm.index("dev.ember.bench.Compare") + 1:][:5], ["gemm", "--sizes", "1024", "--only", "sgemm/N=1024"])
            self.assertEqual(training[training.index("dev.ember.bench.Compare") + 1:][:3], ["training", "--warmup", "10.0"])
            self.assertEqual(training[-2:], ["--only", "seed_small"])
            a.only = "transformer"
            compare.training_ember_pass(a)
            self.assertEqual(len(seen), 3)  # no MLP: no sgemm

    def test_lean_jvm_runs_training_in_the_memory_configuration(self):
        with stub_run_lines([]) as seen:
            a = Args()
            a.only, a.lean_jvm, a.xmx, a.xmn = "transformer", True, "4g", "64m"
            compare.training_ember_pass(a)
            cmd = seen[0]
            self.assertIn("-XX:+UseSerialGC", cmd)
            self.assertIn("-Xmn64m", cmd)
            self.assertFalse(any(c.startswith("-Xms") or "AlwaysPreTouch" in c for c in cmd), cmd)
            a.lean_jvm = False
            compare.training_ember_pass(a)
            self.assertIn("-XX:+AlwaysPreTouch", seen[1])
            self.assertIn("-XX:+UseParallelGC", seen[1])

    def test_memory_jvm_has_no_pretouch_and_the_heap_cap(self):
        with stub_run_lines([]) as seen:
            a = Args()
            a.xmx, a.xmn, a.warmup_steps, a.steps = "4g", "64m", 5, 20
            compare.memory_ember(a, "lenet")
            cmd = seen[0]
            self.assertIn("-Xmx4g", cmd)
            self.assertIn("-Xmn64m", cmd)
            self.assertFalse(any(c.startswith("-Xms") or "AlwaysPreTouch" in c for c in cmd), cmd)
            self.assertIn("-XX:+UseSerialGC", cmd)
            self.assertNotIn("-XX:+UseParallelGC", cmd)
            self.assertEqual(cmd[cmd.index("dev.ember.bench.MemoryProbe") + 1], "lenet")

    def test_compile_category_runs_its_own_peer_and_warms_up_as_training(self):
        with stub_run_lines([]) as seen:
            a = Args()
            a.category, a.only = "compile", "mlp_infer"
            compare.ember_pass(a)
            compare.torch_pass(a)
            ember, torch_ = seen
            self.assertEqual(ember[ember.index("dev.ember.bench.Compare") + 1], "compile")
            self.assertEqual(ember[ember.index("--warmup") + 1], "10.0")
            self.assertEqual(os.path.basename(torch_[1]), "pytorch_compile.py")
            self.assertEqual(torch_[-2:], ["--only", "mlp_infer"])

    def test_distributed_category_runs_both_process_counts_and_both_ddp_layouts_on_each_side(self):
        with stub_run_lines([]) as seen:
            a = Args()
            a.category = "distributed"
            compare.distributed_ember_pass(a)
            compare.distributed_torch_pass(a)
            ar2, ar4, single, ddp, tar2, tar4, tsingle, tddp = seen
            for cmd, n in ((ar2, "2"), (ar4, "4")):
                self.assertIn("dev.ember.distributed.AllReduceBench", cmd)
                self.assertIn("-Dember.threads=1", cmd)
                self.assertEqual(cmd[-1], n)
                self.assertEqual(cmd[cmd.index("--sizes") + 1], compare.DIST_SIZES)
            self.assertIn("-Dember.threads=2", single)
            self.assertEqual(single[single.index("dev.ember.distributed.DdpBench") + 1], "single")
            self.assertIn("-Dember.threads=1", ddp)
            self.assertEqual(ddp[ddp.index("ddp") + 1:ddp.index("ddp") + 3], ["--procs", "2"])
            for cmd, n in ((tar2, "2"), (tar4, "4")):
                self.assertEqual(os.path.basename(cmd[1]), "allreduce_gloo.py")
                self.assertEqual(cmd[-1], n)
            self.assertEqual(os.path.basename(tsingle[1]), "ddp_gloo.py")
            self.assertEqual(tsingle[2:5], ["single", "--threads", "2"])
            self.assertEqual(tddp[2:5], ["ddp", "--procs", "2"])
        with stub_run_lines([]) as seen:
            a.only = "ddp_seed_medium/train b=128 2 proc"
            compare.distributed_ember_pass(a)
            compare.distributed_torch_pass(a)
            self.assertEqual(len(seen), 4)  # no allreduce runs
            self.assertFalse(any("AllReduceBench" in c for cmd in seen for c in cmd))


@contextlib.contextmanager
def captured_stderr():
    old = sys.stderr
    sys.stderr = io.StringIO()
    try:
        yield sys.stderr
    finally:
        sys.stderr = old


class TwoPeersTest(unittest.TestCase):
    """--peer torch113,torch210: the faster peer's figures in pytorch/ratio, both in peers, which runs where."""

    def pooled(self, *rows):
        d = {}
        compare.pool(list(rows), d)
        return d

    def test_faster_peer_is_the_highest_throughput_or_the_lowest_latency(self):
        self.assertEqual(compare.faster_peer(False, {"torch113": 100.0, "torch210": 130.0}), "torch210")
        self.assertEqual(compare.faster_peer(True, {"torch113": 100.0, "torch210": 130.0}), "torch113")
        self.assertEqual(compare.faster_peer(True, {"torch113": 20.0, "torch210": 14.0}), "torch210")
        self.assertEqual(compare.faster_peer(False, {"torch113": 5.0, "torch210": 5.0}), "torch113")  # tie: first
        self.assertIsNone(compare.faster_peer(False, {}))

    def test_record_takes_pytorch_and_ratio_from_the_faster_peer_and_keeps_both(self):
        a = Args()
        a.category = "training"
        key = ("lenet", "train b=64 adam")
        ember = self.pooled(row(*key, [1200.0, 1000.0, 1100.0]))
        by_peer = {"torch113": self.pooled(row(*key, [900.0, 1000.0])),
                   "torch210": self.pooled(row(*key, [1050.0, 950.0, 1500.0], contaminated=True))}
        rec = compare.record(a, key, ember, by_peer, {"torch": "1.13"})
        self.assertEqual(rec["pytorch_peer"], "torch210")
        self.assertEqual(rec["pytorch"], 1050.0)
        self.assertAlmostEqual(rec["ratio"], 1100.0 / 1050.0)
        self.assertEqual((rec["pytorch_min"], rec["pytorch_max"]), (950.0, 1500.0))
        self.assertEqual(rec["repeats"], [3, 3])
        self.assertEqual(set(rec["peers"]), {"torch113", "torch210"})
        self.assertEqual(rec["peers"]["torch113"]["median"], 950.0)
        self.assertAlmostEqual(rec["peers"]["torch113"]["ratio"], 1100.0 / 950.0)
        self.assertEqual(rec["peers"]["torch113"]["repeats"], 2)
        self.assertTrue(rec["contaminated"])  # a busy peer marks the row
        self.assertEqual(rec["torch"], "1.13")

    def test_latency_row_takes_the_peer_with_the_lower_median(self):
        a = Args()
        key = ("mlp_mnist", "infer b=1 latency")
        lat = dict(unit="us/call (lower is better)", lower_is_better=True)
        ember = self.pooled(row(*key, [10.0], **lat))
        by_peer = {"torch113": self.pooled(row(*key, [16.0], **lat)), "torch210": self.pooled(row(*key, [20.0], **lat))}
        rec = compare.record(a, key, ember, by_peer, {})
        self.assertEqual(rec["pytorch_peer"], "torch113")
        self.assertEqual(rec["pytorch"], 16.0)
        self.assertAlmostEqual(rec["ratio"], 1.6)
        self.assertAlmostEqual(rec["peers"]["torch210"]["ratio"], 2.0)
        self.assertNotIn("contaminated", rec)

    def test_a_row_only_one_peer_has_compares_with_that_peer(self):
        a = Args()
        a.category = "gemm"
        key = ("sgemm", "(128x6656)@(6656x6656)")
        ember = self.pooled(row(*key, [150.0], "GFLOP/s"))
        rec = compare.record(a, key, ember, {"torch113": self.pooled(row(*key, [100.0], "GFLOP/s")), "torch210": {}}, {})
        self.assertEqual(rec["pytorch_peer"], "torch113")
        self.assertEqual(list(rec["peers"]), ["torch113"])
        rec = compare.record(a, key, ember, {"torch113": {}, "torch210": {}}, {})
        self.assertIsNone(rec["pytorch"])
        self.assertIsNone(rec["ratio"])
        self.assertIsNone(rec["pytorch_peer"])
        self.assertEqual(rec["peers"], {})

    def test_each_peer_gets_its_own_mfu_and_the_record_the_faster_ones(self):
        a = Args()
        key = ("seed_small", "train b=32 sgd")
        ember = self.pooled(row("sgemm", "N=1024", [200.0], "GFLOP/s"), row(*key, [10000.0], params=1055242))
        by_peer = {"torch113": self.pooled(row("sgemm", "N=1024", [100.0], "GFLOP/s"), row(*key, [5000.0], params=1055242)),
                   "torch210": self.pooled(row("sgemm", "N=1024", [150.0], "GFLOP/s"), row(*key, [6000.0], params=1055242))}
        rec = compare.record(a, key, ember, by_peer, {})
        self.assertAlmostEqual(rec["pytorch_mfu"], 6 * 1055242 * 6000.0 / 150e9)
        self.assertEqual(rec["pytorch_sgemm_gflops"], 150.0)
        self.assertAlmostEqual(rec["peers"]["torch113"]["mfu"], 6 * 1055242 * 5000.0 / 100e9)

    def test_torch210_runs_only_in_gemm_and_training(self):
        a = Args()
        a.peer_list = ["torch113", "torch210"]
        for cat, want in (("training", ["torch113", "torch210"]), ("gemm", ["torch113", "torch210"]),
                          ("nn", ["torch113", "torch210"]), ("ops", ["torch113"]), ("memory", ["torch113"])):
            a.category = cat
            with captured_stderr() as err:
                self.assertEqual(compare.active_peers(a), want, cat)
            self.assertEqual("torch210 implements no" in err.getvalue(), len(want) == 1, cat)
        a.peer_list, a.category = ["torch210"], "optim"
        with captured_stderr(), self.assertRaises(SystemExit) as e:
            compare.active_peers(a)
        self.assertIn("no workload in category optim", str(e.exception))
        a.no_peer = True
        self.assertEqual(compare.active_peers(a), [])

    def test_peer_list_is_checked(self):
        class Parser:
            def error(self, msg):
                raise ValueError(msg)
        self.assertEqual(compare.parse_peer_list(Parser(), "torch113, torch210"), ["torch113", "torch210"])
        for bad, msg in (("torch2", "unknown peer 'torch2'"), ("torch113,torch113", "twice"), (",", "at least one")):
            with self.assertRaises(ValueError) as e:
                compare.parse_peer_list(Parser(), bad)
            self.assertIn(msg, str(e.exception))

    def test_passes_alternate_the_peers_order(self):
        a = Args()
        a.peer_list, a.passes, a.only = ["torch113", "torch210"], 3, "lenet"
        order = []
        old = dict(compare.PEER_PASSES)
        compare.PEER_PASSES.update({n: (lambda n: lambda a: order.append(n) or [])(n) for n in old})
        try:
            with stub_run_lines([]), captured_stderr():
                compare.collect_passes(a)
        finally:
            compare.PEER_PASSES.update(old)
        self.assertEqual(order, ["torch113", "torch210", "torch210", "torch113", "torch113", "torch210"])

    def test_torch210_runs_in_its_one_openmp_pool_configuration(self):
        canned = [{"workload": "_env", "torch": "2.10.0"}, row("sgemm", "N=1024", [1.0], "GFLOP/s"),
                  row("sgemm", "(32x1024)@(1024x512)", [1.0], "GFLOP/s"), row("mlp_mnist", "train b=32", [1.0]),
                  row("mlp_mnist", "train b=32 steps", [1.0], "steps/s")]
        with stub_run_lines(canned) as seen:
            a = Args()
            a.only = "mlp_mnist"
            rows = compare.torch210_pass(a)
            cmd = seen[0]
            self.assertIn("-Djava.library.path=/cache/torch210/native-openmp", cmd)
            self.assertIn("-Dorg.bytedeco.javacpp.pathsFirst=true", cmd)
            self.assertIn("-Dorg.bytedeco.javacpp.cachedir=/cache/torch210/javacpp-cache-openmp", cmd)
            self.assertEqual(cmd[cmd.index("-jar") + 1], "/cache/torch210/target/torch210-bench-1.0.jar")
            self.assertEqual(cmd[cmd.index("--only") + 1], "sgemm,mlp_mnist")
            self.assertEqual([(r["workload"], r.get("case")) for r in rows],
                             [("_env", None), ("sgemm", "N=1024"), ("mlp_mnist", "train b=32")])
            a.category, a.only = "gemm", ""
            compare.torch210_pass(a)
            self.assertEqual(seen[1][seen[1].index("--sgemm-sizes") + 1], compare.GEMM_SQUARE)
            a.only = "sgemm_t"  # no sgemm case selected: not run
            self.assertEqual(compare.torch210_pass(a), [])
            self.assertEqual(len(seen), 2)
            a.category, a.only = "nn", "conv2d"
            compare.torch210_pass(a)
            nn = seen[2]
            self.assertIn("-Djava.library.path=/cache/torch210/native-openmp", nn)
            self.assertEqual(nn[nn.index("-cp") + 1:nn.index("-cp") + 3],
                             ["/cache/torch210/nn-classes:/cache/torch210/target/lib/*", "Torch210Nn"])
            self.assertEqual(nn[-2:], ["--only", "conv2d"])
            a.threads = 1
            env = compare.torch210_nn_env(a)
            self.assertEqual((env["OMP_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"]), ("1", "1"))

    def test_a_failed_run_is_retried_when_asked(self):
        with tempfile.TemporaryDirectory() as d, captured_stderr():
            flag = os.path.join(d, "ran")
            cmd = ["sh", "-c", 'if [ -e "$0" ]; then echo \'{"x": 1}\'; else touch "$0"; exit 134; fi', flag]
            self.assertEqual(compare.run_lines(cmd, attempts=2), [{"x": 1}])
            os.remove(flag)
            with self.assertRaises(SystemExit) as e:
                compare.run_lines(cmd)
            self.assertIn("exit status 134", str(e.exception))

    def test_env_names_each_peer_and_warns_of_generic_openblas_kernels(self):
        env = {}
        with captured_stderr() as err:
            compare.env_of([{"workload": "_env", "torch": "1.13.0a0",
                             "pools": [{"internal_api": "openblas", "architecture": "SkylakeX"}]}], env, "torch113")
            compare.env_of([{"workload": "_env", "torch": "2.10.0", "blas": "javacpp-openblas-openmp",
                             "openblas": {"corename": "Prescott"}}], env, "torch210")
        self.assertEqual(env, {"torch": "1.13.0a0", "torch113_openblas_core": "SkylakeX", "torch210": "2.10.0",
                               "torch210_blas": "javacpp-openblas-openmp", "torch210_openblas_core": "Prescott"})
        self.assertIn("torch210's OpenBLAS runs its generic Prescott kernels", err.getvalue())
        self.assertNotIn("torch113's", err.getvalue())


if __name__ == "__main__":
    unittest.main()
