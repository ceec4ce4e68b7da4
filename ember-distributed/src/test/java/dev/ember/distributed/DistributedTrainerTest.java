package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.BatchConfig;
import dev.ember.data.BatchSource;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.tensor.Tensor;
import dev.ember.train.Callback;
import dev.ember.train.History;
import dev.ember.train.TrainContext;
import dev.ember.train.Trainer;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code Trainer.builder().distributed(group)} on ranks that are threads of this JVM, against one process. */
class DistributedTrainerTest {
  static final int SAMPLES = 640;

  /** 640 samples of {@link DistributedDataParallelTest#FEATURES} features labelled by its teacher. */
  static TensorDataset data() {
    List<Tensor> xs = new ArrayList<>();
    List<Tensor> ys = new ArrayList<>();
    for (int s = 0; s < SAMPLES / DistributedDataParallelTest.GLOBAL_BATCH; s++) {
      Tensor[] b = DistributedDataParallelTest.batch(s);
      xs.add(b[0]);
      ys.add(b[1]);
    }
    return new TensorDataset(Tensor.cat(xs, 0), Tensor.cat(ys, 0));
  }

  record Result(List<float[]> params, History history) {}

  /** Trains the MLP of seed 0 for {@code epochs} on {@code loader} with the builder as {@code configure} leaves it. */
  static Result train(Module model, BatchSource loader, int epochs, Trainer.Builder builder) {
    SGD opt = new SGD(model.parameters(), Map.of("lr", 0.05, "momentum", 0.9));
    History h = builder.maxEpochs(epochs).metrics(new Accuracy()).build().fit(model, F::crossEntropy, opt, loader, null);
    return new Result(DistributedDataParallelTest.values(model), h);
  }

  static List<Result> ranks(int world, java.util.function.BiFunction<ProcessGroup, Module, Result> body) throws Exception {
    List<Module> models = new ArrayList<>();
    for (int r = 0; r < world; r++) models.add(DistributedDataParallelTest.mlp(r == 0 ? 0 : 50 + r)); // rank 0's wins
    List<Object> out = ProcessGroupTest.inThreads(world, Duration.ofSeconds(60), g -> body.apply(g, models.get(g.rank())));
    List<Result> results = new ArrayList<>();
    for (int r = 0; r < world; r++) {
      if (out.get(r) instanceof Throwable t) throw new AssertionError("rank " + r + " failed", t);
      results.add((Result) out.get(r));
    }
    return results;
  }

  static double relative(double[] a, double[] b) {
    double num = 0;
    double den = 0;
    for (int i = 0; i < a.length; i++) {
      num = Math.max(num, Math.abs(a[i] - b[i]));
      den = Math.max(den, Math.abs(b[i]));
    }
    return num / den;
  }

  @Test
  void twoRanksAtBatch32TrainAsOneProcessAtBatch64() throws Exception {
    TensorDataset data = data();
    Result ref = train(DistributedDataParallelTest.mlp(0), new DataLoader(data, BatchConfig.shuffled(64, 7)), 2,
        Trainer.builder());
    List<Result> run = ranks(2, (g, m) -> train(m, new DataLoader(data, BatchConfig.shuffled(32, 7)), 2,
        Trainer.builder().distributed(g)));
    for (int i = 0; i < ref.params().size(); i++) {
      assertArrayEquals(run.get(0).params().get(i), run.get(1).params().get(i), "the ranks' weights are the same bits");
    }
    double err = DistributedDataParallelTest.relativeError(run.get(0).params(), ref.params());
    assertTrue(err < 1e-6, "relative error against batch 64 in one process: " + err);
    assertTrue(DistributedDataParallelTest.relativeError(DistributedDataParallelTest.values(DistributedDataParallelTest.mlp(0)),
        ref.params()) > 1e-2, "the reference trained");
    for (Result r : run) {
      assertTrue(relative(r.history().values("loss"), ref.history().values("loss")) < 1e-6,
          "the epoch losses are the global batch's");
      assertArrayEquals(ref.history().values("accuracy"), r.history().values("accuracy"),
          "the accuracy counts every rank's samples");
    }
  }

  @Test
  void gradientAccumulationSynchronizesOncePerStep() throws Exception {
    TensorDataset data = data();
    Result ref = train(DistributedDataParallelTest.mlp(0), new DataLoader(data, BatchConfig.shuffled(32, 3)), 1,
        Trainer.builder().accumulate(2));
    List<Result> run = ranks(2, (g, m) -> train(m, new DataLoader(data, BatchConfig.shuffled(16, 3)), 1,
        Trainer.builder().distributed(g).accumulate(2)));
    double err = DistributedDataParallelTest.relativeError(run.get(0).params(), ref.params());
    assertTrue(err < 1e-6, "relative error against one process: " + err);
  }

  @Test
  void rankZeroWritesTheCheckpointsAndARunResumedFromOneEndsWhereTheUninterruptedRunDid(@TempDir Path tmp)
      throws Exception {
    TensorDataset data = data();
    List<Result> full = ranks(2, (g, m) -> train(m, new DataLoader(data, BatchConfig.shuffled(32, 7)), 2,
        Trainer.builder().distributed(g)));
    Path dir = tmp.resolve("ckpt");
    // every rank has the checkpoint callback: rank 0 alone writes
    ranks(2, (g, m) -> train(m, new DataLoader(data, BatchConfig.shuffled(32, 7)), 1,
        Trainer.builder().distributed(g).callbacks(new ModelCheckpoint(dir, 1, 3, 10))));
    Optional<Path> mid;
    try (var files = Files.list(dir)) {
      assertEquals(4, files.count(), "steps 3, 6, 9 and the epoch's 10 once each, and no temporary files");
    }
    mid = Optional.of(dir.resolve("step-00000006.ckpt"));
    assertTrue(Files.exists(mid.get()));
    List<Result> resumed = ranks(2, (g, m) -> train(m, new DataLoader(data, BatchConfig.shuffled(32, 7)), 2,
        Trainer.builder().distributed(g).resumeFrom(mid.get())));
    for (int r = 0; r < 2; r++) {
      for (int i = 0; i < full.get(0).params().size(); i++) {
        assertArrayEquals(full.get(0).params().get(i), resumed.get(r).params().get(i), "rank " + r + ", parameter " + i);
      }
      assertArrayEquals(full.get(0).history().values("loss"), resumed.get(r).history().values("loss"));
      assertArrayEquals(full.get(0).history().values("accuracy"), resumed.get(r).history().values("accuracy"));
    }
  }

  @Test
  void aStopAskedForOnOneRankStopsEveryRankAtTheSameStep() throws Exception {
    TensorDataset data = data();
    List<Result> run = ranks(2, (g, m) -> {
      Trainer.Builder b = Trainer.builder().distributed(g);
      if (g.rank() == 1) {
        b.callbacks(new Callback() {
          @Override
          public void onBatchEnd(TrainContext ctx, dev.ember.data.Batch batch, double loss) {
            if (ctx.globalStep() == 4) ctx.requestStop("enough");
          }
        });
      }
      return train(m, new DataLoader(data, BatchConfig.shuffled(32, 7)), 3, b);
    });
    for (Result r : run) assertArrayEquals(new double[] {4}, r.history().values("stopped_at_step"));
  }

  @Test
  void distributedTrainingNeedsADataLoaderAndEagerSteps() throws Exception {
    List<Object> out = ProcessGroupTest.inThreads(1, Duration.ofSeconds(30), g -> {
      BatchSource notALoader = new BatchSource() {
        @Override
        public int numBatches() {
          return 1;
        }

        @Override
        public dev.ember.data.BatchIterator iterate(int epoch, int skipBatches) {
          throw new AssertionError("not iterated");
        }
      };
      Module m = DistributedDataParallelTest.mlp(0);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Trainer.builder().distributed(g)
          .build().fit(m, F::crossEntropy, new SGD(m.parameters(), 0.1), notALoader, null));
      assertTrue(e.getMessage().startsWith("Trainer.fit: distributed training shards a DataLoader's epochs"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class, () -> Trainer.builder().distributed(g).compile(true).build());
      assertTrue(e.getMessage().contains("compile(true)"), e.getMessage());
      return null;
    });
    if (out.get(0) != null) throw new AssertionError(out.get(0));
  }
}
