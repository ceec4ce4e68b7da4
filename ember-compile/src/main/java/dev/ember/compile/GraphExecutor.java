package dev.ember.compile;

import dev.ember.autograd.Grad;
import dev.ember.tensor.AllocationPlan;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs a {@link Graph} with what {@link Graph#run} works out on every call worked out once: the op nodes in order,
 * each with the slots of its inputs, and the parameter and constant values in a template, so that a call copies the
 * template, runs each node on an argument array it reuses, and allocates nothing of its own (no maps, no per-node
 * arrays). The same entry points run as in {@link Graph#run}, so the result has the same bits, and with grad on the
 * ops record on the tape as there.
 *
 * <p>With grad off (inference), calls run under a {@link AllocationPlan} per input shape: the first call records its
 * allocations, and later calls are served arrays assigned by liveness (the output of node i lives until the last
 * node that reads it; a temporary until the end of its node), so that a call allocates no tensor memory. The
 * result is allocated as usual, since the caller keeps it, unless {@link #reuseOutput} is set: then it is planned
 * too, and released when the next call starts (reading it afterwards throws, it never shows the next call's
 * values). A plan that does not fit a run (another allocation sequence) makes that run allocate as usual from the
 * mismatch on, and is recorded again; after {@link #MAX_FAILURES} such runs the executor stops planning.
 */
final class GraphExecutor {
  /** Runs that may not fit their plan before planning stops. */
  static final int MAX_FAILURES = 3;
  /** Input shapes whose plans are kept. */
  private static final int MAX_PLANS = 8;

  private final Graph graph;
  private final GraphNode[] ops;
  private final int[] opSlots;
  private final int[][] argSlots;
  private final Tensor[] template;
  private final int[] inputSlots;
  private final int outputSlot;
  /** The slots of the graph's outputs, in order ({@link #runAll}). */
  private final int[] outputSlots;
  /** Per op step, the op slots whose values no step after it reads (dropped there by {@link #runAll}). */
  private final int[][] dying;
  /** Per op step, the last step that reads its output (the number of steps for the graph's output). */
  private final int[] lastUse;
  private final AtomicReference<Frame> spare = new AtomicReference<>();
  private final AtomicReference<Plans> plans = new AtomicReference<>(new Plans());
  private volatile boolean planning = true;
  private volatile boolean reuseOutput;
  private int failures;
  private int lastUnplanned;
  private AllocationPlan lastMade;

  /** Each call's working arrays: the values by slot and each op's arguments. */
  private static final class Frame {
    final Tensor[] env;
    final Tensor[][] args;

    Frame(int slots, int[][] argSlots) {
      env = new Tensor[slots];
      args = new Tensor[argSlots.length][];
      for (int s = 0; s < argSlots.length; s++) args[s] = new Tensor[argSlots[s].length];
    }
  }

  /** The plans by input shape, with the last one used. */
  private static final class Plans {
    final Map<List<Integer>, AllocationPlan> byShape = new HashMap<>();
    int[] lastShape;
    AllocationPlan last;
  }

  GraphExecutor(Graph graph) {
    this.graph = graph;
    List<GraphNode> nodes = graph.nodes();
    int n = nodes.size();
    int count = graph.opCount();
    ops = new GraphNode[count];
    opSlots = new int[count];
    argSlots = new int[count][];
    template = new Tensor[n];
    int[] stepOfSlot = new int[n];
    Arrays.fill(stepOfSlot, -1);
    int s = 0;
    for (GraphNode node : nodes) {
      switch (node.kind()) {
        case PARAMETER, CONSTANT -> template[node.slot] = node.value();
        case INPUT -> { }
        case OP -> {
          ops[s] = node;
          opSlots[s] = node.slot;
          int[] a = new int[node.inputs.size()];
          for (int i = 0; i < a.length; i++) {
            GraphNode in = node.inputs.get(i);
            a[i] = in == null ? -1 : in.slot;
          }
          argSlots[s] = a;
          stepOfSlot[node.slot] = s;
          s++;
        }
      }
    }
    lastUse = new int[count];
    for (int i = 0; i < count; i++) lastUse[i] = i;
    for (int i = 0; i < count; i++) {
      for (int slot : argSlots[i]) if (slot >= 0 && stepOfSlot[slot] >= 0) lastUse[stepOfSlot[slot]] = i;
    }
    List<GraphNode> outs = graph.outputs();
    outputSlots = new int[outs.size()];
    for (int i = 0; i < outputSlots.length; i++) {
      outputSlots[i] = outs.get(i).slot;
      if (stepOfSlot[outputSlots[i]] >= 0) lastUse[stepOfSlot[outputSlots[i]]] = count;
    }
    outputSlot = outputSlots.length == 1 ? outputSlots[0] : -1;
    int[] dyingCount = new int[count];
    for (int i = 0; i < count; i++) if (lastUse[i] < count) dyingCount[lastUse[i]]++;
    dying = new int[count][];
    for (int i = 0; i < count; i++) dying[i] = new int[dyingCount[i]];
    Arrays.fill(dyingCount, 0);
    for (int i = 0; i < count; i++) if (lastUse[i] < count) dying[lastUse[i]][dyingCount[lastUse[i]]++] = opSlots[i];
    List<GraphNode> inputs = graph.inputs();
    inputSlots = new int[inputs.size()];
    for (int i = 0; i < inputSlots.length; i++) inputSlots[i] = inputs.get(i).slot;
  }

  Graph graph() {
    return graph;
  }

  /** The number of op steps (the length of {@link #runAll}'s overrides). */
  int steps() {
    return ops.length;
  }

  /** The op step that computes {@code node} (a node of this graph), or -1 for a node that is not an op. */
  int stepOf(GraphNode node) {
    for (int s = 0; s < ops.length; s++) if (ops[s] == node) return s;
    return -1;
  }

  /** Whether a grad-off call's result is planned too (and released when the next call starts); see the class. */
  void reuseOutput(boolean reuse) {
    if (reuse != reuseOutput) {
      reuseOutput = reuse;
      plans.set(new Plans()); // the plans made with the other setting
    }
  }

  /** Turns memory planning off (every call allocates as {@link Graph#run} does) or on again. */
  void planning(boolean on) {
    planning = on;
    if (!on) plans.set(new Plans());
  }

  /**
   * The graph's value for {@code args}, one per input node (their shapes and dtypes as traced; any size in a
   * symbolic batch dim).
   *
   * @throws dev.ember.tensor.TensorArgumentException if the number of arguments, or a shape or dtype, differs
   */
  Tensor run(Tensor... args) {
    if (outputSlot < 0) {
      throw new IllegalStateException("GraphExecutor.run: the graph has " + outputSlots.length + " outputs; use runAll");
    }
    Frame f = enter(args);
    Tensor[] env = f.env;
    Plans p = planning && !Grad.enabled() ? plans.getAndSet(null) : null; // null: another thread is planning
    try {
      if (p == null) {
        for (int s = 0; s < ops.length; s++) env[opSlots[s]] = ops[s].run(fill(f.args[s], argSlots[s], env));
      } else {
        runPlanned(p, f, args[0]);
      }
      return env[outputSlot];
    } finally {
      if (p != null) plans.compareAndSet(null, p);
      Arrays.fill(env, null);
      for (Tensor[] a : f.args) Arrays.fill(a, null);
      spare.set(f);
    }
  }

  /**
   * The values of all the graph's outputs for {@code args}, as {@link Graph#runAll} computes them (the same entry
   * points, in the same order, with grad as the caller has it; no memory plan), each op's value dropped after the
   * last op that reads it. With {@code nanos} not null, each op node's nanoseconds are added to
   * {@code nanos[slot]}.
   *
   * @throws dev.ember.tensor.TensorArgumentException if the number of arguments, or a shape or dtype, differs
   */
  Tensor[] runAll(long[] nanos, Tensor... args) {
    return runAll(nanos, null, args);
  }

  /**
   * {@link #runAll(long[], Tensor...)} with op step s run by {@code overrides[s]} instead where that is not null
   * (on the same arguments; {@code overrides} null: none), e.g. a step whose value is handed over
   * {@linkplain dev.ember.tensor.Deferred deferred}.
   */
  Tensor[] runAll(long[] nanos, dev.ember.autograd.Tracing.Replay[] overrides, Tensor... args) {
    Frame f = enter(args);
    Tensor[] env = f.env;
    try {
      for (int s = 0; s < ops.length; s++) {
        Tensor[] a = fill(f.args[s], argSlots[s], env);
        if (overrides != null && overrides[s] != null) {
          env[opSlots[s]] = overrides[s].run(a);
        } else if (nanos == null) {
          env[opSlots[s]] = ops[s].run(a);
        } else {
          long t0 = System.nanoTime();
          env[opSlots[s]] = ops[s].run(a);
          nanos[opSlots[s]] += System.nanoTime() - t0;
        }
        Arrays.fill(a, null);
        for (int slot : dying[s]) env[slot] = null;
      }
      Tensor[] out = new Tensor[outputSlots.length];
      for (int i = 0; i < out.length; i++) out[i] = env[outputSlots[i]];
      return out;
    } finally {
      Arrays.fill(env, null);
      spare.set(f);
    }
  }

  /** Checks args against the graph's inputs and takes a frame whose env holds the parameters, constants and args. */
  private Frame enter(Tensor[] args) {
    graph.checkArgs(args);
    Frame f = spare.getAndSet(null);
    if (f == null) f = new Frame(template.length, argSlots);
    System.arraycopy(template, 0, f.env, 0, f.env.length);
    for (int i = 0; i < args.length; i++) f.env[inputSlots[i]] = args[i];
    return f;
  }

  private static Tensor[] fill(Tensor[] a, int[] slots, Tensor[] env) {
    for (int i = 0; i < a.length; i++) {
      int slot = slots[i];
      a[i] = slot < 0 ? null : env[slot];
    }
    return a;
  }

  private void runPlanned(Plans p, Frame f, Tensor x) {
    Tensor[] env = f.env;
    AllocationPlan plan = planFor(p, x);
    boolean recording = plan.recording();
    Storage[] outputs = recording ? new Storage[ops.length] : null;
    try (AllocationPlan.Scope scope = plan.install()) {
      for (int s = 0; s < ops.length; s++) {
        plan.step(s);
        Tensor out = ops[s].run(fill(f.args[s], argSlots[s], env));
        env[opSlots[s]] = out;
        Storage st = out == null ? null : out.storage();
        if (recording) outputs[s] = st;
        else plan.checkOutput(s, st);
      }
    } catch (RuntimeException | Error e) { // a half-recorded or half-served plan is not kept
      forget(p, x);
      throw e;
    }
    if (recording) {
      Tensor result = env[outputSlot];
      plan.finishRecording(outputs, lastUse, result == null ? null : result.storage(), reuseOutput);
      lastMade = plan;
    } else if (plan.mismatched() || plan.unplanned() > 0) { // not as recorded: record again, or stop planning
      lastUnplanned = plan.unplanned();
      forget(p, x);
      if (++failures >= MAX_FAILURES) planning = false;
    }
    plan.clearServed();
  }

  private static void forget(Plans p, Tensor x) {
    p.byShape.remove(key(x));
    p.last = null;
    p.lastShape = null;
  }

  private AllocationPlan planFor(Plans p, Tensor x) {
    int[] shape = x.shapeRef();
    if (p.last != null && Arrays.equals(shape, p.lastShape)) return p.last;
    List<Integer> key = key(x);
    AllocationPlan plan = p.byShape.get(key);
    if (plan == null) {
      if (p.byShape.size() >= MAX_PLANS) p.byShape.clear();
      plan = new AllocationPlan();
      p.byShape.put(key, plan);
    }
    p.last = plan;
    p.lastShape = shape.clone();
    return plan;
  }

  private static List<Integer> key(Tensor x) {
    return Arrays.stream(x.shapeRef()).boxed().toList();
  }

  /**
   * The memory plan of the last input shape planned, as text: the arena against the intermediates it holds, or
   * why there is none.
   */
  String memory() {
    if (!planning && failures >= MAX_FAILURES) {
      return "memory: not planned (" + failures + " calls did not allocate as recorded; the last had "
          + lastUnplanned + " allocations the plan did not have)";
    }
    AllocationPlan plan = lastMade;
    if (plan == null) return "memory: not planned yet (planned on the first call with grad off)";
    return String.format(java.util.Locale.ROOT, "memory: arena %s in %d array%s for %d buffers of %s%s",
        bytes(plan.arenaBytes()), plan.arrays(), plan.arrays() == 1 ? "" : "s", plan.allocations(),
        bytes(plan.plannedBytes()),
        reuseOutput ? " (the output's buffer reused)" : "");
  }

  private static String bytes(long b) {
    if (b < 1024) return b + " B";
    if (b < 1024 * 1024) return String.format(java.util.Locale.ROOT, "%.1f KiB", b / 1024.0);
    return String.format(java.util.Locale.ROOT, "%.1f MiB", b / (1024.0 * 1024));
  }
}
