#!/usr/bin/python3
"""Unit tests of bench/jit_breakdown.py's parsing and tables (run: /usr/bin/python3 bench/test_jit_breakdown.py),
on canned JFR events in the shape `jfr print --json` gives them."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jit_breakdown as jb  # noqa: E402

START = "2026-11-29T04:00:00.000Z"


def method(cls, name):
    return {"type": {"name": cls.replace(".", "/")}, "name": name}


def comp(cls, name, level, at, dur, size=100, osr=False):
    return {"type": "jdk.Compilation", "values": {"startTime": "2026-11-29T04:00:%06.3fZ" % at, "duration": "PT%gS" % dur,
                                                  "method": method(cls, name), "compileLevel": level,
                                                  "codeSize": size, "isOsr": osr, "succeded": True}}


def sample(at, frames):
    return {"type": "jdk.ExecutionSample", "values": {"startTime": "2026-11-29T04:00:%06.3fZ" % at, "stackTrace": {
        "frames": [{"method": method(c, n), "type": t} for c, n, t in frames]}}}


K = "dev.ember.backend.cpu.vector.VectorGemm"
EVENTS = [
    {"type": "jdk.JVMInformation", "values": {"jvmStartTime": START}},
    comp(K, "kernel", 3, 1.0, 0.01),
    comp(K, "kernel", 4, 2.0, 0.5, 5000),
    comp(K, "kernel", 4, 2.1, 0.25, 4000, osr=True),
    comp("x.Y", "late", 4, 9.0, 0.1),
    sample(1.5, [("jdk.incubator.vector.FloatVector", "fma", "Interpreted"), (K, "kernel", "Interpreted"),
                 ("dev.ember.Ops", "matmul", "JIT compiled")]),
    sample(3.0, [(K, "kernel", "JIT compiled")]),
    sample(8.0, [(K, "kernel", "JIT compiled")]),  # after epoch 1
    {"type": "jdk.Deoptimization", "values": {"startTime": "2026-11-29T04:00:03.000Z", "method": method(K, "kernel"),
                                              "reason": "unstable_if"}},
]


class ParseTest(unittest.TestCase):
    def test_times_and_durations(self):
        self.assertAlmostEqual(0.123456789, jb.parse_time("1970-01-01T00:00:00.123456789Z"), places=9)
        self.assertEqual(0.0, jb.parse_time("1970-01-01T00:00:00Z"))
        self.assertAlmostEqual(0.0123, jb.parse_duration("PT0.0123S"))
        self.assertAlmostEqual(62.5, jb.parse_duration("PT1M2.5S"))
        self.assertEqual(2.0, jb.parse_duration(2))
        with self.assertRaises(ValueError):
            jb.parse_duration("1 s")

    def test_method_name(self):
        self.assertEqual("a.b.C.m", jb.method_name(method("a.b.C", "m")))
        self.assertEqual("?", jb.method_name(None))


class AnalyzeTest(unittest.TestCase):
    def test_tables(self):
        lines, comps = jb.analyze(EVENTS, [5.0, 7.0])
        text = "\n".join(lines)
        self.assertEqual(4, len(comps))
        self.assertEqual(2.5, comps[1]["end"])
        self.assertIn("| 3 (C1) | 1 | 10 | 1 | 10 | 0 | 0 |", text)
        self.assertIn("| 4 (C2) | 3 | 850 | 2 | 750 | 1 | 250 |", text)  # x.Y.late ends at 9.1 s, after epoch 1
        self.assertLess(text.index("`%s.kernel` | 500" % K), text.index("`%s.kernel` | 250" % K))  # by compile time
        self.assertIn("| Interpreted | 1 | 50% |", text)
        self.assertIn("| JIT compiled | 1 | 50% |", text)
        # the kernel: 2 samples in epoch 1, C1 at 1.01 s, its non-OSR C2 code at 2.50 s
        self.assertIn("| `%s.kernel` | 2 | 1.01 | 2.50 | 500 |" % K, text)
        self.assertIn("deoptimizations: 1 (1 before epoch 1 ended)", text)
        self.assertIn("- 1 x `%s.kernel` (unstable_if)" % K, text)

    def test_needs_the_start(self):
        with self.assertRaises(ValueError):
            jb.analyze(EVENTS[1:], [1.0])


if __name__ == "__main__":
    unittest.main()
