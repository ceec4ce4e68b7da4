/**
 * Optimizers with PyTorch's update rules and parameter groups ({@link dev.ember.optim.Optimizer},
 * {@link dev.ember.optim.SGD}, {@link dev.ember.optim.Adam}, {@link dev.ember.optim.AdamW},
 * NAdam, RAdam, Adamax, RMSprop, Adagrad, Adadelta, Lion, LAMB, SAM, SophiaG), each updating a
 * parameter in one fused pass of its device's {@link dev.ember.backend.OptimizerKernels}, with its
 * options declared once as typed {@link dev.ember.optim.Hyper}s; gradient clipping
 * ({@link dev.ember.optim.GradClip}) and accumulation ({@link dev.ember.optim.GradientAccumulation}).
 * Learning-rate schedules live in {@code dev.ember.optim.schedule}.
 */
package dev.ember.optim;
