package dev.ember.train.summary;

import dev.ember.nn.ForwardHook;
import dev.ember.nn.Module;
import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * Times each module call of repeated forward passes whose calls come in the same order as the
 * recorded ones: the k-th call of a pass adds to row k. Self time excludes nested calls.
 */
final class Timer implements ForwardHook {
  final double[] self;
  final double[] total;
  private final long[] start;
  private final long[] nested;
  private final int[] stack;
  private final int expected;
  private int depth;
  private int index;
  private boolean timed;
  private int iteration;

  Timer(int expected) {
    this.expected = expected;
    self = new double[expected];
    total = new double[expected];
    start = new long[expected];
    nested = new long[expected];
    stack = new int[expected];
  }

  /** Starts pass {@code iteration}; an untimed (warm-up) pass only checks the call structure. */
  void begin(int iteration, boolean timed) {
    this.iteration = iteration;
    this.timed = timed;
    index = 0;
    depth = 0;
  }

  /** Ends the pass, checking that it made the recorded number of calls. */
  void end() {
    if (index != expected) throw mismatch(Integer.toString(index));
  }

  private IllegalStateException mismatch(String calls) {
    return new IllegalStateException("ModelSummary.profiled: timed pass " + iteration + " made " + calls
        + " module calls but the summary pass made " + expected + "; the model's calls must not change between passes");
  }

  @Override
  public void beforeForward(Module module, List<Tensor> inputs) {
    if (index >= expected) throw mismatch("more than " + expected);
    int k = index++;
    stack[depth++] = k;
    nested[k] = 0;
    start[k] = System.nanoTime();
  }

  @Override
  public void afterForward(Module module, List<Tensor> inputs, Tensor output) {
    long now = System.nanoTime();
    int k = stack[--depth];
    long t = now - start[k];
    if (timed) {
      total[k] += t;
      self[k] += t - nested[k];
    }
    if (depth > 0) nested[stack[depth - 1]] += t;
  }
}
