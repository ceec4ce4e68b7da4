package dev.ember.cli;

import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.Optimizer;
import dev.ember.tensor.Tensor;
import dev.ember.train.Trainer;
import dev.ember.train.Trainer.Precision;

/**
 * Training steps of a throwaway copy of the run's model on synthetic data, on a background thread while
 * {@code ember train} loads its data set, so that the JIT sees the kernels the run will use (GEMM,
 * elementwise, reductions, the optimizer's update) before the first real step and compiles them
 * earlier: until C2 compiles a Vector API kernel it runs as slow plain Java.
 *
 * <p>It changes no result: the copy has its own parameters, optimizer and data, and {@link #close()}
 * stops it at its next step boundary and waits for it before the run seeds the default generator and
 * builds its model (the copy's initialization draws from the default generator, which that seeding
 * then resets entirely). It runs at most {@link #MAX_STEPS} steps.
 *
 * <p>Off unless {@code -Dember.warmup=true} (EMBER_JAVA_OPTS): measured on the shared 2-core machine
 * (BENCHMARKS.md, "The first minute"), it delayed the first step by about 2 s (the data load already
 * keeps both cores busy, and the loader waits for the warm-up's step in progress, which runs as plain
 * Java) and did not shorten epoch 1 or the run beyond the noise; on a quiet host it shortened epoch 1 (3.8 -> 3.0 s,
 * MLP) but delayed the first step by 0.2 s and left the whole run as long. It stays for measuring on other hosts
 * ({@code bench/first-minute.sh --variant warm=-Dember.warmup=true}).
 */
final class KernelWarmup implements AutoCloseable {
  /** The system property that turns the warm-up on ({@code true}). */
  static final String PROPERTY = "ember.warmup";
  /** At most this many synthetic steps (a slow data set download does not keep it busy longer). */
  static final int MAX_STEPS = 200;

  private final Thread thread;
  private volatile boolean stop;
  private volatile int steps;
  private volatile Throwable failure;

  private KernelWarmup(String model, String optimizer, double lr, int batch, Precision precision, boolean compile) {
    thread = Thread.ofPlatform().name("ember-kernel-warmup").daemon(true).unstarted(
        () -> run(model, optimizer, lr, batch, precision, compile));
  }

  /** Whether the warm-up is on in this JVM (only with {@code -Dember.warmup=true}). */
  static boolean enabled() {
    return "true".equalsIgnoreCase(System.getProperty(PROPERTY, "false").strip());
  }

  /** Starts the warm-up of a run of {@code model} (a name of {@link TrainCommand#model(String)}) if it is on; null if not. */
  static KernelWarmup start(String model, String optimizer, double lr, int batch, Precision precision, boolean compile) {
    if (!enabled()) return null;
    KernelWarmup w = new KernelWarmup(model, optimizer, lr, batch, precision, compile);
    w.thread.start();
    return w;
  }

  private void run(String modelName, String optimizer, double lr, int batch, Precision precision, boolean compile) {
    try {
      int n = batch * 4;
      // inputs in [0, 1] and every class, from a fixed formula (no generator), shaped as Fashion-MNIST's
      float[] x = new float[n * 28 * 28];
      for (int i = 0; i < x.length; i++) x[i] = (float) (((i * 2654435761L) >>> 13) & 255) / 255f;
      long[] y = new long[n];
      for (int i = 0; i < n; i++) y[i] = i % 10;
      DataLoader data = new DataLoader(new TensorDataset(Tensor.of(x, n, 1, 28, 28), Tensor.of(y, n)),
          new BatchConfig(batch, false, false, 0), 0);
      Module model = TrainCommand.model(modelName);
      Optimizer opt = TrainCommand.optimizer(optimizer, model, lr);
      var builder = Trainer.builder().maxSteps(MAX_STEPS).maxEpochs(MAX_STEPS).precision(precision)
          .callbacks(new dev.ember.train.Callback() {
            @Override
            public void onBatchEnd(dev.ember.train.TrainContext ctx, dev.ember.data.Batch b, double loss) {
              steps++;
              if (stop) ctx.requestStop("warm-up done");
            }
          });
      if (compile) builder.compile(true);
      if (!stop) builder.build().fit(model, F::crossEntropy, opt, data, null);
    } catch (RuntimeException | Error e) {
      failure = e; // the run itself will meet the same problem, with its own message
    }
  }

  /** Synthetic steps finished so far. */
  int steps() {
    return steps;
  }

  /** What ended the warm-up early, or null. */
  Throwable failure() {
    return failure;
  }

  /** Stops the warm-up at its next step boundary and waits for its thread. */
  @Override
  public void close() {
    stop = true;
    boolean interrupted = false;
    while (true) {
      try {
        thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
  }
}
