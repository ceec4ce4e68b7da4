package dev.ember.tensor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Buffers for a run that allocates the same sequence every time (a compiled graph's inference call), assigned by
 * liveness: a recording run notes each allocation (dtype, length, and the step of the run that made it); the
 * executor then says how long each lives ({@link #finishRecording}), and the plan gives every allocation one array
 * of its dtype and length, shared with allocations whose lifetimes do not overlap. Later runs with the plan
 * {@linkplain #install installed} are served those arrays in order: no tensor memory is allocated.
 *
 * <p>Any mismatch (another dtype or length, at another step, or a step's output not the buffer planned for it) makes
 * the rest of that run allocate as usual: never a planned array that may be in use. Such a run is not
 * {@link #servedAll() served completely}, and its executor records again. The planned buffers belong to no
 * {@link MemoryScope} (a scope never hands them to its pool).
 *
 * <p>With no plan installed on any thread, {@link Storage}'s allocation pays one read of a static field.
 */
public final class AllocationPlan {
  /** Number of plans installed on all threads: allocation reads only this when none is. */
  static volatile int installed;
  private static final VarHandle INSTALLED;
  private static final ThreadLocal<AllocationPlan> CURRENT = new ThreadLocal<>();

  static {
    try {
      INSTALLED = MethodHandles.lookup().findStaticVarHandle(AllocationPlan.class, "installed", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private boolean recording = true;
  private final List<Storage> recorded = new ArrayList<>();
  private final List<Integer> recordedSteps = new ArrayList<>();
  // the plan: per allocation k, in order
  private DType[] dtypes;
  private int[] sizes;
  private int[] steps;
  /** Its array, or null: allocated as usual (the run's result, when the caller keeps it). */
  private Object[] arrays;
  /** Per step, the allocation that is its output, or -1 (a view of an earlier buffer, or no allocation). */
  private int[] outputOf;
  /** Per step, its first allocation (one more entry: the count). */
  private int[] firstOf;
  /** The allocation that is the run's result when it is planned too ({@code reuseResult}), else -1. */
  private int resultIndex = -1;
  private Storage[] served;
  private int next;
  private int step;
  private boolean broken;
  /** Allocations of the last run that the plan did not have (allocated as usual). */
  private int unplanned;
  private Storage lastResult;
  private long arenaBytes;
  private long plannedBytes;
  private int arrayCount;

  /** A plan that records the next run it is installed for. */
  public AllocationPlan() {}

  /**
   * Installs this plan on the current thread until the returned scope closes. A compiled inference call pays this
   * and {@link Scope#close} once: one atomic add each on the count (not a monitor), and the thread's entry is set
   * back rather than removed, so that the next call finds it instead of creating it again (one ThreadLocal miss,
   * insert and expunging removal less per call).
   */
  public Scope install() {
    AllocationPlan previous = CURRENT.get();
    CURRENT.set(this);
    INSTALLED.getAndAdd(1);
    if (!recording) {
      next = 0;
      step = 0;
      broken = false;
      unplanned = 0;
      Arrays.fill(served, null);
      if (lastResult != null) { // the guard: the last result's array is about to be written again
        lastResult.releasePlanned();
        lastResult = null;
      }
    }
    return new Scope(previous);
  }

  /** Closing it restores the plan installed before (if any). */
  public static final class Scope implements AutoCloseable {
    private final AllocationPlan previous;
    private boolean closed;

    private Scope(AllocationPlan previous) {
      this.previous = previous;
    }

    @Override
    public void close() {
      if (closed) return;
      closed = true;
      CURRENT.set(previous);
      INSTALLED.getAndAdd(-1);
    }
  }

  /** Whether this plan is still to record its run. */
  public boolean recording() {
    return recording;
  }

  /** The run enters step {@code s} (a graph node's index): allocations from now on are that step's. */
  public void step(int s) {
    step = s;
  }

  /**
   * After a served step: checks that its output (its storage, or null for a step without a tensor output) is the
   * buffer planned for it; if not, the rest of the run allocates as usual (the output may sit in a planned array
   * that a later allocation would be given).
   */
  public void checkOutput(int s, Storage output) {
    if (recording || broken) return;
    int k = s < outputOf.length ? outputOf[s] : -1;
    if (k >= 0 && arrays[k] != null) {
      if (served[k] != output) broken = true;
      return;
    }
    if (output != null && s + 1 < firstOf.length) { // not planned for it: it must not be in a planned array
      for (int i = firstOf[s]; i < firstOf[s + 1]; i++) if (served[i] == output) broken = true;
    }
  }

  /**
   * Ends the recording run: {@code outputs[s]} is the storage of step s's output (null if none), {@code lastUse[s]}
   * the last step that reads it, {@code result} the run's result's storage. With {@code reuseResult} the result gets
   * a planned array too, which the next run writes again: the result is then released when that run starts (using
   * it afterwards throws), so it never shows another call's values.
   */
  public void finishRecording(Storage[] outputs, int[] lastUse, Storage result, boolean reuseResult) {
    if (!recording) throw new IllegalStateException("AllocationPlan.finishRecording: the plan has already been made");
    int count = recorded.size();
    IdentityHashMap<Storage, Integer> index = new IdentityHashMap<>();
    for (int k = 0; k < count; k++) index.put(recorded.get(k), k);
    int[] start = new int[count];
    int[] end = new int[count];
    for (int k = 0; k < count; k++) start[k] = end[k] = recordedSteps.get(k);
    int stepsCount = outputs.length;
    outputOf = new int[stepsCount];
    Arrays.fill(outputOf, -1);
    for (int s = 0; s < stepsCount; s++) {
      Integer k = outputs[s] == null ? null : index.get(outputs[s]);
      if (k == null) continue;
      end[k] = Math.max(end[k], lastUse[s]);
      if (start[k] == s) outputOf[s] = k;
    }
    dtypes = new DType[count];
    sizes = new int[count];
    steps = new int[count];
    arrays = new Object[count];
    served = new Storage[count];
    firstOf = new int[stepsCount + 1];
    Integer resultK = result == null ? null : index.get(result);
    resultIndex = resultK != null && reuseResult ? resultK : -1;
    for (int k = 0; k < count; k++) {
      Storage st = recorded.get(k);
      dtypes[k] = st.dtype();
      sizes[k] = st.size();
      steps[k] = start[k];
      if (resultK != null && resultK == k) end[k] = Integer.MAX_VALUE; // lives past the run
    }
    int k0 = 0;
    for (int s = 0; s <= stepsCount; s++) {
      while (k0 < count && steps[k0] < s) k0++;
      firstOf[s] = k0;
    }
    // per dtype and length, allocations in order of their start: each takes the first array free before it starts
    Map<Long, List<int[]>> free = new HashMap<>(); // key -> [array id, end] pairs
    List<Object> made = new ArrayList<>();
    for (int k = 0; k < count; k++) {
      if (resultK != null && resultK == k && !reuseResult) continue; // the caller keeps it: allocated as usual
      plannedBytes += (long) sizes[k] * dtypes[k].itemSize();
      long key = ((long) dtypes[k].ordinal() << 32) | sizes[k];
      List<int[]> list = free.computeIfAbsent(key, x -> new ArrayList<>());
      int[] slot = null;
      for (int[] cand : list) {
        if (cand[1] < start[k]) {
          slot = cand;
          break;
        }
      }
      if (slot == null) {
        slot = new int[] {made.size(), 0};
        made.add(Storage.newArray(dtypes[k], sizes[k]));
        arenaBytes += (long) sizes[k] * dtypes[k].itemSize();
        list.add(slot);
      }
      slot[1] = end[k];
      arrays[k] = made.get(slot[0]);
    }
    arrayCount = made.size();
    recorded.clear();
    recordedSteps.clear();
    recording = false;
  }

  /**
   * Whether the last run it was installed for allocated exactly as recorded: every allocation was planned (each
   * step's in any order), and each step's output was the buffer planned for it.
   */
  public boolean servedAll() {
    if (recording || broken || unplanned != 0) return false;
    for (int k = 0; k < served.length; k++) if (served[k] == null && arrays[k] != null) return false;
    return true;
  }

  /**
   * Whether the last run did not fit the plan: a step's output was not the buffer planned for it, so the rest of
   * the run allocated as usual. Allocations the plan does not have, or fewer than it has, are not a mismatch (a
   * step whose parallel parts run on other threads allocates on them): they are allocated as usual.
   */
  public boolean mismatched() {
    return !recording && broken;
  }

  /** Allocations of the last run that the plan did not have (allocated as usual). */
  public int unplanned() {
    return unplanned;
  }

  /** Bytes of the arrays the plan holds (its arena). */
  public long arenaBytes() {
    return arenaBytes;
  }

  /** Bytes of the planned allocations of one run, each counted on its own (what pooling would hand out). */
  public long plannedBytes() {
    return plannedBytes;
  }

  /** Number of planned allocations of a run (its result's not among them unless it is reused). */
  public int allocations() {
    if (arrays == null) return 0;
    int n = 0;
    for (Object a : arrays) if (a != null) n++;
    return n;
  }

  /** Number of arrays the plan holds. */
  public int arrays() {
    return arrayCount;
  }

  /** The buffer for an allocation on this thread, or null to allocate as usual (for {@link Storage}). */
  static Storage allocate(DType dtype, int n, boolean zero) {
    AllocationPlan p = CURRENT.get();
    return p == null ? null : p.serve(dtype, n, zero);
  }

  private Storage serve(DType dtype, int n, boolean zero) {
    if (recording) {
      Storage st = Storage.fresh(dtype, n);
      recorded.add(st);
      recordedSteps.add(step);
      return st;
    }
    if (broken) return null;
    int k = next;
    if (k >= sizes.length || dtypes[k] != dtype || sizes[k] != n || steps[k] != step) {
      k = match(dtype, n);
      if (k < 0) { // not in the plan: allocated as usual, which aliases nothing
        unplanned++;
        return null;
      }
    }
    if (k == next) {
      do next++; while (next < sizes.length && served[next] != null && steps[next] == step);
    }
    Object a = arrays[k];
    if (a == null) return null;
    if (zero) Storage.zero(a);
    Storage st = Storage.planned(dtype, n, a);
    served[k] = st;
    if (k == resultIndex) lastResult = st;
    return st;
  }

  /**
   * An allocation out of the recorded order: the first allocation of this step of that dtype and length not served
   * yet (a step whose parallel parts ran on other threads this time allocates fewer buffers here), or -1. Its
   * lifetime is that allocation's: if it was the step's output and is not this time, {@link #checkOutput} sees it.
   */
  private int match(DType dtype, int n) {
    if (step < 0 || step + 1 >= firstOf.length) return -1;
    for (int k = Math.max(next, firstOf[step]); k < firstOf[step + 1]; k++) {
      if (served[k] == null && dtypes[k] == dtype && sizes[k] == n) return k;
    }
    return -1;
  }

  /** Drops the references to the last run's buffers (the plan keeps only its arrays). */
  public void clearServed() {
    if (served != null) Arrays.fill(served, null);
  }
}
