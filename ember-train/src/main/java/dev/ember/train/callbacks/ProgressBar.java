package dev.ember.train.callbacks;

import dev.ember.data.Batch;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Shows how training goes. On a terminal ({@code interactive}) one line is redrawn in place with
 * {@code \r}, at most {@link #REDRAWS_PER_SECOND} times a second:
 * <pre>epoch 3/10 [=======>      ] 234/469  1523 samples/s  ETA 0:12  loss 0.4123 acc 0.8512</pre>
 * Otherwise (a log file, a CI console) a plain line is printed every {@code plainSeconds} seconds
 * (30 by default) and, if asked for, every {@code plainPercent} percent of an epoch, so that a log
 * holds one line per epoch plus one per 30 s of a long epoch. Both modes end each epoch with a line
 * holding the epoch's values, validation included:
 * <pre>epoch 3/10 469/469  12.3s  1523 samples/s  loss 0.4123 acc 0.8512 lr 0.001 val_loss 0.4501 val_acc 0.8400</pre>
 * During an epoch the line shows the running loss and the values logged since the epoch began;
 * {@code accuracy} is shortened to {@code acc}.
 */
public final class ProgressBar implements Callback {
  /** Upper bound of redraws per second on a terminal. */
  public static final int REDRAWS_PER_SECOND = 10;

  private static final int BAR_WIDTH = 30;

  private final PrintStream out;
  private final boolean interactive;
  private final LongSupplier clock;
  private final long plainIntervalNanos;
  private final int plainPercent;

  private long epochStartNanos;
  private long epochStartSamples;
  /** Batches of the epoch done before the timing baseline (non-zero when a run resumes mid-epoch). */
  private int epochStartBatch;
  private boolean baselined;
  private long lastDrawNanos;
  private int lastPercentBucket;
  private int lastLineLength;
  private boolean lineOpen;
  private final Map<String, Double> epochStartLogs = new HashMap<>();

  /** Seconds between plain lines inside an epoch when not drawing in place. */
  public static final double PLAIN_SECONDS = 30;

  /** Draws on {@code out}: in place if {@code interactive}, else a line per epoch and one every 30 s. */
  public ProgressBar(PrintStream out, boolean interactive) {
    this(out, interactive, System::nanoTime);
  }

  /** As {@link #ProgressBar(PrintStream, boolean)}, timed by {@code clock} (nanoseconds; tests pass a fake one). */
  public ProgressBar(PrintStream out, boolean interactive, LongSupplier clock) {
    this(out, interactive, PLAIN_SECONDS, 0, clock);
  }

  /**
   * Full control: plain lines every {@code plainSeconds} seconds or every {@code plainPercent} percent
   * of an epoch (0 turns either off); {@code clock} gives nanoseconds (tests pass a fake one).
   */
  public ProgressBar(PrintStream out, boolean interactive, double plainSeconds, int plainPercent, LongSupplier clock) {
    if (out == null || clock == null) throw new IllegalArgumentException("ProgressBar: out and clock must not be null");
    if (!(plainSeconds >= 0) || plainPercent < 0 || plainPercent > 100) {
      throw new IllegalArgumentException("ProgressBar: plainSeconds must be >= 0 and plainPercent in [0, 100], got "
          + plainSeconds + " and " + plainPercent);
    }
    this.out = out;
    this.interactive = interactive;
    this.clock = clock;
    this.plainIntervalNanos = (long) (plainSeconds * 1e9);
    this.plainPercent = plainPercent;
  }

  /** A bar on {@code System.out}, redrawn in place when the process runs on a terminal, plain lines otherwise. */
  public static ProgressBar auto() {
    return auto(System.out);
  }

  /** A bar on {@code out}, redrawn in place when the process runs on a terminal, plain lines otherwise. */
  public static ProgressBar auto(PrintStream out) {
    java.io.Console console = System.console();
    return new ProgressBar(out, console != null && console.isTerminal());
  }

  /** True when the line is redrawn in place. */
  public boolean interactive() {
    return interactive;
  }

  @Override
  public void onEpochBegin(TrainContext ctx) {
    epochStartNanos = clock.getAsLong();
    epochStartSamples = ctx.samplesSeen();
    epochStartBatch = 0;
    baselined = true;
    lastDrawNanos = Long.MIN_VALUE;
    lastPercentBucket = 0;
    epochStartLogs.clear();
    epochStartLogs.putAll(ctx.logs());
  }

  @Override
  public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
    long now = clock.getAsLong();
    int done = ctx.batchIndex() + 1;
    int total = ctx.batchesPerEpoch();
    if (!baselined) {
      // resumed inside an epoch: onEpochBegin did not run in this process, so time from this batch on
      epochStartNanos = now;
      epochStartSamples = ctx.samplesSeen();
      epochStartBatch = done;
      baselined = true;
      lastDrawNanos = Long.MIN_VALUE;
      lastPercentBucket = total > 0 && plainPercent > 0 ? (int) ((long) done * 100 / total / plainPercent) : 0;
      epochStartLogs.clear();
    }
    if (interactive) {
      if (lastDrawNanos != Long.MIN_VALUE && now - lastDrawNanos < 1_000_000_000L / REDRAWS_PER_SECOND && done != total) return;
      lastDrawNanos = now;
      draw(barLine(ctx, now));
      return;
    }
    boolean due = false;
    if (plainIntervalNanos > 0) {
      if (lastDrawNanos == Long.MIN_VALUE) lastDrawNanos = epochStartNanos;
      due = now - lastDrawNanos >= plainIntervalNanos;
    }
    if (plainPercent > 0 && total > 0 && done < total) {
      int bucket = (int) ((long) done * 100 / total / plainPercent);
      if (bucket > lastPercentBucket) {
        lastPercentBucket = bucket;
        due = true;
      }
    }
    if (due) {
      lastDrawNanos = now;
      out.println(plainLine(ctx, now));
    }
  }

  @Override
  public void onValidationBegin(TrainContext ctx) {
    if (interactive && lineOpen) draw(barText(ctx) + "  validating...");
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    long now = clock.getAsLong();
    StringBuilder sb = new StringBuilder();
    sb.append(epochText(ctx)).append(' ').append(ctx.batchIndex() + 1);
    if (ctx.batchesPerEpoch() > 0) sb.append('/').append(ctx.batchesPerEpoch());
    double seconds = (now - epochStartNanos) / 1e9;
    sb.append(String.format(Locale.ROOT, "  %.1fs  %s samples/s", seconds, rate(ctx, now)));
    for (var e : ctx.logs().entrySet()) {
      if (e.getKey().equals("epoch_time_s")) continue;
      sb.append("  ").append(shortName(e.getKey())).append(' ').append(number(e.getValue()));
    }
    if (interactive) {
      draw(sb.toString());
      out.print('\n');
      lineOpen = false;
      lastLineLength = 0;
    } else {
      out.println(sb);
    }
    out.flush();
    baselined = false;
  }

  @Override
  public void onTrainEnd(TrainContext ctx) {
    closeLine();
  }

  @Override
  public void onException(TrainContext ctx, Throwable error) {
    closeLine();
  }

  private void closeLine() {
    if (interactive && lineOpen) {
      out.print('\n');
      out.flush();
      lineOpen = false;
      lastLineLength = 0;
    }
  }

  /** Redraws the line: carriage return, the text, and spaces over what is left of a longer previous line. */
  private void draw(String text) {
    StringBuilder sb = new StringBuilder(text.length() + 8).append('\r').append(text);
    for (int k = text.length(); k < lastLineLength; k++) sb.append(' ');
    lastLineLength = text.length();
    lineOpen = true;
    out.print(sb);
    out.flush();
  }

  private String epochText(TrainContext ctx) {
    return ctx.maxEpochs() == Integer.MAX_VALUE ? "epoch " + ctx.epoch() : "epoch " + ctx.epoch() + "/" + ctx.maxEpochs();
  }

  private String barText(TrainContext ctx) {
    int done = ctx.batchIndex() + 1;
    int total = ctx.batchesPerEpoch();
    StringBuilder sb = new StringBuilder(epochText(ctx)).append(' ');
    if (total > 0) {
      int filled = (int) ((long) Math.min(done, total) * BAR_WIDTH / total);
      sb.append('[');
      for (int k = 0; k < BAR_WIDTH; k++) sb.append(k < filled ? '=' : k == filled ? '>' : ' ');
      sb.append("] ").append(done).append('/').append(total);
    } else {
      sb.append(done).append(" batches");
    }
    return sb.toString();
  }

  private String barLine(TrainContext ctx, long now) {
    StringBuilder sb = new StringBuilder(barText(ctx));
    sb.append("  ").append(rate(ctx, now)).append(" samples/s");
    String eta = eta(ctx, now);
    if (eta != null) sb.append("  ETA ").append(eta);
    runningValues(sb, ctx);
    return sb.toString();
  }

  private String plainLine(TrainContext ctx, long now) {
    int done = ctx.batchIndex() + 1;
    int total = ctx.batchesPerEpoch();
    StringBuilder sb = new StringBuilder(epochText(ctx)).append(' ').append(done);
    if (total > 0) sb.append('/').append(total).append(" (").append((long) done * 100 / total).append("%)");
    sb.append("  ").append(rate(ctx, now)).append(" samples/s");
    String eta = eta(ctx, now);
    if (eta != null) sb.append("  ETA ").append(eta);
    runningValues(sb, ctx);
    return sb.toString();
  }

  /** The running loss and whatever was logged anew since the epoch began (not the previous epoch's values). */
  private void runningValues(StringBuilder sb, TrainContext ctx) {
    for (var e : ctx.logs().entrySet()) {
      String k = e.getKey();
      boolean fresh = k.equals("loss") || !java.util.Objects.equals(e.getValue(), epochStartLogs.get(k));
      if (!fresh || k.startsWith("val_") || k.equals("lr") || k.equals("epoch_time_s")) continue;
      sb.append("  ").append(shortName(k)).append(' ').append(number(e.getValue()));
    }
  }

  private String rate(TrainContext ctx, long now) {
    double seconds = (now - epochStartNanos) / 1e9;
    long samples = ctx.samplesSeen() - epochStartSamples;
    return seconds > 0 ? Long.toString(Math.round(samples / seconds)) : "-";
  }

  /** Time left in this epoch at the pace so far, or null when it cannot be known. */
  private String eta(TrainContext ctx, long now) {
    int done = ctx.batchIndex() + 1;
    int total = ctx.batchesPerEpoch();
    if (total <= 0) return null;
    if (done <= epochStartBatch) return null;
    double perBatch = (now - epochStartNanos) / 1e9 / (done - epochStartBatch);
    long s = Math.round(perBatch * Math.max(0, total - done));
    return s >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
        : String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
  }

  static String shortName(String key) {
    if (key.equals("accuracy")) return "acc";
    if (key.equals("val_accuracy")) return "val_acc";
    return key;
  }

  static String number(Double v) {
    if (v == null || v.isNaN()) return "nan";
    double a = Math.abs(v);
    if (v.isInfinite()) return v > 0 ? "inf" : "-inf";
    if (a == 0 || (a >= 1e-3 && a < 1e5)) return String.format(Locale.ROOT, "%.4f", v);
    return String.format(Locale.ROOT, "%.3e", v);
  }
}
