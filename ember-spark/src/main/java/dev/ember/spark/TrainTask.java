package dev.ember.spark;

import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.distributed.AllReduceOp;
import dev.ember.distributed.DistributedDataParallel;
import dev.ember.distributed.DistributedSampler;
import dev.ember.distributed.ProcessGroup;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Optimizer;
import dev.ember.optim.OptimizerState;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import dev.ember.train.Checkpoint;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.BarrierTaskContext;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The body of one task of {@link SparkTrainer}'s barrier stage, that is one rank: it publishes its address with
 * {@link BarrierTaskContext#allGather}, joins the {@link ProcessGroup} at rank 0's, assembles the training set,
 * resumes from the newest checkpoint if there is one, trains with {@link DistributedDataParallel} on its
 * {@link DistributedSampler} shard of each epoch, has rank 0 write a checkpoint after every epoch, and returns
 * (rank 0 only) the final state.
 */
final class TrainTask<T> extends AbstractFunction1<Iterator<T>, Iterator<TrainTask.Result>> implements Serializable {
  private static final long serialVersionUID = 1L;
  /** Rows per rank in one allgather while assembling the data set: bounds the extra memory. */
  static final int GATHER_ROWS = 2048;
  /** Serializes model construction in a JVM (local mode runs several ranks in one), as it draws from the global generator. */
  private static final Object MODEL_LOCK = new Object();

  /** The run's settings, as the driver resolved them. */
  record Plan(int worldSize, int epochs, int batchSize, long seed, boolean shuffle, Duration timeout, CheckpointStore store,
      SparkTrainer.ModelFactory model, SparkTrainer.OptimizerFactory optimizer, SparkTrainer.EpochListener listener,
      SparkTrainer.LearningRates learningRates) implements Serializable {}

  /** What a rank hands back: rank 0 the final state as checkpoint bytes ({@code model}, {@code history}), others null. */
  record Result(int rank, int stageAttempt, int resumedFrom, byte[] state) implements Serializable {}

  /**
   * A row of the training set on its way to the tasks: where it is in the Dataset (its partition and its position
   * there, which give its index once the partitions' sizes are known), its features and its label.
   */
  record Example(int partition, int position, float[] features, double label) implements Serializable {}

  /** How a rank gets the whole training set from its part of the barrier stage's input. */
  sealed interface Source extends Serializable permits Gather, Read {}

  /**
   * Every rank holds some rows (as {@link Example}s) of the Dataset's {@code partitions}; an allgather over the group
   * gives each all {@code count}.
   */
  record Gather(long count, int partitions, int[] featureShape) implements Source {}

  /** Every rank reads the data itself; its part of the input is ignored. */
  record Read(String path, SparkData.Reader reader) implements Source {}

  private final Plan plan;
  private final Source source;

  TrainTask(Plan plan, Source source) {
    this.plan = plan;
    this.source = source;
  }

  @Override
  public Iterator<Result> apply(Iterator<T> part) {
    BarrierTaskContext ctx = BarrierTaskContext.get();
    int rank = ctx.partitionId();
    int world = plan.worldSize();
    String host = host(ctx.getTaskInfos()[rank].address());
    String mine = host + ":" + (rank == 0 ? freePort(host) : 0);
    String[] all = ctx.allGather(mine);               // ordered by partition, so all[0] is rank 0's
    InetSocketAddress master = address(all[0]);
    try (ProcessGroup group = ProcessGroup.connect(rank, world, master, plan.timeout())) {
      TensorDataset train = load(part, group);
      Result r = train(group, train, ctx.stageAttemptNumber());
      return CollectionConverters.asScala(List.of(r).iterator());
    } catch (IOException e) {
      throw new UncheckedIOException("SparkTrainer: rank " + rank + ": " + e.getMessage(), e);
    }
  }

  // ------------------------------------------------------------------ the data

  private TensorDataset load(Iterator<T> part, ProcessGroup group) throws IOException {
    return switch (source) {
      case Gather g -> gather(part, group, g);
      case Read r -> {
        TensorDataset d = r.reader().read(r.path());
        if (d == null) throw new IllegalStateException("SparkTrainer: the reader of '" + r.path() + "' returned null");
        double[] sizes = group.allGather(new double[] {d.size()});
        for (int k = 0; k < sizes.length; k++) {
          if (sizes[k] != d.size()) {
            throw new IllegalStateException("SparkTrainer: rank " + group.rank() + " read " + d.size() + " samples from '"
                + r.path() + "' but rank " + k + " read " + (long) sizes[k] + "; every worker must see the same data");
          }
        }
        yield d;
      }
    };
  }

  /**
   * Assembles the rows spread over the ranks: an allgather of every row's (partition, position, label) gives each
   * rank the partitions' sizes and so every row's index (the rows of partition 0 first, each partition in its own
   * order); then, in rounds of {@link #GATHER_ROWS} rows per rank, an allgather of the features, which each rank puts
   * at their rows' indices.
   */
  private static <T> TensorDataset gather(Iterator<T> part, ProcessGroup group, Gather g) {
    int d = 1;
    for (int s : g.featureShape()) d = Math.multiplyExact(d, s);
    int n = Math.toIntExact(g.count());
    List<Example> mine = new ArrayList<>();
    while (part.hasNext()) mine.add((Example) part.next());
    double[] counts = group.allGather(new double[] {mine.size()});
    int most = 0;
    long total = 0;
    for (double c : counts) {
      most = Math.max(most, (int) c);
      total += (long) c;
    }
    if (total != n) {
      throw new IllegalStateException("SparkTrainer: the ranks hold " + total + " rows together, the Dataset had " + n
          + " when counted; hint: the Dataset must give the same rows every time it is computed");
    }
    double[] meta = new double[3 * most];
    Arrays.fill(meta, -1);
    for (int j = 0; j < mine.size(); j++) {
      Example e = mine.get(j);
      meta[3 * j] = e.partition();
      meta[3 * j + 1] = e.position();
      meta[3 * j + 2] = e.label();
    }
    double[] all = group.allGather(meta);
    long[] offset = new long[g.partitions() + 1];
    for (int k = 0; k < all.length; k += 3) {
      if (all[k] >= 0) offset[(int) all[k] + 1] = Math.max(offset[(int) all[k] + 1], (long) all[k + 1] + 1);
    }
    for (int p = 0; p < g.partitions(); p++) offset[p + 1] += offset[p];
    if (offset[g.partitions()] != n) {
      throw new IllegalStateException("SparkTrainer: the Dataset's partitions end at row " + offset[g.partitions()]
          + " but hold " + n + " rows; hint: the Dataset must give the same rows every time it is computed");
    }
    int[] index = new int[all.length / 3];            // row k of the gathered order -> its index (-1: padding)
    long[] y = new long[n];
    boolean[] seen = new boolean[n];
    for (int k = 0; k < index.length; k++) {
      index[k] = -1;
      if (all[3 * k] < 0) continue;
      int i = (int) (offset[(int) all[3 * k]] + (long) all[3 * k + 1]);
      if (seen[i]) {
        throw new IllegalStateException("SparkTrainer: row " + i + " came twice; hint: the Dataset must give the same rows"
            + " every time it is computed");
      }
      seen[i] = true;
      index[k] = i;
      y[i] = (long) all[3 * k + 2];
    }
    float[] x = new float[Math.multiplyExact(n, d)];
    for (int from = 0; from < most; from += GATHER_ROWS) {
      int rows = Math.min(GATHER_ROWS, most - from);
      float[] fx = new float[rows * d];
      for (int j = 0; j < rows && from + j < mine.size(); j++) {
        System.arraycopy(mine.get(from + j).features(), 0, fx, j * d, d);
      }
      float[] ax = group.allGather(fx);
      for (int r = 0; r < group.worldSize(); r++) {
        for (int j = 0; j < rows; j++) {
          int i = index[r * most + from + j];
          if (i >= 0) System.arraycopy(ax, (r * rows + j) * d, x, i * d, d);
        }
      }
    }
    int[] shape = new int[g.featureShape().length + 1];
    shape[0] = n;
    System.arraycopy(g.featureShape(), 0, shape, 1, g.featureShape().length);
    return new TensorDataset(TensorData.wrap(x, shape), TensorData.wrap(y, n));
  }

  // ------------------------------------------------------------------ training

  @SuppressWarnings("unchecked")
  private Result train(ProcessGroup group, TensorDataset train, int stageAttempt) throws IOException {
    int rank = group.rank();
    Module model;
    synchronized (MODEL_LOCK) {
      Generator.manualSeed(plan.seed());
      model = plan.model().create();
    }
    if (model == null) throw new IllegalStateException("SparkTrainer: the model factory returned null");
    // Rank 0 picks the checkpoint and tells the others, so that all resume from the same one.
    double[] resume = {-1};
    if (rank == 0 && plan.store() != null) resume[0] = plan.store().latest().orElse(-1);
    group.broadcast(resume, 0);
    int resumedFrom = (int) resume[0];
    Map<String, Object> saved = null;
    if (resumedFrom >= 0) {
      Optional<Map<String, Object>> s = plan.store().read(resumedFrom);
      if (s.isEmpty()) {
        throw new IllegalStateException("SparkTrainer: rank " + rank + " cannot read the checkpoint of epoch " + resumedFrom
            + " in " + plan.store().dir() + " that rank 0 found; hint: the checkpoint directory must be shared by all workers");
      }
      saved = s.get();
      LinkedHashMap<String, Tensor> weights = new LinkedHashMap<>();
      ((Map<String, Object>) saved.get("model")).forEach((k, v) -> weights.put(k, (Tensor) v));
      try (var ignored = Grad.off()) {
        model.loadStateDict(weights);
      }
    }
    DistributedDataParallel ddp = new DistributedDataParallel(model, group);
    Optimizer opt = plan.optimizer().create(model.parameters());
    if (opt == null) throw new IllegalStateException("SparkTrainer: the optimizer factory returned null");
    List<SparkTrainingResult.Epoch> history = new ArrayList<>();
    if (saved != null) {
      opt.loadStateDict(optimizerState((Map<String, Object>) saved.get("optimizer")));
      history.addAll(history((List<Object>) saved.get("history")));
    }
    DistributedSampler sampler = new DistributedSampler(train.size(), group, plan.shuffle(), plan.seed(), false);
    ddp.train();
    for (int epoch = resumedFrom + 1; epoch < plan.epochs(); epoch++) {
      if (plan.listener() != null) {
        SparkTrainer.TaskEpoch at = new SparkTrainer.TaskEpoch(rank, group.worldSize(), epoch, stageAttempt);
        try {
          plan.listener().epochStarting(at);
        } catch (RuntimeException | IOException e) {
          throw e;
        } catch (Exception e) {
          throw new IllegalStateException("SparkTrainer: the epoch listener failed on rank " + rank + " at epoch " + epoch
              + ": " + e, e);
        }
      }
      if (plan.learningRates() != null) {
        double lr = plan.learningRates().at(epoch);
        if (!(lr >= 0) || Double.isInfinite(lr)) {
          throw new IllegalArgumentException("SparkTrainer: the learning rate of epoch " + epoch + " is " + lr
              + ", expected a finite value >= 0");
        }
        for (var g : opt.paramGroups()) g.setLr(lr);
      }
      sampler.setEpoch(epoch);
      double lossSum = 0;
      double correct = 0;
      double count = 0;
      try (DataLoader loader = new DataLoader(sampler.shard(train), BatchConfig.sequential(plan.batchSize()))) {
        for (Batch b : loader) {
          opt.zeroGrad();
          Tensor out = ddp.forward(b.input());
          Tensor loss = F.crossEntropy(out, b.target());
          loss.backward();
          opt.step();
          int size = b.size();
          try (var ignored = Grad.off()) {
            lossSum += loss.item() * size;
            correct += out.argmax(1, false).eq(b.target()).sum().item();
          }
          count += size;
        }
      }
      double[] sums = {lossSum, correct, count};
      group.allReduce(sums, AllReduceOp.SUM);
      history.add(new SparkTrainingResult.Epoch(epoch, sums[0] / sums[2], sums[1] / sums[2], (long) sums[2]));
      if (rank == 0 && plan.store() != null) plan.store().write(epoch, state(model, opt, history, true));
      group.barrier();                               // no rank starts the next epoch before its checkpoint exists
    }
    byte[] bytes = null;
    if (rank == 0) {
      Path tmp = Files.createTempFile("ember-spark-result-", ".ckpt");
      try {
        Checkpoint.write(tmp, state(model, opt, history, false));
        bytes = Files.readAllBytes(tmp);
      } finally {
        Files.deleteIfExists(tmp);
      }
    }
    return new Result(rank, stageAttempt, resumedFrom, bytes);
  }

  /** A checkpoint's state: the weights, the optimizer (when {@code withOptimizer}) and the history. */
  static Map<String, Object> state(Module model, Optimizer opt, List<SparkTrainingResult.Epoch> history,
      boolean withOptimizer) {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("model", new LinkedHashMap<String, Object>(model.stateDict()));
    if (withOptimizer) {
      OptimizerState os = opt.stateDict();
      LinkedHashMap<String, Object> st = new LinkedHashMap<>();
      for (var e : os.state().entrySet()) st.put(Integer.toString(e.getKey()), new LinkedHashMap<>(e.getValue()));
      LinkedHashMap<String, Object> o = new LinkedHashMap<>();
      o.put("state", st);
      o.put("param_groups", os.paramGroups());
      s.put("optimizer", o);
    }
    List<Object> h = new ArrayList<>();
    for (SparkTrainingResult.Epoch e : history) {
      LinkedHashMap<String, Object> m = new LinkedHashMap<>();
      m.put("epoch", e.epoch());
      m.put("loss", e.loss());
      m.put("accuracy", e.accuracy());
      m.put("samples", e.samples());
      h.add(m);
    }
    s.put("history", h);
    return s;
  }

  @SuppressWarnings("unchecked")
  private static OptimizerState optimizerState(Map<String, Object> o) {
    LinkedHashMap<Integer, Map<String, Tensor>> st = new LinkedHashMap<>();
    ((Map<String, Object>) o.get("state")).forEach((k, v) -> {
      LinkedHashMap<String, Tensor> m = new LinkedHashMap<>();
      ((Map<String, Object>) v).forEach((kk, vv) -> m.put(kk, (Tensor) vv));
      st.put(Integer.parseInt(k), m);
    });
    return new OptimizerState(st, (List<Map<String, Object>>) o.get("param_groups"));
  }

  @SuppressWarnings("unchecked")
  static List<SparkTrainingResult.Epoch> history(List<Object> h) {
    List<SparkTrainingResult.Epoch> out = new ArrayList<>();
    for (Object o : h) {
      Map<String, Object> m = (Map<String, Object>) o;
      out.add(new SparkTrainingResult.Epoch(((Number) m.get("epoch")).intValue(), ((Number) m.get("loss")).doubleValue(),
          ((Number) m.get("accuracy")).doubleValue(), ((Number) m.get("samples")).longValue()));
    }
    return out;
  }

  // ------------------------------------------------------------------ addresses

  /** The host of Spark's {@code host:port} task address (an IPv6 literal may come in brackets). */
  static String host(String address) {
    String a = address.strip();
    int colon = a.lastIndexOf(':');
    String h = colon > 0 && a.indexOf(':') == colon ? a.substring(0, colon) : a;
    if (h.startsWith("[") && h.contains("]")) h = h.substring(1, h.indexOf(']'));
    return h;
  }

  static InetSocketAddress address(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    return new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
  }

  /** A port free at the moment on {@code host}'s interface, for rank 0 to listen at. */
  private static int freePort(String host) {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(host))) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("SparkTrainer: rank 0 finds no free port on " + host + ": " + e.getMessage(), e);
    }
  }
}
