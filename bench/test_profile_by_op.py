#!/usr/bin/python3
"""Unit tests of bench/profile_by_op.py's keys and aggregation (run: /usr/bin/python3 bench/test_profile_by_op.py)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_by_op  # noqa: E402


def sample(thread, *frames):
    lines = ["jdk.ExecutionSample {", '  sampledThread = "%s" (javaThreadId = 3)' % thread, "  stackTrace = ["]
    lines += ["    %s(int) line: 1" % f for f in frames]
    return "\n".join(lines + ["  ]", "}"]) + "\n"


class ProfileByOpTest(unittest.TestCase):
    def test_keys_backward_optimizer_and_forward_samples(self):
        text = (sample("main", "dev.ember.backend.cpu.vector.VectorGemm.kernel", "dev.ember.ops.LinalgOps.mm",
                       "dev.ember.ops.LinalgOps.weightGrad", "dev.ember.ops.LinalgOps.lambda$linear2d$0",
                       "dev.ember.autograd.Node.apply", "dev.ember.bench.TrainingCases.lambda$transformerStep$0")
                + sample("main", "dev.ember.backend.cpu.vector.VectorUpdateKernels.adam", "dev.ember.optim.Adam.update",
                         "dev.ember.optim.Optimizer.step", "dev.ember.bench.TrainingCases.lambda$transformerStep$0")
                + sample("main", "dev.ember.backend.cpu.Reductions.softmax", "dev.ember.ops.ReduceOps.softmaxUntraced",
                         "dev.ember.ops.ReduceOps.softmax", "dev.ember.nn.MultiheadAttention.attentionCore",
                         "dev.ember.nn.MultiheadAttention.forward", "dev.ember.bench.TrainingCases.lambda$transformerStep$0")
                + sample("ember-worker-1", "dev.ember.backend.cpu.vector.VectorGemm.kernel")
                + sample("main", "java.lang.Thread.sleep"))
        counts, n = profile_by_op.aggregate(text, "main", "bench.TrainingCases")
        self.assertEqual(3, n)
        self.assertEqual({
            "B ops.LinalgOps.lambda$linear2d$0 / ops.LinalgOps.weightGrad": 1,
            "OPT optim.Adam.update": 1,
            "F nn.MultiheadAttention.attentionCore / ops.ReduceOps.softmax": 1}, dict(counts))
        counts, n = profile_by_op.aggregate(text, "main")
        self.assertEqual(4, n)
        self.assertEqual(1, counts["F  / java.lang.Thread.sleep"])


if __name__ == "__main__":
    unittest.main()
