/**
 * Looking at a model before training it: {@link dev.ember.train.summary.ModelSummary} (a per-layer
 * table of output shapes, parameters, memory and FLOPs, optionally timed), the FLOP rules it uses
 * ({@link dev.ember.train.summary.Flops}) and {@link dev.ember.train.summary.BatchSizeFinder}
 * (the fastest batch size within a memory budget).
 */
package dev.ember.train.summary;
