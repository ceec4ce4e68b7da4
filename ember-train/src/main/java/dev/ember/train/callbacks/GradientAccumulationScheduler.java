package dev.ember.train.callbacks;

import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.util.Map;
import java.util.TreeMap;

/**
 * Sets how many batches are accumulated per optimizer step, by epoch: {@code {1: 8, 5: 4}}
 * accumulates 8 batches from epoch 1 and 4 from epoch 5 on. Each epoch ends with an optimizer
 * step even if fewer batches were accumulated. (The Trainer's counterpart of Lightning's
 * {@code GradientAccumulationScheduler}; for a hand-written loop, {@link
 * dev.ember.optim.GradientAccumulation} scales the losses and steps the optimizer.)
 */
public final class GradientAccumulationScheduler implements Callback {
  private final TreeMap<Integer, Integer> schedule;

  /** Accumulates {@code batches} batches for the whole run. */
  public GradientAccumulationScheduler(int batches) {
    this(Map.of(1, batches));
  }

  /** @param schedule first epoch (from 1) -> batches per step from then on; must contain epoch 1 */
  public GradientAccumulationScheduler(Map<Integer, Integer> schedule) {
    this.schedule = new TreeMap<>(schedule);
    if (!this.schedule.containsKey(1)) {
      throw new IllegalArgumentException("GradientAccumulationScheduler: the schedule must say what epoch 1 uses, got " + schedule);
    }
    this.schedule.forEach((epoch, k) -> {
      if (epoch < 1 || k < 1) {
        throw new IllegalArgumentException("GradientAccumulationScheduler: epochs and batch counts must be >= 1, got " + epoch + " -> " + k);
      }
    });
  }

  @Override
  public void onEpochBegin(TrainContext ctx) {
    ctx.setAccumulation(batchesAt(ctx.epoch()));
  }

  /** Batches accumulated per step in {@code epoch}. */
  public int batchesAt(int epoch) {
    return schedule.floorEntry(Math.max(1, epoch)).getValue();
  }
}
