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
 * @param schedule     null: measured with the runner's options; otherwise the peer's own schedule for this case
 *                     (see {@link PeerSchedule})
 */
record BenchCase(String workload, String name, String metric, String unit, double unitsPerCall,
    DoubleUnaryOperator toReported, boolean lowerIsBetter, Runnable call, DoubleSupplier probe, PeerSchedule schedule) {

  /**
   * A case whose peer measures a stateful workload (a training run whose model fits its few cycled batches, so
   * that later steps differ from earlier ones: gradients and moments decay towards subnormal floats) on a
   * schedule of its own: the measured steps must be the same steps of the same run on both sides. The runner
   * first warms the JIT up on a throwaway instance from {@code make} for its {@code --warmup} seconds, then
   * measures a fresh instance from {@code make} with the peer's warm-up rule (at least 2 calls and at least
   * {@code warmupS} seconds), calibration and {@code targetS} seconds per repeat.
   *
   * @param warmupS the peer's warm-up seconds for this case on the fresh instance
   * @param targetS the peer's seconds per timed repeat, or NaN for the runner's {@code --target}
   * @param make    builds one independent instance of the workload (model, optimizer, data), each call anew
   */
  record PeerSchedule(double warmupS, double targetS, java.util.function.Supplier<Runnable> make) {}

  static BenchCase throughput(String workload, String name, String metric, String unit, double unitsPerCall, Runnable call) {
    return new BenchCase(workload, name, metric, unit, unitsPerCall, v -> v, false, call, null, null);
  }

  /** A throughput case measured on its peer's {@code schedule}; {@code call} runs one instance (for tests). */
  static BenchCase scheduled(String workload, String name, String unit, double unitsPerCall, Runnable call,
      PeerSchedule schedule) {
    return new BenchCase(workload, name, unit, unit, unitsPerCall, v -> v, false, call, null, schedule);
  }

  /** Latency per call scaled by {@code perCall} (e.g. 1e6 for us/call, 1e9/100 for ns per op of a 100-op chain). */
  static BenchCase latency(String workload, String name, String metric, String unit, double perCall, Runnable call) {
    return new BenchCase(workload, name, metric, unit, 1.0, v -> perCall / v, true, call, null, null);
  }

  /** A value measured once per repeat by {@code probe} (not timed), e.g. megabytes per call. */
  static BenchCase probe(String workload, String name, String metric, String unit, boolean lowerIsBetter,
      DoubleSupplier probe) {
    return new BenchCase(workload, name, metric, unit, 1.0, v -> v, lowerIsBetter, null, probe, null);
  }
}
