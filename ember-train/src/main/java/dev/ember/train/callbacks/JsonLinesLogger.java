package dev.ember.train.callbacks;

import dev.ember.data.Batch;
import dev.ember.nn.io.Json;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes one JSON object per line: at each epoch end
 * {@code {"event":"epoch","epoch":3,"step":1407,"time_s":12.5,"loss":0.41,...}} with every value of
 * {@link TrainContext#logs()}, and, if asked, every {@code everyNBatches} batches
 * {@code {"event":"batch","epoch":3,"step":1200,"batch":299,"time_s":..,"batch_loss":0.39,"loss":0.42,"lr":0.001}}
 * (the batch's own loss, then the training values of the epoch so far; validation values are left
 * out of batch lines because they belong to an earlier epoch). NaN and infinite values are written
 * as {@code null}. Each line reaches the file as soon as it is complete.
 *
 * <p>Resuming: {@link #stateDict()} records how many lines (and bytes, with a CRC-32) were
 * written; a resumed run checks the file still starts with them and drops whatever the interrupted
 * run wrote after its checkpoint, so no line is duplicated or lost.
 */
public final class JsonLinesLogger implements Callback {
  private final AppendLog log;
  private final int everyNBatches;
  private double timeOffsetSeconds;
  private long startNanos;
  private boolean restored;

  /** Logs one line per epoch to {@code file}. */
  public JsonLinesLogger(Path file) {
    this(file, 0);
  }

  /** Logs one line per epoch and one every {@code everyNBatches} batches (0: epochs only). */
  public JsonLinesLogger(Path file, int everyNBatches) {
    if (everyNBatches < 0) {
      throw new IllegalArgumentException("JsonLinesLogger: everyNBatches must be >= 0 (0 = epoch lines only), got " + everyNBatches);
    }
    this.log = new AppendLog("JsonLinesLogger", file);
    this.everyNBatches = everyNBatches;
  }

  /** The file written. */
  public Path file() {
    return log.file();
  }

  @Override
  public void onTrainBegin(TrainContext ctx) {
    if (!restored) timeOffsetSeconds = 0;
    restored = false;
    startNanos = System.nanoTime();
    log.open();
  }

  @Override
  public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
    if (everyNBatches == 0 || (ctx.batchIndex() + 1) % everyNBatches != 0) return;
    StringBuilder sb = head("batch", ctx);
    sb.append(",\"batch\":").append(ctx.batchIndex());
    sb.append(",\"time_s\":");
    Json.number(sb, elapsedSeconds(), Json.NonFinite.NULL);
    sb.append(",\"batch_loss\":");
    Json.number(sb, loss, Json.NonFinite.NULL);
    for (var e : ctx.logs().entrySet()) {
      if (e.getKey().startsWith("val_")) continue;
      member(sb, e.getKey(), e.getValue());
    }
    log.append(sb.append('}'));
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    StringBuilder sb = head("epoch", ctx);
    sb.append(",\"time_s\":");
    Json.number(sb, elapsedSeconds(), Json.NonFinite.NULL);
    for (var e : ctx.logs().entrySet()) member(sb, e.getKey(), e.getValue());
    log.append(sb.append('}'));
  }

  @Override
  public void onTrainEnd(TrainContext ctx) {
    log.close();
  }

  @Override
  public void onException(TrainContext ctx, Throwable error) {
    log.close();
  }

  private static StringBuilder head(String event, TrainContext ctx) {
    return new StringBuilder(256).append("{\"event\":\"").append(event).append("\",\"epoch\":").append(ctx.epoch())
        .append(",\"step\":").append(ctx.globalStep());
  }

  private static void member(StringBuilder sb, String key, Double value) {
    // keys that would clash with the line's own fields are prefixed rather than silently overwriting them
    String k = switch (key) {
      case "event", "epoch", "step", "batch", "time_s", "batch_loss" -> "log_" + key;
      default -> key;
    };
    sb.append(',');
    Json.string(sb, k);
    sb.append(':');
    Json.number(sb, value == null ? Double.NaN : value, Json.NonFinite.NULL);
  }

  private double elapsedSeconds() {
    return timeOffsetSeconds + (System.nanoTime() - startNanos) / 1e9;
  }

  @Override
  public Map<String, Object> stateDict() {
    Map<String, Object> s = new java.util.LinkedHashMap<>(log.state());
    s.put("time_s", startNanos == 0 ? timeOffsetSeconds : elapsedSeconds());
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    if (!(state.get("time_s") instanceof Number t)) {
      throw new IllegalArgumentException("JsonLinesLogger.loadStateDict: expected time_s (a number), got keys "
          + state.keySet() + "; file=" + log.file());
    }
    log.load(state);
    timeOffsetSeconds = t.doubleValue();
    restored = true;
  }
}
