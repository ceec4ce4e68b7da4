package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.Unflatten;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** DistributedDataParallel on ranks that are threads of this JVM, against one process training on the whole batch. */
class DistributedDataParallelTest {
  static final int FEATURES = 64;
  static final int CLASSES = 10;
  static final int GLOBAL_BATCH = 128;
  static final int STEPS = 50;
  static final double LR = 0.1;

  static Module mlp(long seed) {
    Generator.manualSeed(seed);
    return Models.mlp(FEATURES, 128, 64, CLASSES);
  }

  /** Step {@code step}'s global batch: inputs [128, 64] and labels from a fixed random teacher. */
  static Tensor[] batch(int step) {
    return batch(step, FEATURES);
  }

  /** Step {@code step}'s global batch of {@code features} gaussian features, labelled by a fixed linear teacher. */
  static Tensor[] batch(int step, int features) {
    Random r = new Random(1000 + step);
    float[] x = new float[GLOBAL_BATCH * features];
    long[] y = new long[GLOBAL_BATCH];
    for (int i = 0; i < GLOBAL_BATCH; i++) {
      for (int f = 0; f < features; f++) x[i * features + f] = (float) r.nextGaussian();
      double best = Double.NEGATIVE_INFINITY;
      for (int c = 0; c < CLASSES; c++) {
        double s = 0;
        for (int f = 0; f < features; f++) s += x[i * features + f] * Math.sin(1 + c * 7 + f * 3);
        if (s > best) {
          best = s;
          y[i] = c;
        }
      }
    }
    return new Tensor[] {Tensor.of(x, GLOBAL_BATCH, features), Tensor.of(y, GLOBAL_BATCH)};
  }

  /** Rows {@code [from, from + n)} of a batch. */
  static Tensor[] rows(Tensor[] b, int from, int n) {
    return new Tensor[] {b[0].narrow(0, from, n).contiguous(), b[1].narrow(0, from, n).contiguous()};
  }

  static List<float[]> values(Module m) {
    List<float[]> out = new ArrayList<>();
    for (Tensor p : m.parameters()) out.add(p.toFloatArray());
    return out;
  }

  /** One process at the global batch: the reference. */
  static List<float[]> reference(Supplier<Module> model) {
    return reference(model, FEATURES);
  }

  static List<float[]> reference(Supplier<Module> model, int features) {
    Module m = model.get();
    SGD opt = new SGD(m.parameters(), LR);
    for (int s = 0; s < STEPS; s++) {
      Tensor[] b = batch(s, features);
      opt.zeroGrad();
      F.crossEntropy(m.forward(b[0]), b[1]).backward();
      opt.step();
    }
    return values(m);
  }

  interface RankStep {
    void run(DistributedDataParallel ddp, SGD opt, Tensor[] shard, int step);
  }

  /**
   * Trains {@code models.get(r)} on rank r (a thread) for {@link #STEPS} steps, rank r taking rows
   * {@code [r * 64, r * 64 + 64)} of each global batch; returns each rank's final parameters.
   */
  static List<List<float[]>> ddp(List<Module> models, long bucketBytes, RankStep step) throws Exception {
    return ddp(models, bucketBytes, step, FEATURES);
  }

  static List<List<float[]>> ddp(List<Module> models, long bucketBytes, RankStep step, int features)
      throws Exception {
    int world = models.size();
    int shard = GLOBAL_BATCH / world;
    List<Object> results = ProcessGroupTest.inThreads(world, Duration.ofSeconds(60),
        g -> trainRank(g, models.get(g.rank()), bucketBytes, step, features));
    List<List<float[]>> out = new ArrayList<>();
    for (int r = 0; r < world; r++) {
      Object o = results.get(r);
      if (o instanceof Throwable t) throw new AssertionError("rank " + r + " failed", t);
      @SuppressWarnings("unchecked") List<float[]> v = (List<float[]>) o;
      out.add(v);
    }
    return out;
  }

  /** This rank's part of {@link #ddp}: {@link #STEPS} steps on its rows of each global batch; its final parameters. */
  static List<float[]> trainRank(ProcessGroup g, Module model, long bucketBytes, RankStep step, int features) {
    int shard = GLOBAL_BATCH / g.worldSize();
    DistributedDataParallel ddp = new DistributedDataParallel(model, g, bucketBytes);
    SGD opt = new SGD(ddp.parameters(), LR);
    for (int s = 0; s < STEPS; s++) {
      opt.zeroGrad();
      step.run(ddp, opt, rows(batch(s, features), g.rank() * shard, shard), s);
      opt.step();
    }
    return values(ddp.module());
  }

  /** SHA-256 of the parameters' float bits, in hex. */
  static String digest(List<float[]> params) throws Exception {
    java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
    for (float[] p : params) {
      java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(p.length * 4);
      for (float v : p) b.putInt(Float.floatToRawIntBits(v));
      md.update(b.array());
    }
    return java.util.HexFormat.of().formatHex(md.digest());
  }

  static final RankStep PLAIN = (ddp, opt, b, s) -> F.crossEntropy(ddp.forward(b[0]), b[1]).backward();

  /** Rank 1 starts from other weights: the constructor's broadcast must replace them by rank 0's. */
  static List<Module> twoReplicas() {
    return List.of(mlp(0), mlp(99));
  }

  /** max |a - b| / max |b| over each tensor, the largest over the tensors. */
  static double relativeError(List<float[]> a, List<float[]> b) {
    double worst = 0;
    for (int i = 0; i < b.size(); i++) {
      double diff = 0;
      double scale = 0;
      for (int j = 0; j < b.get(i).length; j++) {
        diff = Math.max(diff, Math.abs(a.get(i)[j] - b.get(i)[j]));
        scale = Math.max(scale, Math.abs(b.get(i)[j]));
      }
      worst = Math.max(worst, diff / scale);
    }
    return worst;
  }

  static void assertBitwise(List<float[]> a, List<float[]> b, String what) {
    assertEquals(a.size(), b.size(), what);
    for (int i = 0; i < a.size(); i++) assertArrayEquals(a.get(i), b.get(i), what + ": parameter " + i);
  }

  @Test
  void twoRanksAtBatch64EqualOneProcessAtBatch128AndTwoRunsAreBitwiseIdentical() throws Exception {
    List<float[]> ref = reference(() -> mlp(0));
    List<List<float[]>> run1 = ddp(twoReplicas(), DistributedDataParallel.DEFAULT_BUCKET_BYTES, PLAIN);
    assertBitwise(run1.get(0), run1.get(1), "the replicas after 50 steps");
    double err = relativeError(run1.get(0), ref);
    assertTrue(err < 1e-6, "relative error against batch 128 in one process: " + err);
    assertTrue(relativeError(values(mlp(0)), ref) > 1e-2, "the reference trained"); // the test compares trained weights
    List<List<float[]>> run2 = ddp(twoReplicas(), DistributedDataParallel.DEFAULT_BUCKET_BYTES, PLAIN);
    assertBitwise(run1.get(0), run2.get(0), "two 2-rank runs");
  }

  static Module lenet(long seed) {
    Generator.manualSeed(seed);
    return new Sequential(new Unflatten(1, 1, 28, 28), Models.lenet5(CLASSES));
  }

  @Test
  void leNet5OnTwoRanksAtBatch64EqualsOneProcessAtBatch128() throws Exception {
    List<float[]> ref = reference(() -> lenet(0), 784);
    // 64 KiB buckets: the 400x120 weight alone, the rest in a few buckets started during backward
    List<List<float[]>> run = ddp(List.of(lenet(0), lenet(3)), 64 * 1024, PLAIN, 784);
    assertBitwise(run.get(0), run.get(1), "the replicas after 50 steps");
    double err = relativeError(run.get(0), ref);
    assertTrue(err < 1e-6, "relative error against batch 128 in one process: " + err);
    assertTrue(relativeError(values(lenet(0)), ref) > 1e-2, "the reference trained");
  }

  @Test
  void bucketsSmallerThanOneLayerGiveTheSameWeights() throws Exception {
    List<List<float[]>> big = ddp(twoReplicas(), DistributedDataParallel.DEFAULT_BUCKET_BYTES, PLAIN);
    // 1 KiB: smaller than every weight matrix, so each parameter is a bucket of its own (six buckets)
    List<Object> buckets = ProcessGroupTest.inThreads(1, Duration.ofSeconds(10), g -> {
      DistributedDataParallel d = new DistributedDataParallel(mlp(0), g, 1024);
      List<List<String>> names = new ArrayList<>();
      for (int i = 0; i < d.bucketCount(); i++) names.add(d.bucketParameters(i));
      return names;
    });
    assertEquals("[[5.bias], [5.weight], [3.bias], [3.weight], [1.bias], [1.weight]]", buckets.get(0).toString());
    List<List<float[]>> small = ddp(twoReplicas(), 1024, PLAIN);
    // world size 2 sums a + b for each element whatever the buffer's length, so the bits do not depend on bucketing
    assertBitwise(big.get(0), small.get(0), "default buckets against 1 KiB buckets");
    assertBitwise(small.get(0), small.get(1), "the replicas");
  }

  @Test
  void bucketsAreFilledInReverseRegistrationOrderUpToTheCap() throws Exception {
    List<Object> r = ProcessGroupTest.inThreads(1, Duration.ofSeconds(10), g -> {
      // weights 128x64 (32 KiB), 64x128 (32 KiB), 10x64 (2.5 KiB): the last layer and 3.bias take 2.8 KiB, so the
      // 64x128 weight starts the next bucket of 34 KiB, which 1.weight would overflow
      DistributedDataParallel d = new DistributedDataParallel(mlp(0), g, 34 * 1024);
      List<List<String>> names = new ArrayList<>();
      for (int i = 0; i < d.bucketCount(); i++) names.add(d.bucketParameters(i));
      return names;
    });
    assertEquals("[[5.bias, 5.weight, 3.bias], [3.weight, 1.bias], [1.weight]]", r.get(0).toString());
  }

  @Test
  void eachBucketsAllreduceStartsWhileBackwardStillRuns() throws Exception {
    List<Module> models = twoReplicas();
    List<Object> r = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(models.get(g.rank()), g, 1024); // a bucket each
      List<Integer> started = new ArrayList<>();
      // registered after DDP's hook: runs once the middle layer's weight gradient is in, before layer 1's exist
      ddp.module().child("3").param("weight").registerPostAccumulateGradHook(t -> started.add(ddp.startedBuckets()));
      Tensor[] b = rows(batch(0), g.rank() * 64, 64);
      F.crossEntropy(ddp.forward(b[0]), b[1]).backward();
      return started;
    });
    for (Object o : r) {
      @SuppressWarnings("unchecked") List<Integer> started = (List<Integer>) o;
      assertEquals(1, started.size());
      // the last layer's two buckets (and maybe 3.bias's and 3.weight's) have started; layer 1's two have not
      assertTrue(started.get(0) >= 2 && started.get(0) <= 4, "buckets started: " + started);
    }
  }

  @Test
  void noSyncAccumulationEqualsTheSyncedResult() throws Exception {
    List<float[]> ref = reference(() -> mlp(0));
    // each rank's 64 rows in two micro-batches of 32, each loss halved: the first backward accumulates locally
    RankStep accumulate = (ddp, opt, b, s) -> {
      Tensor[] first = rows(b, 0, 32);
      Tensor[] second = rows(b, 32, 32);
      try (var ignored = ddp.noSync()) {
        F.crossEntropy(ddp.forward(first[0]), first[1]).mul(0.5).backward();
      }
      F.crossEntropy(ddp.forward(second[0]), second[1]).mul(0.5).backward();
    };
    List<List<float[]>> run = ddp(twoReplicas(), DistributedDataParallel.DEFAULT_BUCKET_BYTES, accumulate);
    assertBitwise(run.get(0), run.get(1), "the replicas");
    double err = relativeError(run.get(0), ref);
    assertTrue(err < 1e-6, "relative error against batch 128 in one process: " + err);
  }

  @Test
  void insideNoSyncGradientsStayLocal() throws Exception {
    List<Module> models = twoReplicas();
    List<Object> r = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(models.get(g.rank()), g);
      Tensor[] b = rows(batch(0), g.rank() * 64, 64);
      try (var ignored = ddp.noSync()) {
        F.crossEntropy(ddp.forward(b[0]), b[1]).backward();
      }
      float[] local = ddp.module().parameters().get(0).grad().toFloatArray();
      float[] all = g.allGather(local);
      ddp.finish(); // nothing to finish
      return !Arrays.equals(Arrays.copyOfRange(all, 0, local.length), Arrays.copyOfRange(all, local.length, all.length));
    });
    assertEquals(List.of(true, true), r);
  }

  @Test
  void theConstructorGivesEveryRankRank0sParameters() throws Exception {
    List<Module> models = twoReplicas();
    List<float[]> rank0 = values(mlp(0));
    List<Object> r = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      new DistributedDataParallel(models.get(g.rank()), g);
      return values(models.get(g.rank()));
    });
    @SuppressWarnings("unchecked") List<float[]> v1 = (List<float[]>) r.get(1);
    assertBitwise(rank0, v1, "rank 1 after construction");
  }

  @Test
  void batchNormBuffersComeFromRank0AtEveryForward() throws Exception {
    List<Module> models = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      Generator.manualSeed(r);
      models.add(new Sequential(new Linear(FEATURES, 32), new BatchNorm1d(32), new ReLU(), new Linear(32, CLASSES)));
    }
    List<Object> r = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(models.get(g.rank()), g);
      SGD opt = new SGD(ddp.parameters(), LR);
      for (int s = 0; s < 3; s++) { // the ranks' batches differ, so would their running statistics
        Tensor[] b = rows(batch(s), g.rank() * 64, 64);
        opt.zeroGrad();
        F.crossEntropy(ddp.forward(b[0]), b[1]).backward();
        opt.step();
      }
      float[] localMean = ddp.module().child("1").buffer("running_mean").toFloatArray();
      ddp.eval();
      Tensor out;
      try (Grad ignored = Grad.off()) {
        out = ddp.forward(rows(batch(9), 0, 8)[0]);
      }
      return new Object[] {localMean, ddp.module().child("1").buffer("running_mean").toFloatArray(),
          ddp.module().child("1").buffer("num_batches_tracked").toLongArray(), out.toFloatArray()};
    });
    Object[] r0 = ok(r, 0);
    Object[] r1 = ok(r, 1);
    assertFalse(Arrays.equals((float[]) r0[0], (float[]) r1[0]), "after its own forward each rank has its own statistics");
    assertArrayEquals((float[]) r0[0], (float[]) r1[1], "the eval forward starts from rank 0's running mean");
    assertArrayEquals(new long[] {3}, (long[]) r1[2]);
    assertArrayEquals((float[]) r0[3], (float[]) r1[3], "so both ranks' eval outputs are the same bits");
  }

  @Test
  void finishCompletesABackwardThatLeftAParameterWithoutGradient() throws Exception {
    List<Module> models = List.of(new Branches(0), new Branches(5));
    List<Object> r = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(models.get(g.rank()), g, 16);
      Branches m = (Branches) ddp.module();
      m.useSecond = g.rank() == 1; // rank 0 leaves the second branch without gradient
      ddp.forward(Tensor.of(new float[] {1, 2, 3, 4}, 1, 4)).sum().backward();
      Tensor second = m.second.param("weight");
      boolean missingBeforeFinish = g.rank() == 0 && second.grad() == null;
      ddp.finish();
      ddp.finish(); // idempotent
      return new Object[] {missingBeforeFinish, m.first.param("weight").grad().toFloatArray(), second.grad().toFloatArray()};
    });
    Object[] r0 = ok(r, 0);
    Object[] r1 = ok(r, 1);
    assertTrue((Boolean) r0[0]);
    assertArrayEquals((float[]) r0[1], (float[]) r1[1]);
    assertArrayEquals((float[]) r0[2], (float[]) r1[2]);
    assertArrayEquals(new float[] {0.5f, 1, 1.5f, 2}, (float[]) r0[2], "rank 1's gradient averaged with rank 0's zeros");
  }

  @Test
  void aForwardBeforeAnUnfinishedReductionSaysToCallFinish() throws Exception {
    List<Object> r = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(new Branches(0), g, 16); // a bucket per weight
      Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 1, 4);
      ddp.forward(x).sum().backward(); // the second branch unused on both ranks: its bucket never starts
      IllegalStateException e = null;
      try {
        ddp.forward(x);
      } catch (IllegalStateException ex) {
        e = ex;
      }
      ddp.finish();
      ddp.forward(m -> m.forward(x)).sum().backward(); // works again; the form for modules with several inputs
      ddp.finish();
      return e;
    });
    IllegalStateException e = assertInstanceOf(IllegalStateException.class, r.get(0));
    assertTrue(e.getMessage().contains("gave gradients to 1 of 2 parameters and started 0 of 2 gradient buckets;"
        + " call finish() before the optimizer step"), e.getMessage());
    assertInstanceOf(IllegalStateException.class, r.get(1));
  }

  /** README's data-parallel block, line for line (fromEnv given the variables; 1 epoch of 256 samples instead of 5). */
  @Test
  void readmeSnippetTrainsEachRanksShardIntoIdenticalReplicas() throws Exception {
    Tensor[] data = batch(0, 784);
    Tensor[] more = batch(1, 784);
    TensorDataset train = new TensorDataset(Tensor.cat(List.of(data[0], more[0]), 0), Tensor.cat(List.of(data[1], more[1]), 0));
    int port = ProcessGroupTest.freePort();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<List<float[]>>> fs = new ArrayList<>();
      for (int rank = 0; rank < 2; rank++) {
        Map<String, String> env = Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + port, "RANK", "" + rank,
            "WORLD_SIZE", "2");
        fs.add(pool.submit(() -> {
          List<float[]> result;
          try (ProcessGroup group = ProcessGroup.fromEnv(env)) {                       // README: fromEnv()
            Generator.manualSeed(0);                                 // any seed: the constructor broadcasts rank 0's weights
            DistributedDataParallel model = new DistributedDataParallel(Models.mlp(784, 256, 10), group);
            SGD opt = new SGD(model.parameters(), 0.1);
            DistributedSampler sampler = new DistributedSampler(train.size(), group, true, 42, false);
            for (int epoch = 0; epoch < 1; epoch++) {                                  // README: 5
              sampler.setEpoch(epoch);                               // this rank's shard of the epoch's permutation
              try (DataLoader loader = new DataLoader(sampler.shard(train), BatchConfig.sequential(64))) {
                for (Batch b : loader) {
                  opt.zeroGrad();
                  F.crossEntropy(model.forward(b.input()), b.target()).backward();  // gradients averaged over the ranks
                  opt.step();
                }
              }
            }
            result = values(model.module());
          }
          return result;
        }));
      }
      assertBitwise(fs.get(0).get(120, TimeUnit.SECONDS), fs.get(1).get(120, TimeUnit.SECONDS), "the replicas");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void frozenHalfPrecisionParametersAreBroadcastToo() throws Exception {
    List<Module> models = List.of(mlp(0).to(DType.BF16).requiresGrad(false), mlp(99).to(DType.BF16).requiresGrad(false));
    List<float[]> rank0 = values(models.get(0));
    List<Object> r = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(models.get(g.rank()), g);
      assertEquals(0, ddp.bucketCount()); // nothing to train, nothing to reduce
      return values(ddp.module());
    });
    if (r.get(1) instanceof Throwable t) throw new AssertionError(t);
    @SuppressWarnings("unchecked") List<float[]> v1 = (List<float[]>) r.get(1);
    assertBitwise(rank0, v1, "rank 1's frozen BF16 weights");
  }

  @Test
  void badArgumentsAreNamed() throws Exception {
    List<Object> r = ProcessGroupTest.inThreads(1, Duration.ofSeconds(10), g -> {
      IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
          () -> new DistributedDataParallel(mlp(0), g, 0));
      assertEquals("DistributedDataParallel: bucketBytes must be positive, got 0", size.getMessage());
      IllegalArgumentException half = assertThrows(IllegalArgumentException.class,
          () -> new DistributedDataParallel(mlp(0).to(DType.F16), g));
      assertEquals("DistributedDataParallel: parameter '1.weight' is F16; gradients are reduced in float32 or float64"
          + " only", half.getMessage());
      return null;
    });
    assertEquals(java.util.Collections.singletonList(null), r);
  }

  static Object[] ok(List<Object> results, int rank) {
    if (results.get(rank) instanceof Throwable t) throw new AssertionError("rank " + rank + " failed", t);
    return (Object[]) results.get(rank);
  }

  /** Two Linear(4, 1) without bias; the second is used only when {@code useSecond}. */
  static final class Branches extends Module {
    final Linear first;
    final Linear second;
    boolean useSecond;

    Branches(long seed) {
      Generator.manualSeed(seed);
      first = registerModule("first", new Linear(4, 1, false));
      second = registerModule("second", new Linear(4, 1, false));
    }

    @Override
    public Tensor forward(Tensor x) {
      Tensor y = first.forward(x);
      return useSecond ? y.add(second.forward(x)) : y;
    }
  }
}
