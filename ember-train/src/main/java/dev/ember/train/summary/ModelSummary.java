package dev.ember.train.summary;

import dev.ember.autograd.Grad;
import dev.ember.nn.ForwardHook;
import dev.ember.nn.HookHandle;
import dev.ember.nn.Module;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A per-layer table of a model, as Keras' {@code model.summary()} and torchinfo: for every module
 * call of one forward pass its output shape, parameters, memory and forward FLOPs (rules in
 * {@link Flops}), then the totals. {@link #profiled} adds each layer's forward time and the layers
 * that take most of it.
 *
 * <pre>{@code
 * ModelSummary s = ModelSummary.of(model, 1, 1, 28, 28);   // batch dimension included
 * System.out.println(s);
 * long flops = s.totalFlops();
 * }</pre>
 *
 * <p>The pass runs in eval mode without the tape ({@link Grad#off()}) on a standard normal input of
 * the model's parameter dtype, seen through forward hooks ({@link Module#registerForwardHook});
 * the modules' modes are restored afterwards and the hooks removed. Activation memory is the sum
 * of the leaf layers' outputs, as torchinfo's forward pass size: tensors a layer allocates inside
 * itself are not counted.
 */
public final class ModelSummary {
  private static final double MB = 1e6;

  private final String modelType;
  private final int[] inputShape;
  private final long inputBytes;
  private final List<LayerSummary> layers;
  private final long totalParams;
  private final long trainableParams;
  private final long paramBytes;
  private final long bufferBytes;
  private final List<String> uncalledLeaves;
  private final Profile profile;
  private final MemoryProfile memory;
  private final Map<String, Double> sparsity;
  private final boolean pruned;

  /**
   * Timings of {@link #profiled}: mean nanoseconds per iteration of the forward pass and of forward
   * plus backward (of the output's sum), over {@code iterations} after {@code warmup} untimed ones.
   * {@code forwardBackwardNanos} is NaN when the output does not require grad (nothing to train).
   */
  public record Profile(int warmup, int iterations, double forwardNanos, double forwardBackwardNanos) {}

  private ModelSummary(String modelType, int[] inputShape, long inputBytes, List<LayerSummary> layers, long totalParams,
      long trainableParams, long paramBytes, long bufferBytes, List<String> uncalledLeaves, Profile profile,
      MemoryProfile memory, Map<String, Double> sparsity, boolean pruned) {
    this.modelType = modelType;
    this.inputShape = inputShape;
    this.inputBytes = inputBytes;
    this.layers = List.copyOf(layers);
    this.totalParams = totalParams;
    this.trainableParams = trainableParams;
    this.paramBytes = paramBytes;
    this.bufferBytes = bufferBytes;
    this.uncalledLeaves = List.copyOf(uncalledLeaves);
    this.profile = profile;
    this.memory = memory;
    this.sparsity = Collections.unmodifiableMap(new LinkedHashMap<>(sparsity));
    this.pruned = pruned;
  }

  /**
   * Summarises {@code model} on a standard normal input of {@code sampleInputShape} (batch dimension
   * included, e.g. {@code 1, 1, 28, 28}).
   */
  public static ModelSummary of(Module model, int... sampleInputShape) {
    return of(model, sampleInput("ModelSummary.of", model, sampleInputShape));
  }

  /** Summarises {@code model} on the given input (integer token ids for an embedding model, say). */
  public static ModelSummary of(Module model, Tensor sampleInput) {
    checkModel("ModelSummary.of", model, sampleInput);
    return build(model, sampleInput, record(model, sampleInput), null, null);
  }

  /**
   * {@link #of(Module, int...)} plus timings: {@code warmup} untimed and then {@code iterations}
   * timed forward and backward passes (of the output's sum), each layer's forward timed through
   * hooks. The timed passes run in eval mode with the tape on, so running statistics and random
   * generators are left as they were; the parameters' gradients are restored afterwards.
   */
  public static ModelSummary profiled(Module model, int warmup, int iterations, int... sampleInputShape) {
    return profiled(model, warmup, iterations, sampleInput("ModelSummary.profiled", model, sampleInputShape));
  }

  /** {@link #profiled(Module, int, int, int...)} on the given input. */
  public static ModelSummary profiled(Module model, int warmup, int iterations, Tensor sampleInput) {
    checkModel("ModelSummary.profiled", model, sampleInput);
    if (warmup < 0 || iterations < 1) {
      throw new IllegalArgumentException("ModelSummary.profiled: need warmup >= 0 and iterations >= 1 (warmup "
          + warmup + ", iterations " + iterations + ")");
    }
    List<Recorder.Call> calls = record(model, sampleInput);
    double[][] times = new double[2][calls.size()];
    Profile profile = time(model, sampleInput, calls, warmup, iterations, times);
    return build(model, sampleInput, calls, new Timed(profile, times[0], times[1]), null);
  }

  /**
   * {@link #of(Module, int...)} plus the memory of a training step ({@link MemoryProfile}): each row's
   * activation bytes kept for backward, and in the totals the parameter, gradient, activation and peak live
   * bytes of one forward and backward (of the output's sum) in a {@link MemoryScope}. The pass runs in eval mode
   * with the tape on, as {@link #profiled}'s, so running statistics and random generators are left as they were
   * (train-mode dropout masks are not in it); the parameters' gradients are restored afterwards. No optimizer
   * runs, so the optimizer-state bytes are 0 (the Trainer's profile has them).
   */
  public static ModelSummary withMemory(Module model, int... sampleInputShape) {
    return withMemory(model, sampleInput("ModelSummary.withMemory", model, sampleInputShape));
  }

  /** {@link #withMemory(Module, int...)} on the given input. */
  public static ModelSummary withMemory(Module model, Tensor sampleInput) {
    checkModel("ModelSummary.withMemory", model, sampleInput);
    List<Recorder.Call> calls = record(model, sampleInput);
    MemoryProfile memory = measureMemory(model, sampleInput);
    return build(model, sampleInput, calls, null, memory);
  }

  // ---------------------------------------------------------------------------------------------
  // Accessors

  /** The rows in call order. */
  public List<LayerSummary> layers() {
    return layers;
  }

  /** The model's type name. */
  public String modelType() {
    return modelType;
  }

  /** The sample input's shape. */
  public int[] inputShape() {
    return inputShape.clone();
  }

  /** Parameter elements of the model, each shared tensor once. */
  public long totalParams() {
    return totalParams;
  }

  public long trainableParams() {
    return trainableParams;
  }

  public long nonTrainableParams() {
    return totalParams - trainableParams;
  }

  /** Bytes of the parameters. */
  public long paramBytes() {
    return paramBytes;
  }

  /** Bytes of the buffers (running statistics and the like). */
  public long bufferBytes() {
    return bufferBytes;
  }

  public long inputBytes() {
    return inputBytes;
  }

  /** Bytes of the leaf layers' outputs over the pass. */
  public long activationBytes() {
    long b = 0;
    for (LayerSummary l : layers) if (l.leaf()) b += l.outputBytes();
    return b;
  }

  /** Forward FLOPs of the whole pass (unknown layers counted as 0). */
  public long totalFlops() {
    long f = 0;
    for (LayerSummary l : layers) f += l.flops();
    return f;
  }

  /** Rows whose FLOPs are unknown (counted as 0). */
  public List<LayerSummary> unknownFlopLayers() {
    return layers.stream().filter(l -> !l.flopsKnown()).toList();
  }

  /** The row of the first call of the module named {@code name} ("" for the model). */
  public LayerSummary layer(String name) {
    for (LayerSummary l : layers) if (l.name().equals(name)) return l;
    throw new IllegalArgumentException("ModelSummary.layer: no call of a module named '" + name + "'; has "
        + layers.stream().map(LayerSummary::name).toList());
  }

  /**
   * Dotted names of the leaf modules the pass did not see: unused, or run by a parent's
   * {@code forward} as {@code child.forward(x)} rather than {@code child.call(x)}, which runs no
   * hooks. Their parameters are in the totals; their FLOPs and outputs are not.
   */
  public List<String> uncalledLeaves() {
    return uncalledLeaves;
  }

  /**
   * The fraction of zero entries in the weight of the module named {@code name} ("" for the model), read through its
   * mask when it is pruned ({@link dev.ember.nn.prune.Prune}); NaN for a module without a {@code weight}.
   */
  public double sparsity(String name) {
    Double v = sparsity.get(name);
    return v == null ? Double.NaN : v;
  }

  /** {@link #sparsity(String)} of every module that has a weight, by dotted name, in the model's order. */
  public Map<String, Double> sparsities() {
    return sparsity;
  }

  /**
   * Whether the model had a pruned parameter when summarised ({@link dev.ember.nn.prune.Prune#isPruned(Module)}): the
   * table then shows a Sparsity column.
   */
  public boolean isPruned() {
    return pruned;
  }

  /** The memory profile, or null unless made by {@link #withMemory}. */
  public MemoryProfile memory() {
    return memory;
  }

  /** The timings, or null unless made by {@link #profiled}. */
  public Profile profile() {
    return profile;
  }

  /**
   * The {@code k} rows with the largest self time (time in the layer itself, without nested calls),
   * largest first; empty unless profiled.
   */
  public List<LayerSummary> bottlenecks(int k) {
    if (profile == null) return List.of();
    return layers.stream().sorted(Comparator.comparingDouble(LayerSummary::selfNanos).reversed()).limit(k).toList();
  }

  /** A row's share of the forward time (self time over the whole forward), in [0, 1]; NaN unless profiled. */
  public double timeShare(LayerSummary row) {
    if (profile == null || !row.timed()) return Double.NaN;
    return profile.forwardNanos() > 0 ? row.selfNanos() / profile.forwardNanos() : 0;
  }

  /** Writes {@link #toString()} to {@code out}. */
  public void print(PrintStream out) {
    out.print(this);
    out.flush();
  }

  @Override
  public String toString() {
    return SummaryTable.render(this);
  }

  // ---------------------------------------------------------------------------------------------
  // Recording

  private static Tensor sampleInput(String op, Module model, int[] shape) {
    if (model == null) throw new IllegalArgumentException(op + ": model is null");
    if (shape == null || shape.length == 0) {
      throw new IllegalArgumentException(op + ": the sample input shape must have at least one dimension (the batch)");
    }
    for (int d : shape) {
      if (d <= 0) {
        throw new IllegalArgumentException(op + ": sample input dimensions must be positive, got " + Arrays.toString(shape));
      }
    }
    List<Tensor> params = model.parameters();
    // drawn on the host (the same values for a model on any device), then put where the model is
    return Tensor.randn(new Generator(0), params.isEmpty() ? DType.F32 : params.get(0).dtype(), shape).to(model.device());
  }

  private static void checkModel(String op, Module model, Tensor input) {
    if (model == null) throw new IllegalArgumentException(op + ": model is null");
    if (input == null) throw new IllegalArgumentException(op + ": sample input is null");
  }

  /** The modules' training flags in pre-order, so that restoring them in order undoes {@code train()} calls. */
  private static LinkedHashMap<Module, Boolean> modes(Module model) {
    LinkedHashMap<Module, Boolean> modes = new LinkedHashMap<>();
    for (Module m : model.modules()) modes.put(m, m.isTraining());
    return modes;
  }

  private static void restore(Map<Module, Boolean> modes) {
    for (var e : modes.entrySet()) e.getKey().train(e.getValue());
  }

  private static List<HookHandle> hookAll(Module model, ForwardHook hook) {
    List<HookHandle> handles = new ArrayList<>();
    for (Module m : model.modules()) handles.add(m.registerForwardHook(hook));
    return handles;
  }

  private static void removeAll(List<HookHandle> handles) {
    for (HookHandle h : handles) h.remove();
  }

  private static List<Recorder.Call> record(Module model, Tensor input) {
    Map<Module, String> names = new IdentityHashMap<>();
    model.namedModules().forEach((n, m) -> names.put(m, n));
    Recorder recorder = new Recorder(names);
    LinkedHashMap<Module, Boolean> modes = modes(model);
    List<HookHandle> handles = hookAll(model, recorder);
    try (Grad ignored = Grad.off()) {
      model.eval();
      model.call(input);
    } finally {
      removeAll(handles);
      restore(modes);
    }
    return recorder.calls();
  }

  private record Timed(Profile profile, double[] self, double[] total) {}

  private static Profile time(Module model, Tensor input, List<Recorder.Call> calls, int warmup, int iterations,
      double[][] times) {
    Timer timer = new Timer(calls.size());
    LinkedHashMap<Module, Boolean> modes = modes(model);
    List<Tensor> params = model.parameters();
    List<Tensor> savedGrads = new ArrayList<>();
    for (Tensor p : params) savedGrads.add(p.grad());
    List<HookHandle> handles = hookAll(model, timer);
    long forward = 0;
    long step = 0;
    boolean backward = true;
    try (Grad ignored = Grad.on()) {
      model.eval();
      for (int it = 0; it < warmup + iterations; it++) {
        boolean timed = it >= warmup;
        timer.begin(it, timed);
        for (Tensor p : params) p.setGrad(null);
        long t0 = System.nanoTime();
        Tensor out = model.call(input);
        long t1 = System.nanoTime();
        backward = out.requiresGrad() && out.dtype().isFloatingPoint();
        if (backward) out.sum().backward();
        long t2 = System.nanoTime();
        timer.end();
        if (timed) {
          forward += t1 - t0;
          step += t2 - t0;
        }
      }
    } finally {
      removeAll(handles);
      restore(modes);
      for (int i = 0; i < params.size(); i++) params.get(i).setGrad(savedGrads.get(i));
    }
    for (int k = 0; k < calls.size(); k++) {
      times[0][k] = timer.self[k] / iterations;
      times[1][k] = timer.total[k] / iterations;
    }
    return new Profile(warmup, iterations, (double) forward / iterations,
        backward ? (double) step / iterations : Double.NaN);
  }

  /** One forward and backward (of the output's sum) in eval mode with the tape on, recorded by a {@link MemoryProfile}. */
  private static MemoryProfile measureMemory(Module model, Tensor input) {
    LinkedHashMap<Module, Boolean> modes = modes(model);
    List<Tensor> params = model.parameters();
    List<Tensor> savedGrads = new ArrayList<>();
    for (Tensor p : params) savedGrads.add(p.grad());
    MemoryProfile.Recorder recorder = MemoryProfile.record(model);
    try (Grad ignored = Grad.on()) {
      model.eval();
      for (Tensor p : params) p.setGrad(null);
      MemoryProfile.StepPeak peak = MemoryProfile.StepPeak.start(model, null);
      try (MemoryScope step = MemoryScope.open()) {
        Tensor out = model.call(input);
        recorder.close();
        if (out.requiresGrad() && out.dtype().isFloatingPoint()) out.sum().backward();
        for (Tensor p : params) p.setGrad(null);
      }
      return recorder.profile(null, peak.end());
    } finally {
      recorder.close();
      restore(modes);
      for (int i = 0; i < params.size(); i++) params.get(i).setGrad(savedGrads.get(i));
    }
  }

  private static ModelSummary build(Module model, Tensor input, List<Recorder.Call> calls, Timed timed,
      MemoryProfile memory) {
    List<LayerSummary> rows = new ArrayList<>();
    for (int k = 0; k < calls.size(); k++) {
      LayerSummary row = calls.get(k).toSummary();
      if (timed != null) row = row.withTimes(timed.self()[k], timed.total()[k]);
      if (memory != null && k < memory.layers().size() && memory.layers().get(k).name().equals(row.name())) {
        row = row.withActivationBytes(memory.layers().get(k).activationBytes());
      }
      rows.add(row);
    }
    long params = 0;
    long trainable = 0;
    long pBytes = 0;
    for (Tensor p : model.parameters()) {
      params += p.numel();
      if (p.requiresGrad()) trainable += p.numel();
      pBytes += p.numel() * p.dtype().itemSize();
    }
    long bBytes = 0;
    for (Tensor b : model.namedBuffers().values()) bBytes += b.numel() * b.dtype().itemSize();
    Set<Module> called = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Recorder.Call c : calls) called.add(c.module);
    List<String> uncalled = new ArrayList<>();
    model.namedModules().forEach((name, m) -> {
      if (m.namedChildren().isEmpty() && !called.contains(m)) uncalled.add(name.isEmpty() ? m.name() : name);
    });
    LinkedHashMap<String, Double> sparsity = new LinkedHashMap<>();
    model.namedModules().forEach((name, m) -> {
      if (m.hasParam("weight")) sparsity.put(name, dev.ember.nn.prune.Prune.sparsity(m, "weight"));
    });
    return new ModelSummary(model.name(), input.shape(), input.numel() * input.dtype().itemSize(), rows, params,
        trainable, pBytes, bBytes, uncalled, timed == null ? null : timed.profile(), memory, sparsity,
        dev.ember.nn.prune.Prune.isPruned(model));
  }

  static double mb(long bytes) {
    return bytes / MB;
  }
}
