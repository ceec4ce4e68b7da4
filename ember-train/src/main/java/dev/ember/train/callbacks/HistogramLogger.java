package dev.ember.train.callbacks;

import dev.ember.nn.io.Json;
import dev.ember.tensor.Tensor;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.nio.file.Path;
import java.util.Map;

/**
 * Appends histograms of every parameter's values and gradients as JSON lines, one line per
 * parameter and snapshot:
 * <pre>{"epoch":2,"step":400,"name":"0.weight","numel":8192,
 *  "weight":{"min":-0.31,"max":0.29,"lo":-0.31,"hi":0.29,"counts":[...],"nonfinite":0,"mean":..,"std":..},
 *  "grad":{...}}</pre>
 * {@code counts} holds {@code bins} equal-width bins from {@code lo} to {@code hi} (the finite
 * minimum and maximum; for a constant tensor {@code lo = min - 0.5}, {@code hi = max + 0.5} as numpy
 * does); the last bin includes {@code hi}. NaN and infinite elements are counted in
 * {@code nonfinite} only. {@code grad} is absent for a parameter without a gradient.
 *
 * <p>Snapshots are taken either every {@code everyNSteps} optimizer steps, just before the step
 * (so the weights are those after {@code step} updates and the gradients the ones about to be
 * applied; the first snapshot shows the initial weights), or once per epoch ({@link #perEpoch}):
 * before the optimizer step of the epoch's last batch (at epoch end, with whatever gradients the
 * model still holds, when the number of batches is unknown).
 * Resuming continues the file as {@link JsonLinesLogger} does.
 */
public final class HistogramLogger implements Callback {
  private final AppendLog log;
  private final int everyNSteps;
  private final int bins;

  /** A snapshot every {@code everyNSteps} optimizer steps, {@code bins} bins per histogram. */
  public HistogramLogger(Path file, int everyNSteps, int bins) {
    this(file, everyNSteps, bins, true);
  }

  private HistogramLogger(Path file, int everyNSteps, int bins, boolean checkSteps) {
    if (checkSteps && everyNSteps < 1) {
      throw new IllegalArgumentException("HistogramLogger: everyNSteps must be >= 1, got " + everyNSteps
          + "; hint: use HistogramLogger.perEpoch(file, bins) for one snapshot per epoch");
    }
    if (bins < 1 || bins > 10_000) throw new IllegalArgumentException("HistogramLogger: bins must be in [1, 10000], got " + bins);
    this.log = new AppendLog("HistogramLogger", file);
    this.everyNSteps = everyNSteps;
    this.bins = bins;
  }

  /** A snapshot at each epoch end. */
  public static HistogramLogger perEpoch(Path file, int bins) {
    return new HistogramLogger(file, 0, bins, false);
  }

  /** The file written. */
  public Path file() {
    return log.file();
  }

  @Override
  public void onTrainBegin(TrainContext ctx) {
    log.open();
  }

  @Override
  public void onBeforeOptimizerStep(TrainContext ctx) {
    if (everyNSteps > 0 ? ctx.globalStep() % everyNSteps == 0
        : ctx.batchesPerEpoch() > 0 && ctx.batchIndex() == ctx.batchesPerEpoch() - 1) {
      snapshot(ctx);
    }
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    // without a known epoch length the last step cannot be recognised in advance: take the weights now
    if (everyNSteps == 0 && ctx.batchesPerEpoch() <= 0) snapshot(ctx);
  }

  @Override
  public void onTrainEnd(TrainContext ctx) {
    log.close();
  }

  @Override
  public void onException(TrainContext ctx, Throwable error) {
    log.close();
  }

  private void snapshot(TrainContext ctx) {
    for (var e : ctx.model().namedParameters().entrySet()) {
      Tensor p = e.getValue();
      StringBuilder sb = new StringBuilder(128 + bins * 6);
      sb.append("{\"epoch\":").append(ctx.epoch()).append(",\"step\":").append(ctx.globalStep()).append(",\"name\":");
      Json.string(sb, e.getKey());
      sb.append(",\"numel\":").append(p.numel());
      sb.append(",\"weight\":");
      histogram(sb, p.detach().toFloatArray(), bins);
      Tensor g = p.grad();
      if (g != null) {
        sb.append(",\"grad\":");
        histogram(sb, g.toFloatArray(), bins);
      }
      log.append(sb.append('}'));
    }
  }

  /** Appends the histogram object of {@code v} (see the class comment). */
  static void histogram(StringBuilder sb, float[] v, int bins) {
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    long nonfinite = 0;
    double sum = 0;
    for (float x : v) {
      if (!Float.isFinite(x)) {
        nonfinite++;
        continue;
      }
      if (x < min) min = x;
      if (x > max) max = x;
      sum += x;
    }
    long finite = v.length - nonfinite;
    long[] counts = new long[bins];
    double lo = min;
    double hi = max;
    double mean = Double.NaN;
    double std = Double.NaN;
    if (finite > 0) {
      if (lo == hi) {
        lo -= 0.5;
        hi += 0.5;
      }
      mean = sum / finite;
      double sq = 0;
      double scale = bins / (hi - lo);
      for (float x : v) {
        if (!Float.isFinite(x)) continue;
        int b = (int) ((x - lo) * scale);
        counts[Math.min(bins - 1, Math.max(0, b))]++;
        sq += (x - mean) * (x - mean);
      }
      std = Math.sqrt(sq / finite);
    }
    sb.append("{\"min\":");
    Json.number(sb, finite > 0 ? min : Double.NaN, Json.NonFinite.NULL);
    sb.append(",\"max\":");
    Json.number(sb, finite > 0 ? max : Double.NaN, Json.NonFinite.NULL);
    sb.append(",\"lo\":");
    Json.number(sb, finite > 0 ? lo : Double.NaN, Json.NonFinite.NULL);
    sb.append(",\"hi\":");
    Json.number(sb, finite > 0 ? hi : Double.NaN, Json.NonFinite.NULL);
    sb.append(",\"counts\":");
    Json.write(sb, counts, Json.NonFinite.NULL);
    sb.append(",\"nonfinite\":").append(nonfinite);
    sb.append(",\"mean\":");
    Json.number(sb, mean, Json.NonFinite.NULL);
    sb.append(",\"std\":");
    Json.number(sb, std, Json.NonFinite.NULL);
    sb.append('}');
  }

  @Override
  public Map<String, Object> stateDict() {
    return log.state();
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    log.load(state);
  }
}
