package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.BatchNormBase;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** SyncBatchNorm on ranks that are threads of this JVM, against BatchNorm on the concatenated batch. */
class SyncBatchNormTest {
  /** What one rank saw in one step: output, input gradient, weight and bias gradients (this rank's). */
  record Step(double[] y, double[] dx, double[] gw, double[] gb) {}

  /** What one rank returns: its steps, then its running statistics and batch count. */
  record RankResult(List<Step> steps, double[] runningMean, double[] runningVar, long tracked) {}

  /** Random [total, ...] values with a per-channel offset and scale (so the statistics matter). */
  static Tensor data(long seed, DType dtype, int... shape) {
    Random r = new Random(seed);
    int n = 1;
    for (int d : shape) n *= d;
    int c = shape[1];
    int inner = n / shape[0] / c;
    double[] v = new double[n];
    for (int i = 0; i < n; i++) {
      int ch = i / inner % c;
      v[i] = 3 + ch + (1 + 0.5 * ch) * r.nextGaussian();
    }
    return Tensor.of(v, shape).to(dtype);
  }

  static BatchNormBase batchNorm(int dims, int c, DType dtype) {
    BatchNormBase bn = dims == 4 ? new BatchNorm2d(c) : new BatchNorm1d(c);
    bn.to(dtype);
    try (Grad ignored = Grad.off()) { // non-trivial affine parameters
      double[] w = new double[c];
      double[] b = new double[c];
      for (int i = 0; i < c; i++) {
        w[i] = 0.5 + 0.25 * i;
        b[i] = -0.3 + 0.2 * i;
      }
      bn.weight().copy_(Tensor.of(w, c).to(dtype));
      bn.bias().copy_(Tensor.of(b, c).to(dtype));
    }
    return bn;
  }

  static Step step(Module m, Tensor x, Tensor v) {
    Tensor xi = x.detach().requiresGrad(true);
    Tensor y = m.forward(xi);
    y.mul(v).sum().backward();
    Tensor w = m.param("weight");
    Tensor b = m.param("bias");
    Step s = new Step(y.toDoubleArray(), xi.grad().toDoubleArray(), w.grad().toDoubleArray(),
        b.grad().toDoubleArray());
    m.zeroGrad();
    return s;
  }

  static Tensor rows(Tensor t, int from, int n) {
    return t.narrow(0, from, n).contiguous();
  }

  /**
   * Runs {@code steps} training steps of a batch norm over inputs of {@code shape} (dim 0 the global batch, split
   * into {@code sizes} per rank) in one process and as SyncBatchNorm over {@code sizes.length} ranks, with the
   * loss {@code sum(y * v)}, and checks outputs, input gradients, the ranks' summed weight and bias gradients and
   * the running statistics against the one process within {@code tol} (max |a - b| / max |b| per tensor).
   */
  static void compareWithConcatenatedBatch(int[] sizes, int[] shape, DType dtype, int steps, double tol) throws Exception {
    int dims = shape.length;
    int c = shape[1];
    List<Tensor> xs = new ArrayList<>();
    List<Tensor> vs = new ArrayList<>();
    for (int s = 0; s < steps; s++) {
      xs.add(data(10 + s, dtype, shape));
      vs.add(Tensor.of(data(50 + s, DType.F64, shape).sub(3).toDoubleArray(), shape).to(dtype));
    }
    BatchNormBase ref = batchNorm(dims, c, dtype);
    List<Step> expected = new ArrayList<>();
    for (int s = 0; s < steps; s++) expected.add(step(ref, xs.get(s), vs.get(s)));
    int[] from = new int[sizes.length];
    for (int r = 1; r < sizes.length; r++) from[r] = from[r - 1] + sizes[r - 1];
    List<Object> results = ProcessGroupTest.inThreads(sizes.length, Duration.ofSeconds(60), g -> {
      Module m = SyncBatchNorm.convertSyncBatchNorm(batchNorm(dims, c, dtype), g);
      assertInstanceOf(SyncBatchNorm.class, m);
      List<Step> mine = new ArrayList<>();
      int r = g.rank();
      for (int s = 0; s < steps; s++) {
        mine.add(step(m, rows(xs.get(s), from[r], sizes[r]), rows(vs.get(s), from[r], sizes[r])));
      }
      SyncBatchNorm bn = (SyncBatchNorm) m;
      return new RankResult(mine, bn.runningMean().toDoubleArray(), bn.runningVar().toDoubleArray(),
          bn.numBatchesTracked());
    });
    List<RankResult> ranks = new ArrayList<>();
    for (int r = 0; r < sizes.length; r++) {
      if (results.get(r) instanceof Throwable t) throw new AssertionError("rank " + r + " failed", t);
      ranks.add((RankResult) results.get(r));
    }
    int inner = 1;
    for (int d = 1; d < dims; d++) inner *= shape[d];
    for (int s = 0; s < steps; s++) {
      Step e = expected.get(s);
      double[] gw = new double[c];
      double[] gb = new double[c];
      for (int r = 0; r < sizes.length; r++) {
        Step a = ranks.get(r).steps().get(s);
        int lo = from[r] * inner;
        int hi = (from[r] + sizes[r]) * inner;
        assertClose(Arrays.copyOfRange(e.y(), lo, hi), a.y(), tol, "step " + s + " rank " + r + " output");
        assertClose(Arrays.copyOfRange(e.dx(), lo, hi), a.dx(), tol, "step " + s + " rank " + r + " input grad");
        for (int ch = 0; ch < c; ch++) {
          gw[ch] += a.gw()[ch];
          gb[ch] += a.gb()[ch];
        }
      }
      assertClose(e.gw(), gw, tol, "step " + s + " weight grad (sum over ranks)");
      assertClose(e.gb(), gb, tol, "step " + s + " bias grad (sum over ranks)");
    }
    for (int r = 0; r < sizes.length; r++) {
      RankResult a = ranks.get(r);
      assertClose(ref.runningMean().toDoubleArray(), a.runningMean(), tol, "rank " + r + " running mean");
      assertClose(ref.runningVar().toDoubleArray(), a.runningVar(), tol, "rank " + r + " running var");
      assertEquals(steps, a.tracked());
      assertArrayEquals(ranks.get(0).runningMean(), a.runningMean(), "running means: the same bits on every rank");
      assertArrayEquals(ranks.get(0).runningVar(), a.runningVar(), "running vars: the same bits on every rank");
    }
  }

  static void assertClose(double[] expected, double[] actual, double tol, String what) {
    assertEquals(expected.length, actual.length, what + ": length");
    double diff = 0;
    double scale = 0;
    for (int i = 0; i < expected.length; i++) {
      diff = Math.max(diff, Math.abs(expected[i] - actual[i]));
      scale = Math.max(scale, Math.abs(expected[i]));
    }
    assertTrue(scale > 0 || expected.length == 0, what + ": all zero");
    assertTrue(diff <= tol * scale, what + ": max |diff| " + diff + " > " + tol + " * " + scale);
  }

  @Test
  void twoRanksAtBatch32EqualBatchNormAtBatch64InFloat32() throws Exception {
    compareWithConcatenatedBatch(new int[] {32, 32}, new int[] {64, 4, 6, 6}, DType.F32, 3, 1e-6);
  }

  @Test
  void twoRanksEqualBatchNormInFloat64() throws Exception {
    compareWithConcatenatedBatch(new int[] {32, 32}, new int[] {64, 3, 5}, DType.F64, 2, 1e-12);
  }

  @Test
  void unequalBatchesPerRankCountAsTheirSizes() throws Exception {
    compareWithConcatenatedBatch(new int[] {20, 44}, new int[] {64, 5, 7}, DType.F32, 2, 1e-6);
    compareWithConcatenatedBatch(new int[] {5, 1, 18}, new int[] {24, 3}, DType.F64, 2, 1e-12);
  }

  @Test
  void aRankWithAnEmptyBatchTakesPart() throws Exception {
    compareWithConcatenatedBatch(new int[] {12, 0, 20}, new int[] {32, 3, 4}, DType.F64, 1, 1e-12);
  }

  /**
   * Float64 central differences of the objective summed over 2 ranks, {@code J = sum_r sum(y_r * v_r)}, with
   * respect to every input element of every rank and the (replicated) weight and bias, against the analytic
   * gradients: each rank's input gradient, and the sum over ranks of the weight and bias gradients.
   */
  @Test
  void gradientsMatchCentralDifferencesAcrossRanksInFloat64() throws Exception {
    int[] sizes = {3, 2};
    int c = 2;
    int len = 3;
    double eps = 1e-6;
    List<Object> results = ProcessGroupTest.inThreads(2, Duration.ofSeconds(60), g -> {
      int r = g.rank();
      SyncBatchNorm bn = new SyncBatchNorm(c, 1e-5, 0.1, true, false, g);
      bn.to(DType.F64);
      Tensor x = data(7 + r, DType.F64, sizes[r], c, len).requiresGrad(true);
      Tensor v = data(90 + r, DType.F64, sizes[r], c, len).sub(3);
      try (Grad ignored = Grad.off()) {
        bn.weight().copy_(Tensor.of(new double[] {1.5, -0.7}, c));
        bn.bias().copy_(Tensor.of(new double[] {0.2, 0.4}, c));
      }
      bn.forward(x).mul(v).sum().backward();
      double[] dx = x.grad().toDoubleArray();
      double[] gwb = new double[2 * c];
      System.arraycopy(bn.weight().grad().toDoubleArray(), 0, gwb, 0, c);
      System.arraycopy(bn.bias().grad().toDoubleArray(), 0, gwb, c, c);
      g.allReduce(gwb, AllReduceOp.SUM); // the replicated parameters' gradient of J
      Supplier<Double> objective = () -> {
        double[] j = {bn.forward(x).mul(v).sum().toDoubleArray()[0]};
        g.allReduce(j, AllReduceOp.SUM);
        return j[0];
      };
      double worst = 0;
      try (Grad ignored = Grad.off()) {
        for (int q = 0; q < 2; q++) { // every rank perturbs in turn, the others recompute with it
          for (int e = 0; e < sizes[q] * c * len; e++) {
            double[] jj = new double[2];
            Tensor flat = x.reshape(-1);
            double orig = r == q ? flat.toDoubleArray()[e] : 0;
            for (int k = 0; k < 2; k++) {
              if (r == q) flat.narrow(0, e, 1).fill_(orig + (k == 0 ? eps : -eps));
              jj[k] = objective.get();
            }
            if (r == q) flat.narrow(0, e, 1).fill_(orig);
            double numeric = (jj[0] - jj[1]) / (2 * eps);
            if (r == q) worst = Math.max(worst, Math.abs(numeric - dx[e]) / (1e-3 + Math.abs(dx[e])));
          }
        }
        Tensor[] params = {bn.weight(), bn.bias()};
        for (int p = 0; p < 2; p++) {
          for (int ch = 0; ch < c; ch++) {
            double orig = params[p].toDoubleArray()[ch];
            double[] jj = new double[2];
            for (int k = 0; k < 2; k++) {
              params[p].narrow(0, ch, 1).fill_(orig + (k == 0 ? eps : -eps));
              jj[k] = objective.get();
            }
            params[p].narrow(0, ch, 1).fill_(orig);
            double numeric = (jj[0] - jj[1]) / (2 * eps);
            double analytic = gwb[p * c + ch];
            worst = Math.max(worst, Math.abs(numeric - analytic) / (1e-3 + Math.abs(analytic)));
          }
        }
      }
      return worst;
    });
    for (int r = 0; r < 2; r++) {
      if (results.get(r) instanceof Throwable t) throw new AssertionError("rank " + r + " failed", t);
      double worst = (Double) results.get(r);
      assertTrue(worst < 1e-6, "rank " + r + ": worst relative gradient error " + worst);
    }
  }

  @Test
  void convertReplacesEveryBatchNormKeepingItsTensorsAndMode() throws Exception {
    Generator.manualSeed(3);
    BatchNorm1d inner = new BatchNorm1d(8, 1e-3, null, true, true);
    Sequential model = new Sequential(new Linear(4, 8), inner, new ReLU(),
        new Sequential(new Linear(8, 6), new BatchNorm1d(6)));
    Tensor weight = inner.weight();
    Tensor mean = inner.runningMean();
    inner.bias().requiresGrad(false); // a frozen bias stays frozen
    model.child("3").eval();
    List<String> keys = new ArrayList<>(model.stateDict().keySet());
    try (ProcessGroup g = ProcessGroup.fromEnv(Map.of("RANK", "0", "WORLD_SIZE", "1"))) {
      assertSame(model, SyncBatchNorm.convertSyncBatchNorm(model, g));
      SyncBatchNorm s = assertInstanceOf(SyncBatchNorm.class, model.child("1"));
      assertNotSame(inner, s);
      assertSame(weight, s.weight());
      assertSame(mean, s.runningMean());
      assertEquals(1e-3, s.eps());
      assertEquals(null, s.momentum());
      assertTrue(!s.bias().requiresGrad());
      assertSame(g, s.group());
      SyncBatchNorm nested = assertInstanceOf(SyncBatchNorm.class, model.child("3").child("1"));
      assertTrue(!nested.isTraining(), "eval mode kept");
      assertEquals(keys, new ArrayList<>(model.stateDict().keySet()));
      assertSame(s, SyncBatchNorm.convertSyncBatchNorm(s, g), "a SyncBatchNorm stays");
      assertInstanceOf(SyncBatchNorm.class, SyncBatchNorm.convertSyncBatchNorm(new BatchNorm2d(3), g));
    }
  }

  @Test
  void aWorldOfOneIsBatchNormBitForBit() {
    Tensor x = data(1, DType.F32, 16, 3, 4, 4);
    Tensor v = data(2, DType.F32, 16, 3, 4, 4);
    try (ProcessGroup g = ProcessGroup.fromEnv(Map.of("RANK", "0", "WORLD_SIZE", "1"))) {
      Step a = step(batchNorm(4, 3, DType.F32), x, v);
      Step b = step(SyncBatchNorm.convertSyncBatchNorm(batchNorm(4, 3, DType.F32), g), x, v);
      assertArrayEquals(a.y(), b.y());
      assertArrayEquals(a.dx(), b.dx());
      assertArrayEquals(a.gw(), b.gw());
    }
  }

  @Test
  void badInputsNameTheOpAndShapes() throws Exception {
    List<Object> results = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      SyncBatchNorm bn = new SyncBatchNorm(3, g);
      var wrongChannels = assertThrows(TensorArgumentException.class, () -> bn.forward(Tensor.zeros(4, 5)));
      assertTrue(wrongChannels.getMessage().contains("expected 3 channels"), wrongChannels.getMessage());
      var rank1 = assertThrows(TensorArgumentException.class, () -> bn.forward(Tensor.zeros(4)));
      assertTrue(rank1.getMessage().contains("at least 2-d"), rank1.getMessage());
      var half = assertThrows(TensorArgumentException.class, () -> bn.forward(Tensor.zeros(DType.BF16, 4, 3)));
      assertTrue(half.getMessage().contains("sync_batch_norm"), half.getMessage());
      // one value per channel over all ranks: the collective runs, then every rank fails the same way
      var single = assertThrows(TensorArgumentException.class, () -> bn.forward(Tensor.zeros(g.rank() == 0 ? 1 : 0, 3)));
      assertTrue(single.getMessage().contains("more than 1 value per channel"), single.getMessage());
      return null;
    });
    for (int r = 0; r < 2; r++) assertEquals(null, results.get(r), "rank " + r + ": " + results.get(r));
  }

  /**
   * DDP with SyncBatchNorm: 2 ranks at batch 64 train as one process with BatchNorm at batch 128 (plain
   * BatchNorm under DDP would normalize each half by its own statistics and differ).
   */
  @Test
  void withDdpTwoRanksTrainAsOneProcessAtTheConcatenatedBatch() throws Exception {
    int steps = 10;
    Supplier<Module> model = () -> {
      Generator.manualSeed(4);
      return new Sequential(new Linear(DistributedDataParallelTest.FEATURES, 32), new BatchNorm1d(32), new ReLU(),
          new Linear(32, DistributedDataParallelTest.CLASSES));
    };
    Module ref = model.get();
    SGD refOpt = new SGD(ref.parameters(), 0.1);
    for (int s = 0; s < steps; s++) {
      Tensor[] b = DistributedDataParallelTest.batch(s);
      refOpt.zeroGrad();
      F.crossEntropy(ref.forward(b[0]), b[1]).backward();
      refOpt.step();
    }
    List<float[]> expected = DistributedDataParallelTest.values(ref);
    List<Module> replicas = List.of(model.get(), model.get()); // built here: the generator is global, not per thread
    List<Object> results = ProcessGroupTest.inThreads(2, Duration.ofSeconds(60), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(
          SyncBatchNorm.convertSyncBatchNorm(replicas.get(g.rank()), g), g);
      SGD opt = new SGD(ddp.parameters(), 0.1);
      for (int s = 0; s < steps; s++) {
        Tensor[] b = DistributedDataParallelTest.rows(DistributedDataParallelTest.batch(s), g.rank() * 64, 64);
        opt.zeroGrad();
        F.crossEntropy(ddp.forward(b[0]), b[1]).backward();
        opt.step();
      }
      List<float[]> v = DistributedDataParallelTest.values(ddp.module());
      v.add(ddp.module().child("1").buffer("running_var").toFloatArray());
      return v;
    });
    for (int r = 0; r < 2; r++) {
      if (results.get(r) instanceof Throwable t) throw new AssertionError("rank " + r + " failed", t);
      @SuppressWarnings("unchecked") List<float[]> v = (List<float[]>) results.get(r);
      float[] runningVar = v.remove(v.size() - 1);
      double err = DistributedDataParallelTest.relativeError(v, expected);
      assertTrue(err < 1e-5, "rank " + r + ": relative error against batch 128 in one process: " + err);
      double varErr = DistributedDataParallelTest.relativeError(List.of(runningVar),
          List.of(ref.child("1").buffer("running_var").toFloatArray()));
      assertTrue(varErr < 1e-5, "rank " + r + ": running var error " + varErr);
    }
  }
}
