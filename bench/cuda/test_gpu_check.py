#!/usr/bin/env python3
"""Tests of scripts/gpu-check's plumbing without a JDK or a GPU (run: python3 bench/cuda/test_gpu_check.py).

Each test lays out a scratch repository holding the real scripts/gpu-check and bench/cuda/compare.py,
a fake .gpu (its "java" is a shell script acting as Smoke, the JUnit console and CudaBench) and a fake
torch_peer.py, runs gpu-check there and reads what it wrote into $OUT.
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FAKE_JAVA = r"""#!/bin/sh
# FAKE_HANG=<step> makes that step hang; FAKE_FAIL=<step> makes it fail.
case "$*" in
  *-version*) echo 'openjdk version "25" (fake)' >&2; exit 0 ;;
  *ConsoleLauncher*) step=junit ;;
  *Smoke*) step=smoke ;;
  *CudaTrainingBench*) step=train ;;
  *CudaBench*) step=bench ;;
  *) echo "fake java: unexpected $*" >&2; exit 3 ;;
esac
[ "${FAKE_HANG:-}" = "$step" ] && sleep 60
if [ "${FAKE_FAIL:-}" = "$step" ]; then
  echo "Exception in thread \"main\" dev.ember.cuda.lib.CudaException: cuInit: CUDA_ERROR_NO_DEVICE" >&2
  echo "	at dev.ember.cuda.lib.CudaDriver.get(CudaDriver.java:1)" >&2
  exit 1
fi
case $step in
  junit) printf '%s\n' "args: $*" "[         3 tests successful      ]" "[         1 tests failed          ]" ; exit 1 ;;
  smoke) echo "smoke: ok" ;;
  bench) echo '{"workload": "_env", "side": "ember"}'
         echo '{"workload": "gemm", "case": "bf16 8192^3", "metric": "TFLOP/s", "value": 500.0, "check": "ok"}' ;;
  train) echo "{\"workload\": \"lenet\", \"case\": \"train b=64 adam f32\", \"args\": \"$*\", \"value\": 1.0}" ;;
esac
"""

FAKE_PEER = """import json
print(json.dumps({"workload": "_env", "side": "pytorch"}))
print(json.dumps({"workload": "gemm", "case": "bf16 8192^3", "metric": "TFLOP/s", "value": 250.0}))
"""


class GpuCheckTest(unittest.TestCase):
    def setUp(self):
        self.repo = tempfile.mkdtemp(prefix="gpu-check-test.")
        self.addCleanup(shutil.rmtree, self.repo)
        os.makedirs(os.path.join(self.repo, "scripts"))
        os.makedirs(os.path.join(self.repo, "bench", "cuda"))
        os.makedirs(os.path.join(self.repo, ".gpu", "lib"))
        shutil.copy(os.path.join(ROOT, "scripts", "gpu-check"), os.path.join(self.repo, "scripts"))
        shutil.copy(os.path.join(HERE, "compare.py"), os.path.join(self.repo, "bench", "cuda"))
        with open(os.path.join(self.repo, "bench", "cuda", "torch_peer.py"), "w") as f:
            f.write(FAKE_PEER)
        with tarfile.open(os.path.join(self.repo, ".gpu", "jre.tgz"), "w:gz") as t:
            data = FAKE_JAVA.encode()
            info = tarfile.TarInfo("jre/bin/java")
            info.size, info.mode = len(data), 0o755
            t.addfile(info, io.BytesIO(data))
        with zipfile.ZipFile(os.path.join(self.repo, ".gpu", "lib", "ember-cuda-tests.jar"), "w") as z:
            z.writestr("dev/ember/cuda/SomeTest.class", b"\xca\xfe\xba\xbe")
        with open(os.path.join(self.repo, ".gpu", "classpath.txt"), "w") as f:
            f.write(".gpu/lib/ember-cuda-tests.jar\n")
        with open(os.path.join(self.repo, ".gpu", "info.txt"), "w") as f:
            f.write("commit: test\n")
        self.out = os.path.join(self.repo, "out")

    def run_check(self, **env):
        e = dict(os.environ, OUT=self.out, PYTHON=sys.executable, EMBER_CUDA_LIBRARY_PATH="/nowhere", **env)
        p = subprocess.run(["bash", "scripts/gpu-check"], cwd=self.repo, env=e, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(0, p.returncode, p.stderr)
        with open(os.path.join(self.out, "summary.txt")) as f:
            return {line.split()[1]: line for line in f if line.strip()}

    def test_every_step_has_a_summary_line_and_at_most_eight_files_come_back(self):
        summary = self.run_check()
        for step in ("unpack", "env", "smoke", "bench", "peer", "compare"):
            self.assertTrue(summary[step].startswith("ok "), summary[step])
        self.assertTrue(summary["junit"].startswith("FAIL"), summary["junit"])
        self.assertIn("(tests: 3 successful, 1 failed)", summary["junit"])
        self.assertTrue(summary["total"].startswith("done  total "), summary["total"])
        files = sorted(os.listdir(self.out))
        self.assertEqual(["bench.txt", "compare.txt", "env.txt", "junit.txt", "peer.txt", "results.tgz",
                          "smoke.txt", "summary.txt"], files)
        with open(os.path.join(self.out, "junit.txt")) as f:
            self.assertIn("--scan-class-path", f.read())
        with open(os.path.join(self.out, "compare.txt")) as f:
            row = [line for line in f if line.startswith("gemm")][0].split()
        self.assertEqual(["500", "250", "2.00"], row[-3:])
        with tarfile.open(os.path.join(self.out, "results.tgz")) as t:
            names = t.getnames()
        self.assertIn("results/gpu-pack-info.txt", names)
        self.assertIn("results/junit.stderr.txt", names)
        with open(os.path.join(self.out, "bench.txt")) as f:
            self.assertEqual("ember", json.loads(f.readline())["side"])

    def test_the_training_bench_runs_after_cuda_bench_when_the_test_jar_has_it(self):
        summary = self.run_check(STEPS="bench")
        with open(os.path.join(self.out, "bench.txt")) as f:
            self.assertEqual(2, len(f.readlines()))
        with zipfile.ZipFile(os.path.join(self.repo, ".gpu", "lib", "ember-cuda-tests.jar"), "a") as z:
            z.writestr("dev/ember/cuda/bench/CudaTrainingBench.class", b"\xca\xfe\xba\xbe")
        summary = self.run_check(STEPS="bench")
        self.assertTrue(summary["bench"].startswith("ok "), summary["bench"])
        with open(os.path.join(self.out, "bench.txt")) as f:
            rows = [json.loads(line) for line in f]
        self.assertEqual(["_env", "gemm", "lenet", "lenet"], [r["workload"] for r in rows])
        self.assertTrue(rows[2]["args"].endswith("dev.ember.cuda.bench.CudaTrainingBench cuda"), rows[2])
        # then the convolution workloads again with cuDNN switched off (Ember's im2col kernels)
        self.assertIn("-Dember.cuda.cudnn=false", rows[3]["args"])
        self.assertTrue(rows[3]["args"].endswith("dev.ember.cuda.bench.CudaTrainingBench cuda 1.0 lenet,convnet"),
                        rows[3])

    def test_a_hanging_step_times_out_and_a_failing_one_says_why(self):
        summary = self.run_check(FAKE_HANG="smoke", SMOKE_TIMEOUT="2", FAKE_FAIL="bench")
        self.assertIn("timed out after 2s", summary["smoke"])
        self.assertTrue(summary["bench"].startswith("FAIL"))
        self.assertIn("exit 1: Exception in thread \"main\" dev.ember.cuda.lib.CudaException: cuInit", summary["bench"])
        self.assertTrue(summary["peer"].startswith("ok "), summary["peer"])

    def test_the_budget_and_steps_bound_what_runs(self):
        summary = self.run_check(STEPS="smoke junit", FAKE_HANG="smoke", GPU_CHECK_BUDGET="14")
        self.assertIn("skip", summary["env"])
        self.assertIn("timed out after", summary["smoke"])
        self.assertIn("not run: the 14s budget is spent", summary["junit"])
        self.assertIn("skip", summary["peer"])

    def test_without_a_pack_it_says_to_run_gpu_pack(self):
        shutil.rmtree(os.path.join(self.repo, ".gpu"))
        summary = self.run_check(STEPS="smoke")
        self.assertIn("run scripts/gpu-pack first", summary["unpack"])
        self.assertTrue(summary["smoke"].startswith("FAIL"), summary["smoke"])


if __name__ == "__main__":
    unittest.main()
