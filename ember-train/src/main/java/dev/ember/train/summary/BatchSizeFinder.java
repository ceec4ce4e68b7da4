package dev.ember.train.summary;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.optim.Optimizer;
import dev.ember.optim.OptimizerState;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.ThreadInfo;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.IntFunction;

/**
 * Finds a training batch size by trying powers of two: after running steps at the start size for
 * a while ({@link #jitWarmup}), for each size from {@link #range start} up to the maximum it runs
 * warm-up and timed training steps (forward, loss, backward, and the
 * optimizer's step when one is given) on random inputs, and records the throughput and the bytes
 * a step allocates. It stops growing when a size exceeds the memory budget, when the sizes so far
 * predict the next one would (a linear fit of bytes against batch size), when an
 * {@link OutOfMemoryError} is thrown (caught; the size is marked as not fitting), or at the maximum.
 * The recommendation is the fitting size with the highest throughput.
 *
 * <pre>{@code
 * BatchSizeResult r = new BatchSizeFinder(model, F::crossEntropy, 1, 28, 28)
 *     .range(8, 1024).memoryBudget(512L << 20).find();
 * r.print(System.out);
 * int batch = r.recommended().orElse(8);
 * }</pre>
 *
 * <p>Memory is the heap bytes allocated during a step, measured per thread with
 * {@code com.sun.management.ThreadMXBean} on the calling thread and Ember's kernel workers: an
 * upper bound on what a step needs live at once (the parameters, gradients and optimizer state
 * already held come on top). The heap's peak use while each size ran is reported beside it.
 *
 * <p>The steps run in training mode. The model's parameters and buffers, its modes, the parameters'
 * gradients, the optimizer's state and the global generator are restored afterwards, so the search
 * leaves no trace (it needs one extra copy of the parameters and buffers meanwhile).
 */
public final class BatchSizeFinder {
  private static final String OP = "BatchSizeFinder";

  private final Module model;
  private final BiFunction<Tensor, Tensor, Tensor> loss;
  private final int[] sampleShape;
  private int start = 1;
  private int max = 1024;
  private int warmupSteps = 2;
  private int steps = 3;
  private long jitWarmupMillis = 500;
  private long budgetBytes = Runtime.getRuntime().maxMemory() / 2;
  private TargetFactory target = TargetFactory.classIndices();
  private IntFunction<Tensor> inputs;
  private Optimizer optimizer;
  private long seed = 0;

  /** Makes the target of a batch from the model's output for it (shape and dtype as the loss wants). */
  @FunctionalInterface
  public interface TargetFactory {
    Tensor make(Tensor output, Generator gen);

    /** Class indices (I64 [N], uniform over [0, C)) for an output [N, C, ...], as cross-entropy takes. */
    static TargetFactory classIndices() {
      return (out, gen) -> {
        if (out.dim() < 2) {
          throw new IllegalArgumentException(OP + ": class-index targets need an output [N, C, ...], got "
              + Arrays.toString(out.shape()));
        }
        int[] shape = new int[out.dim() - 1];
        shape[0] = out.size(0);
        for (int d = 2; d < out.dim(); d++) shape[d - 1] = out.size(d);
        return Tensor.randint(gen, 0, out.size(1), shape).to(out.device());
      };
    }

    /** Standard normal values of the output's shape and dtype, as a regression loss takes. */
    static TargetFactory normalLike() {
      return (out, gen) -> Tensor.randn(gen, out.dtype(), out.shape()).to(out.device());
    }
  }

  /**
   * @param model the model to train
   * @param loss the loss of an output and a target (e.g. {@code F::crossEntropy}); a scalar
   * @param sampleShape the shape of one sample, without the batch dimension
   */
  public BatchSizeFinder(Module model, BiFunction<Tensor, Tensor, Tensor> loss, int... sampleShape) {
    if (model == null || loss == null) throw new IllegalArgumentException(OP + ": model and loss must not be null");
    if (sampleShape == null) throw new IllegalArgumentException(OP + ": sample shape must not be null");
    for (int d : sampleShape) {
      if (d <= 0) throw new IllegalArgumentException(OP + ": sample dimensions must be positive, got " + Arrays.toString(sampleShape));
    }
    this.model = model;
    this.loss = loss;
    this.sampleShape = sampleShape.clone();
  }

  /** The batch sizes to try: {@code start}, {@code 2 * start}, ... up to {@code max} (defaults 1 and 1024). */
  public BatchSizeFinder range(int start, int max) {
    if (start < 1 || max < start) {
      throw new IllegalArgumentException(OP + ": need 1 <= start <= max, got start " + start + ", max " + max);
    }
    this.start = start;
    this.max = max;
    return this;
  }

  /** Untimed steps before the timed ones, for each size (defaults 2 and 3). */
  public BatchSizeFinder steps(int warmupSteps, int timedSteps) {
    if (warmupSteps < 0 || timedSteps < 1) {
      throw new IllegalArgumentException(OP + ": need warmupSteps >= 0 and timedSteps >= 1, got " + warmupSteps + ", "
          + timedSteps);
    }
    this.warmupSteps = warmupSteps;
    this.steps = timedSteps;
    return this;
  }

  /**
   * How long to run training steps at the start size before measuring anything (default 500 ms),
   * so that the first sizes are not timed, nor their allocation counted, while the JIT compiler is
   * still at work: interpreted code runs many times slower and allocates what compiled code keeps
   * in registers. 0 skips it.
   */
  public BatchSizeFinder jitWarmup(long millis) {
    if (millis < 0) throw new IllegalArgumentException(OP + ": JIT warm-up must be >= 0 ms, got " + millis);
    this.jitWarmupMillis = millis;
    return this;
  }

  /** The most bytes a step may allocate (default: half the maximum heap). */
  public BatchSizeFinder memoryBudget(long bytes) {
    if (bytes <= 0) throw new IllegalArgumentException(OP + ": memory budget must be positive, got " + bytes);
    this.budgetBytes = bytes;
    return this;
  }

  /** How targets are made (default {@link TargetFactory#classIndices()}). */
  public BatchSizeFinder target(TargetFactory target) {
    if (target == null) throw new IllegalArgumentException(OP + ": target factory must not be null");
    this.target = target;
    return this;
  }

  /**
   * Makes the input batch of a given size instead of standard normal values of the sample shape
   * (token ids for an embedding model, say).
   */
  public BatchSizeFinder inputs(IntFunction<Tensor> inputs) {
    if (inputs == null) throw new IllegalArgumentException(OP + ": input factory must not be null");
    this.inputs = inputs;
    return this;
  }

  /** Also runs {@code optimizer.step()} in each step (its state is restored afterwards). */
  public BatchSizeFinder optimizer(Optimizer optimizer) {
    this.optimizer = optimizer;
    return this;
  }

  /** The seed of the generator for the random inputs and targets (default 0). */
  public BatchSizeFinder seed(long seed) {
    this.seed = seed;
    return this;
  }

  /** Runs the search and restores the model (see the class comment). */
  public BatchSizeResult find() {
    Snapshot snapshot = new Snapshot(model, optimizer);
    try {
      return search();
    } finally {
      snapshot.restore();
    }
  }

  private BatchSizeResult search() {
    Generator gen = new Generator(seed);
    List<BatchSizeResult.Row> rows = new ArrayList<>();
    String stop = "reached the maximum batch size " + max;
    jitWarmup(gen);
    for (long b = start; b <= max; b *= 2) {
      int batch = (int) b;
      long predicted = predict(rows, batch);
      if (predicted > budgetBytes) {
        rows.add(new BatchSizeResult.Row(batch, Double.NaN, predicted, 0, false, "predicted over budget, not run"));
        stop = String.format(java.util.Locale.ROOT, "batch %d would allocate about %.3f MB per step", batch, predicted / 1e6);
        break;
      }
      BatchSizeResult.Row row = measure(batch, gen);
      rows.add(row);
      if (!row.fits()) {
        stop = "batch " + batch + ": " + row.note();
        break;
      }
    }
    return new BatchSizeResult(rows, budgetBytes, stop);
  }

  /**
   * Bytes per step predicted for {@code batch} from the measured rows: a line through the last two
   * (0, no prediction, before two are measured: a step's fixed part may dwarf its per-sample part).
   */
  private static long predict(List<BatchSizeResult.Row> rows, int batch) {
    if (rows.size() < 2) return 0;
    BatchSizeResult.Row last = rows.get(rows.size() - 1);
    BatchSizeResult.Row prev = rows.get(rows.size() - 2);
    double slope = (double) (last.bytesPerStep() - prev.bytesPerStep()) / (last.batchSize() - prev.batchSize());
    return (long) (last.bytesPerStep() + Math.max(0, slope) * (batch - last.batchSize()));
  }

  private void jitWarmup(Generator gen) {
    if (jitWarmupMillis == 0) return;
    try {
      Tensor x = makeInput(start, gen);
      Tensor y = makeTarget(x, gen);
      model.train();
      long end = System.nanoTime() + jitWarmupMillis * 1_000_000;
      do {
        step(x, y);
      } while (System.nanoTime() < end);
    } catch (OutOfMemoryError e) {
      // the start size itself does not fit: measuring it will say so
      model.zeroGrad();
      System.gc();
    }
  }

  private Tensor makeTarget(Tensor x, Generator gen) {
    try (Grad ignored = Grad.off()) {
      model.eval();
      return target.make(model.call(x), gen);
    }
  }

  private BatchSizeResult.Row measure(int batch, Generator gen) {
    Allocation alloc = new Allocation();
    List<MemoryPoolMXBean> heap = heapPools();
    try {
      Tensor x = makeInput(batch, gen);
      Tensor y = makeTarget(x, gen);
      model.train();
      heap.forEach(MemoryPoolMXBean::resetPeakUsage);
      long worst = 0;
      long nanos = 0;
      for (int s = 0; s < warmupSteps + steps; s++) {
        if (s == warmupSteps) alloc.findWorkers(); // the kernels' pool exists after the first step
        long a0 = alloc.bytes();
        long t0 = System.nanoTime();
        step(x, y);
        long t1 = System.nanoTime();
        long a1 = alloc.bytes();
        if (s >= warmupSteps) {
          worst = Math.max(worst, a1 - a0);
          nanos += t1 - t0;
        }
      }
      long peak = 0;
      for (MemoryPoolMXBean p : heap) peak += p.getPeakUsage().getUsed();
      boolean fits = worst <= budgetBytes;
      double sps = nanos > 0 ? (double) batch * steps / (nanos / 1e9) : Double.POSITIVE_INFINITY;
      return new BatchSizeResult.Row(batch, sps, worst, peak, fits, fits ? "" : "over budget");
    } catch (OutOfMemoryError e) {
      // the step's tensors are unreachable once we are here; give the heap back before going on
      model.zeroGrad();
      System.gc();
      return new BatchSizeResult.Row(batch, Double.NaN, alloc.sinceStart(), 0, false, "OutOfMemoryError");
    }
  }

  private void step(Tensor x, Tensor y) {
    model.zeroGrad();
    if (optimizer != null) optimizer.zeroGrad();
    try (Grad ignored = Grad.on()) {
      Tensor l = loss.apply(model.call(x), y);
      if (l.numel() != 1) {
        throw new IllegalArgumentException(OP + ": the loss must be a scalar, got shape " + Arrays.toString(l.shape()));
      }
      l.backward();
    }
    if (optimizer != null) optimizer.step();
  }

  private Tensor makeInput(int batch, Generator gen) {
    if (inputs != null) {
      Tensor x = inputs.apply(batch);
      if (x == null || x.dim() == 0 || x.size(0) != batch) {
        throw new IllegalArgumentException(OP + ": the input factory must return a batch of " + batch + " along dimension 0, got "
            + (x == null ? "null" : Arrays.toString(x.shape())));
      }
      return x;
    }
    int[] shape = new int[sampleShape.length + 1];
    shape[0] = batch;
    System.arraycopy(sampleShape, 0, shape, 1, sampleShape.length);
    DType dtype = model.parameters().isEmpty() ? DType.F32 : model.parameters().get(0).dtype();
    return Tensor.randn(gen, dtype, shape).to(model.device());
  }

  private static List<MemoryPoolMXBean> heapPools() {
    return ManagementFactory.getMemoryPoolMXBeans().stream().filter(p -> p.getType() == MemoryType.HEAP && p.isValid())
        .toList();
  }

  /** Heap bytes allocated by the calling thread and Ember's kernel workers. */
  private static final class Allocation {
    private static final com.sun.management.ThreadMXBean THREADS = threads();
    private long[] ids = {Thread.currentThread().threadId()};
    private final long start;

    Allocation() {
      start = bytes();
    }

    private static com.sun.management.ThreadMXBean threads() {
      if (!(ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t)
          || !t.isThreadAllocatedMemorySupported()) {
        throw new IllegalStateException(OP + ": this JVM cannot measure allocation per thread "
            + "(com.sun.management.ThreadMXBean); run on HotSpot or a JVM that supports it");
      }
      if (!t.isThreadAllocatedMemoryEnabled()) t.setThreadAllocatedMemoryEnabled(true);
      return t;
    }

    void findWorkers() {
      List<Long> found = new ArrayList<>();
      found.add(Thread.currentThread().threadId());
      for (ThreadInfo info : THREADS.getThreadInfo(THREADS.getAllThreadIds())) {
        if (info != null && info.getThreadName().startsWith("ember-worker-")) found.add(info.getThreadId());
      }
      ids = found.stream().mapToLong(Long::longValue).toArray();
    }

    long bytes() {
      long sum = 0;
      for (long b : THREADS.getThreadAllocatedBytes(ids)) if (b > 0) sum += b;
      return sum;
    }

    long sinceStart() {
      return Math.max(0, bytes() - start);
    }
  }

  /** What the search changes, copied so that it can be put back. */
  private static final class Snapshot {
    private final Module model;
    private final Optimizer optimizer;
    private final Map<String, Tensor> state = new LinkedHashMap<>();
    private final LinkedHashMap<Module, Boolean> modes = new LinkedHashMap<>();
    private final List<Tensor> params;
    private final List<Tensor> grads = new ArrayList<>();
    private final OptimizerState optimizerState;
    private final long[] globalGenerator;

    Snapshot(Module model, Optimizer optimizer) {
      this.model = model;
      this.optimizer = optimizer;
      try (Grad ignored = Grad.off()) {
        model.stateDict().forEach((k, v) -> state.put(k, v.cloneContiguous()));
      }
      for (Module m : model.modules()) modes.put(m, m.isTraining());
      params = model.parameters();
      for (Tensor p : params) grads.add(p.grad());
      optimizerState = optimizer == null ? null : optimizer.stateDict();
      globalGenerator = Generator.global().state();
    }

    void restore() {
      model.loadStateDict(state);
      for (var e : modes.entrySet()) e.getKey().train(e.getValue()); // pre-order, so each keeps its own flag
      for (int i = 0; i < params.size(); i++) params.get(i).setGrad(grads.get(i));
      if (optimizer != null) optimizer.loadStateDict(optimizerState);
      Generator.global().setState(globalGenerator);
    }
  }
}
