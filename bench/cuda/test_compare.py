#!/usr/bin/env python3
"""Unit tests of bench/cuda/compare.py (run: python3 bench/cuda/test_compare.py)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def write(lines):
    f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    f.write("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    f.close()
    return f.name


class CompareTest(unittest.TestCase):
    def test_joins_on_workload_and_case_with_ember_over_pytorch(self):
        ember = write([{"workload": "_env", "side": "ember", "device": "H200"},
                       "WARNING: Using incubator modules: jdk.incubator.vector",
                       {"workload": "gemm", "case": "bf16 8192^3", "metric": "TFLOP/s", "value": 600.0,
                        "check": "ok"},
                       {"workload": "gemm", "case": "f32 4096^3", "metric": "TFLOP/s", "value": 40.0,
                        "check": "FAILED"},
                       {"workload": "h2d", "case": "pageable", "error": "CudaException: boom"}])
        peer = write([{"workload": "_env", "side": "pytorch", "device": "H200"},
                      {"workload": "gemm", "case": "bf16 8192^3", "metric": "TFLOP/s", "value": 750.0},
                      {"workload": "gemm", "case": "f32 4096^3", "metric": "TFLOP/s", "value": 50.0},
                      {"workload": "h2d", "case": "pageable", "metric": "GB/s", "value": 20.0},
                      {"workload": "lenet", "case": "train b=64 adam f32", "metric": "samples/s", "value": 9e4}])
        lines = compare.table(ember, peer).splitlines()
        self.assertIn('"side": "ember"', lines[0])
        self.assertIn('"side": "pytorch"', lines[1])
        rows = {tuple(line.split()[:2]): line.split() for line in lines[4:]}
        bf16 = [r for r in rows.values() if r[1] == "bf16"][0]
        self.assertEqual(["600", "750", "0.80"], bf16[4:7])
        f32 = [r for r in rows.values() if r[1] == "f32"][0]
        self.assertEqual(["check", "FAILED"], f32[-2:])
        h2d = [r for r in rows.values() if r[0] == "h2d"][0]
        self.assertEqual(["GB/s", "error", "20", "-"], h2d[2:6])
        lenet = [r for r in rows.values() if r[0] == "lenet"][0]
        self.assertEqual(["-", "9e+04", "-"], lenet[-3:])
        self.assertEqual(4, len(rows))

    def test_a_missing_file_gives_an_empty_side(self):
        peer = write([{"workload": "gemm", "case": "tf32 4096^3", "metric": "TFLOP/s", "value": 300.0}])
        lines = compare.table("/nonexistent/bench.txt", peer).splitlines()
        self.assertEqual("ember:   null", lines[0])
        self.assertEqual(["-", "300", "-"], lines[-1].split()[-3:])


if __name__ == "__main__":
    unittest.main()
