package dev.ember.train.summary;

import dev.ember.autograd.Node;
import dev.ember.nn.ForwardHook;
import dev.ember.nn.HookHandle;
import dev.ember.nn.Module;
import dev.ember.optim.Optimizer;
import dev.ember.tensor.ScopeMemory;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Where the memory of a training step goes, per layer: the activation bytes each module's forward leaves
 * for backward, and the bytes of its parameters, their gradients and the optimizer's state; then the
 * model's totals and the peak of live bytes in one step.
 *
 * <p><b>Activation bytes</b> are measured on the autograd graph, not estimated from shapes: after each
 * module call (a forward hook) the graph is walked back from the call's output through the nodes that
 * no earlier call claimed, not past the call's inputs, and the buffers those nodes keep for backward
 * ({@link Node#savedTensors()}: the ops' inputs and outputs) are added to the call, each buffer at the first call
 * that keeps it (views share a buffer), the model's parameters and buffers never. A node belongs to the innermost
 * module call it was made in: a container's row has its own ops (a residual add, a functional activation between
 * two children) and {@code subtreeActivationBytes} adds its children's. The model's
 * input counts where the first op keeps it, since the graph holds it until backward.
 *
 * <p><b>Peak step bytes</b> ({@link StepPeak}) are the parameters and buffers, the gradients and optimizer
 * state alive when the step starts, plus the most bytes that the step's {@link dev.ember.tensor.MemoryScope}
 * buffers held at once on top of what was live at its start ({@link ScopeMemory}): activations, gradients,
 * optimizer state made in the step and every temporary. Memory that no scope hands out (device memory,
 * arrays made outside any scope during the step) is not in it.
 */
public final class MemoryProfile {
  /**
   * One module call of the measured forward, in call order.
   *
   * @param name dotted name in the model, "" for the model
   * @param type the module's type name
   * @param depth nesting of the call (0: the model)
   * @param repeated whether the module was called before in the pass (its parameters are on its first row)
   * @param activationBytes bytes kept for backward by the ops of this call itself (not its nested calls)
   * @param subtreeActivationBytes {@code activationBytes} plus those of the calls nested in it
   * @param outputBytes bytes of the call's output buffer
   * @param paramBytes bytes of the module's own parameters (0 on repeated rows)
   * @param gradBytes bytes of their gradients (those that require grad, in their dtype)
   * @param optimizerStateBytes bytes of the optimizer's state for them (0 without an optimizer or before its first
   *     step)
   * @param heldBytes bytes of {@link dev.ember.tensor.MemoryScope} buffers the call (with its nested calls) left
   *     live when it returned: what the step holds because of it, temporaries included, and what checkpointing
   *     it frees but for its output ({@link MemoryPlan})
   */
  public record Layer(String name, String type, int depth, boolean repeated, long activationBytes,
      long subtreeActivationBytes, long outputBytes, long paramBytes, long gradBytes, long optimizerStateBytes,
      long heldBytes) {
    /** "name (Type)", or the type alone for the model. */
    public String label() {
      return name.isEmpty() ? type : name + " (" + type + ")";
    }
  }

  private final List<Layer> layers;
  private final long inputBytes;
  private final long paramBytes;
  private final long bufferBytes;
  private final long gradBytes;
  private final long optimizerStateBytes;
  private final long peakStepBytes;
  private final MemoryPlan plan;

  MemoryProfile(List<Layer> layers, long inputBytes, long paramBytes, long bufferBytes, long gradBytes,
      long optimizerStateBytes, long peakStepBytes, MemoryPlan plan) {
    this.plan = plan;
    this.layers = List.copyOf(layers);
    this.inputBytes = inputBytes;
    this.paramBytes = paramBytes;
    this.bufferBytes = bufferBytes;
    this.gradBytes = gradBytes;
    this.optimizerStateBytes = optimizerStateBytes;
    this.peakStepBytes = peakStepBytes;
  }

  /** The rows in call order (a container before its children). */
  public List<Layer> layers() {
    return layers;
  }

  /** The row of the first call of the module named {@code name} ("" for the model). */
  public Layer layer(String name) {
    for (Layer l : layers) if (l.name().equals(name)) return l;
    throw new IllegalArgumentException("MemoryProfile.layer: no call of a module named '" + name + "'; has "
        + layers.stream().map(Layer::name).toList());
  }

  /** Bytes of the model's input. */
  public long inputBytes() {
    return inputBytes;
  }

  /** Bytes of the model's parameters, each shared tensor once. */
  public long paramBytes() {
    return paramBytes;
  }

  /** Bytes of the model's buffers (running statistics and the like). */
  public long bufferBytes() {
    return bufferBytes;
  }

  /** Bytes of the gradients of the parameters that require grad. */
  public long gradBytes() {
    return gradBytes;
  }

  /** Bytes of the optimizer's state (0 without an optimizer, or before its first step). */
  public long optimizerStateBytes() {
    return optimizerStateBytes;
  }

  /** Bytes kept for backward by the whole forward, each buffer once. */
  public long activationBytes() {
    long b = 0;
    for (Layer l : layers) b += l.activationBytes();
    return b;
  }

  /** The most bytes live at once in the measured step ({@link StepPeak}); -1 when not measured. */
  public long peakStepBytes() {
    return peakStepBytes;
  }

  /**
   * This profile with another peak, and the optimizer-state total replaced by {@code optimizerStateBytes} when it is
   * not negative (the per-layer rows keep theirs).
   */
  public MemoryProfile withPeakStepBytes(long peak, long optimizerStateBytes) {
    return new MemoryProfile(layers, inputBytes, paramBytes, bufferBytes, gradBytes,
        optimizerStateBytes >= 0 ? optimizerStateBytes : this.optimizerStateBytes, peak, plan);
  }

  /** This profile with a memory budget's plan (null: none). */
  public MemoryProfile withPlan(MemoryPlan plan) {
    return new MemoryProfile(layers, inputBytes, paramBytes, bufferBytes, gradBytes, optimizerStateBytes, peakStepBytes,
        plan);
  }

  /** The memory budget's plan the run trained with, or null. */
  public MemoryPlan plan() {
    return plan;
  }

  /** The profile as plain maps and lists (profile.json's {@code memory}). */
  public Map<String, Object> toMap() {
    LinkedHashMap<String, Object> m = new LinkedHashMap<>();
    m.put("input_bytes", inputBytes);
    m.put("param_bytes", paramBytes);
    m.put("buffer_bytes", bufferBytes);
    m.put("grad_bytes", gradBytes);
    m.put("optimizer_state_bytes", optimizerStateBytes);
    m.put("activation_bytes", activationBytes());
    m.put("peak_step_bytes", peakStepBytes);
    List<Object> rows = new ArrayList<>();
    for (Layer l : layers) {
      LinkedHashMap<String, Object> r = new LinkedHashMap<>();
      r.put("name", l.name());
      r.put("type", l.type());
      r.put("depth", l.depth());
      r.put("activation_bytes", l.activationBytes());
      r.put("subtree_activation_bytes", l.subtreeActivationBytes());
      r.put("output_bytes", l.outputBytes());
      r.put("param_bytes", l.paramBytes());
      r.put("grad_bytes", l.gradBytes());
      r.put("optimizer_state_bytes", l.optimizerStateBytes());
      r.put("held_bytes", l.heldBytes());
      rows.add(r);
    }
    m.put("layers", rows);
    if (plan != null) m.put("plan", plan.toMap());
    return m;
  }

  /** A text table: per layer activation, parameter, gradient and optimizer-state bytes, then the totals. */
  public String table() {
    StringBuilder sb = new StringBuilder();
    int w = 12;
    for (Layer l : layers) w = Math.max(w, 2 * l.depth() + l.label().length());
    sb.append(String.format(Locale.ROOT, "%-" + w + "s %12s %12s %12s %12s%n", "Layer (type)", "Activations", "Params",
        "Grads", "Optim state"));
    for (Layer l : layers) {
      sb.append(String.format(Locale.ROOT, "%-" + w + "s %12s %12s %12s %12s%n", "  ".repeat(l.depth()) + l.label(),
          size(l.activationBytes()), size(l.paramBytes()), size(l.gradBytes()), size(l.optimizerStateBytes())));
    }
    sb.append(totals());
    return sb.toString();
  }

  /** The totals lines of {@link #table()}. */
  public String totals() {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "Activations kept for backward: %s (input %s)%n", size(activationBytes()),
        size(inputBytes)));
    sb.append(String.format(Locale.ROOT, "Parameters %s, gradients %s, optimizer state %s, buffers %s%n",
        size(paramBytes), size(gradBytes), size(optimizerStateBytes), size(bufferBytes)));
    if (peakStepBytes >= 0) {
      sb.append(String.format(Locale.ROOT, "Peak live bytes in one training step: %s%n", size(peakStepBytes)));
    }
    if (plan != null) sb.append(plan.describe()).append(String.format("%n"));
    return sb.toString();
  }

  /** Bytes in the largest binary unit that keeps the number at or above 1 ({@code 812 B}, {@code 7.41 MiB}). */
  public static String size(double bytes) {
    if (Double.isNaN(bytes) || bytes < 0) return "-";
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = bytes;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return u == 0 ? String.format(Locale.ROOT, "%.0f B", v) : String.format(Locale.ROOT, "%.2f %s", v, units[u]);
  }

  // ---------------------------------------------------------------------------------------------
  // Recording

  /**
   * Starts recording activation bytes on every module of {@code model}: run one forward (with the tape on),
   * then {@link Recorder#close()} and {@link Recorder#profile}.
   */
  public static Recorder record(Module model) {
    if (model == null) throw new IllegalArgumentException("MemoryProfile.record: model is null");
    return new Recorder(model);
  }

  /** Bytes of a tensor's whole buffer. */
  static long bytes(Storage st) {
    return (long) st.size() * st.dtype().itemSize();
  }

  /** Bytes of a tensor's elements. */
  static long bytes(Tensor t) {
    return t.numel() * t.dtype().itemSize();
  }

  /** The forward hooks that attribute the graph's saved buffers to module calls. */
  public static final class Recorder implements ForwardHook, AutoCloseable {
    private final Module model;
    private final Map<Module, String> names = new IdentityHashMap<>();
    private final List<HookHandle> handles = new ArrayList<>();
    private final Set<Node> claimed = Collections.newSetFromMap(new IdentityHashMap<>());
    private final Set<Storage> counted = Collections.newSetFromMap(new IdentityHashMap<>());
    private final Set<Module> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    private final List<Call> calls = new ArrayList<>();
    private final ArrayDeque<Call> stack = new ArrayDeque<>();
    private long inputBytes = -1;
    /**
     * Set once the first call of the model returned: later calls (a checkpoint's recomputation) are not recorded. A
     * caller that runs the model's {@code forward} directly (no hooks of its own) closes the recorder after it.
     */
    private boolean done;

    private static final class Call {
      final Module module;
      final String name;
      final int depth;
      final boolean repeated;
      long self;
      long subtree;
      long outputBytes;
      long liveBefore;
      long held;

      Call(Module module, String name, int depth, boolean repeated) {
        this.module = module;
        this.name = name;
        this.depth = depth;
        this.repeated = repeated;
      }
    }

    private Recorder(Module model) {
      this.model = model;
      model.namedModules().forEach((n, m) -> names.put(m, n));
      // parameters and buffers live anyway: never activations
      for (Tensor p : model.parameters()) counted.add(p.storage());
      for (Tensor b : model.namedBuffers().values()) counted.add(b.storage());
      for (Module m : model.modules()) handles.add(m.registerForwardHook(this));
    }

    @Override
    public void beforeForward(Module module, List<Tensor> inputs) {
      if (done) return;
      if (stack.isEmpty() && inputBytes < 0) {
        long b = 0;
        for (Tensor t : inputs) if (t != null) b += bytes(t);
        inputBytes = b;
      }
      Call c = new Call(module, names.getOrDefault(module, "?"), stack.size(), !seen.add(module));
      c.liveBefore = ScopeMemory.live();
      calls.add(c);
      stack.push(c);
    }

    @Override
    public void afterForward(Module module, List<Tensor> inputs, Tensor output) {
      if (done) return;
      Call c = stack.pop();
      c.held = ScopeMemory.live() - c.liveBefore;
      if (stack.isEmpty() && module == model) done = true;
      if (c.module != module) {
        throw new IllegalStateException("MemoryProfile: module calls did not nest (" + module.name() + " returned inside "
            + c.module.name() + ")");
      }
      c.outputBytes = bytes(output.storage());
      c.self = claim(output, inputs);
      c.subtree += c.self;
      if (!stack.isEmpty()) stack.peek().subtree += c.subtree;
    }

    /**
     * Claims the nodes reachable from {@code out} that no call claimed yet, not going past the call's inputs (the ops
     * that made them ran before the call, in its parent); returns the bytes of the buffers not counted before.
     */
    private long claim(Tensor out, List<Tensor> inputs) {
      Set<Tensor> stop = Collections.newSetFromMap(new IdentityHashMap<>());
      for (Tensor t : inputs) if (t != null) stop.add(t);
      long bytes = 0;
      Set<Node> visited = Collections.newSetFromMap(new IdentityHashMap<>());
      ArrayDeque<Node> todo = new ArrayDeque<>();
      if (out.gradFn() != null && !stop.contains(out)) todo.push(out.gradFn());
      while (!todo.isEmpty()) {
        Node n = todo.pop();
        if (!visited.add(n)) continue;
        // a node a nested call claimed is walked through (the call's own ops may lie before it), not counted again
        boolean mine = claimed.add(n);
        for (Tensor t : n.savedTensors()) {
          if (mine && counted.add(t.storage())) bytes += bytes(t.storage());
          Node prev = t.gradFn();
          if (prev != null && !stop.contains(t)) todo.push(prev);
        }
      }
      return bytes;
    }

    /** Removes the hooks (idempotent). */
    @Override
    public void close() {
      for (HookHandle h : handles) h.remove();
      handles.clear();
    }

    /** Module calls recorded so far. */
    public int recordedCalls() {
      return calls.size();
    }

    /** Bytes kept for backward by the calls recorded so far, each buffer once. */
    public long activationBytes() {
      long b = 0;
      for (Call c : calls) b += c.self;
      return b;
    }

    /**
     * The profile of the recorded forward: the rows, with each module's parameter, gradient and state bytes
     * ({@code optimizer} may be null), and {@code peakStepBytes} (-1 when not measured).
     */
    public MemoryProfile profile(Optimizer optimizer, long peakStepBytes) {
      Set<Tensor> countedParams = Collections.newSetFromMap(new IdentityHashMap<>());
      List<Layer> rows = new ArrayList<>();
      for (Call c : calls) {
        long p = 0;
        long g = 0;
        long s = 0;
        for (var e : c.module.namedParameters().entrySet()) {
          Tensor t = e.getValue();
          if (e.getKey().contains(".") || !countedParams.add(t)) continue;
          p += bytes(t);
          if (t.requiresGrad()) g += bytes(t);
          s += stateBytes(optimizer, t);
        }
        rows.add(new Layer(c.name, c.module.name(), c.depth, c.repeated, c.self, c.subtree, c.outputBytes, p, g, s,
            c.held));
      }
      long p = 0;
      long g = 0;
      long s = 0;
      for (Tensor t : model.parameters()) {
        p += bytes(t);
        if (t.requiresGrad()) g += bytes(t);
        s += stateBytes(optimizer, t);
      }
      long b = 0;
      for (Tensor t : model.namedBuffers().values()) b += bytes(t);
      return new MemoryProfile(rows, Math.max(0, inputBytes), p, b, g, s, peakStepBytes, null);
    }
  }

  /** Bytes of {@code optimizer}'s state for {@code param} (0 for a null optimizer). */
  static long stateBytes(Optimizer optimizer, Tensor param) {
    if (optimizer == null) return 0;
    long b = 0;
    for (Tensor t : optimizer.state(param).values()) b += bytes(t.storage());
    return b;
  }

  /** Bytes of the optimizer's state over all of {@code model}'s parameters. */
  public static long optimizerStateBytes(Module model, Optimizer optimizer) {
    long b = 0;
    for (Tensor p : model.parameters()) b += stateBytes(optimizer, p);
    return b;
  }

  /**
   * Measures the peak live bytes of one training step: {@link #start} before it (before its
   * {@link dev.ember.tensor.MemoryScope} opens), {@link #end} after it. The peak is the parameters, buffers,
   * gradients and optimizer state alive at the start, counted exactly, plus the most that scope buffers
   * ({@link ScopeMemory}) rose above their level at the start during the step.
   */
  public static final class StepPeak {
    private final long persistent;
    private final long liveAtStart;

    private StepPeak(long persistent, long liveAtStart) {
      this.persistent = persistent;
      this.liveAtStart = liveAtStart;
    }

    /** Starts measuring a step of {@code model} trained by {@code optimizer} (may be null). */
    public static StepPeak start(Module model, Optimizer optimizer) {
      long persistent = 0;
      for (Tensor p : model.parameters()) {
        persistent += bytes(p.storage());
        if (p.grad() != null) persistent += bytes(p.grad().storage());
        persistent += stateBytes(optimizer, p);
      }
      for (Tensor b : model.namedBuffers().values()) persistent += bytes(b.storage());
      return new StepPeak(persistent, ScopeMemory.resetPeak());
    }

    /** The step's peak live bytes (as of now). */
    public long end() {
      return persistent + Math.max(0, ScopeMemory.peak() - liveAtStart);
    }
  }
}
