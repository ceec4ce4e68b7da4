package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class AllocationPlanTest {
  /**
   * Three steps of one [10] buffer each: step 1 reads step 0's, step 2 reads step 1's; step 0's is dead after step 1,
   * so step 2 reuses its array. Returns the three buffers of the run.
   */
  private static Storage[] run(AllocationPlan plan, int thirdSize) {
    Storage[] out = new Storage[3];
    try (AllocationPlan.Scope s = plan.install()) {
      for (int i = 0; i < 3; i++) {
        plan.step(i);
        out[i] = Storage.allocate(DType.F32, i == 2 ? thirdSize : 10);
        if (!plan.recording()) plan.checkOutput(i, out[i]);
      }
    }
    return out;
  }

  private static AllocationPlan recorded(boolean reuseResult) {
    AllocationPlan plan = new AllocationPlan();
    Storage[] st = run(plan, 10);
    plan.finishRecording(st, new int[] {1, 2, 3}, st[2], reuseResult);
    return plan;
  }

  @Test
  void buffersWhoseLifetimesDoNotOverlapShareAnArray() {
    AllocationPlan plan = recorded(true);
    assertEquals(2, plan.arrays());
    assertEquals(80, plan.arenaBytes());
    assertEquals(120, plan.plannedBytes());
    Storage[] a = run(plan, 10);
    assertTrue(plan.servedAll());
    assertSame(a[0].floats(), a[2].floats(), "step 2 reuses step 0's array");
    assertNotSame(a[0].floats(), a[1].floats());
    Storage[] b = run(plan, 10);
    assertSame(a[1].floats(), b[1].floats(), "the next run gets the same arrays");
    assertThrows(IllegalStateException.class, a[2]::floats, "the last result was released by the next run");
  }

  @Test
  void theResultIsAllocatedAsUsualUnlessReused() {
    AllocationPlan plan = recorded(false);
    Storage[] a = run(plan, 10);
    Storage[] b = run(plan, 10);
    assertTrue(plan.servedAll());
    assertNotSame(a[2].floats(), b[2].floats());
    assertNotSame(a[2].floats(), b[0].floats());
    a[2].floats(); // still valid
  }

  @Test
  void aMismatchAllocatesAsUsualFromThere() {
    AllocationPlan plan = recorded(true);
    Storage[] a = run(plan, 11);
    assertFalse(plan.servedAll());
    assertTrue(plan.mismatched()); // allocated as usual, so step 2's output is not the buffer planned for it
    assertEquals(11, a[2].size());
    assertNotSame(a[0].floats(), a[2].floats());
    // a step whose output is not the buffer planned for it: the rest of the run is not served
    try (AllocationPlan.Scope s = plan.install()) {
      plan.step(0);
      Storage first = Storage.allocate(DType.F32, 10);
      plan.checkOutput(0, Storage.wrap(new float[10]));
      plan.step(1);
      Storage second = Storage.allocate(DType.F32, 10);
      assertNotSame(first.floats(), second.floats());
    }
    assertTrue(plan.mismatched());
  }

  @Test
  void aStepsAllocationsMayComeInAnotherOrderOrBeFewer() {
    AllocationPlan plan = new AllocationPlan();
    Storage out;
    try (AllocationPlan.Scope s = plan.install()) {
      plan.step(0);
      Storage.allocate(DType.F32, 10); // a temporary
      out = Storage.allocate(DType.F32, 20);
    }
    plan.finishRecording(new Storage[] {out}, new int[] {1}, out, true);
    try (AllocationPlan.Scope s = plan.install()) {
      plan.step(0);
      out = Storage.allocate(DType.F32, 20);
      Storage temp = Storage.allocate(DType.F32, 10);
      assertNotSame(out.floats(), temp.floats());
      plan.checkOutput(0, out);
    }
    assertTrue(plan.servedAll());
    try (AllocationPlan.Scope s = plan.install()) { // the temporary allocated elsewhere (another thread) this time
      plan.step(0);
      out = Storage.allocate(DType.F32, 20);
      plan.checkOutput(0, out);
    }
    assertFalse(plan.mismatched());
    assertFalse(plan.servedAll());
  }

  @Test
  void zeroedAllocationsAreZeroedAndNoScopeTakesPlannedBuffers() {
    AllocationPlan plan = recorded(false);
    Storage[] a = run(plan, 10);
    a[0].floats()[3] = 5f;
    try (MemoryScope scope = MemoryScope.open()) {
      Storage[] b = run(plan, 10);
      assertArrayEquals(new float[10], b[0].floats());
      assertSame(a[0].floats(), b[0].floats());
    }
    Storage[] c = run(plan, 10);
    assertArrayEquals(new float[10], c[1].floats()); // the scope did not hand the planned arrays to its pool
  }

  @Test
  void closingRestoresTheOuterPlanThenNone() {
    int before = AllocationPlan.installed;
    AllocationPlan outer = recorded(false);
    float[] planned0 = run(outer, 10)[0].floats(); // the array outer serves at step 0
    AllocationPlan inner = new AllocationPlan();
    Storage first;
    try (AllocationPlan.Scope o = outer.install()) {
      assertEquals(before + 1, AllocationPlan.installed);
      try (AllocationPlan.Scope i = inner.install()) {
        assertEquals(before + 2, AllocationPlan.installed);
        inner.step(0);
        assertNotSame(planned0, Storage.allocate(DType.F32, 10).floats(), "the inner plan records, outer serves nothing");
      }
      assertEquals(before + 1, AllocationPlan.installed);
      outer.step(0);
      first = Storage.allocate(DType.F32, 10);
      assertSame(planned0, first.floats(), "the outer plan serves again once the inner scope closed");
    }
    assertEquals(before, AllocationPlan.installed);
    assertNotSame(planned0, Storage.allocate(DType.F32, 10).floats(), "no plan serves after the last scope closed");
    try (AllocationPlan.Scope o = outer.install()) { // installed again on the same thread: served as before
      outer.step(0);
      assertSame(planned0, Storage.allocate(DType.F32, 10).floats());
    }
    assertEquals(before, AllocationPlan.installed);
  }

  @Test
  void withoutAPlanAllocationIsUnchanged() {
    Storage s = Storage.allocate(DType.F32, 4);
    assertArrayEquals(new float[4], s.floats());
    assertThrows(IllegalStateException.class, () -> recorded(false).finishRecording(new Storage[0], new int[0], null,
        false));
  }
}
