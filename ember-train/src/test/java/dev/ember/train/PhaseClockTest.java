package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link PhaseClock}: laps go to their phase, a mark to none, and the two publications split as the trainer needs. */
class PhaseClockTest {
  private static final long MS = 1_000_000;

  @Test
  void lapsAreChargedToTheirPhaseAndAMarkToNone() throws Exception {
    long[] published = new long[Phase.values().length];
    published[Phase.CALLBACKS.ordinal()] = -1;          // the previous step's, until publishCallbacks
    PhaseClock clock = new PhaseClock(published);
    clock.startStep();
    Thread.sleep(20);
    clock.lap(Phase.DATA);
    Thread.sleep(10);
    clock.lap(Phase.CALLBACKS);
    Thread.sleep(10);
    clock.lap(Phase.OPTIMIZER);
    Thread.sleep(10);
    clock.lap(Phase.CALLBACKS);                          // callbacks sum over the step's hooks
    Thread.sleep(10);
    clock.lap(Phase.OPTIMIZER);
    clock.publishWork();
    assertTrue(published[Phase.DATA.ordinal()] >= 20 * MS, "data " + published[Phase.DATA.ordinal()]);
    assertTrue(published[Phase.OPTIMIZER.ordinal()] >= 20 * MS, "optimizer " + published[Phase.OPTIMIZER.ordinal()]);
    assertEquals(0, published[Phase.FORWARD.ordinal()]);
    assertEquals(-1, published[Phase.CALLBACKS.ordinal()], "callbacks are published after onBatchEnd only");
    Thread.sleep(20);                                    // validation: in no phase
    clock.mark();
    clock.lap(Phase.CALLBACKS);
    long total = clock.publishCallbacks();
    assertTrue(published[Phase.CALLBACKS.ordinal()] >= 20 * MS, "callbacks " + published[Phase.CALLBACKS.ordinal()]);
    long phases = 0;
    for (long n : published) phases += n;
    assertTrue(total >= phases + 20 * MS, "the step (" + total + " ns) holds the phases (" + phases
        + " ns) and the unmarked 20 ms");

    clock.startStep();                                   // a new step starts every phase at zero
    clock.lap(Phase.DATA);
    clock.publishWork();
    assertEquals(0, published[Phase.OPTIMIZER.ordinal()], "no optimizer step in this one");
  }
}
