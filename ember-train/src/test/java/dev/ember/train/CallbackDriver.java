package dev.ember.train;

import dev.ember.data.Batch;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/**
 * Drives callbacks by hand the way the Trainer does (same hook order, same context fields), so the
 * callbacks of dev.ember.train.callbacks can be tested without a training run.
 */
final class CallbackDriver {
  final TrainContext ctx;
  final List<Callback> callbacks;
  final Batch batch = new Batch(Tensor.zeros(4, 2), Tensor.zeros(4));

  CallbackDriver(int maxEpochs, int batchesPerEpoch, Callback... callbacks) {
    this(tinyModel(), maxEpochs, batchesPerEpoch, callbacks);
  }

  CallbackDriver(Module model, int maxEpochs, int batchesPerEpoch, Callback... callbacks) {
    this.ctx = new TrainContext(model, null, new History(), maxEpochs, Long.MAX_VALUE);
    this.ctx.batchesPerEpoch = batchesPerEpoch;
    this.callbacks = List.of(callbacks);
  }

  /** A map that keeps the order of {@code keysAndValues} (Map.of does not). */
  static Map<String, Double> ordered(Object... keysAndValues) {
    java.util.LinkedHashMap<String, Double> m = new java.util.LinkedHashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) m.put((String) keysAndValues[i], ((Number) keysAndValues[i + 1]).doubleValue());
    return m;
  }

  static Module tinyModel() {
    Generator g = new Generator(7);
    return new Sequential(new Linear(2, 3, true, g), new ReLU(), new Linear(3, 2, true, g));
  }

  void trainBegin() {
    for (Callback c : callbacks) c.onTrainBegin(ctx);
  }

  void trainEnd() {
    for (Callback c : callbacks) c.onTrainEnd(ctx);
  }

  void epochBegin(int epoch) {
    ctx.epoch = epoch;
    for (Callback c : callbacks) c.onEpochBegin(ctx);
  }

  /** One batch with index {@code index}: hooks in Trainer order; the loss goes into logs as a running value. */
  void batch(int index, double loss, long[] nanos) {
    ctx.batchIndex = index;
    for (Callback c : callbacks) c.onBatchBegin(ctx, batch);
    for (Callback c : callbacks) c.onAfterBackward(ctx);
    for (Callback c : callbacks) c.onBeforeOptimizerStep(ctx);
    ctx.globalStep++;
    ctx.samplesSeen += batch.size();
    ctx.logs.put("loss", loss);
    ctx.logs.put("lr", 0.01);
    if (nanos != null) System.arraycopy(nanos, 0, ctx.stepNanos, 0, nanos.length);
    for (Callback c : callbacks) c.onBatchEnd(ctx, batch, loss);
  }

  /** Logs the epoch values (and validation values if {@code val} is not empty) and calls onEpochEnd. */
  void epochEnd(Map<String, Double> values, Map<String, Double> val) {
    for (var e : values.entrySet()) ctx.log(e.getKey(), e.getValue());
    if (!val.isEmpty()) {
      ctx.validating = true;
      for (Callback c : callbacks) c.onValidationBegin(ctx);
      for (var e : val.entrySet()) ctx.log(e.getKey(), e.getValue());
      for (Callback c : callbacks) c.onValidationEnd(ctx, val);
      ctx.validating = false;
    }
    for (Callback c : callbacks) c.onEpochEnd(ctx);
  }

  /** A full epoch of {@code batches} batches with losses 1/(epoch + i). */
  void epoch(int epoch, int batches, Map<String, Double> values, Map<String, Double> val) {
    epochBegin(epoch);
    for (int i = 0; i < batches; i++) batch(i, 1.0 / (epoch + i), null);
    epochEnd(values, val);
  }
}
