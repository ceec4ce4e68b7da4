package dev.ember.bench;

import java.util.function.DoubleSupplier;
import java.util.function.DoubleUnaryOperator;

/**
 * One measured configuration of the side-by-side runner. Workload and case names are the join
 * key with the PyTorch peers' JSON lines, so they must be spelled exactly as the peers spell them.
 *
 * @param unitsPerCall what one call is worth in the throughput unit (GFLOPs, GB, or 1 call)
 * @param toReported   maps a measured units/s value to the reported value (identity for
 *                     throughput; {@code v -> 1e6 / v} turns calls/s into us/call for latency)
 * @param lowerIsBetter whether the reported unit is a latency (ratio = pytorch / ember)
 * @param probe        null for timed cases; otherwise a measurement that is not a rate (e.g. memory
 *                     per call), taken once per repeat and reported as it is
 */
record BenchCase(String workload, String name, String metric, String unit, double unitsPerCall,
    DoubleUnaryOperator toReported, boolean lowerIsBetter, Runnable call, DoubleSupplier probe) {

  static BenchCase throughput(String workload, String name, String metric, String unit, double unitsPerCall, Runnable call) {
    return new BenchCase(workload, name, metric, unit, unitsPerCall, v -> v, false, call, null);
  }

  /** Latency per call scaled by {@code perCall} (e.g. 1e6 for us/call, 1e9/100 for ns per op of a 100-op chain). */
  static BenchCase latency(String workload, String name, String metric, String unit, double perCall, Runnable call) {
    return new BenchCase(workload, name, metric, unit, 1.0, v -> perCall / v, true, call, null);
  }

  /** A value measured once per repeat by {@code probe} (not timed), e.g. megabytes per call. */
  static BenchCase probe(String workload, String name, String metric, String unit, boolean lowerIsBetter,
      DoubleSupplier probe) {
    return new BenchCase(workload, name, metric, unit, 1.0, v -> v, lowerIsBetter, null, probe);
  }
}
