package dev.ember.examples;

import dev.ember.autograd.Grad;
import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.LayerNorm;
import dev.ember.nn.Linear;
// Explicit: with only `import dev.ember.nn.*;` the name Module would be ambiguous with java.lang.Module.
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.Callback;
import dev.ember.train.History;
import dev.ember.train.TrainContext;
import dev.ember.train.Trainer;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Your own layer and your own training hook: a residual MLP block written as a {@link Module}, and
 * two {@link Callback}s, one logging the gradient's global norm each epoch and one stopping training
 * once the loss falls below a threshold. They train a classifier of three interleaved spirals.
 *
 * <p>A module registers its parameters, buffers and child modules under names (here
 * {@code norm}, {@code fc1}, {@code fc2}), which is how {@link Module#parameters()},
 * {@link Module#stateDict()} (keys {@code 1.fc1.weight}, ...), {@code eval()} and the printed tree
 * find them; {@code forward} says what it computes. A callback overrides only the hooks it needs;
 * what it logs with {@link TrainContext#log} lands in the {@link History} and in every logger.
 *
 * <p>Run from the repository root (arguments optional; defaults: at most 60 epochs, stop below a
 * loss of 0.1):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=CustomModuleAndCallback -Dargs="EPOCHS STOP_LOSS"
 * </pre>
 */
public final class CustomModuleAndCallback {
  private CustomModuleAndCallback() {}

  /** {@code x + fc2(relu(fc1(norm(x))))}: a pre-norm residual block, as in a transformer's MLP. */
  public static final class ResidualBlock extends Module {
    private final LayerNorm norm;
    private final Linear fc1;
    private final Linear fc2;

    public ResidualBlock(int width, int hidden) {
      norm = registerModule("norm", new LayerNorm(width));
      fc1 = registerModule("fc1", new Linear(width, hidden));
      fc2 = registerModule("fc2", new Linear(hidden, width));
    }

    @Override
    public Tensor forward(Tensor x) {
      return x.add(fc2.call(fc1.call(norm.call(x)).relu()));
    }
  }

  /** Logs {@code grad_norm}: the mean over the epoch's steps of the L2 norm of all gradients together. */
  public static final class GradNormLogger implements Callback {
    private double sum;
    private int steps;

    @Override
    public void onEpochBegin(TrainContext ctx) {
      sum = 0;
      steps = 0;
    }

    @Override
    public void onBeforeOptimizerStep(TrainContext ctx) { // gradients are final here: accumulated and clipped
      double squares = 0;
      try (var ignored = Grad.off()) {
        for (Tensor p : ctx.model().parameters()) {
          if (p.grad() != null) squares += p.grad().square().sum().item();
        }
      }
      sum += Math.sqrt(squares);
      steps++;
    }

    @Override
    public void onEpochEnd(TrainContext ctx) {
      if (steps > 0) ctx.log("grad_norm", sum / steps);
      Map<String, Double> logs = ctx.logs();
      System.out.printf(Locale.ROOT, "epoch %d: loss=%.4f grad_norm=%.4f val_accuracy=%.4f%n", ctx.epoch(),
          logs.get("loss"), logs.get("grad_norm"), logs.get("val_accuracy"));
    }
  }

  /** Stops training at the end of the first epoch whose mean training loss is below {@code threshold}. */
  public static final class StopBelowLoss implements Callback {
    private final double threshold;

    public StopBelowLoss(double threshold) {
      this.threshold = threshold;
    }

    @Override
    public void onEpochEnd(TrainContext ctx) {
      double loss = ctx.logs().get("loss");
      if (loss < threshold) {
        ctx.requestStop(String.format(Locale.ROOT, "loss %.4f < %.4f after epoch %d", loss, threshold, ctx.epoch()));
      }
    }
  }

  public static void main(String[] args) {
    int maxEpochs = args.length > 0 ? Integer.parseInt(args[0]) : 60;
    double stopLoss = args.length > 1 ? Double.parseDouble(args[1]) : 0.1;

    TensorDataset data = spirals(900, 0);
    DataLoader train = new DataLoader(
        new TensorDataset(data.inputs().narrow(0, 0, 720), data.targets().narrow(0, 0, 720)), BatchConfig.shuffled(64, 0));
    DataLoader val = new DataLoader(
        new TensorDataset(data.inputs().narrow(0, 720, 180), data.targets().narrow(0, 720, 180)), BatchConfig.sequential(180));

    Generator.manualSeed(0);
    Sequential model = new Sequential(new Linear(2, 64), new ResidualBlock(64, 128), new ResidualBlock(64, 128),
        new Linear(64, 3));
    System.out.println(model);

    StopBelowLoss stop = new StopBelowLoss(stopLoss);
    History history = Trainer.builder()
        .maxEpochs(maxEpochs)
        .metrics(new Accuracy())
        .callbacks(new GradNormLogger(), stop)
        .build()
        .fit(model, F::crossEntropy, new Adam(model.parameters(), 3e-3), train, val);

    int epochs = history.values("loss").length;
    System.out.printf(Locale.ROOT, "trained %d epoch%s of at most %d%n", epochs, epochs == 1 ? "" : "s", maxEpochs);
    System.out.printf(Locale.ROOT, "val_accuracy=%.4f%n", history.last("val_accuracy"));
  }

  /** {@code n} points on three interleaved spiral arms (class = arm) with a little noise, in random order. */
  static TensorDataset spirals(int n, long seed) {
    Random rnd = new Random(seed);
    float[] x = new float[2 * n];
    long[] y = new long[n];
    for (int i = 0; i < n; i++) {
      int arm = rnd.nextInt(3);
      double r = rnd.nextDouble();
      double angle = 4 * r + arm * 2 * Math.PI / 3 + 0.2 * rnd.nextGaussian();
      x[2 * i] = (float) (r * Math.cos(angle));
      x[2 * i + 1] = (float) (r * Math.sin(angle));
      y[i] = arm;
    }
    return new TensorDataset(Tensor.of(x, n, 2), Tensor.of(y, n));
  }
}
