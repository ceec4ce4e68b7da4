/**
 * Learning-rate schedules as pure functions of the step, with PyTorch's values
 * ({@link dev.ember.optim.schedule.LRScheduler} and its subclasses, {@link dev.ember.optim.schedule.LinearWarmup}),
 * and {@link dev.ember.optim.schedule.ReduceLROnPlateau}, driven by a metric.
 */
package dev.ember.optim.schedule;
